"""Pictures of small subgraphs: self-contained SVG of a `ui.layout.Layout`, and its legend.

`edges_svg` draws cited paths (layered, left to right) or an entity's neighbourhood (a star around
it). Each edge carries a `<title>` tooltip with its first evidence quote, so hovering shows the
source text; each node's colour is its type (`legend_html` says which). No JavaScript, no fonts
or files from anywhere: the browser needs nothing but the markup.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from html import escape

from kg.graph import KnowledgeGraph
from qa.schema import PathEdge
from ui.layout import EDGE_FONT, FONT, DrawnEdge, NodeBox, layout_edges, segment

__all__ = ["TYPE_COLOURS", "TYPE_NAMES", "edges_svg", "legend_html"]

TYPE_COLOURS = {
    "Framework": "#bfdbfe",
    "Library": "#c7d2fe",
    "InferenceEngine": "#fbcfe8",
    "Tool": "#ddd6fe",
    "Hardware": "#fde68a",
    "ParallelStrategy": "#a5f3fc",
    "Technique": "#bbf7d0",
    "Format": "#e7e5e4",
    "Model": "#f5d0fe",
    "Scenario": "#fed7aa",
    "Persona": "#fecaca",
    "Criterion": "#d9f99d",
    "Concept": "#e2e8f0",
    "Organization": "#cbd5e1",
    "Platform": "#99f6e4",
    "Language": "#fef08a",
    "License": "#f1f5f9",
    "ExecutionMode": "#e9d5ff",
}
#: node type -> (zh, en) legend words
TYPE_NAMES: dict[str, tuple[str, str]] = {
    "Framework": ("框架", "Framework"),
    "Library": ("库", "Library"),
    "InferenceEngine": ("推理引擎", "Inference engine"),
    "Tool": ("工具", "Tool"),
    "Hardware": ("硬件", "Hardware"),
    "ParallelStrategy": ("并行策略", "Parallel strategy"),
    "Technique": ("技术", "Technique"),
    "Format": ("格式", "Format"),
    "Model": ("模型", "Model"),
    "Scenario": ("场景", "Scenario"),
    "Persona": ("人群", "Persona"),
    "Criterion": ("评价维度", "Criterion"),
    "Concept": ("概念", "Concept"),
    "Organization": ("组织", "Organization"),
    "Platform": ("平台", "Platform"),
    "Language": ("编程语言", "Language"),
    "License": ("许可证", "License"),
    "ExecutionMode": ("执行模式", "Execution mode"),
}


def edges_svg(
    graph: KnowledgeGraph,
    edges: Sequence[PathEdge],
    lang: str = "en",
    focus: str | None = None,
    title: str = "",
) -> str:
    """An SVG picture of `edges` (layered, or a star around `focus`); empty string for no edges.

    It is as wide as its container up to a quarter more than its natural size, and never
    narrower than its natural size up to 960 px (its container scrolls instead)."""
    layout = layout_edges(graph, edges, lang, focus) if edges else None
    if layout is None or not layout.edges:
        return ""
    where = {b.id: b for b in layout.nodes}
    w, h = layout.width, layout.height
    # an id of its own: a marker shared with a picture in a hidden tab is not drawn
    marker = "kgqa-arrow-" + hashlib.sha1(layout.model_dump_json().encode()).hexdigest()[:10]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kgqa-graph" role="img" '
        f'viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
        f'data-hidden-labels="{sum(e.label is None for e in layout.edges)}" '
        f'style="width:100%;max-width:{w * 1.25:.0f}px;min-width:{min(w, 960):.0f}px;'
        f'height:auto;font-family:sans-serif">',
        f"<title>{escape(title or 'subgraph')}</title>",
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/>'
        "</marker></defs>",
    ]
    parts.extend(_edge_svg(edge, where, marker) for edge in layout.edges)
    parts.extend(_node_svg(box) for box in layout.nodes)
    parts.extend(_label_svg(edge) for edge in layout.edges if edge.label is not None)
    parts.append("</svg>")
    return "".join(parts)


def _edge_svg(edge: DrawnEdge, where: dict[str, NodeBox], marker: str) -> str:
    x1, y1, x2, y2 = segment(where, edge.source, edge.target)
    colour = "#dc2626" if "NOT_RECOMMENDED" in edge.relations else "#64748b"
    return (
        f'<g class="kgqa-edge" data-relation="{escape(edge.relations[0])}" '
        f'data-source="{escape(edge.source)}" data-target="{escape(edge.target)}">'
        f"<title>{escape(edge.tip)}</title>"
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
        f'stroke-width="1.5" marker-end="url(#{marker})"/></g>'
    )


def _label_svg(edge: DrawnEdge) -> str:
    assert edge.label is not None
    box = edge.label
    return (
        f'<g class="kgqa-edge-label"><title>{escape(edge.tip)}</title>'
        f'<rect x="{box.x - box.w / 2:.1f}" y="{box.y - box.h / 2:.1f}" width="{box.w:.1f}" '
        f'height="{box.h:.1f}" rx="3" fill="#ffffff" fill-opacity="0.9"/>'
        f'<text x="{box.x:.1f}" y="{box.y:.1f}" text-anchor="middle" dominant-baseline="central" '
        f'fill="#334155" font-size="{EDGE_FONT}">{escape(edge.label_text)}</text></g>'
    )


def _node_svg(box: NodeBox) -> str:
    fill = TYPE_COLOURS.get(box.type, "#f1f5f9")
    stroke = "#1d4ed8" if box.focus else "#475569"
    bold = ' font-weight="bold"' if box.focus else ""
    return (
        f'<g class="kgqa-node" data-id="{escape(box.id)}" data-type="{escape(box.type)}">'
        f"<title>{escape(box.type)}: {escape(box.name)} ({escape(box.id)})</title>"
        f'<rect x="{box.x - box.w / 2:.1f}" y="{box.y - box.h / 2:.1f}" width="{box.w:.1f}" '
        f'height="{box.h:.1f}" rx="8" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{2.5 if box.focus else 1}"/>'
        f'<text x="{box.x:.1f}" y="{box.y:.1f}" text-anchor="middle" dominant-baseline="central" '
        f'fill="#0f172a" font-size="{FONT}"{bold}>'
        f"{escape(box.label)}</text></g>"
    )


def legend_html(types: Sequence[str], lang: str = "en") -> str:
    """A legend of node colours for the types shown, in the picture's language.

    >>> legend_html(["Hardware"], "zh").count("kgqa-legend-item")
    1
    """
    items = []
    for kind in dict.fromkeys(types):
        zh, en = TYPE_NAMES.get(kind, (kind, kind))
        colour = TYPE_COLOURS.get(kind, "#f1f5f9")
        items.append(
            f'<span class="kgqa-legend-item" data-type="{escape(kind)}">'
            f'<i style="background:{colour}"></i>{escape(zh if lang == "zh" else en)}</span>'
        )
    return f'<div class="kgqa-legend">{"".join(items)}</div>' if items else ""
