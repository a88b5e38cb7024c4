"""HTML to the Markdown-like text the structure parser reads (`html_to_markdown`).

A saved documentation page is mostly the site around the page: its menus, search box,
breadcrumbs, table of contents, "Previous / Next" and copyright footer. Where the page marks
its main content (`<main>`, `role="main"`, or a single `<article>`: HTML's and ARIA's
landmarks), only that is read; navigation, search, banner and footer landmarks, forms and
buttons never are, nor the permalink anchors beside headings ("¶"), nor a list that is all
links within the page (its own contents: its titles follow as headings). Inline code and bold
stay Markdown code spans and bold (`--backend`, **Fennel**): what a page formats that way
names things, as in a Markdown source.

Its own module so that BeautifulSoup (~80 ms to import) loads only for a corpus with HTML.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag
from bs4.element import NavigableString

from ingest.markup import code_fence

__all__ = ["html_to_markdown"]

_DROP = {
    "script",
    "style",
    "head",
    "noscript",
    "template",
    "svg",
    "iframe",
    "nav",
    "form",
    "button",
    "footer",
}
#: ARIA landmarks around a page's content, never in it
_DROP_ROLES = {"navigation", "search", "banner", "contentinfo"}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "aside",
    "blockquote",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "address",
    "details",
    "summary",
    "body",
    "html",
    "hr",
}
_CODE = {"code", "kbd", "samp", "tt"}
_BOLD = {"strong", "b"}
_WS = re.compile(r"\s+")


def _dropped(node: Tag) -> bool:
    """Whether an element is the site around the content: a landmark of navigation, search,
    banner or footer, a form or button, or a heading's permalink (an in-page link whose text is
    one symbol, "¶" or "#")."""
    if node.name in _DROP:
        return True
    role = node.get("role")
    if isinstance(role, str) and set(role.split()) & _DROP_ROLES:
        return True
    if node.name == "a":
        href = node.get("href")
        text = node.get_text().strip()
        return (
            isinstance(href, str) and href.startswith("#") and len(text) <= 1 and not text.isalnum()
        )
    return False


def _contents(node: Tag) -> bool:
    """Whether a list is a table of contents: all its text is links within the page.

    >>> toc = '<ul><li><a href="#a">A</a><ul><li><a href="#b">B</a></li></ul></li></ul>'
    >>> toc = BeautifulSoup(toc, "html.parser")
    >>> _contents(toc.ul), _contents(BeautifulSoup('<ul><li>A</li></ul>', "html.parser").ul)
    (True, False)
    """
    text = _WS.sub("", node.get_text())
    linked = "".join(
        a.get_text()
        for a in node.find_all("a")
        if isinstance(a.get("href"), str) and str(a.get("href")).startswith("#")
    )
    return bool(text) and _WS.sub("", linked) == text


def _prose(block: str) -> bool:
    """Whether a rendered block is a paragraph (no code fence, table, heading or list).

    >>> _prose("Run it."), _prose("```\\nx\\n```"), _prose("| a |"), _prose("- a")
    (True, False, False, False)
    """
    return re.match(r"`{3}|~{3}|\||#|[-*+] |\d+[.)] ", block) is None


def _main(soup: BeautifulSoup) -> Tag | BeautifulSoup:
    """The page's main content where it marks one: `<main>`, an element of role `main`, or its
    only `<article>`; else the whole page.

    >>> page = BeautifulSoup("<nav>Menu</nav><main><p>Body</p></main>", "html.parser")
    >>> _main(page).get_text()
    'Body'
    """
    for found in (soup.find_all("main"), soup.find_all(role="main")):
        if len(found) == 1 and isinstance(found[0], Tag):
            return found[0]
    articles = soup.find_all("article")
    if len(articles) == 1 and isinstance(articles[0], Tag):
        return articles[0]
    return soup


def _span(text: str, name: str) -> str:
    """Inline text as Markdown: a code span (fenced by more backticks than it holds) or bold.

    >>> _span(" --threads ", "code"), _span("a`b", "kbd"), _span("Fennel", "b"), _span(" ", "b")
    ('`--threads`', '``a`b``', '**Fennel**', '')
    """
    inner = text.strip()
    if not inner:
        return ""
    if name in _BOLD:
        return f"**{inner}**"
    fence = "`" * (max((len(r) for r in re.findall(r"`+", inner)), default=0) + 1)
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def _inline_parts(node: Tag, parts: list[str]) -> None:
    for child in node.children:
        if isinstance(child, NavigableString):
            if type(child) is NavigableString:  # not a Comment/Doctype/CData
                parts.append(str(child))
        elif isinstance(child, Tag) and not _dropped(child):
            if child.name == "br":
                parts.append(" ")
            elif child.name in _CODE or child.name in _BOLD:
                parts.append(_span(_WS.sub(" ", child.get_text()), child.name))
            else:
                _inline_parts(child, parts)


def _inline_text(node: Tag) -> str:
    parts: list[str] = []
    _inline_parts(node, parts)
    return _WS.sub(" ", "".join(parts)).strip()


class _HtmlRenderer:
    """Walks the soup and collects Markdown-like blocks (joined by blank lines)."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []

    def flush(self) -> None:
        text = _WS.sub(" ", "".join(self.inline)).strip()
        if text:
            self.blocks.append(text)
        self.inline = []

    def render(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # not a Comment/Doctype/CData
                    self.inline.append(str(child))
                continue
            if not isinstance(child, Tag) or _dropped(child):
                continue
            name = child.name
            if name in _CODE or name in _BOLD:
                self.inline.append(_span(_WS.sub(" ", child.get_text()), name))
            elif re.fullmatch(r"h[1-6]", name):
                self.flush()
                title = _inline_text(child)
                if title:
                    self.blocks.append("#" * int(name[1]) + " " + title)
            elif name in ("ul", "ol"):
                self.flush()
                if _contents(child):  # the page's own table of contents: its titles follow
                    continue
                lines = self.list_lines(child, 0)
                if lines:
                    self.blocks.append("\n".join(lines))
            elif name == "table":
                self.flush()
                table = self.table_lines(child)
                if table:
                    self.blocks.append("\n".join(table))
            elif name == "pre":
                self.flush()
                self.blocks.append(self.pre_block(child))
            elif name == "br":
                self.flush()
            elif name in _BLOCK or name == "li":
                self.flush()
                self.render(child)
                self.flush()
            else:
                self.render(child)

    def list_lines(self, node: Tag, depth: int) -> list[str]:
        """A list's lines, its nested lists indented under their items. An item's first
        paragraph is its line, and what else it holds (more paragraphs, code blocks, tables)
        follows indented under it, as Markdown writes a loose item: a docs page's step is often
        a sentence, then a command, then what to do otherwise.

        >>> html = ("<ol><li><p>Install it.</p><pre>pip install tarn</pre>"
        ...         "<p>Then check:</p></li><li>Run it.</li></ol>")
        >>> print("\\n".join(_HtmlRenderer().list_lines(BeautifulSoup(html, "html.parser").ol, 0)))
        1. Install it.
        <BLANKLINE>
           ```
           pip install tarn
           ```
        <BLANKLINE>
           Then check:
        <BLANKLINE>
        2. Run it.
        """
        lines: list[str] = []
        for number, item in enumerate(node.find_all("li", recursive=False), start=1):
            nested = [c for c in item.find_all(["ul", "ol"]) if c.find_parent("li") is item]
            for sub in nested:
                sub.extract()
            marker = f"{number}." if node.name == "ol" else "-"
            pad = "  " * depth
            blocks = self.item_blocks(item)
            if blocks and _prose(blocks[0]):
                lines.append(f"{pad}{marker} {blocks[0]}")
                indent = " " * (len(pad) + len(marker) + 1)
                for block in blocks[1:]:
                    lines.append("")
                    lines.extend(indent + line if line else line for line in block.split("\n"))
                if len(blocks) > 1:
                    lines.append("")
            elif text := _inline_text(item):  # an item that opens with code or a table
                lines.append(f"{pad}{marker} {text}")
            for sub in nested:
                lines.extend(self.list_lines(sub, depth + 1))
        while lines and not lines[-1]:
            lines.pop()
        return lines

    @staticmethod
    def item_blocks(item: Tag) -> list[str]:
        """The blocks a list item holds (its nested lists taken out), in order."""
        renderer = _HtmlRenderer()
        renderer.render(item)
        renderer.flush()
        return renderer.blocks

    @staticmethod
    def table_lines(node: Tag) -> list[str]:
        rows: list[list[str]] = []
        for tr in node.find_all("tr"):
            if tr.find_parent("table") is not node:
                continue
            cells = [_inline_text(c).replace("|", "\\|") for c in tr.find_all(["th", "td"])]
            if cells:
                rows.append(cells)
        if not rows:
            return []
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(r) + " |" for r in rows]
        lines.insert(1, "|" + "---|" * width)
        return lines

    @staticmethod
    def pre_block(node: Tag) -> str:
        language = ""
        for tag in [node, *node.find_all("code")]:
            for cls in tag.get_attribute_list("class") or []:
                if cls and cls.startswith(("language-", "lang-")):
                    language = cls.split("-", 1)[1]
        if not language:
            # Sphinx marks it on the boxes around the block: highlight-bash > highlight > pre
            for box in node.find_parents("div", limit=2):
                for cls in box.get_attribute_list("class") or []:
                    if cls and cls.startswith("highlight-") and cls != "highlight-default":
                        language = cls.split("-", 1)[1]
        code = node.get_text().strip("\n")
        fence = code_fence(code)
        return f"{fence}{language}\n{code}\n{fence}"


def html_to_markdown(html: str) -> str:
    """Convert HTML to Markdown-like text that the structure parser reads (see
    `ingest.load.html_to_text`).

    >>> html_to_markdown("<h2>Pick</h2><ul><li>PyTorch</li></ul>")
    '## Pick\\n\\n- PyTorch\\n'
    """
    soup = BeautifulSoup(html, "html.parser")
    renderer = _HtmlRenderer()
    renderer.render(_main(soup))
    renderer.flush()
    return "\n\n".join(renderer.blocks) + "\n" if renderer.blocks else ""
