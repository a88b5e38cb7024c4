"""The evidence composer: answers from the units retrieval found, cited by the graph edges they are.

1. **Answerable?** A question is declined when the specific names of its asking sentence (or of a
   fact question) appear in no document, when it asks for a price or a rate no retrieved unit
   states, or when nothing relevant was retrieved. Knowing a name in the lexicon does not make it
   covered; only evidence does.
2. **Candidates** (a question that asks to choose): the entities the retrieved units are about,
   or the options the question names. Each is scored by how much retrieved evidence is about it and
   how much of the question its own units cover; a product's edition rolls up into the product
   unless the question already names the product.
3. **Points**: the recommendation's best units (its definition first), an alternative, caveats;
   for other questions the best units overall, one per named entity first (two documents for a
   two-hop question). Each point carries the graph edges its unit is evidence of.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from ingest.markup import strip_markup
from ingest.units import stem_text, unit_index_text
from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import Entity, NodeType, RelationType, normalize_name
from qa.frame import QuestionFrame, named_things
from qa.options import resolve_options
from qa.schema import (
    AbstainReason,
    AnswerDraft,
    Conflict,
    DraftPoint,
    DraftRecommendation,
    GraphPath,
    Language,
    PathEdge,
)
from qa.units import STOPWORDS, RankedUnit, UnitSearch, bilingual_search

__all__ = ["EvidenceComposer"]

_CHOOSABLE = frozenset(
    {
        NodeType.FRAMEWORK,
        NodeType.LIBRARY,
        NodeType.INFERENCE_ENGINE,
        NodeType.TOOL,
        NodeType.TECHNIQUE,
        NodeType.FORMAT,
        NodeType.PARALLEL_STRATEGY,
    }
)
_SOFTWARE = frozenset(
    {NodeType.FRAMEWORK, NodeType.LIBRARY, NodeType.INFERENCE_ENGINE, NodeType.TOOL}
)
_MONEY_TEXT = re.compile(r"[$€£¥]\s?\d|\d\s?(?:USD|EUR|美元|元)\b|per hour|/hr\b|每小时", re.I)
_RATE_TEXT = re.compile(
    r"\d\s*(?:tokens?/s|tok/s|t/s|tokens? per second|it/s)|tokens? per second|每秒", re.I
)
_CAVEAT = re.compile(
    r"\bnot\b|\bno longer\b|\bonly\b|\bexperimental\b|\bbeta\b|\bdeprecated\b|\bunsupported\b|"
    r"\bwarning\b|\blimit|不支持|仅|只|暂不|不再|实验",
    re.I,
)
_DEFINES = re.compile(
    r"\s*(?:[（(][^）)]*[）)])?\s*(?:(?:is|are)\s+(?:an?|the|one)\b|(?:lets|enables|provides|allows|"
    r"offers|brings|makes)\b|是(?:一个|一款|一种|一套|一站式)|为您提供|提供了)",
    re.I,
)
_ASKS_WHICH = re.compile(
    r"\bwhich (?:\w+ ){0,2}(?:library|tool|framework|engine|integration|project|backend|one)\b|"
    r"what is it called|哪个库|哪个框架|哪个工具|哪个项目|是哪个|叫什么",
    re.I,
)
_REFERS_BACK = re.compile(
    r"\b(?:it|its|that|this|the same)\b|该库|这个库|这个工具|这个框架|它|其|自己的|本身|同一",
    re.I,
)


def _second_part(question: str) -> str:
    """The last part of a two-part question (what to ask of the entity the first part finds).

    >>> _second_part("Which library is it, and does llamafile build on the same one?")
    'does llamafile build on the same one?'
    """
    parts = re.split(
        r",?\s+and\s+(?=(?:which|what|how|does|do|is|are|can)\b)|[?？]\s*(?=\S)", question
    )
    return parts[-1].strip() if len(parts) > 1 else question


_PART_SPLIT = re.compile(
    r"[,，;；]?\s*\b(?:and|but|also)\s+(?=(?:which|what|how|does|do|did|is|are|can|could|should|"
    r"why|where|when|who)\b)|(?<=[?？])\s*|[，,]\s*(?=(?:还是|那|又|并且|而且|以及))",
    re.I,
)


def question_parts(question: str) -> list[str]:
    """The sub-questions of a question that asks several things (one part: no split).

    >>> question_parts("Does OpenVINO collect telemetry, and how do I opt out?")
    ['Does OpenVINO collect telemetry', 'how do I opt out?']
    >>> question_parts("Which GPU is faster?")
    []
    """
    parts = [p.strip(" ,，") for p in _PART_SPLIT.split(question) if p and p.strip(" ,，")]
    return parts if len(parts) > 1 else []


def _version_after(question: str, entity: Entity) -> str | None:
    """The version a question gives right after an entity's name ("PaddlePaddle 3.0" -> "3.0")."""
    for name in [entity.name, *entity.aliases]:
        m = re.search(re.escape(name) + r"\s*[vV]?(\d+(?:\.\d+)+)", question, re.I)
        if m:
            return m.group(1)
    return None


def _two_part(question: str) -> bool:
    """Whether a question asks two things in a row, the second about what the first finds: it
    asks which thing, then refers back to it.

    >>> _two_part("Which library is it, and does llamafile build on the same one?")
    True
    >>> _two_part("Are there PyTorch wheels for Jetson, and which JetPack version do they need?")
    False
    """
    first = _ASKS_WHICH.search(question)
    return first is not None and _REFERS_BACK.search(question, first.end()) is not None


