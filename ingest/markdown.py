"""Cut a Markdown document (a README, a docs page) into structural `Block`s with exact spans.

Recognised: ATX and setext headings, HTML headings (`<h1 align="center">…</h1>`), fenced and
indented code, pipe tables, HTML tables (`<table>` … `<tr>` … `<td>`), nested lists (items with
their wrapped lines), block quotes, HTML blocks, paragraphs, MkDocs' admonitions and tabs
(`!!! note "Title"`, `=== "pip"`: the title a heading over the text indented under it), and
Docusaurus' and VitePress' admonitions (`:::tip Title` … `:::`), the components a docs
site's builder renders (`<Tip>` … `</Tip>` on lines of their own), and tabs written as roles
(d2lbook's `:begin_tab:`pytorch`` … `:end_tab:`, its anchors `:label:`…`` no text). Badge
rows, logos, link bars and rules — lines with no words once markup is gone — yield no block.
Invariants as in `ingest.structure`: `block.text == doc.text[block.start:block.end]`, blocks are
sorted and never overlap, and every item/cell span slices the document to its string.

The parser is line-based and linear: deep nesting, giant tables, unclosed fences or HTML and a
1 MB single line all cost one pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ingest.formats.dialects import QUARTO
from ingest.markup import is_decorative, strip_markup
from ingest.structure.code import Line, code_like
from ingest.structure.items import indent_depths, table_cells
from kg.documents import Block, BlockKind, Document

__all__ = ["is_markdown", "is_plain_essay", "parse_markdown"]

# a backtick fence's info string holds no backtick: "```npm install x```" is inline code
_FENCE = re.compile(r"^[ \t]*(`{3,}(?![^`]*`)|~{3,})[ \t]*([\w+#.\-]*)")
_ATX = re.compile(r"^[ \t]{0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^[ \t]{0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_ITEM = re.compile(r"^([ \t]*)([-*+•]|\d{1,9}[.)])([ \t]+(?:\[[ xX]\][ \t]+)?)(?=\S)")
_QUOTE = re.compile(r"^[ \t]{0,3}>")
_HTML_OPEN = re.compile(r"^[ \t]*<(/?)([A-Za-z][A-Za-z0-9]*)\b")
_HTML_BLOCK_TAGS = frozenset(
    """
    address article aside blockquote body center details dialog dd div dl dt figcaption figure
    footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p picture pre section source
    summary table tbody td tfoot th thead tr ul img a br sub sup span b strong em i kbd video
    iframe
    """.split()  # noqa: SIM905 - a word list reads best as words
)
_HTML_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
_HTML_TABLE = re.compile(r"<table\b.*?(?:</table\s*>|\Z)", re.I | re.S)
_HTML_ROW = re.compile(r"<tr\b[^>]*>(.*?)(?=<tr\b|</tr\s*>|</table|\Z)", re.I | re.S)
_HTML_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)(?=<t[dh]\b|</t[dh]\s*>|</tr|\Z)", re.I | re.S)
_COMMENT_OPEN = re.compile(r"^[ \t]*<!--")
#: MkDocs' containers: an admonition or a collapsible block (`!!! note "Title"`, `??? tip`,
#: `???+ warning`, `!!! note inline end`: its classes) or a content tab (`=== "pip"`), whose
#: content is the lines indented under it
_CONTAINER = re.compile(
    r"^([ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+([\w-]+(?:[ \t]+[\w-]+)*)(?:[ \t]+\"([^\"\n]*)\")?"
    r"|===\+?[ \t]+\"([^\"\n]*)\")[ \t]*$"
)
#: a Docusaurus or VitePress admonition (`:::note[Title]`, `:::tip Title`, `::: warning`), which a
#: line of as many colons or more closes; its text between is not indented
_COLON_OPEN = re.compile(
    r"^[ \t]{0,3}(:{3,})[ \t]*([A-Za-z][\w-]*)(?:[ \t]*\[([^\]\n]*)\]|[ \t]+(\S[^\n]*?))?[ \t]*$"
)
_COLON_CLOSE = re.compile(r"^[ \t]{0,3}(:{3,})[ \t]*$")
#: a tab written as roles (d2lbook's `:begin_tab:`pytorch`` … `:end_tab:`): its name a heading
#: over the text up to the closing line
_ROLE_TAB_OPEN = re.compile(r"^[ \t]{0,3}:begin_tab:`([^`\n]+)`[ \t]*$")
_ROLE_TAB_CLOSE = re.compile(r"^[ \t]{0,3}:end_tab:[ \t]*$")
#: a line that is only an anchor for cross-references (`:label:`sec_gpu``): no text
_ROLE_LABEL = re.compile(r"^[ \t]{0,3}:label:`[^`\n]*`[ \t]*$")
#: the elements of HTML (the living standard's list, obsolete ones included): a tag of any other
#: name is a docs site's component (`<Tip>`, `<Tip warning={true}>`, `<hfoption id="CLI">`)
_HTML_ELEMENTS = _HTML_BLOCK_TAGS | frozenset(
    """
    abbr acronym applet area audio base basefont bdi bdo big blink button canvas caption cite
    code col colgroup data datalist del dfn dir embed fieldset font frame frameset head hgroup
    ins label legend link map mark marquee menu meta meter noscript object optgroup option
    output param progress q rp rt ruby s samp script search select slot small style svg
    template textarea time title track tt u var wbr math
    """.split()  # noqa: SIM905 - a word list reads best as words
)
#: a line that holds only a component's opening tag, and one that holds only a closing tag
_COMPONENT_OPEN = re.compile(r"^[ \t]*<([A-Za-z][\w.\-]*)(?:\s[^<>]*)?>[ \t]*$")
_COMPONENT_CLOSE = re.compile(r"^[ \t]*</([A-Za-z][\w.\-]*)\s*>[ \t]*$")
#: a container's title is a heading below any of the page's (`#` to `######`)
_CONTAINER_LEVEL = 7
_MAX_HTML_LINES = 400


def is_markdown(doc: Document) -> bool:
    """Whether a document reads as Markdown: its media type, or ATX headings / fences in the text.

    >>> is_markdown(Document.from_text("a.txt", "# Title\\n\\n## Part\\ntext"))
    True
    >>> is_markdown(Document.from_text("a.txt", "model = f()\\n# load the model\\nx = 1"))
    False
    >>> is_markdown(Document.from_text("a.txt", "一、对比\\n正文"))
    False
    """
    if doc.media_type in ("text/markdown", QUARTO, "text/html"):
        return True
    # plain text reads as Markdown only with Markdown's own marks: a code fence, links, or
    # headings at two levels (a "# comment" in pasted code is no heading)
    text = doc.text
    levels = {len(m.group(1)) for m in re.finditer(r"(?m)^(#{1,6}) \S", text)}
    return (
        bool(re.search(r"(?m)^```", text))
        or len(re.findall(r"\]\(https?://", text)) >= 3
        or (len(levels) >= 2)
    )


_MARKUP_SIGNS = re.compile(
    r"(?m)^\s*(?:```|~~~)"  # a code fence
    r"|\]\((?:https?://|#|\.{0,2}/)"  # a link or an image
    r"|<(?:a|img|div|p|br|table|details|picture|h[1-6])\b"  # HTML
    r"|^\s*>\s*\\?\[!\w+\\?\]",  # a GitHub alert, its brackets escaped or not
    re.I,
)


def is_plain_essay(doc: Document) -> bool:
    """Whether a Markdown document is an essay in plain words: headings, lists and prose, with
    no code, links, images or HTML (the shape of the bundled articles, not of a README).

    >>> is_plain_essay(Document.from_text("a.md", "# 选型\\n\\n- 研究：PyTorch\\n"))
    True
    >>> is_plain_essay(Document.from_text("a.md", "# X\\n\\nSee [docs](https://x.io).\\n"))
    False
    """
    return _MARKUP_SIGNS.search(doc.text) is None


@dataclass
class _Line:
    start: int
    end: int
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @property
    def indent(self) -> int:
        stripped = self.text.lstrip(" \t")
        return len(self.text[: len(self.text) - len(stripped)].expandtabs(4))


@dataclass
class _Heading:
    level: int
    title: str


@dataclass
class _Parser:
    doc: Document
    #: whether lines indented by four are code (CommonMark); MDX has no indented code
    indent_is_code: bool = True
    lines: list[_Line] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    stack: list[_Heading] = field(default_factory=list)
    #: open containers, innermost last: (the line after their content, their content's indent)
    containers: list[tuple[int, int]] = field(default_factory=list)
    #: lines that close a colon-fenced admonition or a component: no text
    closing: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        pos = 0
        text = self.doc.text
        for raw in text.split("\n"):
            self.lines.append(_Line(pos, pos + len(raw), raw))
            pos += len(raw) + 1

    # -- output -------------------------------------------------------------------------------
    def path(self) -> tuple[str, ...]:
        return tuple(h.title for h in self.stack)

    def emit(self, kind: BlockKind, start: int, end: int, **fields: object) -> None:
        text = self.doc.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start >= end:
            return
        if self.blocks and start < self.blocks[-1].end:
            return  # never overlap (a defensive guard: the scanner moves forward only)

        def inside(span: tuple[int, int]) -> tuple[int, int]:
            # a padded last cell at the line's end: spans stay inside the trimmed block
            a, b = min(max(span[0], start), end), min(max(span[1], start), end)
            return (a, max(a, b))

        if "cell_spans" in fields:
            fields["cell_spans"] = [
                [inside(sp) for sp in row]
                for row in fields["cell_spans"]  # type: ignore[attr-defined]
            ]
        self.blocks.append(
            Block.model_validate(
                {
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "text": text[start:end],
                    "heading_path": self.path(),
                    **fields,
                }
            )
        )

    def heading(self, level: int, title_start: int, title_end: int, start: int, end: int) -> None:
        # the ATX closing sequence is already cut off: a "#" left is the title's ("Using C#")
        title = strip_markup(self.doc.text[title_start:title_end]).strip(" :：")
        if not title:
            return
        self.stack = [h for h in self.stack if h.level < level]
        self.stack.append(_Heading(level, title[:200]))
        self.emit(BlockKind.HEADING, start, end, level=len(self.stack))

    # -- scanning -----------------------------------------------------------------------------
    def run(self) -> list[Block]:
        k = 0
        n = len(self.lines)
        while k < n:
            self.close_containers(k)
            k = self.step(k)
        return self.blocks

    def colon_container(self, k: int, m: re.Match[str]) -> int:
        """A colon-fenced admonition (`_COLON_OPEN`): its title, where it has one, is a heading
        over the text up to the line that closes it (as many colons or more); the fence lines
        are no text. One that nothing closes is a line of text."""
        mark = m.group(1)

        def closes(t: str) -> bool:
            close = _COLON_CLOSE.match(t)
            return close is not None and len(close.group(1)) >= len(mark)

        j = self.closing_line(k, closes, lambda t: _COLON_OPEN.match(t) is not None)
        if j >= len(self.lines):
            return self.paragraph(k)
        self.closing.add(j)
        group = 3 if m.group(3) else 4 if m.group(4) else 0
        if group:
            ln = self.lines[k]
            level = _CONTAINER_LEVEL + len(self.containers)
            title_start, title_end = ln.start + m.start(group), ln.start + m.end(group)
            self.heading(level, title_start, title_end, ln.start, ln.end)
        self.containers.append((j + 1, self.lines[k].indent))
        return k + 1

    def role_tab(self, k: int, m: re.Match[str]) -> int:
        """A tab written as roles (`_ROLE_TAB_OPEN`): its name is a heading over the text up to
        `:end_tab:`, as a titled tab's; the role lines are no text. One that nothing closes is
        a line of text."""
        j = self.closing_line(
            k,
            lambda t: _ROLE_TAB_CLOSE.match(t) is not None,
            lambda t: _ROLE_TAB_OPEN.match(t) is not None,
        )
        if j >= len(self.lines):
            return self.paragraph(k)
        self.closing.add(j)
        ln = self.lines[k]
        level = _CONTAINER_LEVEL + len(self.containers)
        self.heading(level, ln.start + m.start(1), ln.start + m.end(1), ln.start, ln.end)
        self.containers.append((j + 1, ln.indent))
        return k + 1

    def component(self, k: int, name: str) -> int:
        """A docs site's component (`<Tip>`, `<hfoption id="CLI">`: an element HTML does not
        have) whose tags stand on lines of their own: the tag lines are no text, and the text
        between is read as Markdown where it is. A site's builder renders what a component holds
        as the page's text (MDX has no indented code): a note indented under `<Tip>` is
        sentences, not a code block; lines indented further than its first are code, as under
        an admonition. One that nothing closes is a line of text."""

        def tag(pattern: re.Pattern[str]) -> Callable[[str], bool]:
            return lambda t: (m := pattern.match(t)) is not None and m.group(1) == name

        j = self.closing_line(k, tag(_COMPONENT_CLOSE), tag(_COMPONENT_OPEN))
        if j >= len(self.lines):
            return self.paragraph(k)
        self.closing.add(j)
        first = next((ln for ln in self.lines[k + 1 : j] if not ln.blank), None)
        if first is not None:
            self.containers.append((j + 1, first.indent))
        return k + 1

    def closing_line(
        self, k: int, closes: Callable[[str], bool], opens: Callable[[str], bool]
    ) -> int:
        """The line that closes the container opening at line k (past the last: none does),
        others of its kind nested inside counted; a code fence's lines are code, not marks."""
        depth, j = 0, k + 1
        while j < len(self.lines):
            t = self.lines[j].text
            if _FENCE.match(t):
                j = self.fence_close(j) + 1
                continue
            if closes(t):
                if depth == 0:
                    return j
                depth -= 1
            elif opens(t):
                depth += 1
            j += 1
        return j

    def fence_close(self, k: int) -> int:
        """The line that closes the code fence opening at line k (past the last: none does)."""
        m = _FENCE.match(self.lines[k].text)
        assert m is not None
        mark = m.group(1)
        j = k + 1
        while j < len(self.lines):
            closing = self.lines[j].text.strip()
            if closing.startswith(mark[0] * len(mark)) and not closing.strip(mark[0]):
                return j
            j += 1
        return j

    def close_containers(self, k: int) -> None:
        """Containers whose content ends before line k close, and so do their titles."""
        while self.containers and self.containers[-1][0] <= k:
            self.containers.pop()
            level = _CONTAINER_LEVEL + len(self.containers)
            self.stack = [h for h in self.stack if h.level < level]

    def container(self, k: int, m: re.Match[str]) -> int:
        """An admonition or a tab (`_CONTAINER`): its title, where it has one, is a heading over
        the lines indented under it, which are read as Markdown where they are, not as indented
        code. One with nothing indented under it is a line of text."""
        ln = self.lines[k]
        base = len(m.group(1).expandtabs(4)) + 4
        j = end = k + 1
        while j < len(self.lines) and (self.lines[j].blank or self.lines[j].indent >= base):
            if not self.lines[j].blank:
                end = j + 1
            j += 1
        if end == k + 1:
            return self.paragraph(k)
        group = 3 if m.group(3) is not None else 4 if m.group(4) is not None else 0
        if group:  # an admonition of no title ("!!! tip") says nothing its section does not
            level = _CONTAINER_LEVEL + len(self.containers)
            title_start, title_end = ln.start + m.start(group), ln.start + m.end(group)
            self.heading(level, title_start, title_end, ln.start, ln.end)
        self.containers.append((end, base))
        return k + 1

    def step(self, k: int) -> int:
        ln = self.lines[k]
        t = ln.text
        if ln.blank:
            return k + 1
        if _FENCE.match(t):
            return self.fence(k)
        if _COMMENT_OPEN.match(t):
            return self.comment(k)
        if (m := _CONTAINER.match(t)) is not None:
            return self.container(k, m)
        if k in self.closing or _ROLE_LABEL.match(t):
            return k + 1
        if (m := _COLON_OPEN.match(t)) is not None:
            return self.colon_container(k, m)
        if (m := _ROLE_TAB_OPEN.match(t)) is not None:
            return self.role_tab(k, m)
        if (m := _COMPONENT_OPEN.match(t)) is not None and m.group(1).lower() not in _HTML_ELEMENTS:
            return self.component(k, m.group(1))
        if (m := _ATX.match(t)) is not None:
            title = m.group(2) or ""
            offset = t.find(title) if title else len(t)
            self.heading(
                len(m.group(1)), ln.start + offset, ln.start + offset + len(title), ln.start, ln.end
            )
            return k + 1
        if _RULE.match(t):
            return k + 1
        if self.html_start(k):
            return self.html(k)
        if self.table_start(k):
            return self.table(k)
        if _ITEM.match(t):
            return self.list_block(k)
        if _QUOTE.match(t):
            return self.quote(k)
        if ln.indent >= 4 and (k == 0 or self.lines[k - 1].blank):
            if not self.indent_is_code:
                return self.paragraph(k)  # MDX: text indented under a JSX tag is text
            if self.containers and ln.indent < self.containers[-1][1] + 4:
                return self.paragraph(k)  # a container's own text, indented under its title
            if self.continues_list(k) and not code_like(t.strip()):
                return self.paragraph(k)  # a list item's continuation paragraph, not code
            return self.indented_code(k)
        return self.paragraph(k)

    def starts_block(self, k: int) -> bool:
        """Whether line k starts something other than paragraph text."""
        t = self.lines[k].text
        return bool(
            k in self.closing
            or _FENCE.match(t)
            or _COLON_CLOSE.match(t)
            or _COLON_OPEN.match(t)
            or _ROLE_TAB_OPEN.match(t)
            or _ROLE_TAB_CLOSE.match(t)
            or _ROLE_LABEL.match(t)
            or _ATX.match(t)
            or _RULE.match(t)
            or _ITEM.match(t)
            or _QUOTE.match(t)
            or _COMMENT_OPEN.match(t)
            or self.html_start(k)
            or self.table_start(k)
        )

    def fence(self, k: int) -> int:
        open_line = self.lines[k]
        m = _FENCE.match(open_line.text)
        assert m is not None
        language = m.group(2) or None
        j = self.fence_close(k)
        last = min(j, len(self.lines) - 1)
        body = self.lines[k + 1 : j]
        indent = min((b.indent for b in body if not b.blank), default=0)
        code = "\n".join(b.text.expandtabs(4)[indent:] for b in body)
        self.emit(
            BlockKind.CODE,
            open_line.start,
            self.lines[last].end,
            language=language.lower() if language else None,
            code=code,
        )
        return j + 1

    def comment(self, k: int) -> int:
        j = k
        while j < len(self.lines) and "-->" not in self.lines[j].text:
            j += 1
        return j + 1

    def html_start(self, k: int) -> bool:
        m = _HTML_OPEN.match(self.lines[k].text)
        return m is not None and m.group(2).lower() in _HTML_BLOCK_TAGS

    def html(self, k: int) -> int:
        """An HTML block: to the next blank line (a `<table>` to its end tag, bounded)."""
        first = self.lines[k]
        is_table = re.match(r"^[ \t]*<table\b", first.text, re.I) is not None
        j = k
        while j < len(self.lines) and j - k < _MAX_HTML_LINES:
            line = self.lines[j]
            if is_table:
                if re.search(r"</table\s*>", line.text, re.I):
                    j += 1
                    break
            elif line.blank:
                break
            j += 1
        start, end = first.start, self.lines[j - 1].end
        self.html_content(start, end)
        return j

    def html_content(self, start: int, end: int) -> None:
        """Headings, tables and text inside an HTML block, each with its own span."""
        text = self.doc.text
        pos = start
        pieces: list[tuple[int, int, str]] = []
        for m in _HTML_HEADING.finditer(text, start, end):
            pieces.append((m.start(), m.end(), "h"))
        for m in _HTML_TABLE.finditer(text, start, end):
            pieces.append((m.start(), m.end(), "t"))
        pieces.sort()
        for s, e, kind in pieces:
            if s < pos:
                continue
            self.html_text(pos, s)
            if kind == "h":
                hm = _HTML_HEADING.match(text, s, e)
                assert hm is not None
                self.heading(int(hm.group(1)), hm.start(2), hm.end(2), s, e)
            else:
                self.html_table(s, e)
            pos = e
        self.html_text(pos, end)

    def html_text(self, start: int, end: int) -> None:
        if start < end and not is_decorative(self.doc.text, start, end):
            self.emit(BlockKind.PROSE, start, end)

    def html_table(self, start: int, end: int) -> None:
        text = self.doc.text
        rows: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        for row in _HTML_ROW.finditer(text, start, end):
            cells = [
                (c.start(1), c.end(1)) for c in _HTML_CELL.finditer(text, row.start(1), row.end(1))
            ]
            if cells:
                spans.append(cells)
                rows.append([text[s:e] for s, e in cells])
        if len(rows) >= 2:
            width = max(len(r) for r in rows)
            for row_cells, row_spans in zip(rows, spans, strict=True):
                pad = width - len(row_cells)
                row_cells.extend([""] * pad)
                row_spans.extend([(row_spans[-1][1], row_spans[-1][1])] * pad)
            self.emit(BlockKind.TABLE, start, end, rows=rows, cell_spans=spans)
        else:
            self.html_text(start, end)

    def table_start(self, k: int) -> bool:
        if k + 1 >= len(self.lines):
            return False
        return (
            "|" in self.lines[k].text
            and bool(_TABLE_SEP.match(self.lines[k + 1].text))
            and ("|" in self.lines[k + 1].text or "-" in self.lines[k + 1].text)
        )

    def table(self, k: int) -> int:
        header = self.lines[k]
        rows_src = [header]
        j = k + 2
        while j < len(self.lines) and not self.lines[j].blank and "|" in self.lines[j].text:
            rows_src.append(self.lines[j])
            j += 1
        width = len(_cells(self.doc.text, header))
        rows: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        for ln in rows_src:
            cells = _cells(self.doc.text, ln)[:width]
            cells += [(ln.end, ln.end)] * (width - len(cells))
            spans.append(cells)
            rows.append([self.doc.text[s:e] for s, e in cells])
        self.emit(BlockKind.TABLE, header.start, rows_src[-1].end, rows=rows, cell_spans=spans)
        return j

    def list_block(self, k: int) -> int:
        items: list[list[int]] = []  # [start, end, indent]
        j = k
        while j < len(self.lines):
            ln = self.lines[j]
            if ln.blank:
                nxt = j + 1
                while nxt < len(self.lines) and self.lines[nxt].blank:
                    nxt += 1
                if nxt >= len(self.lines):
                    break
                following = self.lines[nxt]
                if _ITEM.match(following.text) or (
                    items and following.indent > items[-1][2] and not self.starts_block(nxt)
                ):
                    j = nxt
                    continue
                break
            m = _ITEM.match(ln.text)
            if m is not None:
                indent = len(m.group(1).expandtabs(4))
                items.append([ln.start + m.end(), ln.end, indent])
            elif items and not self.starts_block(j) and not _SETEXT.match(ln.text):
                items[-1][1] = ln.end  # a wrapped line of the item
            else:
                break
            j += 1
        if not items:
            return self.paragraph(k)
        text = self.doc.text
        spans = [(s, s + len(text[s:e].rstrip())) for s, e, _ in items]  # no trailing spaces
        self.emit(
            BlockKind.LIST,
            self.lines[k].start,
            spans[-1][1],
            items=[self.doc.text[s:e] for s, e in spans],
            item_spans=spans,
            depths=indent_depths([i for _, _, i in items]),
        )
        return j

    def quote(self, k: int) -> int:
        j = k
        while j < len(self.lines) and not self.lines[j].blank and _QUOTE.match(self.lines[j].text):
            j += 1
        self.emit(BlockKind.PROSE, self.lines[k].start, self.lines[j - 1].end)
        return j

    def continues_list(self, k: int) -> bool:
        """Whether line `k` follows a list with only blank lines between (it may continue it)."""
        if not self.blocks or self.blocks[-1].kind != BlockKind.LIST:
            return False
        j = k - 1
        while j >= 0 and self.lines[j].blank:
            j -= 1
        return j >= 0 and self.lines[j].end >= self.blocks[-1].end

    def indented_code(self, k: int) -> int:
        j = k
        while j < len(self.lines) and (self.lines[j].blank or self.lines[j].indent >= 4):
            j += 1
        while j > k and self.lines[j - 1].blank:
            j -= 1
        body = self.lines[k:j]
        code = "\n".join(b.text.expandtabs(4)[4:] for b in body)
        self.emit(BlockKind.CODE, body[0].start, body[-1].end, language=None, code=code)
        return j

    def paragraph(self, k: int) -> int:
        j = k + 1
        while j < len(self.lines):
            ln = self.lines[j]
            if ln.blank:
                break
            if _SETEXT.match(ln.text) and j == k + 1:
                level = 1 if ln.text.strip().startswith("=") else 2
                first = self.lines[k]
                self.heading(level, first.start, first.end, first.start, ln.end)
                return j + 1
            if self.starts_block(j):
                break
            j += 1
        start, end = self.lines[k].start, self.lines[j - 1].end
        if not is_decorative(self.doc.text, start, end):
            self.emit(BlockKind.PROSE, start, end)
        return j


def _cells(text: str, ln: _Line) -> list[tuple[int, int]]:
    """Spans of the stripped cells of a pipe-table row (outer pipes optional, `\\|` escaped).

    >>> src = "| a | b |"
    >>> [src[s:e] for s, e in _cells(src, _Line(0, len(src), src))]
    ['a', 'b']
    """
    lead = len(ln.text) - len(ln.text.lstrip())
    stripped = ln.text.strip()
    line = Line(ln.start, ln.start + lead, ln.start + lead + len(stripped), lead, stripped)
    return table_cells(text, line)


def parse_markdown(doc: Document, *, mdx: bool = False) -> list[Block]:
    """Cut a Markdown document into blocks, in order, with spans and heading paths; `mdx`: read
    as MDX does, where no indentation makes code (only fences do)."""
    return _Parser(doc, indent_is_code=not mdx).run()
