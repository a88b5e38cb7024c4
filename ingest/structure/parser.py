"""Pass 2 of the structure parser: headings, tables, decision trees, lists, definitions, prose.

`parse_blocks(doc)` walks the units of pass 1 (`ingest.structure.code`) and emits `Block`s with
their spans and heading paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.structure.code import Code, Line, line_units
from ingest.structure.inline import BULLET, END_PUNCT, definition_spans, display_width, title_ok
from ingest.structure.items import (
    NUMBERED,
    indent_depths,
    list_marker,
    split_glued_items,
    table_cells,
    tree_depths,
)
from kg.documents import Block, BlockKind, Document

__all__ = ["parse_blocks"]

_ATX = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?$")
_NESTED_NUM = re.compile(r"^(\d{1,3}(?:\.\d{1,3})+)\.?\s+(?=\S)")
_CN_NUM = re.compile(r"^[一二三四五六七八九十百零〇两]+[、.．]\s*(?=\S)")
_CN_PAREN = re.compile(r"^[（(][一二三四五六七八九十]+[）)]\s*(?=\S)")
_CHAPTER = re.compile(r"^第[一二三四五六七八九十百零〇\d]+([章节篇部])\s*(?=\S)")
_TREE = re.compile(r"^([ \t\u3000│┃]*)([├└┣┗][─━]*)[ \t]*")
_SPACER = re.compile(r"^[ \t\u3000]*[│┃][ \t\u3000│┃]*$")
_TABLE_SEP = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$")
#: a word in lower case ("training", not "vLLM" or "iOS"): how the rest of a wrapped line starts
_LOWER_WORD = re.compile(r"[a-z]{2}")


@dataclass(frozen=True)
class _Head:
    key: str
    rank: int  # only compared between Markdown headings
    title: str


class _Parser:
    def __init__(self, doc: Document) -> None:
        self.text = doc.text
        self.units = line_units(doc.text)
        lines = [u for u in self.units if isinstance(u, Line)]
        self.markdown = doc.media_type in ("text/markdown", "text/html") or any(
            _ATX.match(u.text) for u in lines
        )
        self.first = next((k for k, u in enumerate(self.units) if not _blank(u)), -1)
        self.blocks: list[Block] = []
        self.stack: list[tuple[_Head, int]] = []  # (heading, number of blocks when opened)

    # navigation helpers
    def line(self, k: int) -> Line | None:
        u = self.units[k] if 0 <= k < len(self.units) else None
        return u if isinstance(u, Line) else None

    def nonblank(self, k: int, step: int) -> int | None:
        while 0 <= k < len(self.units):
            if not _blank(self.units[k]):
                return k
            k += step
        return None

    def path(self) -> tuple[str, ...]:
        return tuple(h.title for h, _ in self.stack)

    def emit(self, kind: BlockKind, start: int, end: int, **fields: object) -> None:
        self.blocks.append(
            Block.model_validate(
                {
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "text": self.text[start:end],
                    "heading_path": self.path(),
                    **fields,
                }
            )
        )

    # classification
    def is_tree(self, k: int) -> bool:
        ln = self.line(k)
        raw = self.text[ln.raw_start : ln.end] if ln else ""
        return bool(ln and ln.text and (_TREE.match(raw) or _SPACER.match(raw)))

    def is_special(self, k: int) -> bool:
        ln = self.line(k)
        if ln is None or not ln.text:
            return True
        t = ln.text
        return bool(
            self.is_tree(k)
            or "|" in t
            or BULLET.match(t)
            or NUMBERED.match(t)
            or (self.markdown and _ATX.match(t))
        )

    def heading(self, k: int, after_open_prose: bool = False) -> _Head | None:
        ln = self.line(k)
        if ln is None or not ln.text or "|" in ln.text or self.is_tree(k):
            return None
        t = ln.text
        if self.markdown:
            m = _ATX.match(t)
            return _Head("md", len(m.group(1)), m.group(2).strip() or t) if m else None
        if ln.indent > 1:
            return None
        for pattern, key in ((_CHAPTER, "chapter"), (_CN_NUM, "cn"), (_CN_PAREN, "cn-paren")):
            m = pattern.match(t)
            if m:
                name = f"{key}-{m.group(1)}" if key == "chapter" else key
                return _Head(name, 0, t) if title_ok(t[m.end() :], 40, "？?！!") else None
        m = _NESTED_NUM.match(t)
        if m and title_ok(t[m.end() :], 30, "？?"):
            return _Head(f"num{m.group(1).count('.') + 1}", 0, t)
        m = NUMBERED.match(t)
        if m:
            isolated = not any(self.numbered_at(n, ln.indent) for n in self.neighbours(k))
            ok = isolated and title_ok(t[m.end() :], 30, "？?")
            return _Head("num1", 0, t) if ok else None
        if self.is_special(k) or self.nonblank(k + 1, 1) is None or self.continues_above(k):
            return None
        if k == self.first:
            return _Head("title", 0, t) if title_ok(t, 30, "？?！!") else None
        if after_open_prose or not title_ok(t, 24, "", colon_ok=self.blank_after(k)):
            return None
        return _Head("bare", 0, t)

    def continues_above(self, k: int) -> bool:
        """Line k starts with a word in lower case right under a line that ends mid-sentence:
        the rest of a wrapped line ("30% fewer steps for" / "the same loss" on a slide), not a
        title. ("vLLM", "iOS" start otherwise.)"""
        ln, above = self.line(k), self.line(k - 1)
        return bool(
            ln is not None
            and above is not None
            and above.text
            and above.text[-1] not in END_PUNCT
            and _LOWER_WORD.match(ln.text)
        )

    def neighbours(self, k: int) -> list[int]:
        return [n for n in (self.nonblank(k - 1, -1), self.nonblank(k + 1, 1)) if n is not None]

    def numbered_at(self, k: int, indent: int) -> bool:
        ln = self.line(k)
        return bool(ln and ln.indent == indent and NUMBERED.match(ln.text))

    def blank_after(self, k: int) -> bool:
        ln = self.line(k + 1)
        return ln is not None and not ln.text

    # block builders
    def open_heading(self, head: _Head, ln: Line) -> None:
        keys = [h.key for h, _ in self.stack]
        if head.key == "title":
            self.stack = []
        elif head.key == "bare":
            if keys and keys[-1] == "title" and self.stack[-1][1] == len(self.blocks) - 1:
                head = _Head("title", 0, head.title)  # an empty title line above: replace it
                self.stack = []
            elif "bare" in keys:
                self.stack = self.stack[: keys.index("bare")]
        elif head.key == "md":
            cut = [
                n for n, (h, _) in enumerate(self.stack) if h.key == "md" and h.rank >= head.rank
            ]
            self.stack = self.stack[: cut[0]] if cut else self.stack
        elif head.key in keys:
            self.stack = self.stack[: keys.index(head.key)]
        self.stack.append((head, len(self.blocks)))
        self.emit(BlockKind.HEADING, ln.start, ln.end, level=len(self.stack))

    def table(self, k: int) -> int:
        header = self.line(k)
        assert header is not None
        rows_src = [header]
        j = k + 2
        while (
            (ln := self.line(j)) is not None and ln.text and "|" in ln.text and not self.is_tree(j)
        ):
            if not _TABLE_SEP.match(ln.text):
                rows_src.append(ln)
            j += 1
        width = len(table_cells(self.text, header))
        rows: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        for ln in rows_src:
            cells = table_cells(self.text, ln)[:width]
            cells += [(ln.end, ln.end)] * (width - len(cells))
            spans.append(cells)
            rows.append([self.text[s:e] for s, e in cells])
        self.emit(BlockKind.TABLE, header.start, rows_src[-1].end, rows=rows, cell_spans=spans)
        return j

    def tree(self, k: int, root: bool) -> int:
        items: list[tuple[int, int]] = []
        cols: list[int | None] = []  # None marks the root question
        kinds: list[str] = []
        if root:
            ln = self.line(k)
            assert ln is not None
            items.append((ln.start, ln.end))
            cols.append(None)
            kinds.append("root")
            k += 1
        start = items[0][0] if items else -1
        end = start
        while self.is_tree(k):
            ln = self.line(k)
            assert ln is not None
            raw = self.text[ln.raw_start : ln.end]
            m = _TREE.match(raw)
            if m:
                items.append((ln.raw_start + m.end(), ln.end))
                cols.append(len(m.group(1).replace("\t", "    ")))
                kinds.append("last" if m.group(2)[0] in "└┗" else "mid")
            start = ln.start if start < 0 else start
            end = ln.end
            k += 1
        self.emit(
            BlockKind.DECISION_TREE,
            start,
            end,
            items=[self.text[s:e] for s, e in items],
            item_spans=items,
            depths=tree_depths(cols, kinds),
        )
        return k

    def list_block(self, k: int) -> int:
        items: list[list[int]] = []  # [start, end, indent]
        j = k
        while (ln := self.line(j)) is not None:
            if not ln.text:
                m = self.nonblank(j, 1)
                nxt = self.line(m) if m is not None else None
                if m is None or nxt is None or not list_marker(nxt.text) or self.heading(m):
                    break
                j = m
                continue
            marker = list_marker(ln.text)
            if marker is not None and not self.heading(j):
                items.append([ln.start + marker, ln.end, ln.indent])
            elif self.continues_item(j, items[-1]):
                items[-1][1] = ln.end  # a wrapped continuation line of the item
            else:
                break
            j += 1
        spans, indents = split_glued_items(self.text, items)
        first = self.line(k)
        assert first is not None
        self.emit(
            BlockKind.LIST,
            first.start,
            spans[-1][1],
            items=[self.text[s:e] for s, e in spans],
            item_spans=spans,
            depths=indent_depths(indents),
        )
        return j

    def continues_item(self, j: int, item: list[int]) -> bool:
        """Line j (right after the item, no blank line) is a wrapped part of that item."""
        ln, above = self.line(j), self.line(j - 1)
        if ln is None or above is None or not above.text or self.is_special(j) or self.heading(j):
            return False
        return self.text[item[1] - 1] not in END_PUNCT or ln.indent > item[2]

    def prose(self, k: int) -> int:
        first = self.line(k)
        assert first is not None
        end = first.end
        j = k + 1
        while (
            (ln := self.line(j)) is not None
            and ln.text
            and self.text[end - 1] not in END_PUNCT
            and not self.is_special(j)
            and not self.heading(j, True)
            and not self.tree_root(j)
        ):
            end, j = ln.end, j + 1
        spans = definition_spans(first.text) if j == k + 1 else None
        if spans is not None:
            term = first.text[spans[0][0] : spans[0][1]]
            self.emit(BlockKind.DEFINITION, first.start, end, term=term)
        else:
            self.emit(BlockKind.PROSE, first.start, end)
        return j

    def tree_root(self, k: int) -> bool:
        """A short question/lead line right above a tree's first branch is the tree's root."""
        ln = self.line(k)
        if ln is None or not ln.text or self.is_special(k) or not self.is_tree(k + 1):
            return False
        head = None if self.markdown else self.heading(k)
        return (
            display_width(ln.text) <= 40
            and ln.text[-1] not in "。.；;"
            and (head is None or head.key in ("bare", "title"))
        )

    def after_open_prose(self, k: int) -> bool:
        """The line above k ends a prose block mid-sentence (so k is likely its continuation)."""
        prev = self.blocks[-1] if self.blocks else None
        above = self.units[k - 1] if k > 0 else None
        return bool(
            prev is not None
            and prev.kind in (BlockKind.PROSE, BlockKind.DEFINITION)
            and isinstance(above, Line)
            and above.end == prev.end
            and prev.text[-1] not in END_PUNCT
        )

    def run(self) -> list[Block]:
        k = 0
        while k < len(self.units):
            unit = self.units[k]
            if isinstance(unit, Code):
                code = self.text[unit.start : unit.end]
                self.emit(BlockKind.CODE, unit.start, unit.end, language=unit.language, code=code)
                k += 1
                continue
            if not unit.text:
                k += 1
                continue
            nxt = self.line(k + 1)
            if (
                "|" in unit.text
                and nxt is not None
                and "|" in nxt.text
                and _TABLE_SEP.match(nxt.text)
            ):
                k = self.table(k)
                continue
            if self.is_tree(k) or self.tree_root(k):
                k = self.tree(k, root=not self.is_tree(k))
                continue
            head = self.heading(k, self.after_open_prose(k))
            if head is not None:
                self.open_heading(head, unit)
                k += 1
            elif list_marker(unit.text) is not None:
                k = self.list_block(k)
            else:
                k = self.prose(k)
        return self.blocks


def _blank(u: Line | Code) -> bool:
    return isinstance(u, Line) and not u.text


def parse_blocks(doc: Document) -> list[Block]:
    """Cut `doc` into structural blocks, in document order, with spans and heading paths.

    HEADING blocks have `level` = depth in the heading tree (1 = outermost) and a `heading_path`
    that ends with their own title; every other block's `heading_path` is its enclosing headings.
    """
    return _Parser(doc).run()