_RELATION_WORDS: list[tuple[re.Pattern[str], frozenset[RelationType]]] = [
    (re.compile(r"licen[cs]|许可|开源协议", re.I), frozenset({RelationType.LICENSED_UNDER})),
    (
        re.compile(r"requir|\bneed|depend|prerequisite|minimum|要求|需要|依赖|环境", re.I),
        frozenset({RelationType.REQUIRES}),
    ),
    (
        re.compile(
            r"\bsupport|run(?:s)? on|devices?|hardware|platforms?|\btarget|\bgpus?\b|\bnpus?\b|"
            r"支持|运行|硬件|平台|设备|显卡",
            re.I,
        ),
        frozenset({RelationType.RUNS_ON, RelationType.SUPPORTS, RelationType.NOT_SUPPORTED}),
    ),
    (re.compile(r"alternative|instead|替代", re.I), frozenset({RelationType.ALTERNATIVE_TO})),
    (
        re.compile(r"integrat|backend|works? with|集成|后端|搭配", re.I),
        frozenset({RelationType.USED_WITH, RelationType.SUPPORTS}),
    ),
    (re.compile(r"export|convert|导出|转换", re.I), frozenset({RelationType.EXPORTS_TO})),
]


def asked_relations(question: str) -> frozenset[RelationType]:
    """The graph relations a question asks about, from its predicate words.

    >>> sorted(asked_relations("what licences do PyTorch and TensorFlow use?"))
    [<RelationType.LICENSED_UNDER: 'LICENSED_UNDER'>]
    """
    found: set[RelationType] = set()
    for pattern, relations in _RELATION_WORDS:
        if pattern.search(question):
            found |= relations
    return frozenset(found)


_VAGUE_PREFIXES = frozenset(
    t.prefix for t in (NodeType.CRITERION, NodeType.CONCEPT, NodeType.SCENARIO, NodeType.PERSONA)
)
_DISAGREE = re.compile(
    r"\bdisagree|\bagree\b|consistent|contradict|conflict|一致|矛盾|分歧|说法不同|说法一样", re.I
)
_CJK_TEXT = re.compile(r"[\u4e00-\u9fff]")
_VERSION_HINT = re.compile(r"\d+\.\d+|\bv\d")
_NUMBER_HINT = re.compile(r"\d")


_NUM = r"\d+(?:\.\d+)?\s*"
_DIMENSIONS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (
        re.compile(r"faster|speed|fast|提速|加速|快多少|速度", re.I),
        re.compile(rf"{_NUM}(?:×|x\b|倍)|{_NUM}%|(?:faster|speedup|提速|加速)", re.I),
    ),
    (
        re.compile(r"memory|vram|显存|内存", re.I),
        re.compile(
            rf"{_NUM}(?:[GMT]i?B)\b|{_NUM}%\s*(?:less|lower|fewer)|less (?:memory|vram)", re.I
        ),
    ),
    (
        re.compile(r"how long|time|多久|时间", re.I),
        re.compile(rf"{_NUM}(?:h\b|hours?|min(?:utes)?\b|seconds?|小时|分钟|天)|\(\d+h\)", re.I),
    ),
    (
        re.compile(r"parameters?|参数|规模|多大", re.I),
        re.compile(rf"{_NUM}(?:[BTM]\b|万亿|千亿|亿|billion|trillion)|\d+[BT]\b", re.I),
    ),
    (re.compile(r"\bversions?\b|版本", re.I), _VERSION_HINT),
]


def _answer_hint(question: str) -> re.Pattern[str] | None:
    """The shape of the value a question asks for, when it says: a speed-up, an amount of
    memory, a duration, a model size, a version, else any number.

    >>> bool(_answer_hint("到底能提速多少？").search("提供 170% 的训练速度"))
    True
    """
    asks_value = re.search(
        r"how (?:much|many|long|fast|large)|\bminimum\b|\bwhich versions?\b|"
        r"多少|多久|几|多大|多快|版本",
        question,
        re.I,
    )
    if not asks_value:
        return None
    for asked, shape in _DIMENSIONS:
        if asked.search(question):
            return shape
    return _NUMBER_HINT


_MAX_POINTS = 3


def _width(text: str) -> int:
    """How much a text says, in Latin characters: a Chinese character says about two.

    >>> _width("Runs on GPUs."), _width("支持 Linux 和 macOS。")
    (13, 20)
    """
    return len(text) + len(_CJK_CHAR.findall(text))


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
#: "二、", "3.", "(4)": a section's numbering, not part of its title
_SECTION_NUMBER = re.compile(
    r"^\s*(?:[一二三四五六七八九十]+[、.]|\d+(?:\.\d+)*[、.]?|[（(]\d+[)）])\s*"
)
_MAX_FACTS = 4


