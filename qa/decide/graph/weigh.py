"""Which things can answer a question that asks to choose, and how well: the entities the
retrieved units are about (or the options the question names), each weighed by how much evidence
is about it, how much of the question its own units cover, what the question requires that the
graph links it to, and how specific it is; an edition rolls up into its product."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Set

from ingest.units import stem_text
from kg.documents import EvidenceUnit, UnitKind
from kg.schema import NodeType, RelationType, normalize_name
from qa import weights as W
from qa.decide.graph.options import resolve_options
from qa.read.frame import QuestionFrame
from qa.retrieve.unit_index import CHOOSABLE, SOFTWARE, UnitIndex
from qa.retrieve.units import RankedUnit, bilingual_search

__all__ = ["Candidate", "CandidateScorer"]

#: an entity id (or `value:<text>`), its score, its supporting units best first
Candidate = tuple[str, float, list[EvidenceUnit]]


class CandidateScorer(UnitIndex):
    """Candidates for a choice (see the module docstring)."""

    def candidates(
        self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]
    ) -> list[tuple[str, float, list[EvidenceUnit]]]:
        """Entities to recommend, best first, each with its supporting units (best first)."""
        return self.weigh(frame, named, ranked)[0]

    def weigh(
        self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The candidates within reach of the best (up to three: what is recommended), and the
        others weighed, best first."""
        if frame.options:
            options = self.option_candidates(frame, ranked, named)
            if options or (frame.measured and not frame.choice):
                return options, []
        wanted = frame.types
        top = ranked[: W.CANDIDATE_UNITS]
        best = top[0].score if top else 1.0
        contributions: dict[str, list[float]] = defaultdict(list)
        support: dict[str, list[EvidenceUnit]] = defaultdict(list)
        clause_terms = self._question_terms(frame)
        for r in top:
            weight = r.score / best
            unit = r.unit
            # its subject and the things it names, each by how much of the question its clause holds
            shares = [(unit.subject, 1.0)] + [
                (m, self._clause_share(unit, m, clause_terms)) for m in unit.mentions
            ]
            for eid, share in shares:
                if eid is None:
                    continue
                target = self._admit(eid, named, wanted, subject=eid == unit.subject)
                if target is None:
                    continue
                contributions[target].append(share * weight)
                if all(u.id != unit.id for u in support[target]):
                    support[target].append(unit)
        # the best unit counts fully, the others less and less: many loose matches in a long
        # README must not outweigh the one unit that says what the question asks
        evidence = {
            eid: sum(v * W.EVIDENCE_DECAY**i for i, v in enumerate(sorted(values, reverse=True)))
            for eid, values in contributions.items()
        }
        names = [
            n for e in named for n in [self.graph.entity(e).name, *self.graph.entity(e).aliases]
        ]
        weights = self.search.query_weights(frame.text, [])
        excluded = {t for n in names for t in self.search.tokenize(stem_text(n))}
        weights = {t: w for t, w in weights.items() if t not in excluded}
        # the documents that best match the question, taken whole: their subjects are candidates
        profile: dict[str, float] = {}
        best_docs = bilingual_search(
            self.search.doc_lexical, weights, W.PROFILE_DOCUMENTS, own=frame.text
        )
        for doc, score in best_docs:
            subject = self._doc_subject.get(doc)
            target = self._admit(subject, named, wanted, subject=True) if subject else None
            if target is not None:
                profile[target] = max(profile.get(target, 0.0), score)
            elif subject in named:
                # a document about a thing the question names ("飞桨生态里…"): the answer is one of
                # the things it presents; its own best units say which
                for eid in {t for t in evidence if any(u.doc == doc for u in support[t])}:
                    profile[eid] = max(profile.get(eid, 0.0), score)
        if not evidence and not profile:
            return [], []
        top_evidence = max(evidence.values(), default=1.0) or 1.0
        top_profile = max(profile.values(), default=1.0) or 1.0
        # what the question requires (named and not itself a candidate): Inferentia, PyTorch
        constraints = [c for c in sorted(named) if c not in set(evidence) | set(profile)]
        pool = set(evidence) | set(profile)
        signs = {eid: self.constraint_signs(eid, constraints) for eid in pool}
        # hardware or a platform few units name ("AWS Inferentia", not "GPU") that some candidate
        # is linked to is a requirement the others are not known to meet: they rank after it
        # however well their words match
        decisive = self._decisive(constraints, signs)
        # how much of what the question asks a candidate's retrieved units say, rare words
        # weighing more: "API key auth, user quotas, role-based access" in one line counts
        idf = self.search.lexical.idf
        total = sum(w * idf(t) for t, w in weights.items()) or 1.0
        said: dict[str, set[str]] = defaultdict(set)
        for eid, units in support.items():
            for unit in units:
                said[eid] |= set(weights) & self._unit_tokens(unit)
        scored: list[Candidate] = []
        unmet: dict[str, int] = {}
        for eid in pool:
            node_type = self.graph.entity(eid).type
            fit = W.FIT_WANTED if node_type in wanted else 1.0
            score = (
                W.EVIDENCE_SHARE * evidence.get(eid, 0.0) / top_evidence
                + W.PROFILE_SHARE * profile.get(eid, 0.0) / top_profile
            )
            score *= 1.0 + sum(weights[t] * idf(t) for t in said[eid]) / total
            fit_sum = sum(signs[eid].values())
            score *= 1.0 + max(W.CONSTRAINT_FLOOR, W.CONSTRAINT_GAIN * fit_sum)
            # a candidate not linked to the rare hardware asked for ranks after those that are
            unmet[eid] = sum(1 for c in decisive if signs[eid].get(c, 0.0) <= 0)
            scored.append((eid, score * fit, support.get(eid, [])))
        scored.sort(key=lambda t: (unmet[t[0]], -t[1], t[0]))
        if wanted and not wanted & SOFTWARE:
            # "which technique / which GPU": only things of that kind answer, when there are any
            exact = [c for c in scored if self.graph.entity(c[0]).type in wanted]
            scored = exact or scored
        top_score = scored[0][1]
        close = [c for c in scored if c[1] >= W.CLOSE_SHARE * top_score][: W.MAX_PICKS]
        return close, [c for c in scored if c not in close]

    def _decisive(self, required: list[str], signs: dict[str, dict[str, float]]) -> list[str]:
        """The requirements that decide between candidates: hardware or a platform few units
        name that the graph links some candidate to."""
        return [
            c
            for c in required
            if self.graph.entity(c).type in (NodeType.HARDWARE, NodeType.PLATFORM)
            and self.is_rare(c)
            and any(s.get(c, 0.0) > 0 for s in signs.values())
        ]

    def is_rare(self, eid: str) -> bool:
        """Whether few units name a thing (at most one in a hundred, or two): naming it says
        something specific ("AWS Inferentia"), unlike a thing every document names ("GPU")."""
        named_in = len(self.search.by_mention.get(eid, []))
        return named_in <= max(W.RARE_MIN, len(self.search.units) // W.RARE_PER)

    def constraint_signs(self, eid: str, constraints: list[str]) -> dict[str, float]:
        """The things a question requires (Inferentia, PyTorch, a format) that the graph links a
        candidate to: 1.0 each, -1.0 where every such edge is NOT_SUPPORTED.
        `Foo -RUNS_ON-> Bar NPU` makes Foo meet "部署到 Bar NPU 上"."""
        if not constraints:
            return {}
        nodes = {eid} | {
            r.source for r in self.graph.in_relations(eid) if r.relation == RelationType.PART_OF
        }
        signs: dict[str, float] = {}
        for constraint in constraints:
            relations = [
                r
                for node in nodes
                for r in self.graph.relations_of(node)
                if constraint in (r.source, r.target)
                and r.relation not in (RelationType.PART_OF, RelationType.MENTIONS)
            ]
            if not relations:
                continue
            signs[constraint] = (
                -1.0 if all(r.relation == RelationType.NOT_SUPPORTED for r in relations) else 1.0
            )
        return signs

    def _clause_share(self, unit: EvidenceUnit, eid: str, terms: dict[str, float]) -> float:
        """How much of a unit's match a thing it names earns: a sentence that lists four tools,
        each with its use, credits the one whose clause holds the question's words (0.3 .. 1.5)."""
        node = self.graph.entity(eid) if eid in self.graph else None
        if node is None or not terms:
            return 1.0
        names = [n.lower() for n in [node.name, *node.aliases] if n]
        clauses = re.split(r"[，,；;。]|\s-\s", unit.text)
        if len(clauses) < 2:
            return 1.0
        total = sum(terms.values()) or 1.0
        for clause in clauses:
            if any(n in clause.lower() for n in names):
                tokens = set(self.search.tokenize(stem_text(clause)))
                share = sum(w for t, w in terms.items() if t in tokens) / total
                return W.CLAUSE_BASE + W.CLAUSE_GAIN * share
        return W.CLAUSE_BASE

    def _admit(
        self, eid: str, named: set[str], wanted: frozenset[NodeType], *, subject: bool
    ) -> str | None:
        """The entity a candidate counts for (an edition rolls up into its product), or None when
        it cannot answer: a thing the question names, or of a kind nobody picks."""
        if eid not in self.graph:
            return None
        node_type = self.graph.entity(eid).type
        if node_type not in CHOOSABLE and node_type not in wanted:
            return None
        if (
            not subject
            and wanted
            and node_type not in wanted
            and not (node_type in SOFTWARE and wanted & SOFTWARE)
        ):
            return None
        target = eid
        parent = self._parent(eid)
        if parent is not None and parent not in named:
            target = parent
        return None if target in named else target

    def option_candidates(
        self, frame: QuestionFrame, ranked: list[RankedUnit], named: Set[str] = frozenset()
    ) -> list[tuple[str, float, list[EvidenceUnit]]]:
        """The question's own alternatives, best first (`qa.decide.graph.options`). An
        alternative that is no entity ("runtime", a table's "4090") is recommended as a value
        the sources state."""
        options = frame.options
        nodes = [self.graph.find(o.text) for o in options]
        cores = [normalize_name(o.text) for o in options]
        option_tokens = {t for o in options for t in self.search.tokenize(stem_text(o.text))}
        terms = [
            normalize_name(t)
            for t in self._question_terms(frame, [o.text for o in options])
            if t not in option_tokens
        ]
        pool = [r.unit for r in ranked[: W.OPTION_UNITS]]
        docs = {u.doc for u in pool[: W.OPTION_DOCUMENTS]}
        pooled = {u.id for u in pool}  # ids: comparing units field by field is slow
        for unit in self.search.units:
            if unit.doc in docs and unit.id not in pooled:
                text = normalize_name(" ".join([unit.text, *unit.header]))
                if any(c and c in text for c in cores):
                    pool.append(unit)
        weights = {t: w for t, w in self._question_terms(frame).items() if t not in option_tokens}
        by_id = {r.unit.id: r for r in ranked}

        def coverage(k: int) -> tuple[float, list[EvidenceUnit]]:
            node = nodes[k]
            mine = [
                u
                for u in pool
                if (node is not None and (u.subject == node or node in u.mentions))
                or (cores[k] and cores[k] in normalize_name(u.text))
            ]
            scored = sorted(
                (
                    (
                        self.relevance(u, weights, ())
                        * (by_id[u.id].score if u.id in by_id else W.OPTION_UNRANKED),
                        u,
                    )
                    for u in mine
                ),
                key=lambda t: -t[0],
            )
            best = scored[: W.OPTION_COVERAGE_UNITS]
            return sum(s for s, _u in best) / W.OPTION_COVERAGE_SCALE, [u for _s, u in best]

        verdicts = resolve_options(
            options,
            nodes,
            pool,
            frame.text,
            terms,
            coverage,
            tables_only=frame.measured and not frame.choice,
        )
        # "We only have Bar NPUs. Foo-2 or Foo-3?": the alternative the graph links to the rare
        # hardware asked for comes first
        ids = {v.node for v in verdicts if v.node is not None and v.node in self.graph}
        required = [c for c in sorted(named) if c not in ids]
        signs = {eid: self.constraint_signs(eid, required) for eid in ids}
        decisive = self._decisive(required, signs)
        unmet = [
            sum(1 for c in decisive if signs.get(v.node or "", {}).get(c, 0.0) <= 0)
            for v in verdicts
        ]
        order = sorted(range(len(verdicts)), key=lambda k: unmet[k])  # stable: best first
        # the alternative that alone meets the hardware asked for stands whatever the wording
        fits = bool(decisive) and unmet[order[0]] < max(unmet)
        out = []
        for k in order:
            verdict = verdicts[k]
            chosen = k == order[0] and fits
            if not verdict.units or (
                not chosen
                and (
                    verdict.score <= 0 or verdict.score < W.OPTION_CLOSE * verdicts[order[0]].score
                )
            ):
                continue
            node = verdict.node if verdict.node in self.graph else None
            rows = all(u.kind == UnitKind.ROW for u in verdict.units)
            if (
                node is not None
                and rows
                and not any(
                    node in (e.source, e.target) for u in verdict.units for e in self.point(u).edges
                )
            ):
                # the table that decides gives it no edge (a README row naming only it): it is
                # recommended as the name the verbatim row states
                node = None
            eid = node if node is not None else "value:" + verdict.shown
            out.append((eid, verdict.score, verdict.units))
        return out

    def bridge(self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]) -> str | None:
        """The entity the best units lead to that the question does not name and that has units
        of its own (Foo's README points to a kernel library; that library's README says which
        GPUs it runs on)."""
        # an edge from a named thing is the path to follow; a stray subject only where no unit
        # of a named thing leads anywhere
        weight: dict[bool, dict[str, float]] = {True: defaultdict(float), False: defaultdict(float)}
        things = {e for e in named if self.graph.entity(e).type in CHOOSABLE | {NodeType.MODEL}}
        # the named things' own units compete with the retrieved ones on what the question
        # says: a Chinese question's words may find only Chinese documents, while the English
        # README of the thing it names says where it leads
        pool = self.with_own_units(ranked, sorted(things)) if things else ranked
        for score, unit in self.ordered(frame, pool)[: W.BRIDGE_UNITS]:
            from_named = unit.subject in things or bool(things & set(unit.mentions))
            for eid in [*unit.mentions, unit.subject]:
                if eid is None or eid in named or eid not in self.graph:
                    continue
                if self.graph.entity(eid).type not in CHOOSABLE:
                    continue
                own = len(self.search.by_subject.get(eid, []))
                told = sum(1 for u in self.search.by_mention.get(eid, []) if u.subject in named)
                if own < W.BRIDGE_OWN_UNITS and told == 0:
                    continue
                weight[from_named][eid] += score
        led = weight[True] or weight[False]
        if not led:
            return None
        return max(led.items(), key=lambda kv: (kv[1], kv[0]))[0]
