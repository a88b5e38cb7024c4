"""The evidence composer: answers from the units retrieval found, cited by the graph edges they are.

1. **Answerable?** (`qa.decide.graph.answerable`) A question is declined when the specific
   names of its asking sentence appear in no document, when it asks for a price or a rate no
   retrieved unit states, or when nothing relevant was retrieved.
2. **Candidates** (`qa.decide.graph.weigh`, a question that asks to choose): the entities the
   retrieved units are about, or the options the question names, with the graph's explicit advice
   (`qa.decide.graph.advice`) first when the question matches a situation the sources advise on.
3. **Points** (`qa.retrieve.unit_index`): the recommendation's best units (its definition first), an
   alternative, caveats; for other questions the best units overall, one per named entity first
   (two documents for a two-hop question), the route from what the question names, a named
   section's points, what each document says when the question asks whether they agree. Each
   point carries the graph edges its unit is evidence of; `qa.verify` prunes the draft and
   `qa.render` writes it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from kg import cues
from kg.documents import EvidenceUnit, UnitKind
from kg.schema import NodeType, RelationType, normalize_name
from qa import weights as W
from qa.decide.graph.answerable import Answerability
from qa.decide.graph.weigh import CandidateScorer
from qa.read.frame import QuestionFrame
from qa.read.shapes import (
    DISAGREE,
    SECTION_NUMBER,
    asked_relations,
    question_parts,
    second_part,
    text_width,
    two_part,
)
from qa.retrieve.unit_index import CHOOSABLE, SOFTWARE
from qa.retrieve.units import RankedUnit
from qa.schema import (
    AbstainReason,
    AnswerDraft,
    Conflict,
    DraftPoint,
    DraftRecommendation,
    GraphPath,
    Language,
)

__all__ = ["EvidenceComposer"]

#: an amount a sentence states: "2×", "170%", "18.9 GiB", "3 倍"
_AMOUNT = re.compile(
    rf"\d+(?:\.\d+)?\s*(?:×|%|GiB|GB|MB|tokens/s|{cues.alternatives('value.times')})", re.I
)
#: "the “…” section": a title the question calls a section
_SECTION_NAMED = re.compile(rf"(\S.{{2,40}}?)\s*{cues.alternatives('question.section_word')}", re.I)


class EvidenceComposer(CandidateScorer, Answerability):
    """Answer drafts from the units retrieval found; read-only, safe to share across threads."""

    def compose(
        self,
        question: str,
        frame: QuestionFrame | None,
        language: Language,
        linked: list[str],
        ranked: list[RankedUnit],
        hop: Callable[[str, str, set[str]], list[RankedUnit]] | None = None,
        situational: tuple[list[tuple[str, list[GraphPath]]], list[GraphPath], list[Conflict]]
        | None = None,
        surfaces: Iterable[tuple[tuple[str, int], str]] = (),
    ) -> AnswerDraft:
        """The answer draft for a question, from its ranked units and its frame (read once, by
        the read stage; None: read here). `hop(text, entity, about)` searches again, for units
        about `about`, with an entity the first units lead to (a question in two parts follows
        that edge)."""
        frame = frame or QuestionFrame.read(question)
        draft = AnswerDraft(question=question, language=language, injection=frame.injection)
        pairs = list(surfaces)
        reason = self.abstain_reason(
            frame, linked, ranked, [p[0] for p in pairs], [p[1] for p in pairs]
        )
        if reason is not None:
            return draft.model_copy(
                update={
                    "abstain": reason[0],
                    "abstain_detail": reason[1],
                    "abstain_subject": reason[2],
                }
            )
        named = {e for e in linked if e in self.graph}
        second: list[RankedUnit] = []
        bridge = (
            self.bridge(frame, named, ranked) if hop is not None and two_part(frame.text) else None
        )
        if bridge is not None and hop is not None:
            # the bridge's own units, and what the other named things say of it
            parts = {bridge} | {
                rel.source
                for rel in self.graph.in_relations(bridge)
                if rel.relation == RelationType.PART_OF
            }
            tail = second_part(frame.text)
            # what each named thing says of it ("Foo credits a library …; does Bar use it as
            # well?": Bar's own line on that library too)
            told = [
                r
                for e in sorted(named)
                for r in [r for r in hop(frame.text, bridge, {e}) if bridge in r.unit.mentions][
                    : W.BRIDGE_TOLD_UNITS
                ]
            ]
            second = told + hop(tail, bridge, parts)[: W.BRIDGE_HOP_UNITS]
        picks, fact_paths, conflicts = situational or ([], [], [])
        draft.conflicts = conflicts
        if picks and not frame.asks_fact:
            # the sources' own recommendations for the situation the question describes
            for node, paths in picks[: W.GRAPH_PICKS]:
                points: list[DraftPoint] = []
                for point in (
                    p for path in paths[: W.PATHS_PER_PICK] for p in self.path_points(path)
                ):
                    # two paths through one sentence: one point, citing both
                    same = next(
                        (q for q in points if (q.doc, q.start) == (point.doc, point.start)), None
                    )
                    if same is None:
                        points.append(point)
                    else:
                        same.edges += [e for e in point.edges if e not in same.edges]
                points = points[: W.MAX_POINTS]
                draft.recommendations.append(
                    DraftRecommendation(id=node, name=self.graph.entity(node).name, points=points)
                )
        elif frame.choice or frame.measured or bridge is not None:
            ranked_candidates, weighed = self.weigh(frame, named, ranked)
            bridge_type = self.graph.entity(bridge).type if bridge is not None else None
            if bridge is not None and (
                not frame.types
                or bridge_type in frame.types
                or (bridge_type in SOFTWARE and frame.types & SOFTWARE)
            ):
                ranked_candidates = [(bridge, 1.0, [r.unit for r in second])] + [
                    c for c in ranked_candidates if c[0] != bridge
                ]
            if ranked_candidates:
                draft.recommendations = self.recommendations(
                    frame, ranked_candidates, ranked + second
                )
            # the others weighed, each with its best unit: an LLM may pick among them all
            picked = {r.id for r in draft.recommendations}
            draft.candidates = [
                DraftRecommendation(
                    id=eid,
                    name=self.graph.entity(eid).name,
                    points=[
                        self.point(next((u for u in units if self._touches(u, eid)), units[0]), eid)
                    ],
                )
                for eid, _score, units in weighed[: W.WEIGHED]
                if eid not in picked and units and eid in self.graph
            ]
        shown = {(p.doc, p.start) for r in draft.recommendations for p in r.points}
        limit = W.FACTS_WITH_PICKS if draft.recommendations else W.FACTS_ALONE
        first: list[EvidenceUnit] = []
        if second:
            # the path: what the named thing says of the bridge, then the bridge's own answer
            tail_frame = QuestionFrame.read(second_part(frame.text))
            own = [r for r in second if r.unit.subject not in named]
            told = [r for r in second if r.unit.subject in named]
            # the best unit of each named thing that speaks of it
            by_subject: dict[str | None, EvidenceUnit] = {}
            for _s, u in self.ordered(frame, told):
                by_subject.setdefault(u.subject, u)
            first = list(by_subject.values())[: W.BRIDGE_POINTS]
            first += [u for _s, u in self.ordered(tail_frame, own)][: W.BRIDGE_POINTS]
            first = [u for u in first if (u.doc, u.start) not in shown]
            limit = max(limit, len(first) + 1)
        graph_facts = [p for path in fact_paths for p in self.path_points(path)]
        by_span = {(p.doc, p.start): p for r in draft.recommendations for p in r.points}
        for fact in graph_facts:
            # a route through a unit a recommendation already shows joins that point's edges
            known = by_span.get((fact.doc, fact.start))
            if known is not None:
                known.edges += [e for e in fact.edges if e not in known.edges]
        graph_facts = [p for p in graph_facts if (p.doc, p.start) not in shown][: W.GRAPH_FACTS]
        shown |= {(p.doc, p.start) for p in graph_facts}
        if DISAGREE.search(frame.text):
            # "do the documents agree?": the best unit of each document that speaks of it
            first = self.per_document(frame, named, ranked) + first
            limit = max(limit, len(first))
        section = self.named_section(frame)
        if section and not draft.recommendations:
            # "what does the “三条提醒” section say?": its points, in order
            first = section + first
            limit = max(limit, len(section))
        focus = named | {
            r.id for r in draft.recommendations[:1] if r.id in self.graph and not picks
        }
        facts = graph_facts + self.facts(frame, focus, ranked, shown, limit, first=first)
        said = {normalize_name(p.text) for r in draft.recommendations for p in r.points}
        draft.facts = []
        for point in facts:
            key = normalize_name(point.text)
            within = any(
                k.doc == point.doc and k.start <= point.start and point.end <= k.end
                for k in draft.facts
            )  # "三个提醒：" brought its first item along: the item says nothing new
            # a piece of a sentence a recommendation quotes says nothing new either
            within = within or any(
                p.doc == point.doc and p.start <= point.start and point.end <= p.end
                for r in draft.recommendations
                for p in r.points
            )
            if key not in said and not within:
                said.add(key)
                draft.facts.append(point)
        if draft.recommendations:
            # beside a recommendation, only a few excerpts: the graph's routes count among them
            draft.facts = draft.facts[: max(limit, len(graph_facts))]
        if not draft.recommendations and not draft.facts:
            return draft.model_copy(
                update={
                    "abstain": AbstainReason.NO_EVIDENCE,
                    "abstain_detail": "nothing retrieved answers it",
                }
            )
        if DISAGREE.search(frame.text) and not draft.conflicts:
            conflict = self.disagreement(named, draft.facts, frame)
            if conflict is not None:
                draft.conflicts = [conflict]
        return draft

    def named_section(self, frame: QuestionFrame) -> list[EvidenceUnit]:
        """The units of the section whose title the question quotes or calls a section (its
        numbering aside, four characters at least), in the document's order; [] when it names
        none."""
        # a title is named when quoted ("“三条提醒”一节") or called a section ("the FAQ section")
        named = re.findall(r"[“\"「『‘'](.{2,60}?)[”\"」』’']", frame.text)
        named += _SECTION_NAMED.findall(frame.text)
        folded = " | ".join(n.strip().casefold() for n in named)
        if not folded:
            return []
        for units in self._doc_units.values():
            for unit in units:
                if unit.kind != UnitKind.HEADING:
                    continue
                title = SECTION_NUMBER.sub("", unit.text).strip().casefold()
                if len(title) < W.SECTION_TITLE or title not in folded:
                    continue
                inside = [
                    u
                    for u in units
                    if u.kind != UnitKind.HEADING
                    and u.start > unit.start
                    and u.heading_path[-1:] == (unit.text,)
                ]
                if inside:
                    return inside[: W.SECTION_POINTS]
        return []

    def per_document(
        self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]
    ) -> list[EvidenceUnit]:
        """The best unit of each of the (up to three) documents that speak of what the question
        names, each with the value asked for when the question asks one."""
        main = self._main_subject(frame, named)
        things = {main} if main else set()
        pool = [
            r
            for r in ranked[: W.AGREE_UNITS]
            if not things or r.unit.subject in things or things & set(r.unit.mentions)
        ]
        chosen: list[EvidenceUnit] = []
        for _score, unit in self.ordered(frame, pool, about=things):
            if unit.doc not in {u.doc for u in chosen} and unit.kind != UnitKind.HEADING:
                chosen.append(unit)
            if len(chosen) >= W.AGREE_DOCUMENTS:
                break
        return chosen

    def disagreement(
        self, named: set[str], facts: list[DraftPoint], frame: QuestionFrame | None = None
    ) -> Conflict | None:
        """Two documents that say different things of the thing asked about: different amounts
        ("2× faster" / "170%") or one that it works with something and one that it does not.
        Documents that merely say different things side by side are no disagreement."""
        subject = self._main_subject(frame, named) if frame is not None else None
        by_doc: dict[str, DraftPoint] = {}
        for point in facts:  # each document's first point with an edge, one with an amount first
            if point.edges and (
                point.doc not in by_doc
                or (_AMOUNT.search(point.text) and not _AMOUNT.search(by_doc[point.doc].text))
            ):
                by_doc[point.doc] = point
        if subject is None or len(by_doc) < 2:
            return None
        claims = [
            next((e for e in p.edges if subject in (e.source, e.target)), p.edges[0])
            for p in by_doc.values()
        ]
        amounts = [frozenset(_AMOUNT.findall(p.text)) for p in by_doc.values()]
        stated = [a for a in amounts if a]
        differ = frame is not None and frame.amount and len(stated) >= 2 and len(set(stated)) >= 2
        negative = {
            e.target
            for e in claims
            if e.relation == RelationType.NOT_SUPPORTED and e.source == subject
        }
        opposed = any(
            e.target in negative and e.relation != RelationType.NOT_SUPPORTED for e in claims
        )
        if not (differ or opposed):
            return None
        summary = "; ".join(f"{p.doc}: “{p.text[:160]}”" for p in by_doc.values())
        return Conflict(
            subject=subject, relation=claims[0].relation, claims=claims, summary=summary
        )

    def recommendations(
        self,
        frame: QuestionFrame,
        candidates: list[tuple[str, float, list[EvidenceUnit]]],
        ranked: list[RankedUnit],
    ) -> list[DraftRecommendation]:
        """The top candidate with its reasons, the others with one reason each."""
        out = []
        by_id = {r.unit.id: r for r in ranked}
        for index, (eid, _score, units) in enumerate(candidates):
            chosen: list[EvidenceUnit] = []
            definition = self.definition(eid) if index == 0 and eid in self.graph else None
            if definition is not None:
                chosen.append(definition)
            own = [by_id[u.id] for u in units if u.id in by_id]
            if index == 0 and own and eid in self.graph and not frame.options:
                # the pick's own units that retrieval left out may say best what the question
                # asks of it ("INT8" in its feature list)
                own = self.with_own_units(own, [eid])
            if eid in self.graph and not frame.options:
                ordered = self.ordered(frame, own, [self.graph.entity(eid).name], about=[eid])
                units = self.covering([u for _s, u in ordered], frame, said=chosen) or units
            tables: set[tuple[str, ...]] = set()
            for unit in units:
                if len(chosen) >= (W.MAX_POINTS if index == 0 else 1):
                    break
                if unit.kind == UnitKind.ROW:
                    if tuple(unit.header) in tables:
                        continue  # one row says what a table says; more rows crowd out reasons
                    tables.add(tuple(unit.header))
                if all(unit.text != c.text for c in chosen):
                    chosen.append(unit)
            weights = self._question_terms(frame)
            points = [
                self.row_group(u, weights, eid)
                if u.kind == UnitKind.ROW
                else self.with_paragraph(u, eid)
                if u is definition
                else self.point(u, eid)
                for u in chosen
            ]
            if not eid.startswith("value:") and not any(
                eid in (e.source, e.target) for p in points for e in p.edges
            ):
                # a recommendation stands on a verified path: the best unit with an edge of it
                backed = next((u for u in units if self._touches(u, eid)), None)
                if backed is not None and all(backed.id != c.id for c in chosen):
                    points.append(self.point(backed, eid))
            name = (
                eid.removeprefix("value:")
                if eid.startswith("value:")
                else self.graph.entity(eid).name
            )
            out.append(DraftRecommendation(id=eid, name=name, points=points))
        return out

    def _names_in(self, eid: str, text: str) -> bool:
        """Whether a text names an entity (its name or an alias, any case)."""
        entity = self.graph.entity(eid)
        lowered = text.lower()
        return any(n and n.lower() in lowered for n in [entity.name, *entity.aliases])

    def covering(
        self, units: list[EvidenceUnit], frame: QuestionFrame, said: Iterable[EvidenceUnit] = ()
    ) -> list[EvidenceUnit]:
        """`units` (best first) reordered so that each of the first few says something of the
        question that `said` and the ones before did not, the rarer the better: of the next
        twelve, the one that adds the most question words (weighted by rarity) goes ahead ("INT8"
        after two sentences on the models); a unit that adds nothing waits."""
        weights = self.search.query_weights(frame.text, [])
        idf = self.search.lexical.idf
        covered: set[str] = set()
        for unit in said:
            covered |= set(weights) & self._unit_tokens(unit)
        pool = list(units[: W.COVERING_UNITS])
        ahead: list[EvidenceUnit] = []
        while pool:
            gains = [
                sum(weights[t] * idf(t) for t in set(weights) & self._unit_tokens(u) - covered)
                for u in pool
            ]
            best = max(gains)
            if best <= 0 and ahead:
                break
            unit = pool.pop(gains.index(best))
            ahead.append(unit)
            covered |= set(weights) & self._unit_tokens(unit)
        return ahead + pool + units[W.COVERING_UNITS :]

    def facts(
        self,
        frame: QuestionFrame,
        named: set[str],
        ranked: list[RankedUnit],
        shown: set[tuple[str, int]],
        limit: int,
        first: Iterable[EvidenceUnit] = (),
    ) -> list[DraftPoint]:
        """The best units: `first` (a followed path), the best one about each named thing (a
        question about two things gets both documents), then by score and relevance together.
        A question about named things is answered from their units (where they have enough);
        headlines and fragments only when nothing else is left."""
        things = [
            e
            for e in sorted(named, key=lambda e: self.named_at(frame.text, e))
            if self.graph.entity(e).type in CHOOSABLE | {NodeType.MODEL}
        ]
        pool = ranked[: W.FACT_UNITS]
        if things:
            # about the things it names, or about another thing it names in their documents
            # (CUDA's row of Foo's requirements table when it asks for Foo's CUDA version)
            about = [
                r
                for r in pool
                if r.unit.subject in things
                or set(things) & set(r.unit.mentions)
                or (r.unit.subject in named and self._doc_subject.get(r.unit.doc) in things)
            ]
            if about:
                pool = about
        asked = asked_relations(frame.text)
        kinds = {self.graph.entity(e).type for e in named} - CHOOSABLE

        def telling(unit: EvidenceUnit) -> bool:
            return unit.kind != UnitKind.HEADING and (
                text_width(unit.text) >= W.TELLING_WIDTH
                or unit.kind in (UnitKind.ROW, UnitKind.CODE)
                # "[Apache License 2.0](LICENSE)" is short and answers "what licence?"
                or any(e.relation in asked for e in self._edges.get((unit.doc, unit.start), []))
            )

        order = [
            (score, unit)
            for score, unit in self.ordered(frame, pool, about=things)
            if telling(unit)
        ] or self.ordered(frame, pool)
        chosen: list[EvidenceUnit] = []
        seen = set(shown)
        texts: set[str] = set()
        per_doc: dict[str, int] = defaultdict(int)

        def take(unit: EvidenceUnit, capped: bool = True) -> None:
            key = normalize_name(unit.text)
            if (unit.doc, unit.start) in seen or key in texts or len(chosen) >= limit:
                return
            if capped and per_doc[unit.doc] >= W.FACTS_PER_DOCUMENT:
                return
            seen.add((unit.doc, unit.start))
            texts.add(key)
            per_doc[unit.doc] += 1
            chosen.append(unit)

        docs_named: list[str] = []
        for unit in first:  # a followed path, a named section: taken whole
            if unit.doc not in docs_named:
                docs_named.append(unit.doc)
            take(unit, capped=False)
        for eid in things:
            # its own units that retrieval left out compete too (TensorFlow's licence line when
            # a question asks for two licences)
            mine = [
                u
                for _s, u in self.ordered(
                    frame,
                    self.with_own_units(pool, [eid]),
                    self.names_of(eid),
                    about=[eid],
                    names=[n for e in named if e != eid for n in self.names_of(e)],
                )
                if telling(u) and u.doc not in docs_named
            ]
            # the graph's answer first: a unit whose edge from it is of the asked relation, to
            # the kind of thing the question speaks of if it names one ("does it need a GPU?":
            # its hardware, not what it supports)
            stated = {
                u.id: {
                    self.graph.entity(e.target).type
                    for e in self._edges.get((u.doc, u.start), [])
                    if e.source == eid and e.relation in asked and e.target in self.graph
                }
                for u in mine
            }
            stating = [u for u in mine if stated[u.id] & kinds or (stated[u.id] and not kinds)]
            # its own units: about it, or naming it in its own documents
            own = [
                u
                for u in mine
                if u.subject == eid or (eid in u.mentions and self._doc_subject.get(u.doc) == eid)
            ]
            naming = [u for u in mine if eid in u.mentions]
            for unit in (stating or own or naming)[:1]:
                docs_named.append(unit.doc)
                take(unit)
        speaking_of: list[str] = things[:1]
        for part in question_parts(frame.text):
            # "Does X log usage, and how do I turn that off?": each part gets its best unit,
            # among the retrieved ones and the own units of the thing the part is about (the one
            # it names, else the one named last: "MLX 本身…？它的内存模型…？")
            speaking_of = [e for e in things if self._names_in(e, part)] or speaking_of[-1:]
            part_pool = self.with_own_units(pool, speaking_of)
            part_order = self.ordered(QuestionFrame.read(part), part_pool, about=speaking_of)
            for _score, unit in part_order:
                if unit.kind != UnitKind.HEADING:
                    take(unit)
                    break
        for _score, unit in order:
            if len(chosen) >= limit:
                break
            take(unit)
        chosen.sort(
            key=lambda u: (docs_named.index(u.doc) if u.doc in docs_named else 99, u.doc, u.start)
        )
        weights = self._question_terms(frame)
        return [
            self.row_group(u, weights) if u.kind == UnitKind.ROW else self.point(u) for u in chosen
        ]
