"""Scoring: hand-made answers against hand-made gold over a small graph and two tiny documents."""

from __future__ import annotations

import pytest

from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon, LexiconEntry, LexiconFile
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType, entity_id
from qa.eval.records import ChunkSpan, EvalRecord, GoldEvidence, GoldQuestion
from qa.eval.score import QuestionScore, Scorer, breakdown, locate_quote, summarize
from qa.schema import Answer, Citation, Conflict, PathEdge, Recommendation, SnippetReport

GUIDE = "# 并行\n单机多卡 → DDP\n每进程一份模型，梯度 all-reduce 同步。\n超大模型 → FSDP\n"
OTHER = "TensorFlow 2.x defaults to eager execution.\n"
DOCS = {"guide.md": GUIDE, "other.md": OTHER}

MULTI = entity_id(NodeType.SCENARIO, "单机多卡")
HUGE = entity_id(NodeType.SCENARIO, "超大模型")
DDP = entity_id(NodeType.PARALLEL_STRATEGY, "DDP")
FSDP = entity_id(NodeType.PARALLEL_STRATEGY, "FSDP")


def _ev(doc: str, quote: str) -> Evidence:
    start = DOCS[doc].index(quote)
    return Evidence(doc=doc, quote=quote, start=start, end=start + len(quote))


DDP_EV = _ev("guide.md", "单机多卡 → DDP")
FSDP_EV = _ev("guide.md", "超大模型 → FSDP")
EAGER_EV = _ev("other.md", "TensorFlow 2.x defaults to eager execution.")


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    graph = KnowledgeGraph()
    graph.add_entity(Entity(id=MULTI, type=NodeType.SCENARIO, name="单机多卡"))
    graph.add_entity(Entity(id=HUGE, type=NodeType.SCENARIO, name="超大模型"))
    graph.add_entity(Entity(id=DDP, type=NodeType.PARALLEL_STRATEGY, name="DDP"))
    graph.add_entity(
        Entity(id=FSDP, type=NodeType.PARALLEL_STRATEGY, name="FSDP", aliases=["完全分片数据并行"])
    )
    graph.add_relation(
        Relation(source=MULTI, relation=RelationType.RECOMMENDED_FOR, target=DDP, evidence=[DDP_EV])
    )
    graph.add_relation(
        Relation(
            source=HUGE, relation=RelationType.RECOMMENDED_FOR, target=FSDP, evidence=[FSDP_EV]
        )
    )
    entry = LexiconEntry(
        type=NodeType.PARALLEL_STRATEGY, name="DDP", aliases=["DistributedDataParallel"]
    )
    return Scorer(Lexicon([LexiconFile(entities=[entry])]), graph, DOCS, k=2)


def _gold(**fields: object) -> GoldQuestion:
    base: dict[str, object] = {
        "id": "zh-choose-01",
        "question": "单机 8 卡用什么并行？",
        "lang": "zh",
        "kind": "choose",
        "answerable": True,
        "gold_top": ["DDP"],
        "required_facts": [["all-reduce", "allreduce"]],
        "gold_evidence": [{"doc": "guide.md", "quote": "单机多卡→DDP"}],
    }
    return GoldQuestion.model_validate({**base, **fields})


def _cite(
    source: str, target: str, evidence: Evidence, relation: str = "RECOMMENDED_FOR"
) -> Citation:
    return Citation(
        path=[PathEdge(source=source, relation=relation, target=target, evidence=[evidence])]
    )


def _answer(**fields: object) -> EvalRecord:
    base: dict[str, object] = {
        "id": "zh-choose-01",
        "question": "q",
        "answer": "用 DDP：梯度 All-Reduce 同步。",
        "recommendations": [Recommendation(id=DDP, name="DDP")],
        "citations": [_cite(MULTI, DDP, DDP_EV)],
        "latency_ms": 10.0,
    }
    return EvalRecord.model_validate({**base, **fields})


def test_right_answer_is_correct_supported_and_valid(scorer: Scorer) -> None:
    score = scorer.score(_gold(), _answer())
    assert (score.top_ok, score.facts_ok, score.correct) == (True, True, True)
    assert (score.citations, score.valid_citations) == (1, 1)
    assert (score.gold_quotes, score.cited_quotes) == (1, 1)
    assert score.unlocated_quotes == []


