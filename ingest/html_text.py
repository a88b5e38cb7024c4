"""HTML to the Markdown-like text the structure parser reads (`html_to_markdown`).

Its own module so that BeautifulSoup (~80 ms to import) loads only for a corpus with HTML.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag
from bs4.element import NavigableString

__all__ = ["html_to_markdown"]

_DROP = {"script", "style", "head", "noscript", "template", "svg", "iframe", "nav"}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
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
    "form",
    "body",
    "html",
    "hr",
}
_WS = re.compile(r"\s+")


def _inline_text(node: Tag) -> str:
    parts: list[str] = []
    for child in node.descendants:
        if isinstance(child, NavigableString) and not any(
            p.name in _DROP for p in child.parents if isinstance(p, Tag)
        ):
            parts.append(str(child))
        elif isinstance(child, Tag) and child.name == "br":
            parts.append(" ")
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
            if not isinstance(child, Tag) or child.name in _DROP:
                continue
            name = child.name
            if re.fullmatch(r"h[1-6]", name):
                self.flush()
                title = _inline_text(child)
                if title:
                    self.blocks.append("#" * int(name[1]) + " " + title)
            elif name in ("ul", "ol"):
                self.flush()
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
        lines: list[str] = []
        for number, item in enumerate(node.find_all("li", recursive=False), start=1):
            nested = [c for c in item.find_all(["ul", "ol"]) if c.find_parent("li") is item]
            for sub in nested:
                sub.extract()
            text = _inline_text(item)
            marker = f"{number}." if node.name == "ol" else "-"
            if text:
                lines.append("  " * depth + f"{marker} {text}")
            for sub in nested:
                lines.extend(self.list_lines(sub, depth + 1))
        return lines

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
        code = node.get_text().strip("\n")
        return f"```{language}\n{code}\n```"


def html_to_markdown(html: str) -> str:
    """Convert HTML to Markdown-like text that the structure parser reads (see
    `ingest.load.html_to_text`).

    >>> html_to_markdown("<h2>Pick</h2><ul><li>PyTorch</li></ul>")
    '## Pick\\n\\n- PyTorch\\n'
    """
    soup = BeautifulSoup(html, "html.parser")
    renderer = _HtmlRenderer()
    renderer.render(soup)
    renderer.flush()
    return "\n\n".join(renderer.blocks) + "\n" if renderer.blocks else ""
