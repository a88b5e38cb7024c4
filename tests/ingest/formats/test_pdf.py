"""PDFs with a text layer: pypdf's text, page numbers first in every heading path."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_pdf import pdf_bytes

from ingest.formats import PDF, document_blocks
from ingest.formats.pdf import page_of, pdf_text
from ingest.load import iter_corpus, load_document
from ingest.units import document_units
from kg.errors import IngestError

PAGES = [
    ["Brindle Engine Guide", "Brindle is an inference engine for local models."],
    ["Limits", "Brindle does not support Windows.", "It requires Python 3.10 or later."],
]


def test_text_layer_pages_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "guide.pdf"
    path.write_bytes(pdf_bytes(PAGES))
    doc = load_document(path, tmp_path)
    assert doc.media_type == PDF and doc.encoding == "pdf"
    assert doc.text.count("\f") == 1
    blocks = document_blocks(doc)
    assert blocks
    for block in blocks:
        assert block.text == doc.text[block.start : block.end]
        assert block.heading_path[0] == f"page {page_of(doc.text, block.start)}"
    units = document_units(doc, blocks)
    by_text = {u.text: u for u in units}
    windows = by_text["Brindle does not support Windows."]
    assert doc.text[windows.start : windows.end] == "Brindle does not support Windows."
    assert windows.heading_path[0] == "page 2"
    first = next(u for u in units if "inference engine" in u.text)
    assert first.heading_path[0] == "page 1"


def test_a_pdf_without_text_or_a_broken_one_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "scan.pdf").write_bytes(pdf_bytes([[]]))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really\n")
    (tmp_path / "guide.pdf").write_bytes(pdf_bytes(PAGES))
    results = {r.path.name: r for r in iter_corpus([tmp_path])}
    assert results["scan.pdf"].skip_reason is not None
    assert "without a text layer" in results["scan.pdf"].skip_reason
    assert results["broken.pdf"].skip_reason is not None
    assert results["guide.pdf"].document is not None


def test_pdf_text_raises_ingest_errors() -> None:
    with pytest.raises(IngestError):
        pdf_text(b"garbage")
    assert pdf_text(pdf_bytes([["One"], ["Two"]])) == "One\n\f\nTwo\n"


def test_a_text_layer_that_maps_glyphs_to_look_alikes_and_controls_reads_as_text() -> None:
    # some producers map an ideograph to its Kangxi radical (U+2F8F looks like 行) and the space
    # glyph to a control character: the words are there, but no search would find them
    layer = {"R": "\u2f8f", " ": "\x01", "I": "\U0001d456"}
    text = pdf_text(pdf_bytes([["Quill R on CPU, I fast"]], to_unicode=layer))
    assert text == "Quill 行 on CPU, i fast\n"
