"""What the reader is shown: the question, the best evidence units, and the candidates they name.

`Reading.gather` makes it from retrieval's ranked units: the best units that say something
(headings are titles, not evidence), no text twice, at most a few per document so that a second
document's answer is in view, numbered in rank order; the candidates are the names those units
give (`qa.decide.candidates`), with the graph's own picks first when it made any.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from pydantic import BaseModel, Field

from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import normalize_name
from qa.decide.candidates import Candidate, candidate_names, number_evidence
from qa.schema import AnswerDraft, Language
from qa.units import RankedUnit

__all__ = ["Reading", "select_evidence"]


def select_evidence(
    ranked: Sequence[RankedUnit], limit: int = 8, per_doc: int = 3
) -> list[EvidenceUnit]:
    """The best `limit` units that say something, best first: no headings, no text twice, at
    most `per_doc` from one document (units of the first documents give way to others').

    >>> def u(i, doc, kind=UnitKind.SENTENCE, text=None):
    ...     unit = EvidenceUnit(id=f"{doc}#{i}", doc=doc, start=i, end=i + 1, kind=kind,
    ...                         text=text or f"{doc} {i}")
    ...     return RankedUnit(unit, 1.0 / (i + 1), 0.0, 0.0, False)
    >>> ranked = [u(0, "a", UnitKind.HEADING), u(1, "a"), u(2, "a"), u(3, "a"), u(4, "b"),
    ...           u(5, "a", text="b 4")]
    >>> [x.id for x in select_evidence(ranked, limit=3, per_doc=2)]
    ['a#1', 'a#2', 'b#4']
    """
    chosen: list[EvidenceUnit] = []
    texts: set[str] = set()
    per: dict[str, int] = {}
    for r in ranked:
        unit = r.unit
        key = normalize_name(unit.text)
        if unit.kind == UnitKind.HEADING or not key or key in texts:
            continue
        if per.get(unit.doc, 0) >= per_doc:
            continue
        chosen.append(unit)
        texts.add(key)
        per[unit.doc] = per.get(unit.doc, 0) + 1
        if len(chosen) >= limit:
            break
    return chosen


class Reading(BaseModel):
    """One question as the reader sees it (the prompt is made from this and nothing else)."""

    question: str = Field(description="the question, instructions inside it left as text")
    language: Language
    choose: bool = Field(description="whether the question asks for a pick")
    evidence: list[EvidenceUnit] = Field(description="[1].. in order")
    candidates: list[Candidate] = Field(default_factory=list)

    @classmethod
    def gather(
        cls,
        question: str,
        language: Language,
        *,
        choose: bool,
        ranked: Sequence[RankedUnit],
        graph: KnowledgeGraph,
        documents: dict[str, str],
        options: Sequence[str] = (),
        draft: AnswerDraft | None = None,
        labels: Container[tuple[str, str]] = (),
        limit: int = 8,
        max_candidates: int = 14,
    ) -> Reading:
        """The reading of a question from its ranked units: `options` are the alternatives the
        question names; the graph's draft (when given) lends its picks as the first candidates."""
        evidence = select_evidence(ranked, limit)
        candidates: list[Candidate] = []
        if choose:
            prior = [
                Candidate(name=r.name, entity=r.id if r.id in graph else None)
                for r in (draft.recommendations if draft is not None else [])
            ]
            candidates = candidate_names(
                graph,
                evidence,
                documents,
                question=question,
                options=options,
                prior=prior,
                labels=labels,
                limit=max_candidates,
            )
            # a name no evidence line states is one the reader could not read (a prior's pick
            # from elsewhere): left out
            candidates = [c for c in number_evidence(candidates, evidence, documents) if c.evidence]
        return cls(
            question=question,
            language=language,
            choose=choose,
            evidence=evidence,
            candidates=candidates,
        )
