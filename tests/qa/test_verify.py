"""The citation verifier on a hand-made five-node graph and a ten-line document written for it."""

from __future__ import annotations

import pytest

from kg.graph import KnowledgeGraph
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType
from qa.render import render_draft
from qa.schema import (
    AbstainReason,
    Answer,
    AnswerDraft,
    Citation,
    DraftPoint,
    DraftRecommendation,
    FallbackKind,
    Language,
    PathEdge,
    Recommendation,
)
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


# -- drafts: verified before they are rendered ----------------------------------------------------
def _point(quote: str, *edges: PathEdge, start: int | None = None) -> DraftPoint:
    at = DOC.index(quote) if start is None else start
    return DraftPoint(
        doc=DOC_ID, start=at, end=at + len(quote), quote=quote, text=quote, edges=list(edges)
    )


def _draft(**parts: object) -> AnswerDraft:
    return AnswerDraft(question="复现论文用什么框架？", language=Language.ZH, **parts)  # type: ignore[arg-type]


def test_a_claim_whose_citation_fails_verification_is_not_in_the_text(
    verifier: CitationVerifier,
) -> None:
    forged = _edge(JAX, RelationType.EXPORTS_TO, ONNX, "PyTorch 模型可以导出为 ONNX。")
    draft = _draft(
        recommendations=[
            DraftRecommendation(
                id=PYTORCH, name="PyTorch", points=[_point("复现论文 → PyTorch", REPRO_EDGE)]
            )
        ],
        facts=[
            _point("JAX 依赖 XLA 编译。"),
            # a quote the document does not have at that span: the whole point goes
            DraftPoint(
                doc=DOC_ID,
                start=0,
                end=9,
                quote="JAX 比 PyTorch 快十倍",
                text="JAX 比 PyTorch 快十倍",
            ),
            # a real quote cited for an edge the graph does not have: the edge goes, the quote stays
            _point("PyTorch 模型可以导出为 ONNX。", forged),
        ],
    )
    verified, result = verifier.verify_draft(draft)
    answer = render_draft(verified, verifier.graph)
    assert "JAX 比 PyTorch 快十倍" not in answer.answer
    assert "JAX —导出为→ ONNX" not in answer.answer
    assert all(c.path != [forged] for c in answer.citations)
    # what verified is all there: the pick, its quote and path, the other facts
    assert answer.recommendations[0].id == PYTORCH
    for shown in [
        "复现论文 → PyTorch",
        "复现论文 —推荐→ PyTorch",
        "JAX 依赖 XLA 编译。",
        "导出为 ONNX",
    ]:
        assert shown in answer.answer
    assert result.dropped == 2  # the point that is not verbatim, the forged edge
    assert any("dropped before rendering" in note for note in answer.notes)


def test_a_recommendation_left_without_a_point_is_not_recommended(
    verifier: CitationVerifier,
) -> None:
    bad = DraftPoint(
        doc=DOC_ID, start=0, end=4, quote="JAX 最好", text="JAX 最好", edges=[TPU_EDGE]
    )
    draft = _draft(
        recommendations=[
            DraftRecommendation(id=JAX, name="JAX", points=[bad]),
            DraftRecommendation(
                id=PYTORCH, name="PyTorch", points=[_point("复现论文 → PyTorch", REPRO_EDGE)]
            ),
        ]
    )
    answer = render_draft(verifier.verify_draft(draft)[0], verifier.graph)
    assert [r.id for r in answer.recommendations] == [PYTORCH]
    assert "JAX" not in answer.answer


@pytest.mark.parametrize(
    ("quote", "kept"),
    [("ONNX 模型在 NVIDIA GPU 上交给 TensorRT。", True), ("JAX 依赖 XLA 编译。", False)],
)
def test_a_value_is_recommended_on_a_verbatim_quote_that_states_it(
    verifier: CitationVerifier, quote: str, kept: bool
) -> None:
    """A value (a table's "4090" column) is no graph entity and has no path: the verbatim quote
    that states it backs it, with or without an edge; a quote that does not state it does not."""
    draft = _draft(
        recommendations=[
            DraftRecommendation(id="value:TensorRT", name="TensorRT", points=[_point(quote)])
        ]
    )
    answer = render_draft(verifier.verify_draft(draft)[0], verifier.graph)
    assert [r.name for r in answer.recommendations] == (["TensorRT"] if kept else [])


@pytest.mark.parametrize(
    ("prose", "kept"),
    [
        ("推荐 PyTorch，复现论文最常用。", True),
        ("推荐 PyTorch，它比别的快 3 倍。", False),  # a number no kept point states
        ("推荐 PyTorch，导出到 ONNX 后很快。", False),  # a thing no kept point names
    ],
)
def test_a_model_sentence_stands_only_on_what_the_kept_points_say(
    verifier: CitationVerifier, prose: str, kept: bool
) -> None:
    draft = _draft(
        recommendations=[
            DraftRecommendation(
                id=PYTORCH, name="PyTorch", points=[_point("复现论文 → PyTorch", REPRO_EDGE)]
            )
        ],
        prose=prose,
    )
    verified, _result = verifier.verify_draft(draft)
    answer = render_draft(verified, verifier.graph)
    assert answer.answer.startswith(prose) is kept
    assert (prose in answer.answer) is kept
    assert any("sentence was left out" in n for n in answer.notes) is not kept


def test_a_declining_draft_renders_as_not_covered(verifier: CitationVerifier) -> None:
    draft = _draft(abstain=AbstainReason.NO_EVIDENCE, abstain_detail="nothing retrieved answers it")
    answer = render_draft(verifier.verify_draft(draft)[0], verifier.graph)
    assert answer.abstained and not answer.citations and not answer.recommendations
    assert answer.fallback is not None and answer.fallback.kind == FallbackKind.NOT_COVERED
    assert "检索到的内容回答不了这个问题" in answer.answer  # said in the question's language
    assert answer.fallback.detail == "nothing retrieved answers it"
