"""How an ingest runs: documents parsed in worker processes (the store does not depend on how
many), chunk texts embedded once (the passage cache), an honest progress report, stage times."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingest.embed import E5Int8Embedder, EmbedderWrapper, Vectors
from ingest.pipeline import ingest_corpus
from ingest.workers import processed_in_order
from kg.documents import Document
from kg.lexicon import Lexicon, LexiconFile
from kg.store import DocRecord, Store

REPO = Path(__file__).resolve().parents[2]
ARTICLES = Path(__file__).parent / "data" / "articles"


class CountingEmbedder(EmbedderWrapper):
    """The default embedder, counting the passages it embeds."""

    def __init__(self) -> None:
        super().__init__(E5Int8Embedder())
        self.passages = 0

    def embed_passages(self, texts: list[str]) -> Vectors:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


class RecordedProgress:
    def __init__(self) -> None:
        self.total = -1
        self.chunks: list[int] = []
        self.closed = False

    def start(self, documents: int) -> None:
        self.total = documents

    def advance(self, chunks: int) -> None:
        self.chunks.append(chunks)

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(REPO / "corpus", root)
    for article in ARTICLES.iterdir():
        shutil.copy(article, root / article.name)
    return root


def _files(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()
    }


def test_the_store_is_the_same_whatever_the_number_of_workers(
    corpus: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    stores = {}
    for workers in (0, 1, 2):
        store = tmp_path / f"store-{workers}"
        # a fresh lexicon: each worker process compiles its own patterns (with its own hash seed)
        lexicon = Lexicon.default()
        report = ingest_corpus([corpus], store, embedder, lexicon, workers=workers)
        assert len(report.processed) == 4 and not report.failed
        stores[workers] = _files(store)
    assert len(stores[0]) > 8
    assert stores[1] == stores[0]
    assert stores[2] == stores[0]


def _fail_on_the_article(doc: Document, lexicon: Lexicon) -> DocRecord:
    if doc.id == "serving-guide.md":
        raise ValueError("cannot read this one")
    from ingest.pipeline import _process

    return _process(doc, lexicon)


def test_workers_give_results_in_order_and_errors_per_document(
    corpus: Path, lexicon: Lexicon
) -> None:
    from ingest.load import iter_corpus

    docs = [r.document for r in iter_corpus([corpus]) if r.document is not None]
    done = list(
        processed_in_order(docs, _fail_on_the_article, lexicon, workers=2, errors=(ValueError,))
    )
    assert [p.document.id for p in done] == [d.id for d in docs]
    failed = [p for p in done if p.record is None]
    assert [(p.document.id, p.error) for p in failed] == [
        ("serving-guide.md", "ValueError: cannot read this one")
    ]
    with pytest.raises(ValueError):
        list(processed_in_order(docs, _fail_on_the_article, lexicon, workers=2))


def test_a_chunk_text_is_embedded_once_across_stores(
    corpus: Path, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    cache = tmp_path / "cache"
    embedder.passages = 0
    first = ingest_corpus([corpus], tmp_path / "a", embedder, lexicon, cache_dir=cache, workers=0)
    assert first.embedded_chunks == embedder.passages > 30
    # a new store (a rebuild, another store directory) finds every vector in the cache
    embedder.passages = 0
    second = ingest_corpus([corpus], tmp_path / "b", embedder, lexicon, cache_dir=cache, workers=0)
    assert second.embedded_chunks == embedder.passages == 0
    a, b = Store.open(tmp_path / "a"), Store.open(tmp_path / "b")
    for doc_id in a.manifest.documents:
        assert a.doc_vectors(doc_id).tobytes() == b.doc_vectors(doc_id).tobytes()


def test_progress_counts_every_document_and_its_new_chunks(
    corpus: Path, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    progress = RecordedProgress()
    report = ingest_corpus([corpus], tmp_path / "s", embedder, lexicon, progress=progress)
    store = Store.open(tmp_path / "s")
    assert progress.total == len(progress.chunks) == report.documents == 4
    assert sum(progress.chunks) == sum(e.chunks for e in store.manifest.documents.values())
    assert progress.closed
    seconds = report.seconds
    assert seconds.total >= seconds.read + seconds.write + seconds.index
    assert seconds.extract > 0 and seconds.embed > 0 and seconds.total > seconds.embed
    again = RecordedProgress()
    ingest_corpus([corpus], tmp_path / "s", embedder, lexicon, progress=again)
    assert again.chunks == [0, 0, 0, 0]  # carried over: documents, no new chunks


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_ingest_leaves_no_worker_behind(corpus: Path, tmp_path: Path) -> None:
    for i in range(12):  # enough documents to keep a worker busy
        shutil.copy(REPO / "corpus" / "how-to-judge-dl-frameworks.txt", corpus / f"copy-{i}.txt")
    command = [sys.executable, "-m", "qa.cli", "ingest", "--corpus", str(corpus)]
    command += ["--store", str(tmp_path / "store"), "--workers", "1"]
    env = {**os.environ, "KGQA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(children := _children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the worker and multiprocessing's resource tracker
        assert proc.poll() is None and len(children) >= 2, children
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{c}").exists() for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [c for c in children if Path(f"/proc/{c}").exists()]
    for pid in alive:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not alive


class PreparedEmbedder(CountingEmbedder):
    """Records what ingest says is coming (`prepare_passages`)."""

    def __init__(self) -> None:
        super().__init__()
        self.told: list[int] = []

    def prepare_passages(self, chars: int) -> None:
        self.told.append(chars)
        super().prepare_passages(chars)


def test_the_embedder_is_told_how_much_new_text_is_coming(
    corpus: Path, tmp_path: Path, lexicon: Lexicon
) -> None:
    embedder = PreparedEmbedder()
    store = tmp_path / "store"
    ingest_corpus([corpus], store, embedder, lexicon, workers=0)
    total = sum(len(p.read_text("utf-8")) for p in corpus.iterdir() if p.suffix in (".md", ".txt"))
    total -= len((corpus / "QUESTIONS.md").read_text("utf-8"))  # listed in .kgqaignore
    edited = corpus / "serving-guide.md"
    edited.write_text(edited.read_text("utf-8") + "\n补充一句。\n", encoding="utf-8")
    ingest_corpus([corpus], store, embedder, lexicon, workers=0)
    extra = LexiconFile.model_validate({"entities": [{"type": "Tool", "name": "Fancy Tool"}]})
    bundled = LexiconFile.model_validate_json(
        (REPO / "kg" / "data" / "lexicon.json").read_text("utf-8")
    )
    other = Lexicon([bundled, extra])
    ingest_corpus([corpus], store, embedder, other, workers=0)  # re-extracts, embeds nothing
    assert embedder.told == [total, len(edited.read_text("utf-8")), 0]
