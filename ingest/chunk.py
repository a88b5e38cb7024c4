"""Heading-aware chunking: structural blocks -> retrieval chunks with exact spans.

A chunk never crosses a section boundary (a change of heading path), is cut at Chinese or English
sentence boundaries (`ingest.text.split_sentences`), and keeps tables and decision trees whole
when they fit `2 * max_chars` (otherwise they are cut between rows / items). Every chunk's text
is `doc.text[start:end]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ingest.text import split_sentences, strip_span
from kg.documents import Block, BlockKind, Chunk, Document
from kg.errors import IngestError

__all__ = ["chunk_document", "chunk_embedding_text"]

HEADING_SEPARATOR = " > "

# Where an over-long sentence may be cut when it has to be.
_SOFT_BREAKS = "，、：,: "

# Kinds whose blocks are kept whole when they fit, else cut between lines (rows / items).
_RIGID_KINDS = frozenset({BlockKind.TABLE, BlockKind.DECISION_TREE, BlockKind.CODE})


def _line_spans(text: str, offset: int) -> list[tuple[int, int]]:
    """Non-blank lines of `text` as spans shifted by `offset`.

    >>> _line_spans("a\\n\\n b\\n", 10)
    [(10, 11), (14, 15)]
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        s, e = strip_span(text, pos, pos + len(line))
        if s < e:
            spans.append((s + offset, e + offset))
        pos += len(line)
    return spans


def _cut_long(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Cut an over-long span into pieces of at most `size` characters, preferring to cut after
    a comma or a space in the second half of each piece.

    >>> t = "aaaa bbbb cccc"
    >>> [t[s:e] for s, e in _cut_long(t, 0, len(t), 6)]
    ['aaaa ', 'bbbb ', 'cccc']
    """
    pieces: list[tuple[int, int]] = []
    while end - start > size:
        window = text[start + size // 2 : start + size]
        soft = max(window.rfind(c) for c in _SOFT_BREAKS)
        cut = start + size // 2 + soft + 1 if soft >= 0 else start + size
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


@dataclass(frozen=True)
class _Unit:
    """An atomic span the packer never cuts; `sentence` units may be repeated as overlap."""

    start: int
    end: int
    limit: int
    sentence: bool


def _units(doc: Document, block: Block, max_chars: int) -> Iterator[_Unit]:
    """Cut one block into atomic units, each at most its own `limit` long."""
    if block.kind in _RIGID_KINDS:
        s, e = strip_span(doc.text, block.start, block.end)
        if e - s <= 2 * max_chars:
            yield _Unit(s, e, 2 * max_chars, sentence=False)
            return
        pieces = _line_spans(doc.text[block.start : block.end], block.start)
        sentence = False
    else:
        # List items (or the whole block) cut into sentences: an item never starts mid-sentence.
        ranges = block.item_spans if block.kind == BlockKind.LIST and block.item_spans else None
        pieces = [
            (s + start, e + start)
            for start, end in (ranges or [(block.start, block.end)])
            for s, e in split_sentences(doc.text[start:end])
        ]
        sentence = True
    limit = 2 * max_chars if not sentence else max_chars
    for s, e in pieces:
        for cs, ce in _cut_long(doc.text, s, e, limit):
            cs, ce = strip_span(doc.text, cs, ce)
            if cs < ce:
                yield _Unit(cs, ce, limit, sentence)


def _pack(units: list[_Unit], max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """Greedily pack consecutive units into spans of at most `max_chars` (a lone unit may reach
    its own limit); a new span repeats up to `overlap` trailing sentence units of the last one.
    """
    spans: list[tuple[int, int]] = []
    current: list[_Unit] = []
    for unit in units:
        if current and unit.end - current[0].start > max_chars:
            spans.append((current[0].start, current[-1].end))
            carried: list[_Unit] = []
            for previous in reversed(current[len(current) - overlap :] if overlap else []):
                if not previous.sentence:
                    break
                carried.insert(0, previous)
            # Overlap only when it still fits and does not repeat the whole previous chunk.
            fits = bool(carried) and unit.end - carried[0].start <= max_chars
            current = carried if fits and unit.sentence and len(carried) < len(current) else []
        current.append(unit)
    if current:
        spans.append((current[0].start, current[-1].end))
    return spans


def _sections(blocks: list[Block]) -> Iterator[tuple[tuple[str, ...], list[Block]]]:
    """Group consecutive non-heading blocks by heading path; a heading always starts a group."""
    path: tuple[str, ...] | None = None
    group: list[Block] = []
    for block in sorted(blocks, key=lambda b: b.start):
        if block.kind == BlockKind.HEADING or block.heading_path != path:
            if group and path is not None:
                yield path, group
            group = []
            path = block.heading_path
        if block.kind != BlockKind.HEADING:
            group.append(block)
    if group and path is not None:
        yield path, group


def chunk_document(
    doc: Document, blocks: list[Block], *, max_chars: int = 400, overlap_sentences: int = 1
) -> list[Chunk]:
    """Cut a parsed document into heading-aware chunks (sorted by start, ids stable).

    Heading blocks are not part of any chunk: their text lives in each chunk's `heading_path`
    (see `chunk_embedding_text`). Raises `IngestError` when a block's span disagrees with the
    document text.
    """
    if max_chars < 1 or overlap_sentences < 0:
        raise IngestError(
            f"bad chunking parameters max_chars={max_chars}, overlap={overlap_sentences}",
            doc=doc.id,
        )
    chunks: list[Chunk] = []
    for block in blocks:
        if doc.text[block.start : block.end] != block.text:
            raise IngestError(
                f"block {block.kind} at {block.start}-{block.end} does not match the document "
                "text; re-parse the document",
                doc=doc.id,
            )
    for path, group in _sections(blocks):
        units = [u for block in group for u in _units(doc, block, max_chars)]
        for start, end in _pack(units, max_chars, overlap_sentences):
            chunks.append(
                Chunk(
                    id=f"{doc.id}#{start}-{end}",
                    doc=doc.id,
                    start=start,
                    end=end,
                    text=doc.text[start:end],
                    heading_path=path,
                )
            )
    return chunks


def chunk_embedding_text(chunk: Chunk) -> str:
    """The text to embed (and to index lexically) for a chunk: heading path, newline, text.

    >>> path = ("一、对比", "1. 单卡")
    >>> c = Chunk(id="d#0-2", doc="d", start=0, end=2, text="正文", heading_path=path)
    >>> chunk_embedding_text(c)
    '一、对比 > 1. 单卡\\n正文'
    """
    if not chunk.heading_path:
        return chunk.text
    return HEADING_SEPARATOR.join(chunk.heading_path) + "\n" + chunk.text
