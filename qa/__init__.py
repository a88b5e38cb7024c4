"""Retrieval, answering, citation checks, snippet validation, evaluation, API and CLI.

`from qa import Assistant` imports the answering stack on first use only, so that `import qa.cli`
(the `kgqa` command) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qa.api import Assistant

__all__ = ["Assistant"]


def __getattr__(name: str) -> Any:
    """Lazy `qa.Assistant`."""
    if name == "Assistant":
        from qa.api import Assistant

        return Assistant
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
