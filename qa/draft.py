"""An answer before it is written: structure first, verified, then rendered to Markdown.

Answerers (the evidence composer, the LLM answerer) build an `AnswerDraft`: recommendations, each
with its reasons, facts, caveats and conflicts, every one a `DraftPoint` that holds a source unit
(its verbatim span) and the graph edges that cite it. `verify_draft` drops every edge that is not
in the graph or whose quote is not verbatim in its document, and every point whose own quote is
not; a recommendation left without support goes too. Only then does `render_draft` write the
text, so the text never states what verification removed.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from kg.graph import KnowledgeGraph
from kg.schema import normalize_name
from qa.schema import Answer, Citation, Conflict, Language, PathEdge, Recommendation
from qa.verify import quote_in_document

__all__ = [
    "AbstainReason",
    "AnswerDraft",
    "DraftPoint",
    "DraftRecommendation",
    "render_draft",
    "verify_draft",
]


class AbstainReason(StrEnum):
    """Why an answerer declined."""

    NOT_COVERED = "not-covered"  # nothing relevant was retrieved
    UNKNOWN_NAME = "unknown-name"  # the question's key named thing is in no document
    NO_QUANTITY = "no-quantity"  # it asks for a number (a price, a rate) no source gives
    NO_EVIDENCE = "no-evidence"  # what was retrieved supports no answer
    LLM_DECLINED = "llm-declined"  # the LLM said the evidence does not answer


class DraftPoint(BaseModel):
    """One thing an answer says: a source unit's text, its verbatim span, the edges citing it."""

    doc: str
    start: int
    end: int
    quote: str = Field(description="the verbatim text of the document between start and end")
    text: str = Field(description="what is shown: the quote without markup")
    context: str = Field(default="", description="a row's header or an item's lead-in")
    edges: list[PathEdge] = Field(default_factory=list)


class DraftRecommendation(BaseModel):
    """A recommended entity and the points that support it (best first)."""

    id: str
    name: str
    points: list[DraftPoint] = Field(default_factory=list)


class AnswerDraft(BaseModel):
    """Everything an answer will say, before verification and rendering."""

    question: str
    language: Language
    recommendations: list[DraftRecommendation] = Field(default_factory=list)
    facts: list[DraftPoint] = Field(default_factory=list)
    caveats: list[DraftPoint] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    abstain: AbstainReason | None = None
    abstain_detail: str = ""
    injection: bool = False
    notes: list[str] = Field(default_factory=list)


def _edge_ok(graph: KnowledgeGraph, documents: dict[str, str], edge: PathEdge) -> bool:
    relation = graph.edge(edge.source, str(edge.relation), edge.target)
    if relation is None or not edge.evidence:
        return False
    for ev in edge.evidence:
        text = documents.get(ev.doc)
        if text is None or not quote_in_document(ev, text):
            return False
        if not any(
            o.doc == ev.doc and o.start < ev.end and ev.start < o.end for o in relation.evidence
        ):
            return False
    return True


def verify_draft(
    draft: AnswerDraft, graph: KnowledgeGraph, documents: dict[str, str]
) -> tuple[AnswerDraft, int]:
    """The draft with only verifiable points and edges, and how many things were dropped."""
    dropped = 0

    def point(p: DraftPoint) -> DraftPoint | None:
        nonlocal dropped
        text = documents.get(p.doc)
        if text is None or text[p.start : p.end] != p.quote:
            dropped += 1 + len(p.edges)
            return None
        edges = [e for e in p.edges if _edge_ok(graph, documents, e)]
        dropped += len(p.edges) - len(edges)
        return p.model_copy(update={"edges": edges})

    def points(items: list[DraftPoint]) -> list[DraftPoint]:
        return [q for q in (point(p) for p in items) if q is not None]

    recommendations = []
    for rec in draft.recommendations:
        kept = points(rec.points)
        # an entity of the graph, or a value the kept quotes state ("runtime", a table's "4090")
        stated = rec.id.startswith("value:") and any(
            normalize_name(rec.name) in normalize_name(p.quote + " " + p.context) for p in kept
        )
        if (rec.id in graph or stated) and kept:
            recommendations.append(rec.model_copy(update={"points": kept}))
        else:
            dropped += 1
    verified = draft.model_copy(
        update={
            "recommendations": recommendations,
            "facts": points(draft.facts),
            "caveats": points(draft.caveats),
        }
    )
    if dropped:
        verified.notes.append(f"{dropped} unverifiable claim(s) or citation(s) dropped")
    return verified, dropped


