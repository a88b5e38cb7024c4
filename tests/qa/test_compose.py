"""What the graph's recommendation structures say (`GraphComposer.situational`), on a tiny
hand-made graph with hand-built evidence bundles (no store): ordering, NOT_RECOMMENDED penalties,
source conflicts (and version-qualified non-conflicts), and that every path it gives verifies."""

from __future__ import annotations

import pytest

from ingest.text import Tokenizer
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType
from qa.decide.graph.advice import GraphComposer, find_conflicts
from qa.read.understand import QuestionReader
from qa.render import render_draft
from qa.retrieve import path_from_relations
from qa.schema import AnswerDraft, EvidenceBundle, GraphPath, Question
from qa.verify import CitationVerifier

GUIDE = (
    "# 选型\n"
    "做研究 → PyTorch > JAX > TensorFlow\n"
    "已有 TensorFlow 团队：不建议换到 JAX。\n"
    "| TensorFlow | 默认静态图 |\n"
)
ESSAY = "TensorFlow 2.x 默认 eager 执行。TensorFlow 1.x 以静态图为核心。\n"
DOCS = {"guide.md": GUIDE, "essay.md": ESSAY}

RESEARCH = "scenario:做研究"
TF_TEAM = "persona:已有-tensorflow-团队"
PYTORCH, JAX, TF = "framework:pytorch", "framework:jax", "framework:tensorflow"
GRAPH_MODE, EAGER = "execution-mode:graph-mode", "execution-mode:eager-execution"


def _ev(doc: str, quote: str) -> Evidence:
    start = DOCS[doc].index(quote)
    return Evidence(doc=doc, quote=quote, start=start, end=start + len(quote))


def _graph(*, qualified: bool = False) -> KnowledgeGraph:
    graph = KnowledgeGraph()
    for node, kind, name in [
        (RESEARCH, NodeType.SCENARIO, "做研究"),
        (TF_TEAM, NodeType.PERSONA, "已有 TensorFlow 团队"),
        (PYTORCH, NodeType.FRAMEWORK, "PyTorch"),
        (JAX, NodeType.FRAMEWORK, "JAX"),
        (TF, NodeType.FRAMEWORK, "TensorFlow"),
        (GRAPH_MODE, NodeType.EXECUTION_MODE, "Graph Mode"),
        (EAGER, NodeType.EXECUTION_MODE, "Eager Execution"),
    ]:
        graph.add_entity(Entity(id=node, type=kind, name=name))
    ranking = _ev("guide.md", "做研究 → PyTorch > JAX > TensorFlow")
    for order, target in enumerate([PYTORCH, JAX, TF], start=1):
        graph.add_relation(
            Relation(
                source=RESEARCH,
                relation=RelationType.RECOMMENDED_FOR,
                target=target,
                rank=order,
                evidence=[ranking],
            )
        )
    graph.add_relation(
        Relation(
            source=TF_TEAM,
            relation=RelationType.NOT_RECOMMENDED,
            target=JAX,
            evidence=[_ev("guide.md", "已有 TensorFlow 团队：不建议换到 JAX。")],
        )
    )
    graph.add_relation(
        Relation(
            source=TF,
            relation=RelationType.DEFAULT_MODE,
            target=GRAPH_MODE,
            qualifier="1.x" if qualified else None,
            evidence=[
                _ev("essay.md", "TensorFlow 1.x 以静态图为核心。")
                if qualified
                else _ev("guide.md", "| TensorFlow | 默认静态图 |")
            ],
        )
    )
    graph.add_relation(
        Relation(
            source=TF,
            relation=RelationType.DEFAULT_MODE,
            target=EAGER,
            qualifier="2.x" if qualified else None,
            evidence=[_ev("essay.md", "TensorFlow 2.x 默认 eager 执行。")],
        )
    )
    return graph


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    return _graph()


@pytest.fixture(scope="module")
def composer(graph: KnowledgeGraph) -> GraphComposer:
    return GraphComposer(graph, find_conflicts(graph), Tokenizer())


def _read(graph: KnowledgeGraph, text: str) -> Question:
    return QuestionReader(graph, Lexicon.default()).read(text)


def _bundle(
    graph: KnowledgeGraph, question: Question, situations: dict[str, float]
) -> EvidenceBundle:
    """What retrieval would hand over: every edge touching a seed, as a one-hop path."""
    seeds = set(situations) | set(question.entity_ids)
    relations = [r for r in graph.relations() if r.source in seeds or r.target in seeds]
    return EvidenceBundle(
        question=question.text,
        language=question.language,
        kind=question.kind,
        linked=question.entity_ids,
        situations=situations,
        paths=[path_from_relations([r], 1.0) for r in relations],
    )


def _all_paths_verify(graph: KnowledgeGraph, paths: list[GraphPath]) -> None:
    verifier = CitationVerifier(graph, DOCS)
    assert paths
    assert [verifier.edge_problem(e) for p in paths for e in p.edges] == [None] * sum(
        len(p.edges) for p in paths
    )


