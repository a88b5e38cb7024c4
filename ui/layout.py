"""Where a small subgraph's nodes, lines and labels go: deterministic, in pure Python.

Two layouts. `layered_layout` draws cited paths left to right (situation → recommendation): nodes
in columns by path depth, ordered within a column by the barycentre of their neighbours (a few
sweeps of the Sugiyama heuristic, which removes most crossings), columns as far apart as their
edge labels need. `star_layout` draws an entity's neighbourhood: the entity in the middle, the
things pointing at it on the left, the things it points at on the right, one row each (no node
hides another, however many there are).

Edge labels are placed, not just drawn: `place_labels` tries positions along each edge and keeps
the first whose box meets no node and no label placed before it; a label that finds no free place
is left out (the edge's tooltip still says it). `Layout.overlaps()` checks that from the
coordinates. Text widths are estimated from the characters (`text_px`), generously: the browser
tests measure the drawn texts.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from kg.graph import KnowledgeGraph
from qa.render import RELATION_WORDS
from qa.schema import PathEdge

__all__ = [
    "DrawnEdge",
    "Layout",
    "NodeBox",
    "Rect",
    "display_width",
    "layered_layout",
    "layout_edges",
    "place_labels",
    "segment",
    "shorten",
    "star_layout",
    "text_px",
]

FONT = 13  # node labels
EDGE_FONT = 12  # edge labels
_NODE_H = 34.0
_NODE_PAD = 22.0  # left + right padding inside a node box
_ROW_GAP = 26.0
_MIN_COL_GAP = 90.0
_MAX_LABEL = 26  # node label cells
_MAX_EDGE_LABEL = 20  # edge label cells
_MARGIN = 16.0
_LABEL_H = 16.0
_CLEAR = 3.0  # the least space between a label and anything else
_NARROW = set("ijlft.,:;'|!()[]{} ")
_WIDE = set("mwMW@%")


class Rect(BaseModel):
    """An axis-aligned box by its centre and size."""

    x: float
    y: float
    w: float
    h: float

    def meets(self, other: Rect, clear: float = 0.0) -> bool:
        """Whether the boxes overlap, or come closer than `clear`.

        >>> Rect(x=0, y=0, w=10, h=10).meets(Rect(x=9, y=0, w=10, h=10))
        True
        >>> Rect(x=0, y=0, w=10, h=10).meets(Rect(x=10.5, y=0, w=10, h=10), clear=1)
        True
        >>> Rect(x=0, y=0, w=10, h=10).meets(Rect(x=0, y=14, w=10, h=10), clear=3)
        False
        """
        return (
            abs(self.x - other.x) * 2 < self.w + other.w + 2 * clear
            and abs(self.y - other.y) * 2 < self.h + other.h + 2 * clear
        )


class NodeBox(BaseModel):
    """A laid-out node: centre, width and the label it shows."""

    id: str
    label: str
    name: str = ""
    type: str
    x: float
    y: float
    w: float
    h: float = _NODE_H
    focus: bool = False

    @property
    def rect(self) -> Rect:
        """The node's box."""
        return Rect(x=self.x, y=self.y, w=self.w, h=self.h)


class DrawnEdge(BaseModel):
    """An edge as drawn: one line per (source, target), its relations, its placed label."""

    source: str
    target: str
    relations: list[str]
    words: str = Field(description="the relations in the picture's language")
    tip: str = ""
    label: Rect | None = Field(default=None, description="None: no free place for the label")
    label_text: str = ""


class Layout(BaseModel):
    """Everything a picture draws, in one coordinate system starting at (0, 0)."""

    nodes: list[NodeBox]
    edges: list[DrawnEdge]
    width: float
    height: float

    def overlaps(self) -> list[tuple[str, str]]:
        """Pairs of drawn texts (node labels, edge labels) whose boxes overlap: none, by
        construction; tests check it from the coordinates."""
        boxes = [(f"node {n.id}", n.rect) for n in self.nodes] + [
            (f"label {e.source}->{e.target}", e.label) for e in self.edges if e.label is not None
        ]
        return [
            (a, b) for i, (a, ra) in enumerate(boxes) for b, rb in boxes[i + 1 :] if ra.meets(rb)
        ]


