"""Evidence units on a hand-written README: verbatim spans, clean text, table rows with their
header, nested items with their parent, lead-in context, navigation dropped, long text cut."""

from __future__ import annotations

import re

import pytest

from ingest.formats import document_blocks
from ingest.markdown import parse_markdown
from ingest.markup import clean_inline, strip_markup
from ingest.units import (
    MAX_UNIT_CHARS,
    document_units,
    item_lead,
    lone_units,
    stem,
    stem_text,
    unit_index_text,
)
from kg.documents import Document, EvidenceUnit, UnitKind

README = """\
# Brindle

**Brindle** is a tokenizer library. It runs on *NVIDIA* GPUs &amp; CPUs.

Supported platforms:

| OS | Status |
|----|--------|
| Linux | ✅ |
| [macOS](https://apple.com) | **beta** |

Install it with:

```bash
pip install brindle
brindle --help
```

## Features

- **Speed**: Encodes 1M tokens per second.
  - Measured on one core. Really.
    - Single thread
- Formats - reads `GGUF` and ONNX

[Docs](https://d) | [API](https://a) | [Blog](https://b) | [Forum](https://f)

<p align="center"><a href="#a">论文</a> | <a href="#b">文档</a> |
<a href="#c">例程</a> | <a href="#d">论坛</a></p>
"""

_MARKUP = re.compile(r"\*\*|`|\]\(|https?://|<[a-z/]|&amp;|\{#|!\[")


def units_of(text: str, doc_id: str = "brindle/README.md") -> tuple[Document, list[EvidenceUnit]]:
    doc = Document.from_text(doc_id, text, media_type="text/markdown")
    units = document_units(doc, parse_markdown(doc))
    check_units(doc, units)
    return doc, units


def check_units(doc: Document, units: list[EvidenceUnit]) -> None:
    """Spans are verbatim, trimmed, in order and disjoint; text is what a reader sees."""
    previous_end = 0
    for u in units:
        quote = doc.text[u.start : u.end]
        assert u.id == f"{doc.id}#{u.start}-{u.end}" and u.doc == doc.id
        assert 0 <= u.start < u.end <= len(doc.text)
        assert quote == quote.strip()
        assert u.start >= previous_end, f"unit overlaps the one before: {quote!r}"
        previous_end = u.end
        assert u.text and u.text == u.text.strip()
        if u.kind in (UnitKind.SENTENCE, UnitKind.ITEM, UnitKind.ROW, UnitKind.HEADING):
            assert not _MARKUP.search(u.text), u.text
            assert len(u.text) <= MAX_UNIT_CHARS
        if u.kind == UnitKind.ROW:
            assert u.text == " | ".join(u.cells)
            assert quote.startswith("|") or not quote.endswith("|")
        elif u.kind == UnitKind.HEADING:
            assert u.heading_path and u.text == u.heading_path[-1]
            assert u.text in strip_markup(quote)
        elif u.kind == UnitKind.CODE:
            assert all(line.strip() in quote for line in u.text.split("\n"))
        else:
            assert clean_inline(doc.text, u.start, u.end).text == u.text, quote


def view(units: list[EvidenceUnit]) -> list[tuple[str, str]]:
    return [(u.kind.value, u.text) for u in units]


def test_readme_units() -> None:
    doc, units = units_of(README)
    assert view(units) == [
        ("heading", "Brindle"),
        ("sentence", "Brindle is a tokenizer library."),
        ("sentence", "It runs on NVIDIA GPUs & CPUs."),
        ("sentence", "Supported platforms:"),
        ("row", "Linux | ✅"),
        ("row", "macOS | beta"),
        ("sentence", "Install it with:"),
        ("code", "pip install brindle\nbrindle --help"),
        ("heading", "Features"),
        ("item", "Speed: Encodes 1M tokens per second."),
        ("item", "Measured on one core. Really."),
        ("item", "Single thread"),
        ("item", "Formats - reads GGUF and ONNX"),
    ]
    quotes = [doc.text[u.start : u.end] for u in units]
    assert quotes[1] == "**Brindle** is a tokenizer library."
    assert quotes[2] == "It runs on *NVIDIA* GPUs &amp; CPUs."
    assert quotes[5] == "| [macOS](https://apple.com) | **beta** |"
    assert quotes[7] == "pip install brindle\nbrindle --help"
    assert quotes[8] == "## Features"
    assert [u.heading_path for u in units][-1] == ("Brindle", "Features")


