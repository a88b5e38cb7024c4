"""Markdown reader: each block kind on a few hand-written lines, the span invariants on generated
documents, and hostile input (deep nesting, a giant table, broken HTML, a 1 MB line)."""

from __future__ import annotations

import random

import pytest

from ingest.markdown import is_markdown, parse_markdown
from kg.documents import Block, BlockKind, Document


def _doc(text: str, doc_id: str = "t.md", media_type: str = "text/markdown") -> Document:
    return Document.from_text(doc_id, text, media_type=media_type)


def check_blocks(doc: Document, blocks: list[Block]) -> None:
    """The reader's invariants: verbatim, trimmed, sorted, non-overlapping blocks; item and cell
    spans that slice the document to their strings; heading levels that match heading paths
    (which change at a heading, or go back where a container's title closes)."""
    text = doc.text
    previous_end = 0
    path: tuple[str, ...] = ()
    for b in blocks:
        assert 0 <= b.start < b.end <= len(text), (b.start, b.end)
        assert b.text == text[b.start : b.end]
        assert b.text == b.text.strip(), repr(b.text[:40])
        assert b.start >= previous_end, f"overlap at {b.start}: {b.text[:40]!r}"
        previous_end = b.end
        if b.kind == BlockKind.HEADING:
            assert b.level == len(b.heading_path) >= 1
            assert all(b.heading_path)
            path = b.heading_path
        else:
            # the last heading's path, or a part of it where a container's title closed
            assert b.heading_path == path[: len(b.heading_path)], (b.heading_path, path)
            path = b.heading_path
        assert len(b.items) == len(b.item_spans) == len(b.depths)
        for item, (s, e) in zip(b.items, b.item_spans, strict=True):
            assert text[s:e] == item
            assert b.start <= s <= e <= b.end
        if b.depths:
            assert b.depths[0] == 0
            assert all(0 <= d <= p + 1 for p, d in zip(b.depths, b.depths[1:], strict=False))
        assert len(b.rows) == len(b.cell_spans)
        for row, spans in zip(b.rows, b.cell_spans, strict=True):
            assert [text[s:e] for s, e in spans] == row
            assert all(b.start <= s <= e <= b.end for s, e in spans)
        if b.rows:
            assert b.kind == BlockKind.TABLE
            assert len({len(r) for r in b.rows}) == 1, "rows of one table have one width"
        if b.kind == BlockKind.CODE:
            assert b.code is not None


def parse(text: str, media_type: str = "text/markdown") -> tuple[Document, list[Block]]:
    doc = _doc(text, media_type=media_type)
    blocks = parse_markdown(doc)
    check_blocks(doc, blocks)
    return doc, blocks


def kinds(blocks: list[Block]) -> list[str]:
    return [b.kind.value for b in blocks]


# -- is_markdown -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "media_type", "expected"),
    [
        ("plain words", "text/markdown", True),
        ("plain words", "text/html", True),
        ("# Title\n\n## Part\ntext", "text/plain", True),
        ("intro\n```python\nx = 1\n```", "text/plain", True),
        ("[a](https://a.org) [b](https://b.org) [c](https://c.org)", "text/plain", True),
        ("[a](https://a.org) [b](https://b.org)", "text/plain", False),
        ("# only one level\n# of headings", "text/plain", False),
        ("model = f()\n# load the model\nx = 1", "text/plain", False),
        ("一、对比\n正文", "text/plain", False),
    ],
)
def test_is_markdown(text: str, media_type: str, expected: bool) -> None:
    assert is_markdown(_doc(text, media_type=media_type)) is expected


# -- headings ----------------------------------------------------------------------------------


def test_atx_headings_and_paths() -> None:
    _, blocks = parse(
        "# Top\n\n## Part A ##\n\ntext a\n\n### Deep\n\n## Part B\n\ntext b\n\n# Next\n"
    )
    headings = [b for b in blocks if b.kind == BlockKind.HEADING]
    assert [(b.text, b.heading_path, b.level) for b in headings] == [
        ("# Top", ("Top",), 1),
        ("## Part A ##", ("Top", "Part A"), 2),
        ("### Deep", ("Top", "Part A", "Deep"), 3),
        ("## Part B", ("Top", "Part B"), 2),
        ("# Next", ("Next",), 1),
    ]
    prose = [(b.text, b.heading_path) for b in blocks if b.kind == BlockKind.PROSE]
    assert prose == [("text a", ("Top", "Part A")), ("text b", ("Top", "Part B"))]


