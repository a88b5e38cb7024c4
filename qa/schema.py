"""The Answer contract (DESIGN.md) and the typed evidence that flows from retrieval to answerers.

A `GraphPath` is a list of `PathEdge`s that exist in the graph; a `Citation` wraps one path. The
`Answer` object is what `kgqa ask --json` prints and what `kgqa eval --out` writes, one per line.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from kg.schema import Evidence

__all__ = [
    "Answer",
    "Citation",
    "Conflict",
    "EvidenceBundle",
    "GraphPath",
    "Language",
    "PathEdge",
    "QuestionKind",
    "Recommendation",
    "RetrievedChunk",
    "SnippetReport",
]


class Language(StrEnum):
    """Language of a question; answers follow it (mixed answers in Chinese)."""

    ZH = "zh"
    EN = "en"
    MIXED = "mixed"


class QuestionKind(StrEnum):
    """What the question asks for."""

    CHOOSE = "choose"
    COMPARE = "compare"
    FACT = "fact"
    HOW_TO = "how-to"


class PathEdge(BaseModel):
    """One edge of a cited path: a `source relation target` triple of the graph, with evidence."""

    source: str
    relation: str
    target: str
    evidence: list[Evidence] = Field(default_factory=list)


class GraphPath(BaseModel):
    """A path of a few hops through the graph, as retrieval produced it, with its score."""

    edges: list[PathEdge]
    score: float = 0.0

    @property
    def id(self) -> str:
        """Stable id of the path: its triples joined.

        >>> GraphPath(edges=[PathEdge(source="a", relation="R", target="b")]).id
        'a|R|b'
        """
        return ";".join(f"{e.source}|{e.relation}|{e.target}" for e in self.edges)


class Citation(BaseModel):
    """A cited path (DESIGN.md: `{"path": [edge, ...]}`)."""

    path: list[PathEdge]


class Recommendation(BaseModel):
    """One recommended entity, best first in `Answer.recommendations`."""

    id: str
    name: str
    reason: str = ""


class Conflict(BaseModel):
    """Two sources that disagree about the same subject and relation."""

    subject: str
    relation: str
    claims: list[PathEdge] = Field(description="one edge per disagreeing claim, with evidence")
    summary: str = ""


class SnippetReport(BaseModel):
    """A code snippet shown in an answer, with its validation status."""

    language: str = "python"
    code: str
    status: str = Field(description="passed | failed | skipped")
    detail: str = ""


class RetrievedChunk(BaseModel):
    """A text chunk hit, fused from dense and lexical retrieval."""

    id: str
    doc: str
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...] = ()
    score: float = 0.0


class EvidenceBundle(BaseModel):
    """What retrieval hands to an answerer: linked entities, ranked paths, ranked chunks."""

    question: str
    language: Language
    kind: QuestionKind
    linked: list[str] = Field(default_factory=list, description="entity ids found in the question")
    situations: dict[str, float] = Field(
        default_factory=dict, description="situation node id -> how well the question matches it"
    )
    paths: list[GraphPath] = Field(default_factory=list)
    chunks: list[RetrievedChunk] = Field(default_factory=list)


class Answer(BaseModel):
    """The public Answer object (DESIGN.md)."""

    id: str | None = None
    question: str
    answer: str
    recommendations: list[Recommendation] = Field(default_factory=list)
    abstained: bool = False
    citations: list[Citation] = Field(default_factory=list)
    snippets: list[SnippetReport] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    backend: str = "graph"
    latency_ms: float = 0.0
    notes: list[str] = Field(
        default_factory=list, description="extension: why a fallback happened, dropped citations"
    )
