#!/usr/bin/env bash
# Install kgqa and ask a question on the bundled corpus (the store is built on first use).
# It prints the answer: the install is quiet (errors only), the first ingest says one line.
#   scripts/quickstart.sh ["QUESTION"]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
exec .venv/bin/kgqa ask "${1:-我是零基础，先学哪个框架？}"
