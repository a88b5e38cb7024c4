"""The graph composer: a deterministic answerer that needs no LLM, always available, instant.

It scores what the matched situations recommend (and what the question's constraints select),
orders recommendations best first, backs each with the cited paths retrieval produced, reports
disagreements between sources, and declines when the sources do not cover the question.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ingest.patterns import DEFAULT_CUE
from ingest.text import QUESTION_STOPWORDS, Tokenizer, split_sentences
from kg.graph import KnowledgeGraph
from kg.schema import FUNCTIONAL_RELATIONS, SOLUTION_TYPES, NodeType, RelationType
from qa.render import AnswerText
from qa.retrieve import path_from_relations
from qa.schema import (
    Answer,
    Citation,
    Conflict,
    EvidenceBundle,
    Fallback,
    FallbackKind,
    GraphPath,
    PathEdge,
    Question,
    QuestionKind,
    Recommendation,
    RetrievedChunk,
)
from qa.understand import has_choice_cue

__all__ = ["GraphComposer", "asks_to_choose", "find_conflicts", "source_sentences"]

_PRICE = re.compile(r"多少钱|价格|售价|费用|per hour|cost|price|pricing|\$|美元|元/", re.I)
_MONEY = re.compile(r"\d\s*(?:元|美元|USD|\$)|\$\s*\d|价格|price", re.I)
_MAX_RECOMMENDATIONS = 4
_ROUTE_RELATIONS = frozenset({RelationType.EXPORTS_TO, RelationType.USED_WITH})
#: What a person picks: a question naming one of these is about something the graph covers.
_CHOOSABLE = SOLUTION_TYPES - {NodeType.HARDWARE, NodeType.CONCEPT}
#: Linked nodes that many things relate to: a link to one does not make a question about them.
_GENERIC = frozenset({NodeType.HARDWARE, NodeType.CONCEPT})
#: A yes/no question: "Is X still recommended…?", "Should I still use X?", "X 还推荐吗？", "是否…".
_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|should|can|could|would|will|has|have)\b|"
    r"吗\s*[？?]?\s*$|是否|是不是",
    re.I,
)
#: Kinds that ask about something rather than for something.
_ABOUT_KINDS = frozenset({QuestionKind.FACT, QuestionKind.HOW_TO})


_ANSWER_TYPES: list[tuple[re.Pattern[str], frozenset[NodeType]]] = [
    (re.compile(r"库|\blibrar(?:y|ies)\b", re.I), frozenset({NodeType.LIBRARY})),
    (re.compile(r"框架|\bframeworks?\b", re.I), frozenset({NodeType.FRAMEWORK})),
    (
        re.compile(r"推理引擎|推理框架|推理方案|引擎|\b(?:inference )?engines?\b", re.I),
        frozenset({NodeType.INFERENCE_ENGINE}),
    ),
    (re.compile(r"并行|\bparallel", re.I), frozenset({NodeType.PARALLEL_STRATEGY})),
    (re.compile(r"工具|\btools?\b", re.I), frozenset({NodeType.TOOL, NodeType.LIBRARY})),
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

    # -- decisions ----------------------------------------------------------------------------
    def abstain_reason(self, question: Question, bundle: EvidenceBundle) -> str | None:
        """Why the sources cannot answer this question, or None if they can."""
        linked_solutions = [e for e in bundle.linked if self.graph.entity(e).type in _CHOOSABLE]
        best_situation = max(bundle.situations.values(), default=0.0)
        if (
            not bundle.linked
            and best_situation < 0.5
            and self.text_coverage(question, bundle) < 0.6
            and _named_section(question.text, bundle.chunks) is None
        ):
            return "no entity or situation in the question is covered by the sources"
        if (
            question.unknown_entities
            and not question.injection
            and (
                not linked_solutions
                or question.kind != QuestionKind.CHOOSE
                or not bundle.situations
            )
        ):
            return "the sources do not cover " + ", ".join(question.unknown_entities)
        if _PRICE.search(question.text) and not any(
            _MONEY.search(ev.quote) for p in bundle.paths for e in p.edges for ev in e.evidence
        ):
            return "the sources give no prices"
        if question.injection and not linked_solutions and best_situation < 0.5:
            return "the question asks for something other than what the sources cover"
        return None

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
                weight = seeds[first.source] / (1 + 0.6 * (order - 1))
                target, seed = first.target, first.source
            elif relation == RelationType.NOT_RECOMMENDED and first.source in seeds:
                penalty[first.target] += 2 * seeds[first.source]
                continue
            elif relation == RelationType.SUITS_SCALE and first.target in seeds:
                weight, target, seed = seeds[first.target], first.source, first.target
            elif relation == RelationType.RUNS_ON and first.target in linked:
                weight, target, seed = 0.4, first.source, first.target
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
            if len(path.edges) > 1:
                weight *= 1.5
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
            # the best single reason counts fully, further reasons a little: many weak matches
            # must not outvote one strong one
            ordered = sorted(weights, reverse=True)
            score = ordered[0] + 0.3 * sum(ordered[1:]) - penalty[target]
            runs_on = {
                r.target
                for r in self.graph.out_relations(target)
                if r.relation == RelationType.RUNS_ON
            }
            if runs_on & linked:
                score *= 1.5
            if any(
                r.source in choosable_linked and r.relation in _ROUTE_RELATIONS
                for r in self.graph.in_relations(target)
            ):
                score *= 1.5  # it works with what the question already uses ("TF 生态" -> TFLite)
            if self.graph.entity(target).type in wanted:
                score *= 2.0
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
            if score < 0.34 * top_score or len(chosen) >= _MAX_RECOMMENDATIONS:
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
        linked = set(bundle.linked) | {s for s, v in bundle.situations.items() if v >= 0.6}
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
            relevance = (1 + overlap + (3 if len(ends) == 2 else 0)) * path.score
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
            if score < 0.45 or len(paths) >= limit:
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

    def text_coverage(self, question: Question, bundle: EvidenceBundle) -> float:
        """Share of the question's content words that one retrieved chunk has (the best one)."""
        words = {
            w
            for w in self.tokenizer.tokenize(question.text)
            if len(w) > 1 and w not in QUESTION_STOPWORDS
        }
        if not words:
            return 0.0
        found = [words & set(self.tokenizer.tokenize(chunk.text)) for chunk in bundle.chunks]
        return max((len(f) for f in found), default=0) / len(words)

    def source_sentences(
        self, question: Question, bundle: EvidenceBundle, limit: int = 3
    ) -> list[tuple[str, str]]:
        """`source_sentences` with this composer's tokenizer."""
        return source_sentences(question, bundle, self.tokenizer, limit)

    # -- the answer ---------------------------------------------------------------------------
    def compose(self, question: Question, bundle: EvidenceBundle) -> Answer:
        """The grounded answer (or a declining one)."""
        text = AnswerText(question.language, self.graph)
        reason = self.abstain_reason(question, bundle)
        if reason is not None:
            return Answer(
                question=question.text,
                answer=text.abstain(reason),
                abstained=True,
                backend="graph",
                notes=[f"abstained: {reason}"],
                fallback=Fallback(kind=FallbackKind.NOT_COVERED, detail=reason),
            )
        ranked = self.ranked(question, bundle)
        # with nothing to recommend, the facts are the answer
        shown = 4 if ranked else 6
        if ranked and question.kind not in (
            QuestionKind.FACT,
            QuestionKind.HOW_TO,
            QuestionKind.COMPARE,
        ):
            facts = self.facts(question, bundle, limit=2)
        else:
            facts = self.facts(question, bundle, limit=shown)
        comparison = self.comparison(bundle)
        facts = list({p.id: p for p in comparison + facts}.values())[: max(shown, len(comparison))]
        # a fact that is already a recommendation's reason (same edge, same quote) is not repeated
        reasons = {_said(p) for _node, _score, paths in ranked for p in paths[:3]}
        facts = [p for p in facts if _said(p) not in reasons]
        conflicts = self.relevant_conflicts(question, bundle)
        sentences = self.source_sentences(question, bundle)
        if not ranked and not facts and not conflicts and not sentences:
            reason = "nothing in the graph or the text supports an answer"
            return Answer(
                question=question.text,
                answer=text.abstain(reason),
                abstained=True,
                backend="graph",
                notes=[f"abstained: {reason}"],
                fallback=Fallback(kind=FallbackKind.NOT_COVERED, detail=reason),
            )
        recommendations = [
            Recommendation(id=node, name=self.graph.entity(node).name, reason=text.reason(paths[0]))
            for node, _score, paths in ranked
        ]
        by_situation = self.by_situation(bundle, {p.id for _n, _s, ps in ranked for p in ps[:3]})
        routes = self.routes(bundle, [node for node, _s, _p in ranked[:2]])
        cited: list[GraphPath] = []
        for _node, _score, paths in ranked:
            cited.extend(paths[:3])
        cited.extend(routes)
        cited.extend(facts)
        cited.extend(by_situation)
        cited.extend(
            GraphPath(edges=c.claims[i : i + 1]) for c in conflicts for i in range(len(c.claims))
        )
        unique = list({p.id: p for p in cited}.values())
        body = text.body(
            recommendations,
            ranked,
            facts + by_situation,
            conflicts,
            sentences,
            question.injection,
            routes=routes,
        )
        return Answer(
            question=question.text,
            answer=body,
            recommendations=recommendations,
            citations=[Citation(path=p.edges) for p in unique],
            conflicts=[
                c.model_copy(update={"summary": text.conflict_summary(c)}) for c in conflicts
            ],
            backend="graph",
        )


