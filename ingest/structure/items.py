"""Rows, items and depths: pipe-table cells, list markers, glued list items, nesting depths of
list items and decision-tree branches."""

from __future__ import annotations

import itertools
import re

from ingest.structure.code import Line
from ingest.structure.inline import BULLET

__all__ = [
    "NUMBERED",
    "indent_depths",
    "list_marker",
    "split_glued_items",
    "table_cells",
    "tree_depths",
]

NUMBERED = re.compile(r"^(\d{1,3})(?:[.)．]\s+|、\s*)(?=\S)")
_GLUED_ITEM = re.compile(r"(?<=[。！？!?；])\s+[-•*]\s+(?=\S)")


def list_marker(t: str) -> int | None:
    m = BULLET.match(t) or NUMBERED.match(t)
    return m.end() if m else None


def table_cells(text: str, ln: Line) -> list[tuple[int, int]]:
    """Spans of the stripped cells of a pipe-table row (outer pipes optional, `\\|` escaped)."""
    pipes = [i for i, c in enumerate(ln.text) if c == "|" and (i == 0 or ln.text[i - 1] != "\\")]
    bounds = [ln.start - 1, *(ln.start + i for i in pipes), ln.end]
    cells: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(bounds):
        piece = text[a + 1 : b]
        s = a + 1 + len(piece) - len(piece.lstrip())
        cells.append((s, max(s, a + 1 + len(piece.rstrip()))))
    if ln.text.startswith("|"):
        cells = cells[1:]
    if ln.text.endswith("|") and len(ln.text) > 1 and cells:
        cells = cells[:-1]
    return cells


def split_glued_items(text: str, items: list[list[int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """Split items that scraping glued together (`...。 - next item`) into separate items."""
    spans: list[tuple[int, int]] = []
    indents: list[int] = []
    for start, end, indent in items:
        pos = start
        for m in _GLUED_ITEM.finditer(text, start, end):
            spans.append((pos, m.start()))
            indents.append(indent)
            pos = m.end()
        spans.append((pos, end))
        indents.append(indent)
    return spans, indents


def indent_depths(indents: list[int]) -> list[int]:
    """Nesting depth of each list item from its indentation.

    >>> indent_depths([0, 2, 4, 2, 0, 3])
    [0, 1, 2, 1, 0, 1]
    """
    stack: list[int] = []
    depths: list[int] = []
    for x in indents:
        while stack and x < stack[-1]:
            stack.pop()
        if not stack or x > stack[-1]:
            stack.append(x)
        depths.append(len(stack) - 1)
    return depths


def tree_depths(cols: list[int | None], kinds: list[str]) -> list[int]:
    """Depths from branch columns; the root question (None) is 0.

    A branch drawn at a depth that a `└─` already closed must be a child of that last branch
    whose indentation was lost in scraping, so it moves one level deeper.

    >>> tree_depths([None, 0, 2, 0, 0, 0], ["root", "mid", "last", "last", "mid", "last"])
    [0, 1, 2, 1, 2, 2]
    """
    present = [c for c in cols if c]
    unit = min(present) if present else 1
    depths: list[int] = []
    closed: set[int] = set()
    for col, kind in zip(cols, kinds, strict=True):
        if col is None:
            depths.append(0)
            continue
        depth = 1 + col // unit
        while depth in closed:
            depth += 1
        closed = {d for d in closed if d < depth}
        if kind == "last":
            closed.add(depth)
        depths.append(depth)
    return depths