def test_heading_titles_lose_markup() -> None:
    _, blocks = parse("## [Install](#install) with `pip` ⚡ {#inst}\n\n### **Bold:**\n")
    assert [b.heading_path[-1] for b in blocks] == ["Install with pip", "Bold"]


def test_not_headings() -> None:
    _, blocks = parse("#hashtag is text\n\n#\n\n####### seven\n")
    assert kinds(blocks) == ["prose", "prose"]
    assert [b.text for b in blocks] == ["#hashtag is text", "####### seven"]


def test_heading_title_ending_in_hash() -> None:
    _, blocks = parse("## Using C#\n")
    assert blocks[0].heading_path == ("Using C#",)


def test_setext_headings() -> None:
    _, blocks = parse("Main Title\n==========\n\nintro\n\nSub Part\n--------\n\nbody\n")
    assert [(b.kind.value, b.text, b.heading_path) for b in blocks] == [
        ("heading", "Main Title\n==========", ("Main Title",)),
        ("prose", "intro", ("Main Title",)),
        ("heading", "Sub Part\n--------", ("Main Title", "Sub Part")),
        ("prose", "body", ("Main Title", "Sub Part")),
    ]


def test_rule_is_not_a_setext_heading_after_a_blank_line() -> None:
    _, blocks = parse("text\n\n---\n\n***\n\n_ _ _\n\nmore\n")
    assert [b.text for b in blocks] == ["text", "more"]


def test_mkdocs_admonitions_and_tabs_hold_text_under_their_titles() -> None:
    text = (
        "# Guide\n\nIntro.\n\n"
        '!!! note "Mind the gap"\n    Use Fennel on a GPU.\n\n    Sorrel runs anywhere.\n\n'
        "    ```bash\n    quillon serve\n    ```\n\n"
        '=== "pip"\n\n    Install the wheel.\n\n=== "conda"\n\n    Use conda-forge.\n\n'
        "??? tip inline end\n    Keep it short.\n\nAfter.\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.heading_path[1:]) for b in blocks] == [
        ("heading", ()),
        ("prose", ()),
        ("heading", ("Mind the gap",)),
        ("prose", ("Mind the gap",)),
        ("prose", ("Mind the gap",)),
        ("code", ("Mind the gap",)),
        ("heading", ("pip",)),
        ("prose", ("pip",)),
        ("heading", ("conda",)),
        ("prose", ("conda",)),
        ("prose", ()),
        ("prose", ()),
    ]
    # the second paragraph is text, not indented code; the fence inside is code
    assert blocks[4].text == "Sorrel runs anywhere."
    assert blocks[5].code == "quillon serve" and blocks[5].language == "bash"
    # an admonition of no title is text of its section
    assert blocks[-2].text == "Keep it short." and blocks[-2].heading_path == ("Guide",)
    assert blocks[-1].text == "After." and blocks[-1].heading_path == ("Guide",)


def test_colon_fenced_admonitions_hold_text_under_their_titles() -> None:
    text = (
        "# Guide\n\n:::note Mind the gap\n\nUse **Fennel** on a GPU.\n\n"
        "```bash\n:::\n```\n\n:::\n\n::: tip\nShort.\n:::\n\n"
        ":::warning[Careful]\nOne.\n:::\n\nAfter.\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.heading_path[1:], b.text) for b in blocks] == [
        ("heading", (), "# Guide"),
        ("heading", ("Mind the gap",), ":::note Mind the gap"),
        ("prose", ("Mind the gap",), "Use **Fennel** on a GPU."),
        ("code", ("Mind the gap",), "```bash\n:::\n```"),
        ("prose", (), "Short."),
        ("heading", ("Careful",), ":::warning[Careful]"),
        ("prose", ("Careful",), "One."),
        ("prose", (), "After."),
    ]


