"""The Gradio app: chat with cited answers, the cited subgraph, a graph explorer, an `ask` API.

Names load lazily: `import ui` does not pay for gradio's import (the `kgqa ui` verb lives in
`qa.cli.ui`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ui.app import DEFAULT_EXAMPLES, build_app, explore, find_entity, launch_app
    from ui.graphview import edges_svg
    from ui.session import ChatState, resolve_question

__all__ = [
    "DEFAULT_EXAMPLES",
    "ChatState",
    "build_app",
    "edges_svg",
    "explore",
    "find_entity",
    "launch_app",
    "resolve_question",
]

_HOME = {
    "DEFAULT_EXAMPLES": "ui.app",
    "build_app": "ui.app",
    "explore": "ui.app",
    "find_entity": "ui.app",
    "launch_app": "ui.app",
    "edges_svg": "ui.graphview",
    "ChatState": "ui.session",
    "resolve_question": "ui.session",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(import_module(_HOME[name]), name)
    raise AttributeError(f"module 'ui' has no attribute {name!r}")
