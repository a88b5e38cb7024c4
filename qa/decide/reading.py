"""What the reader is shown: the question, the best evidence units, and the candidates they name.

`Reading.gather` makes it from retrieval's ranked units: the best units that say something
(headings are titles, not evidence), no text twice, the best unit of each document of the
things the question names whatever its rank, numbered in rank order; the candidates are the
names those units give (`qa.decide.candidates`), with the graph's own picks first when it made
any. Beyond what the reader reads, it keeps what an answer may add: the units retrieval ranked
next (`further`) and those next to the units read in their sections (`around`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence

from pydantic import BaseModel, Field

from ingest.markup import is_link_alone
from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import normalize_name
from qa.decide.candidates import Candidate, candidate_names, number_evidence
from qa.read.frame import joins_alternatives
from qa.retrieve.units import RankedUnit
from qa.schema import AnswerDraft, Language

__all__ = ["Reading", "rank_candidates", "select_evidence"]


def select_evidence(
    ranked: Sequence[RankedUnit],
    limit: int = 8,
    first_docs: Sequence[str] = (),
    pointer: Callable[[EvidenceUnit], bool] | None = None,
) -> list[EvidenceUnit]:
    """The best `limit` units that say something, best first: no headings, no text twice, none
    that only points to another page (`pointer`: a list item that is a link alone). The
    best unit of each of `first_docs` (the documents of the things a question names) is taken
    whatever its rank, so that a question about two projects reads both.

    No cap per document: measured on the three public sets, three units at most from one
    document left out required facts that the next-ranked units of the same document hold (of
    real-articles' 154 facts, 89 were among the eight units read with the cap and 104 without;
    real-docs 129 and 145 of 182; dev 122 and 138 of 156), while the gold documents were read
    about as often (68 and 67 of 70 questions; 96 and 95 of 98; 108 and 106 of 108).

    >>> def u(i, doc, kind=UnitKind.SENTENCE, text=None):
    ...     unit = EvidenceUnit(id=f"{doc}#{i}", doc=doc, start=i, end=i + 1, kind=kind,
    ...                         text=text or f"{doc} {i}")
    ...     return RankedUnit(unit, 1.0 / (i + 1), 0.0, 0.0, False)
    >>> ranked = [u(0, "a", UnitKind.HEADING), u(1, "a"), u(2, "a"), u(3, "a"), u(4, "b"),
    ...           u(5, "a", text="b 4"), u(6, "c")]
    >>> [x.id for x in select_evidence(ranked, limit=3)]
    ['a#1', 'a#2', 'a#3']
    >>> [x.id for x in select_evidence(ranked, limit=3, first_docs=["c"])]
    ['a#1', 'a#2', 'c#6']
    >>> [x.id for x in select_evidence(ranked, limit=3, pointer=lambda u: u.id == "a#2")]
    ['a#1', 'a#3', 'b#4']
    """
    chosen: list[EvidenceUnit] = []
    texts: set[str] = set()

    def usable(unit: EvidenceUnit) -> bool:
        key = normalize_name(unit.text)
        return (
            unit.kind != UnitKind.HEADING
            and bool(key)
            and key not in texts
            and not (pointer is not None and pointer(unit))
        )

    def take(unit: EvidenceUnit) -> None:
        chosen.append(unit)
        texts.add(normalize_name(unit.text))

    reserved = [
        next((r.unit for r in ranked if r.unit.doc == doc and usable(r.unit)), None)
        for doc in dict.fromkeys(first_docs)
    ]
    reserved_units = [u for u in reserved if u is not None][:limit]
    for r in ranked:
        if len(chosen) + len([u for u in reserved_units if u not in chosen]) >= limit:
            break
        unit = r.unit
        if usable(unit):
            take(unit)
    for unit in reserved_units:
        if unit not in chosen and len(chosen) < limit:
            take(unit)
    rank = {r.unit.id: i for i, r in enumerate(ranked)}
    return sorted(chosen, key=lambda u: rank.get(u.id, len(rank)))


def rank_candidates(candidates: Sequence[Candidate], first: Container[str]) -> list[Candidate]:
    """The candidates in the order the reader sees them: those whose normalised name is in
    `first` (the question's options, the graph's picks) as they come, then the others by how
    many evidence lines name them, the first named first.

    >>> cs = [Candidate(name="A", evidence=[1]), Candidate(name="B", evidence=[2]),
    ...       Candidate(name="C", evidence=[3, 5]), Candidate(name="D", evidence=[1, 4])]
    >>> [c.name for c in rank_candidates(cs, {"a"})]
    ['A', 'D', 'C', 'B']
    """
    head = [c for c in candidates if normalize_name(c.name) in first]
    tail = [c for c in candidates if normalize_name(c.name) not in first]
    tail.sort(key=lambda c: (-len(c.evidence), c.evidence[0] if c.evidence else 0))
    return head + tail


class Reading(BaseModel):
    """One question as the reader sees it (the prompt is made from this and nothing else)."""

    question: str = Field(description="the question, instructions inside it left as text")
    language: Language
    choose: bool = Field(description="whether the question asks for a pick")
    evidence: list[EvidenceUnit] = Field(description="[1].. in order")
    candidates: list[Candidate] = Field(default_factory=list)
    options: list[str] = Field(
        default_factory=list,
        description="the alternatives the question names, their names normalised",
    )
    alternatives: bool = Field(
        default=False,
        description="whether the question offers its options as the alternatives its answer "
        'is one of ("A or B?"): a pick that is none of them gives way to the graph\'s pick '
        "where that is one",
    )
    figure: bool = Field(
        default=False,
        description="whether a figure answers the question (it asks how much or how many): "
        "the line the reader gives is one that states a figure, where one it may give does",
    )
    setting: bool = Field(
        default=False,
        description="whether the question asks which setting (a flag, an environment variable, "
        "a parameter): the line the reader gives is one that writes a setting down, and the "
        "pick a setting it names, where any does",
    )
    further: list[EvidenceUnit] = Field(
        default_factory=list,
        description="not shown to the reader: the units retrieval ranked next, best first, "
        "from which an answer adds what the sections of its pick and its cited lines go on "
        "to say",
    )
    around: list[EvidenceUnit] = Field(
        default_factory=list,
        description="not shown to the reader: the units next to those read in their sections, "
        "nearest first",
    )

    @classmethod
    def gather(
        cls,
        question: str,
        language: Language,
        *,
        choose: bool,
        ranked: Sequence[RankedUnit],
        figure: bool = False,
        setting: bool = False,
        graph: KnowledgeGraph,
        documents: dict[str, str],
        options: Sequence[str] = (),
        alternatives: bool = False,
        named: Sequence[str] = (),
        draft: AnswerDraft | None = None,
        labels: Container[tuple[str, str]] = (),
        first_docs: Sequence[str] = (),
        limit: int = 8,
        max_candidates: int = 10,
        further: int = 24,
        window: Callable[[EvidenceUnit], list[EvidenceUnit]] | None = None,
    ) -> Reading:
        """The reading of a question from its ranked units: `options` are the alternatives the
        question names (`alternatives`: offered as those its answer is one of, each candidate
        that is one of them by its name or its entity's marked `offered`), `named` the entities
        it links to; `figure`: a figure answers it (it asks how much or how many); `setting`: it
        asks which setting; `first_docs` the documents whose best unit it must read (those of
        the things it names); the graph's draft (when given) lends its picks as candidates;
        `window` gives the units next to a unit in its section (`UnitIndex.section_window`).
        Candidates of every kind are the reader's to weigh: a question's words for a kind of
        thing say what it is about as often as what it asks for (a question set in an inference
        engine may ask for a parallelism), and leaving out the other kinds measured no better
        (README)."""

        pointers: dict[str, bool] = {}  # both selections below ask of the same units

        def pointer(unit: EvidenceUnit) -> bool:
            if unit.id not in pointers:
                pointers[unit.id] = unit.doc in documents and is_link_alone(
                    documents[unit.doc], unit.start, unit.end
                )
            return pointers[unit.id]

        evidence = select_evidence(ranked, limit, first_docs=first_docs, pointer=pointer)
        read = {id(u) for u in evidence}
        after = select_evidence(ranked, limit + further, first_docs=first_docs, pointer=pointer)
        candidates: list[Candidate] = []
        if choose:
            prior = [
                Candidate(name=r.name, entity=r.id if r.id in graph else None)
                for r in (draft.recommendations if draft is not None else [])
            ]
            found = candidate_names(
                graph,
                evidence,
                documents,
                question=question,
                options=options,
                named=set(named),
                prior=prior,
                labels=labels,
                limit=100,
            )
            # a name no evidence line states is one the reader could not read (a prior's pick
            # from elsewhere): left out
            numbered = [c for c in number_evidence(found, evidence, documents) if c.evidence]
            first = {normalize_name(n) for n in [*options, *(c.name for c in prior)]}
            proposed = {normalize_name(c.name) for c in prior}
            offered = {normalize_name(o) for o in options} if alternatives else set()
            within = [
                re.compile(rf"(?<![\w.\-]){re.escape(o)}(?![\w.\-])", re.I)
                for o in (options if alternatives else ())
            ]

            def is_offered(c: Candidate) -> bool:
                """One of the alternatives by its name or its entity's, or a name that holds
                one of them and no other ("Gorse with Turbo" of "Wisp or Gorse?", not a
                title "Foo vs. Bar")."""
                names = [c.name]
                if c.entity is not None and c.entity in graph:
                    node = graph.entity(c.entity)
                    names += [node.name, *node.aliases]
                if any(normalize_name(n) in offered for n in names):
                    return True
                held = sum(1 for p in within if p.search(c.name))
                return held == 1 and not joins_alternatives(c.name)

            candidates = [
                c.model_copy(
                    update={
                        "proposed": normalize_name(c.name) in proposed,
                        "offered": bool(offered) and is_offered(c),
                    }
                )
                for c in rank_candidates(numbered, first)[:max_candidates]
            ]
        return cls(
            question=question,
            language=language,
            choose=choose,
            evidence=evidence,
            candidates=candidates,
            options=list(dict.fromkeys(normalize_name(o) for o in options)),
            alternatives=alternatives and len(options) >= 2,
            figure=figure,
            setting=setting,
            further=[u for u in after if id(u) not in read],
            around=_around(evidence, window),
        )


def _around(
    evidence: list[EvidenceUnit],
    window: Callable[[EvidenceUnit], list[EvidenceUnit]] | None,
) -> list[EvidenceUnit]:
    """The units around each unit read in its section (nearest first, in the order read),
    none read."""
    if window is None:
        return []
    read = {u.id for u in evidence}
    pool: dict[str, EvidenceUnit] = {}
    for unit in (n for u in evidence for n in window(u)):
        if unit.id not in read:
            pool.setdefault(unit.id, unit)
    return list(pool.values())
