"""Markdown as docs sites write it: front matter, MyST (Jupytext) notebooks, MDX and Pandoc's.

The Markdown reader (`ingest.markdown`) reads CommonMark and GitHub's Markdown. Docs pages add
lines that are no text: YAML front matter (a Jupytext header), MyST's cell breaks (`+++`),
targets (`(label)=`), comments (`% …`), raw cells and directive fences (```` ```{note} ````
around Markdown), and MDX's `import`/`export` blocks, JSX tags (`<Tabs>`, `<TabItem value="a">`)
and `{expressions}`. `masked(text, mdx=...)` blanks those out with spaces (newlines kept), so
every offset stays the file's: the Markdown reader cuts the masked text into blocks, and each
block is sliced again from the file (`unmasked`). What a JSX element wraps (Markdown between
`<TabItem>` and `</TabItem>`) and what a MyST admonition holds stay text; code fences stay code.

Quarto and R Markdown pages (`pandoc=True`) are Pandoc's Markdown: a backtick fence is code
whatever its braces say (```` ```{python} ```` is a cell the page runs, not a directive), a
`:::` div holds Markdown (`::: {.callout-note}`, `::: warning`: its fence lines are blanked), and
a heading's attributes (`## Setup {#sec-setup}`) are no words of its title.
"""

from __future__ import annotations

import re

from kg.documents import Block

__all__ = ["MDX", "QUARTO", "masked", "unmasked"]

