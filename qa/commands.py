"""Registrars of the verbs that live beside the code they drive (see `qa.cli`)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["REGISTRARS"]

REGISTRARS: list[Callable[..., None]] = []

from qa.ask_cli import register as _register_ask  # noqa: E402

REGISTRARS.append(_register_ask)

from qa.eval_cli import register as _register_eval  # noqa: E402

REGISTRARS.append(_register_eval)

from ui.cli import register as _register_ui  # noqa: E402

REGISTRARS.append(_register_ui)

from qa.snippets.cli import register as _register_snippets  # noqa: E402

REGISTRARS.append(_register_snippets)
