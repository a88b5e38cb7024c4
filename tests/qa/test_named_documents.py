"""A question that names a thing only one document names reads that document, on notes written
for this test: a question across two projects' pages ("the guide says X; what does QuillRun
say about Y?") must read both, even where the ranking found only the first."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from kg.documents import UnitKind
from qa.api import Assistant

GUIDE = """# Serving guide

## Batching

Continuous batching raises throughput when many requests arrive at once.
Static batching waits for a full batch and adds latency under light load.
Batching with a larger batch size raises throughput until memory runs out.
Dynamic batching suits bursty traffic better than static batching.

## Caching

A shared prefix cache saves the prefill of a system prompt that every request repeats.
"""

QUILLRUN = """# QuillRun notes

## Memory

QuillRun keeps its page cache at 512 MB unless --cache-mb says otherwise.

## Install

Install it with pip and start it with one command.
"""

QUESTION = "The serving guide favours continuous batching; what cache size does QuillRun keep?"


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    files = {"serving-guide.md": GUIDE, "quillrun-notes.md": QUILLRUN}
    store: Path = article_store(tmp_path_factory, files)
    return Assistant.open(store, dense=False)


def test_a_name_only_one_document_uses_names_that_document(assistant: Assistant) -> None:
    index = assistant.evidence
    assert index.document_naming("QuillRun") == "quillrun-notes.md"
    assert index.document_naming("quillrun") == "quillrun-notes.md"  # case ignored
    assert index.document_naming("cache") is None  # both documents use it


def test_the_named_documents_best_unit_is_read_where_the_ranking_found_none_of_it(
    assistant: Assistant,
) -> None:
    parsed = assistant.understand(QUESTION)
    draft, specific, ranked = assistant._drafted(parsed)
    # the ranking as if it had found only the guide: the question names the notes' project
    guide_only = [r for r in ranked if r.unit.doc == "serving-guide.md"]
    assert guide_only, [r.unit.id for r in ranked]
    reading = assistant.reading(parsed, draft, specific, guide_only)
    read = [u.text for u in reading.evidence]
    assert any("512 MB" in text for text in read), read
    assert any("Continuous batching" in text for text in read), read


def test_the_best_units_of_a_document_are_its_own_and_no_headings(assistant: Assistant) -> None:
    best = assistant.units.best_of_document(
        "what cache size does QuillRun keep?", "quillrun-notes.md"
    )
    assert best, "no unit of the notes matched"
    assert {r.unit.doc for r in best} == {"quillrun-notes.md"}
    assert "512 MB" in best[0].unit.text, [r.unit.text for r in best]
    assert all(r.unit.kind != UnitKind.HEADING for r in best)
