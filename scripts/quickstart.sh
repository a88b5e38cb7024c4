#!/usr/bin/env bash
# Install kgqa with its reader (llama.cpp and the embedded 0.5B model: a first install compiles
# llama.cpp, ~10 min on 2 cores, once) and ask a question on the bundled corpus (the store is
# built on first use); the reader model reads the evidence and decides. It prints the answer:
# the install is quiet (errors only), the first ingest says one line.
#   scripts/quickstart.sh ["QUESTION"]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh --reader
exec .venv/bin/kgqa ask "${1:-我是零基础，先学哪个框架？}"
