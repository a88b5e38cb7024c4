"""The generational store: atomic writes, refusal of other schema versions and embedders, rebuild,
readers that outlive a commit, and `kgqa ingest` killed (SIGKILL) at several moments of a write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ingest.embed import E5Embedder
from ingest.pipeline import ingest_corpus
from kg.errors import StoreError
from kg.lexicon import Lexicon
from kg.store import Store, atomic_write_text

DOC = """# 部署指南

| 工具 | 用途 |
|---|---|
| ZapServe | 边缘设备上的推理 |

边缘设备：用 OpenVINO 部署 PyTorch 模型。
"""


@pytest.fixture(scope="module")
def embedder() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def _small_store(root: Path, embedder: E5Embedder, lexicon: Lexicon) -> tuple[Path, Path]:
    corpus, store = root / "corpus", root / "store"
    corpus.mkdir()
    (corpus / "guide.md").write_text(DOC, encoding="utf-8")
    ingest_corpus([corpus], store, embedder, lexicon)
    return corpus, store


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.json"
    atomic_write_text(target, "one")
    atomic_write_text(target, "二")
    assert target.read_text("utf-8") == "二"
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_missing_store_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"run `kgqa ingest --store .*` first"):
        Store.open(tmp_path / "nowhere")


def test_other_schema_version_is_refused_then_rebuilt(
    tmp_path: Path, embedder: E5Embedder, lexicon: Lexicon
) -> None:
    corpus, store = _small_store(tmp_path, embedder, lexicon)
    live = Store.open(store)
    manifest = live.dir / "manifest.json"
    raw = json.loads(manifest.read_text("utf-8"))
    raw["schema_version"] = 0
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(
        StoreError, match=r"schema version 0.*run `kgqa ingest --store .*` to rebuild"
    ):
        Store.open(store)
    report = ingest_corpus([corpus], store, embedder, lexicon)
    assert report.processed == ["guide.md"] and report.reused == []
    assert report.embedded_chunks > 0
    rebuilt = Store.open(store)
    assert rebuilt.dir != live.dir  # the refused generation was not overwritten in place
    assert "inference-engine:openvino" in rebuilt.graph()


def test_other_embedder_is_refused_with_the_command(
    tmp_path: Path, embedder: E5Embedder, lexicon: Lexicon
) -> None:
    _corpus, store = _small_store(tmp_path, embedder, lexicon)
    with pytest.raises(StoreError, match=r"kgqa ingest --store .* --embedder st:/m"):
        Store.open(store, embedder="st:/m")
    assert Store.open(store, embedder=embedder.id).manifest.embedder == embedder.id


def test_broken_manifest_says_rebuild(
    tmp_path: Path, embedder: E5Embedder, lexicon: Lexicon
) -> None:
    _corpus, store = _small_store(tmp_path, embedder, lexicon)
    (Store.open(store).dir / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(StoreError, match="kgqa ingest"):
        Store.open(store)


def test_a_reader_outlives_the_next_commit(
    tmp_path: Path, embedder: E5Embedder, lexicon: Lexicon
) -> None:
    corpus, store = _small_store(tmp_path, embedder, lexicon)
    reader = Store.open(store)
    (corpus / "more.md").write_text("# 另一篇\n\n大语言模型服务：用 vLLM。\n", encoding="utf-8")
    ingest_corpus([corpus], store, embedder, lexicon)
    assert "inference-engine:vllm" in Store.open(store).graph()
    # the reader opened before the commit still reads its complete generation
    assert "inference-engine:vllm" not in reader.graph()
    assert reader.doc_record("guide.md").document.text == DOC
    assert reader.doc_vectors("guide.md").shape[0] == reader.manifest.documents["guide.md"].chunks
    ingest_corpus([corpus], store, embedder, lexicon)
    assert len(list(store.glob("gen-*"))) == 2  # only the live one and the one before it stay


# -- kill -9 in the middle of `kgqa ingest` --------------------------------------------------------
def _filler(i: int) -> str:
    lines = [f"# 工具评测 {i}", ""]
    for j in range(6):
        lines.append(
            f"第 {j} 节：在边缘设备上部署模型时，工具 Tool{i}x{j} 用 OpenVINO 和 TensorRT 做量化，"
            f"然后和 PyTorch 的 torch.compile 比较延迟与吞吐，记录在 W&B 里。"
            f"Section {j}: Tool{i}x{j} serves models with ONNX Runtime on NVIDIA GPUs."
        )
        lines.append("")
    return "\n".join(lines)


def _start(corpus: Path, store: Path, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "qa.cli", "ingest", "--corpus", str(corpus), "--store", str(store)],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _new_generation_files(store: Path, live: str) -> int:
    """-1 while the writer has not created its generation; else how many doc files it wrote."""
    gens = sorted(p for p in store.glob("gen-*") if p.name != live)
    if not gens:
        return -1
    docs = gens[-1] / "docs"  # the newest: earlier killed writers may have left older ones
    return len(list(docs.iterdir())) if docs.is_dir() else 0


Moment = Callable[[int, float], bool]
MOMENTS: dict[str, Moment] = {
    "before the new generation": lambda files, elapsed: elapsed > 0.3,
    "new generation created": lambda files, elapsed: files >= 0,
    "first documents written": lambda files, elapsed: files >= 4,
    "half the documents written": lambda files, elapsed: files >= 30,
}


def test_killing_ingest_mid_write_leaves_the_previous_store(
    tmp_path: Path, embedder: E5Embedder, lexicon: Lexicon
) -> None:
    corpus, store = _small_store(tmp_path, embedder, lexicon)
    previous = Store.open(store)
    expected_graph = previous.graph().to_node_link(with_node_evidence=True)
    expected_docs = previous.manifest.documents
    for i in range(40):
        (corpus / f"filler-{i:02d}.md").write_text(_filler(i), encoding="utf-8")
    hit_mid_write = 0
    for name, moment in MOMENTS.items():
        proc = _start(corpus, store, tmp_path)
        start = time.monotonic()
        files = -1
        try:
            while proc.poll() is None and time.monotonic() - start < 120:
                files = _new_generation_files(store, previous.dir.name)
                if moment(files, time.monotonic() - start):
                    break
                time.sleep(0.02)
            assert proc.poll() is None, f"ingest finished before the moment {name!r}"
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        hit_mid_write += files >= 0
        again = Store.open(store)
        assert again.dir == previous.dir, name
        assert again.manifest.documents == expected_docs, name
        assert again.graph().to_node_link(with_node_evidence=True) == expected_graph, name
        assert again.doc_record("guide.md").document.text == DOC
    assert hit_mid_write >= 3
    # a full run afterwards succeeds, and drops what the killed writers left
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "ingest", "--corpus", str(corpus), "--store", str(store)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    final = Store.open(store)
    assert len(final.manifest.documents) == 41
    assert sorted(p.name for p in store.glob("gen-*")) == sorted(
        [previous.dir.name, final.dir.name]
    )
