"""The Answer contract (DESIGN.md), the typed evidence that flows from retrieval to answerers,
and the seam an LLM answerer implements.

A `Question` is what understanding makes of the text; retrieval turns it into an `EvidenceBundle`
of `GraphPath`s (lists of `PathEdge`s that exist in the graph) and `RetrievedChunk`s; answerers turn
that into an `Answer`, whose `Citation`s wrap paths. The `Answer` object is what `kgqa ask --json`
prints and what `kgqa eval --out` writes, one per line. Why an answer is not the one asked for (a
rejected question, a question the sources do not cover, a reader's answer replaced by the graph
answer) is a typed `Fallback`; `Answer.notes` is human text that nothing parses. The reader's
seam (`ReaderModel`) lives with the reader, in `qa.decide.reader`.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kg.documents import Chunk, SnippetStatus
from kg.errors import LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable
from kg.schema import Evidence, RelationType

if TYPE_CHECKING:
    from qa.read.frame import QuestionFrame

__all__ = [
    "AbstainReason",
    "Answer",
    "AnswerDraft",
    "Citation",
    "Conflict",
    "DraftPoint",
    "DraftRecommendation",
    "EvidenceBundle",
    "EvidenceSpan",
    "Fallback",
    "FallbackKind",
    "GraphPath",
    "Language",
    "LinkedEntity",
    "PathEdge",
    "Question",
    "QuestionKind",
    "Recommendation",
    "RelationType",
    "RetrievedChunk",
    "SnippetReport",
    "SnippetStatus",
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
    relation: RelationType
    target: str
    evidence: list[Evidence] = Field(default_factory=list)


class GraphPath(BaseModel):
    """A path of a few hops through the graph, as retrieval produced it, with its score."""

    edges: list[PathEdge]
    score: float = 0.0

    @property
    def id(self) -> str:
        """Stable id of the path: its triples joined.

        >>> GraphPath(edges=[PathEdge(source="a", relation="RUNS_ON", target="b")]).id
        'a|RUNS_ON|b'
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
    relation: RelationType
    claims: list[PathEdge] = Field(description="one edge per disagreeing claim, with evidence")
    summary: str = ""


class SnippetReport(BaseModel):
    """A code snippet shown in an answer, with its validation status."""

    language: str = "python"
    code: str
    status: SnippetStatus = Field(description="passed | failed | skipped (| unchecked)")
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

    @classmethod
    def from_chunk(cls, chunk: Chunk, score: float) -> RetrievedChunk:
        """A stored chunk as a retrieval hit with its score."""
        return cls(
            id=chunk.id,
            doc=chunk.doc,
            start=chunk.start,
            end=chunk.end,
            text=chunk.text,
            heading_path=chunk.heading_path,
            score=score,
        )


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


class FallbackKind(StrEnum):
    """Why an answer is not the answer that was asked for (`Answer.fallback.kind`)."""

    REJECTED = "rejected"  # the question is unusable (empty, too long, not text)
    NOT_COVERED = "not-covered"  # the sources do not cover it: the assistant declines
    LLM_UNAVAILABLE = "llm-unavailable"  # nothing answers at the LLM server (the graph answers)
    LLM_TIMEOUT = "llm-timeout"  # the LLM took too long (the graph answers)
    LLM_BAD_RESPONSE = "llm-bad-response"  # the LLM answered something unusable (the graph answers)
    LLM_UNVERIFIED = "llm-unverified"  # no citation of the LLM's survived verification
    LLM_FAILED = "llm-failed"  # the LLM answerer itself raised (a defect; the graph answers)

    @property
    def is_llm(self) -> bool:
        """Whether the LLM's answer was replaced (the graph composer's answer stands).

        >>> FallbackKind.LLM_TIMEOUT.is_llm, FallbackKind.REJECTED.is_llm
        (True, False)
        """
        return self.value.startswith("llm-")

    @classmethod
    def of_llm_error(cls, err: BaseException) -> FallbackKind:
        """The kind of fallback an LLM answerer's exception causes.

        >>> FallbackKind.of_llm_error(LLMTimeout("slow")), FallbackKind.of_llm_error(KeyError())
        (<FallbackKind.LLM_TIMEOUT: 'llm-timeout'>, <FallbackKind.LLM_FAILED: 'llm-failed'>)
        """
        if isinstance(err, LLMTimeout):
            return cls.LLM_TIMEOUT
        if isinstance(err, LLMUnavailable):
            return cls.LLM_UNAVAILABLE
        if isinstance(err, LLMBadResponse):
            return cls.LLM_BAD_RESPONSE
        return cls.LLM_UNAVAILABLE if isinstance(err, LLMError) else cls.LLM_FAILED


