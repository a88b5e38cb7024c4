"""Pictures of small subgraphs: self-contained SVG, laid out deterministically in pure Python.

Two layouts: `layered_layout` (cited paths read left to right, situation → recommendation) and
`radial_layout` (an entity in the middle, its neighbours around it). `edges_svg` draws either; each
edge carries a `<title>` tooltip with its first evidence quote, so hovering shows the source text.
No JavaScript, no fonts or files from anywhere: the browser needs nothing but the markup.
"""

from __future__ import annotations

import math
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from html import escape

from pydantic import BaseModel

from kg.graph import KnowledgeGraph
from qa.render import format_edge
from qa.schema import PathEdge

__all__ = ["NodeBox", "display_width", "edges_svg", "layered_layout", "radial_layout", "shorten"]

_TYPE_COLOURS = {
    "Framework": "#dbeafe",
    "Library": "#e0e7ff",
    "InferenceEngine": "#fce7f3",
    "Tool": "#ede9fe",
    "Hardware": "#fef3c7",
    "ParallelStrategy": "#cffafe",
    "Technique": "#dcfce7",
    "Format": "#f5f5f4",
    "Model": "#fae8ff",
    "Scenario": "#ffedd5",
    "Persona": "#fee2e2",
    "Criterion": "#ecfccb",
    "Concept": "#f1f5f9",
    "Organization": "#e2e8f0",
}
_NODE_H = 30
_COL_GAP = 120
_ROW_GAP = 22
_CHAR_PX = 7.2
_MAX_LABEL = 22


class NodeBox(BaseModel):
    """A laid-out node: centre, width and the label it shows."""

    id: str
    label: str
    type: str
    x: float
    y: float
    w: float
    focus: bool = False


def display_width(text: str) -> int:
    """Width in half-width cells: CJK (wide) characters count two.

    >>> display_width("PyTorch"), display_width("推理"), display_width("HF 生态")
    (7, 4, 7)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def shorten(text: str, limit: int = _MAX_LABEL) -> str:
    """Cut a label to `limit` cells, marking the cut with an ellipsis.

    >>> shorten("PyTorch"), shorten("研究/写论文/做研究/复现论文/教学", 12)
    ('PyTorch', '研究/写论文…')
    """
    if display_width(text) <= limit:
        return text
    out, used = "", 0
    for ch in text:
        used += display_width(ch)
        if used > limit - 1:
            break
        out += ch
    return out + "…"


def _box(graph: KnowledgeGraph, node: str, x: float, y: float, focus: bool = False) -> NodeBox:
    entity = graph.entity(node) if node in graph else None
    label = shorten(entity.name if entity else node)
    kind = entity.type.value if entity else "Concept"
    width = display_width(label) * _CHAR_PX + 20
    return NodeBox(id=node, label=label, type=kind, x=x, y=y, w=width, focus=focus)


def _layers(edges: Sequence[PathEdge]) -> dict[str, int]:
    """Column of each node: the longest chain of edges reaching it (cycles cut at the node count).

    >>> _layers([PathEdge(source="a", relation="USED_WITH", target="b"),
    ...          PathEdge(source="b", relation="USED_WITH", target="c")])
    {'a': 0, 'b': 1, 'c': 2}
    """
    nodes = list(dict.fromkeys(n for e in edges for n in (e.source, e.target)))
    layer = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes)):
        changed = False
        for edge in edges:
            if edge.source != edge.target and layer[edge.target] < layer[edge.source] + 1:
                layer[edge.target] = min(layer[edge.source] + 1, len(nodes) - 1)
                changed = True
        if not changed:
            break
    return layer


def layered_layout(graph: KnowledgeGraph, edges: Sequence[PathEdge]) -> list[NodeBox]:
    """Nodes in columns by path depth, rows by name: the same edges draw the same picture."""
    columns: dict[int, list[str]] = defaultdict(list)
    for node, column in _layers(edges).items():
        columns[column].append(node)
    widths = {c: max(_box(graph, n, 0, 0).w for n in nodes) for c, nodes in sorted(columns.items())}
    boxes: list[NodeBox] = []
    x = 20.0
    tallest = max(len(nodes) for nodes in columns.values())
    for column in sorted(columns):
        nodes = sorted(columns[column], key=lambda n: (_box(graph, n, 0, 0).label, n))
        offset = (tallest - len(nodes)) * (_NODE_H + _ROW_GAP) / 2
        for row, node in enumerate(nodes):
            y = 20 + offset + row * (_NODE_H + _ROW_GAP) + _NODE_H / 2
            boxes.append(_box(graph, node, x + widths[column] / 2, y))
        x += widths[column] + _COL_GAP
    return boxes


def radial_layout(graph: KnowledgeGraph, focus: str, edges: Sequence[PathEdge]) -> list[NodeBox]:
    """`focus` in the centre, the other nodes on a circle in name order."""
    others = sorted(
        {n for e in edges for n in (e.source, e.target)} - {focus},
        key=lambda n: (graph.entity(n).name if n in graph else n, n),
    )
    widest = max([_box(graph, n, 0, 0).w for n in others] or [80.0])
    radius = max(140.0, len(others) * (_NODE_H + 8) / (2 * math.pi), widest * 0.9)
    centre = radius + widest / 2 + 20
    boxes = [_box(graph, focus, centre, centre, focus=True)]
    for i, node in enumerate(others):
        angle = 2 * math.pi * i / max(len(others), 1) - math.pi / 2
        boxes.append(
            _box(graph, node, centre + radius * math.cos(angle), centre + radius * math.sin(angle))
        )
    return boxes


def _anchor(box: NodeBox, toward: NodeBox) -> tuple[float, float]:
    """Where the line from `box` toward another box leaves the box's border."""
    dx, dy = toward.x - box.x, toward.y - box.y
    if dx == 0 and dy == 0:
        return box.x, box.y
    scale = min(
        (box.w / 2) / abs(dx) if dx else math.inf, (_NODE_H / 2) / abs(dy) if dy else math.inf
    )
    return box.x + dx * scale, box.y + dy * scale