def test_a_container_line_with_nothing_under_it_is_text() -> None:
    _, blocks = parse('!!! note "Alone"\n\nplain\n')
    assert [(b.kind.value, b.text) for b in blocks] == [
        ("prose", '!!! note "Alone"'),
        ("prose", "plain"),
    ]
    _, blocks = parse(":::tip\nnever closed\n")
    assert [(b.kind.value, b.text) for b in blocks] == [("prose", ":::tip\nnever closed")]


def test_a_docs_sites_components_hold_text_not_code() -> None:
    text = (
        "# Guide\n\n<Tip warning={true}>\n\n"
        "    Merging the shards on one rank is slow.\n    Save them sharded instead.\n\n"
        "        fennel save --sharded\n\n</Tip>\n\n"
        '<Choices id="how">\n<Choice id="CLI">\n\n```bash\nfennel run --debug\n```\n\n'
        '</Choice>\n<Choice id="env">\n\nSet `FENNEL_DEBUG`:\n</Choice>\n</Choices>\n\n'
        "<div>\n\n    an HTML element's indented line is code\n\n</div>\n\n"
        "<Unclosed>\n\n    code as before\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.text) for b in blocks] == [
        ("heading", "# Guide"),
        # indented under the component as far as its first line: the page's text
        ("prose", "Merging the shards on one rank is slow.\n    Save them sharded instead."),
        ("code", "fennel save --sharded"),  # indented further: code, as under an admonition
        ("code", "```bash\nfennel run --debug\n```"),
        ("prose", "Set `FENNEL_DEBUG`:"),  # a closing tag right under a line ends its text
        ("code", "an HTML element's indented line is code"),
        ("code", "code as before"),
    ]


def test_tabs_written_as_roles_hold_text_under_their_names() -> None:
    # a textbook's dialect (d2lbook): each framework's tab between roles, anchors on lines of
    # their own, cross-references inline
    text = (
        "# Devices\n:label:`sec_devices`\n\nAs :numref:`fig_ring` shows, rings are fast.\n\n"
        ":begin_tab:`fennel`\nIn Fennel, every array has a device.\n:end_tab:\n\n"
        ":begin_tab:`wren`\nIn Wren, every tensor has a place.\n\n```python\nx.place\n```\n"
        ":end_tab:\n\nAfter.\n\n:begin_tab:`open`\nnever closed\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.heading_path[1:], b.text) for b in blocks] == [
        ("heading", (), "# Devices"),
        ("prose", (), "As :numref:`fig_ring` shows, rings are fast."),
        ("heading", ("fennel",), ":begin_tab:`fennel`"),
        ("prose", ("fennel",), "In Fennel, every array has a device."),
        ("heading", ("wren",), ":begin_tab:`wren`"),
        ("prose", ("wren",), "In Wren, every tensor has a place."),
        ("code", ("wren",), "```python\nx.place\n```"),
        ("prose", (), "After."),
        ("prose", (), ":begin_tab:`open`\nnever closed"),
    ]


def test_html_headings() -> None:
    text = (
        '<h1 align="center">\n  <img src="logo.png" width="120"><br>\n  Brindle\n</h1>\n\n'
        "<p>\n  <h2>Fast <b>tokens</b></h2>\n</p>\n\nbody\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.heading_path) for b in blocks] == [
        ("heading", ("Brindle",)),
        ("heading", ("Brindle", "Fast tokens")),
        ("prose", ("Brindle", "Fast tokens")),
    ]
    assert blocks[0].text.startswith('<h1 align="center">') and blocks[0].text.endswith("</h1>")
    assert blocks[1].text == "<h2>Fast <b>tokens</b></h2>"


def test_logo_only_html_heading_yields_no_block() -> None:
    _, blocks = parse('<h1 align="center"><img src="logo.png"></h1>\n\n# Real\n')
    assert [(b.kind.value, b.text) for b in blocks] == [("heading", "# Real")]


# -- code --------------------------------------------------------------------------------------


