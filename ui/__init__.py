"""The Gradio app: chat with cited answers, the cited subgraph, a graph explorer, an `ask` API.

Names load lazily: `import ui` does not pay for gradio's import (the `kgqa ui` verb lives in
`qa.cli.ui`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ui.app import build_app, launch_app
    from ui.evidence import display_quote, group_quotes
    from ui.examples import read_examples, store_examples
    from ui.explorer import explore, find_entity, suggest
    from ui.graphview import edges_svg, legend_html
    from ui.layout import layout_edges
    from ui.overview import store_overview

__all__ = [
    "build_app",
    "display_quote",
    "edges_svg",
    "explore",
    "find_entity",
    "group_quotes",
    "launch_app",
    "layout_edges",
    "legend_html",
    "read_examples",
    "store_examples",
    "store_overview",
    "suggest",
]

_HOME = {
    "build_app": "ui.app",
    "launch_app": "ui.app",
    "display_quote": "ui.evidence",
    "group_quotes": "ui.evidence",
    "read_examples": "ui.examples",
    "store_examples": "ui.examples",
    "explore": "ui.explorer",
    "find_entity": "ui.explorer",
    "suggest": "ui.explorer",
    "edges_svg": "ui.graphview",
    "legend_html": "ui.graphview",
    "layout_edges": "ui.layout",
    "store_overview": "ui.overview",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(import_module(_HOME[name]), name)
    raise AttributeError(f"module 'ui' has no attribute {name!r}")