MDX = "text/mdx"
#: Quarto's and R Markdown's pages: Pandoc's Markdown with cells the page runs.
QUARTO = "text/x-quarto"

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,}|:{3,})[ \t]*(\{[\w:.\-]+\}|[\w+#.\-]*)")
#: MyST directives whose fence holds code or data, not Markdown.
_CODE_DIRECTIVES = frozenset(
    """
    code-cell code-block code sourcecode literalinclude math mermaid graphviz eval-rst
    toctree csv-table list-table jupyter-execute ipython
    """.split()  # noqa: SIM905 - a word list reads best as words
)
_FRONT_MATTER_OPEN = re.compile(r"^(---|\+\+\+)[ \t]*$")
_MYST_LINE = re.compile(r"^(?:\+\+\+(?:[ \t].*)?|\([\w\-:.]+\)=|%.*)[ \t]*$")
_OPTION = re.compile(r"^[ \t]*:[\w\-]+:(?:[ \t].*)?$")
_ESM = re.compile(r"^(?:import|export)\b[ \t{*\w'\"]")
_JSX_START = re.compile(r"[ \t]*<(?:/?[A-Z][\w.]*|/?>)")
_EXPRESSION = re.compile(r"^[ \t]*\{.*\}[ \t]*$")
#: a Pandoc div's fence: three or more colons, then its attributes or class, if any
_DIV = re.compile(r"^[ \t]{0,3}(:{3,})[ \t]*(\S.*)?$")
#: a heading's attributes at its end: `## Setup {#sec-setup .unnumbered}`
_HEADING_ATTRIBUTES = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*?[ \t](\{[#.][^{}]*\})[ \t#]*$")


class _Mask:
    def __init__(self, text: str) -> None:
        self.chars = list(text)
        self.text = text

    def blank(self, start: int, end: int) -> None:
        for i in range(start, min(end, len(self.chars))):
            if self.chars[i] != "\n":
                self.chars[i] = " "

    def result(self) -> str:
        return "".join(self.chars)


def _lines(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for raw in text.split("\n"):
        out.append((pos, pos + len(raw)))
        pos += len(raw) + 1
    return out


def _tag_end(text: str, start: int, limit: int = 8000) -> int:
    """The offset after the `>` closing the JSX tag at `start` (braces and quotes skipped).

    >>> src = '<Tab value={x > 1 ? "a>" : "b"}>rest'
    >>> src[_tag_end(src, 0):]
    'rest'
    """
    depth, quote = 0, ""
    stop = min(len(text), start + limit)
    for i in range(start + 1, stop):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ">" and depth == 0:
            return i + 1
    return stop


def masked(text: str, *, mdx: bool = False, pandoc: bool = False) -> str:
    """`text` with what the Markdown reader should not read blanked out (module docstring).

    >>> masked("---\\ntitle: x\\n---\\n# Hi\\n")
    '   \\n        \\n   \\n# Hi\\n'
    >>> masked("import X from 'x'\\n\\n<Note>\\nText\\n</Note>\\n", mdx=True)
    '                 \\n\\n      \\nText\\n       \\n'
    >>> masked("## Hi {#sec-hi}\\n::: note\\nText\\n:::\\n", pandoc=True)
    '## Hi          \\n        \\nText\\n   \\n'
    """
    if pandoc:
        return _pandoc_masked(text)
    myst = "```{" in text or ":::{" in text
    if not (mdx or myst or _FRONT_MATTER_OPEN.match(text[:4].rstrip("\n"))):
        return text  # CommonMark as it is: nothing to mask
    mask = _Mask(text)
    lines = _lines(text)
    k = _front_matter(text, lines, mask)
    myst = myst or k > 0
    fences: list[tuple[str, bool]] = []  # open fences: (mark, holds Markdown)
    while k < len(lines):
        start, end = lines[k]
        line = text[start:end]
        m = _FENCE.match(line)
        inside_code = bool(fences) and not fences[-1][1]
        if fences and m is not None and _closes(m, fences[-1][0], line):
            _, markdown = fences.pop()
            if markdown:
                mask.blank(start, end)
            k += 1
            continue
        if inside_code:
            k += 1
            continue
        if m is not None and (m.group(1)[0] != ":" or m.group(2).startswith("{")):
            k = _open_fence(m, text, lines, k, mask, fences)
            continue
        if myst and _MYST_LINE.match(line):
            mask.blank(start, end)
        elif mdx and not fences and _ESM.match(line):
            k = _blank_paragraph(text, lines, k, mask)
            continue
        elif mdx and (_JSX_START.match(line) or _EXPRESSION.match(line)):
            k = _blank_jsx(text, lines, k, mask)
            continue
        k += 1
    return mask.result()


def _pandoc_masked(text: str) -> str:
    """`masked` for Pandoc's Markdown (Quarto, R Markdown): front matter, div fences and
    heading attributes blanked; every backtick or tilde fence is code, its lines kept."""
    mask = _Mask(text)
    lines = _lines(text)
    k = _front_matter(text, lines, mask)
    fence = ""  # the open code fence's mark
    while k < len(lines):
        start, end = lines[k]
        line = text[start:end]
        m = _FENCE.match(line)
        if fence:
            if m is not None and _closes(m, fence, line):
                fence = ""
        elif m is not None and m.group(1)[0] != ":":
            fence = m.group(1)
        elif _DIV.match(line):
            mask.blank(start, end)
        elif (attributes := _HEADING_ATTRIBUTES.match(line)) is not None:
            mask.blank(start + attributes.start(1), start + attributes.end(1))
        k += 1
    return mask.result()


def _front_matter(text: str, lines: list[tuple[int, int]], mask: _Mask) -> int:
    """Blank a leading YAML (`---`) or TOML (`+++`) header; the line after it."""
    if not lines or not _FRONT_MATTER_OPEN.match(text[slice(*lines[0])]):
        return 0
    mark = text[slice(*lines[0])].strip()
    for k in range(1, min(len(lines), 300)):
        line = text[slice(*lines[k])].strip()
        if line == mark or (mark == "---" and line == "..."):
            mask.blank(lines[0][0], lines[k][1])
            return k + 1
    return 0


def _closes(m: re.Match[str], mark: str, line: str) -> bool:
    fence = m.group(1)
    return fence[0] == mark[0] and len(fence) >= len(mark) and not line.strip().strip(mark[0])


def _open_fence(
    m: re.Match[str],
    text: str,
    lines: list[tuple[int, int]],
    k: int,
    mask: _Mask,
    fences: list[tuple[str, bool]],
) -> int:
    """A fence opens at line k: a MyST directive's is blanked (with its options) when it holds
    Markdown or a raw cell; a code fence is kept. Returns the next line to read."""
    mark, info = m.group(1), m.group(2)
    name = info[1:-1].split(":")[-1] if info.startswith("{") else ""
    if name == "raw-cell" or name == "raw":
        j = k + 1
        while j < len(lines):
            close = _FENCE.match(text[slice(*lines[j])])
            if close is not None and _closes(close, mark, text[slice(*lines[j])]):
                break
            j += 1
        mask.blank(lines[k][0], lines[min(j, len(lines) - 1)][1])
        return j + 1
    markdown = bool(name) and name not in _CODE_DIRECTIVES
    if name:
        # ```{note} or ```{code-cell} ipython3: options (`:tags: [...]`) follow the fence line
        if markdown:
            mask.blank(*lines[k])
        j = k + 1
        while j < len(lines) and _OPTION.match(text[slice(*lines[j])]):
            mask.blank(*lines[j])
            j += 1
        fences.append((mark, markdown))
        return j
    fences.append((mark, False))
    return k + 1


def _blank_paragraph(text: str, lines: list[tuple[int, int]], k: int, mask: _Mask) -> int:
    """An MDX `import`/`export` statement runs to the next blank line."""
    j = k
    while j < len(lines) and text[slice(*lines[j])].strip():
        j += 1
    mask.blank(lines[k][0], lines[j - 1][1])
    return j


def _blank_jsx(text: str, lines: list[tuple[int, int]], k: int, mask: _Mask) -> int:
    """The JSX tags and `{expressions}` that make up line k (a tag may run over lines).
    A line with text after its tags (`<Callout>Windows is not supported.</Callout>`) is left
    as it is: blanking its tags would indent the text into a code block, and the Markdown
    reader drops inline tags itself. Returns the line after the last one read."""
    first = k
    pos, end_of_line = lines[k]
    spans: list[tuple[int, int]] = []
    while True:
        while pos < end_of_line and text[pos] in " \t":
            pos += 1
        if pos >= end_of_line:
            break
        if text[pos] == "<" and _JSX_START.match(text, pos) is not None:
            stop = _tag_end(text, pos)
        elif text[pos] == "{":
            stop = _brace_end(text, pos)
        else:
            return first + 1  # text follows the tags
        spans.append((pos, stop))
        pos = stop
        while pos > end_of_line and k + 1 < len(lines):  # the tag ran over lines
            k += 1
            end_of_line = lines[k][1]
    for start, stop in spans:
        mask.blank(start, stop)
    return k + 1


def _brace_end(text: str, start: int, limit: int = 8000) -> int:
    """The offset after the `}` closing the `{` at `start`.

    >>> src = "{/* a {b} */} tail"
    >>> src[_brace_end(src, 0):]
    ' tail'
    """
    depth = 0
    for i in range(start, min(len(text), start + limit)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return min(len(text), start + limit)


def unmasked(blocks: list[Block], text: str) -> list[Block]:
    """Blocks read from a masked text, with their text, items and cells sliced from the file."""
    out = []
    for block in blocks:
        update: dict[str, object] = {"text": text[block.start : block.end]}
        if block.item_spans:
            update["items"] = [text[s:e] for s, e in block.item_spans]
        if block.cell_spans:
            update["rows"] = [[text[s:e] for s, e in row] for row in block.cell_spans]
        out.append(block.model_copy(update=update))
    return out
