"""The subgraph picture and the answer panel, on small hand-made graphs."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

from kg.graph import KnowledgeGraph
from kg.schema import Entity, Evidence, NodeType
from qa.schema import Answer, Citation, Conflict, PathEdge, Recommendation, SnippetReport
from ui.evidence import display_quote, group_quotes
from ui.graphview import edges_svg
from ui.layout import layered_layout, layout_edges, star_layout
from ui.panels import answer_panel, subgraph_panel

SVG = "{http://www.w3.org/2000/svg}"


def _graph() -> KnowledgeGraph:
    g = KnowledgeGraph()
    for node, kind, name in [
        ("scenario:research", NodeType.SCENARIO, "做研究"),
        ("framework:pytorch", NodeType.FRAMEWORK, "PyTorch"),
        ("framework:jax", NodeType.FRAMEWORK, "JAX"),
        ("hardware:tpu", NodeType.HARDWARE, "TPU"),
        ("concept:evil", NodeType.CONCEPT, "<script>alert(1)</script>"),
    ]:
        g.add_entity(Entity(id=node, type=kind, name=name))
    return g


def _edge(source: str, relation: str, target: str, quote: str = "q", start: int = 0) -> PathEdge:
    ev = Evidence(
        doc="a.txt", quote=quote, start=start, end=start + len(quote), heading_path=("一", "二")
    )
    return PathEdge(source=source, relation=relation, target=target, evidence=[ev])


EDGES = [
    _edge("scenario:research", "RECOMMENDED_FOR", "framework:pytorch", "研究：PyTorch"),
    _edge("scenario:research", "RECOMMENDED_FOR", "framework:jax", "**JAX** for research", 40),
    _edge("framework:jax", "RUNS_ON", "hardware:tpu", "| JAX | TPU |", 80),
    _edge("concept:evil", "USED_WITH", "framework:jax", "<img src=x onerror=alert(1)>", 120),
]


def _hub(neighbours: int) -> tuple[KnowledgeGraph, list[PathEdge]]:
    """A hub with `neighbours` neighbours, half pointing at it, with long names and labels."""
    g = KnowledgeGraph()
    g.add_entity(Entity(id="tool:hub", type=NodeType.TOOL, name="Hub Serve"))
    edges = []
    relations = ["RUNS_ON", "SUPPORTS", "IMPLEMENTS", "ALTERNATIVE_TO", "NOT_SUPPORTED"]
    for i in range(neighbours):
        node = f"model:m{i}"
        g.add_entity(Entity(id=node, type=NodeType.MODEL, name=f"Model number {i} with a name"))
        relation = relations[i % len(relations)]
        pair = ("tool:hub", node) if i % 2 else (node, "tool:hub")
        edges.append(_edge(pair[0], relation, pair[1]))
    return g, edges


def test_layered_layout_puts_paths_left_to_right_and_is_deterministic() -> None:
    boxes = {b.id: b for b in layered_layout(_graph(), EDGES)}
    assert boxes["scenario:research"].x < boxes["framework:pytorch"].x
    assert boxes["framework:jax"].x < boxes["hardware:tpu"].x
    assert edges_svg(_graph(), EDGES) == edges_svg(_graph(), list(EDGES))


def test_star_layout_gives_every_neighbour_its_own_row() -> None:
    graph, edges = _hub(20)
    boxes = star_layout(graph, "tool:hub", edges)
    centre, others = boxes[0], boxes[1:]
    assert centre.id == "tool:hub" and centre.focus and len(others) == 20
    left = [b for b in others if b.x < centre.x]
    right = [b for b in others if b.x > centre.x]
    assert len(left) == len(right) == 10  # the longer side gives its overflow to the other
    for side in (left, right):
        rows = sorted(b.y for b in side)
        assert all(lower - upper > centre.h for upper, lower in itertools.pairwise(rows))


def test_labels_never_overlap_nodes_or_each_other() -> None:
    for graph, edges, focus in [
        (_graph(), EDGES, None),
        (*_hub(20), "tool:hub"),
        (*_hub(7), "tool:hub"),
        (*_hub(12), None),
    ]:
        layout = layout_edges(graph, edges, "en", focus)
        assert layout.overlaps() == []
        assert all(e.label is not None for e in layout.edges), "every label found a place"
        inside = all(
            n.x - n.w / 2 >= 0 and n.x + n.w / 2 <= layout.width and n.y - n.h / 2 >= 0
            for n in layout.nodes
        )
        assert inside


def test_svg_is_well_formed_escaped_and_draws_every_edge() -> None:
    svg = edges_svg(_graph(), [*EDGES, EDGES[0]], lang="zh")  # a repeated edge is drawn once
    root = ET.fromstring(svg)
    assert len(root.findall(f"{SVG}g[@class='kgqa-edge']")) == 4
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "PyTorch" in labels and "推荐" in labels
    assert "<script>" not in svg and "<img" not in svg
    tips = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any("“研究：PyTorch” — a.txt" in tip for tip in tips)
    markers = re.findall(r'marker id="([^"]+)"', svg)
    assert len(markers) == 1 and markers[0] != "kgqa-arrow"  # its own: not a hidden tab's
    assert edges_svg(_graph(), []) == ""


def test_picture_has_a_legend_of_the_node_types_it_shows() -> None:
    html = subgraph_panel(edges_svg(_graph(), EDGES[:3], "en"), "en")
    legend = re.findall(r'kgqa-legend-item" data-type="([^"]+)"', html)
    assert legend == ["Scenario", "Framework", "Hardware"]
    assert "场景" in subgraph_panel(edges_svg(_graph(), EDGES[:3], "zh"), "zh")


def test_quotes_render_markdown_and_show_once() -> None:
    assert display_quote("**JAX** for research") == "JAX for research"
    assert display_quote("| JAX | TPU |") == "JAX · TPU"
    assert display_quote("- see [the guide](https://x.invalid/g)") == "see the guide"
    groups = group_quotes([[EDGES[0]], [EDGES[0], EDGES[2]]])
    assert [(g.text, g.paths) for g in groups] == [("研究：PyTorch", [1, 2]), ("JAX · TPU", [2])]


def test_answer_panel_shows_recommendation_quotes_conflicts_and_snippet_badges() -> None:
    answer = Answer(
        question="q",
        answer="a",
        recommendations=[
            Recommendation(id="framework:pytorch", name="PyTorch"),
            Recommendation(id="framework:jax", name="JAX"),
        ],
        citations=[Citation(path=[EDGES[0]]), Citation(path=[EDGES[3]]), Citation(path=[EDGES[0]])],
        conflicts=[Conflict(subject="framework:jax", relation="RUNS_ON", claims=EDGES[1:3])],
        snippets=[SnippetReport(code="import torch\n", status="passed", detail="ran")],
    )
    html = answer_panel(_graph(), answer, "en")
    assert re.search(r"Recommendation</span> <strong>PyTorch</strong>", html)
    assert "Also consider: JAX" in html
    assert "Cited graph paths (3)" in html
    assert html.count("“研究：PyTorch”") == 1  # one quote, once, for the two paths it supports
    assert 'data-paths="1 3"' in html and "a.txt · section: 一 › 二" in html
    assert "“JAX for research”" in html and "“**JAX**" not in html
    assert 'title="verbatim: **JAX** for research"' in html  # the span stays the evidence
    assert "The sources disagree" in html
    assert 'kgqa-badge kgqa-passed">passed' in html
    assert "<img" not in html and "&lt;img src=x" in html
    zh = answer_panel(_graph(), answer, "zh")
    assert "推荐</span>" in zh and "资料之间有分歧" in zh


def test_abstained_answer_says_not_covered() -> None:
    answer = Answer(question="pizza?", answer="...", abstained=True)
    assert "Not covered by the sources." in answer_panel(_graph(), answer, "en")
    assert "资料未涵盖这个问题。" in answer_panel(_graph(), answer, "zh")