def test_table_rows_keep_header_cells_and_context() -> None:
    _, units = units_of(README)
    rows = [u for u in units if u.kind == UnitKind.ROW]
    assert [(u.cells, u.header, u.context) for u in rows] == [
        (["Linux", "✅"], ["OS", "Status"], "Supported platforms:"),
        (["macOS", "beta"], ["OS", "Status"], "Supported platforms:"),
    ]


def test_nested_items_get_their_parent_as_context_and_leads() -> None:
    _, units = units_of(README)
    items = [(u.text, u.lead, u.context) for u in units if u.kind == UnitKind.ITEM]
    assert items == [
        ("Speed: Encodes 1M tokens per second.", "Speed", ""),
        ("Measured on one core. Really.", "", "Speed: Encodes 1M tokens per second."),
        ("Single thread", "", "Measured on one core."),
        ("Formats - reads GGUF and ONNX", "Formats", ""),
    ]


def test_an_item_under_a_label_is_read_under_the_sentence_over_the_list() -> None:
    # "- INT8" says nothing alone: its items are GPUs because the sentence over the list says
    # so; a question about which GPUs run a mode finds them by that sentence's words
    doc = (
        "# Quill\n\nThese GPUs run each quantized mode of Quill:\n\n"
        "- INT8\n  - T4\n  - A10\n- FP8\n  - L4\n\nDone.\n"
    )
    _, units = units_of(doc)
    items = [(u.text, u.context) for u in units if u.kind == UnitKind.ITEM]
    over = "These GPUs run each quantized mode of Quill:"
    assert items == [
        ("INT8", over),
        ("T4", f"{over} INT8"),
        ("A10", f"{over} INT8"),
        ("FP8", over),
        ("L4", f"{over} FP8"),
    ]


FAQ = """# Wisp

## Serving

Wisp serves models over HTTP with the wisp serve command.

## Troubleshooting

### Garbled output

Upgrade Wisp to 0.4 or later.

### Out of memory

Lower the cache ratio.

Serve fewer clients at once.

```bash
wisp serve --cache-ratio 0.5
```
"""


def test_a_sections_one_sentence_is_searched_under_its_title() -> None:
    # a FAQ entry's answer is all its section says: its title (the symptom) is its own words;
    # where a section says two things, the title would match both, and stays out
    _, units = units_of(FAQ, "wisp/docs/faq.md")
    by_text = {u.text: u for u in units}
    lone = lone_units(units)
    upgrade, lower = by_text["Upgrade Wisp to 0.4 or later."], by_text["Lower the cache ratio."]
    assert upgrade.id in lone and lower.id not in lone
    assert by_text["Serve fewer clients at once."].id not in lone
    assert "garbl" in unit_index_text(upgrade, titled=True)
    assert "garbl" not in unit_index_text(upgrade)


def test_a_colon_sentence_gives_the_next_block_its_context() -> None:
    text = "Requirements:\n\n- Python 3.10\n- CUDA 12.1\n\nOther text.\n\n- unrelated item\n"
    _, units = units_of(text)
    assert [(u.text, u.context) for u in units] == [
        ("Requirements:", ""),
        ("Python 3.10", "Requirements:"),
        ("CUDA 12.1", "Requirements:"),
        ("Other text.", ""),
        ("unrelated item", ""),
    ]


def test_colon_context_is_chinese_too_and_reaches_code() -> None:
    _, units = units_of("安装方法：\n\n```\npip install brindle\n```\n")
    assert [(u.kind.value, u.text, u.context) for u in units] == [
        ("sentence", "安装方法：", ""),
        ("code", "pip install brindle", "安装方法："),
    ]


