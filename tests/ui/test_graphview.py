"""The subgraph picture and the answer panel, on a five-node hand-made graph."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from kg.graph import KnowledgeGraph
from kg.schema import Entity, Evidence, NodeType
from qa.schema import Answer, Citation, Conflict, PathEdge, Recommendation, SnippetReport
from ui.graphview import edges_svg, layered_layout, radial_layout
from ui.panels import answer_panel

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


def _edge(source: str, relation: str, target: str, quote: str = "q") -> PathEdge:
    ev = Evidence(doc="a.txt", quote=quote, start=0, end=len(quote), heading_path=("一", "二"))
    return PathEdge(source=source, relation=relation, target=target, evidence=[ev])


EDGES = [
    _edge("scenario:research", "RECOMMENDED_FOR", "framework:pytorch", "研究：PyTorch"),
    _edge("scenario:research", "RECOMMENDED_FOR", "framework:jax"),
    _edge("framework:jax", "RUNS_ON", "hardware:tpu"),
    _edge("concept:evil", "USED_WITH", "framework:jax", "<img src=x onerror=alert(1)>"),
]


def test_layered_layout_puts_paths_left_to_right_and_is_deterministic() -> None:
    boxes = {b.id: b for b in layered_layout(_graph(), EDGES)}
    assert boxes["scenario:research"].x < boxes["framework:pytorch"].x
    assert boxes["framework:jax"].x < boxes["hardware:tpu"].x
    assert edges_svg(_graph(), EDGES) == edges_svg(_graph(), list(EDGES))


def test_svg_is_well_formed_escaped_and_draws_every_edge() -> None:
    svg = edges_svg(_graph(), [*EDGES, EDGES[0]], lang="zh")  # a repeated edge is drawn once
    root = ET.fromstring(svg)
    assert len(root.findall(f"{SVG}g[@class='kgqa-edge']")) == 4
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "PyTorch" in labels and "推荐" in labels
    assert "<script>" not in svg and "<img" not in svg
    tips = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any("“研究：PyTorch” — a.txt" in tip for tip in tips)


def test_radial_layout_centres_the_focus() -> None:
    boxes = radial_layout(_graph(), "framework:jax", EDGES[1:])
    centre = boxes[0]
    assert centre.id == "framework:jax" and centre.focus
    distances = {round(((b.x - centre.x) ** 2 + (b.y - centre.y) ** 2) ** 0.5) for b in boxes[1:]}
    assert len(distances) == 1 and distances.pop() > 0
    assert edges_svg(_graph(), []) == ""


def test_answer_panel_shows_recommendation_quotes_conflicts_and_snippet_badges() -> None:
    answer = Answer(
        question="q",
        answer="a",
        recommendations=[
            Recommendation(id="framework:pytorch", name="PyTorch"),
            Recommendation(id="framework:jax", name="JAX"),
        ],
        citations=[Citation(path=[EDGES[0]]), Citation(path=[EDGES[3]])],
        conflicts=[Conflict(subject="framework:jax", relation="RUNS_ON", claims=EDGES[1:3])],
        snippets=[SnippetReport(code="import torch\n", status="passed", detail="ran")],
    )
    html = answer_panel(_graph(), answer, "en")
    assert re.search(r"Recommendation</span> <strong>PyTorch</strong>", html)
    assert "Also consider: JAX" in html
    assert html.count('class="kgqa-citation"') == 2
    assert "“研究：PyTorch”" in html and "a.txt · section: 一 › 二" in html
    assert "The sources disagree" in html
    assert 'kgqa-badge kgqa-passed">passed' in html
    assert "<img" not in html and "&lt;img src=x" in html
    zh = answer_panel(_graph(), answer, "zh")
    assert "推荐</span>" in zh and "资料之间有分歧" in zh


def test_abstained_answer_says_not_covered() -> None:
    answer = Answer(question="pizza?", answer="...", abstained=True)
    assert "Not covered by the sources." in answer_panel(_graph(), answer, "en")
    assert "资料未涵盖这个问题。" in answer_panel(_graph(), answer, "zh")
