"""The reStructuredText reader: docutils' tree as the Markdown reader's blocks, spans verbatim."""

from __future__ import annotations

import pytest

from ingest.formats import RST, document_blocks
from ingest.formats.rst import parse_rst
from ingest.markup import clean_inline
from ingest.units import document_units
from kg.documents import Block, BlockKind, Document, UnitKind

PAGE = """\
.. _brindle:

=======
Brindle
=======

Brindle is an inference engine for :class:`~brindle.Model` objects, see ``brindle.run``.

Install
=======

- Runs on NVIDIA GPUs
  and AMD GPUs.
- Windows is not supported.

  - WSL works.

.. note:: Brindle needs Python 3.10
   or later.

.. code-block:: python
   :caption: quickstart.py
   :emphasize-lines: 2

   import brindle
   brindle.run("model.gguf")

.. toctree::
   :maxdepth: 2

   install
   api

Speed
-----

+---------+--------+
| Engine  | tok/s  |
+=========+========+
| Brindle | 120    |
+---------+--------+
| Other   | 80 on  |
|         | A100   |
+---------+--------+

.. list-table:: Memory
   :header-rows: 1

   * - Model
     - GB
   * - 7B
     - 5.2

.. tab-set::

   .. tab-item:: Linux

      Use the wheel.

quantization
   Brindle reads int4 weights.

:License: Apache-2.0

Example::

    brindle --port 8000
"""


def _check(doc: Document, blocks: list[Block]) -> None:
    end = 0
    for block in blocks:
        assert block.text == doc.text[block.start : block.end]
        assert block.start >= end  # sorted, never overlapping
        end = block.end
        for (s, e), item in zip(block.item_spans, block.items, strict=True):
            assert doc.text[s:e] == item


def _read(name: str, text: str) -> tuple[Document, list[Block]]:
    """A page of `text` read by the reStructuredText reader, its blocks checked (`_check`)."""
    doc = Document.from_text(name, text, media_type=RST)
    blocks = parse_rst(doc)
    _check(doc, blocks)
    return doc, blocks


@pytest.fixture
def page() -> tuple[Document, list[Block]]:
    doc = Document.from_text("brindle/index.rst", PAGE, media_type=RST)
    return doc, parse_rst(doc)


def test_sections_become_headings_with_paths(page: tuple[Document, list[Block]]) -> None:
    doc, blocks = page
    _check(doc, blocks)
    headings = [(b.text, b.level, b.heading_path) for b in blocks if b.kind == BlockKind.HEADING]
    assert headings == [
        ("Brindle", 1, ("Brindle",)),
        ("Install", 2, ("Brindle", "Install")),
        ("Speed", 3, ("Brindle", "Install", "Speed")),
    ]


def test_lists_code_notes_and_unknown_directives(page: tuple[Document, list[Block]]) -> None:
    _, blocks = page
    lists = [b for b in blocks if b.kind == BlockKind.LIST]
    assert lists[0].items == [
        "Runs on NVIDIA GPUs\n  and AMD GPUs.",
        "Windows is not supported.",
        "WSL works.",
    ]
    assert lists[0].depths == [0, 0, 1]
    assert lists[0].text.startswith("- Runs on")
    code = [b for b in blocks if b.kind == BlockKind.CODE]
    assert [(c.language, c.code) for c in code] == [
        ("python", 'import brindle\nbrindle.run("model.gguf")'),
        (None, "brindle --port 8000"),
    ]
    prose = [b.text for b in blocks if b.kind == BlockKind.PROSE]
    assert "Brindle needs Python 3.10\n   or later." in prose  # the note's text
    assert "Use the wheel." in prose  # inside directives docutils does not know
    assert not any("install\n" in t or "maxdepth" in t for t in prose)  # a toctree lists pages
    pairs = [(i, d) for b in lists for i, d in zip(b.items, b.depths, strict=True)]
    assert ("quantization", 0) in pairs and ("Brindle reads int4 weights.", 1) in pairs
    assert any(i == "License: Apache-2.0" for b in lists for i in b.items)


def test_tables_grid_and_list(page: tuple[Document, list[Block]]) -> None:
    doc, blocks = page
    tables = [b for b in blocks if b.kind == BlockKind.TABLE]
    assert [t.rows for t in tables] == [
        [["Engine", "tok/s"], ["Brindle", "120"], ["Other", "80 on A100"]],
        [["Model", "GB"], ["7B", "5.2"]],
    ]
    for table in tables:
        for row, spans in zip(table.rows, table.cell_spans, strict=True):
            for cell, (s, e) in zip(row, spans, strict=True):
                if cell != "80 on A100":  # a wrapped grid cell joins its lines
                    assert doc.text[s:e] == cell


