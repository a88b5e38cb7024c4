"""Scoring answers against a gold question set (the format is documented in corpus/QUESTIONS.md).

Per question (`Scorer.score`):

- correctness: abstains iff the question is unanswerable; the top recommendation names one of
  `gold_top` (case-insensitive, through the alias lexicon and the graph's names); every required
  fact has one alternative inside `Answer.answer` (case-insensitive substring);
- citation validity: cited edges exist and quotes are verbatim (`CitationVerifier`);
- citation support: gold quotes overlapped by a cited evidence span (whitespace ignored);
- retrieval recall@k: gold quotes inside one of the first k retrieved chunks;
- reader recall: every gold document among the evidence the reader read (`Answer.read`);
- conflicts, snippet statuses, latency.

`summarize` aggregates scores; `breakdown` does it overall, by kind and by language.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import Evidence, normalize_name
from qa.eval.records import EvalRecord, GoldEvidence, GoldQuestion
from qa.schema import Answer, Recommendation
from qa.verify import CitationVerifier

__all__ = [
    "EvalSummary",
    "Metrics",
    "QuestionScore",
    "Scorer",
    "breakdown",
    "locate_quote",
    "percentile",
    "summarize",
]

_SPACE = re.compile(r"\s+")


class QuestionScore(BaseModel):
    """The score of one question. `None` means "not scored": the gold does not say."""

    id: str
    kind: str
    lang: str
    answered: bool
    abstained: bool = False
    answerable: bool | None = None
    top_ok: bool | None = None
    top_given: str | None = None
    missing_facts: list[list[str]] = Field(default_factory=list)
    facts_ok: bool | None = None
    correct: bool | None = None
    citations: int = 0
    valid_citations: int = 0
    gold_quotes: int = 0
    cited_quotes: int = 0
    retrieved_quotes: int = 0
    read_docs: bool | None = Field(
        default=None, description="every gold document among what the reader read (None: no reader)"
    )
    unlocated_quotes: list[str] = Field(default_factory=list)
    conflict_ok: bool | None = None
    snippets: int = 0
    snippets_passed: int = 0
    latency_ms: float | None = None


class Metrics(BaseModel):
    """Aggregates over a set of question scores; ratios are `None` when nothing was scorable."""

    questions: int = 0
    answered: int = 0
    scored: int = 0
    accuracy: float | None = None
    top_accuracy: float | None = None
    facts_accuracy: float | None = None
    abstention_precision: float | None = None
    abstention_recall: float | None = None
    citation_validity: float | None = None
    citation_support: float | None = None
    gold_quotes_cited: float | None = None
    retrieval_recall: float | None = None
    reader_recall: float | None = None
    conflict_handled: float | None = None
    snippet_pass_rate: float | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


class EvalSummary(BaseModel):
    """Metrics overall, by question kind and by language (plus the recall cut-off used)."""

    k: int
    overall: Metrics
    by_kind: dict[str, Metrics]
    by_lang: dict[str, Metrics]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation; `None` for no values.

    >>> percentile([10.0, 20.0, 30.0, 40.0], 50)
    25.0
    >>> percentile([5.0], 95)
    5.0
    >>> percentile([], 50) is None
    True
    """
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def locate_quote(quote: str, text: str) -> list[tuple[int, int]]:
    """Every (start, end) span of `text` that equals `quote` once whitespace is ignored.

    >>> locate_quote("b c", "a b  c d bc")
    [(2, 6), (9, 11)]
    >>> locate_quote("zz", "a b")
    []
    """
    needle = _SPACE.sub("", quote)
    if not needle:
        return []
    positions = [i for i, ch in enumerate(text) if not ch.isspace()]
    squeezed = "".join(text[i] for i in positions)
    spans = []
    at = squeezed.find(needle)
    while at >= 0:
        spans.append((positions[at], positions[at + len(needle) - 1] + 1))
        at = squeezed.find(needle, at + 1)
    return spans