def _said(path: GraphPath) -> tuple[str, tuple[str, ...]]:
    """What a rendered path says: its triples and its quotes."""
    return path.id, tuple(ev.quote for edge in path.edges for ev in edge.evidence)


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


_NUMBERING = re.compile(
    r"^\s*(?:[一二三四五六七八九十]+[、.]|\d+(?:\.\d+)*[、.]?|[（(]\d+[)）])\s*"
)
_ITEM = re.compile(r"^\s*(?:[-•*]|\d+[.、)])\s*")


def _named_section(question: str, chunks: list[RetrievedChunk]) -> list[tuple[str, str]] | None:
    """The points of the section a question names by its title, or None.

    >>> from qa.schema import RetrievedChunk
    >>> text = "三个提醒：\\n- 别把框架当信仰：会变。\\n- 换框架成本很高：别换。"
    >>> chunk = RetrievedChunk(id="c", doc="d.txt", start=0, end=len(text), text=text,
    ...                        heading_path=("指南", "六、权衡与边界"), score=1.0)
    >>> [s for s, _d in _named_section("“权衡与边界”一节说了什么？", [chunk])]
    ['三个提醒：', '- 别把框架当信仰：会变。', '- 换框架成本很高：别换。']
    """
    folded = question.casefold()
    for chunk in chunks:
        if not chunk.heading_path:
            continue
        title = _NUMBERING.sub("", chunk.heading_path[-1]).strip().casefold()
        if len(title) < 4 or title not in folded:
            continue
        spans = split_sentences(chunk.text)
        sentences = [chunk.text[s:e] for s, e in spans]
        items = [t for t in sentences if _ITEM.match(t)]
        # the section's lead sentence (or its first item, when the chunk starts inside the list)
        points = (
            [sentences[0], *(t for t in items if t != sentences[0])] if items else sentences[:3]
        )
        return [(t, chunk.doc) for t in points[:6]]
    return None


