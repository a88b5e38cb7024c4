"""Ingest on a real local Ray cluster of two worker CPUs (`ray start --head --num-cpus 2`, started
here, skipped locally and failed on CI without Ray: `tests/needs.py`): `kgqa ingest --ray`
writes the store a local ingest writes, field by field, and the cluster's actors, not the
command, embed the passages."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from needs import missing_modules, skip_or_fail
from processes import die_with_parent, process_tree, still_running, wait_for
from store_fixture import SETTINGS

from kg.store import (
    LEXICAL_FILE,
    UNIT_DOCS_FILE,
    UNIT_NORMS_FILE,
    UNIT_PROFILES_FILE,
    UNITS_LEXICAL_FILE,
    Store,
)

REPO = Path(__file__).resolve().parents[2]
#: Ray on one machine, on 127.0.0.1 only: its head and every driver take the machine's own
#: loopback address for the node's (by default Ray binds and dials the interface's address)
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
DOCS = {
    "quickrun.md": """# QuickRun

QuickRun serves vision models over HTTP.

- Runs on NVIDIA GPUs and Intel CPUs.
- macOS is not supported.
- Requires Python 3.11 or later.

| Model | Images per second |
|---|---|
| ResNet-50 | 2100 |
| ViT-B/16 | 640 |
""",
    "notes.md": """# Serving notes

For CPU-only servers use QuickRun with ONNX models.
QuickRun is an alternative to TorchServe.
""",
    "部署.txt": """部署选型

边缘设备：用 QuickRun 部署视觉模型。
数据中心：用 TorchServe。
""",
    "more.md": """# TorchServe

TorchServe serves PyTorch models. It runs on Linux and Windows.
""",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A local Ray head with two CPUs (its worker processes run the actors); stopped after."""
    missing = missing_modules("ray")
    if missing:
        skip_or_fail("ray", f"{missing}: pip install 'kgqa[ray]'")
    port = _free_port()
    # Ray's socket paths live under its temp dir: keep it short (sockets allow ~107 bytes)
    temp = Path(tempfile.mkdtemp(prefix="kgqa-ray-", dir="/tmp"))
    log = temp / "head.log"
    command = [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block"]
    command += ["--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2"]
    command += ["--include-dashboard=false"]
    command += ["--disable-usage-stats", "--object-store-memory", str(200 * 1024 * 1024)]
    command += ["--temp-dir", str(temp)]
    with log.open("wb") as out:
        head = subprocess.Popen(
            command,
            env={**os.environ, **LOOPBACK},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    started = wait_for(
        lambda: head.poll() is not None or b"Ray runtime started" in log.read_bytes(), 180
    )
    if started is None or head.poll() is not None:
        head.kill()
        skip_or_fail("ray", f"the local Ray cluster did not start:\n{log.read_text()[-2000:]}")
    tree = process_tree(head.pid)
    yield f"127.0.0.1:{port}"
    head.terminate()  # `ray start --block` stops what it started
    head.wait(timeout=60)
    assert wait_for(lambda: not still_running(tree), 60) is not None, still_running(tree)
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Path:
    """A cache directory with the e5 engine's derived files but no passage vectors: every
    chunk text is embedded."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for entry in SETTINGS.cache_dir.glob("*"):
        if entry.name.startswith(("e5-", "jieba-")):
            (cache / entry.name).symlink_to(entry)
    return cache


def _corpus(root: Path) -> Path:
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


def _kgqa(args: list[str], cache: Path) -> dict[str, object]:
    env = {**os.environ, **LOOPBACK, "KGQA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", *args, "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _assert_same_store(one: Path, other: Path) -> None:
    a, b = Store.open(one), Store.open(other)
    assert list(a.graph().entities()) == list(b.graph().entities())
    assert list(a.graph().relations()) == list(b.graph().relations())
    assert a.units() == b.units()
    assert list(a.records()) == list(b.records())
    for doc_id in b.manifest.documents:
        assert np.array_equal(a.doc_vectors(doc_id), b.doc_vectors(doc_id)), doc_id
    for name in (LEXICAL_FILE, UNITS_LEXICAL_FILE, UNIT_DOCS_FILE, UNIT_PROFILES_FILE):
        x, y = a.arrays(name), b.arrays(name)
        assert sorted(x) == sorted(y) and all(np.array_equal(x[k], y[k]) for k in x), name
    assert a.optional_bytes(UNIT_NORMS_FILE) == b.optional_bytes(UNIT_NORMS_FILE)
    assert a.manifest.model_dump() == b.manifest.model_dump()


def test_kgqa_ingest_on_ray_writes_the_local_store(
    ray_address: str, fresh_cache: Path, tmp_path: Path
) -> None:
    corpus = _corpus(tmp_path)
    local_cache = tmp_path / "local-cache"
    local_cache.mkdir()
    for entry in fresh_cache.iterdir():
        (local_cache / entry.name).symlink_to(entry.resolve())
    on_ray = _kgqa(
        ["ingest", "--corpus", str(corpus), "--store", str(tmp_path / "ray"), "--ray", ray_address],
        fresh_cache,
    )
    local = _kgqa(
        ["ingest", "--corpus", str(corpus), "--store", str(tmp_path / "local")], local_cache
    )
    assert on_ray["documents"] == local["documents"] == len(DOCS)
    assert on_ray["embedded_chunks"] == local["embedded_chunks"] > 0
    _assert_same_store(tmp_path / "ray", tmp_path / "local")


_ON_RAY = """
import json, sys
from pathlib import Path
from ingest.embed import make_embedder
from ingest.embed.protocol import EmbedderWrapper
from ingest.pipeline import ingest_corpus
from ingest.ray_ingest import RayCluster, RayEmbedder
from kg.lexicon import Lexicon

class Counting(EmbedderWrapper):
    passages = 0
    def embed_passages(self, texts):
        Counting.passages += len(texts)
        return super().embed_passages(texts)

corpus, store, cache, address = map(str, sys.argv[1:5])
lexicon = Lexicon.default()
with RayCluster(address, lexicon, embedder_spec="e5-int8", cache_dir=Path(cache)) as cluster:
    remote = RayEmbedder(Counting(make_embedder(cache_dir=Path(cache))), cluster)
    remote.check()
    report = ingest_corpus(
        [Path(corpus)], Path(store), remote, lexicon, cache_dir=Path(cache), ray=cluster
    )
    print(json.dumps({"actors": len(cluster.actors), "local": Counting.passages,
                      "embedded": report.embedded_chunks, "ok": report.ok}))
"""


def test_the_actors_embed_the_passages(ray_address: str, fresh_cache: Path, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _ON_RAY, str(corpus), str(tmp_path / "s"), str(fresh_cache),
         ray_address],
        cwd=REPO, env={**os.environ, **LOOPBACK}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"actors": 2, "local": 0, "embedded": result["embedded"], "ok": True}
    assert result["embedded"] > 0


def test_an_address_without_a_cluster_is_refused_at_once(tmp_path: Path) -> None:
    missing = missing_modules("ray")
    if missing:
        skip_or_fail("ray", f"{missing}: pip install 'kgqa[ray]'")
    address = f"127.0.0.1:{_free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "ingest", "--corpus", str(_corpus(tmp_path)),
         "--store", str(tmp_path / "s"), "--ray", address],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"no Ray cluster answers at {address}" in done.stderr
    assert not (tmp_path / "s").exists()
