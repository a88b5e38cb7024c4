"""The Markdown reader, evidence units and corpus linking over the 26 real READMEs in the shared
folder (never copied here): everything parses, names are names, quotes are verbatim, and almost
every document has a subject. Skipped when the folder is absent, except in CI."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from ingest.discover import looks_like_entity
from ingest.link import CorpusLinks, link_corpus
from ingest.load import load_document
from ingest.markdown import parse_markdown
from ingest.units import document_units
from kg.documents import Block, Document, EvidenceUnit
from kg.lexicon import Lexicon
from kg.schema import NodeType

REAL_DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "real-docs" / "corpus"
EXPECTED_DOCUMENTS = 26


def _corpus_files() -> list[Path]:
    if not REAL_DOCS.is_dir():
        message = f"real documents not found at {REAL_DOCS}"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:  # as tests/needs.py
            pytest.fail(message + " (CI must have them)")
        pytest.skip(message)
    return sorted(p for p in REAL_DOCS.iterdir() if p.is_file())


@pytest.fixture(scope="module")
def parsed() -> list[tuple[Document, list[Block], list[EvidenceUnit]]]:
    out = []
    for path in _corpus_files():
        doc = load_document(path, REAL_DOCS)
        blocks = parse_markdown(doc)
        out.append((doc, blocks, document_units(doc, blocks)))
    return out


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


@pytest.fixture(scope="module")
def links(
    parsed: list[tuple[Document, list[Block], list[EvidenceUnit]]], lexicon: Lexicon
) -> CorpusLinks:
    return link_corpus([(doc, units) for doc, _, units in parsed], lexicon)


def test_all_documents_parse(
    parsed: list[tuple[Document, list[Block], list[EvidenceUnit]]],
) -> None:
    assert len(parsed) == EXPECTED_DOCUMENTS
    for doc, blocks, units in parsed:
        assert blocks, doc.id
        assert units, doc.id
        end = 0
        for b in blocks:
            assert b.text == doc.text[b.start : b.end], doc.id
            assert b.start >= end, f"{doc.id}: blocks overlap at {b.start}"
            end = b.end
            for item, (s, e) in zip(b.items, b.item_spans, strict=True):
                assert doc.text[s:e] == item, doc.id
            for row, spans in zip(b.rows, b.cell_spans, strict=True):
                assert [doc.text[s:e] for s, e in spans] == row, doc.id
        for u in units:
            assert 0 <= u.start < u.end <= len(doc.text), u.id
            assert u.id == f"{doc.id}#{u.start}-{u.end}"


def test_entities_are_names(links: CorpusLinks, lexicon: Lexicon) -> None:
    bad = [
        e.name
        for e in links.extraction.entities
        if lexicon.lookup(e.name) is None and not looks_like_entity(e.name)
    ]
    assert bad == []


def test_no_concept_flood(links: CorpusLinks) -> None:
    types = Counter(e.type for e in links.extraction.entities)
    total = sum(types.values())
    assert total > 0
    assert types[NodeType.CONCEPT] <= total / 4, types.most_common()


def test_every_quote_is_the_document_text_at_its_span(
    links: CorpusLinks, parsed: list[tuple[Document, list[Block], list[EvidenceUnit]]]
) -> None:
    texts = {doc.id: doc.text for doc, _, _ in parsed}
    assert links.extraction.relations
    for r in links.extraction.relations:
        assert r.evidence
        for ev in r.evidence:
            assert texts[ev.doc][ev.start : ev.end] == ev.quote, (
                r.source,
                r.relation,
                r.target,
                ev.doc,
            )
    for e in links.extraction.entities:
        for ev in e.evidence:
            assert texts[ev.doc][ev.start : ev.end] == ev.quote, (e.id, ev.doc)


def test_almost_every_document_has_a_subject(
    links: CorpusLinks, parsed: list[tuple[Document, list[Block], list[EvidenceUnit]]]
) -> None:
    ids = {doc.id for doc, _, _ in parsed}
    entities = {e.id for e in links.extraction.entities}
    with_subject = {doc for doc, subject in links.subjects.items() if subject in entities}
    assert set(links.subjects) <= ids
    assert len(with_subject) >= EXPECTED_DOCUMENTS - 2, sorted(ids - with_subject)


def test_missing_folder_skips_outside_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REAL_DOCS", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="real documents not found"):
        _corpus_files()


def test_missing_folder_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REAL_DOCS", tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must have them"):
        _corpus_files()
