"""End to end on the public dev set: every dev question through the graph composer (no LLM, lexical
and graph retrieval) over the store ingested from `corpus/`.

- 100% of citations verify, checked against the *exported* graph (node-link JSON, as `kgqa graph
  export` writes it) and the articles as read from disk, not through the answerer's own verifier;
- accuracy (qa/evaluate.py's scorer, rules in corpus/QUESTIONS.md) stays above a floor;
- every unanswerable question is declined.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from store_fixture import (  # fixtures
    assistant,  # noqa: F401
    corpus_store,  # noqa: F401
    dev_questions,  # noqa: F401
    documents_on_disk,  # noqa: F401
)

from kg.lexicon import Lexicon
from kg.store import Store
from qa.api import Assistant
from qa.evaluate import GoldQuestion, QuestionScore, Scorer, summarize
from qa.schema import Answer

#: Measured 2026-11-30 with `Assistant.open(store, dense=False)`: 0.8235 (98 of 119), then 0.8319
#: (99 of 119) after the lead's tuning; the floor is the first minus 3 points. The issue's target is
#: 0.90. Wrong at 0.8319: zh-choose-09, -13, -14, en-choose-05, -07, -08, -10, en-compare-01, -04,
#: zh-fact-05, -06, -10, en-fact-02, -07, zh-multihop-01, -03, -05, en-multihop-01, -02, -03.
ACCURACY_FLOOR = 0.79

_SPACE = re.compile(r"\s+")


@pytest.fixture(scope="module")
def answers(
    assistant: Assistant,  # noqa: F811
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> dict[str, Answer]:
    return {
        str(q["id"]): assistant.ask(str(q["question"]), qid=str(q["id"]), use_llm=False)
        for q in dev_questions
    }


@pytest.fixture(scope="module")
def exported_edges(corpus_store: Path) -> dict[tuple[str, str, str], list[dict[str, object]]]:  # noqa: F811
    """(source, relation, target) -> evidence list, from the graph export."""
    export = Store.open(corpus_store).graph().to_node_link()
    edges: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    for edge in export["edges"]:
        key = (edge["source"], edge["relation"], edge["target"])
        edges.setdefault(key, []).extend(edge["evidence"])
    return edges


def test_every_dev_question_is_answered(
    answers: dict[str, Answer],
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> None:
    assert len(answers) == len(dev_questions) >= 60
    assert all(a.backend == "graph" for a in answers.values())


def test_every_citation_verifies_against_the_export_and_the_documents(
    answers: dict[str, Answer],
    exported_edges: dict[tuple[str, str, str], list[dict[str, object]]],
    documents_on_disk: dict[str, str],  # noqa: F811
) -> None:
    flat_docs = {doc: _SPACE.sub(" ", text) for doc, text in documents_on_disk.items()}
    problems: list[str] = []
    checked = 0
    for qid, answer in answers.items():
        for citation in answer.citations:
            assert citation.path, f"{qid}: empty path"
            for edge in citation.path:
                checked += 1
                triple = (edge.source, edge.relation, edge.target)
                if triple not in exported_edges:
                    problems.append(f"{qid}: {triple} is not an edge of the export")
                    continue
                assert edge.evidence, f"{qid}: {triple} cites no evidence"
                for ev in edge.evidence:
                    text = documents_on_disk.get(ev.doc)
                    if text is None:
                        problems.append(f"{qid}: unknown document {ev.doc}")
                    elif _SPACE.sub(" ", ev.quote).strip() not in flat_docs[ev.doc]:
                        problems.append(f"{qid}: quote not verbatim in {ev.doc}: {ev.quote!r}")
                    elif ev.model_dump(mode="json") not in exported_edges[triple]:
                        problems.append(f"{qid}: {ev.quote!r} is not evidence of {triple}")
    assert problems == []
    assert checked > 200  # the composer does cite


def test_recommendations_are_backed_by_their_citations(answers: dict[str, Answer]) -> None:
    for qid, answer in answers.items():
        cited = {n for c in answer.citations for e in c.path for n in (e.source, e.target)}
        unsupported = [r.id for r in answer.recommendations if r.id not in cited]
        assert unsupported == [], qid


def test_every_unanswerable_question_is_declined(
    answers: dict[str, Answer],
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> None:
    unanswerable = [str(q["id"]) for q in dev_questions if q.get("answerable") is False]
    assert len(unanswerable) >= 10
    answered = [qid for qid in unanswerable if not answers[qid].abstained]
    assert answered == []
    for qid in unanswerable:
        assert answers[qid].recommendations == [] and answers[qid].citations == []


def test_accuracy_stays_above_the_floor(
    answers: dict[str, Answer],
    assistant: Assistant,  # noqa: F811
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> None:
    scorer = Scorer(Lexicon.default(), assistant.graph, assistant.documents)
    scores: list[QuestionScore] = []
    for raw in dev_questions:
        gold = GoldQuestion.model_validate(raw)
        scores.append(scorer.score(gold, answers[gold.id]))
    metrics = summarize(scores)
    wrong = [s.id for s in scores if s.correct is False]
    print(f"\ndev-set accuracy {metrics.accuracy} ({len(wrong)} wrong): {wrong}")
    assert metrics.citation_validity == 1.0
    assert metrics.abstention_recall == 1.0
    assert metrics.accuracy is not None and metrics.accuracy >= ACCURACY_FLOOR, wrong
