"""Render: the one writer of answer text, from a verified draft (`answer`)."""

from qa.render.answer import (
    RELATION_WORDS,
    as_graph_only,
    chains,
    conflict_summary,
    format_edge,
    format_path,
    render_draft,
    render_snippets,
)

__all__ = [
    "RELATION_WORDS",
    "as_graph_only",
    "chains",
    "conflict_summary",
    "format_edge",
    "format_path",
    "render_draft",
    "render_snippets",
]