def test_a_list_item_ending_in_a_colon_introduces_the_block_under_it() -> None:
    text = (
        "1. Pick a backend:\n\n   | Backend | Latency |\n   |---|---|\n   | Kestrel | 12 ms |\n\n"
        "2. 安装：\n\n   ```bash\n   pip install brindle\n   ```\n\n3. Done.\n\nAfter.\n"
    )
    _, units = units_of(text)
    assert [(u.kind.value, u.text, u.context) for u in units] == [
        ("item", "Pick a backend:", ""),
        ("row", "Kestrel | 12 ms", "Pick a backend:"),
        ("item", "安装：", ""),
        ("code", "pip install brindle", "安装："),
        ("item", "Done.", ""),
        ("sentence", "After.", ""),
    ]


def test_a_list_goes_on_past_the_code_in_one_of_its_items() -> None:
    # the text an item holds after its code is the item's; the list's next item is read under
    # what its first ones were; a list after a code block that is no item's is another list
    text = (
        "Steps:\n\n1. Run init.\n2. Share the weights from rank 0:\n\n   ```python\n"
        "   tarn.share(model)\n   ```\n\n   Every worker then starts the same.\n\n"
        "3. Save on rank 0.\n\nAfter:\n\n- a\n\n```\ncode\n```\n\n- b\n"
    )
    _, units = units_of(text)
    assert [(u.text, u.context) for u in units] == [
        ("Steps:", ""),
        ("Run init.", "Steps:"),
        ("Share the weights from rank 0:", "Steps:"),
        ("tarn.share(model)", "Share the weights from rank 0:"),
        ("Every worker then starts the same.", "Steps: Share the weights from rank 0:"),
        ("Save on rank 0.", "Steps:"),
        ("After:", ""),
        ("a", "After:"),
        ("code", ""),
        ("b", ""),
    ]


def test_an_rst_item_goes_on_past_its_code_block() -> None:
    text = (
        "Steps:\n\n1. Share the weights from rank 0:\n\n   .. code-block:: python\n\n"
        "       tarn.share(model)\n\n   Every worker then starts the same.\n\n"
        "2. Save on rank 0.\n"
    )
    doc = Document.from_text("steps.rst", text, media_type="text/x-rst")
    units = document_units(doc, document_blocks(doc))
    check_units(doc, units)
    assert [(u.text, u.context) for u in units] == [
        ("Steps:", ""),
        ("Share the weights from rank 0:", "Steps:"),
        ("tarn.share(model)", "Share the weights from rank 0:"),
        ("Every worker then starts the same.", "Steps: Share the weights from rank 0:"),
        ("Save on rank 0.", "Steps:"),
    ]


def test_a_bold_label_alone_gives_the_next_block_its_context() -> None:
    text = (
        "**Kestrel (fast mode)**\n\n- small batches only\n- needs two cards\n\n"
        "**Kestrel** is the default and **Wren** is not.\n\n- another item\n"
    )
    _, units = units_of(text)
    assert [(u.text, u.context) for u in units] == [
        ("Kestrel (fast mode)", ""),
        ("small batches only", "Kestrel (fast mode)"),
        ("needs two cards", "Kestrel (fast mode)"),
        ("Kestrel is the default and Wren is not.", ""),
        ("another item", ""),
    ]


def test_colon_context_does_not_cross_a_heading() -> None:
    _, units = units_of("Requirements:\n\n## Next\n\n- Python 3.10\n")
    assert [(u.text, u.context) for u in units] == [
        ("Requirements:", ""),
        ("Next", ""),
        ("Python 3.10", ""),
    ]


def test_navigation_blocks_yield_no_units() -> None:
    _, units = units_of(README)
    assert not any("Docs" in u.text or "论文" in u.text for u in units)


def test_a_paragraph_with_links_and_sentences_is_no_navigation() -> None:
    text = "Read [a](https://a) and [b](https://b). Try [c](https://c) or [d](https://d).\n"
    _, units = units_of(text)
    assert view(units) == [("sentence", "Read a and b."), ("sentence", "Try c or d.")]


def test_long_sentence_is_cut_at_soft_breaks() -> None:
    clause = "Brindle encodes text into tokens quickly"
    text = ", ".join([clause] * 40) + ".\n"
    _, units = units_of(text)
    assert len(units) > 1
    assert all(len(u.text) <= MAX_UNIT_CHARS for u in units)
    assert all(u.kind == UnitKind.SENTENCE for u in units)
    assert all(u.text.endswith(",") for u in units[:-1])  # cut right after a comma
    assert " ".join(u.text for u in units) == strip_markup(text)


