"""Render verified drafts as Markdown in the question's language (Chinese for zh and mixed).

`render_draft` is the one writer of answer text: it runs after `CitationVerifier.verify_draft`,
so the text states only what verification kept.
"""

from __future__ import annotations

import re

from ingest.text import COLONS, cjk_bigrams, split_sentences
from kg import cues
from kg.graph import KnowledgeGraph
from qa.read.shapes import text_width
from qa.schema import (
    AbstainReason,
    Answer,
    AnswerDraft,
    Citation,
    Conflict,
    DraftPoint,
    Fallback,
    FallbackKind,
    Language,
    PathEdge,
    Recommendation,
    SnippetReport,
)

__all__ = [
    "RELATION_WORDS",
    "as_graph_only",
    "chains",
    "conflict_summary",
    "format_edge",
    "format_path",
    "render_draft",
    "render_snippets",
]

RELATION_WORDS = {
    "zh": {
        "RECOMMENDED_FOR": "推荐",
        "NOT_RECOMMENDED": "不推荐",
        "RUNS_ON": "运行于",
        "EXPORTS_TO": "导出为",
        "IMPLEMENTS": "实现/支持",
        "USED_WITH": "搭配",
        "RANKS_ABOVE": "排在前面",
        "RATED": "评分",
        "SUITS_SCALE": "适用规模",
        "PART_OF_ECOSYSTEM": "属于生态",
        "HAS_PROPERTY": "属性",
        "DEFAULT_MODE": "默认模式",
        "SHARDS": "分片",
        "ALTERNATIVE_TO": "可替代",
        "SUPPORTS": "支持",
        "REQUIRES": "需要",
        "NOT_SUPPORTED": "不支持",
        "PART_OF": "是其版本",
        "LICENSED_UNDER": "许可证",
        "MENTIONS": "提到",
    },
    "en": {
        "RECOMMENDED_FOR": "recommends",
        "NOT_RECOMMENDED": "advises against",
        "RUNS_ON": "runs on",
        "EXPORTS_TO": "exports to",
        "IMPLEMENTS": "implements",
        "USED_WITH": "is used with",
        "RANKS_ABOVE": "ranks above",
        "RATED": "is rated on",
        "SUITS_SCALE": "suits scale",
        "PART_OF_ECOSYSTEM": "is part of",
        "HAS_PROPERTY": "has property",
        "DEFAULT_MODE": "defaults to",
        "SHARDS": "shards",
        "ALTERNATIVE_TO": "is an alternative to",
        "SUPPORTS": "supports",
        "REQUIRES": "requires",
        "NOT_SUPPORTED": "does not support",
        "PART_OF": "is an edition of",
        "LICENSED_UNDER": "is licensed under",
        "MENTIONS": "mentions",
    },
}


def format_edge(graph: KnowledgeGraph, edge: PathEdge, lang: str = "en") -> str:
    """`source —relation→ target` with entity names.

    >>> from kg.schema import Entity, NodeType
    >>> g = KnowledgeGraph()
    >>> g.add_entity(Entity(id="a", type=NodeType.SCENARIO, name="A"))
    >>> g.add_entity(Entity(id="b", type=NodeType.FRAMEWORK, name="B"))
    >>> format_edge(g, PathEdge(source="a", relation="RECOMMENDED_FOR", target="b"))
    'A —recommends→ B'
    """
    words = RELATION_WORDS[lang]

    def name(node: str) -> str:
        return graph.entity(node).name if node in graph else node

    return f"{name(edge.source)} —{words.get(edge.relation, edge.relation)}→ {name(edge.target)}"


_LABELS = {
    "zh": {
        "rec": "推荐",
        "also": "也可考虑",
        "same": "出处同上",
        "facts": "资料中的相关内容",
        "caveats": "注意",
        "conflict": "⚠️ 资料之间有分歧",
        "decline": "资料未涵盖这个问题，我不做猜测",
        "on": "关于",
        "injection": "（问题中的指令性文字被当作普通文本处理；以上只依据资料。）",
        "graph_only": "（仅由知识图谱与检索规则作答，未经阅读模型判断。）",
    },
    "en": {
        "rec": "Recommendation",
        "also": "Also consider",
        "same": "same source as above",
        "facts": "From the sources",
        "caveats": "Caveats",
        "conflict": "⚠️ The sources disagree",
        "decline": "The sources don't cover this, so I won't guess",
        "on": "On",
        "injection": "(Instructions inside the question were treated as text; the answer follows "
        "the sources only.)",
        "graph_only": "(Graph-only answer: the graph and retrieval rules decided; no reader "
        "model read the evidence.)",
    },
}