def test_fences_closed_tilde_and_language() -> None:
    text = (
        "```Python\nimport foo\n\nfoo.run()\n```\n\n~~~\ntilde\n~~~\n\n"
        "````md\n```\ninner\n```\n````\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.language, b.code) for b in blocks] == [
        ("code", "python", "import foo\n\nfoo.run()"),
        ("code", None, "tilde"),
        ("code", "md", "```\ninner\n```"),
    ]
    assert blocks[0].text == "```Python\nimport foo\n\nfoo.run()\n```"


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "before\n\n```bash\npip install foo\n# not a heading\n- not an item"
    doc, blocks = parse(text)
    assert kinds(blocks) == ["prose", "code"]
    assert blocks[1].end == len(doc.text)
    assert blocks[1].code == "pip install foo\n# not a heading\n- not an item"


def test_triple_backticks_closed_on_their_line_are_inline_code() -> None:
    # CommonMark: a backtick fence's info string holds no backtick; read as a fence, the line
    # swallowed the rest of the README (its licence section included)
    text = "To install it run\n```npm install -g katex@0.13.18```\n\n## License\n\nBSD-style.\n"
    _, blocks = parse(text)
    assert kinds(blocks) == ["prose", "heading", "prose"]
    assert blocks[1].heading_path == ("License",)


def test_fence_indented_inside_a_list() -> None:
    text = "- install:\n\n  ```python\n  def f():\n      return 1\n  ```\n- run it\n"
    _, blocks = parse(text)
    assert kinds(blocks) == ["list", "code", "list"]
    assert blocks[0].items == ["install:"]
    assert blocks[1].language == "python"
    assert blocks[1].code == "def f():\n    return 1"  # the common indent removed, the rest kept
    assert blocks[2].items == ["run it"]


def test_indented_code_after_a_blank_line() -> None:
    _, blocks = parse("para\n\n    x = 1\n    y = 2\n\nafter\n")
    assert [(b.kind.value, b.text, b.code) for b in blocks] == [
        ("prose", "para", None),
        ("code", "x = 1\n    y = 2", "x = 1\ny = 2"),
        ("prose", "after", None),
    ]


# -- tables ------------------------------------------------------------------------------------


def test_pipe_table_with_outer_pipes() -> None:
    _, blocks = parse(
        "| GPU | Speed |\n|:----|------:|\n| RTX 4090 | **38** |\n| A100 | 40 |\n\nafter\n"
    )
    assert kinds(blocks) == ["table", "prose"]
    assert blocks[0].rows == [["GPU", "Speed"], ["RTX 4090", "**38**"], ["A100", "40"]]
    assert (
        blocks[0].text == "| GPU | Speed |\n|:----|------:|\n| RTX 4090 | **38** |\n| A100 | 40 |"
    )


def test_pipe_table_without_outer_pipes_and_escaped_pipe() -> None:
    _, blocks = parse("Name | Value\n--- | ---\na \\| b | 1\nc | 2\n")
    assert blocks[0].rows == [["Name", "Value"], ["a \\| b", "1"], ["c", "2"]]


def test_pipe_table_rows_pad_and_truncate_to_the_header() -> None:
    doc, blocks = parse("| a | b | c |\n|---|---|---|\n| 1 |\n| 1 | 2 | 3 | 4 |\n")
    table = blocks[0]
    assert table.rows == [["a", "b", "c"], ["1", "", ""], ["1", "2", "3"]]
    # padded cells are empty spans at the end of their line
    row_end = doc.text.index("| 1 |\n") + len("| 1 |")
    assert table.cell_spans[1][1:] == [(row_end, row_end), (row_end, row_end)]


def test_pipe_table_ends_at_a_line_without_a_pipe() -> None:
    _, blocks = parse("| a | b |\n|---|---|\n| 1 | 2 |\nplain line\n")
    assert kinds(blocks) == ["table", "prose"]
    assert blocks[1].text == "plain line"


def test_html_table() -> None:
    text = (
        "<table>\n  <thead>\n    <tr><th>GPU</th><th>Speed</th><th>Note</th></tr>\n  </thead>\n"
        "  <tr><td>RTX 4090</td><td>38</td></tr>\n"
        "  <tr><td>A100<td>40<td>fast</td></tr>\n</table>\n"
        "\nafter\n"
    )
    _, blocks = parse(text)
    assert kinds(blocks) == ["table", "prose"]
    assert blocks[0].rows == [
        ["GPU", "Speed", "Note"],
        ["RTX 4090", "38", ""],
        ["A100", "40", "fast"],
    ]
    assert blocks[0].text.endswith("</table>")