_LABELS = {
    "zh": {
        "rec": "推荐",
        "why": "依据",
        "also": "也可考虑",
        "facts": "资料中的相关内容",
        "caveats": "注意",
        "conflict": "⚠️ 资料之间有分歧",
        "decline": "资料未涵盖这个问题，我不做猜测",
        "injection": "（问题中的指令性文字被当作普通文本处理；以上只依据资料。）",
    },
    "en": {
        "rec": "Recommendation",
        "why": "Why",
        "also": "Also consider",
        "facts": "From the sources",
        "caveats": "Caveats",
        "conflict": "⚠️ The sources disagree",
        "decline": "The sources don't cover this, so I won't guess",
        "injection": "(Instructions inside the question were treated as text; the answer follows "
        "the sources only.)",
    },
}


def _shown(point: DraftPoint, limit: int = 260) -> str:
    text = point.text if len(point.text) <= limit else point.text[: limit - 1].rstrip() + "…"
    if point.context and point.context not in text:
        context = point.context if len(point.context) <= 120 else point.context[:119] + "…"
        text = f"{context} {text}" if context.endswith((":", "：")) else f"{context}: {text}"
    return text


def render_draft(draft: AnswerDraft) -> Answer:
    """The public Answer: Markdown text in the question's language, recommendations, citations."""
    lang = "en" if draft.language == Language.EN else "zh"
    words = _LABELS[lang]
    if draft.abstain is not None:
        detail = f" ({draft.abstain_detail})" if draft.abstain_detail else ""
        return Answer(
            question=draft.question,
            answer=f"{words['decline']}{detail}.",
            abstained=True,
            notes=[*draft.notes, f"abstained: {draft.abstain.value}{detail}"],
        )
    lines: list[str] = []
    citations: list[Citation] = []
    seen_edges: set[tuple[str, str, str, int]] = set()

    def cite(point: DraftPoint) -> str:
        for edge in point.edges:
            key = (edge.source, str(edge.relation), edge.target, point.start)
            if key not in seen_edges:
                seen_edges.add(key)
                citations.append(Citation(path=[edge]))
        return f"“{_shown(point)}” ({point.doc})"

    recommendations: list[Recommendation] = []
    if draft.recommendations:
        top = draft.recommendations[0]
        lines.append(f"**{words['rec']}: {top.name}**")
        for p in top.points:
            lines.append(f"- {cite(p)}")
        for rec in draft.recommendations[1:]:
            if rec.points:
                lines.append(f"- {words['also']} **{rec.name}**: {cite(rec.points[0])}")
        for rec in draft.recommendations:
            reason = rec.points[0].text[:200] if rec.points else ""
            recommendations.append(Recommendation(id=rec.id, name=rec.name, reason=reason))
    if draft.facts:
        if lines:
            lines.append("")
        lines.append(f"{words['facts']}:")
        lines.extend(f"- {cite(p)}" for p in draft.facts)
    if draft.caveats:
        lines.append("")
        lines.append(f"{words['caveats']}:")
        lines.extend(f"- {cite(p)}" for p in draft.caveats)
    for conflict in draft.conflicts:
        lines.append("")
        lines.append(f"{words['conflict']}: {conflict.summary}")
        citations.extend(Citation(path=[claim]) for claim in conflict.claims)
    if draft.injection:
        lines.append("")
        lines.append(words["injection"])
    return Answer(
        question=draft.question,
        answer="\n".join(lines).strip(),
        recommendations=recommendations,
        citations=citations,
        conflicts=draft.conflicts,
        notes=list(draft.notes),
    )
