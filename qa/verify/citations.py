"""The citation verifier: every cited edge must exist, every quote must be verbatim in its document.

`CitationVerifier.verify_draft` prunes an answerer's draft before it is rendered. A point whose
quote is not the document's text at its span goes; an edge that is not in the graph, or whose
quote is not its evidence, goes; a recommendation that no kept edge reaches goes; a model's
sentence that names a thing or a number no kept point states goes. Both answerers (the evidence
composer and the LLM) pass through it, so the text never states what verification removed.
`verify` checks a finished Answer's citations the same way (the evaluation's citation validity).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from kg.graph import KnowledgeGraph
from kg.schema import Evidence, normalize_name
from qa.schema import Answer, AnswerDraft, Citation, DraftPoint, PathEdge

__all__ = ["CitationVerifier", "VerificationResult", "quote_in_document"]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _names(text: str, name: str) -> bool:
    """Whether `text` names `name` as a whole name (case aside; a Latin name is not part of a
    longer Latin word, whatever script is around it).

    >>> _names("用PyTorch训练", "PyTorch"), _names("PyTorchVideo", "PyTorch")
    (True, False)
    """
    pattern = rf"(?<![A-Za-z0-9_.\-]){re.escape(name)}(?![A-Za-z0-9_])"
    return re.search(pattern, text, re.I) is not None


_SPACE = re.compile(r"\s+")


def quote_in_document(evidence: Evidence, text: str) -> bool:
    """Whether the quote is the document's text at its span, or verbatim elsewhere (up to space).

    >>> quote_in_document(Evidence(doc="d", quote="b  c", start=2, end=6), "a b c d")
    True
    """
    if text[evidence.start : evidence.end] == evidence.quote:
        return True
    return _SPACE.sub(" ", evidence.quote).strip() in _SPACE.sub(" ", text)


class VerificationResult(BaseModel):
    """How many citations were checked and dropped."""

    checked: int = 0
    dropped: int = 0
    reasons: list[str] = []


class CitationVerifier:
    """Checks answers against one graph and the texts of its documents."""

    def __init__(self, graph: KnowledgeGraph, documents: dict[str, str]) -> None:
        self.graph = graph
        self.documents = documents

    def _evidence_of(self, source: str, relation: str, target: str) -> list[Evidence]:
        """The evidence of every parallel edge `source relation target` (any criterion)."""
        found: list[Evidence] = []
        for key, data in (self.graph.g.get_edge_data(source, target) or {}).items():
            if key == relation or str(key).startswith((relation + "@", relation + "#")):
                found.extend(data["rel"].evidence)
        return found

    def edge_problem(self, edge: PathEdge) -> str | None:
        """Why a cited edge is not verifiable, or None when it is."""
        relation = self.graph.edge(edge.source, edge.relation, edge.target)
        if relation is None:
            return f"no edge {edge.source} {edge.relation} {edge.target} in the graph"
        if not edge.evidence:
            return f"edge {edge.source} {edge.relation} {edge.target} cites no evidence"
        own = self._evidence_of(edge.source, edge.relation, edge.target)
        for ev in edge.evidence:
            text = self.documents.get(ev.doc)
            if text is None:
                return f"unknown document {ev.doc!r}"
            if not quote_in_document(ev, text):
                return f"quote not found verbatim in {ev.doc}: {ev.quote[:40]!r}"
            if not any(o.doc == ev.doc and o.start < ev.end and ev.start < o.end for o in own):
                return f"quote is not evidence of {edge.source} {edge.relation} {edge.target}"
        return None

    def _citation_problem(self, citation: Citation) -> str | None:
        if not citation.path:
            return "empty path"
        return next((p for p in map(self.edge_problem, citation.path) if p is not None), None)

    # -- drafts -------------------------------------------------------------------------------
    def verify_draft(self, draft: AnswerDraft) -> tuple[AnswerDraft, VerificationResult]:
        """The draft with only verifiable points, edges, recommendations and prose."""
        result = VerificationResult()

        def point(p: DraftPoint) -> DraftPoint | None:
            result.checked += 1 + len(p.edges)
            text = self.documents.get(p.doc)
            if text is None or text[p.start : p.end] != p.quote:
                result.dropped += 1 + len(p.edges)
                result.reasons.append(f"point not verbatim in {p.doc}: {p.quote[:40]!r}")
                return None
            edges = []
            for edge in p.edges:
                problem = self.edge_problem(edge)
                if problem is None:
                    edges.append(edge)
                else:
                    result.dropped += 1
                    result.reasons.append(problem)
            return p.model_copy(update={"edges": edges})

        def points(items: list[DraftPoint]) -> list[DraftPoint]:
            return [q for q in (point(p) for p in items) if q is not None]

        recommendations = []
        for rec in draft.recommendations:
            kept = points(rec.points)
            # a graph entity at an end of a kept edge (a verified path), or a value a kept
            # verbatim quote states ("runtime", a table row under its "4090" column)
            if rec.id.startswith("value:"):
                # a name the point's verbatim text states, or the title of the section it is
                # under (which its document states)
                backed = any(
                    normalize_name(rec.name) in normalize_name(p.quote + " " + p.context)
                    or (
                        normalize_name(rec.name) in normalize_name(p.heading)
                        and p.heading in self.documents.get(p.doc, "")
                    )
                    for p in kept
                )
            else:
                backed = any(rec.id in (e.source, e.target) for p in kept for e in p.edges)
            if backed:
                recommendations.append(rec.model_copy(update={"points": kept}))
            else:
                result.dropped += 1
                result.reasons.append(f"recommendation {rec.name} has no verified path")
        candidates = [
            c.model_copy(update={"points": kept})
            for c in draft.candidates
            if c.id in self.graph and (kept := points(c.points))
        ]
        verified = draft.model_copy(
            update={
                "recommendations": recommendations,
                "candidates": candidates,
                "facts": points(draft.facts),
                "caveats": points(draft.caveats),
                "notes": list(draft.notes),
            }
        )
        if draft.prose:
            problem = self.prose_problem(verified)
            if problem is not None:
                result.dropped += 1
                result.reasons.append(problem)
                verified.prose = ""
                verified.notes.append(f"the model's sentence was left out: {problem}")
        if result.dropped:
            verified.notes.append(
                f"{result.dropped} unverifiable claim(s) or citation(s) dropped before rendering"
            )
        return verified, result

    def prose_problem(self, draft: AnswerDraft) -> str | None:
        """Why a model's sentence cannot stand over the draft's kept points, or None.

        Every number it states and every thing of the graph it names must be in the question, a
        kept point (its text or lead-in), or among the kept recommendations.
        """
        said = " ".join(
            [draft.question, *(p.text + " " + p.context for p in draft.points())]
            + [r.name for r in draft.recommendations]
        )
        said_numbers = set(_NUMBER.findall(said))
        for number in _NUMBER.findall(draft.prose):
            if number not in said_numbers:
                return f"it states {number}, which no kept source says"
        picked = {r.id for r in draft.recommendations}
        for entity in self.graph.entities():
            if len(entity.name) < 3 or entity.id in picked:
                continue
            if _names(draft.prose, entity.name) and not _names(said, entity.name):
                return f"it names {entity.name}, which no kept source says"
        return None

    def verify(self, answer: Answer) -> tuple[Answer, VerificationResult]:
        """The answer with only valid citations (and recommendations still supported)."""
        result = VerificationResult()
        kept: list[Citation] = []
        for citation in answer.citations:
            result.checked += 1
            problem = self._citation_problem(citation)
            if problem is None:
                kept.append(citation)
            else:
                result.dropped += 1
                result.reasons.append(problem)
        cited_nodes = {n for c in kept for e in c.path for n in (e.source, e.target)}
        recommendations = [r for r in answer.recommendations if r.id in cited_nodes]
        dropped_recs = len(answer.recommendations) - len(recommendations)
        notes = list(answer.notes)
        if result.dropped:
            notes.append(f"{result.dropped} citation(s) failed verification and were dropped")
        if dropped_recs:
            notes.append(f"{dropped_recs} unsupported recommendation(s) removed")
        verified = answer.model_copy(
            update={"citations": kept, "recommendations": recommendations, "notes": notes}
        )
        return verified, result