def test_every_unit_quote_is_its_span(page: tuple[Document, list[Block]]) -> None:
    doc, blocks = page
    units = document_units(doc, blocks)
    assert units
    kinds = {u.kind for u in units}
    assert {
        UnitKind.HEADING,
        UnitKind.SENTENCE,
        UnitKind.ITEM,
        UnitKind.ROW,
        UnitKind.CODE,
    } <= kinds
    for unit in units:
        assert unit.id == f"{doc.id}#{unit.start}-{unit.end}"
        if unit.kind in (UnitKind.SENTENCE, UnitKind.ITEM):  # the quote reads as the unit
            assert clean_inline(doc.text, unit.start, unit.end).text == unit.text
        elif unit.kind == UnitKind.CODE:
            assert doc.text[unit.start : unit.end].split() == unit.text.split()
    rows = [u for u in units if u.kind == UnitKind.ROW]
    assert [u.cells for u in rows][:2] == [["Brindle", "120"], ["Other", "80 on A100"]]
    assert rows[0].header == ["Engine", "tok/s"]


def test_the_dispatcher_reads_rst_with_docutils(page: tuple[Document, list[Block]]) -> None:
    doc, blocks = page
    assert document_blocks(doc) == blocks


@pytest.mark.parametrize(
    "text",
    [
        "Title\n=====\n\n.. unknown-thing:: x\n   :opt: 1\n\n   body *unclosed\n",
        "`unclosed link <http://x\n\n.. |sub| image:: x.png\n\n:bad:`role\n",
        "====\nToo short\n==\n\n* a\n\n  b\n    c\n",
        "\t- tab\n\n.. raw:: html\n\n   <ul><li>one</li><li>two</li></ul>\n",
        "",
    ],
)
def test_broken_markup_never_stops_the_parse(text: str) -> None:
    doc = Document.from_text("x.rst", text, media_type=RST)
    _check(doc, parse_rst(doc))


def test_raw_html_lists_are_read() -> None:
    text = (
        "Pros\n====\n\n.. raw:: html\n\n    <ul>\n      <li>✅ &nbsp; No code changes</li>\n"
        "      <li>❗ Needs fast networking</li>\n    </ul>\n"
    )
    doc, blocks = _read("p.rst", text)
    (listing,) = [b for b in blocks if b.kind == BlockKind.LIST]
    assert listing.items == ["✅ &nbsp; No code changes", "❗ Needs fast networking"]
    units = [u.text for u in document_units(doc, blocks) if u.kind == UnitKind.ITEM]
    assert units == ["✅ No code changes", "Needs fast networking"]  # emoji other than ✅ go


def test_a_paragraph_of_marked_lines_is_a_lead_in_and_a_list() -> None:
    text = "**Options:**\n- `--tp 8`: tensor parallel size\n- `--dp 8`: data parallel size\n"
    _, blocks = _read("o.rst", text)
    assert [b.kind for b in blocks] == [BlockKind.PROSE, BlockKind.LIST]
    assert blocks[1].items == ["`--tp 8`: tensor parallel size", "`--dp 8`: data parallel size"]


def test_a_page_with_a_very_long_line_is_read() -> None:
    """docutils drops a document with a line over 10,000 characters unless told otherwise."""
    long_line = "Brindle runs on NVIDIA GPUs. " * 800
    text = f"Title\n=====\n\n{long_line}\n\n- an item\n"
    _, blocks = _read("long.rst", text)
    assert [b.kind for b in blocks] == [BlockKind.HEADING, BlockKind.PROSE, BlockKind.LIST]
    assert blocks[1].text == long_line.strip()


def test_escaped_spaces_between_chinese_and_inline_markup_are_not_text() -> None:
    """Chinese has no spaces to end inline markup on; a writer escapes one (`用\\ ``x``\\ 跑`),
    which docutils drops and a reader never sees."""
    text = (
        "安装\n====\n\n先用\\ ``brindle.load``\\ 读入权重，"
        "再用\\ **Brindle**\\ 推理，``a``,\\ ``b``。\n"
    )
    doc, blocks = _read("zh.rst", text)
    (sentence,) = [u for u in document_units(doc, blocks) if u.kind == UnitKind.SENTENCE]
    assert sentence.text == "先用brindle.load读入权重，再用Brindle推理，a,b。"
    assert doc.text[sentence.start : sentence.end].startswith("先用\\ ``brindle.load``")


def test_cross_references_keep_their_own_titles() -> None:
    """Sphinx shows a cross-reference's explicit title (`:doc:`title <path>``) as its text; a
    bare target (a label, a path) is no text of the page."""
    text = (
        "Tuning\n======\n\nEvery :doc:`listed board <../boards/index>` has knobs, but the "
        ":ref:`speed presets <presets-section>` beat them; see :ref:`presets-section`.\n"
    )
    doc, blocks = _read("tuning.rst", text)
    sentences = [u for u in document_units(doc, blocks) if u.kind == UnitKind.SENTENCE]
    assert sentences[0].text == "Every listed board has knobs, but the speed presets beat them;"
    assert not any("presets-section" in u.text or "../boards" in u.text for u in sentences)
    assert doc.text[sentences[0].start : sentences[0].end].startswith("Every :doc:`listed board")