_WHY = {
    "zh": {
        AbstainReason.NOT_COVERED: "资料中没有与这个问题相关的内容",
        AbstainReason.UNKNOWN_NAME: "资料中没有提到 {subject}",
        AbstainReason.NO_EVIDENCE: "检索到的内容回答不了这个问题",
        AbstainReason.LLM_DECLINED: "模型判断检索到的证据回答不了这个问题",
    },
    "en": {
        AbstainReason.NOT_COVERED: "nothing in the sources matches the question",
        AbstainReason.UNKNOWN_NAME: "no source mentions {subject}",
        AbstainReason.NO_EVIDENCE: "nothing retrieved answers it",
        AbstainReason.LLM_DECLINED: "the model found that the evidence does not answer it",
    },
}
_QUANTITY = {
    "zh": {"money": "资料没有给出价格", "rate": "资料没有给出这个速度数据"},
    "en": {"money": "no source gives prices", "rate": "no source gives that rate"},
}


def _why(draft: AnswerDraft, lang: str) -> str:
    """Why the answer declines, in the answer's language."""
    assert draft.abstain is not None
    if draft.abstain is AbstainReason.NO_QUANTITY:
        return _QUANTITY[lang].get(draft.abstain_subject, _QUANTITY[lang]["rate"])
    if draft.abstain is AbstainReason.UNKNOWN_NAME and not draft.abstain_subject:
        return draft.abstain_detail
    return _WHY[lang][draft.abstain].format(subject=draft.abstain_subject)


def _lang(language: Language) -> str:
    return "en" if language == Language.EN else "zh"


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
#: widest lead-in (a row's header, an item's lead) and section title beside a quote, in Latin
#: characters' worth: both say where a quote stands
_LEAD_WIDTH = 120


def _clipped(text: str, limit: int) -> str:
    """`text` cut to `limit` Latin characters' worth (a Chinese character counts two), with
    an ellipsis where it was cut."""
    if text_width(text) <= limit:
        return text
    width = 0
    for end, char in enumerate(text):
        width += 2 if _CJK_CHAR.match(char) else 1
        if width > limit - 1:
            return text[:end].rstrip() + "…"
    return text


_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9.+\-]*[a-z0-9+]|[a-z]")
_STOP_WORDS = frozenset(cues.words("words.stop", "en"))


def _grams(text: str) -> frozenset[str]:
    """What a text says, to compare with a question: its Latin words (not function words) and
    its Chinese character pairs.

    >>> sorted(_grams("Which is faster, BF16 或 8bit 量化推理？"))
    ['8bit', 'bf16', 'faster', '化推', '推理', '量化']
    """
    low = text.casefold()
    words = {w for w in _LATIN_WORD.findall(low) if len(w) > 1 and w not in _STOP_WORDS}
    return frozenset(words | cjk_bigrams(low))


def _focused(text: str, asked: frozenset[str], limit: int) -> str:
    """`text` as shown within `limit` (`_clipped`); where that cuts off the sentence that shares
    the most of the question's words (`asked`: its `_grams`), and more than any sentence it
    keeps, that sentence too, after an ellipsis (or the cut one to its end): a long paragraph
    is shown with the line it answers by, and nothing it showed before is hidden.

    >>> text = "Kestrel serves models. " + "It has many features. " * 12 + "Int8 runs 1.7x BF16."
    >>> _focused(text, _grams("How much faster is int8 than BF16?"), 60)
    'Kestrel serves models. It has many features. It has many fe… Int8 runs 1.7x BF16.'
    >>> _focused(text, _grams("What does Kestrel do?"), 60)
    'Kestrel serves models. It has many features. It has many fe…'
    """
    clipped = _clipped(text, limit)
    if clipped == text or not asked:
        return clipped
    spans = split_sentences(text)
    shares = [len(_grams(text[s:e]) & asked) for s, e in spans]
    shown = len(clipped) - 1  # the characters kept before the ellipsis
    kept = [share for (_s, e), share in zip(spans, shares, strict=True) if e <= shown]
    best = max(range(len(spans)), key=lambda i: (shares[i], -i), default=None)
    if best is None or shares[best] <= max(kept, default=0) or spans[best][1] <= shown:
        return clipped
    start, end = spans[best]
    tail = "…" if text[end:].strip() else ""
    if start < shown:  # the sentence was cut: it is shown to its end
        return text[:end].rstrip() + tail
    sentence = _clipped(text[start:end], limit)
    return f"{clipped} {sentence}{'' if sentence.endswith('…') else tail}"


def _where(doc: str, heading: str) -> str:
    """Where a quote is: its document and the title of its section, as wide as a lead-in.

    >>> _where("a.md", "Latency on a Pi 5, batch size 1")
    'a.md · Latency on a Pi 5, batch size 1'
    >>> len(_where("a.md", "x" * 200)), _where("a.md", "x" * 200)[-2:]
    (127, 'x…')
    """
    return f"{doc} · {_clipped(heading, _LEAD_WIDTH)}" if heading else doc


