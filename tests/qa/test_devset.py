"""End to end on the public dev set: every dev question through the graph composer (no LLM, lexical
and graph retrieval) over the store ingested from `corpus/`.

- 100% of citations verify, checked against the *exported* graph (node-link JSON, as `kgqa graph
  export` writes it) and the articles as read from disk, not through the answerer's own verifier
  (`tests/grounding.py`);
- accuracy (qa/eval/score.py's scorer, rules in corpus/QUESTIONS.md) stays above a floor;
- every unanswerable question is declined.
"""

from __future__ import annotations

import pytest
from grounding import Edges, grounding_problems
from store_fixture import (  # fixtures
    assistant,  # noqa: F401
    corpus_edges,  # noqa: F401
    corpus_store,  # noqa: F401
    dev_questions,  # noqa: F401
    documents_on_disk,  # noqa: F401
)

from kg.lexicon import Lexicon
from qa.api import Assistant
from qa.eval.records import GoldQuestion
from qa.eval.score import QuestionScore, Scorer, summarize
from qa.schema import Answer

#: Measured with `Assistant.open(store, dense=False)` (as `kgqa eval --no-dense`): 0.882 (105 of
#: 119) after issue 13 rewrote extraction and answering for documents in general (0.916 before,
#: when the extractor and the composer knew these two articles); the floor is that minus 3 points.
ACCURACY_FLOOR = 0.852


@pytest.fixture(scope="module")
def answers(
    assistant: Assistant,  # noqa: F811
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> dict[str, Answer]:
    return {
        str(q["id"]): assistant.ask(str(q["question"]), qid=str(q["id"]), use_llm=False)
        for q in dev_questions
    }


def test_every_dev_question_is_answered(
    answers: dict[str, Answer],
    dev_questions: list[dict[str, object]],  # noqa: F811
) -> None:
    assert len(answers) == len(dev_questions) >= 60
    assert all(a.backend == "graph" for a in answers.values())


def test_every_citation_verifies_against_the_export_and_the_documents(
    answers: dict[str, Answer],
    corpus_edges: Edges,  # noqa: F811
    documents_on_disk: dict[str, str],  # noqa: F811
) -> None:
    problems = [
        f"{qid}: {problem}"
        for qid, answer in answers.items()
        for problem in grounding_problems(answer, corpus_edges, documents_on_disk)
    ]
    assert problems == []
    checked = sum(len(c.path) for a in answers.values() for c in a.citations)
    assert checked > 200  # the composer does cite


def test_recommendations_are_backed_by_their_citations(answers: dict[str, Answer]) -> None:
    for qid, answer in answers.items():
        cited = {n for c in answer.citations for e in c.path for n in (e.source, e.target)}
        # a recommended value (an option the question names that no entity is) is checked
        # against the cited quotes by `grounding_problems`
        entities = [r.id for r in answer.recommendations if not r.id.startswith("value:")]
        assert [r for r in entities if r not in cited] == [], qid


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