class Fallback(BaseModel):
    """Why an answer falls back: a kind to count and branch on, and a detail to show."""

    kind: FallbackKind
    detail: str = ""


class EvidenceSpan(BaseModel):
    """Where a piece of evidence lies: a document and a character span of it."""

    doc: str
    start: int
    end: int


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
        default_factory=list, description="extension: human text: fallbacks, dropped citations"
    )
    fallback: Fallback | None = Field(
        default=None, description="extension: why the answer falls back (None: it does not)"
    )
    read: list[EvidenceSpan] = Field(
        default_factory=list,
        description="extension: the evidence the reader model read ([1].. in order); empty for "
        "a graph-only answer",
    )


class LinkedEntity(BaseModel):
    """A graph node the question names, and how it was found."""

    id: str
    surface: str
    how: str = Field(description="lexicon | graph | fuzzy")
    start: int = -1


class Question(BaseModel):
    """A validated question with what it links to (made by `qa.read.understand.QuestionReader`)."""

    text: str
    language: Language
    kind: QuestionKind
    entities: list[LinkedEntity] = Field(default_factory=list)
    unknown_entities: list[str] = Field(
        default_factory=list, description="lexicon entities named but absent from the graph"
    )
    terms: set[str] = Field(default_factory=set)
    injection: bool = False

    @property
    def entity_ids(self) -> list[str]:
        """Linked ids in order of appearance, without repeats."""
        return list(dict.fromkeys(e.id for e in self.entities))

    @cached_property
    def frame(self) -> QuestionFrame:
        """What the question asks (`qa.read.frame.QuestionFrame`), read once for every stage
        after this one."""
        from qa.read.frame import QuestionFrame

        return QuestionFrame.read(self.text)


class AbstainReason(StrEnum):
    """Why an answerer declined (the detail says what exactly)."""

    NOT_COVERED = "not-covered"  # nothing relevant was retrieved
    UNKNOWN_NAME = "unknown-name"  # the question's key named thing is in no document
    NO_QUANTITY = "no-quantity"  # it asks for a number (a price, a rate) no source gives
    NO_EVIDENCE = "no-evidence"  # what was retrieved supports no answer
    LLM_DECLINED = "llm-declined"  # the LLM said the evidence does not answer it


class DraftPoint(BaseModel):
    """One thing an answer says: a source unit's text, its verbatim span, the edges citing it."""

    doc: str
    start: int
    end: int
    quote: str = Field(description="the verbatim text of the document between start and end")
    text: str = Field(description="what is shown: the quote without markup")
    context: str = Field(default="", description="a row's header or an item's lead-in")
    heading: str = Field(default="", description="the section the unit is in")
    edges: list[PathEdge] = Field(default_factory=list)
    code: bool = Field(default=False, description="a piece of a code block, shown as its lines")


class DraftRecommendation(BaseModel):
    """A recommended entity and the points that support it (best first)."""

    id: str = Field(description="a graph entity id, or `value:<text>` for a value a table states")
    name: str
    points: list[DraftPoint] = Field(default_factory=list)


class AnswerDraft(BaseModel):
    """Everything an answer will say, as structure: built by an answerer (the evidence composer,
    the LLM answerer), pruned by `qa.verify.verify_draft`, written by `qa.render.render_draft`.
    Nothing reaches the text that verification did not keep."""

    question: str
    language: Language
    recommendations: list[DraftRecommendation] = Field(default_factory=list)
    candidates: list[DraftRecommendation] = Field(
        default_factory=list,
        description="the other things weighed, each with its best point: not shown; an LLM's pool",
    )
    facts: list[DraftPoint] = Field(default_factory=list)
    caveats: list[DraftPoint] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    snippets: list[SnippetReport] = Field(default_factory=list)
    prose: str = Field(default="", description="a model's sentence shown above the evidence")
    abstain: AbstainReason | None = None
    abstain_detail: str = Field(default="", description="why, in English, for notes and logs")
    abstain_subject: str = Field(default="", description="the name or quantity the sources lack")
    injection: bool = False
    backend: str = "graph"
    notes: list[str] = Field(default_factory=list)

    def points(self) -> list[DraftPoint]:
        """Every point, in the order the answer shows them."""
        return [
            *(p for r in self.recommendations for p in r.points),
            *self.facts,
            *self.caveats,
        ]
