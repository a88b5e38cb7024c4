"""Cut a reStructuredText document (a Sphinx docs page) into `Block`s with exact spans.

docutils parses the page (without its transforms: nothing is moved or generated) and each
element of the tree becomes the block the Markdown reader would make of it: a section title a
HEADING (its level the section's depth), a paragraph PROSE, bullet, enumerated, definition and
field lists one LIST (nested items with their depths, a definition under its term), grid,
simple, list and CSV tables a TABLE, literal blocks, doctest blocks and `code-block`
directives CODE (with the directive's language), admonitions (`.. note::`) and other containers
the blocks of their content, and `.. raw:: html` lists and text what they say.

Spans are found back in the source (`ingest.formats.locate`): `block.text ==
doc.text[block.start:block.end]`, every item span slices the document to its item and blocks
are sorted and never overlap. One exception, where the source has no such slice: a grid-table
cell that wraps over several lines is its lines' words joined by spaces, its span running from
its first line to its last (the lines between hold the other columns too).

The parse never stops on an error: roles docutils does not know (`:class:`), directives it does
not know (`ingest.formats.rst_directives`) and malformed markup are reported to a buffer, and
what cannot be read is left out.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from ingest.formats.locate import SourceLines
from ingest.formats.rst_directives import register_for
from ingest.markup import is_decorative, strip_markup
from ingest.structure.items import indent_depths
from kg.documents import Block, BlockKind, Document

__all__ = ["parse_rst", "rst_tree"]

_SKIPPED = (
    nodes.system_message,
    nodes.comment,
    nodes.target,
    nodes.substitution_definition,
    nodes.pending,
    nodes.transition,
    nodes.image,
    nodes.math_block,
    nodes.colspec,
)
_LISTS = (nodes.bullet_list, nodes.enumerated_list)
_MARKER = re.compile(r"(?:[-*+•]|\d{1,3}[.)])[ \t]+(?=\S)")
_HTML_ITEM = re.compile(r"<li\b[^>]*>(.*?)(?=</li\s*>|<li\b|</[ou]l\s*>)", re.I | re.S)
_HTML_TAG = re.compile(r"<[^<>]{0,2000}>")


def rst_tree(text: str, source: str = "<rst>") -> nodes.document:
    """docutils' parse of `text`, without transforms, that never halts and reads no file.

    >>> tree = rst_tree("Title\\n=====\\n\\nSee :class:`Foo`.\\n\\n.. toctree::\\n\\n   a\\n")
    >>> [type(n).__name__ for n in tree.findall(nodes.Element)][:3]
    ['document', 'section', 'title']
    """
    register_for(text)
    settings = get_default_settings(Parser)
    settings.report_level = 5  # nothing printed
    settings.halt_level = 5  # never stop: what cannot be read is a system_message node
    settings.warning_stream = io.StringIO()
    settings.file_insertion_enabled = False  # `.. include::` reads no file
    settings.raw_enabled = True  # `.. raw:: html` is read as text, never rendered
    settings.syntax_highlight = "none"
    settings.character_level_inline_markup = False
    # docutils drops a whole document with a line over its limit (10,000): a page whose table
    # or paragraph is one long line is read as it is (inline parsing stays linear)
    settings.line_length_limit = max(10_000, max(map(len, text.split("\n")), default=0) + 1)
    tree = new_document(source, settings)
    Parser().parse(text, tree)
    return tree


@dataclass
class _Item:
    span: tuple[int, int]
    depth: int


@dataclass
class _Walker:
    doc: Document
    src: SourceLines = field(init=False)
    blocks: list[Block] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    items: list[_Item] = field(default_factory=list)
    list_start: int = -1

    def __post_init__(self) -> None:
        self.src = SourceLines(self.doc.text)

    # -- output -------------------------------------------------------------------------------
    def emit(self, kind: BlockKind, start: int, end: int, **fields: object) -> None:
        text = self.doc.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start >= end or (self.blocks and start < self.blocks[-1].end):
            return
        self.blocks.append(
            Block.model_validate(
                {
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "text": text[start:end],
                    "heading_path": tuple(self.path),
                    **fields,
                }
            )
        )

    def flush(self) -> None:
        """The list items gathered so far as one LIST block."""
        items, self.items = self.items, []
        if not items:
            return
        text = self.doc.text
        spans = [i.span for i in items]
        start = self.list_start if 0 <= self.list_start <= spans[0][0] else spans[0][0]
        self.list_start = -1
        self.emit(
            BlockKind.LIST,
            start,
            spans[-1][1],
            items=[text[s:e] for s, e in spans],
            item_spans=spans,
            depths=indent_depths([i.depth for i in items]),
        )

    def found(self, raw: str) -> tuple[int, int] | None:
        spans = self.src.find(raw)
        return (spans[0][0], spans[-1][1]) if spans else None

    # -- the tree -----------------------------------------------------------------------------
    def walk(self, node: nodes.Node, depth: int = 0) -> None:
        if isinstance(node, (nodes.Text, *_SKIPPED)):
            return
        if isinstance(node, nodes.section):
            self.section(node)
        elif isinstance(node, nodes.paragraph | nodes.rubric | nodes.caption | nodes.line_block):
            self.prose(node)
        elif isinstance(node, nodes.literal_block | nodes.doctest_block):
            self.code(node)
        elif isinstance(node, _LISTS):
            self.list_items(node, depth)
        elif isinstance(node, nodes.definition_list):
            self.definitions(node, depth)
        elif isinstance(node, nodes.field_list | nodes.docinfo):
            self.fields(node, depth)
        elif isinstance(node, nodes.table):
            self.flush()
            self.table(node)
        elif isinstance(node, nodes.raw):
            self.flush()
            self.raw(node)
        elif isinstance(node, nodes.Element):
            for child in node.children:
                self.walk(child, depth)

    def section(self, node: nodes.section) -> None:
        self.flush()
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        level = sum(1 for a in _ancestors(node) if isinstance(a, nodes.section)) + 1
        saved = list(self.path)
        if title is not None:
            span = self.found(title.rawsource or title.astext())
            name = strip_markup(title.astext()).strip(" :：")[:200]
            if name:
                del self.path[level - 1 :]
                self.path.append(name)
                if span is not None:
                    self.emit(BlockKind.HEADING, *span, level=len(self.path))
        for child in node.children:
            if child is not title:
                self.walk(child)
        self.flush()
        self.path = saved

    def prose(self, node: nodes.Element) -> None:
        self.flush()
        raw = node.rawsource if node.rawsource.strip() else node.astext()
        lines = self.src.find(raw)
        if lines is None:
            return
        text = self.doc.text
        # "**Options:**" with "- `--tp 8`: …" lines under it and no blank line between: one
        # paragraph to docutils, a lead-in and its list to the person who wrote it
        items: list[tuple[int, int]] = []
        for s, e in lines[1:]:
            m = _MARKER.match(text, s, e)
            if m is None:
                items = []
                break
            items.append((m.end(), e))
        if len(items) >= 2:
            lines = lines[:1]
        else:
            items = []
        start, end = lines[0][0], lines[-1][1]
        if not is_decorative(text, start, end):
            self.emit(BlockKind.PROSE, start, end)
        if items:
            self.list_start = self.src.starts[self.src.line_of(items[0][0])]
            self.items = [_Item(span, 0) for span in items]
            self.flush()

    def code(self, node: nodes.Element) -> None:
        self.flush()
        code = node.astext()
        span = self.found(code)
        if span is None:
            return
        language = node.get("language") or _code_class(node)
        if isinstance(node, nodes.doctest_block):
            language = "pycon"
        self.emit(BlockKind.CODE, *span, language=(language or "").lower() or None, code=code)

    def item(self, node: nodes.Element, depth: int) -> None:
        """The first paragraph of a list item, definition or field body as an item; what
        follows it in the same item (more paragraphs, nested lists) at the next depth."""
        children = list(node.children)
        first = next((c for c in children if isinstance(c, nodes.paragraph)), None)
        for child in children:
            if child is first:
                span = self.found(child.rawsource or child.astext())
                if span is not None:
                    if not self.items:  # the list starts on its first item's line, marker and all
                        self.list_start = self.src.starts[self.src.line_of(span[0])]
                    self.items.append(_Item(span, depth))
            elif isinstance(child, nodes.paragraph):
                span = self.found(child.rawsource or child.astext())
                if span is not None:
                    self.items.append(_Item(span, depth + 1))
            else:
                self.walk(child, depth + 1)

    def list_items(self, node: nodes.Element, depth: int) -> None:
        for child in node.children:
            if isinstance(child, nodes.list_item):
                self.item(child, depth)

    def definitions(self, node: nodes.Element, depth: int) -> None:
        for entry in node.children:
            if not isinstance(entry, nodes.definition_list_item):
                continue
            for child in entry.children:
                if isinstance(child, nodes.term):
                    span = self.found(child.rawsource or child.astext())
                    if span is not None:
                        if not self.items:
                            self.list_start = span[0]
                        self.items.append(_Item(span, depth))
                elif isinstance(child, nodes.definition):
                    self.item(child, depth + 1)

    def fields(self, node: nodes.Element, depth: int) -> None:
        """`:name: body` fields as items "name: body" (a name and its first line, one span)."""
        for entry in node.children:
            name = next((c for c in entry.children if isinstance(c, nodes.field_name)), None)
            body = next((c for c in entry.children if isinstance(c, nodes.field_body)), None)
            if name is None:
                continue
            spans = self.src.find(f":{name.astext()}:", advance=False)
            if spans is None:
                continue
            head = spans[0][0] + 1
            self.src.cursor = spans[0][1]
            before = len(self.items)
            if body is not None:
                self.item(body, depth)
            if len(self.items) > before and self.items[before].depth == depth:
                self.items[before].span = (head, self.items[before].span[1])
            else:
                self.items.insert(before, _Item((head, spans[0][1] - 1), depth))
            if not before:
                self.list_start = head

    def table(self, node: nodes.table) -> None:
        rows: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        for row in node.findall(nodes.row):
            cells, cell_spans = self.row(row)
            if cells:
                rows.append(cells)
                spans.append(cell_spans)
        if len(rows) < 2:
            return
        width = max(len(r) for r in rows)
        for cells, cell_spans in zip(rows, spans, strict=True):
            pad = width - len(cells)
            cells.extend([""] * pad)
            cell_spans.extend([(cell_spans[-1][1], cell_spans[-1][1])] * pad)
        start = min(s for row_spans in spans for s, e in row_spans if e > s)
        end = max(e for row_spans in spans for _, e in row_spans)
        self.emit(BlockKind.TABLE, start, end, rows=rows, cell_spans=spans)

    def row(self, row: nodes.row) -> tuple[list[str], list[tuple[int, int]]]:
        """A row's cells, each the text of its paragraphs where they stand; cells of one row
        are looked for from the row's first line (a grid row's cells share lines)."""
        text = self.doc.text
        cells: list[str] = []
        spans: list[tuple[int, int]] = []
        row_start = self.src.cursor
        after = next_cell = row_start
        for entry in row.children:
            found: list[tuple[int, int]] = []
            self.src.cursor = next_cell  # after the previous cell's first line: on the same line
            for para in entry.findall(nodes.paragraph):
                lines = self.src.find(para.rawsource or para.astext())
                if lines is not None:
                    found.extend(lines)
            if not found:
                at = spans[-1][1] if spans else row_start
                cells.append("")
                spans.append((at, at))
                continue
            after = max(after, found[-1][1])
            next_cell = found[0][1]
            start, end = found[0][0], found[-1][1]
            if "\n" in text[start:end] and _grid_line(text, start):
                cells.append(" ".join(text[s:e] for s, e in found))
            else:
                cells.append(text[start:end])
            spans.append((start, end))
        self.src.cursor = after
        return cells, spans

    def raw(self, node: nodes.raw) -> None:
        """`.. raw:: html`: its list items as a list, its other text as prose."""
        if "html" not in str(node.get("format", "")):
            return
        lines = self.src.find(node.astext())
        if lines is None:
            return
        start, end = lines[0][0], lines[-1][1]
        text = self.doc.text
        spans = []
        for m in _HTML_ITEM.finditer(text, start, end):
            inner = m.group(1)
            s = m.start(1) + len(inner) - len(inner.lstrip())
            e = m.start(1) + len(inner.rstrip())
            if e > s and not is_decorative(text, s, e):
                spans.append((s, e))
        if spans:
            self.emit(
                BlockKind.LIST,
                spans[0][0],
                spans[-1][1],
                items=[text[s:e] for s, e in spans],
                item_spans=spans,
                depths=[0] * len(spans),
            )
        elif not is_decorative(text, start, end) and _HTML_TAG.sub("", text[start:end]).strip():
            self.emit(BlockKind.PROSE, start, end)


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def _code_class(node: nodes.Element) -> str:
    """The language docutils' `code` directive writes among a block's classes."""
    found: list[str] = list(node.get("classes", []))
    classes = [c for c in found if c != "code"]
    return classes[0] if classes else ""


def _grid_line(text: str, at: int) -> bool:
    """Whether the line holding `at` is a grid-table line (`| … |`)."""
    start = text.rfind("\n", 0, at) + 1
    return text[start:at].lstrip().startswith("|")


def parse_rst(doc: Document) -> list[Block]:
    """Cut a reStructuredText document into blocks, in order, with spans and heading paths."""
    walker = _Walker(doc)
    walker.walk(rst_tree(doc.text, doc.id))
    walker.flush()
    return walker.blocks
