"""Test-wide hooks: the `needs` mark (see `tests/needs.py`) skips a test locally and fails it on
CI when what it needs is missing."""

from __future__ import annotations

import pytest
from needs import skip_or_fail


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