def display_width(text: str) -> int:
    """Width in half-width cells: CJK (wide) characters count two.

    >>> display_width("PyTorch"), display_width("推理"), display_width("HF 生态")
    (7, 4, 7)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def text_px(text: str, size: float = 12.0) -> float:
    """An upper estimate of a text's width in pixels in a common sans-serif font.

    >>> text_px("推理"), round(text_px("PyTorch"), 1)
    (26.0, 54.6)
    """
    px = 0.0
    for ch in text:
        if unicodedata.east_asian_width(ch) in "WF":
            px += 13.0
        elif ch in _NARROW:
            px += 4.4
        elif ch in _WIDE:
            px += 12.0
        elif ch.isupper() or ch.isdigit():
            px += 8.8
        else:
            px += 7.4
    return px * size / 12.0


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


def _box(graph: KnowledgeGraph, node: str, x: float = 0.0, y: float = 0.0) -> NodeBox:
    entity = graph.entity(node) if node in graph else None
    name = entity.name if entity else node
    label = shorten(name)
    kind = entity.type.value if entity else "Concept"
    width = text_px(label, FONT) + _NODE_PAD
    return NodeBox(id=node, label=label, name=name, type=kind, x=x, y=y, w=width)


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


def _order_columns(
    columns: dict[int, list[str]], edges: Sequence[PathEdge], sweeps: int = 4
) -> dict[int, list[str]]:
    """Each column's nodes ordered by the mean row of their neighbours in the column before
    (downward sweeps) and after (upward sweeps): the barycentre heuristic for fewer crossings.

    >>> e = [PathEdge(source=s, relation="USED_WITH", target=t)
    ...      for s, t in [("a", "y"), ("b", "x")]]
    >>> _order_columns({0: ["a", "b"], 1: ["x", "y"]}, e)
    {0: ['a', 'b'], 1: ['y', 'x']}
    """
    neighbours: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        neighbours[edge.source].add(edge.target)
        neighbours[edge.target].add(edge.source)
    order = {c: list(nodes) for c, nodes in columns.items()}
    keys = sorted(order)

    def resort(column: int, reference: int) -> None:
        rows = {n: i for i, n in enumerate(order.get(reference, []))}
        current = order[column]

        def centre(node: str) -> float:
            seen = [rows[m] for m in neighbours[node] if m in rows]
            return sum(seen) / len(seen) if seen else float(current.index(node))

        order[column] = sorted(current, key=lambda n: (centre(n), current.index(n)))

    for sweep in range(sweeps):
        sequence = keys[1:] if sweep % 2 == 0 else list(reversed(keys[:-1]))
        for column in sequence:
            resort(column, column - 1 if sweep % 2 == 0 else column + 1)
    return order


def _relation_words(edge_relations: Sequence[str], lang: str) -> str:
    words = RELATION_WORDS["zh" if lang == "zh" else "en"]
    return " · ".join(dict.fromkeys(words.get(r, r) for r in edge_relations))


def _merged(edges: Sequence[PathEdge]) -> dict[tuple[str, str], list[PathEdge]]:
    """Edges by (source, target), in first-seen order (one line per pair)."""
    merged: dict[tuple[str, str], list[PathEdge]] = {}
    for edge in edges:
        if edge.source != edge.target:
            merged.setdefault((edge.source, edge.target), []).append(edge)
    return merged


def layered_layout(
    graph: KnowledgeGraph, edges: Sequence[PathEdge], lang: str = "en"
) -> list[NodeBox]:
    """Nodes in columns by path depth, rows by neighbour barycentre: the same edges draw the
    same picture. Columns stand as far apart as the labels of the edges between them need."""
    columns: dict[int, list[str]] = defaultdict(list)
    for node, column in _layers(edges).items():
        columns[column].append(node)
    for column in columns:
        columns[column].sort(key=lambda n: (_box(graph, n).label, n))
    ordered = _order_columns(dict(columns), edges)
    layer = {n: c for c, nodes in ordered.items() for n in nodes}
    gaps: dict[int, float] = defaultdict(lambda: _MIN_COL_GAP)
    crossing: dict[int, int] = defaultdict(int)
    for (source, target), group in _merged(edges).items():
        first = min(layer[source], layer[target])
        words = shorten(_relation_words([e.relation for e in group], lang), _MAX_EDGE_LABEL)
        crossing[first] += 1
        # room for the widest label, and more for many lines: their labels spread along them
        gaps[first] = max(gaps[first], text_px(words, EDGE_FONT) + 40, 24.0 * crossing[first])
    pitch = _NODE_H + _ROW_GAP
    tallest = max(len(nodes) for nodes in ordered.values())
    boxes: list[NodeBox] = []
    x = _MARGIN
    for column in sorted(ordered):
        nodes = ordered[column]
        width = max(_box(graph, n).w for n in nodes)
        offset = (tallest - len(nodes)) * pitch / 2
        for row, node in enumerate(nodes):
            y = _MARGIN + offset + row * pitch + _NODE_H / 2
            # a column's boxes are as wide as its widest: lines leave and reach them at one x
            box = _box(graph, node, x + width / 2, y)
            boxes.append(box.model_copy(update={"w": width}))
        x += width + gaps[column]
    return boxes


def star_layout(
    graph: KnowledgeGraph, focus: str, edges: Sequence[PathEdge], lang: str = "en"
) -> list[NodeBox]:
    """`focus` in the middle; the sources of its incoming edges on the left and the targets of
    its outgoing edges on the right, one row each, grouped by relation; the longer side gives
    its overflow to the shorter one, so that the picture stays about as wide as it is tall."""
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    for edge in edges:
        if edge.source == focus and edge.target != focus:
            if edge.target not in left:
                right.setdefault(edge.target, edge.relation)
        elif edge.target == focus and edge.source != focus and edge.source not in right:
            left.setdefault(edge.source, edge.relation)

    def key(item: tuple[str, str]) -> tuple[str, str, str]:
        node, relation = item
        return (relation, _box(graph, node).label.casefold(), node)

    sides = [sorted(left.items(), key=key), sorted(right.items(), key=key)]
    long, short = (0, 1) if len(sides[0]) > len(sides[1]) else (1, 0)
    while len(sides[long]) > len(sides[short]) + 1 and len(sides[long]) > 6:
        sides[short].append(sides[long].pop())
    words = {
        n: shorten(_relation_words([r], lang), _MAX_EDGE_LABEL) for side in sides for n, r in side
    }
    pitch = _NODE_H + _ROW_GAP
    rows = max(len(sides[0]), len(sides[1]), 1)
    height = rows * pitch
    centre = _box(graph, focus)
    widths = [max([_box(graph, n).w for n, _ in side] or [0.0]) for side in sides]
    gaps = [
        max([text_px(words[n], EDGE_FONT) * 2 + 40 for n, _ in side] or [0.0]) + _MIN_COL_GAP
        for side in sides
    ]
    middle_x = _MARGIN + widths[0] + (gaps[0] if sides[0] else 0.0) + centre.w / 2
    boxes = [_box(graph, focus, middle_x, _MARGIN + height / 2).model_copy(update={"focus": True})]
    for index, side in enumerate(sides):
        if not side:
            continue
        offset = (rows - len(side)) * pitch / 2
        if index == 0:
            x = _MARGIN + widths[0] / 2
        else:
            x = middle_x + centre.w / 2 + gaps[1] + widths[1] / 2
        for row, (node, _relation) in enumerate(side):
            y = _MARGIN + offset + row * pitch + _NODE_H / 2
            box = _box(graph, node)
            # a side's boxes line up at their inner edge, nearest the focus
            inner = x + (widths[0] - box.w) / 2 if index == 0 else x - (widths[1] - box.w) / 2
            boxes.append(box.model_copy(update={"x": inner, "y": y}))
    return boxes


def _anchor(box: NodeBox, toward_x: float, toward_y: float) -> tuple[float, float]:
    """Where the line from `box` toward a point leaves the box's border."""
    dx, dy = toward_x - box.x, toward_y - box.y
    if dx == 0 and dy == 0:
        return box.x, box.y
    scale = min(
        (box.w / 2) / abs(dx) if dx else float("inf"),
        (box.h / 2) / abs(dy) if dy else float("inf"),
    )
    return box.x + dx * scale, box.y + dy * scale


