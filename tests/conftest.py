"""Suite-wide: the ``needs`` mark (skip locally, fail on CI when a facility is missing).

This file also puts ``tests/`` on ``sys.path`` (pytest's default import mode), so any test module
or conftest can ``from facilities import skip_or_fail``.
"""

from __future__ import annotations

import pytest
from facilities import skip_or_fail


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(condition, reason): the test needs a facility of the machine; skipped where it "
        "is missing, failed where it is required (CI, KGQA_REQUIRE_FACILITIES=1)",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        if not mark.args[0]:
            skip_or_fail(str(mark.kwargs.get("reason", "a facility this test needs is missing")))
