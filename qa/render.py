"""Render answers as Markdown in the question's language (Chinese for zh and mixed questions)."""

from __future__ import annotations

from collections.abc import Sequence

from kg.graph import KnowledgeGraph
from qa.schema import Conflict, GraphPath, Language, PathEdge, Recommendation, SnippetReport

__all__ = ["RELATION_WORDS", "AnswerText", "format_edge", "render_snippets"]

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


class AnswerText:
    """Markdown pieces of an answer in one language."""

    def __init__(self, language: Language, graph: KnowledgeGraph) -> None:
        self.lang = "en" if language == Language.EN else "zh"
        self.graph = graph

    def _t(self, zh: str, en: str) -> str:
        return zh if self.lang == "zh" else en

    def abstain(self, reason: str) -> str:
        """The declining answer."""
        return self._t(
            "资料未涵盖这个问题，我不做猜测。",
            f"The sources don't cover this, so I won't guess. ({reason})",
        )

    def quote(self, edge: PathEdge) -> str:
        """The first evidence quote of an edge with its document and section."""
        if not edge.evidence:
            return ""
        ev = edge.evidence[0]
        where = ev.doc + (f" · {ev.heading_path[-1]}" if ev.heading_path else "")
        return f"“{ev.quote}”（{where}）" if self.lang == "zh" else f"“{ev.quote}” ({where})"

    def reason(self, path: GraphPath) -> str:
        """One line saying why a path supports its claim."""
        edge = path.edges[0]
        line = format_edge(self.graph, edge, self.lang)
        return f"{line}: {self.quote(edge)}"

    def route(self, path: GraphPath) -> str:
        """A multi-edge path on one line, each edge's quote after it."""
        chain = format_edge(self.graph, path.edges[0], self.lang)
        for edge in path.edges[1:]:
            tail = format_edge(self.graph, edge, self.lang)
            chain += tail[tail.index(" —") :]
        quotes = (" / " if self.lang == "en" else "／").join(self.quote(e) for e in path.edges)
        return f"{chain}: {quotes}"

    def body(
        self,
        recommendations: list[Recommendation],
        ranked: list[tuple[str, float, list[GraphPath]]],
        facts: list[GraphPath],
        conflicts: list[Conflict],
        sentences: list[tuple[str, str]],
        injection: bool,
        routes: Sequence[GraphPath] = (),
    ) -> str:
        """The whole Markdown answer."""
        lines: list[str] = []
        if recommendations:
            head = recommendations[0].name
            others = (
                "、".join(r.name for r in recommendations[1:])
                if self.lang == "zh"
                else ", ".join(r.name for r in recommendations[1:])
            )
            lines.append(self._t(f"**推荐：{head}**", f"**Recommendation: {head}**"))
            if others:
                lines[-1] += self._t(f"（也可考虑：{others}）", f" (also consider: {others})")
            lines.append("")
            lines.append(self._t("依据：", "Why:"))
            for rec, (_node, _score, paths) in zip(recommendations, ranked, strict=False):
                for path in paths[:3]:
                    lines.append(f"- **{rec.name}** — {self.reason(path)}")
        if routes:
            lines.append("")
            lines.append(self._t("路径：", "How to get there:"))
            for path in routes:
                lines.append(f"- {self.route(path)}")
        if facts:
            lines.append("")
            lines.append(self._t("相关事实：", "Facts from the sources:"))
            for path in facts:
                lines.append(f"- {self.reason(path)}")
        if conflicts:
            lines.append("")
            lines.append(self._t("⚠️ 资料之间有分歧：", "⚠️ The sources disagree:"))
            for conflict in conflicts:
                lines.append(f"- {self.conflict_summary(conflict)}")
        if sentences:
            lines.append("")
            lines.append(self._t("原文摘录：", "From the text:"))
            for sentence, doc in sentences:
                lines.append(f"> {sentence}  — {doc}")
        if injection:
            lines.append("")
            lines.append(
                self._t(
                    "（问题中的指令性文字被当作普通文本处理；以上只依据资料。）",
                    "(Instructions inside the question were treated as text; "
                    "the answer follows the sources only.)",
                )
            )
        return "\n".join(lines).strip()

    def conflict_summary(self, conflict: Conflict) -> str:
        """Who says what, each with its quote."""
        subject = self.graph.entity(conflict.subject).name
        parts = [
            f"{edge.evidence[0].doc}: {format_edge(self.graph, edge, self.lang)} {self.quote(edge)}"
            for edge in conflict.claims
        ]
        joined = "；".join(parts) if self.lang == "zh" else "; ".join(parts)
        return self._t(f"关于 {subject}：{joined}", f"On {subject}: {joined}")


def render_snippets(snippets: list[SnippetReport]) -> str:
    """Snippets as fenced code with their validation status."""
    parts = []
    for snippet in snippets:
        parts.append(
            f"[{snippet.status}] {snippet.detail.splitlines()[0] if snippet.detail else ''}"
        )
        parts.append(f"```{snippet.language}\n{snippet.code}\n```")
    return "\n".join(parts)