def source_sentences(
    question: Question, bundle: EvidenceBundle, tokenizer: Tokenizer, limit: int = 3
) -> list[tuple[str, str]]:
    """The chunk sentences that share the most words with the question: (sentence, doc).

    A question that names a section ("“权衡与边界”一节…") gets that section's points (its list
    items, else its first sentences); a source sentence that is itself a question comes with
    the sentence that answers it.
    """
    section = _named_section(question.text, bundle.chunks)
    if section is not None:
        return section
    words = {w for w in tokenizer.tokenize(question.text) if w not in QUESTION_STOPWORDS}
    names = [n.casefold() for e in question.entities for n in (e.surface,)]
    scored = []
    for rank, chunk in enumerate(bundle.chunks):
        spans = split_sentences(chunk.text)
        for index, (start, end) in enumerate(spans):
            sentence = chunk.text[start:end]
            if len(sentence) < 12:
                continue
            overlap = len(words & set(tokenizer.tokenize(sentence)))
            overlap += 2 * sum(1 for n in names if n and n in sentence.casefold())
            if overlap >= 2:
                if sentence.rstrip().endswith(("？", "?")) and index + 1 < len(spans):
                    sentence = chunk.text[start : spans[index + 1][1]]  # and its answer
                scored.append((overlap - 0.1 * rank, sentence, chunk.doc))
    scored.sort(key=lambda t: -t[0])
    seen: set[str] = set()
    out = []
    for _s, sentence, doc in scored:
        if sentence not in seen:
            seen.add(sentence)
            out.append((sentence, doc))
        if len(out) >= limit:
            break
    return out
