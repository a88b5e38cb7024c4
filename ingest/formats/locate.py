"""Find a parsed element's text back in its source: the verbatim span of every line of it.

A reStructuredText parser (docutils) gives each element its raw source lines without their
indentation, markers or table borders (`rawsource`), not its offsets. `SourceLines.find` walks
the source forward from a cursor and returns the span of each of those lines where they stand,
so that a block's span slices the document to the text it was parsed from. Lines are compared
with their whitespace collapsed (docutils expands tabs); the first line may sit behind a marker
(`- `, `1. `, `.. note:: `, a table border) and later lines inside a wider line (a grid table's
other columns). Each source line is collapsed once, with a map back to its offsets: a search
costs the lines it reads, with no pattern to compile.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = ["SourceLines", "collapse"]

#: How many source lines a search walks past the cursor before it gives up (generated text,
#: such as an admonition's title, is in no line).
_SEARCH_LINES = 4000
_SPACE = re.compile(r"\s+")


def collapse(text: str) -> tuple[str, list[int]]:
    """`text` with runs of whitespace as one space and no whitespace at its ends, and for each
    character of it the offset in `text` it came from.

    >>> collapse("  a \\t b  ")
    ('a b', [2, 5, 6])
    """
    chars: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in _SPACE.finditer(text):
        if m.start() > pos:
            if chars:
                chars.append(" ")
                offsets.append(pos - 1)
            chars.extend(text[pos : m.start()])
            offsets.extend(range(pos, m.start()))
        pos = m.end()
    if pos < len(text):
        if chars:
            chars.append(" ")
            offsets.append(pos - 1)
        chars.extend(text[pos:])
        offsets.extend(range(pos, len(text)))
    return "".join(chars), offsets


@dataclass
class SourceLines:
    """A document's text cut into lines, and a cursor that only moves forward.

    >>> src = SourceLines("Title\\n=====\\n\\n- first item\\n  wrapped\\n")
    >>> src.find("first item\\nwrapped")
    [(15, 25), (28, 35)]
    >>> src.find("Title") is None  # behind the cursor
    True
    """

    text: str
    starts: list[int] = field(default_factory=list)
    cursor: int = 0
    _collapsed: dict[int, tuple[str, list[int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line_of(self, offset: int) -> int:
        """The index of the line holding `offset`."""
        return bisect.bisect_right(self.starts, offset) - 1

    def line_span(self, k: int) -> tuple[int, int]:
        """Start and end (before its newline) of line `k`."""
        start = self.starts[k]
        end = self.starts[k + 1] - 1 if k + 1 < len(self.starts) else len(self.text)
        return start, end

    def _line(self, k: int) -> tuple[str, list[int]]:
        found = self._collapsed.get(k)
        if found is None:
            start, end = self.line_span(k)
            text, offsets = collapse(self.text[start:end])
            found = self._collapsed[k] = (text, [start + o for o in offsets])
        return found

    def _match(self, k: int, wanted: str, at: int, *, head: bool) -> tuple[int, int] | None:
        """The span of `wanted` (collapsed) in line k, at or after offset `at`; for a `head`
        line the occurrence that ends the line first (a marker stands before it)."""
        line, offsets = self._line(k)
        lo = bisect.bisect_left(offsets, at)
        if head and line.endswith(wanted) and len(line) - len(wanted) >= lo:
            i = len(line) - len(wanted)
        else:
            i = line.find(wanted, lo)
            if i < 0:
                return None
        return offsets[i], offsets[i + len(wanted) - 1] + 1

    def find(self, raw: str, *, advance: bool = True) -> list[tuple[int, int]] | None:
        """The spans of `raw`'s non-blank lines, in consecutive source lines at or after the
        cursor (blank lines between match blank lines), or None. Moves the cursor to the end of
        the last one unless `advance` is false."""
        wanted = [" ".join(line.split()) for line in raw.split("\n") if line.strip()]
        if not wanted:
            return None
        first_line = self.line_of(self.cursor)
        last_line = min(len(self.starts), first_line + _SEARCH_LINES)
        for k in range(first_line, last_line):
            head = self._match(k, wanted[0], self.cursor, head=True)
            if head is None:
                continue
            spans = self._rest(wanted[1:], k + 1)
            if spans is None:
                continue
            found = [head, *spans]
            if advance:
                self.cursor = found[-1][1]
            return found
        return None

    def _rest(self, wanted: list[str], k: int) -> list[tuple[int, int]] | None:
        spans: list[tuple[int, int]] = []
        for line in wanted:
            while k < len(self.starts) and not self._line(k)[0]:
                k += 1
            if k >= len(self.starts):
                return None
            span = self._match(k, line, 0, head=False)
            if span is None:
                return None
            spans.append(span)
            k += 1
        return spans