def _ratio(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


class Scorer:
    """Scores answers against gold questions over one store's lexicon, graph and documents.

    Without `graph`/`documents`, citation validity, support and retrieval recall are not scored.
    """

    def __init__(
        self,
        lexicon: Lexicon,
        graph: KnowledgeGraph | None = None,
        documents: dict[str, str] | None = None,
        *,
        k: int = 5,
    ) -> None:
        self.lexicon = lexicon
        self.graph = graph
        self.documents = documents or {}
        self.k = k
        self.verifier = CitationVerifier(graph, self.documents) if graph is not None else None
        self._spans: dict[tuple[str, str], list[tuple[int, int]]] = {}

    # -- names --------------------------------------------------------------------------------
    def _keys(self, name: str) -> set[str]:
        keys = {"name:" + normalize_name(name)}
        entry = self.lexicon.lookup(name)
        if entry is not None:
            keys.add(entry.id)
        if self.graph is not None and (node := self.graph.find(name)) is not None:
            keys.add(node)
        return keys

    def names_match(self, recommendation: Recommendation, gold_names: Iterable[str]) -> bool:
        """Whether a recommendation names one of the gold names (ids, names and aliases)."""
        given = self._keys(recommendation.name) | {recommendation.id}
        return any(given & self._keys(name) for name in gold_names)

    # -- spans --------------------------------------------------------------------------------
    def gold_spans(self, evidence: GoldEvidence) -> list[tuple[int, int]]:
        """Where a gold quote lies in its document (cached); `[]` if it cannot be found."""
        key = (evidence.doc, evidence.quote)
        if key not in self._spans:
            text = self.documents.get(evidence.doc, "")
            self._spans[key] = locate_quote(evidence.quote, text) if text else []
        return self._spans[key]

    def _cited_spans(self, evidence: Iterable[Evidence]) -> dict[str, list[tuple[int, int]]]:
        spans: dict[str, list[tuple[int, int]]] = {}
        for ev in evidence:
            text = self.documents.get(ev.doc, "")
            if text[ev.start : ev.end] == ev.quote:
                found = [(ev.start, ev.end)]
            else:
                found = locate_quote(ev.quote, text)
            spans.setdefault(ev.doc, []).extend(found)
        return spans

    @staticmethod
    def _overlaps(gold: list[tuple[int, int]], cited: list[tuple[int, int]]) -> bool:
        return any(s < ce and cs < e for s, e in gold for cs, ce in cited)

    # -- one question -------------------------------------------------------------------------
    def score(self, gold: GoldQuestion, record: Answer | None) -> QuestionScore:
        """The score of one answer (`None`: the question was never answered: wrong where scored)."""
        score = QuestionScore(
            id=gold.id,
            kind=gold.kind or "unknown",
            lang=gold.lang or "unknown",
            answered=record is not None,
            answerable=gold.answerable,
            gold_quotes=len(gold.gold_evidence),
        )
        if record is None:
            if gold.answerable is not False:
                score.top_ok = False if gold.gold_top else None
                score.facts_ok = False if gold.required_facts else None
            has_gold = gold.answerable is not None or gold.gold_top or gold.required_facts
            score.correct = False if has_gold else None
            return score
        score.abstained = record.abstained
        score.latency_ms = record.latency_ms
        score.snippets = len(record.snippets)
        score.snippets_passed = sum(s.status == "passed" for s in record.snippets)
        self._score_answer(gold, record, score)
        if self.graph is not None:
            self._score_evidence(gold, record, score)
        return score

    def _score_answer(self, gold: GoldQuestion, record: Answer, score: QuestionScore) -> None:
        parts: list[bool] = []
        if gold.answerable is not None:
            parts.append(record.abstained != gold.answerable)
        if gold.answerable is not False:
            top = record.recommendations[0] if record.recommendations else None
            score.top_given = top.name if top else None
            if gold.gold_top:
                score.top_ok = top is not None and self.names_match(top, gold.gold_top)
                parts.append(score.top_ok)
            if gold.required_facts:
                text = record.answer.casefold()
                score.missing_facts = [
                    fact
                    for fact in gold.required_facts
                    if not any(a.casefold() in text for a in fact)
                ]
                score.facts_ok = not score.missing_facts
                parts.append(score.facts_ok)
        score.correct = all(parts) if parts else None

    def _score_evidence(self, gold: GoldQuestion, record: Answer, score: QuestionScore) -> None:
        if self.verifier is not None:
            _kept, result = self.verifier.verify(record)
            score.citations, score.valid_citations = result.checked, result.checked - result.dropped
        cited = self._cited_spans(ev for c in record.citations for e in c.path for ev in e.evidence)
        retrieved = record.retrieved[: self.k] if isinstance(record, EvalRecord) else []
        if record.read and gold.gold_evidence:
            read = {span.doc for span in record.read}
            score.read_docs = {ev.doc for ev in gold.gold_evidence} <= read
        for ev in gold.gold_evidence:
            spans = self.gold_spans(ev)
            if not spans:
                score.unlocated_quotes.append(f"{ev.doc}: {ev.quote}")
                continue
            score.cited_quotes += self._overlaps(spans, cited.get(ev.doc, []))
            score.retrieved_quotes += any(
                c.doc == ev.doc and c.start <= s and e <= c.end for s, e in spans for c in retrieved
            )
        if gold.conflict:
            claims = [ev for c in record.conflicts for e in c.claims for ev in e.evidence]
            both = self._cited_spans(
                [*claims, *(ev for c in record.citations for e in c.path for ev in e.evidence)]
            )
            sides = [
                self._overlaps(self.gold_spans(ev), both.get(ev.doc, []))
                for ev in gold.gold_evidence
            ]
            score.conflict_ok = bool(record.conflicts) and all(sides)


def summarize(scores: Sequence[QuestionScore]) -> Metrics:
    """Aggregate question scores.

    Accuracy, top and facts accuracy: share of scored questions. Abstention precision: share of
    abstentions on unanswerable questions; recall: share of unanswerable questions abstained on.
    Citation validity: valid / all citations. Citation support: share of questions with gold
    evidence that cite at least one gold quote; `gold_quotes_cited`: share of all gold quotes cited.
    Retrieval recall: share of gold quotes inside the first k retrieved chunks. Reader recall:
    share of the questions the reader read whose gold documents were all among what it read.
    """
    answered = [s for s in scores if s.answered]
    scored = [s for s in scores if s.correct is not None]
    tops = [s for s in scores if s.top_ok is not None]
    facts = [s for s in scores if s.facts_ok is not None]
    known = [s for s in answered if s.answerable is not None]
    abstained = [s for s in known if s.abstained]
    unanswerable = [s for s in known if s.answerable is False]
    with_gold = [s for s in answered if s.gold_quotes]
    conflicts = [s for s in answered if s.conflict_ok is not None]
    read = [s for s in answered if s.read_docs is not None]
    latencies = [s.latency_ms for s in answered if s.latency_ms is not None]
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    return Metrics(
        questions=len(scores),
        answered=len(answered),
        scored=len(scored),
        accuracy=_ratio(sum(bool(s.correct) for s in scored), len(scored)),
        top_accuracy=_ratio(sum(bool(s.top_ok) for s in tops), len(tops)),
        facts_accuracy=_ratio(sum(bool(s.facts_ok) for s in facts), len(facts)),
        abstention_precision=_ratio(sum(s.answerable is False for s in abstained), len(abstained)),
        abstention_recall=_ratio(sum(s.abstained for s in unanswerable), len(unanswerable)),
        citation_validity=_ratio(
            sum(s.valid_citations for s in answered), sum(s.citations for s in answered)
        ),
        citation_support=_ratio(sum(s.cited_quotes > 0 for s in with_gold), len(with_gold)),
        gold_quotes_cited=_ratio(
            sum(s.cited_quotes for s in with_gold), sum(s.gold_quotes for s in with_gold)
        ),
        retrieval_recall=_ratio(
            sum(s.retrieved_quotes for s in with_gold), sum(s.gold_quotes for s in with_gold)
        ),
        reader_recall=_ratio(sum(bool(s.read_docs) for s in read), len(read)),
        conflict_handled=_ratio(sum(bool(s.conflict_ok) for s in conflicts), len(conflicts)),
        snippet_pass_rate=_ratio(
            sum(s.snippets_passed for s in answered), sum(s.snippets for s in answered)
        ),
        latency_p50_ms=round(p50, 2) if p50 is not None else None,
        latency_p95_ms=round(p95, 2) if p95 is not None else None,
    )


def breakdown(scores: Sequence[QuestionScore], k: int) -> EvalSummary:
    """`summarize` overall, per kind and per language (groups sorted by name)."""

    def grouped(attr: str) -> dict[str, Metrics]:
        groups: dict[str, list[QuestionScore]] = {}
        for s in scores:
            groups.setdefault(getattr(s, attr), []).append(s)
        return {name: summarize(group) for name, group in sorted(groups.items())}

    return EvalSummary(
        k=k, overall=summarize(scores), by_kind=grouped("kind"), by_lang=grouped("lang")
    )