def test_one_row_html_table_is_prose() -> None:
    _, blocks = parse("<table><tr><td>only one row</td></tr></table>\n")
    assert kinds(blocks) == ["prose"]


def test_html_table_with_blank_lines_inside() -> None:
    text = (
        "<table>\n<tr><th>A</th><th>B</th></tr>\n\n"
        "<tr><td>1</td><td>2</td></tr>\n</table>\n\nafter\n"
    )
    _, blocks = parse(text)
    assert kinds(blocks) == ["table", "prose"]
    assert blocks[0].rows == [["A", "B"], ["1", "2"]]


# -- lists -------------------------------------------------------------------------------------


def test_nested_list_with_wrapped_lines() -> None:
    text = (
        "- first item\n  wrapped line\n  - child one\n    - grandchild\n  - child two\n"
        "lazy continuation\n- second item\n\n  paragraph of the second item\n\nafter\n"
    )
    _, blocks = parse(text)
    assert kinds(blocks) == ["list", "prose"]
    lst = blocks[0]
    assert lst.items == [
        "first item\n  wrapped line",
        "child one",
        "grandchild",
        "child two\nlazy continuation",
        "second item\n\n  paragraph of the second item",
    ]
    assert lst.depths == [0, 1, 2, 1, 0]
    assert blocks[1].text == "after"


def test_list_markers() -> None:
    _, blocks = parse("1. one\n2) two\n* star\n+ plus\n• bullet\n- [ ] todo\n- [x] done\n")
    assert blocks[0].items == ["one", "two", "star", "plus", "bullet", "todo", "done"]


def test_list_ends_at_a_heading_and_a_fence() -> None:
    _, blocks = parse("- a\n# Head\n- b\n```\ncode\n```\n")
    assert kinds(blocks) == ["list", "heading", "list", "code"]


def test_not_list_items() -> None:
    _, blocks = parse("**Bold** start\n\n3.14 is pi\n\n-1 is negative\n")
    assert kinds(blocks) == ["prose", "prose", "prose"]


def test_four_space_list_continuation_paragraph_is_not_code() -> None:
    _, blocks = parse("1. Install:\n    - pip install foo\n\n    Then run the demo.\n")
    assert BlockKind.CODE not in {b.kind for b in blocks}


# -- quotes, HTML, decoration ------------------------------------------------------------------


def test_block_quotes() -> None:
    _, blocks = parse("> [!NOTE]\n> Useful info.\n> > nested\n\nafter\n")
    assert [(b.kind.value, b.text) for b in blocks] == [
        ("prose", "> [!NOTE]\n> Useful info.\n> > nested"),
        ("prose", "after"),
    ]


def test_html_block_runs_to_a_blank_line() -> None:
    _, blocks = parse('<div align="center">\n  Some <b>html</b> text\n</div>\n\nafter\n')
    assert [(b.kind.value, b.text) for b in blocks] == [
        ("prose", '<div align="center">\n  Some <b>html</b> text\n</div>'),
        ("prose", "after"),
    ]


def test_comments_are_skipped() -> None:
    _, blocks = parse("<!-- one line -->\n\n<!--\nmany\nlines\n-->\nafter\n")
    assert [b.text for b in blocks] == ["after"]


def test_badge_and_logo_lines_yield_no_block() -> None:
    text = (
        "[![CI](https://ci/x.svg)](https://ci) [![PyPI](https://p/y.svg)](https://p)\n\n"
        '<p align="center"><img src="logo.png" width="200"></p>\n\n'
        "🚀 ✨\n\n---\n\nCandle is a framework.\n"
    )
    _, blocks = parse(text)
    assert [(b.kind.value, b.text) for b in blocks] == [("prose", "Candle is a framework.")]


def test_empty_document() -> None:
    for text in ["", "\n\n\n", "   "]:
        assert parse(text)[1] == []


