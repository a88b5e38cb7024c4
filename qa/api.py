"""The Python API: `Assistant.open(store).ask(question) -> Answer`.

    >>> from qa import Assistant                                     # doctest: +SKIP
    >>> assistant = Assistant.open(".store")                         # doctest: +SKIP
    >>> answer = assistant.ask("我是零基础，先学哪个框架？")           # doctest: +SKIP
    >>> answer.recommendations[0].name                               # doctest: +SKIP
    'PyTorch'

An `Assistant` never changes after it is built and is safe to call from several threads. The LLM
is given when it is opened (`Assistant.open(store, llm="auto")`); `with_llm` makes another
assistant over the same store parts with another LLM (or none).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel

from ingest.embed import CachingEmbedder, Embedder, make_embedder
from ingest.lexical import LexicalIndex
from ingest.vector import DenseIndex
from kg.documents import EvidenceUnit, Snippet, SnippetStatus
from kg.errors import QuestionError, StoreError
from kg.graph import GraphStats
from kg.heap import no_collection
from kg.lexicon import Lexicon
from kg.schema import IDEA_TYPES, NodeType
from kg.store import (
    LEXICAL_FILE,
    UNIT_DOCS_FILE,
    UNIT_NORMS_FILE,
    UNIT_PROFILES_FILE,
    UNITS_LEXICAL_FILE,
    Store,
)
from qa.decide.candidates import section_labels
from qa.decide.graph.advice import GraphComposer, find_conflicts
from qa.decide.graph.evidence import EvidenceComposer
from qa.decide.reader import ReaderModel, draft_from_verdict
from qa.decide.reading import Reading
from qa.read.frame import (
    asks_reason,
    asks_setting,
    linked_options,
    named_things,
    offers_alternatives,
    said_options,
    strip_injection,
)
from qa.read.understand import QuestionReader
from qa.render import as_graph_only, render_draft
from qa.retrieve import Retriever
from qa.retrieve.units import RankedUnit, UnitSearch
from qa.schema import (
    Answer,
    AnswerDraft,
    EvidenceBundle,
    EvidenceSpan,
    Fallback,
    FallbackKind,
    Question,
    SnippetReport,
)
from qa.snippets.store_check import apply_cached_results
from qa.verify import CitationVerifier
from qa.workers import AnswerPool, PoolUnavailable

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["AnswerEvent", "Assistant", "StoreStatus"]

#: Linked entities too common to steer retrieval (a platform, a criterion, a generic device).
_GENERIC_LINKS = frozenset(
    {
        NodeType.PLATFORM,
        NodeType.CRITERION,
        NodeType.HARDWARE,
        NodeType.LANGUAGE,
        *IDEA_TYPES,
        NodeType.ORGANIZATION,
    }
)
_SNIPPET_WORDS = (
    "代码",
    "示例",
    "命令",
    "怎么写",
    "example",
    "code",
    "snippet",
    "command",
    "how do i",
)


class StoreStatus(BaseModel):
    """What the UI status line shows."""

    store: str
    documents: int
    stats: GraphStats
    embedder: str
    backend: str


class AnswerEvent(BaseModel):
    """A step of a streamed answer: the graph answer, LLM text deltas, then the final answer."""

    kind: Literal["graph", "delta", "final"]
    text: str = ""
    answer: Answer | None = None


class Assistant:
    """Answers questions from one store; immutable once built (see the module docstring).

    `embedder` builds the query embedder on first use (None: lexical and graph retrieval only);
    `cache_dir` is where jieba's array dictionary is kept (`Settings.cache_dir`).
    """

    def __init__(
        self,
        store: Store,
        lexicon: Lexicon,
        *,
        embedder: Callable[[], Embedder] | None = None,
        llm: ReaderModel | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.graph = store.graph()
        self.lexicon = lexicon
        records = list(store.records())
        self.documents = {r.document.id: r.document.text for r in records}
        # validation status cached by `kgqa snippets list|check` (stale or missing: unchecked)
        self.snippets: list[Snippet] = apply_cached_results(
            store, [s for r in records for s in r.snippets]
        )
        chunks = [c for r in records for c in r.chunks]
        vectors = [store.doc_vectors(r.document.id) for r in records]
        dense = None
        if chunks:
            matrix = np.concatenate([v for v in vectors if len(v)], axis=0).astype(np.float32)
            dense = DenseIndex([c.id for c in chunks], matrix, store.manifest.embedder)
        lexical = LexicalIndex.from_arrays(store.arrays(LEXICAL_FILE), cache_dir=cache_dir)
        self.tokenizer = lexical.tokenizer
        self.reader = QuestionReader(self.graph, lexicon)
        self.retriever = Retriever(self.graph, lexicon, chunks, lexical, dense, embedder)
        self.composer = GraphComposer(self.graph, find_conflicts(self.graph), self.tokenizer)
        self.verifier = CitationVerifier(self.graph, self.documents)
        units_lexical = LexicalIndex.from_arrays(
            store.arrays(UNITS_LEXICAL_FILE), cache_dir=cache_dir
        )
        grouped = [store.optional_arrays(n) for n in (UNIT_DOCS_FILE, UNIT_PROFILES_FILE)]
        docs, profiles = (
            None if g is None else LexicalIndex.from_arrays(g, tokenizer=units_lexical.tokenizer)
            for g in grouped
        )
        units = store.units()
        self.units = UnitSearch(
            units,
            units_lexical,
            lexicon,
            chunks,
            grouped=(docs, profiles) if docs is not None and profiles is not None else None,
            text_norm=_text_norm(store, units),
        )
        self.evidence = EvidenceComposer(self.graph, self.units, self.documents)
        self.section_labels = section_labels(units, self.graph)
        self._llm = llm
        self._pool: AnswerPool | None = None

    @property
    def llm(self) -> ReaderModel | None:
        """The LLM answerer given when this assistant was built (None: the graph composer only)."""
        return self._llm

    def with_llm(self, llm: ReaderModel | None) -> Assistant:
        """Another assistant over the same store, graph and indexes (shared, read-only) that
        answers with `llm` (None: the graph composer only). This one is left as it is."""
        other = copy.copy(self)
        other._llm = llm
        return other

    def warm_up(self) -> None:
        """Load what the first question loads (the query embedder, the tokenizers'
        dictionaries) by answering one without the reader, so that the first question a user
        asks is as quick as the rest."""
        self.ask("warm up", use_llm=False)

    def answering_in(self, pool: AnswerPool | None) -> Assistant:
        """Another assistant over the same store whose `ask` and `ask_stream` are answered by
        `pool`'s worker processes (`qa.workers`), or here where no worker can (None: here).
        This one is left as it is."""
        other = copy.copy(self)
        other._pool = pool
        return other

    @classmethod
    def open(
        cls,
        store: str | Path,
        *,
        settings: Settings | None = None,
        dense: bool = True,
        llm: str | ReaderModel | None = None,
    ) -> Assistant:
        """Open a store built by `kgqa ingest`.

        `settings` default to `qa.config.load_settings()` (kgqa.toml, then `KGQA_*` variables);
        `dense=False` skips the embedding model; `llm` is a reader, or a spec for
        `qa.llm.answerer.make_llm`: `none` (the graph alone), `auto` (the configured server if it
        answers, else the embedded model where it is installed), a URL (raises `LLMError` when
        nothing answers there) or `vllm-offline:MODEL_DIR`; None: `settings.reader` (`auto`).
        """
        if settings is None:
            from qa.config import load_settings

            settings = load_settings()
        opened = Store.open(Path(store))
        spec = opened.manifest.embedder_spec
        cache_dir, spin = settings.cache_dir, settings.ort_spin
        factory = (
            # the retriever and the unit search embed the same question: once, remembered
            (lambda: CachingEmbedder(make_embedder(spec, cache_dir=cache_dir, spin=spin), 256))
            if dense
            else None
        )
        lexicon = Lexicon.default(tuple(settings.lexicon))
        with no_collection(settle=True):
            assistant = cls(opened, lexicon, embedder=factory, cache_dir=cache_dir)
        if llm is None:
            llm = settings.reader
        if llm == "none":
            llm = None
        elif isinstance(llm, str):
            from qa.llm.answerer import make_llm  # the LLM client only when one is asked for
            from qa.llm.embedded import start_embedded

            llm = make_llm(llm, settings.llm, embedded=lambda: start_embedded(settings))
        return assistant if llm is None else assistant.with_llm(llm)

    # -- asking -------------------------------------------------------------------------------
    def understand(self, question: str) -> Question:
        """Validate and link a question (raises `QuestionError`)."""
        return self.reader.read(question)

    def graph_draft(self, question: Question) -> AnswerDraft:
        """The evidence composer's draft for a question, verified (not yet rendered)."""
        return self._drafted(question)[0]

    def _ranked(self, question: Question) -> tuple[str, list[str], list[RankedUnit]]:
        """The question's text (instructions inside it as text), the linked entities that
        steer retrieval, and its ranked units."""
        text, _injected = strip_injection(question.text)
        linked = [e for e in question.entity_ids if e in self.graph]
        specific = [e for e in linked if self._steers(e)]
        names = [
            n for e in specific for n in [self.graph.entity(e).name, *self.graph.entity(e).aliases]
        ]
        embedder = self.retriever._embedder_or_none()
        dense_hits = (
            self.retriever.dense.search_text(text, embedder, 30)
            if embedder is not None and self.retriever.dense is not None
            else []
        )
        ranked = self.units.search(
            text, linked=specific, entity_names=names, dense_chunks=dense_hits
        )
        return text, specific, ranked

    def _drafted(self, question: Question) -> tuple[AnswerDraft, list[str], list[RankedUnit]]:
        """The graph's verified draft, with the steering entities and ranked units it read."""
        bundle = self.retriever.retrieve(question)
        text, specific, ranked = self._ranked(question)
        linked = [e for e in question.entity_ids if e in self.graph]

        def hop(query: str, entity: str, about: set[str]) -> list[RankedUnit]:
            node = self.graph.entity(entity)
            return self.units.search(
                query, linked=[entity], entity_names=[node.name, *node.aliases], about=about
            )

        draft = self.evidence.compose(
            question.text,
            question.frame,
            question.language,
            linked,
            ranked,
            hop=hop,
            situational=self.composer.situational(question, bundle),
            surfaces=[((e.surface, e.start), e.id) for e in question.entities]
            + [
                ((m.surface, m.start), m.key)
                for m in self.lexicon.entity_mentions(text)
                if m.key not in self.graph
            ],
        )
        if draft.abstain is None:
            draft.snippets = self._snippets(question, bundle)
        verified, _result = self.verifier.verify_draft(draft)
        return verified, specific, ranked

    def reading(
        self, question: Question, draft: AnswerDraft, specific: list[str], ranked: list[RankedUnit]
    ) -> Reading:
        """What the reader is shown for a question (`qa.decide.reading`)."""
        frame = question.frame
        # the alternatives it names in the clause that asks, by their shape, else two things
        # it links to, joined (by the graph's names for them: "剪枝" is Pruning); else those it
        # names by their shape before it ("A 和 B 比，哪个…?"); else the words next to its
        # joiner that the sources say. Where the clause that asks names its own, a list before
        # it is the asker's situation ("Foo、Bar 这类模型，A 和 B 选哪个？")
        at, until = frame.asking_sentence
        asking = at < until  # (0, 0): no clause was found to ask, and the whole question does
        offered = [o for o in frame.options if not asking or at <= o.start < until]
        options = [o.text for o in offered]
        if not options:
            linked = {e.surface: e.id for e in question.entities if e.id in self.graph}
            offered = linked_options(
                frame.text,
                frame.asking_sentence,
                [(surface, frame.text.find(surface, at)) for surface in linked],
            )
            options = [self.graph.entity(linked[o.text]).name for o in offered]
            if not options:
                offered = frame.options
                options = [o.text for o in offered]
        if not options:  # alternatives written as plain words ("按层切还是按张量切")
            offered = said_options(frame.text, frame.asking_sentence, self.evidence.says)
            options = [o.text for o in offered]
        # a document that alone names a thing the question names (its project, an option, a
        # model) is read, its best units added where the ranking found none of it
        named = [d for n, _ in named_things(frame.text) if (d := self.evidence.document_naming(n))]
        ranked_docs = {r.unit.doc for r in ranked}
        ranked = [
            *ranked,
            *(
                r
                for d in dict.fromkeys(named)
                if d not in ranked_docs
                for r in self.units.best_of_document(frame.text, d)
            ),
        ]
        # a question that asks how much or how many and to choose nothing: a figure answers it
        figure = frame.amount and not frame.choice
        return Reading.gather(
            frame.text,
            question.language,
            # whether it asks for a pick is the reader's to say (none), except where a figure
            # answers it, it asks yes or no of what a thing is or does, or asks why (the
            # evidence answers, not a name)
            choose=frame.choice
            or not (
                figure or frame.whether or asks_reason(frame.text[slice(*frame.asking_sentence)])
            ),
            ranked=ranked,
            figure=figure,
            setting=asks_setting(frame.text),
            graph=self.graph,
            documents=self.documents,
            options=options,
            # "A or B?": the answer is one of them (not "such as A or B", nor "A 和 B 都装好了")
            alternatives=offers_alternatives(frame.text, offered, frame.asking_sentence),
            named=question.entity_ids,
            draft=draft,
            labels=self.section_labels,
            first_docs=[
                *(doc for e in specific for doc in self.evidence.documents_about(e)),
                *named,
            ],
            window=self.evidence.section_window,
        )

    def _steers(self, entity: str) -> bool:
        """Whether a linked entity should steer retrieval: a thing one uses, or a piece of
        hardware, a platform or a concept few units name ("AWS Inferentia", not "GPU")."""
        if self.graph.entity(entity).type not in _GENERIC_LINKS:
            return True
        named_in = len(self.units.by_mention.get(entity, []))
        return named_in <= max(2, len(self.units.units) // 100)

    def graph_answer(self, question: Question) -> tuple[Answer, AnswerDraft]:
        """The graph's answer, rendered from its verified draft, and that draft."""
        draft = self.graph_draft(question)
        return render_draft(draft, self.graph), draft

    def ask(self, question: str, *, qid: str | None = None, use_llm: bool = True) -> Answer:
        """One answer; never raises for bad questions (they get an explaining, declining answer)."""
        final: Answer | None = None
        for event in self.ask_stream(question, qid=qid, use_llm=use_llm):
            if event.kind == "final":
                final = event.answer
        assert final is not None
        return final

    def ask_stream(
        self, question: str, *, qid: str | None = None, use_llm: bool = True
    ) -> Iterator[AnswerEvent]:
        """The graph answer at once, then (with an LLM) text deltas, then the final answer.
        With a pool (`answering_in`), a worker process answers; where none can, this one does."""
        if self._pool is not None:
            try:
                yield from self._pool.ask_stream(question, qid=qid, use_llm=use_llm)
                return
            except PoolUnavailable:
                pass  # answered here, from the start
        started = time.perf_counter()

        def stamp(answer: Answer) -> Answer:
            elapsed = (time.perf_counter() - started) * 1000
            return answer.model_copy(update={"id": qid, "latency_ms": round(elapsed, 2)})

        try:
            parsed = self.understand(question)
        except QuestionError as err:
            text = question if isinstance(question, str) else ""
            answer = Answer(
                question=text[:200],
                answer=str(err),
                abstained=True,
                notes=[f"rejected: {err}"],
                fallback=Fallback(kind=FallbackKind.REJECTED, detail=str(err)),
            )
            yield AnswerEvent(kind="final", answer=stamp(answer))
            return
        draft, specific, ranked = self._drafted(parsed)
        graph_answer = render_draft(draft, self.graph)
        if self._llm is None or not use_llm:
            answer = as_graph_only(graph_answer, draft.language)
            yield AnswerEvent(kind="final", answer=stamp(answer))
            return
        if graph_answer.abstained:  # the sources do not cover it: nothing for a reader to read
            yield AnswerEvent(kind="final", answer=stamp(graph_answer))
            return
        yield AnswerEvent(kind="graph", answer=stamp(graph_answer))
        reading = self.reading(parsed, draft, specific, ranked)
        # the graph's answer stands in, saying so, when the reader fails
        stand_in = as_graph_only(graph_answer, draft.language)
        yield from self._reader_events(self._llm, reading, draft, stand_in, stamp)

    def _reader_events(
        self,
        reader: ReaderModel,
        reading: Reading,
        draft: AnswerDraft,
        graph_answer: Answer,
        stamp: Callable[[Answer], Answer],
    ) -> Iterator[AnswerEvent]:
        """The reader's sentence as it streams, then its draft verified and rendered; the
        graph's answer (with a typed fallback) when the reader fails or keeps nothing
        verifiable."""
        try:
            for item in reader.stream(reading):
                if isinstance(item, str):
                    yield AnswerEvent(kind="delta", text=item)
                    continue
                made = draft_from_verdict(reading, item, self.evidence.point, draft)
                verified, _result = self.verifier.verify_draft(made)
                if not verified.points():
                    why = "the reader's answer kept no verifiable evidence"
                    fallback = _fall_back(graph_answer, FallbackKind.LLM_UNVERIFIED, why)
                    yield AnswerEvent(kind="final", answer=stamp(fallback))
                else:
                    answer = render_draft(verified, self.graph)
                    read = [
                        EvidenceSpan(doc=u.doc, start=u.start, end=u.end) for u in reading.evidence
                    ]
                    yield AnswerEvent(
                        kind="final", answer=stamp(answer).model_copy(update={"read": read})
                    )
                return
            why = "the reader's stream ended without an answer"
            fallback = _fall_back(graph_answer, FallbackKind.LLM_BAD_RESPONSE, why)
        except Exception as err:  # any reader failure falls back to the graph answer
            detail = f"{type(err).__name__}: {err}"
            fallback = _fall_back(graph_answer, FallbackKind.of_llm_error(err), detail)
        yield AnswerEvent(kind="final", answer=stamp(fallback))

    # -- pieces -------------------------------------------------------------------------------
    def _snippets(self, question: Question, bundle: EvidenceBundle) -> list[SnippetReport]:
        """Snippets inside the retrieved text, when the question asks for code or commands."""
        text = question.text.casefold()
        if not any(word in text for word in _SNIPPET_WORDS):
            return []
        spans = [(c.doc, c.start, c.end) for c in bundle.chunks[:3]]
        reports = []
        for snippet in self.snippets:
            if any(
                doc == snippet.doc and s < snippet.end and snippet.start < e for doc, s, e in spans
            ):
                status = (
                    snippet.status
                    if snippet.status != SnippetStatus.UNCHECKED
                    else SnippetStatus.SKIPPED
                )
                detail = snippet.detail or "not validated yet: run `kgqa snippets check`"
                reports.append(
                    SnippetReport(
                        language=snippet.language, code=snippet.code, status=status, detail=detail
                    )
                )
        return reports[:2]

    def status(self) -> StoreStatus:
        """Store counts and the answering backend, for status lines."""
        return StoreStatus(
            store=str(self.store.root),
            documents=len(self.documents),
            stats=self.graph.stats(),
            embedder=self.store.manifest.embedder,
            backend=f"llm:{self._llm.name}" if self._llm else "graph",
        )


def _text_norm(store: Store, units: list[EvidenceUnit]) -> str | None:
    """The units' texts normalised (`ingest.units.units_text_norm`) as ingest kept them, by
    document (None where the store has no such file, or not for these units' documents)."""
    raw = store.optional_bytes(UNIT_NORMS_FILE)
    if raw is None:
        return None
    try:
        norms = json.loads(raw)
    except ValueError as err:
        raise StoreError(f"{store.dir / UNIT_NORMS_FILE} is unreadable: rerun kgqa ingest") from err
    docs = {u.doc for u in units}
    if not isinstance(norms, dict) or set(norms) != docs:
        return None
    return "".join(str(norms[doc]) for doc in sorted(docs))


def _fall_back(draft: Answer, kind: FallbackKind, detail: str) -> Answer:
    """The graph answer standing in for the LLM's, with the typed reason and a note saying it."""
    what = "LLM answerer failed" if kind is FallbackKind.LLM_FAILED else "LLM unavailable"
    note = f"{what}, showing the graph answer: {detail}"
    return draft.model_copy(
        update={"notes": [*draft.notes, note], "fallback": Fallback(kind=kind, detail=detail)}
    )
