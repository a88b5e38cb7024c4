"""What the graph's recommendation structures say about a question (no LLM, instant).

Essays state advice as structure: decision trees, rankings, "for X: use Y" lists, scale and
rating tables. `GraphComposer.situational` scores what the situations a question matches
recommend (and what its constraints select), with the paths that support each pick, the route
and comparison facts around them, and the disagreements between sources about what the question
names. The evidence composer (`qa.decide.graph.evidence`) builds the answer from these and
from the evidence units; it decides when to decline.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ingest.patterns import DEFAULT_CUE
from ingest.text import Tokenizer
from kg import cues
from kg.graph import KnowledgeGraph
from kg.schema import FUNCTIONAL_RELATIONS, IDEA_TYPES, SOLUTION_TYPES, NodeType, RelationType
from qa import weights as W
from qa.read.understand import has_choice_cue
from qa.retrieve import path_from_relations
from qa.schema import (
    Conflict,
    EvidenceBundle,
    GraphPath,
    PathEdge,
    Question,
    QuestionKind,
)

__all__ = ["GraphComposer", "asks_to_choose", "find_conflicts"]

#: Relations only the structure of an essay yields (tables, trees, rankings, exports): their
#: paths are facts on their own; the evidence composer states the rest from its units.
_STRUCTURED = frozenset(
    {
        RelationType.RECOMMENDED_FOR,
        RelationType.NOT_RECOMMENDED,
        RelationType.SUITS_SCALE,
        RelationType.RATED,
        RelationType.RANKS_ABOVE,
        RelationType.HAS_PROPERTY,
        RelationType.DEFAULT_MODE,
        RelationType.EXPORTS_TO,
        RelationType.SHARDS,
    }
)
#: Relations that are recommendations in themselves (a situation's pick, a scale, a rating).
_SITUATIONAL = frozenset(
    {
        RelationType.RECOMMENDED_FOR,
        RelationType.NOT_RECOMMENDED,
        RelationType.SUITS_SCALE,
        RelationType.RATED,
        RelationType.RANKS_ABOVE,
    }
)
_ROUTE_RELATIONS = frozenset({RelationType.EXPORTS_TO, RelationType.USED_WITH})
#: What a person picks: a question naming one of these is about something the graph covers.
_CHOOSABLE = SOLUTION_TYPES - IDEA_TYPES - {NodeType.HARDWARE}
#: Linked nodes that many things relate to: a link to one does not make a question about them.
_GENERIC = IDEA_TYPES | {NodeType.HARDWARE}
#: A yes/no question: "Is X still recommended…?", "Should I still use X?", "X 还推荐吗？", "是否…".
_YES_NO = cues.pattern("question.yes_no_should")
#: Kinds that ask about something rather than for something.
_ABOUT_KINDS = frozenset({QuestionKind.FACT, QuestionKind.HOW_TO})


_ANSWER_TYPES: list[tuple[re.Pattern[str], frozenset[NodeType]]] = [
    (cues.pattern("question.type.library"), frozenset({NodeType.LIBRARY})),
    (cues.pattern("question.type.framework"), frozenset({NodeType.FRAMEWORK})),
    (cues.pattern("question.answer_type.engine"), frozenset({NodeType.INFERENCE_ENGINE})),
    (cues.pattern("question.type.parallel"), frozenset({NodeType.PARALLEL_STRATEGY})),
    (cues.pattern("question.answer_type.tool"), frozenset({NodeType.TOOL, NodeType.LIBRARY})),
]


def expected_types(question: str) -> frozenset[NodeType]:
    """The node types a question asks for ("哪个库" -> Library), if it says.

    >>> sorted(expected_types("用 HuggingFace 的哪个库？"))
    [<NodeType.LIBRARY: 'Library'>]
    """
    return frozenset().union(*asked_order(question))


def asked_order(question: str) -> list[frozenset[NodeType]]:
    """The node types a question asks for, in the order it asks ("先学哪个框架，再用什么引擎").

    >>> [sorted(t) for t in asked_order("Which framework to learn, and which engine to serve?")]
    [[<NodeType.FRAMEWORK: 'Framework'>], [<NodeType.INFERENCE_ENGINE: 'InferenceEngine'>]]
    """
    found = []
    for pattern, types in _ANSWER_TYPES:
        match = pattern.search(question)
        if match is not None:
            found.append((match.start(), types))
    return [types for _start, types in sorted(found, key=lambda t: t[0])]


def asks_to_choose(question: Question) -> bool:
    """Whether a question asks to pick something: a choice cue, or the kind of thing it wants.

    A question of kind CHOOSE without a choice cue ("What exactly does FSDP shard?") got that
    kind because nothing else matched; it does not ask to choose. Nor does a yes/no question
    whose cue is about what it names ("Is DataParallel still recommended?", "还推荐 TF 吗？").
    """
    if expected_types(question.text):
        return True
    return (
        question.kind == QuestionKind.CHOOSE
        and has_choice_cue(question.text)
        and not _YES_NO.search(question.text)
    )


def find_conflicts(graph: KnowledgeGraph) -> list[Conflict]:
    """Functional relations whose targets differ between documents (versions permitting).

    Two claims conflict when they come from different documents, name different targets, and are
    not limited to different versions ("TensorFlow 1.x" vs "TensorFlow 2.x" do not conflict).
    """
    claims: dict[tuple[str, str], list[tuple[str, str | None, PathEdge]]] = defaultdict(list)
    for rel in graph.relations():
        if rel.relation not in FUNCTIONAL_RELATIONS:
            continue
        for ev in rel.evidence:
            edge = PathEdge(
                source=rel.source, relation=rel.relation, target=rel.target, evidence=[ev]
            )
            claims[(rel.source, rel.relation.value)].append((rel.target, rel.qualifier, edge))
    conflicts = []
    for (subject, relation), items in sorted(claims.items()):
        disagreeing: dict[tuple[str, str], PathEdge] = {}
        for target_a, version_a, edge_a in items:
            for target_b, version_b, edge_b in items:
                doc_a, doc_b = edge_a.evidence[0].doc, edge_b.evidence[0].doc
                if target_a >= target_b or doc_a == doc_b:
                    continue
                if version_a and version_b and version_a != version_b:
                    continue
                disagreeing[(target_a, doc_a)] = edge_a
                disagreeing[(target_b, doc_b)] = edge_b
        if disagreeing:
            conflicts.append(
                Conflict(subject=subject, relation=relation, claims=list(disagreeing.values()))
            )
    return conflicts


class GraphComposer:
    """Answers from an evidence bundle with no LLM.

    `tokenizer` is the store's (its lexical index's): word overlaps count the words retrieval saw.
    """

    def __init__(
        self, graph: KnowledgeGraph, conflicts: list[Conflict], tokenizer: Tokenizer
    ) -> None:
        self.graph = graph
        self.conflicts = conflicts
        self.tokenizer = tokenizer

    # -- recommendations -----------------------------------------------------------------------
    def candidates(
        self, question: Question, bundle: EvidenceBundle
    ) -> dict[str, tuple[float, list[GraphPath]]]:
        """Recommended entities with their scores and the paths that support them."""
        contributions: dict[str, list[float]] = defaultdict(list)
        penalty: dict[str, float] = defaultdict(float)
        support: dict[str, list[GraphPath]] = defaultdict(list)
        seeds = {**dict.fromkeys(bundle.linked, 1.0), **bundle.situations}
        linked = set(bundle.linked)
        # a question about a named thing that does not ask to choose ("What does FSDP shard across
        # the GPUs?") recommends only that thing or what it leads to, never what merely shares a
        # generic link with the question (every engine that runs on a GPU)
        focus = self.focus(question, bundle)
        about = question.kind in _ABOUT_KINDS
        for path in bundle.paths:
            first = path.edges[0]
            relation = RelationType(first.relation)
            rel = self.graph.edge(first.source, first.relation, first.target)
            if rel is None:
                continue
            if relation == RelationType.RECOMMENDED_FOR and first.source in seeds:
                order = rel.rank or 1
                weight = seeds[first.source] / (1 + W.RANK_DECAY * (order - 1))
                target, seed = first.target, first.source
            elif relation == RelationType.NOT_RECOMMENDED and first.source in seeds:
                penalty[first.target] += W.NOT_RECOMMENDED_PENALTY * seeds[first.source]
                continue
            elif relation == RelationType.SUITS_SCALE and first.target in seeds:
                weight, target, seed = seeds[first.target], first.source, first.target
            elif relation == RelationType.RUNS_ON and first.target in linked:
                weight, target, seed = W.RUNS_ON_WEIGHT, first.source, first.target
            elif relation == RelationType.RATED and first.target in linked and rel.stars:
                weight, target, seed = rel.stars / 5, first.source, first.target
            else:
                continue
            if self.graph.entity(target).type not in SOLUTION_TYPES or target in _hardware(
                self.graph, linked
            ):
                continue
            if (
                focus is not None
                and target not in focus
                and (about or (seed in linked and self.graph.entity(seed).type in _GENERIC))
            ):
                continue
            contributions[target].append(weight)
            support[target].append(path)
        wanted = expected_types(question.text)
        scores = {}
        choosable_linked = {e for e in linked if self.graph.entity(e).type in _CHOOSABLE}
        if len(choosable_linked) >= 2 and choosable_linked & set(contributions):
            # "A 和 B 哪个更…": the answer is one of the things compared
            contributions = defaultdict(
                list, {k: v for k, v in contributions.items() if k in choosable_linked}
            )
        for target, weights in contributions.items():
            # the best single reason counts: many weak matches must not outvote one strong one
            score = max(weights) - penalty[target]
            runs_on = {
                r.target
                for r in self.graph.out_relations(target)
                if r.relation == RelationType.RUNS_ON
            }
            if runs_on & linked:
                score *= W.RUNS_ON_GAIN
            if self.graph.entity(target).type in wanted:
                score *= W.WANTED_TYPE_GAIN
            support[target] = _distinct_reasons(support[target])
            if score > 0:
                scores[target] = (score, support[target])
        return scores

    def focus(self, question: Question, bundle: EvidenceBundle) -> set[str] | None:
        """What a question that names a thing and does not ask to choose may be answered with.

        None when the question asks to choose (a choice cue, or the kind of answer it wants:
        "which engine?") or names nothing choosable; otherwise the named choosable things and
        what they lead to in one or two export/integration steps (PyTorch -> ONNX -> TensorRT).
        A question naming only one thing is about it: that thing is not recommended back.
        """
        named = {e for e in bundle.linked if self.graph.entity(e).type in _CHOOSABLE}
        if not named or asks_to_choose(question):
            return None
        reached = set(named)
        frontier = set(named)
        for _step in range(2):
            frontier = {
                r.target
                for node in frontier
                for r in self.graph.out_relations(node)
                if r.relation in _ROUTE_RELATIONS
            } - reached
            reached |= frontier
        if len(named) == 1:
            reached -= named  # "What does FSDP shard?" is answered, not "Recommendation: FSDP"
        return reached

    def ranked(
        self, question: Question, bundle: EvidenceBundle
    ) -> list[tuple[str, float, list[GraphPath]]]:
        """Recommendations best first: the top overall, then the best of each other kind."""
        cands = self.candidates(question, bundle)
        ordered = sorted(cands.items(), key=lambda kv: (-kv[1][0], kv[0]))
        if not ordered:
            return []
        top_score = ordered[0][1][0]
        chosen: list[tuple[str, float, list[GraphPath]]] = []
        for node, (score, paths) in ordered:
            if score < W.GRAPH_CLOSE * top_score or len(chosen) >= W.MAX_GRAPH_PICKS:
                break
            chosen.append((node, score, paths))
        asked = asked_order(question.text)
        if len(asked) >= 2:
            # a two-part question ("which framework, and which engine?") is answered in its order
            first = [c for c in chosen if self.graph.entity(c[0]).type in asked[0]]
            if first:
                chosen.remove(first[0])
                chosen.insert(0, first[0])
        return chosen

    def relevant_conflicts(self, question: Question, bundle: EvidenceBundle) -> list[Conflict]:
        """Disagreements about what the question names."""
        linked = set(bundle.linked)
        found = []
        for conflict in self.conflicts:
            if conflict.subject not in linked:
                continue
            targets = {c.target for c in conflict.claims}
            if targets & linked or DEFAULT_CUE.search(question.text):
                found.append(conflict)
        return found

    def facts(self, question: Question, bundle: EvidenceBundle, limit: int = 4) -> list[GraphPath]:
        """Paths that state facts about the linked entities, most relevant first.

        An edge between two linked entities (PyTorch -RATED-> Ease of Use) ranks first; then edges
        of one linked entity by the words their quotes share with the question. One fact per
        quote. When the question names something to choose, an edge that touches only a generic
        link (GPU, CPU) is not a fact about what it asks.
        """
        words = set(self.tokenizer.tokenize(question.text))
        linked = set(bundle.linked) | set(bundle.situations)
        generic = {e for e in linked if self.graph.entity(e).type in _GENERIC}
        names_one = any(self.graph.entity(e).type in _CHOOSABLE for e in bundle.linked)
        chosen: dict[tuple[str, str, str, str], tuple[float, GraphPath]] = {}
        for path in bundle.paths:
            edge = path.edges[0]
            ends = {edge.source, edge.target} & linked
            if not ends or (names_one and ends <= generic):
                continue
            quote = " ".join(ev.quote for ev in edge.evidence)
            overlap = len(words & set(self.tokenizer.tokenize(quote)))
            relevance = (1 + overlap) * path.score
            key = (edge.source, edge.relation, edge.target, quote)
            if key not in chosen or chosen[key][0] < relevance:
                chosen[key] = (relevance, GraphPath(edges=[edge], score=path.score))
        ranked = sorted(chosen.values(), key=lambda kv: (-kv[0], kv[1].id))
        # one fact per quote: four edges drawn from one sentence say one thing, and would crowd
        # out what other sentences say about the same entity
        quotes: set[str] = set()
        facts = []
        for _s, path in ranked:
            quote = " ".join(ev.quote for ev in path.edges[0].evidence)
            if quote in quotes:
                continue
            quotes.add(quote)
            facts.append(path)
            if len(facts) >= limit:
                break
        return facts

    def by_situation(
        self, bundle: EvidenceBundle, shown: set[str], limit: int = 4
    ) -> list[GraphPath]:
        """For each well-matched situation, its first recommendation (multi-part questions)."""
        paths: list[GraphPath] = []
        for situation, score in sorted(bundle.situations.items(), key=lambda kv: (-kv[1], kv[0])):
            if score < W.SITUATION_FLOOR or len(paths) >= limit:
                break
            best = [
                p
                for p in bundle.paths
                if p.edges[0].source == situation
                and p.edges[0].relation == RelationType.RECOMMENDED_FOR.value
            ]
            if best and best[0].id not in shown:
                paths.append(best[0])
                shown.add(best[0].id)
        return paths

    def routes(self, bundle: EvidenceBundle, targets: list[str], limit: int = 2) -> list[GraphPath]:
        """How to get from what the question names to what is recommended.

        "I trained in PyTorch … lowest latency on NVIDIA": PyTorch -EXPORTS_TO-> ONNX
        -USED_WITH-> TensorRT, a path of one or two export/integration edges.
        """
        starts = [
            e for e in bundle.linked if self.graph.entity(e).type in _CHOOSABLE and e not in targets
        ]
        found: dict[str, GraphPath] = {}
        for target in targets:
            for start in starts:
                for first in self.graph.out_relations(start):
                    if first.relation not in _ROUTE_RELATIONS:
                        continue
                    if first.target == target:
                        path = path_from_relations([first], 1.0)
                        found.setdefault(path.id, path)
                        continue
                    for second in self.graph.out_relations(first.target):
                        if second.relation in _ROUTE_RELATIONS and second.target == target:
                            path = path_from_relations([first, second], 1.0)
                            found.setdefault(path.id, path)
        return list(found.values())[:limit]

    def comparison(self, bundle: EvidenceBundle) -> list[GraphPath]:
        """Edges from each named choosable thing to each named criterion (a comparison table)."""
        linked = bundle.linked
        criteria = [c for c in linked if self.graph.entity(c).type == NodeType.CRITERION]
        things = [e for e in linked if self.graph.entity(e).type in _CHOOSABLE]
        rows = []
        for thing in things:
            for criterion in criteria:
                for rel in self.graph.out_relations(thing):
                    if rel.target == criterion:
                        rows.append(path_from_relations([rel], 1.0))
        return rows

    # -- structured parts for the evidence composer --------------------------------------------
    def situational(
        self, question: Question, bundle: EvidenceBundle
    ) -> tuple[list[tuple[str, list[GraphPath]]], list[GraphPath], list[Conflict]]:
        """What the graph's explicit recommendations say: entities recommended for the situations
        the question matches (best first, with their paths), fact and route paths, and the
        disagreements about what it names. Only recommendation-shaped relations count here (a
        `situation RECOMMENDED_FOR x`, a scale, a rating, a ranking): the evidence composer
        answers from everything else."""
        ranked = []
        for node, _score, paths in self.ranked(question, bundle):
            kept = [p for p in paths if RelationType(p.edges[0].relation) in _SITUATIONAL]
            if kept:
                ranked.append((node, kept))
        facts = self.comparison(bundle) + self.facts(question, bundle, limit=3)
        facts += self.by_situation(bundle, {p.id for _n, ps in ranked for p in ps[:3]})
        facts = [p for p in facts if all(RelationType(e.relation) in _STRUCTURED for e in p.edges)]
        # the route from what the question names to the picks (PyTorch -> ONNX -> OpenVINO)
        facts = self.routes(bundle, [node for node, _p in ranked[:2]]) + facts
        return (
            ranked,
            list({p.id: p for p in facts}.values()),
            self.relevant_conflicts(question, bundle),
        )


def _distinct_reasons(paths: list[GraphPath]) -> list[GraphPath]:
    """Best first, one path per quote: three reasons should say three different things."""
    seen: set[str] = set()
    distinct = []
    for path in sorted(paths, key=lambda p: (-p.score, p.id)):
        quote = path.edges[0].evidence[0].quote if path.edges[0].evidence else path.id
        if quote not in seen:
            seen.add(quote)
            distinct.append(path)
    return distinct


def _hardware(graph: KnowledgeGraph, ids: set[str]) -> set[str]:
    return {i for i in ids if graph.entity(i).type == NodeType.HARDWARE}