def test_trailing_spaces_are_trimmed_from_blocks() -> None:
    _, blocks = parse_markdown_unchecked("# T  \n\npara with trailing   \n\n- item   \n")
    assert [b.text for b in blocks] == ["# T", "para with trailing", "- item"]
    assert blocks[2].items == ["item"]  # an item is trimmed like its block


def parse_markdown_unchecked(text: str) -> tuple[Document, list[Block]]:
    doc = _doc(text)
    return doc, parse_markdown(doc)


@pytest.mark.parametrize(
    "text", ["- item   \n\nnext\n", "| a | b |\n|---|---|\n| 1 |   \n"], ids=["item", "cell"]
)
def test_spans_stay_inside_their_block_with_trailing_spaces(text: str) -> None:
    parse(text)


# -- a README --------------------------------------------------------------------------------

README = """\
<h1 align="center">Brindle</h1>

[![CI](https://ci/x.svg)](https://ci)

Brindle is a tokenizer library.

## Install

```bash
pip install brindle
```

## Support

| OS | Status |
|----|--------|
| Linux | ✅ |

- Fast
  - really fast
"""


def test_readme_blocks() -> None:
    _, blocks = parse(README)
    assert [(b.kind.value, b.heading_path) for b in blocks] == [
        ("heading", ("Brindle",)),
        ("prose", ("Brindle",)),
        ("heading", ("Brindle", "Install")),
        ("code", ("Brindle", "Install")),
        ("heading", ("Brindle", "Support")),
        ("table", ("Brindle", "Support")),
        ("list", ("Brindle", "Support")),
    ]
    assert [b.level for b in blocks if b.kind == BlockKind.HEADING] == [1, 2, 2]


# -- generated documents -----------------------------------------------------------------------

_WORDS = [
    "Brindle",
    "runs",
    "on",
    "GPUs",
    "fast",
    "**bold**",
    "`code`",
    "[link](https://x.org)",
    "推理",
    "a|b",
]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, n)))


def _fragment(rng: random.Random) -> str:
    """One Markdown construct, sometimes broken on purpose."""
    pick = rng.randrange(17)
    if pick == 0:
        return "#" * rng.randint(1, 7) + " " + _words(rng, 4) + rng.choice(["", " ##", " #"])
    if pick == 1:
        return _words(rng, 4) + "\n" + rng.choice("=-") * rng.randint(1, 8)
    if pick == 2:
        return "\n".join(_words(rng, 10) for _ in range(rng.randint(1, 3)))
    if pick == 3:
        lines = []
        for _ in range(rng.randint(1, 6)):
            indent = " " * rng.choice([0, 2, 4, 8, 1])
            marker = rng.choice(["-", "*", "+", "1.", "2)", "- [ ]"])
            lines.append(f"{indent}{marker} {_words(rng, 6)}")
            if rng.random() < 0.3:
                lines.append(indent + "  " + _words(rng, 5))
            if rng.random() < 0.1:
                lines.append("")
        return "\n".join(lines)
    if pick == 4:
        mark = rng.choice(["```", "~~~", "````"])
        body = "\n".join(_words(rng, 5) for _ in range(rng.randint(0, 3)))
        close = rng.choice([mark, "", mark + "`"]) if rng.random() < 0.8 else ""
        indent = rng.choice(["", "  ", "    "])
        return "\n".join(
            indent + line for line in [mark + rng.choice(["", "python", "c++"]), body, close]
        )
    if pick == 5:
        width = rng.randint(1, 4)
        outer = rng.random() < 0.5

        def row(cells: list[str]) -> str:
            inner = " | ".join(cells)
            return f"| {inner} |" if outer else inner

        rows = [row([_words(rng, 2) for _ in range(width)]), row(["---"] * width)]
        rows += [
            row([_words(rng, 2) for _ in range(rng.randint(1, width + 1))])
            for _ in range(rng.randint(0, 4))
        ]
        return "\n".join(rows)
    if pick == 6:
        html_rows = "".join(
            "<tr>"
            + "".join(f"<td>{_words(rng, 2)}</td>" for _ in range(rng.randint(1, 3)))
            + "</tr>\n"
            for _ in range(rng.randint(1, 4))
        )
        return "<table>\n" + html_rows + rng.choice(["</table>", ""])
    if pick == 7:
        return "\n".join(
            ">" * rng.randint(1, 3) + " " + _words(rng, 5) for _ in range(rng.randint(1, 3))
        )
    if pick == 8:
        level = rng.randint(1, 3)
        return f'<div align="center">\n<h{level}>{_words(rng, 3)}</h1>\n<p>{_words(rng, 4)}'
    if pick == 9:
        return "[![CI](https://ci/x.svg)](https://ci) [![PyPI](https://p/y.svg)](https://p)"
    if pick == 10:
        return "    " + _words(rng, 4) + "\n    " + _words(rng, 4)
    if pick == 11:
        return rng.choice(
            ["---", "***", "<!-- c -->", "<!--\nopen", "<br>", "</div>", "<", "|", "\t"]
        )
    if pick == 12:
        return f'<h{rng.randint(1, 6)} align="center">{_words(rng, 3)}</h{rng.randint(1, 6)}>'
    if pick == 13:
        return "\n".join("  " * d + "- " + _words(rng, 3) for d in range(rng.randint(1, 8)))
    if pick == 14:
        return _words(rng, 3) + "\n" + _words(rng, 3) + "\n---"
    if pick == 15:
        return (
            "<details>\n<summary>"
            + _words(rng, 2)
            + "</summary>\n\n"
            + _words(rng, 5)
            + "\n\n</details>"
        )
    return _words(rng, 3) + " | " + _words(rng, 3)


