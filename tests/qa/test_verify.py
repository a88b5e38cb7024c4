"""The citation verifier on a hand-made five-node graph and a ten-line document written for it."""

from __future__ import annotations

import pytest

from kg.graph import KnowledgeGraph
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType
from qa.schema import Answer, Citation, PathEdge, Recommendation
from qa.verify import CitationVerifier, quote_in_document

DOC_ID = "guide.md"
DOC = "\n".join(
    [
        "# 选型速查",
        "复现论文 → PyTorch",
        "TPU 大规模训练 → JAX",
        "PyTorch 模型可以导出为 ONNX。",
        "ONNX 模型在 NVIDIA GPU 上交给 TensorRT。",
        "JAX 依赖 XLA 编译。",
        "",
        "## 备注",
        "以上只是   经验之谈。",
        "完。",
    ]
)
assert len(DOC.splitlines()) == 10

REPRO = "scenario:复现论文"
PYTORCH = "framework:pytorch"
JAX = "framework:jax"
ONNX = "format:onnx"
TPU = "scenario:tpu-大规模训练"


def _ev(quote: str) -> Evidence:
    start = DOC.index(quote)
    return Evidence(doc=DOC_ID, quote=quote, start=start, end=start + len(quote))


def _edge(source: str, relation: RelationType, target: str, quote: str) -> PathEdge:
    return PathEdge(source=source, relation=relation.value, target=target, evidence=[_ev(quote)])


REPRO_EDGE = _edge(REPRO, RelationType.RECOMMENDED_FOR, PYTORCH, "复现论文 → PyTorch")
TPU_EDGE = _edge(TPU, RelationType.RECOMMENDED_FOR, JAX, "TPU 大规模训练 → JAX")
EXPORT_EDGE = _edge(PYTORCH, RelationType.EXPORTS_TO, ONNX, "PyTorch 模型可以导出为 ONNX。")


@pytest.fixture
def verifier() -> CitationVerifier:
    graph = KnowledgeGraph()
    for node, kind, name in [
        (REPRO, NodeType.SCENARIO, "复现论文"),
        (TPU, NodeType.SCENARIO, "TPU 大规模训练"),
        (PYTORCH, NodeType.FRAMEWORK, "PyTorch"),
        (JAX, NodeType.FRAMEWORK, "JAX"),
        (ONNX, NodeType.FORMAT, "ONNX"),
    ]:
        graph.add_entity(Entity(id=node, type=kind, name=name))
    for edge in (REPRO_EDGE, TPU_EDGE, EXPORT_EDGE):
        graph.add_relation(
            Relation(
                source=edge.source,
                relation=RelationType(edge.relation),
                target=edge.target,
                evidence=edge.evidence,
            )
        )
    return CitationVerifier(graph, {DOC_ID: DOC})


def _answer(citations: list[list[PathEdge]], recommendations: list[str]) -> Answer:
    return Answer(
        question="复现论文用什么？",
        answer="PyTorch",
        recommendations=[Recommendation(id=r, name=r.split(":")[1]) for r in recommendations],
        citations=[Citation(path=p) for p in citations],
    )


def test_valid_citations_are_kept_unchanged(verifier: CitationVerifier) -> None:
    answer = _answer([[REPRO_EDGE], [REPRO_EDGE, EXPORT_EDGE]], [PYTORCH])
    verified, result = verifier.verify(answer)
    assert (result.checked, result.dropped, result.reasons) == (2, 0, [])
    assert verified == answer


def test_a_citation_of_an_edge_not_in_the_graph_is_dropped_and_counted(
    verifier: CitationVerifier,
) -> None:
    # both nodes exist, the relation between them does not
    invented = _edge(REPRO, RelationType.RECOMMENDED_FOR, JAX, "复现论文 → PyTorch")
    # a two-hop path with one good and one invented hop is dropped whole
    half = [REPRO_EDGE, _edge(ONNX, RelationType.RUNS_ON, JAX, "JAX 依赖 XLA 编译。")]
    answer = _answer([[REPRO_EDGE], [invented], half], [PYTORCH])
    verified, result = verifier.verify(answer)
    assert (result.checked, result.dropped) == (3, 2)
    assert [c.path for c in verified.citations] == [[REPRO_EDGE]]
    assert result.reasons[0] == f"no edge {REPRO} RECOMMENDED_FOR {JAX} in the graph"
    assert "2 citation(s) failed verification and were dropped" in verified.notes


def test_a_citation_of_an_unknown_node_is_dropped(verifier: CitationVerifier) -> None:
    ghost = _edge(REPRO, RelationType.RECOMMENDED_FOR, PYTORCH, "复现论文 → PyTorch")
    ghost = ghost.model_copy(update={"target": "framework:mxnet"})
    verified, result = verifier.verify(_answer([[ghost]], []))
    assert (result.dropped, verified.citations) == (1, [])


@pytest.mark.parametrize(
    "quote",
    [
        "复现论文 → TensorFlow",  # not in the document
        "PyTorch 是最好的框架",  # not in the document
        "复现论文→PyTorch",  # spaces *removed*: not verbatim up to whitespace
    ],
)
def test_a_quote_not_in_the_document_is_dropped(verifier: CitationVerifier, quote: str) -> None:
    forged = REPRO_EDGE.model_copy(
        update={"evidence": [Evidence(doc=DOC_ID, quote=quote, start=6, end=6 + len(quote))]}
    )
    verified, result = verifier.verify(_answer([[forged], [TPU_EDGE]], []))
    assert result.dropped == 1
    assert result.reasons[0].startswith(f"quote not found verbatim in {DOC_ID}")
    assert [c.path for c in verified.citations] == [[TPU_EDGE]]


def test_a_quote_from_an_unknown_document_or_without_evidence_is_dropped(
    verifier: CitationVerifier,
) -> None:
    elsewhere = REPRO_EDGE.model_copy(
        update={"evidence": [REPRO_EDGE.evidence[0].model_copy(update={"doc": "other.md"})]}
    )
    bare = REPRO_EDGE.model_copy(update={"evidence": []})
    verified, result = verifier.verify(_answer([[elsewhere], [bare], []], []))
    assert (result.checked, result.dropped, verified.citations) == (3, 3, [])
    assert result.reasons == [
        "unknown document 'other.md'",
        f"edge {REPRO} RECOMMENDED_FOR {PYTORCH} cites no evidence",
        "empty path",
    ]


def test_quotes_match_up_to_whitespace_even_away_from_their_span() -> None:
    wrong_span = Evidence(doc=DOC_ID, quote="以上只是 经验之谈。", start=0, end=3)
    assert quote_in_document(wrong_span, DOC)
    assert not quote_in_document(wrong_span.model_copy(update={"quote": "以上只是经验"}), DOC)


def test_a_recommendation_left_without_a_supporting_citation_is_removed(
    verifier: CitationVerifier,
) -> None:
    forged_jax = TPU_EDGE.model_copy(
        update={"evidence": [Evidence(doc=DOC_ID, quote="JAX 最好", start=0, end=6)]}
    )
    answer = _answer([[REPRO_EDGE], [forged_jax]], [JAX, PYTORCH, "framework:mxnet"])
    verified, result = verifier.verify(answer)
    assert result.dropped == 1
    assert [r.id for r in verified.recommendations] == [PYTORCH]
    assert "2 unsupported recommendation(s) removed" in verified.notes
