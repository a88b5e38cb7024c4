"""Registrars of the verbs that live beside the code they drive (see `qa.cli`).

Each verb's module is imported only when the parser needs that verb: `kgqa ask ...` builds the
`ask` parser alone, so it never imports the LLM client (httpx), the UI or the snippet sandbox.
`kgqa --help` (or a verb kgqa does not know) registers them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["VERBS", "registrars"]

# verb -> "module:function" that adds it to the `kgqa` parser, in `kgqa --help` order
VERBS: dict[str, str] = {
    "ask": "qa.ask_cli:register_ask",
    "llm": "qa.ask_cli:register_llm",
    "eval": "qa.eval_cli:register",
    "ui": "ui.cli:register",
    "snippets": "qa.snippets.cli:register",
}


def _load(target: str) -> Callable[..., None]:
    module, _, name = target.partition(":")
    register: Callable[..., None] = getattr(importlib.import_module(module), name)
    return register


def registrars(verb: str | None = None) -> list[Callable[..., None]]:
    """The registrar of `verb` if this table has it, else those of every verb (in help order).

    >>> [r.__name__ for r in registrars("ask")]
    ['register_ask']
    >>> len(registrars(None)) == len(VERBS)
    True
    """
    if verb in VERBS:
        return [_load(VERBS[verb])]
    return [_load(target) for target in VERBS.values()]


def __getattr__(name: str) -> Any:
    """`REGISTRARS`: every verb's registrar (imports every verb's module)."""
    if name == "REGISTRARS":
        return registrars(None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
