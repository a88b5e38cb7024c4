"""`kgqa ingest` and `kgqa graph` as real subprocesses: bad input is skipped or ingested with a
one-line reason while the rest is ingested, the exit code says whether anything failed, and the
graph verbs export, count and show what was ingested."""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from ingest.load import iter_corpus
from kg.store import Store

GOOD = """# 部署

边缘设备：用 OpenVINO 部署 PyTorch 模型。
"""
GBK = "训练规模？\n├─ 单机多卡 → DDP\n└─ 单卡装不下 → FSDP\n\n英伟达显卡上用 TensorRT 推理。\n"
MALFORMED = """# 表格

| 工具 | 用途 | 适用规模
|---|---
| FooServe | 推理 | 单卡 | 多余的一列 |
| BarNet
没有结尾的行 | x |
"""
BAD_UTF8 = b"caf\xe9 au lait, na\xefve r\xe9sum\xe9 et cr\xe8me br\xfbl\xe9e.\n"


def kgqa(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qa.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class Run:
    root: Path
    corpus: Path
    store: Path
    result: subprocess.CompletedProcess[str]
    seconds: float


def _bad_corpus(corpus: Path) -> None:
    corpus.mkdir()
    (corpus / "good.md").write_text(GOOD, encoding="utf-8")
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (corpus / "latin1.txt").write_bytes(BAD_UTF8)
    (corpus / "gbk.txt").write_bytes(GBK.encode("gbk"))
    (corpus / "malformed.md").write_text(MALFORMED, encoding="utf-8")
    with (corpus / "huge.md").open("wb") as handle:
        line = ("PyTorch 和 ONNX Runtime 的部署笔记。" * 4 + "\n").encode("utf-8")
        handle.write(line * (50 * 1024 * 1024 // len(line) + 1))
    (corpus / "notes.jsonl").write_text('{"a": 1}\n', encoding="utf-8")


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("cli")
    corpus, store = root / "corpus", root / "store"
    _bad_corpus(corpus)
    start = time.monotonic()
    result = kgqa("ingest", "--corpus", str(corpus), "--store", str(store), cwd=root)
    return Run(root, corpus, store, result, time.monotonic() - start)


def test_bad_files_are_skipped_with_one_line_reasons(bad_run: Run) -> None:
    out = bad_run.result.stdout
    assert bad_run.result.returncode == 1, out + bad_run.result.stderr
    skipped = {
        Path(line.split(": ", 1)[0].removeprefix("skipped ")).name: line.split(": ", 1)[1]
        for line in out.splitlines()
        if line.startswith("skipped ")
    }
    assert set(skipped) == {"empty.md", "binary.txt", "latin1.txt", "huge.md", "notes.jsonl"}
    assert "empty" in skipped["empty.md"]
    assert "binary" in skipped["binary.txt"]
    assert "undecodable" in skipped["latin1.txt"]
    assert "larger than" in skipped["huge.md"] and "50.0 MiB" in skipped["huge.md"]
    assert "unsupported file type" in skipped["notes.jsonl"]
    assert "FAILED" not in out


def test_the_rest_is_ingested(bad_run: Run) -> None:
    store = Store.open(bad_run.store)
    assert sorted(store.manifest.documents) == ["gbk.txt", "good.md", "malformed.md"]
    assert "documents: 3 (3 processed" in bad_run.result.stdout


def test_gbk_file_is_decoded_and_quoted_verbatim(bad_run: Run) -> None:
    store = Store.open(bad_run.store)
    doc = store.doc_record("gbk.txt").document
    assert doc.text == GBK and doc.encoding == "gb18030"
    graph = store.graph()
    ddp = graph.edge(graph.find("单机多卡") or "", "RECOMMENDED_FOR", "parallel-strategy:ddp")
    assert ddp is not None
    for rel in graph.relations():
        for ev in rel.evidence:
            if ev.doc == "gbk.txt":
                assert GBK[ev.start : ev.end] == ev.quote


def test_malformed_table_is_ingested(bad_run: Run) -> None:
    record = Store.open(bad_run.store).doc_record("malformed.md")
    assert record.document.text == MALFORMED
    assert record.chunks
    assert any("FooServe" in c.text for c in record.chunks)


def test_huge_file_is_skipped_without_reading_it(
    bad_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []  # every file the loader opens for reading, by name
    real_open = io.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(Path(os.fsdecode(file)).name if isinstance(file, str | bytes | Path) else "")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", spy)
    monkeypatch.setattr(builtins, "open", spy)
    results = {r.path.name: r for r in iter_corpus([bad_run.corpus])}
    assert results["huge.md"].document is None
    assert "larger than" in (results["huge.md"].skip_reason or "")
    assert "good.md" in opened  # the spy sees the loader's reads
    assert "huge.md" not in opened


def test_only_unreadable_types_pass_a_clean_corpus(bad_run: Run, tmp_path: Path) -> None:
    for name in ("empty.md", "binary.txt", "latin1.txt", "huge.md"):
        (bad_run.corpus / name).unlink()
    store = tmp_path / "store"
    result = kgqa(
        "ingest", "--corpus", str(bad_run.corpus), "--store", str(store), "--json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert sorted(report["processed"]) == ["gbk.txt", "good.md", "malformed.md"]
    assert [Path(s["path"]).name for s in report["skipped"]] == ["notes.jsonl"]


# -- graph verbs -------------------------------------------------------------------------------
def test_graph_export_json_follows_design(bad_run: Run) -> None:
    out = bad_run.root / "g.json"
    result = kgqa(
        "graph",
        "export",
        "--format",
        "json",
        "--store",
        str(bad_run.store),
        "--out",
        str(out),
        cwd=bad_run.root,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text("utf-8"))
    assert data == Store.open(bad_run.store).graph().to_node_link()
    assert data["nodes"] and data["edges"]
    g = nx.node_link_graph(data, edges="edges")
    assert g.nodes["inference-engine:openvino"]["name"] == "OpenVINO"
    assert all(e["evidence"] for e in data["edges"])


def test_graph_export_graphml_to_stdout(bad_run: Run) -> None:
    result = kgqa(
        "graph", "export", "--format", "graphml", "--store", str(bad_run.store), cwd=bad_run.root
    )
    assert result.returncode == 0, result.stderr
    path = bad_run.root / "stdout.graphml"
    path.write_text(result.stdout, encoding="utf-8")
    g = nx.read_graphml(path, force_multigraph=True)
    graph = Store.open(bad_run.store).graph()
    assert g.number_of_nodes() == graph.g.number_of_nodes()
    assert g.number_of_edges() == graph.g.number_of_edges()
    for _s, _t, attrs in g.edges(data=True):
        assert json.loads(attrs["evidence"])


def test_graph_stats_and_show(bad_run: Run) -> None:
    stats = kgqa("graph", "stats", "--json", "--store", str(bad_run.store), cwd=bad_run.root)
    assert stats.returncode == 0, stats.stderr
    counts = json.loads(stats.stdout)
    graph = Store.open(bad_run.store).graph()
    assert (counts["entities"], counts["relations"]) == (
        graph.g.number_of_nodes(),
        graph.g.number_of_edges(),
    )
    assert counts["documents"] == 3
    show = kgqa("graph", "show", "分布式数据并行", "--store", str(bad_run.store), cwd=bad_run.root)
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert lines[0] == "DDP  [ParallelStrategy]  parallel-strategy:ddp"
    assert any(line.strip().startswith("<-RECOMMENDED_FOR- 单机多卡") for line in lines), lines
    assert any("单机多卡 → DDP”  — gbk.txt" in line for line in lines), lines
    missing = kgqa("graph", "show", "NoSuchThing", "--store", str(bad_run.store), cwd=bad_run.root)
    assert missing.returncode == 1 and "no entity named 'NoSuchThing'" in missing.stderr


def test_graph_on_a_missing_store_names_the_command(tmp_path: Path) -> None:
    result = kgqa("graph", "stats", "--store", str(tmp_path / "none"), cwd=tmp_path)
    assert result.returncode == 2
    assert "kgqa ingest --store" in result.stderr