def _picks(
    composer: GraphComposer, graph: KnowledgeGraph, text: str, situations: dict[str, float]
) -> list[str]:
    question = _read(graph, text)
    ranked, _facts, _conflicts = composer.situational(
        question, _bundle(graph, question, situations)
    )
    return [node for node, _paths in ranked]


# -- recommendations -----------------------------------------------------------------------------
def test_recommendations_follow_the_sources_order(
    graph: KnowledgeGraph, composer: GraphComposer
) -> None:
    question = _read(graph, "做研究用什么框架？")
    ranked, _facts, conflicts = composer.situational(
        question, _bundle(graph, question, {RESEARCH: 1.0})
    )
    assert [node for node, _paths in ranked] == [PYTORCH, JAX, TF]
    for node, paths in ranked:
        first = paths[0].edges[0]
        assert (first.source, first.relation, first.target) == (RESEARCH, "RECOMMENDED_FOR", node)
        assert first.evidence[0].quote == "做研究 → PyTorch > JAX > TensorFlow"
        _all_paths_verify(graph, paths)
    assert conflicts == []  # nothing disagrees about what it names


def test_english_questions_read_the_same_structures(
    graph: KnowledgeGraph, composer: GraphComposer
) -> None:
    picks = _picks(composer, graph, "Which framework should I use for research?", {RESEARCH: 1.0})
    assert picks[0] == PYTORCH


def test_not_recommended_penalises(graph: KnowledgeGraph, composer: GraphComposer) -> None:
    text = "已有 TensorFlow 团队，做研究用什么框架？"
    picks = _picks(composer, graph, text, {RESEARCH: 1.0, TF_TEAM: 1.0})
    assert JAX not in picks and picks[0] == PYTORCH
    # the weaker the situation match, the weaker the penalty: half a match still removes JAX
    question = _read(graph, text)
    weak = composer.candidates(question, _bundle(graph, question, {RESEARCH: 1.0, TF_TEAM: 0.5}))
    plain = composer.candidates(question, _bundle(graph, question, {RESEARCH: 1.0}))
    assert JAX in plain and JAX not in weak


def test_comparing_two_named_things_answers_with_one_of_them(
    graph: KnowledgeGraph, composer: GraphComposer
) -> None:
    picks = _picks(composer, graph, "做研究，JAX 和 TensorFlow 哪个更好？", {RESEARCH: 1.0})
    assert picks == [JAX, TF]


# -- conflicts -----------------------------------------------------------------------------------
def test_two_documents_disagreeing_on_a_functional_relation_is_a_conflict(
    graph: KnowledgeGraph,
) -> None:
    conflicts = find_conflicts(graph)
    assert len(conflicts) == 1
    conflict = conflicts[0]
    assert (conflict.subject, conflict.relation) == (TF, "DEFAULT_MODE")
    sides = {(c.target, c.evidence[0].doc, c.evidence[0].quote) for c in conflict.claims}
    assert sides == {
        (GRAPH_MODE, "guide.md", "| TensorFlow | 默认静态图 |"),
        (EAGER, "essay.md", "TensorFlow 2.x 默认 eager 执行。"),
    }


def test_version_qualified_claims_do_not_conflict() -> None:
    assert find_conflicts(_graph(qualified=True)) == []


def test_one_document_saying_two_things_is_not_a_conflict_between_sources() -> None:
    graph = _graph(qualified=True)
    # drop the versions but keep both claims in essay.md
    for _s, _t, data in graph.g.edges(data=True):
        data["rel"].qualifier = None
    assert find_conflicts(graph) == []


def test_a_question_about_the_disputed_thing_gets_the_conflict_rendered_with_both_quotes(
    graph: KnowledgeGraph, composer: GraphComposer
) -> None:
    question = _read(graph, "TensorFlow 默认是静态图还是 eager？")
    _ranked, _facts, conflicts = composer.situational(question, _bundle(graph, question, {}))
    assert len(conflicts) == 1
    draft = AnswerDraft(question=question.text, language=question.language, conflicts=conflicts)
    answer = render_draft(draft, graph)
    assert "资料之间有分歧" in answer.answer
    for quote in ("| TensorFlow | 默认静态图 |", "TensorFlow 2.x 默认 eager 执行。"):
        assert quote in answer.conflicts[0].summary
        assert any(ev.quote == quote for c in answer.citations for e in c.path for ev in e.evidence)
    _all_paths_verify(graph, [GraphPath(edges=c.path) for c in answer.citations])


def test_conflicts_are_not_reported_on_unrelated_questions(
    graph: KnowledgeGraph, composer: GraphComposer
) -> None:
    question = _read(graph, "做研究用什么框架？")
    _ranked, _facts, conflicts = composer.situational(
        question, _bundle(graph, question, {RESEARCH: 1.0})
    )
    assert conflicts == []