class EvidenceComposer:
    """Read-only over one store's graph and units; safe to share across threads."""

    def __init__(
        self, graph: KnowledgeGraph, search: UnitSearch, documents: dict[str, str]
    ) -> None:
        self.graph = graph
        self._lexicon_surfaces = {e.id: e.surfaces for e in search.lexicon.entries.values()}
        self._constraints: list[str] = []
        self.facts_alone = _MAX_FACTS
        self.facts_with_picks = 2
        self.search = search
        self.documents = documents
        self._edges: dict[tuple[str, int], list[PathEdge]] = defaultdict(list)
        for rel in graph.relations():
            for ev in rel.evidence:
                self._edges[(ev.doc, ev.start)].append(
                    PathEdge(
                        source=rel.source, relation=rel.relation, target=rel.target, evidence=[ev]
                    )
                )
        corpus = " ".join(u.text + " " + " ".join(u.header) for u in search.units)
        self._corpus_norm = normalize_name(corpus)
        self._doc_subject: dict[str, str] = {}
        subjects: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for unit in search.units:
            if unit.subject:
                subjects[unit.doc][unit.subject] += 1
        for doc, counts in subjects.items():
            self._doc_subject[doc] = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        self._tokens: dict[str, frozenset[str]] = {}
        self._unit_at = {(u.doc, u.start): u for u in search.units}
        self._doc_units: dict[str, list[EvidenceUnit]] = defaultdict(list)
        self._unit_index: dict[str, int] = {}
        for unit in search.units:
            self._unit_index[unit.id] = len(self._doc_units[unit.doc])
            self._doc_units[unit.doc].append(unit)

    # -- graph paths as points -----------------------------------------------------------------
    def path_points(self, path: GraphPath) -> list[DraftPoint]:
        """Each edge of a path as a point: the unit its evidence lies in, citing the edge."""
        points: list[DraftPoint] = []
        for edge in path.edges:
            if not edge.evidence:
                continue
            ev = edge.evidence[0]
            unit = self._unit_at.get((ev.doc, ev.start)) or next(
                (u for u in self._doc_units.get(ev.doc, []) if u.start <= ev.start < u.end), None
            )
            cited = edge.model_copy(update={"evidence": [ev]})
            if unit is not None and unit.start <= ev.start and ev.end <= unit.end:
                point = self.point(unit)
                point.edges = [cited, *[e for e in point.edges if e != cited][:1]]
            else:
                point = DraftPoint(
                    doc=ev.doc,
                    start=ev.start,
                    end=ev.end,
                    quote=ev.quote,
                    text=strip_markup(ev.quote),
                    heading=ev.heading_path[-1] if ev.heading_path else "",
                    edges=[cited],
                )
            same = next((p for p in points if (p.doc, p.start) == (point.doc, point.start)), None)
            if same is None:
                points.append(point)
            elif cited not in same.edges:
                # the next hop of the path, said by the same unit: one point, the path in order
                before = [i for i, e in enumerate(same.edges) if e.target == cited.source]
                same.edges.insert(before[0] + 1 if before else len(same.edges), cited)
        return points

    # -- the answer ---------------------------------------------------------------------------
    def compose(
        self,
        question: str,
        language: Language,
        linked: list[str],
        ranked: list[RankedUnit],
        hop: Callable[[str, str, set[str]], list[RankedUnit]] | None = None,
        situational: tuple[list[tuple[str, list[GraphPath]]], list[GraphPath], list[Conflict]]
        | None = None,
        surfaces: Iterable[tuple[tuple[str, int], str]] = (),
    ) -> AnswerDraft:
        """The answer draft for a question, from its ranked units. `hop(text, entity, about)`
        searches again, for units about `about`, with an entity the first units lead to (a
        question in two parts follows that edge)."""
        frame = QuestionFrame.read(question)
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
        self._constraints = sorted(named)
        second: list[RankedUnit] = []
        bridge = (
            self.bridge(frame, named, ranked) if hop is not None and _two_part(frame.text) else None
        )
        if bridge is not None and hop is not None:
            # the bridge's own units, and what the other named things say of it
            parts = {bridge} | {
                rel.source
                for rel in self.graph.in_relations(bridge)
                if rel.relation == RelationType.PART_OF
            }
            tail = _second_part(frame.text)
            told = [r for r in hop(frame.text, bridge, set(named)) if bridge in r.unit.mentions][:3]
            second = told + hop(tail, bridge, parts)[:6]
        picks, fact_paths, conflicts = situational or ([], [], [])
        draft.conflicts = conflicts
        if picks:
            # the sources' own recommendations for the situation the question describes
            for node, paths in picks[:3]:
                points = [p for path in paths[:3] for p in self.path_points(path)][:_MAX_POINTS]
                draft.recommendations.append(
                    DraftRecommendation(id=node, name=self.graph.entity(node).name, points=points)
                )
        elif frame.choice or frame.options:
            ranked_candidates = self.candidates(frame, named, ranked)
            bridge_type = self.graph.entity(bridge).type if bridge is not None else None
            if bridge is not None and (
                not frame.types
                or bridge_type in frame.types
                or (bridge_type in _SOFTWARE and frame.types & _SOFTWARE)
            ):
                ranked_candidates = [(bridge, 1.0, [r.unit for r in second])] + [
                    c for c in ranked_candidates if c[0] != bridge
                ]
            if ranked_candidates:
                draft.recommendations = self.recommendations(
                    frame, ranked_candidates, ranked + second
                )
        shown = {(p.doc, p.start) for r in draft.recommendations for p in r.points}
        limit = self.facts_with_picks if draft.recommendations else self.facts_alone
        first: list[EvidenceUnit] = []
        if second:
            # the path: what the named thing says of the bridge, then the bridge's own answer
            tail_frame = QuestionFrame.read(_second_part(frame.text))
            own = [r for r in second if r.unit.subject not in named]
            told = [r for r in second if r.unit.subject in named]
            first = [u for _s, u in self.ordered(frame, told)][:1]
            first += [u for _s, u in self.ordered(tail_frame, own)][:2]
            first = [u for u in first if (u.doc, u.start) not in shown]
            limit = max(limit, len(first) + 1)
        graph_facts = [p for path in fact_paths for p in self.path_points(path)]
        by_span = {(p.doc, p.start): p for r in draft.recommendations for p in r.points}
        for fact in graph_facts:
            # a route through a unit a recommendation already shows joins that point's edges
            known = by_span.get((fact.doc, fact.start))
            if known is not None:
                known.edges += [e for e in fact.edges if e not in known.edges]
        graph_facts = [p for p in graph_facts if (p.doc, p.start) not in shown][:3]
        shown |= {(p.doc, p.start) for p in graph_facts}
        if _DISAGREE.search(frame.text):
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
            if key not in said and not within:
                said.add(key)
                draft.facts.append(point)
        if not draft.recommendations and not draft.facts:
            return draft.model_copy(
                update={
                    "abstain": AbstainReason.NO_EVIDENCE,
                    "abstain_detail": "nothing retrieved answers it",
                }
            )
        if _DISAGREE.search(frame.text) and not draft.conflicts:
            conflict = self.disagreement(named, draft.facts, frame)
            if conflict is not None:
                draft.conflicts = [conflict]
        return draft

    def named_section(self, frame: QuestionFrame, limit: int = 6) -> list[EvidenceUnit]:
        """The units of the section whose title the question quotes or calls a section (its
        numbering aside, four characters at least), in the document's order; [] when it names
        none."""
        # a title is named when quoted ("“三条提醒”一节") or called a section ("the FAQ section")
        named = re.findall(r"[“\"「『‘'](.{2,60}?)[”\"」』’']", frame.text)
        named += re.findall(
            r"(\S.{2,40}?)\s*(?:一节|这一节|章节|部分|\bsection\b|\bchapter\b)", frame.text, re.I
        )
        folded = " | ".join(n.strip().casefold() for n in named)
        if not folded:
            return []
        for units in self._doc_units.values():
            for unit in units:
                if unit.kind != UnitKind.HEADING:
                    continue
                title = _SECTION_NUMBER.sub("", unit.text).strip().casefold()
                if len(title) < 4 or title not in folded:
                    continue
                inside = [
                    u
                    for u in units
                    if u.kind != UnitKind.HEADING
                    and u.start > unit.start
                    and u.heading_path[-1:] == (unit.text,)
                ]
                if inside:
                    return inside[:limit]
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
            for r in ranked[:40]
            if not things or r.unit.subject in things or things & set(r.unit.mentions)
        ]
        chosen: list[EvidenceUnit] = []
        for _score, unit in self.ordered(frame, pool, about=things):
            if unit.doc not in {u.doc for u in chosen} and unit.kind != UnitKind.HEADING:
                chosen.append(unit)
            if len(chosen) >= 3:
                break
        return chosen

    def _main_subject(self, frame: QuestionFrame, named: set[str]) -> str | None:
        """What a question is about: the first thing it names that one uses (a tool over a
        technique: "Unsloth 的 LoRA 训练" is about Unsloth)."""
        ordered = sorted(
            named, key=lambda e: (frame.text.find(self.graph.entity(e).name) % 10_000, e)
        )
        for kinds in (_SOFTWARE, _CHOOSABLE | {NodeType.MODEL}):
            for eid in ordered:
                if self.graph.entity(eid).type in kinds:
                    return eid
        return None

    def disagreement(
        self, named: set[str], facts: list[DraftPoint], frame: QuestionFrame | None = None
    ) -> Conflict | None:
        """What two or more documents each say of the thing asked about, side by side."""
        subject = self._main_subject(frame, named) if frame is not None else None
        by_doc: dict[str, DraftPoint] = {}
        for point in facts:
            if point.edges and point.doc not in by_doc:
                by_doc[point.doc] = point
        if subject is None or len(by_doc) < 2:
            return None
        claims = [
            next((e for e in p.edges if subject in (e.source, e.target)), p.edges[0])
            for p in by_doc.values()
        ]
        summary = "; ".join(f"{p.doc}: “{p.text[:160]}”" for p in by_doc.values())
        return Conflict(
            subject=subject, relation=claims[0].relation, claims=claims, summary=summary
        )

    def bridge(self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]) -> str | None:
        """The entity the best units lead to that the question does not name and that has units
        of its own (ExLlamaV2's README names Flash Attention; its own README says which GPUs)."""
        weight: dict[str, float] = defaultdict(float)
        things = {e for e in named if self.graph.entity(e).type in _CHOOSABLE | {NodeType.MODEL}}
        for r in ranked[:8]:
            # an edge from a named thing is the path to follow; a stray subject is not
            from_named = r.unit.subject in things or bool(things & set(r.unit.mentions))
            for eid in [*r.unit.mentions, r.unit.subject]:
                if eid is None or eid in named or eid not in self.graph:
                    continue
                if self.graph.entity(eid).type not in _CHOOSABLE:
                    continue
                own = len(self.search.by_subject.get(eid, []))
                told = sum(1 for u in self.search.by_mention.get(eid, []) if u.subject in named)
                if own < 5 and told == 0:
                    continue
                weight[eid] += r.score * (1.0 if from_named else 0.25)
        if not weight:
            return None
        return max(weight.items(), key=lambda kv: (kv[1], kv[0]))[0]

    # -- answerability ------------------------------------------------------------------------
    def entity_present(self, eid: str) -> bool:
        """Whether some document names an entity (under any of its names, the lexicon's too)."""
        names = list(self._lexicon_surfaces.get(eid, []))
        if eid in self.graph:
            entity = self.graph.entity(eid)
            names += [entity.name, *entity.aliases]
        return any(
            len(normalize_name(n)) >= 2 and normalize_name(n) in self._corpus_norm for n in names
        )

    def present(self, name: str) -> bool:
        """Whether a name occurs in some document (case, spacing and dashes ignored; a graph
        entity's aliases count)."""
        node = self.graph.find(name)
        if node is not None:
            entity = self.graph.entity(node)
            if any(normalize_name(n) in self._corpus_norm for n in [entity.name, *entity.aliases]):
                return True
        core = [t for t in re.split(r"[\s/]+", name) if re.search(r"\d", t) or len(t) >= 3]
        if not core:
            core = [name]
        return all(normalize_name(t) in self._corpus_norm for t in core)

    def abstain_reason(
        self,
        frame: QuestionFrame,
        linked: list[str],
        ranked: list[RankedUnit],
        surfaces: list[tuple[str, int]] | None = None,
        linked_all: list[str] | None = None,
    ) -> tuple[AbstainReason, str, str] | None:
        """Why the sources cannot answer, or None. `surfaces` are the names the question's linked
        entities were found under (with positions in the question)."""
        if not ranked:
            return AbstainReason.NOT_COVERED, "nothing in the sources matches the question", ""
        start, end = frame.asking_sentence
        strict = not frame.choice or frame.yes_no

        def key_requirement(at: int) -> bool:
            return at >= 0 and (strict or start <= at < end)

        spans: list[tuple[int, int]] = []
        for (surface, _at), eid in zip(surfaces or [], linked_all or [], strict=False):
            at = frame.text.find(surface)
            if at < 0:
                continue
            spans.append((at, at + len(surface)))
            if eid.split(":")[0] in _VAGUE_PREFIXES:
                continue  # "兼容性", "latency": what is asked about, not a thing to be found
            if key_requirement(at) and not self.entity_present(eid):
                name = self.graph.entity(eid).name if eid in self.graph else surface
                return AbstainReason.UNKNOWN_NAME, f"no source mentions {name}", name
        names = named_things(frame.text)
        if _CJK_TEXT.search(frame.text):
            # capitalised Latin words in a Chinese question are names ("Caffe 和 Theano 值得学吗")
            names += [
                (m.group(0), m.start())
                for m in re.finditer(r"(?<![A-Za-z])[A-Z][\w.+\-]+", frame.text)
            ]
        # "Kestrel or Zephyr?": an alternative the question offers must be in the sources
        names += [(o.text, o.start) for o in frame.options if re.match(r"[A-Z]", o.text)]
        for name, at in names:
            inside = any(s <= at and at + len(name) <= e for s, e in spans)
            if inside or not key_requirement(at):
                continue
            if not self.present(name):
                return AbstainReason.UNKNOWN_NAME, f"no source mentions {name}", name
        things = {e for e in linked if e in self.graph and self.graph.entity(e).type in _CHOOSABLE}
        if frame.quantity is not None:
            pattern = _MONEY_TEXT if frame.quantity == "money" else _RATE_TEXT
            top = [r.unit for r in ranked[:12]]
            about = [
                u for u in top if not things or u.subject in things or things & set(u.mentions)
            ]
            if not any(pattern.search(u.text + " " + " ".join(u.header)) for u in about):
                what = "prices" if frame.quantity == "money" else "that rate"
                return AbstainReason.NO_QUANTITY, f"no source gives {what}", frame.quantity
        for eid in things:
            version = _version_after(frame.text, self.graph.entity(eid))
            if version and not any(
                version in u.text
                for u in self.search.by_subject.get(eid, []) + self.search.by_mention.get(eid, [])
            ):
                name = self.graph.entity(eid).name
                return (
                    AbstainReason.UNKNOWN_NAME,
                    f"no source speaks of {name} {version}",
                    f"{name} {version}",
                )
        return None

    # -- candidates ---------------------------------------------------------------------------
    def _unit_tokens(self, unit: EvidenceUnit) -> frozenset[str]:
        tokens = self._tokens.get(unit.id)
        if tokens is None:
            tokens = frozenset(self.search.tokenize(unit_index_text(unit)))
            self._tokens[unit.id] = tokens
        return tokens

    def _question_terms(
        self, frame: QuestionFrame, exclude: Iterable[str] = ()
    ) -> dict[str, float]:
        excluded = {t for name in exclude for t in self.search.tokenize(stem_text(name))}
        terms: dict[str, float] = {}
        for token in self.search.tokenize(stem_text(frame.text)):
            if token in STOPWORDS or token in excluded or (len(token) < 2 and token.isascii()):
                continue
            idf = self.search.lexical.idf(token)
            if idf > 0:
                terms[token] = idf
        return terms

    def coverage(self, entity: str, terms: dict[str, float]) -> float:
        """Share of the question's weighted terms that the entity's own units contain."""
        if not terms:
            return 0.0
        have: set[str] = set()
        for unit in self.search.by_subject.get(entity, [])[:400]:
            have |= self._unit_tokens(unit)
        return sum(w for t, w in terms.items() if t in have) / sum(terms.values())

    def _parent(self, entity: str) -> str | None:
        for rel in self.graph.out_relations(entity):
            if rel.relation == RelationType.PART_OF:
                return rel.target
        return None

    def candidates(
        self, frame: QuestionFrame, named: set[str], ranked: list[RankedUnit]
    ) -> list[tuple[str, float, list[EvidenceUnit]]]:
        """Entities to recommend, best first, each with its supporting units (best first)."""
        if frame.options:
            options = self.option_candidates(frame, ranked)
            if options:
                return options
        wanted = frame.types
        top = ranked[:30]
        best = top[0].score if top else 1.0
        evidence: dict[str, float] = defaultdict(float)
        support: dict[str, list[EvidenceUnit]] = defaultdict(list)
        clause_terms = self._question_terms(frame)
        for r in top:
            weight = r.score / best
            unit = r.unit
            subject_named = unit.subject in named
            shares = [(unit.subject, 1.0)] + [
                (m, (0.8 if subject_named else 0.35) * self._clause_share(unit, m, clause_terms))
                for m in unit.mentions
            ]
            for eid, share in shares:
                if eid is None:
                    continue
                target = self._admit(eid, named, wanted, subject=eid == unit.subject)
                if target is None:
                    continue
                evidence[target] += share * weight
                if unit not in support[target]:
                    support[target].append(unit)
        names = [
            n for e in named for n in [self.graph.entity(e).name, *self.graph.entity(e).aliases]
        ]
        weights = self.search.query_weights(frame.text, [])
        excluded = {t for n in names for t in self.search.tokenize(stem_text(n))}
        weights = {t: w for t, w in weights.items() if t not in excluded}
        # the documents that best match the question, taken whole: their subjects are candidates
        profile: dict[str, float] = {}
        for doc, score in bilingual_search(self.search.doc_lexical, weights, 4, own=frame.text):
            subject = self._doc_subject.get(doc)
            target = self._admit(subject, named, wanted, subject=True) if subject else None
            if target is not None:
                profile[target] = max(profile.get(target, 0.0), score)
            elif subject in named:
                # a document about a thing the question names ("飞桨生态里…"): the answer is one of
                # the things it presents; its own best units say which
                for eid in {t for t in evidence if any(u.doc == doc for u in support[t])}:
                    profile[eid] = max(profile.get(eid, 0.0), score * 0.9)
        if not evidence and not profile:
            return []
        top_evidence = max(evidence.values(), default=1.0) or 1.0
        top_profile = max(profile.values(), default=1.0) or 1.0
        constraints = [c for c in self._constraints if c not in set(evidence) | set(profile)]
        scored = []
        for eid in set(evidence) | set(profile):
            node_type = self.graph.entity(eid).type
            fit = 1.0
            if wanted:
                fit = (
                    1.6
                    if node_type in wanted
                    else (1.15 if node_type in _SOFTWARE and wanted & _SOFTWARE else 0.6)
                )
            elif node_type == NodeType.FORMAT:
                fit = 0.7  # a format is a step on the way (export to ONNX, then serve), not a pick
            score = (
                0.55 * evidence.get(eid, 0.0) / top_evidence
                + 0.45 * profile.get(eid, 0.0) / top_profile
            )
            score *= 1.0 + self.constraint_fit(eid, constraints)
            scored.append((eid, score * fit * self.specificity(eid), support.get(eid, [])))
        scored.sort(key=lambda t: (-t[1], t[0]))
        if wanted and not wanted & _SOFTWARE:
            # "which technique / which GPU": only things of that kind answer, when there are any
            exact = [c for c in scored if self.graph.entity(c[0]).type in wanted]
            scored = exact or scored
        top_score = scored[0][1]
        return [c for c in scored if c[1] >= 0.4 * top_score][:3]

    def constraint_fit(self, eid: str, constraints: list[str]) -> float:
        """How many of the things a question requires (Inferentia, PyTorch, a format) the graph
        links a candidate to, each weighted by how specific it is; a NOT_SUPPORTED edge counts
        against. `Optimum -RUNS_ON-> AWS Inferentia` makes Optimum fit "部署到 AWS Inferentia"."""
        if not constraints:
            return 0.0
        nodes = {eid} | {
            r.source for r in self.graph.in_relations(eid) if r.relation == RelationType.PART_OF
        }
        fit = 0.0
        for constraint in constraints:
            relations = [
                r
                for node in nodes
                for r in self.graph.relations_of(node)
                if constraint in (r.source, r.target) and r.relation != RelationType.PART_OF
            ]
            if not relations:
                continue
            sign = -1.0 if all(r.relation == RelationType.NOT_SUPPORTED for r in relations) else 1.0
            fit += sign * self.specificity(constraint)
        return max(-0.5, 0.6 * fit)

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
                return 0.3 + 1.2 * sum(w for t, w in terms.items() if t in tokens) / total
        return 0.3

    def specificity(self, eid: str) -> float:
        """1 for a thing few units name, less for one named everywhere ("Quantization")."""
        named_in = len(self.search.by_mention.get(eid, []))
        total = max(len(self.search.units), 20)  # a handful of units says little of rarity
        rarity = math.log(total / (1 + named_in)) / math.log(total / 10)
        return 0.5 + 0.5 * min(1.0, max(0.0, rarity))

    def _admit(
        self, eid: str, named: set[str], wanted: frozenset[NodeType], *, subject: bool
    ) -> str | None:
        """The entity a candidate counts for (an edition rolls up into its product), or None when
        it cannot answer: a thing the question names, or of a kind nobody picks."""
        if eid not in self.graph:
            return None
        node_type = self.graph.entity(eid).type
        if node_type not in _CHOOSABLE and node_type not in wanted:
            return None
        if (
            not subject
            and wanted
            and node_type not in wanted
            and not (node_type in _SOFTWARE and wanted & _SOFTWARE)
        ):
            return None
        target = eid
        parent = self._parent(eid)
        if parent is not None and parent not in named:
            target = parent
        return None if target in named else target

    def option_candidates(
        self, frame: QuestionFrame, ranked: list[RankedUnit]
    ) -> list[tuple[str, float, list[EvidenceUnit]]]:
        """The question's own alternatives, best first (`qa.options`). An alternative that is no
        entity ("runtime", a table's "4090") is recommended as a value the sources state."""
        options = frame.options
        nodes = [self.graph.find(o.text) for o in options]
        cores = [normalize_name(o.text) for o in options]
        option_tokens = {t for o in options for t in self.search.tokenize(stem_text(o.text))}
        terms = [
            normalize_name(t)
            for t in self._question_terms(frame, [o.text for o in options])
            if t not in option_tokens
        ]
        pool = [r.unit for r in ranked[:60]]
        docs = {u.doc for u in pool[:20]}
        for unit in self.search.units:
            if unit.doc in docs and unit not in pool:
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
                        self.relevance(u, weights, None)
                        * (by_id[u.id].score if u.id in by_id else 0.3),
                        u,
                    )
                    for u in mine
                ),
                key=lambda t: -t[0],
            )
            return sum(s for s, _u in scored[:3]) / 10.0, [u for _s, u in scored[:3]]

        verdicts = resolve_options(options, nodes, pool, frame.text, terms, coverage)
        out = []
        for verdict in verdicts:
            if verdict.score <= 0 or not verdict.units or verdict.score < 0.8 * verdicts[0].score:
                continue
            node = verdict.node if verdict.node in self.graph else None
            eid = node if node is not None else "value:" + verdict.shown
            out.append((eid, verdict.score, verdict.units))
        return out

    # -- points -------------------------------------------------------------------------------
    def point(self, unit: EvidenceUnit, prefer: str | None = None) -> DraftPoint:
        """A unit as an answer point with the edges it is evidence of (the subject's first). A
        sentence that ends in ":" brings what it introduces ("run the command: `opt_in_out
        --opt_out`"), a question its answer, as one verbatim span."""
        edges = self._edges.get((unit.doc, unit.start), [])
        edges = [e for e in edges if e.evidence[0].end == unit.end] or edges
        ordered = sorted(
            edges, key=lambda e: (e.source != prefer and e.target != prefer, str(e.relation))
        )
        end, text = unit.end, unit.text
        following = self._next_unit(unit)
        introduces = (
            unit.text.endswith((":", "："))
            and following is not None
            and following.context == unit.text
            and following.start - unit.end < 200
        )
        # a question in the source ("怎么判断…？") comes with the sentence that answers it
        asks = (
            unit.kind == UnitKind.SENTENCE
            and unit.text.endswith(("?", "？"))
            and following is not None
            and following.kind == UnitKind.SENTENCE
            and following.start - unit.end < 4
        )
        if following is not None and (introduces or asks) and len(following.text) <= 200:
            space = "" if re.match(r"[\u4e00-\u9fff]", following.text) else " "
            end, text = following.end, f"{unit.text}{space}{following.text}"
        return DraftPoint(
            doc=unit.doc,
            start=unit.start,
            end=end,
            quote=self.documents[unit.doc][unit.start : end],
            text=text,
            context=" | ".join(unit.header) if unit.kind == UnitKind.ROW else unit.context,
            heading=unit.heading_path[-1] if unit.heading_path else "",
            edges=ordered[:2],
        )

    def row_group(
        self, row: EvidenceUnit, terms: dict[str, float], prefer: str | None = None, limit: int = 3
    ) -> DraftPoint:
        """A table row with up to two more rows of the same table that the question also
        matches ("CTranslate2 3.6.0 | 658.8 | 849MB" beside "OpenNMT-py | 275.8 | 2012MB"): one
        point, its span running from the first row to the last."""
        siblings = [
            u
            for u in self._doc_units.get(row.doc, [])
            if u.kind == UnitKind.ROW and u.header == row.header and abs(u.start - row.start) < 4000
        ]
        scored = sorted(
            (
                (
                    sum(w for t, w in terms.items() if t in self._unit_tokens(u)),
                    -abs(u.start - row.start),
                    u,
                )
                for u in siblings
                if u.id != row.id
            ),
            key=lambda t: (-t[0], -t[1]),
        )
        rows = [row, *[u for score, _d, u in scored if score > 0][: limit - 1]]
        if len(rows) == 1:
            return self.point(row, prefer)
        rows.sort(key=lambda u: u.start)
        point = self.point(row, prefer)
        start, end = rows[0].start, rows[-1].end
        return point.model_copy(
            update={
                "start": start,
                "end": end,
                "quote": self.documents[row.doc][start:end],
                "text": "; ".join(u.text for u in rows),
            }
        )

    def _next_unit(self, unit: EvidenceUnit) -> EvidenceUnit | None:
        units = self._doc_units.get(unit.doc, [])
        index = self._unit_index.get(unit.id)
        return units[index + 1] if index is not None and index + 1 < len(units) else None

    def definition(self, entity: str) -> EvidenceUnit | None:
        """The unit that says what an entity is: it starts with the entity's name and defines it
        ("X is a …", "X lets you …", "X 是一个 …")."""
        node = self.graph.entity(entity)
        names = sorted(
            {n for n in [node.name, *node.aliases] if len(n) >= 2}, key=len, reverse=True
        )
        for unit in self.search.by_subject.get(entity, [])[:80]:
            if unit.kind not in (UnitKind.SENTENCE, UnitKind.ITEM, UnitKind.HEADING):
                continue
            head = unit.text.lstrip("*`_ ")
            for name in names:
                if head.lower().startswith(name.lower()) and _DEFINES.match(head[len(name) :]):
                    return unit
        return None

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
            if eid in self.graph and not frame.options:
                ordered = self.ordered(frame, own, [self.graph.entity(eid).name], about=[eid])
                units = [u for _s, u in ordered] or units
            tables: set[tuple[str, ...]] = set()
            for unit in units:
                if len(chosen) >= (_MAX_POINTS if index == 0 else 1):
                    break
                if unit.kind == UnitKind.ROW:
                    if tuple(unit.header) in tables:
                        continue  # one row says what a table says; more rows crowd out reasons
                    tables.add(tuple(unit.header))
                if all(unit.text != c.text for c in chosen):
                    chosen.append(unit)
            weights = self._question_terms(frame)
            points = [
                self.row_group(u, weights, eid) if u.kind == UnitKind.ROW else self.point(u, eid)
                for u in chosen
            ]
            if not eid.startswith("value:") and not any(
                eid in (e.source, e.target) for p in points for e in p.edges
            ):
                # a recommendation stands on a verified path: the best unit with an edge of it
                backed = next((u for u in units if self._touches(u, eid)), None)
                if backed is not None:
                    points.append(self.point(backed, eid))
            name = (
                eid.removeprefix("value:")
                if eid.startswith("value:")
                else self.graph.entity(eid).name
            )
            out.append(DraftRecommendation(id=eid, name=name, points=points))
        return out

    def _touches(self, unit: EvidenceUnit, eid: str) -> bool:
        """Whether a unit is the evidence of an edge that has `eid` at an end."""
        return any(eid in (e.source, e.target) for e in self._edges.get((unit.doc, unit.start), []))

    def relevance(
        self, unit: EvidenceUnit, weights: dict[str, float], hint: re.Pattern[str] | None
    ) -> float:
        """How much a unit says of what the question asks: its weighted share of the question's
        terms (rare terms weigh more), a headline or a fragment less, the asked kind of value
        more."""
        tokens = self._unit_tokens(unit)
        score = sum(w * self.search.lexical.idf(t) for t, w in weights.items() if t in tokens)
        if unit.kind == UnitKind.HEADING:
            score *= 0.3
        elif _width(unit.text) < 25 and unit.kind != UnitKind.ROW:
            score *= 0.6
        if hint is not None and hint.search(" ".join([unit.text, *unit.header])):
            score *= 1.8
        return score

    def ordered(
        self,
        frame: QuestionFrame,
        units: Iterable[RankedUnit],
        exclude: Iterable[str] = (),
        about: Iterable[str] = (),
    ) -> list[tuple[float, EvidenceUnit]]:
        """Units by retrieval score and relevance to the question together, best first. A unit
        that is the evidence of an edge the question asks about (`about`'s licence when it asks
        for a licence, its hardware when it asks what it runs on) counts more."""
        items = list(units)
        if not items:
            return []
        weights = self.search.query_weights(frame.text, [])
        excluded = {t for name in exclude for t in self.search.tokenize(stem_text(name))}
        weights = {t: w for t, w in weights.items() if t not in excluded}
        hint = _answer_hint(frame.text)
        asked = asked_relations(frame.text)
        sources = set(about)
        rel = {}
        for r in items:
            value = self.relevance(r.unit, weights, hint)
            if asked and any(
                e.relation in asked and (not sources or e.source in sources)
                for e in self._edges.get((r.unit.doc, r.unit.start), [])
            ):
                value *= 1.6
            rel[r.unit.id] = value
        top_rel = max(rel.values()) or 1.0
        top_score = items[0].score or 1.0
        scored = [
            (0.5 * r.score / top_score + 0.5 * rel[r.unit.id] / top_rel, r.unit) for r in items
        ]
        scored.sort(key=lambda t: (-t[0], t[1].id))
        return scored

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
            for e in sorted(named, key=lambda e: frame.text.find(self.graph.entity(e).name))
            if self.graph.entity(e).type in _CHOOSABLE | {NodeType.MODEL}
        ]
        pool = ranked[:30]
        if things:
            about = [
                r for r in pool if r.unit.subject in things or set(things) & set(r.unit.mentions)
            ]
            if about:
                pool = about
        order = [
            (score, unit)
            for score, unit in self.ordered(frame, pool, about=things)
            if unit.kind != UnitKind.HEADING
            and (_width(unit.text) >= 20 or unit.kind in (UnitKind.ROW, UnitKind.CODE))
        ] or self.ordered(frame, pool)
        chosen: list[EvidenceUnit] = []
        seen = set(shown)
        texts: set[str] = set()
        per_doc: dict[str, int] = defaultdict(int)

        def take(unit: EvidenceUnit, capped: bool = True) -> None:
            key = normalize_name(unit.text)
            if (unit.doc, unit.start) in seen or key in texts or len(chosen) >= limit:
                return
            if capped and per_doc[unit.doc] >= 3:
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
            own = [u for _s, u in order if u.subject == eid and u.doc not in docs_named]
            naming = [u for _s, u in order if eid in u.mentions and u.doc not in docs_named]
            for unit in (own or naming)[:1]:
                docs_named.append(unit.doc)
                take(unit)
        for part in question_parts(frame.text):
            # "Does X collect telemetry, and how do I opt out?": each part gets its best unit
            part_order = self.ordered(QuestionFrame.read(part), [r for r in pool], about=things)
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