def edges_svg(
    graph: KnowledgeGraph,
    edges: Sequence[PathEdge],
    lang: str = "en",
    focus: str | None = None,
    title: str = "",
) -> str:
    """An SVG picture of `edges` (layered, or radial around `focus`); empty string for no edges."""
    edges = list({(e.source, e.relation, e.target): e for e in edges}.values())
    if not edges:
        return ""
    boxes = radial_layout(graph, focus, edges) if focus else layered_layout(graph, edges)
    where = {b.id: b for b in boxes}
    width = max(b.x + b.w / 2 for b in boxes) + 20
    height = max(b.y + _NODE_H / 2 for b in boxes) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kgqa-graph" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'style="max-width:100%;height:auto;font-family:sans-serif;font-size:12px">',
        f"<title>{escape(title or 'subgraph')}</title>",
        '<defs><marker id="kgqa-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/>'
        "</marker></defs>",
    ]
    for i, edge in enumerate(edges):
        along = (0.5, 0.35, 0.65)[i % 3]  # stagger labels so crossing edges don't stack them
        parts.append(_edge_svg(graph, edge, where[edge.source], where[edge.target], lang, along))
    for box in boxes:
        parts.append(_node_svg(box))
    parts.append("</svg>")
    return "".join(parts)


def _edge_svg(
    graph: KnowledgeGraph,
    edge: PathEdge,
    source: NodeBox,
    target: NodeBox,
    lang: str,
    along: float = 0.5,
) -> str:
    x1, y1 = _anchor(source, target)
    x2, y2 = _anchor(target, source)
    words = format_edge(graph, edge, lang)
    label = shorten(words.split("—", 1)[1].split("→", 1)[0], 16) if "—" in words else edge.relation
    tip = words
    if edge.evidence:
        ev = edge.evidence[0]
        tip += f"\n“{ev.quote}” — {ev.doc}"
    colour = "#dc2626" if edge.relation == "NOT_RECOMMENDED" else "#64748b"
    mx, my = x1 + (x2 - x1) * along, y1 + (y2 - y1) * along
    return (
        f'<g class="kgqa-edge" data-relation="{escape(edge.relation)}"><title>{escape(tip)}</title>'
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
        f'stroke-width="1.5" marker-end="url(#kgqa-arrow)"/>'
        f'<text x="{mx:.1f}" y="{my - 4:.1f}" text-anchor="middle" fill="#334155" '
        f'font-size="11" paint-order="stroke" stroke="#ffffff" stroke-width="3">'
        f"{escape(label)}</text></g>"
    )


def _node_svg(box: NodeBox) -> str:
    fill = _TYPE_COLOURS.get(box.type, "#f1f5f9")
    stroke = "#1d4ed8" if box.focus else "#475569"
    return (
        f'<g class="kgqa-node" data-id="{escape(box.id)}"><title>{escape(box.type)}: '
        f"{escape(box.id)}</title>"
        f'<rect x="{box.x - box.w / 2:.1f}" y="{box.y - _NODE_H / 2:.1f}" width="{box.w:.1f}" '
        f'height="{_NODE_H}" rx="8" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{2.5 if box.focus else 1}"/>'
        f'<text x="{box.x:.1f}" y="{box.y + 4:.1f}" text-anchor="middle" fill="#0f172a">'
        f"{escape(box.label)}</text></g>"
    )