def test_long_sentence_without_breaks_is_cut_at_the_limit() -> None:
    text = "x" * 2000 + "\n"
    _, units = units_of("word " + text)
    assert [len(u.text) for u in units] == [MAX_UNIT_CHARS] * 4 + [2005 - 4 * MAX_UNIT_CHARS]


def test_long_item_is_cut_and_only_its_first_piece_has_the_lead() -> None:
    text = (
        "- **Speed**: " + "; ".join(["encodes a million tokens per second on one core"] * 20) + "\n"
    )
    _, units = units_of(text)
    assert len(units) > 1
    assert all(u.kind == UnitKind.ITEM for u in units)
    assert [u.lead for u in units] == ["Speed"] + [""] * (len(units) - 1)
    assert all(len(u.text) <= MAX_UNIT_CHARS for u in units)


def test_code_block_is_quoted_in_even_pieces_of_eight_lines_at_most() -> None:
    body = "\n".join(f"line_{i} = {i}" for i in range(12))
    doc, units = units_of(f"```python\n{body}\n```\n")
    assert [u.text for u in units] == [
        "\n".join(f"line_{i} = {i}" for i in range(6)),
        "\n".join(f"line_{i} = {i}" for i in range(6, 12)),
    ]
    assert all(doc.text[u.start : u.end] == u.text for u in units)
    assert units[0].end < units[1].start
    # nine lines: five and four, not eight and one stray closing line
    body = "\n".join([*(f"call({i})" for i in range(8)), "}"])
    _, units = units_of(f"```js\n{body}\n```\n")
    assert [u.text.count("\n") + 1 for u in units] == [5, 4]


def test_output_at_the_end_of_a_code_block_is_found() -> None:
    body = "\n".join([*(f"step --flag-{i}" for i in range(8)), "", "Peak memory: 3.14 GB"])
    doc, units = units_of(f"Run it:\n\n```bash\n{body}\n```\n")
    code = [u for u in units if u.kind == UnitKind.CODE]
    assert "step --flag-0" not in code[-1].text
    assert code[-1].text.endswith("Peak memory: 3.14 GB")
    assert doc.text[code[-1].start : code[-1].end] == code[-1].text
    assert code[0].context == "Run it:"
    # the later piece is read under the line before it: the command it goes on from
    assert code[-1].context == "Run it: step --flag-4"


def test_later_code_piece_is_read_under_the_command_it_continues() -> None:
    body = "\n".join(
        [
            "pip install wisp",
            "",
            "wisp run tiny-model \\",
            "  --bits 4 \\",
            "  --threads 2 \\",
            "  --max-tokens 64",
            "...",
            "Throughput: 41.5 tok/s",
            "Memory used: 2.25 GB",
        ]
    )
    doc, units = units_of(f"## Benchmark\n\n```bash\n{body}\n```\n")
    code = [u for u in units if u.kind == UnitKind.CODE]
    assert [u.text.splitlines()[0] for u in code] == ["pip install wisp", "--max-tokens 64"]
    assert code[0].context == ""
    # the output's piece starts inside the command: it is read under the command's start, and
    # a search for the command's words finds the figures it printed
    assert code[1].context == "wisp run tiny-model --bits 4 --threads 2"
    assert "wisp run tiny-model" in unit_index_text(code[1])
    assert doc.text[code[1].start : code[1].end] == code[1].text
    # a program's later piece is not read under the statement before it: no command's output
    body = "\n".join(f"total_{i} = step({i})" for i in range(10))
    _, units = units_of(f"Train it:\n\n```python\n{body}\n```\n")
    assert [u.context for u in units if u.kind == UnitKind.CODE] == ["Train it:", "Train it:"]


def test_very_long_code_yields_no_unit() -> None:
    body = "\n".join(f"x{i} = {i}" for i in range(40))
    _, units = units_of(f"```\n{body}\n```\n")
    assert units == []


def test_one_megabyte_line_is_cut_into_short_units() -> None:
    _, units = units_of("word " * 200_000)
    assert len(units) > 2000
    assert max(len(u.text) for u in units) <= MAX_UNIT_CHARS