def test_top_matches_through_aliases_and_case(scorer: Scorer) -> None:
    by_alias = Recommendation(id="x:unknown", name="distributeddataparallel")
    assert scorer.score(_gold(), _answer(recommendations=[by_alias])).top_ok is True
    graph_alias = Recommendation(id="x:other", name="完全分片数据并行")
    assert scorer.score(_gold(gold_top=["fsdp"]), _answer(recommendations=[graph_alias])).top_ok
    assert scorer.names_match(Recommendation(id=FSDP, name="FSDP"), ["DDP"]) is False


def test_wrong_top_or_missing_fact_is_wrong(scorer: Scorer) -> None:
    wrong_top = scorer.score(
        _gold(), _answer(recommendations=[Recommendation(id=FSDP, name="FSDP")])
    )
    assert (wrong_top.top_ok, wrong_top.correct, wrong_top.top_given) == (False, False, "FSDP")
    no_fact = scorer.score(_gold(), _answer(answer="用 DDP。"))
    assert no_fact.facts_ok is False and no_fact.correct is False
    assert no_fact.missing_facts == [["all-reduce", "allreduce"]]
    no_rec = scorer.score(_gold(), _answer(recommendations=[]))
    assert no_rec.top_ok is False and no_rec.top_given is None


def test_no_gold_top_scores_only_facts_and_abstention(scorer: Scorer) -> None:
    score = scorer.score(_gold(gold_top=[], kind="fact"), _answer(recommendations=[]))
    assert (score.top_ok, score.facts_ok, score.correct) == (None, True, True)
    abstained = scorer.score(_gold(gold_top=[], required_facts=[]), _answer(abstained=True))
    assert abstained.correct is False
    nothing = scorer.score(GoldQuestion(id="u1", question="?"), _answer())
    assert nothing.correct is None and nothing.kind == "unknown"


def test_unanswerable_must_abstain(scorer: Scorer) -> None:
    gold = _gold(
        answerable=False, kind="unanswerable", gold_top=[], required_facts=[], gold_evidence=[]
    )
    assert scorer.score(gold, _answer(abstained=True, recommendations=[])).correct is True
    assert scorer.score(gold, _answer()).correct is False


def test_abstention_precision_and_recall() -> None:
    def s(answerable: bool, abstained: bool) -> QuestionScore:
        return QuestionScore(
            id="x", kind="k", lang="zh", answered=True, answerable=answerable, abstained=abstained
        )

    metrics = summarize(
        [s(True, False), s(True, True), s(True, False), s(False, True), s(False, False)]
    )
    assert (metrics.abstention_precision, metrics.abstention_recall) == (0.5, 0.5)
    assert summarize([s(True, False)]).abstention_precision is None


def test_citation_validity_counts_missing_edges_and_forged_quotes(scorer: Scorer) -> None:
    forged = Evidence(doc="guide.md", quote="单机多卡 → TPU", start=DDP_EV.start, end=DDP_EV.end)
    citations = [
        _cite(MULTI, DDP, DDP_EV),
        _cite(MULTI, FSDP, DDP_EV),  # no such edge
        _cite(MULTI, DDP, forged),  # quote not in the document
    ]
    score = scorer.score(_gold(), _answer(citations=citations))
    assert (score.citations, score.valid_citations) == (3, 1)
    assert summarize([score]).citation_validity == round(1 / 3, 4)


def test_citation_support_needs_an_overlapping_cited_span(scorer: Scorer) -> None:
    other = scorer.score(_gold(), _answer(citations=[_cite(HUGE, FSDP, FSDP_EV)]))
    assert other.cited_quotes == 0
    # a cited quote with a wrong span still counts where the quote really is
    moved = Evidence(doc="guide.md", quote="单机多卡 → DDP", start=0, end=3)
    assert scorer.score(_gold(), _answer(citations=[_cite(MULTI, DDP, moved)])).cited_quotes == 1
    unknown = _gold(gold_evidence=[{"doc": "guide.md", "quote": "not in there"}])
    assert scorer.score(unknown, _answer()).unlocated_quotes == ["guide.md: not in there"]