def segment(where: dict[str, NodeBox], source: str, target: str) -> tuple[float, ...]:
    """The line between two laid-out nodes: from the middle of the side of one that faces the
    other to the middle of the other's facing side when they stand apart left and right (boxes
    of a column share the edge the lines reach, so no line crosses a box of its own column),
    else from border to border toward their centres.

    >>> a = NodeBox(id="a", label="a", type="Tool", x=50, y=50, w=40)
    >>> b = NodeBox(id="b", label="b", type="Tool", x=200, y=10, w=60)
    >>> segment({"a": a, "b": b}, "a", "b")
    (70.0, 50.0, 170.0, 10.0)
    """
    a, b = where[source], where[target]
    if a.x + a.w / 2 < b.x - b.w / 2:
        return a.x + a.w / 2, a.y, b.x - b.w / 2, b.y
    if b.x + b.w / 2 < a.x - a.w / 2:
        return a.x - a.w / 2, a.y, b.x + b.w / 2, b.y
    x1, y1 = _anchor(a, b.x, b.y)
    x2, y2 = _anchor(b, a.x, a.y)
    return x1, y1, x2, y2


#: positions along an edge to try for its label (0 = its start), best first
_ALONG = (0.5, 0.38, 0.62, 0.28, 0.72, 0.18, 0.82, 0.44, 0.56, 0.33, 0.67, 0.23, 0.77, 0.12, 0.88)
_NEAR_START = (0.3, 0.4, 0.22, 0.5, 0.6, 0.15, 0.7)
_NUDGE = (0.0, -_LABEL_H / 2 - 1, _LABEL_H / 2 + 1, -_LABEL_H - 2, _LABEL_H + 2)


