"""Typed records for the text side of the store: documents, structural blocks, chunks, snippets.

A `Document` is what a loader returns; the structure parser cuts it into `Block`s (each keeps its
character span in `Document.text`); the index cuts it into `Chunk`s; code blocks become `Snippet`s.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Block",
    "BlockKind",
    "Chunk",
    "Document",
    "EvidenceUnit",
    "Snippet",
    "SnippetStatus",
    "UnitKind",
    "content_hash",
]


def content_hash(text: str) -> str:
    """sha256 of the UTF-8 text, hex.

    >>> content_hash("")[:12]
    'e3b0c44298fc'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Document(BaseModel):
    """A loaded source document. `text` is decoded text; every span indexes into it."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="path relative to its corpus root, '/'-separated")
    text: str
    hash: str = Field(description="content_hash(text)")
    encoding: str = "utf-8"
    media_type: str = Field(
        default="text/plain", description="text/plain, text/markdown, text/html"
    )

    @classmethod
    def from_text(
        cls, doc_id: str, text: str, *, encoding: str = "utf-8", media_type: str = "text/plain"
    ) -> Document:
        """Build a document and its content hash from decoded text."""
        return cls(
            id=doc_id, text=text, hash=content_hash(text), encoding=encoding, media_type=media_type
        )


class BlockKind(StrEnum):
    """Structural kinds the parser recognises."""

    HEADING = "heading"
    TABLE = "table"
    DECISION_TREE = "decision_tree"
    LIST = "list"
    DEFINITION = "definition"  # "A：B" / "A: B"
    CODE = "code"
    PROSE = "prose"


class Block(BaseModel):
    """A structural piece of a document.

    `start`/`end` index `Document.text`; `text == document.text[start:end]` always holds.
    Tables carry `rows` (header first) as cell strings with `cell_spans` into the document;
    list and tree blocks carry one item per line in `items` with `item_spans`, and `depths` gives
    each item's nesting level (0 = top). Code blocks carry `language` (may be None) and the
    repaired code in `code` (indentation recovered where it was lost).
    """

    kind: BlockKind
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    heading_path: tuple[str, ...] = ()
    level: int = Field(default=0, description="heading level for HEADING blocks")
    rows: list[list[str]] = Field(default_factory=list)
    cell_spans: list[list[tuple[int, int]]] = Field(default_factory=list)
    items: list[str] = Field(default_factory=list)
    item_spans: list[tuple[int, int]] = Field(default_factory=list)
    depths: list[int] = Field(default_factory=list)
    term: str | None = Field(default=None, description="DEFINITION: the part before the colon")
    language: str | None = None
    code: str | None = None


class Chunk(BaseModel):
    """A retrieval unit: heading-aware, cut at sentence boundaries, with its span."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="'<doc id>#<start>-<end>'")
    doc: str
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...] = ()


class SnippetStatus(StrEnum):
    """Validation outcome shown beside each snippet."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    UNCHECKED = "unchecked"


class Snippet(BaseModel):
    """A code snippet found in a document (or written by an LLM: `doc` is then None)."""

    id: str = Field(description="'snippet:' + hash of doc id and span (or of the code)")
    doc: str | None
    start: int = 0
    end: int = 0
    heading_path: tuple[str, ...] = ()
    language: str = "python"
    raw: str = Field(description="the code as it appears in the document")
    code: str = Field(description="the code after indentation repair")
    repaired: bool = False
    status: SnippetStatus = SnippetStatus.UNCHECKED
    detail: str = ""


class UnitKind(StrEnum):
    """What an evidence unit is in its document."""

    SENTENCE = "sentence"
    ITEM = "item"
    ROW = "row"
    HEADING = "heading"
    CODE = "code"


class EvidenceUnit(BaseModel):
    """The smallest citable piece of a document: a sentence, a list item, a table row, a heading.

    `doc.text[start:end]` is the verbatim quote (markup included); `text` is what a reader sees
    (markup stripped). A table row keeps its `cells` and the table's `header`; a nested list item
    or a block introduced by "…:" keeps the lead-in as `context`. `subject` is the entity the
    unit is about and `mentions` the entities it names (set by linking, graph ids).
    """

    id: str = Field(description="'<doc id>#<start>-<end>'")
    doc: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: UnitKind
    text: str
    heading_path: tuple[str, ...] = ()
    context: str = ""
    lead: str = Field(default="", description="an item's lead term ('Hardware' in 'Hardware: …')")
    cells: list[str] = Field(default_factory=list)
    header: list[str] = Field(default_factory=list)
    subject: str | None = None
    mentions: list[str] = Field(default_factory=list)
