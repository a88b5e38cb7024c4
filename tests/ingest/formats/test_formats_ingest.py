"""End to end: `ingest_corpus` on a project's docs folder written for the test, in every format
kgqa reads (reST, notebook, MDX, PDF, Markdown): every file but a broken one is ingested, every
evidence unit and every edge quotes its document's text at its offsets, and the pages share the
project (named by Sphinx's conf.py) as subject."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from tiny_pdf import pdf_bytes

from ingest.embed import E5Int8Embedder
from ingest.markup import clean_inline
from ingest.pipeline import IngestReport, ingest_corpus
from kg.documents import UnitKind
from kg.lexicon import Lexicon
from kg.store import Store

RST = """\
Serving
=======

Brindle serves models over HTTP on NVIDIA GPUs.

.. note:: Windows is not supported.

.. code-block:: bash
   :caption: start

   brindle serve --port 8000
"""
MDX = """\
import Tabs from '@theme/Tabs';

# Deploy

<Tabs>

Brindle runs on AMD GPUs with ROCm.

</Tabs>
"""
MARKDOWN = "# Limits\n\nBrindle requires Python 3.10 or later.\n"


def _notebook() -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Tutorial\n\nBrindle loads GGUF models."),
        nbformat.v4.new_code_cell("import brindle"),
    ]
    return str(nbformat.writes(nb))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IngestReport]:
    root = tmp_path_factory.mktemp("formats")
    docs = root / "corpus" / "brindle" / "docs"
    docs.mkdir(parents=True)
    (docs / "conf.py").write_text("project = 'Brindle'\n", "utf-8")
    (docs / "serving.rst").write_text(RST, "utf-8")
    (docs / "deploy.mdx").write_text(MDX, "utf-8")
    (docs / "limits.md").write_text(MARKDOWN, "utf-8")
    (docs / "tutorial.ipynb").write_text(_notebook(), "utf-8")
    (docs / "guide.pdf").write_bytes(pdf_bytes([["Guide"], ["Brindle supports Linux and macOS."]]))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\nbroken\n")
    store = root / "store"
    report = ingest_corpus([root / "corpus"], store, E5Int8Embedder(), Lexicon.default())
    return store, report


def test_every_file_is_ingested_but_the_broken_one(built: tuple[Path, IngestReport]) -> None:
    _, report = built
    assert not report.failed
    assert sorted(report.processed) == [
        "brindle/docs/deploy.mdx",
        "brindle/docs/guide.pdf",
        "brindle/docs/limits.md",
        "brindle/docs/serving.rst",
        "brindle/docs/tutorial.ipynb",
    ]
    skipped = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(skipped) == {"broken.pdf", "conf.py"}
    assert skipped["broken.pdf"].startswith("unreadable PDF")


def test_every_quote_is_its_document_text(built: tuple[Path, IngestReport]) -> None:
    store_dir, _ = built
    store = Store.open(store_dir)
    texts = {r.document.id: r.document.text for r in store.records()}
    units = store.units()
    assert {u.doc for u in units} == set(texts)
    for unit in units:
        quote = texts[unit.doc][unit.start : unit.end]
        assert quote.strip(), unit.id
        if unit.kind in (UnitKind.SENTENCE, UnitKind.ITEM):
            assert clean_inline(texts[unit.doc], unit.start, unit.end).text == unit.text
    graph = store.graph()
    relations = list(graph.relations())
    assert relations
    for relation in relations:
        for ev in relation.evidence:
            assert texts[ev.doc][ev.start : ev.end] == ev.quote
    said = {u.text for u in units}
    assert "Windows is not supported." in said  # the reST note
    assert "Brindle runs on AMD GPUs with ROCm." in said  # inside MDX's JSX
    assert "Brindle supports Linux and macOS." in said  # page 2 of the PDF
    pdf = next(u for u in units if u.text == "Brindle supports Linux and macOS.")
    assert pdf.heading_path[0] == "page 2"


def test_the_pages_share_the_project_as_subject(built: tuple[Path, IngestReport]) -> None:
    store_dir, _ = built
    store = Store.open(store_dir)
    raw = store.optional_bytes("links.json")
    assert raw is not None
    subjects = {d: r["subject_id"] for d, r in json.loads(raw)["documents"].items()}
    assert set(subjects.values()) == {"tool:brindle"}
    assert store.graph().entity("tool:brindle").name == "Brindle"
