#!/usr/bin/env bash
# Install everything the tests need, then run the gate: formatter check, linter, type checker, tests.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh --tests
. .venv/bin/activate
ruff format --check kg ingest qa ui tests benchmarks
ruff check kg ingest qa ui tests benchmarks
mypy kg ingest qa ui
pytest "$@"
