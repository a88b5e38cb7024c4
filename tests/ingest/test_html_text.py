"""A saved documentation page: its content read, the site around it not (ingest.html_text)."""

from __future__ import annotations

from pathlib import Path

from ingest.formats import document_blocks
from ingest.load import html_to_text, load_document
from ingest.units import document_units
from kg.documents import BlockKind, Document

#: a page as a documentation theme saves it: a side menu, a search box, breadcrumbs, the page's
#: contents, permalink anchors after the titles, a footer with Previous / Next and a copyright line
PAGE = """<!DOCTYPE html><html><head><title>Serving — Quillon docs</title></head><body>
<nav class="side"><a href="index.html">Quillon</a>
<ul><li><a href="install.html">Installation</a></li>
<li><a href="#">Serving guide</a></li></ul></nav>
<div class="page">
<div role="search"><form><input name="q" placeholder="Search docs"></form></div>
<div role="navigation" aria-label="breadcrumbs"><ul><li><a href="index.html">Home</a></li>
<li>Serving guide</li><li><a href="_sources/serving.rst.txt">View page source</a></li></ul></div>
<div role="main"><section>
<ul class="toc"><li><a href="#serving-guide">Serving guide</a>
<ul><li><a href="#backends">Backends</a></li></ul></li></ul>
<h1>Serving guide<a class="headerlink" href="#serving-guide">¶</a></h1>
<p>Quillon serves quantized models. Pick a backend with <code><span>--backend</span></code>.</p>
<div class="note"><p>The <strong>Fennel</strong> backend needs a GPU with 24 GB of memory.</p></div>
<h2>Backends<a class="headerlink" href="#backends">¶</a></h2>
<table><thead><tr><th>Backend</th><th>Hardware</th></tr></thead>
<tbody><tr><td><code>fennel</code></td><td>GPU</td></tr><tr><td><code>sorrel</code></td><td>CPU</td></tr></tbody></table>
<ul><li><p>Use <b>Sorrel</b> on machines without a GPU.</p></li></ul>
<p>See <a href="#fn1">1</a> and <kbd>Ctrl</kbd>.</p>
</section></div>
<footer><a href="install.html">Previous</a><a href="faq.html">Next</a>
<p>© Copyright 2026, Quillon authors. Built with a theme.</p></footer>
</div></body></html>"""


def test_a_docs_page_is_read_without_the_site_around_it() -> None:
    text = html_to_text(PAGE)
    for chrome in ("Installation", "Search docs", "Home", "View page source", "Previous", "©"):
        assert chrome not in text
    assert "¶" not in text
    assert text.startswith("# Serving guide\n\n")
    assert "## Backends\n" in text
    # a footnote's number is a link of one letter or digit, and stays
    assert "See 1 and `Ctrl`." in text


def test_inline_code_and_bold_stay_markdown() -> None:
    text = html_to_text(PAGE)
    assert "Pick a backend with `--backend`." in text
    assert "The **Fennel** backend needs" in text
    assert "- Use **Sorrel** on machines without a GPU." in text
    assert "| `fennel` | GPU |" in text


def test_the_page_parses_to_its_blocks_and_verbatim_units(tmp_path: Path) -> None:
    (tmp_path / "serving.html").write_text(PAGE, encoding="utf-8")
    doc = load_document(tmp_path / "serving.html", tmp_path)
    blocks = document_blocks(doc)
    assert [b.kind for b in blocks] == [
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.PROSE,
        BlockKind.HEADING,
        BlockKind.TABLE,
        BlockKind.LIST,
        BlockKind.PROSE,
    ]
    assert blocks[4].rows[1:] == [["`fennel`", "GPU"], ["`sorrel`", "CPU"]]
    units = document_units(doc, blocks)
    assert [u.text for u in units] == [
        "Serving guide",
        "Quillon serves quantized models.",
        "Pick a backend with --backend.",
        "The Fennel backend needs a GPU with 24 GB of memory.",
        "Backends",
        "fennel | GPU",
        "sorrel | CPU",
        "Use Sorrel on machines without a GPU.",
        "See 1 and Ctrl.",
    ]
    # the quote, in the text the store keeps, holds the page's own formatting
    assert doc.text[units[2].start : units[2].end] == "Pick a backend with `--backend`."


def test_without_a_main_landmark_the_whole_page_is_read() -> None:
    two = "<article><h2>One</h2><p>first</p></article><article><h2>Two</h2><p>second</p></article>"
    assert html_to_text(two) == "## One\n\nfirst\n\n## Two\n\nsecond\n"
    assert html_to_text("<p>only <em>this</em></p>") == "only this\n"


def test_a_page_showing_a_markdown_fence_keeps_its_code_block_whole() -> None:
    html = '<pre><code class="language-markdown">```rust\nlet x = 5;\n```</code></pre><p>after</p>'
    text = html_to_text(html)
    assert text.startswith("````markdown\n```rust\nlet x = 5;\n```\n````\n")
    doc = Document.from_text("page.html", text, media_type="text/html")
    (code, after) = document_blocks(doc)
    assert code.kind == BlockKind.CODE and code.code == "```rust\nlet x = 5;\n```"
    assert after.text == "after"