def _reason(points: list[DraftPoint]) -> str:
    """A recommendation's reason: its first point as shown, a row with its table's header (the
    "4090" column a value recommendation names)."""
    if not points:
        return ""
    point = points[0]
    if point.context and point.context not in point.text:
        return _led(point.context, point.text, point.code)[:200]
    return point.text[:200]


def _led(context: str, text: str, code: bool = False) -> str:
    """A unit's text under its lead-in: after the colon a lead-in ends with, or one it is
    given in place of the full stop it ends with (a list's label "Vision." over its items, an
    item's first sentence over the paragraphs it holds); a piece of code on the lines under its
    lead-in (the command it continues), as the block shows it.

    >>> _led("Backends:", "CUDA"), _led("GPU", "4090"), _led("wisp run m --bits 4", "--fast", True)
    ('Backends: CUDA', 'GPU: 4090', 'wisp run m --bits 4\\n--fast')
    >>> _led("Vision.", "Kestrel-S"), _led("Install it.", "On Fedora, run:"), _led("先装。", "再跑")
    ('Vision: Kestrel-S', 'Install it: On Fedora, run:', '先装: 再跑')
    """
    if code:
        return f"{context}\n{text}"
    if context.endswith(COLONS):
        return f"{context} {text}"
    if context.endswith((".", "。")) and not context.endswith(".."):
        context = context[:-1]
    return f"{context}: {text}"


def _point_line(
    graph: KnowledgeGraph,
    point: DraftPoint,
    lang: str,
    limit: int = 260,
    quoted: bool = True,
    asked: frozenset[str] = frozenset(),
) -> str:
    """A point as shown: its text (with its lead-in) up to `limit` characters' worth (a long
    one with the sentence that answers the question whose words are `asked`: `_focused`), where
    it is, and the graph path
    it is evidence of; only "(same source as above)" and the path when the answer quoted it
    already (not `quoted`)."""
    if not quoted:
        line = f"({_LABELS[lang]['same']})"
        if point.edges:
            line += " — " + format_path(graph, max(chains(point.edges), key=len), lang)
        return line
    text = _clipped(point.text, limit) if point.code else _focused(point.text, asked, limit)
    if point.context and point.context not in text:
        context = _clipped(point.context, _LEAD_WIDTH)
        text = _led(context, text, point.code)
    heading = point.heading if point.heading and point.heading not in text else ""
    line = f"“{text}” ({_where(point.doc, heading)})"
    if point.edges:
        # the longest path the point is evidence of; all of them are in the citations
        line += " — " + format_path(graph, max(chains(point.edges), key=len), lang)
    return line


def chains(edges: list[PathEdge]) -> list[list[PathEdge]]:
    """Edges joined into paths where one ends where the next starts (PyTorch → ONNX → TensorRT).

    >>> e = [PathEdge(source="b", relation="USED_WITH", target="c"),
    ...      PathEdge(source="a", relation="RUNS_ON", target="d"),
    ...      PathEdge(source="a", relation="EXPORTS_TO", target="b")]
    >>> [[x.target for x in chain] for chain in chains(e)]
    [['d'], ['b', 'c']]
    """
    left = list(edges)
    paths: list[list[PathEdge]] = []
    while left:
        # start where no other edge leads in, then follow the edges that continue the path
        first = next((e for e in left if all(o.target != e.source for o in left)), left[0])
        path = [first]
        left.remove(first)
        while (step := next((e for e in left if e.source == path[-1].target), None)) is not None:
            path.append(step)
            left.remove(step)
        paths.append(path)
    return paths


def format_path(graph: KnowledgeGraph, path: list[PathEdge], lang: str = "en") -> str:
    """`A —r→ B —s→ C`: a path with entity names."""
    text = format_edge(graph, path[0], lang)
    for edge in path[1:]:
        tail = format_edge(graph, edge, lang)
        text += tail[tail.index(" —") :]
    return text


def conflict_summary(graph: KnowledgeGraph, conflict: Conflict, lang: str) -> str:
    """Who says what, each claim with its quote."""
    parts = [
        f"{e.evidence[0].doc}: {format_edge(graph, e, lang)} “{_clipped(e.evidence[0].quote, 160)}”"
        for e in conflict.claims
        if e.evidence
    ]
    subject = graph.entity(conflict.subject).name if conflict.subject in graph else conflict.subject
    joined = ("；" if lang == "zh" else "; ").join(parts)
    return f"{_LABELS[lang]['on']} {subject}{'：' if lang == 'zh' else ': '}{joined}"