def test_retrieval_recall_counts_quotes_inside_the_first_k_chunks(scorer: Scorer) -> None:
    end = DDP_EV.end
    inside = ChunkSpan(doc="guide.md", start=0, end=end + 2)
    cut = ChunkSpan(doc="guide.md", start=0, end=end - 1)
    elsewhere = ChunkSpan(doc="other.md", start=0, end=40)
    assert scorer.score(_gold(), _answer(retrieved=[inside])).retrieved_quotes == 1
    assert scorer.score(_gold(), _answer(retrieved=[cut, elsewhere])).retrieved_quotes == 0
    assert scorer.score(_gold(), _answer(retrieved=[cut, elsewhere, inside])).retrieved_quotes == 0
    plain = Answer(question="q", answer="a")
    assert scorer.score(_gold(), plain).retrieved_quotes == 0


def test_conflict_needs_a_reported_disagreement_citing_both_sides(scorer: Scorer) -> None:
    gold = _gold(
        conflict=True,
        gold_top=[],
        required_facts=[],
        gold_evidence=[
            {"doc": "guide.md", "quote": "超大模型 → FSDP"},
            {"doc": "other.md", "quote": "defaults to eager execution"},
        ],
    )
    claims = [
        PathEdge(source=HUGE, relation="RECOMMENDED_FOR", target=FSDP, evidence=[FSDP_EV]),
        PathEdge(source="a", relation="DEFAULT_MODE", target="b", evidence=[EAGER_EV]),
    ]
    both = Conflict(subject="s", relation="DEFAULT_MODE", claims=claims)
    one = Conflict(subject="s", relation="DEFAULT_MODE", claims=claims[:1])
    assert scorer.score(gold, _answer(conflicts=[both])).conflict_ok is True
    assert scorer.score(gold, _answer(conflicts=[one])).conflict_ok is False
    assert scorer.score(gold, _answer(conflicts=[])).conflict_ok is False
    assert scorer.score(_gold(), _answer()).conflict_ok is None


def test_unanswered_question_counts_as_wrong(scorer: Scorer) -> None:
    score = scorer.score(_gold(), None)
    assert (score.answered, score.correct, score.top_ok, score.facts_ok) == (
        False,
        False,
        False,
        False,
    )
    metrics = summarize([score, scorer.score(_gold(), _answer())])
    assert (metrics.questions, metrics.answered, metrics.accuracy) == (2, 1, 0.5)


def test_summary_by_kind_and_language_with_latency_and_snippets(scorer: Scorer) -> None:
    snippets = [
        SnippetReport(code="x", status="passed"),
        SnippetReport(code="y", status="failed"),
    ]
    scores = [
        scorer.score(_gold(id="a"), _answer(latency_ms=10.0, snippets=snippets)),
        scorer.score(_gold(id="b", lang="en"), _answer(latency_ms=20.0, answer="DDP")),
        scorer.score(_gold(id="c", kind="fact"), _answer(latency_ms=30.0)),
        scorer.score(_gold(id="d", kind="fact", lang="en"), _answer(latency_ms=40.0)),
    ]
    summary = breakdown(scores, k=2)
    assert summary.overall.accuracy == 0.75
    assert summary.overall.latency_p50_ms == 25.0
    assert summary.overall.latency_p95_ms == 38.5
    assert summary.overall.snippet_pass_rate == 0.5
    assert list(summary.by_kind) == ["choose", "fact"]
    assert summary.by_kind["choose"].accuracy == 0.5 and summary.by_kind["fact"].accuracy == 1.0
    assert summary.by_lang["en"].questions == 2 and summary.by_lang["en"].accuracy == 0.5


def test_locate_quote_ignores_whitespace_and_finds_every_occurrence() -> None:
    assert locate_quote("单机多卡→DDP", GUIDE) == [(DDP_EV.start, DDP_EV.end)]
    assert locate_quote("  ", GUIDE) == []
    assert locate_quote("a b", "ab xa\nb") == [(0, 2), (4, 7)]


def test_gold_question_ignores_unknown_fields_and_needs_an_id() -> None:
    gold = GoldQuestion.model_validate({"id": "q", "question": "?", "extra": 1})
    assert gold.gold_evidence == [] and gold.answerable is None
    with pytest.raises(ValueError):
        GoldQuestion.model_validate({"question": "?"})
    assert GoldEvidence(doc="d", quote="q").quote == "q"
