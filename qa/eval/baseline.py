"""The naive-RAG baseline of `kgqa eval --baseline naive`.

A llama-index `VectorStoreIndex` over the same chunks and vectors as the store (`ingest.vector`),
top-k by cosine, no graph. Without an LLM its "answer" is the text of the top chunks and its
recommendation the first solution-type lexicon entity named in the top chunk; with a reader, the
reader reads those chunks alone (each chunk one evidence item, the names their structure gives as
candidates, no graph paths to cite). It never abstains on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ingest.embed import Embedder
from ingest.vector import as_llamaindex, naive_retriever
from kg.documents import Chunk, EvidenceUnit, UnitKind
from kg.errors import LLMError, QuestionError
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import SOLUTION_TYPES
from kg.store import Store
from qa.decide.reader import ReaderModel, Verdict, draft_from_verdict
from qa.decide.reading import Reading
from qa.eval.records import ChunkSpan, EvalRecord, GoldQuestion
from qa.render import render_draft
from qa.retrieve.units import RankedUnit
from qa.schema import (
    Answer,
    AnswerDraft,
    DraftPoint,
    Fallback,
    FallbackKind,
    Question,
    Recommendation,
)

__all__ = ["BASELINE_BACKEND", "NaiveRAG", "first_solution"]

BASELINE_BACKEND = "naive-rag"


def first_solution(text: str, lexicon: Lexicon) -> Recommendation | None:
    """The first lexicon entity of a solution type named in `text`.

    >>> first_solution("单机多卡用 DDP，大模型用 FSDP", Lexicon.default()).name
    'DDP'
    >>> first_solution("no tools here", Lexicon.default()) is None
    True
    """
    for mention in sorted(lexicon.entity_mentions(text), key=lambda m: m.start):
        entry = lexicon.entries.get(mention.key)
        if entry is not None and entry.type in SOLUTION_TYPES:
            return Recommendation(
                id=entry.id, name=entry.name, reason="named in the top retrieved chunk"
            )
    return None


class NaiveRAG:
    """Answers gold questions from the top-k chunks of a llama-index vector index."""

    def __init__(
        self,
        chunks: list[Chunk],
        vectors: npt.NDArray[np.float32],
        embedder: Embedder,
        lexicon: Lexicon,
        *,
        k: int = 6,
        llm: ReaderModel | None = None,
        reader: Callable[[str], Question] | None = None,
        documents: dict[str, str] | None = None,
    ) -> None:
        self.chunks = {c.id: c for c in chunks}
        self.documents = documents or {}
        self.lexicon = lexicon
        self.k = k
        self.llm = llm
        self.reader = reader
        self.retrieve = naive_retriever(as_llamaindex(chunks, vectors, embedder), k)

    @classmethod
    def open(
        cls,
        store: Store,
        embedder: Embedder,
        lexicon: Lexicon,
        *,
        k: int = 6,
        llm: ReaderModel | None = None,
        reader: Callable[[str], Question] | None = None,
    ) -> NaiveRAG:
        """Over every chunk of a store, with the vectors ingest stored (nothing is re-embedded)."""
        records = list(store.records())
        chunks = [c for r in records for c in r.chunks]
        parts = [store.doc_vectors(r.document.id) for r in records]
        vectors = (
            np.concatenate([p for p in parts if len(p)]) if chunks else np.zeros((0, embedder.dim))
        )
        return cls(
            chunks,
            vectors.astype(np.float32),
            embedder,
            lexicon,
            k=k,
            llm=llm,
            reader=reader,
            documents={r.document.id: r.document.text for r in records},
        )

    def __call__(self, question: GoldQuestion) -> EvalRecord:
        """The baseline's answer to one question, timed, with its retrieved chunk spans."""
        started = time.perf_counter()
        hits = [(self.chunks[cid], score) for cid, score in self.retrieve(question.question)]
        top = first_solution(hits[0][0].text, self.lexicon) if hits else None
        answer = Answer(
            id=question.id,
            question=question.question,
            answer="\n\n".join(chunk.text for chunk, _ in hits),
            recommendations=[top] if top else [],
            backend=BASELINE_BACKEND,
        )
        if self.llm is not None and self.reader is not None:
            answer = self._llm_answer(question.question, hits, answer)
        elapsed = round((time.perf_counter() - started) * 1000, 2)
        spans = [ChunkSpan(doc=c.doc, start=c.start, end=c.end) for c, _ in hits]
        return EvalRecord(
            **{**answer.model_dump(), "latency_ms": elapsed, "id": question.id}, retrieved=spans
        )

    def _llm_answer(self, text: str, hits: list[tuple[Chunk, float]], draft: Answer) -> Answer:
        """The reader's answer over the top chunks alone: each chunk an evidence item."""
        assert self.llm is not None and self.reader is not None
        try:
            parsed = self.reader(text)
            frame = parsed.frame
            units = [
                EvidenceUnit(
                    id=c.id,
                    doc=c.doc,
                    start=c.start,
                    end=c.end,
                    kind=UnitKind.SENTENCE,
                    text=c.text,
                    heading_path=c.heading_path,
                )
                for c, _score in hits
            ]
            reading = Reading.gather(
                frame.text,
                parsed.language,
                choose=frame.choice or frame.measured or bool(frame.options),
                ranked=[RankedUnit(u, 0.0, 0.0, 0.0, False) for u in units],
                graph=KnowledgeGraph(),
                documents=self.documents,
                options=[o.text for o in frame.options],
            )
            verdict = next(v for v in self.llm.stream(reading) if isinstance(v, Verdict))
            base = AnswerDraft(
                question=parsed.text, language=parsed.language, backend=BASELINE_BACKEND
            )
            made = draft_from_verdict(reading, verdict, _chunk_point, base)
            answer = render_draft(made, KnowledgeGraph())
        except (LLMError, QuestionError, StopIteration) as err:
            kind = FallbackKind.of_llm_error(err) if isinstance(err, LLMError) else None
            fallback = Fallback(kind=kind or FallbackKind.REJECTED, detail=str(err))
            notes = [*draft.notes, f"LLM failed: {err}"]
            return draft.model_copy(update={"notes": notes, "fallback": fallback})
        return answer.model_copy(update={"backend": f"{BASELINE_BACKEND}+{answer.backend}"})


def _chunk_point(unit: EvidenceUnit, _prefer: str | None) -> DraftPoint:
    """A chunk as an answer point: its text is its quote (no graph edge)."""
    return DraftPoint(doc=unit.doc, start=unit.start, end=unit.end, quote=unit.text, text=unit.text)
