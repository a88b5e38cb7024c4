"""Find a parsed element's text back in its source: the verbatim span of every line of it.

A reStructuredText parser (docutils) gives each element its raw source lines without their
indentation, markers or table borders (`rawsource`), not its offsets. `SourceLines.find` walks
the source forward from a cursor and returns the span of each of those lines where they stand,
so that a block's span slices the document to the text it was parsed from. Lines are compared
with their whitespace collapsed (docutils expands tabs); the first line may sit behind a marker
(`- `, `1. `, `.. note:: `, a table border) and later lines inside a wider line (a grid table's
other columns).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = ["SourceLines"]

#: How many source lines a search walks past the cursor before it gives up (generated text,
#: such as an admonition's title, is in no line).
_SEARCH_LINES = 4000


def _pattern(line: str) -> str:
    r"""A pattern for a line's words with any whitespace between them.

    >>> _pattern("a  b\tc")
    'a\\s+b\\s+c'
    """
    return r"\s+".join(re.escape(w) for w in line.split())


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

    def find(self, raw: str, *, advance: bool = True) -> list[tuple[int, int]] | None:
        """The spans of `raw`'s non-blank lines, in consecutive source lines at or after the
        cursor (blank lines between match blank lines), or None. Moves the cursor to the end of
        the last one unless `advance` is false."""
        wanted = [re.compile(_pattern(line)) for line in raw.split("\n") if line.strip()]
        if not wanted:
            return None
        # a paragraph's first line stands behind its marker: a match ending the line is the one
        at_end = re.compile(f"(?:{wanted[0].pattern})[ \t]*\\Z")
        first_line = self.line_of(self.cursor)
        last_line = min(len(self.starts), first_line + _SEARCH_LINES)
        for k in range(first_line, last_line):
            start, end = self.line_span(k)
            at = max(start, self.cursor)
            head = at_end.search(self.text, at, end) or wanted[0].search(self.text, at, end)
            if head is None:
                continue
            spans = self._rest(wanted[1:], k + 1)
            if spans is None:
                continue
            found = [(head.start(), head.end()), *spans]
            if advance:
                self.cursor = found[-1][1]
            return found
        return None

    def _rest(self, wanted: list[re.Pattern[str]], k: int) -> list[tuple[int, int]] | None:
        spans: list[tuple[int, int]] = []
        for pattern in wanted:
            while k < len(self.starts) and not self.text[slice(*self.line_span(k))].strip():
                k += 1
            if k >= len(self.starts):
                return None
            m = pattern.search(self.text, *self.line_span(k))
            if m is None:
                return None
            spans.append((m.start(), m.end()))
            k += 1
        return spans
