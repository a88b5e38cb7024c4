"""What a test needs from the machine, and what happens when it is missing: skip here, fail on CI.

A test that needs a facility (Linux namespaces, a dedicated uid, the llama.cpp server) skips on a
developer's machine that lacks it, but must fail where the facility is promised (CI), so that a
broken install cannot pass silently. ``KGQA_REQUIRE_FACILITIES=1``/``0`` decides; otherwise yes
on CI (``CI`` set to true/1). vLLM has its own switch (``KGQA_REQUIRE_VLLM``, tests/qa/conftest).

    @pytest.mark.needs(HAVE_PIDNS, reason="a PID namespace (run as root)")
    def test_...

or, inside a fixture or test, ``skip_or_fail("llama.cpp is not installed")``.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["facilities_required", "skip_or_fail"]


def _truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes"}


def facilities_required() -> bool:
    """Must missing facilities fail the test (CI, or ``KGQA_REQUIRE_FACILITIES=1``)?"""
    flag = os.environ.get("KGQA_REQUIRE_FACILITIES")
    if flag is not None:
        return _truthy(flag)
    return _truthy(os.environ.get("CI", ""))


def skip_or_fail(reason: str) -> None:
    """Skip locally; fail where facilities are required."""
    if facilities_required():
        pytest.fail(f"{reason} (required here: CI or KGQA_REQUIRE_FACILITIES=1)", pytrace=False)
    pytest.skip(reason)