def test_sentence_ending_in_a_link_quotes_cleanly() -> None:
    doc = Document.from_text(
        "t.md", "Brindle works with [PyTorch](https://pytorch.org)\n", media_type="text/markdown"
    )
    (unit,) = document_units(doc, parse_markdown(doc))
    assert unit.text == "Brindle works with PyTorch"
    assert clean_inline(doc.text, unit.start, unit.end).text == unit.text


# -- item_lead, stems, index text --------------------------------------------------------------


@pytest.mark.parametrize(
    ("clean", "lead"),
    [
        ("Hardware: Supports CPU, Apple, NVIDIA", "Hardware"),
        ("NNCF - advanced model optimization techniques", "NNCF"),
        ("Optimum Intel – Intel extension", "Optimum Intel"),
        ("硬件：支持 CPU", "硬件"),
        ("This is a long sentence without a lead term at all.", ""),
        ("Seven words in this lead are too many: x", ""),
        ("See https://x.org: the docs", ""),
        ("Ends here. Then: more", "Ends here. Then"),
        ("no-dash-lead-here", ""),
        (": starts with a colon", ""),
    ],
)
def test_item_lead(clean: str, lead: str) -> None:
    assert item_lead(clean) == lead


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("quantization", "quant"),
        ("quantizing", "quant"),
        ("quantized", "quant"),
        ("quantize", "quant"),
        ("binaries", "binari"),
        ("supports", "support"),
        ("supported", "support"),
        ("Models", "model"),
        ("GPUs", "gpu"),
        ("runs", "run"),
        ("bits", "bit"),
        ("needs", "need"),
        ("class", "class"),
        ("uses", "use"),
        ("tuned", "tuned"),  # a stem keeps four letters before "ed"
        ("ONNX", "onnx"),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stem_text_only_touches_english_words() -> None:
    assert (
        stem_text("Quantizing models for 浏览器 on GPUs v2.1")
        == "quant model for 浏览器 on GPUs v2.1"
    )


def test_unit_index_text_reads_header_context_and_text_and_only_a_rows_section() -> None:
    unit = EvidenceUnit(
        id="d#0-1",
        doc="d",
        start=0,
        end=1,
        kind=UnitKind.ROW,
        text="4090 | 38",
        header=["GPU", "tokens"],
        context="Measured speeds:",
        heading_path=("Benchmarks", "CPU"),
    )
    # a table is what its section holds: "#### CPU" says what the row measures
    assert unit_index_text(unit) == "CPU GPU token measur speed: 4090 | 38"
    sentence = unit.model_copy(update={"kind": UnitKind.SENTENCE, "header": [], "context": ""})
    assert unit_index_text(sentence) == "4090 | 38"


def test_a_row_that_only_names_a_group_labels_the_rows_below_it() -> None:
    _, units = units_of(
        "# Bench\n\n#### CPU\n\n| | Tokens/s | Memory |\n| --- | --- | --- |\n"
        "| **Model A** | | |\n| Tool X | 275.8 | 2012MB |\n| Tool Y | 658.8 | 849MB |\n"
        "| **Model B** | | |\n| Tool X | 300.1 | 1900MB |\n"
    )
    rows = [(u.cells[0], u.context) for u in units if u.kind == UnitKind.ROW]
    assert rows == [("Tool X", "Model A"), ("Tool Y", "Model A"), ("Tool X", "Model B")]


def test_a_chinese_line_wrapped_in_the_file_reads_as_one_line() -> None:
    # a hard-wrapped Chinese paragraph (a plain-text file, a PDF's text layer): a line break
    # between two Chinese characters is no space, one between Latin words stays one
    body = (
        "上线之前，我们通常会先把整套权重做一次剪\n枝，再交给编译器去优化；之后换用 Quill\n"
        "Engine 也行。"
    )
    doc = Document.from_text("notes.txt", f"笔记\n{body}\n")
    units = document_units(doc, document_blocks(doc))
    texts = [u.text for u in units]
    assert "上线之前，我们通常会先把整套权重做一次剪枝，再交给编译器去优化；" in texts
    assert "之后换用 Quill Engine 也行。" in texts
    first = units[texts.index("之后换用 Quill Engine 也行。") - 1]
    assert doc.text[first.start : first.end] == body[: body.index("；") + 1]  # the span is verbatim