def generate_markdown(rng: random.Random) -> str:
    parts = [_fragment(rng) for _ in range(rng.randint(1, 14))]
    seps = ["\n", "\n\n", "\n\n\n"]
    return "".join(p + rng.choice(seps) for p in parts).rstrip("\n") + rng.choice(["", "\n"])


@pytest.mark.parametrize("seed", range(300))
def test_invariants_on_generated_documents(seed: int) -> None:
    parse(generate_markdown(random.Random(seed)))


# -- hostile Markdown --------------------------------------------------------------------------


def test_thousand_nested_list_levels() -> None:
    text = "\n".join("  " * i + f"- level {i}" for i in range(1000))
    _, blocks = parse(text)
    assert kinds(blocks) == ["list"]
    assert blocks[0].depths == list(range(1000))
    assert blocks[0].items[-1] == "level 999"


def test_thousand_nested_quote_levels() -> None:
    text = "\n".join(">" * i + f" level {i}" for i in range(1, 1001))
    _, blocks = parse(text)
    assert [(b.kind.value, b.start, b.end) for b in blocks] == [("prose", 0, len(text))]
    _, blocks = parse(">" * 1000 + " deep")
    assert kinds(blocks) == ["prose"]


def test_giant_table() -> None:
    text = "| a | b | c |\n|---|---|---|\n" + "\n".join(f"| r{i} | {i} | x |" for i in range(5000))
    _, blocks = parse(text)
    assert kinds(blocks) == ["table"]
    assert len(blocks[0].rows) == 5001
    assert blocks[0].rows[-1] == ["r4999", "4999", "x"]


@pytest.mark.parametrize(
    "text",
    [
        "<div>\n<table>\n<tr><td>a<td>b\n<tr><td>c\n" + "<p><b>unclosed text here\n" * 500,
        "<table>\n" + "<tr><td>cell text</td>\n" * 1000,
        "<div>" * 10_000 + "words here" + "</div>" * 10_000,
        "<h1>never closed\n\n<h2>also open</h3>\n\n<table><tr><td>x",
        '<p align="center\n\n<img src=">\n\ntext "quoted"',
        "<!-- never closed\n# hidden heading\ntext",
    ],
)
def test_broken_html(text: str) -> None:
    parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "word " * 200_000,
        "<" * 1_000_000,
        "# " + "x" * 1_000_000,
        "|" * 1_000_000,
        "| a |\n|---|\n" + "|" * 1_000_000,
        "[" * 1_000_000,
        "*" * 1_000_000,
        "```\n" * 10_000,
    ],
    ids=["words", "lt", "heading", "pipes", "table-row", "brackets", "stars", "fences"],
)
def test_one_megabyte_line(text: str) -> None:
    parse(text)
