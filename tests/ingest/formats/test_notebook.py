"""Notebooks: Markdown cells as text, code cells as fenced code, their printed output after them
(stderr, errors and images dropped)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from ingest.formats import NOTEBOOK, document_blocks
from ingest.formats.notebook import notebook_text
from ingest.load import iter_corpus, load_document
from ingest.units import document_units
from kg.documents import BlockKind
from kg.errors import IngestError


def _notebook(language: str = "python") -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "k", "display_name": "K", "language": language}
    code = nbformat.v4.new_code_cell("import brindle\nbrindle.run('m.gguf')")
    code.outputs = [
        nbformat.v4.new_output("stream", text="Loaded in 3.2 s\n"),
        nbformat.v4.new_output("stream", name="stderr", text="DeprecationWarning: old API\n"),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="}),
        nbformat.v4.new_output("execute_result", data={"text/plain": "Peak memory: 2.4 GB"}),
    ]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Brindle tutorial\n\nBrindle runs on **NVIDIA GPUs**."),
        code,
        nbformat.v4.new_raw_cell("raw text for nbconvert"),
        nbformat.v4.new_markdown_cell("- Windows is not supported.\n- Linux works."),
        nbformat.v4.new_code_cell("```\nnot a fence end\n```"),
    ]
    return str(nbformat.writes(nb))


def test_cells_become_markdown_text_with_what_the_code_printed() -> None:
    text = notebook_text(_notebook())
    assert "raw text" not in text
    assert "DeprecationWarning" not in text and "iVBOR" not in text  # stderr and images dropped
    assert text.startswith("# Brindle tutorial\n\nBrindle runs on **NVIDIA GPUs**.\n\n```python\n")
    # the printed and returned text follows its cell, as a rendered notebook shows it
    assert (
        "brindle.run('m.gguf')\n```\n\n```output\nLoaded in 3.2 s\nPeak memory: 2.4 GB\n```" in text
    )
    assert "````python\n```\nnot a fence end\n```\n````" in text  # a longer fence around backticks


def test_blocks_and_units_index_the_notebook_text(tmp_path: Path) -> None:
    path = tmp_path / "tutorial.ipynb"
    path.write_text(_notebook("julia"), "utf-8")
    doc = load_document(path, tmp_path)
    assert doc.media_type == NOTEBOOK
    blocks = document_blocks(doc)
    assert [b.kind for b in blocks] == [
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.CODE,
        BlockKind.CODE,
        BlockKind.LIST,
        BlockKind.CODE,
    ]
    assert (
        blocks[2].language == "julia" and blocks[2].code == "import brindle\nbrindle.run('m.gguf')"
    )
    assert blocks[3].code == "Loaded in 3.2 s\nPeak memory: 2.4 GB"
    for block in blocks:
        assert block.text == doc.text[block.start : block.end]
    units = document_units(doc, blocks)
    # what the code printed is evidence a question can find, quoted verbatim
    (printed,) = [u for u in units if "Peak memory" in u.text]
    assert doc.text[printed.start : printed.end].endswith("Peak memory: 2.4 GB")
    assert [u.text for u in units if u.kind.value == "item"] == [
        "Windows is not supported.",
        "Linux works.",
    ]
    for unit in units:
        assert doc.text[unit.start : unit.end].strip()


@pytest.mark.parametrize("raw", ["{not json", '{"cells": "no"}', "[]"])
def test_a_broken_notebook_is_an_ingest_error(raw: str) -> None:
    with pytest.raises(IngestError, match="unreadable notebook"):
        notebook_text(raw)


def test_a_broken_notebook_is_skipped_and_the_rest_loaded(tmp_path: Path) -> None:
    (tmp_path / "bad.ipynb").write_text("{not json", "utf-8")
    (tmp_path / "good.ipynb").write_text(_notebook(), "utf-8")
    results = {r.path.name: r for r in iter_corpus([tmp_path])}
    assert results["bad.ipynb"].skip_reason is not None
    assert results["bad.ipynb"].skip_reason.startswith("unreadable notebook")
    assert results["good.ipynb"].document is not None