def place_labels(
    nodes: Sequence[NodeBox],
    segments: Sequence[tuple[tuple[float, ...], str]],
    near_start: bool = False,
) -> list[Rect | None]:
    """For each segment `((x1, y1, x2, y2), text)`, the box of its label: the first position
    along it (nudged up or down, or set beside it, if need be) that meets no node and no label
    placed before;
    None when there is none. `near_start`: prefer the start of the segment (the neighbour's end
    of an edge in a star, where rows are far apart)."""
    taken = [n.rect for n in nodes]
    placed: list[Rect | None] = []
    for (x1, y1, x2, y2), text in segments:
        w, h = text_px(text, EDGE_FONT) + 6, _LABEL_H
        found = None
        along = _NEAR_START if near_start else _ALONG
        # on the line, a little above or below it, then beside it (a short upright line
        # between two boxes of one column, or the way back of a pair drawn both ways)
        offsets = [(0.0, dy) for dy in _NUDGE] + [
            (dx, 0.0) for step in (0.5, 1.0, 1.5) for dx in (step * w + 10, -step * w - 10)
        ]
        for dx, dy in offsets:
            for t in along:
                box = Rect(x=x1 + (x2 - x1) * t + dx, y=y1 + (y2 - y1) * t + dy, w=w, h=h)
                if not any(box.meets(other, _CLEAR) for other in taken):
                    found = box
                    break
            if found is not None:
                break
        if found is not None:
            taken.append(found)
        placed.append(found)
    return placed


def layout_edges(
    graph: KnowledgeGraph, edges: Sequence[PathEdge], lang: str = "en", focus: str | None = None
) -> Layout:
    """Nodes, lines and placed labels of `edges` (layered, or a star around `focus`), moved so
    that everything drawn starts at (_MARGIN, _MARGIN)."""
    merged = _merged(edges)
    if focus:
        boxes = star_layout(graph, focus, [group[0] for group in merged.values()], lang)
    else:  # every relation of a pair: the gap is as wide as their joint label
        boxes = layered_layout(graph, [e for group in merged.values() for e in group], lang)
    where = {b.id: b for b in boxes}
    drawn: list[DrawnEdge] = []
    segments = []
    for (source, target), group in merged.items():
        if source not in where or target not in where:
            continue
        relations = list(dict.fromkeys(e.relation.value for e in group))
        words = _relation_words(relations, lang)
        names = f"{where[source].name} —{words}→ {where[target].name}"
        quotes = [f"“{e.evidence[0].quote}” — {e.evidence[0].doc}" for e in group if e.evidence]
        drawn.append(
            DrawnEdge(
                source=source,
                target=target,
                relations=relations,
                words=words,
                tip="\n".join([names, *quotes[:2]]),
                label_text=shorten(words, _MAX_EDGE_LABEL),
            )
        )
        line = segment(where, source, target)
        if focus is not None and source == focus:  # the neighbour is the segment's start
            line = (line[2], line[3], line[0], line[1])
        segments.append((line, drawn[-1].label_text))
    for edge, label in zip(drawn, place_labels(boxes, segments, focus is not None), strict=True):
        edge.label = label
    rects = [b.rect for b in boxes] + [e.label for e in drawn if e.label is not None]
    left = min(r.x - r.w / 2 for r in rects) - _MARGIN
    top = min(r.y - r.h / 2 for r in rects) - _MARGIN
    right = max(r.x + r.w / 2 for r in rects) + _MARGIN
    bottom = max(r.y + r.h / 2 for r in rects) + _MARGIN
    moved = [b.model_copy(update={"x": b.x - left, "y": b.y - top}) for b in boxes]
    for edge in drawn:
        if edge.label is not None:
            edge.label = edge.label.model_copy(
                update={"x": edge.label.x - left, "y": edge.label.y - top}
            )
    return Layout(nodes=moved, edges=drawn, width=right - left, height=bottom - top)
