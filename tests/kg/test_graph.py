"""KnowledgeGraph on a five-node graph written for the test: merge, read, walk, export."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from kg.errors import StoreError
from kg.graph import KnowledgeGraph
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType

TEXT = "研究/写论文：PyTorch >> JAX。边缘设备 → OpenVINO。PyTorch 导出 ONNX。"


def _ev(quote: str, doc: str = "a.md") -> Evidence:
    start = TEXT.index(quote)
    return Evidence(doc=doc, quote=quote, start=start, end=start + len(quote), heading_path=("一",))


def _five() -> KnowledgeGraph:
    graph = KnowledgeGraph()
    for node_type, name in [
        (NodeType.FRAMEWORK, "PyTorch"),
        (NodeType.FRAMEWORK, "JAX"),
        (NodeType.HARDWARE, "Edge Device"),
        (NodeType.INFERENCE_ENGINE, "OpenVINO"),
        (NodeType.FORMAT, "ONNX"),
    ]:
        graph.add_entity(
            Entity(
                id=f"{node_type.prefix}:{name.lower().replace(' ', '-')}", type=node_type, name=name
            )
        )
    graph.add_entity(Entity(id="scenario:research", type=NodeType.SCENARIO, name="研究/写论文"))
    graph.add_relation(
        Relation(
            source="framework:pytorch",
            relation=RelationType.RANKS_ABOVE,
            target="framework:jax",
            criterion="scenario:research",
            strength=">>",
            evidence=[_ev("研究/写论文：PyTorch >> JAX")],
        )
    )
    graph.add_relation(
        Relation(
            source="hardware:edge-device",
            relation=RelationType.RECOMMENDED_FOR,
            target="inference-engine:openvino",
            evidence=[_ev("边缘设备 → OpenVINO")],
        )
    )
    graph.add_relation(
        Relation(
            source="framework:pytorch",
            relation=RelationType.EXPORTS_TO,
            target="format:onnx",
            evidence=[_ev("PyTorch 导出 ONNX")],
        )
    )
    return graph


def test_adding_the_same_entity_merges_aliases_and_evidence() -> None:
    graph = _five()
    graph.add_entity(
        Entity(
            id="framework:pytorch",
            type=NodeType.FRAMEWORK,
            name="torch",
            aliases=["PyTorch", "Py Torch", "pytorch 2"],
            evidence=[_ev("PyTorch 导出 ONNX")],
        )
    )
    entity = graph.entity("framework:pytorch")
    assert entity.name == "PyTorch"
    assert entity.aliases == ["pytorch 2", "torch"]  # "Py Torch" normalises like the name
    assert [e.quote for e in entity.evidence] == ["PyTorch 导出 ONNX"]
    assert graph.g.number_of_nodes() == 6
    assert graph.find("TORCH") == "framework:pytorch"


def test_duplicate_relations_merge_their_evidence_once() -> None:
    graph = _five()
    again = Relation(
        source="hardware:edge-device",
        relation=RelationType.RECOMMENDED_FOR,
        target="inference-engine:openvino",
        evidence=[_ev("边缘设备 → OpenVINO"), _ev("边缘设备 → OpenVINO", doc="b.md")],
    )
    graph.add_relation(again)
    graph.add_relation(again)
    rel = graph.edge("hardware:edge-device", "RECOMMENDED_FOR", "inference-engine:openvino")
    assert rel is not None
    assert [e.doc for e in rel.evidence] == ["a.md", "b.md"]
    assert graph.g.number_of_edges() == 3


def test_relations_under_different_criteria_stay_apart() -> None:
    graph = _five()
    graph.add_entity(Entity(id="criterion:speed", type=NodeType.CRITERION, name="speed"))
    graph.add_relation(
        Relation(
            source="framework:pytorch",
            relation=RelationType.RANKS_ABOVE,
            target="framework:jax",
            criterion="criterion:speed",
            strength=">",
            evidence=[_ev("PyTorch >> JAX")],
        )
    )
    ranks = [r for r in graph.out_relations("framework:pytorch") if r.relation == "RANKS_ABOVE"]
    assert sorted((r.criterion, r.strength) for r in ranks) == [
        ("criterion:speed", ">"),
        ("scenario:research", ">>"),
    ]
    assert graph.edge("framework:pytorch", "RANKS_ABOVE", "framework:jax") is not None


def test_a_relation_to_an_unknown_node_is_refused() -> None:
    graph = _five()
    with pytest.raises(StoreError, match="unknown node 'framework:mxnet'"):
        graph.add_relation(
            Relation(
                source="framework:mxnet",
                relation=RelationType.RUNS_ON,
                target="hardware:edge-device",
            )
        )


def test_neighbourhood_walks_both_directions() -> None:
    graph = _five()
    one = graph.neighbourhood("framework:pytorch", hops=1)
    assert sorted(one.g.nodes) == ["format:onnx", "framework:jax", "framework:pytorch"]
    assert one.g.number_of_edges() == 2
    onnx = graph.neighbourhood("format:onnx", hops=2)
    assert sorted(onnx.g.nodes) == ["format:onnx", "framework:jax", "framework:pytorch"]
    assert graph.neighbourhood("inference-engine:openvino", hops=0).g.number_of_nodes() == 1


def test_subgraph_is_a_copy() -> None:
    graph = _five()
    sub = graph.subgraph(["framework:pytorch", "format:onnx"])
    sub.add_entity(Entity(id="framework:jax-2", type=NodeType.FRAMEWORK, name="JAX 2"))
    assert "framework:jax-2" not in graph
    assert [r.relation for r in sub.relations()] == [RelationType.EXPORTS_TO]


def test_stats_count_by_type() -> None:
    stats = _five().stats()
    assert (stats.entities, stats.relations, stats.documents) == (6, 3, 1)
    assert stats.entities_by_type["Framework"] == 2
    assert stats.relations_by_type == {"EXPORTS_TO": 1, "RANKS_ABOVE": 1, "RECOMMENDED_FOR": 1}


def test_node_link_round_trip_is_exact() -> None:
    graph = _five()
    graph.add_entity(
        Entity(
            id="framework:pytorch",
            type=NodeType.FRAMEWORK,
            name="PyTorch",
            aliases=["torch"],
            evidence=[_ev("PyTorch 导出 ONNX")],
        )
    )
    data = graph.to_node_link(with_node_evidence=True)
    again = KnowledgeGraph.from_node_link(json.loads(json.dumps(data, ensure_ascii=False)))
    assert again.to_node_link(with_node_evidence=True) == data
    assert again.entity("framework:pytorch").evidence == graph.entity("framework:pytorch").evidence


def test_export_follows_design_and_loads_in_networkx() -> None:
    data = _five().to_node_link()
    for node in data["nodes"]:
        assert {"id", "type", "name", "aliases"} <= set(node)
        assert "evidence" not in node
    for edge in data["edges"]:
        assert {"source", "target", "relation", "evidence"} <= set(edge)
        for ev in edge["evidence"]:
            assert {"doc", "quote", "start", "end"} <= set(ev)
            assert TEXT[ev["start"] : ev["end"]] == ev["quote"]
    g = nx.node_link_graph(data, edges="edges")
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == 6 and g.number_of_edges() == 3
    rank = g.get_edge_data("framework:pytorch", "framework:jax")["RANKS_ABOVE@scenario:research"]
    assert rank["strength"] == ">>" and rank["criterion"] == "scenario:research"
    assert g.nodes["hardware:edge-device"]["type"] == "Hardware"


def test_graphml_carries_the_same_fields(tmp_path: Path) -> None:
    graph = _five()
    path = tmp_path / "g.graphml"
    graph.write_graphml(path)
    g = nx.read_graphml(path, force_multigraph=True)
    assert g.is_directed()
    assert g.nodes["framework:pytorch"]["type"] == "Framework"
    assert g.nodes["framework:pytorch"]["name"] == "PyTorch"
    assert json.loads(g.nodes["framework:pytorch"]["aliases"]) == []
    edges = list(g.edges(data=True))
    assert len(edges) == 3
    by_relation = {d["relation"]: d for _s, _t, d in edges}
    rank = by_relation["RANKS_ABOVE"]
    assert (rank["strength"], rank["criterion"]) == (">>", "scenario:research")
    evidence = json.loads(rank["evidence"])
    assert evidence[0]["quote"] == "研究/写论文：PyTorch >> JAX"
    assert TEXT[evidence[0]["start"] : evidence[0]["end"]] == evidence[0]["quote"]