def render_draft(draft: AnswerDraft, graph: KnowledgeGraph) -> Answer:
    """The public Answer from a verified draft: Markdown in the question's language (a model's
    sentence first, then the recommendation and every point with its source and graph path),
    recommendations, one citation per cited edge, conflicts, snippets."""
    lang = _lang(draft.language)
    words = _LABELS[lang]
    colon = "：" if lang == "zh" else ": "
    if draft.abstain is not None:
        detail = draft.abstain_detail or draft.abstain.value
        return Answer(
            question=draft.question,
            answer=f"{words['decline']}{colon}{_why(draft, lang)}。"
            if lang == "zh"
            else f"{words['decline']}: {_why(draft, lang)}.",
            abstained=True,
            backend=draft.backend,
            notes=[*draft.notes, f"abstained: {draft.abstain.value} ({detail})"],
            fallback=Fallback(kind=FallbackKind.NOT_COVERED, detail=detail),
        )
    lines: list[str] = [draft.prose, ""] if draft.prose else []
    citations: list[Citation] = []
    cited: set[tuple[tuple[tuple[str, str, str], ...], str, int]] = set()
    asked = _grams(draft.question)  # what a long excerpt is focused on (`_focused`)

    def show(point: DraftPoint, limit: int = 260, quoted: bool = True) -> str:
        for chain in chains(point.edges):
            key = (
                tuple((e.source, str(e.relation), e.target) for e in chain),
                point.doc,
                point.start,
            )
            if key not in cited:
                cited.add(key)
                citations.append(Citation(path=chain))
        return _point_line(graph, point, lang, limit, quoted, asked)

    recommendations: list[Recommendation] = []
    if draft.recommendations:
        top = draft.recommendations[0]
        lines.append(f"**{words['rec']}{colon}{top.name}**")
        lines.extend(f"- {show(p)}" for p in top.points)
        for rec in draft.recommendations[1:]:
            if rec.points:
                # the point whose path reaches the pick: the citation that backs it
                backed = next(
                    (p for p in rec.points if any(rec.id in (e.source, e.target) for e in p.edges)),
                    rec.points[0],
                )
                # an alternative is named with the path that backs it, its quote kept short
                # (and not repeated when the pick's reasons quote the same sentence)
                again = any(
                    p.doc == backed.doc and p.start <= backed.start < p.end for p in top.points
                )
                line = show(backed, 120, quoted=not again)
                lines.append(f"- {words['also']} **{rec.name}**{' ' if again else colon}{line}")
        recommendations = [
            Recommendation(id=rec.id, name=rec.name, reason=_reason(rec.points))
            for rec in draft.recommendations
        ]
    for title, points in ((words["facts"], draft.facts), (words["caveats"], draft.caveats)):
        if points:
            lines += ["", f"{title}{colon.strip()}"] if lines else [f"{title}{colon.strip()}"]
            lines.extend(f"- {show(p)}" for p in points)
    conflicts = [
        c if c.summary else c.model_copy(update={"summary": conflict_summary(graph, c, lang)})
        for c in draft.conflicts
    ]
    for conflict in conflicts:
        lines += ["", f"{words['conflict']}{colon}{conflict.summary}"]
        citations.extend(Citation(path=[claim]) for claim in conflict.claims)
    if draft.snippets:
        lines += ["", render_snippets(draft.snippets)]
    if draft.injection:
        lines += ["", words["injection"]]
    return Answer(
        question=draft.question,
        answer="\n".join(lines).strip(),
        recommendations=recommendations,
        citations=citations,
        snippets=draft.snippets,
        conflicts=conflicts,
        backend=draft.backend,
        notes=list(draft.notes),
    )


def render_snippets(snippets: list[SnippetReport]) -> str:
    """Snippets as fenced code with their validation status."""
    parts = []
    for snippet in snippets:
        parts.append(
            f"[{snippet.status}] {snippet.detail.splitlines()[0] if snippet.detail else ''}"
        )
        parts.append(f"```{snippet.language}\n{snippet.code}\n```")
    return "\n".join(parts)


def as_graph_only(answer: Answer, language: Language) -> Answer:
    """The answer with its last line saying that no reader model decided it (`--llm none`, or
    no model installed); a rejected question's explanation stays as it is.

    >>> a = as_graph_only(Answer(question="q", answer="**Recommendation: X**"), Language.EN)
    >>> a.answer.splitlines()[-1]
    '(Graph-only answer: the graph and retrieval rules decided; no reader model read the evidence.)'
    """
    if answer.fallback is not None and answer.fallback.kind is FallbackKind.REJECTED:
        return answer
    line = _LABELS[_lang(language)]["graph_only"]
    return answer.model_copy(update={"answer": f"{answer.answer}\n\n{line}".strip()})
