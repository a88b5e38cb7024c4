"""Evidence units: the sentences, list items, table rows, headings and short code of a document.

A unit is what an answer quotes and what a graph edge cites: its span is a verbatim slice of the
file (markup included), its `text` is what a reader sees. Units keep the structure they came from:
a table row has its cells and the table header, a list item its lead term ("**Hardware**: …") and
the item it is nested under, and a block introduced by a sentence ending in ":" keeps that sentence
as context ("Requirements:" before a list of versions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ingest.code_repair import detect_language
from ingest.markup import CleanText, clean_inline
from ingest.structure.inline import display_width
from ingest.text import COLONS, split_sentences
from kg.documents import Block, BlockKind, Document, EvidenceUnit, UnitKind
from kg.schema import normalize_name

__all__ = [
    "MAX_UNIT_CHARS",
    "document_units",
    "item_lead",
    "lone_units",
    "stem",
    "stem_text",
    "unit_groups",
    "unit_index_text",
    "units_text_norm",
]

#: A unit longer than this is cut at a soft break (a 1 MB line is not one quote).
MAX_UNIT_CHARS = 480
_ITEM_WHOLE = 400
_CODE_LINES = 8
#: the command a code block's later piece is read under, cut to this width
_COMMAND_WIDTH = 160
#: what a list item is read under (the items above it, its list's lead-in), at most this wide
_LEAD_IN_WIDTH = 160
#: the languages of a shell session: a piece after a command is that command's output
_SHELL = frozenset({"bash", "console", "powershell"})
_LEAD = re.compile(r"^(?P<lead>[^:：\n]{1,60}?)\s*(?:[:：]|\s[-–—]\s)\s*(?=\S)")
_SOFT_BREAK = re.compile(r"[;；,，]\s*|\s[-–—]\s")


def item_lead(clean: str) -> str:
    """The lead term of a list item written `Lead: …` or `Lead - …` (short, not a sentence).

    >>> item_lead("Hardware: Supports CPU, Apple, NVIDIA")
    'Hardware'
    >>> item_lead("NNCF - advanced model optimization techniques")
    'NNCF'
    >>> item_lead("This is a long sentence without a lead term at all.")
    ''
    """
    m = _LEAD.match(clean)
    if m is None:
        return ""
    lead = m.group("lead").strip()
    if len(lead.split()) > 6 or re.search(r"[。.!?！？]$", lead) or "http" in lead:
        return ""
    return lead


def _pieces(clean: CleanText) -> list[tuple[int, int]]:
    """Sentence spans of a clean text, long ones cut at soft breaks near MAX_UNIT_CHARS."""
    out: list[tuple[int, int]] = []
    for start, end in split_sentences(clean.text):
        while end - start > MAX_UNIT_CHARS:
            window = clean.text[start + MAX_UNIT_CHARS // 2 : start + MAX_UNIT_CHARS]
            breaks = list(_SOFT_BREAK.finditer(window))
            cut = (
                start + MAX_UNIT_CHARS // 2 + breaks[-1].end() if breaks else start + MAX_UNIT_CHARS
            )
            piece = clean.text[start:cut].rstrip()
            if piece:
                out.append((start, start + len(piece)))
            start = cut
            while start < end and clean.text[start] == " ":
                start += 1
        if start < end:
            out.append((start, end))
    return out


class _Builder:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.units: list[EvidenceUnit] = []
        self.lead_in = ""  # the last sentence, when it ends with ':' (introduces the next block)
        # a list a code block or an indented paragraph interrupts: what its items were read
        # under, and what its last item's text goes on under (`_Builder.items`)
        self.open_list: tuple[str, str] | None = None

    def add(
        self,
        kind: UnitKind,
        span: tuple[int, int],
        text: str,
        block: Block,
        **fields: object,
    ) -> EvidenceUnit | None:
        start, end = span
        source = self.doc.text
        while start < end and source[start].isspace():
            start += 1
        while end > start and source[end - 1].isspace():
            end -= 1
        text = text.strip()
        if start >= end or not text:
            return None
        unit = EvidenceUnit.model_validate(
            {
                "id": f"{self.doc.id}#{start}-{end}",
                "doc": self.doc.id,
                "start": start,
                "end": end,
                "kind": kind,
                "text": text,
                "heading_path": block.heading_path,
                **fields,
            }
        )
        self.units.append(unit)
        return unit

    def sentences(
        self, block: Block, start: int, end: int, kind: UnitKind, **fields: object
    ) -> list[EvidenceUnit]:
        clean = clean_inline(self.doc.text, start, end)
        made = []
        for s, e in _pieces(clean):
            unit = self.add(kind, clean.source_span(s, e), clean.text[s:e], block, **fields)
            if unit is not None:
                made.append(unit)
        return made

    # -- blocks --------------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        context = self.lead_in
        self.lead_in = ""
        # a list goes on past a code block in one of its items: a paragraph indented under
        # the item is the item's, and the list's next items are read under what its first
        # ones were ("Steps:"); anything else ends it
        open_list, self.open_list = self.open_list, None
        within = open_list is not None and _indented(self.doc.text, block.start)
        if block.kind == BlockKind.HEADING:
            title = block.heading_path[-1] if block.heading_path else block.text
            self.add(UnitKind.HEADING, (block.start, block.end), title, block)
        elif block.kind in (BlockKind.PROSE, BlockKind.DEFINITION):
            if _navigation(block.text):
                return  # a bar or a block of links: no statement to quote
            under = _chain(list(open_list)) if open_list is not None and within else ""
            made = self.sentences(block, block.start, block.end, UnitKind.SENTENCE, context=under)
            if made and (made[-1].text.endswith(COLONS) or _LABEL.match(block.text)):
                self.lead_in = made[-1].text
            if within:
                self.open_list = open_list
        elif block.kind in (BlockKind.LIST, BlockKind.DECISION_TREE):
            # an item's text after its code (a list block without a marker of its own) goes on
            # under the item, and the list stays open; the list's next items are read under
            # what its first ones were
            going_on = open_list is not None and not _ITEM_MARKER.match(block.text)
            resumed = None
            if open_list is not None and not context:
                context = _chain(list(open_list)) if going_on else open_list[0]
                resumed = open_list[0] if going_on else None
            last = self.items(block, context, resumed)
            if going_on:
                self.open_list = open_list
            if last.endswith(COLONS):  # "1. Pick a backend:" over the table under it
                self.lead_in = last
        elif block.kind == BlockKind.TABLE:
            self.table(block, context)
        elif block.kind == BlockKind.CODE:
            self.code(block, context)
            if within:  # a code block indented under an item leaves its list open
                self.open_list = open_list

    def items(self, block: Block, context: str, resumed: str | None = None) -> str:
        """The list's items as units, each under the items above it; returns the last item's
        text (it may introduce the block after the list). The list stays open (`open_list`)
        for what an item holds after a code block: the list's context, and its last top
        item's first sentence. A block that goes on with an item's text (under `context`) and
        then has the list's next items reads those under `resumed`, the list's context."""
        parents: list[str] = []  # lead-in text of the items above, by depth
        last = ""
        depths = block.depths or [0] * len(block.items)
        for (start, end), depth in zip(block.item_spans, depths, strict=False):
            clean = clean_inline(self.doc.text, start, end)
            if not clean.text:
                continue
            line = self.doc.text.rfind("\n", 0, start) + 1
            if resumed is not None and _MARKED.search(self.doc.text, line, start):
                context, resumed = resumed, None  # the list's next item
                parents = []
            del parents[depth:]
            parent = _chain([context, *parents])
            lead = item_lead(clean.text)
            if len(clean.text) <= _ITEM_WHOLE:
                self.add(
                    UnitKind.ITEM,
                    clean.source_span(0, len(clean.text)),
                    clean.text,
                    block,
                    lead=lead,
                    context=parent,
                )
            else:
                for index, (s, e) in enumerate(_pieces(clean)):
                    self.add(
                        UnitKind.ITEM,
                        clean.source_span(s, e),
                        clean.text[s:e],
                        block,
                        lead=lead if index == 0 else "",
                        context=parent,
                    )
            first = re.split(r"(?<=[。.!?！？])\s", clean.text, maxsplit=1)[0]
            parents.append(first[:_LEAD_IN_WIDTH])
            last = clean.text
            if depth == 0:
                self.open_list = (context, first[:_LEAD_IN_WIDTH])
        return last

    def table(self, block: Block, context: str) -> None:
        if not block.rows:
            return
        header = [clean_inline(c).text for c in block.rows[0]]
        group = ""
        for row, spans in zip(block.rows[1:], block.cell_spans[1:], strict=False):
            cells = [clean_inline(c).text for c in row]
            filled = [(c, s) for c, s in zip(cells, spans, strict=False) if c]
            if not filled or all(re.fullmatch(r"[\s:|-]*", c) for c in cells):
                continue
            if len(cells) > 2 and cells[0] and not any(cells[1:]):
                # "| **OpenNMT-py WMT14 model** | | |": no row of its own, a label for the rows
                # below it
                group = cells[0]
                continue
            lead_in = f"{context} {group}".strip()
            nonempty = [s for s in spans if s[1] > s[0]]
            span = (min(s[0] for s in nonempty), max(s[1] for s in nonempty))
            span = _line_span(self.doc.text, span) if block.text.lstrip().startswith("|") else span
            self.add(
                UnitKind.ROW,
                span,
                " | ".join(cells),
                block,
                cells=cells,
                header=header,
                context=lead_in,
            )

    def code(self, block: Block, context: str) -> None:
        """A code block as units of at most `_CODE_LINES` lines each, in order, as even in size
        as the count allows (nine lines are five and four, not eight and a stray "}"): a quote
        stays short, and every line can be found (the output a block ends with, "Peak memory:
        3 GB", as much as the command before it). A block longer than four units is a listing,
        not a quote."""
        code = (block.code or block.text).strip("\n")
        lines = code.split("\n")
        if not code.strip() or len(lines) > 4 * _CODE_LINES:
            return
        body_start = (
            block.text.find("\n") + 1 if block.text.lstrip().startswith(("```", "~~~")) else 0
        )
        end = block.start + body_start
        pieces = -(-len(lines) // _CODE_LINES)
        shell = pieces > 1 and detect_language(code, block.language) in _SHELL
        size = -(-len(lines) // pieces)
        for first in range(0, len(lines), size):
            shown = lines[first : first + size]
            start = end if first == 0 else -1  # a later piece starts at its first line found
            for line in shown:
                at = self.doc.text.find(line.strip(), end, block.end) if line.strip() else -1
                if at >= 0:
                    start = at if start < 0 else start
                    end = at + len(line.strip())
            text = "\n".join(shown).strip()
            if 0 <= start < end and text:
                # a later piece is read under the command it continues (or, in a shell
                # session, the one it prints the output of)
                command = (
                    _command_before(lines, first)
                    if first and (shell or _continues(lines, first))
                    else ""
                )
                under = f"{context} {command}".strip()
                self.add(UnitKind.CODE, (start, end), text, block, context=under)


_LINK = re.compile(r"\]\(|<a\s|href=", re.I)
#: a list item's marker ("3.", "-", "•", "(a)"): at the start of a list block, and right
#: before an item's text on its line
_MARKER = r"(?:[-*+•]|\(?\w{1,3}[.)])"
_ITEM_MARKER = re.compile(rf"\s*{_MARKER}\s")
_MARKED = re.compile(rf"{_MARKER}\s+$")


def _indented(text: str, start: int) -> bool:
    """Whether the line `start` is on begins with two spaces or a tab before it (text under a
    list item), nothing else before `start` on that line.

    >>> _indented("1. Run:\\n\\n   more text", 12), _indented("plain text", 0)
    (True, False)
    """
    line = text.rfind("\n", 0, start) + 1
    before = text[line:start]
    return before.strip() == "" and (before.startswith("\t") or len(before) >= 2)


#: a paragraph that is one bold label and nothing else ("**Pros**", "__Option A (fast)__"): like
#: a sentence ending in ":", it introduces the block after it
_LABEL = re.compile(r"^\s*(\*\*|__)(?=\S)(?:(?!\1)[^\n])+?(?<=\S)\1[:：]?\s*$")


def _navigation(source: str) -> bool:
    """A prose block that is a menu: many links, next to no sentences of its own.

    >>> _navigation('<a href="#a">论文</a> | <a href="#b">文档</a> | <a href="#c">例程</a>')
    True
    >>> _navigation("Candle is a [minimalist](x) ML framework for Rust.")
    False
    """
    links = len(_LINK.findall(source))
    if links < 4:
        return False
    clean = clean_inline(source).text
    sentences = len(re.findall(r"[.!?。！？](?:\s|$)", clean))
    return sentences * 3 < links


def _continues(lines: Sequence[str], first: int) -> bool:
    """Whether `lines[first]` goes on with the line above it (which ends in a backslash)."""
    return first > 0 and lines[first - 1].rstrip().endswith("\\")


def _command_before(lines: Sequence[str], first: int) -> str:
    """The last line above `lines[first]` that says something, whole where backslashes continue
    it over several lines (a shell command): what a code block's later piece continues or
    prints the output of.

    >>> block = ["pip install wisp", "", "wisp run model \\\\", "  --bits 4 \\\\", "  --fast",
    ...     "...", "Memory used: 5 GB"]
    >>> _command_before(block, 4), _command_before(block, 6), _command_before(block, 0)
    ('wisp run model --bits 4', 'wisp run model --bits 4 --fast', '')
    """
    at = first - 1
    while at >= 0 and not re.search(r"\w", lines[at]):
        at -= 1  # blank lines and elided output ("...") say nothing
    begins = at
    while begins > 0 and lines[begins - 1].rstrip().endswith("\\"):
        begins -= 1
    parts = (line.strip().removesuffix("\\").strip() for line in lines[begins : at + 1])
    return " ".join(part for part in parts if part)[:_COMMAND_WIDTH]


def _line_span(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """Widen a span to its whole line(s) (a pipe-table row with its outer pipes)."""
    start = text.rfind("\n", 0, span[0]) + 1
    end = text.find("\n", span[1])
    return start, len(text) if end < 0 else end


def document_units(doc: Document, blocks: list[Block]) -> list[EvidenceUnit]:
    """Every evidence unit of a document, in document order."""
    builder = _Builder(doc)
    for block in blocks:
        builder.block(block)
    return builder.units


def unit_groups(
    units: Sequence[EvidenceUnit], profile_size: int = 400
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The units searched together as one text each, by id: every document's units (documents
    in id order), and every entity's profile, the first `profile_size` units about it (entities
    with two or more, in id order).

    >>> units = [EvidenceUnit(id=f"d#{i}", doc="d", start=i, end=i + 1, kind="sentence",
    ...                       text="x", subject="tool:a") for i in range(2)]
    >>> unit_groups(units)
    ({'d': ['d#0', 'd#1']}, {'tool:a': ['d#0', 'd#1']})
    """
    by_doc: dict[str, list[str]] = {}
    by_subject: dict[str, list[str]] = {}
    for unit in units:
        by_doc.setdefault(unit.doc, []).append(unit.id)
        if unit.subject:
            by_subject.setdefault(unit.subject, []).append(unit.id)
    docs = {doc: by_doc[doc] for doc in sorted(by_doc)}
    profiles = {e: ids[:profile_size] for e, ids in sorted(by_subject.items()) if len(ids) >= 2}
    return docs, profiles


def units_text_norm(units: Iterable[EvidenceUnit]) -> str:
    """What units say (their texts and table headers), normalised as one string
    (`normalize_name`): a name is written in them where its normalised form is inside. The
    normalisation of units one after the other is their normalisations joined (spaces go), so
    a corpus's is its documents' joined, in order.

    >>> unit = EvidenceUnit(id="d#0", doc="d", start=0, end=9, kind="row", text="Tensor Flow",
    ...                     header=["Name", "GPU"])
    >>> units_text_norm([unit])
    'tensorflownamegpu'
    """
    return normalize_name(" ".join(u.text + " " + " ".join(u.header) for u in units))


def _chain(above: list[str], limit: float = _LEAD_IN_WIDTH / 2) -> str:
    """What a list item is read under: the nearest of the texts above it (the lead-in of its
    list, then the first sentence of each item it is nested in, outermost first). Where that
    is a bare label ("INT8": short, no sentence), the text above the label comes first, and
    so on up while each is a label and the whole fits `limit` (a display width: a Chinese
    character counts one, a Latin one a half): a nested item keeps the sentence that says what
    its label's items are. A sentence says enough on its own.

    >>> _chain(["GPUs that run each mode:", "INT8"])
    'GPUs that run each mode: INT8'
    >>> _chain(["", "Linux"]), _chain(["Requirements:"]), _chain([])
    ('Linux', 'Requirements:', '')
    >>> _chain(["Speed: Encodes a page in a blink.", "Measured on one core."])
    'Measured on one core.'
    >>> _chain(["x" * 160, "INT8"])
    'INT8'
    """
    parts = [text for text in above if text]
    if not parts:
        return ""
    chain = head = parts[-1]
    for text in reversed(parts[:-1]):
        if not _label(head) or display_width(f"{text} {chain}") > limit:
            break
        chain, head = f"{text} {chain}", text
    return chain


def _label(text: str) -> bool:
    """A short text that is no sentence ("INT8", "Linux:", "方式一")."""
    return display_width(text) <= 20 and not re.search(r"[.。!?！？]\s*$", text)


def lone_units(units: Sequence[EvidenceUnit]) -> set[str]:
    """The ids of the units that are all their section says in words: the one sentence or item
    under a title (code beside it is no words), as a FAQ entry's answer is under its question."""
    counts: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for unit in units:
        if unit.heading_path and unit.kind in (UnitKind.SENTENCE, UnitKind.ITEM):
            counts.setdefault((unit.doc, unit.heading_path), []).append(unit.id)
    return {ids[0] for ids in counts.values() if len(ids) == 1}


def unit_index_text(unit: EvidenceUnit, titled: bool = False) -> str:
    """What the lexical index reads of a unit: its text, a row's header and its lead-in, English
    words stemmed (`stem_text`). Section titles stay out (a heading's words would match every
    unit under it), but for a table row: a table is what its section holds ("#### CPU" above a
    benchmark), and a row says nothing without it; and for a unit `titled` as all its section
    says (`lone_units`): a FAQ entry's title is the symptom its one sentence answers.

    >>> u = EvidenceUnit(id="d#0-1", doc="d", start=0, end=1, kind=UnitKind.ROW, text="4090 | 38",
    ...                  header=["GPU", "t/s"], heading_path=("Performance",))
    >>> unit_index_text(u)
    'performance GPU t/s 4090 | 38'
    """
    section = (
        unit.heading_path[-1] if (titled or unit.kind == UnitKind.ROW) and unit.heading_path else ""
    )
    parts = [section, " ".join(unit.header), unit.context, unit.text]
    return stem_text(" ".join(p for p in parts if p))


_SUFFIXES = (
    "izations",
    "ization",
    "isations",
    "isation",
    "ations",
    "ation",
    "izing",
    "ising",
    "ized",
    "ised",
    "izes",
    "ises",
    "ize",
    "ise",
    "ings",
    "ing",
    "edly",
    "ers",
    "ied",
    "ies",
    "ed",
    "er",
    "es",
    "s",
)
_WORD = re.compile(r"[A-Za-z][a-z]{3,}")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stem: enough that inflections of one word meet.

    >>> [stem(w) for w in ["quantization", "quantizing", "quantized", "binaries", "supports"]]
    ['quant', 'quant', 'quant', 'binari', 'support']
    """
    lower = word.lower()
    for suffix in _SUFFIXES:
        shortest = 3 if suffix == "s" else 4  # "bits" ~ "bit", but "needs" keeps "need"
        if (
            lower.endswith(suffix)
            and len(lower) - len(suffix) >= shortest
            and not lower.endswith("ss")
        ):
            base = lower[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base + "i"
            return base.rstrip("e") if suffix in ("ize", "ise") else base
    return lower


def stem_text(text: str) -> str:
    """Every English word of a text replaced by its stem (other text unchanged).

    >>> stem_text("Quantizing models for 浏览器")
    'quant model for 浏览器'
    """
    return _WORD.sub(lambda m: stem(m.group(0)), text)
