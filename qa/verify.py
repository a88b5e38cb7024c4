"""The citation verifier: every cited edge must exist, every quote must be verbatim in its document.

Anything else is dropped before an answer leaves, and counted in the answer's notes. Both answerers
(graph composer and LLM) pass through here.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from kg.graph import KnowledgeGraph
from kg.schema import Evidence
from qa.schema import Answer, Citation

__all__ = ["CitationVerifier", "VerificationResult", "quote_in_document"]

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

    def _edge_problem(self, citation: Citation) -> str | None:
        for edge in citation.path:
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

    def verify(self, answer: Answer) -> tuple[Answer, VerificationResult]:
        """The answer with only valid citations (and recommendations still supported)."""
        result = VerificationResult()
        kept: list[Citation] = []
        for citation in answer.citations:
            result.checked += 1
            problem = self._edge_problem(citation) if citation.path else "empty path"
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
