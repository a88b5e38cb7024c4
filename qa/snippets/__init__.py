"""Snippet validation: repair, static levels, signature checks, sandboxed execution.

`validate_snippet` / `validate_code` are the entry points; `run_sandboxed` runs untrusted code.
Indentation repair and language detection live in `ingest.code_repair`.
"""

from qa.snippets.fixtures import Completion, Fixture, complete_snippet
from qa.snippets.probe import SignatureCheck, SignatureProbe, shared_probe
from qa.snippets.sandbox import SandboxedWorker, SandboxResult, run_sandboxed, sandbox_capabilities
from qa.snippets.validate import (
    LevelOutcome,
    SnippetCheck,
    check_code,
    format_snippet_table,
    to_report,
    validate_code,
    validate_snippet,
)

__all__ = [
    "Completion",
    "Fixture",
    "LevelOutcome",
    "SandboxResult",
    "SandboxedWorker",
    "SignatureCheck",
    "SignatureProbe",
    "SnippetCheck",
    "check_code",
    "complete_snippet",
    "format_snippet_table",
    "run_sandboxed",
    "sandbox_capabilities",
    "shared_probe",
    "to_report",
    "validate_code",
    "validate_snippet",
]
