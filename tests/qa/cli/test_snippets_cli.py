"""`kgqa snippets list|check`, the snippet cache in the store, inline commands, answers.

The store is built from corpus/ by the real loader, structure parser, `snippets_from_blocks` and
`StoreWriter` (without embeddings or extraction, which snippets do not need). The CLI runs as a
real subprocess; the first `list` validates every snippet in the real sandbox, the second must come
from the cache.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from needs import missing_modules, needs

from ingest.lexical import LexicalIndex
from ingest.load import iter_corpus
from ingest.pipeline import snippets_from_blocks
from ingest.structure import parse_blocks
from kg.documents import Document, SnippetStatus
from kg.graph import KnowledgeGraph
from kg.schema import Extraction
from kg.store import (
    LEXICAL_FILE,
    UNITS_LEXICAL_FILE,
    DocRecord,
    DocumentEntry,
    Manifest,
    Store,
    StoreWriter,
    doc_key,
)
from qa.api import Assistant
from qa.snippets import store_check
from qa.snippets.store_check import (
    apply_cached_results,
    load_cache,
    validate_answer_code,
    validate_store_snippets,
)

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "corpus"
ARTICLE = "framework-and-tool-selection.txt"


def _needs(*modules: str) -> pytest.MarkDecorator:
    """Snippet libraries (torch, transformers, peft, onnx...): skip locally, fail on CI."""
    return needs("torch", missing_modules(*modules))


def _kgqa(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qa.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _build_store(root: Path, corpus: Path) -> Store:
    writer = StoreWriter(root, Manifest(embedder="none", lexicon_hash="none"), None)
    for result in iter_corpus([corpus]):
        doc = result.document
        if doc is None:
            continue
        record = DocRecord(
            document=doc,
            extraction=Extraction(doc=doc.id, doc_hash=doc.hash),
            snippets=snippets_from_blocks(doc, parse_blocks(doc)),
        )
        entry = DocumentEntry(id=doc.id, hash=doc.hash, key=doc_key(doc.id), source=str(doc.id))
        writer.put_document(entry, record, np.zeros((0, 4), dtype=np.float32))
    writer.put_graph(KnowledgeGraph())
    lexical = LexicalIndex()
    lexical.build([], [])
    writer.put_arrays(LEXICAL_FILE, lexical.to_arrays())
    writer.put_units([])
    writer.put_arrays(UNITS_LEXICAL_FILE, lexical.to_arrays())
    return writer.commit()


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("snip-store")
    _build_store(root, CORPUS)
    return root


@pytest.fixture(scope="module")
def cold(store_dir: Path) -> tuple[dict[str, Any], float]:
    """The first `kgqa snippets list --json`: validates every snippet (seconds each)."""
    t0 = time.perf_counter()
    proc = _kgqa("snippets", "list", "--store", str(store_dir), "--json")
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), elapsed


def _row(listing: dict[str, Any], needle: str) -> dict[str, Any]:
    hits = [r for r in listing["rows"] if needle in r["snippet"]["raw"]]
    assert len(hits) == 1, [r["snippet"]["raw"][:40] for r in listing["rows"]]
    row: dict[str, Any] = hits[0]
    return row


# -- inline commands -----------------------------------------------------------------------------
def test_inline_commands_become_bash_snippets_with_exact_spans() -> None:
    text = (
        "部署步骤\n"
        "安装：pip install --upgrade onnxruntime，然后导出。\n"
        "多卡时用 accelerate launch --num_processes 2 train.py 启动\n"
        "训练任务管理用 accelerate/torchrun。\n"
        "Tip: use the --fast flag when in doubt.\n"
    )
    doc = Document.from_text("d.txt", text)
    snippets = snippets_from_blocks(doc, parse_blocks(doc))
    got = [(s.language, text[s.start : s.end], s.raw) for s in snippets]
    assert got == [
        ("bash", "pip install --upgrade onnxruntime", "pip install --upgrade onnxruntime"),
        (
            "bash",
            "accelerate launch --num_processes 2 train.py",
            "accelerate launch --num_processes 2 train.py",
        ),
    ]
    assert len({s.id for s in snippets}) == 2


def test_corpus_store_holds_the_inline_torchrun_command(store_dir: Path) -> None:
    store = Store.open(store_dir)
    record = store.doc_record(ARTICLE)
    bash = [s for s in record.snippets if s.language == "bash"]
    assert [record.document.text[s.start : s.end] for s in bash] == [
        "torchrun --nproc_per_node=4 train.py"
    ]
    code_blocks = [s for s in record.snippets if s.language != "bash"]
    assert len(code_blocks) == 3  # DDP, ONNX export, peft


# -- list ----------------------------------------------------------------------------------------
def test_list_shows_every_snippet_with_a_status_and_reason(
    store_dir: Path, cold: tuple[dict[str, Any], float]
) -> None:
    listing, _ = cold
    store = Store.open(store_dir)
    stored = {s.id for r in store.records() for s in r.snippets}
    assert {r["snippet"]["id"] for r in listing["rows"]} == stored
    for row in listing["rows"]:
        assert row["snippet"]["status"] in {"passed", "failed", "skipped"}, row
        assert row["reason"], row
        assert row["cached"] is False
    assert listing["validated"] == len(stored)
    cache = load_cache(store)
    assert set(cache) == stored
    assert (store_dir / "snippet_results.json").is_file()


@_needs("torch")
def test_ddp_snippet_is_repaired_and_passes(cold: tuple[dict[str, Any], float]) -> None:
    row = _row(cold[0], "init_process_group")
    assert row["snippet"]["repaired"] is True
    assert row["snippet"]["status"] == "passed", row["snippet"]["detail"]
    assert row["reason"].startswith("run: ok — exit 0"), row["reason"]


@_needs("torch", "onnx", "onnxruntime", "onnxscript")
def test_onnx_snippet_passes_checked_with_onnxruntime(cold: tuple[dict[str, Any], float]) -> None:
    row = _row(cold[0], "torch.onnx.export")
    assert row["snippet"]["status"] == "passed", row["snippet"]["detail"]
    assert "onnxruntime output vs torch" in row["reason"]


@_needs("peft", "transformers", "datasets")
def test_peft_snippet_skipped_for_network(cold: tuple[dict[str, Any], float]) -> None:
    row = _row(cold[0], "LoraConfig")
    assert row["snippet"]["status"] == "skipped"
    assert "needs network" in row["reason"]
    assert "peft.LoraConfig with r, lora_alpha" in row["snippet"]["detail"]


@_needs("torch")
def test_torchrun_passes_as_a_command(cold: tuple[dict[str, Any], float]) -> None:
    row = _row(cold[0], "torchrun --nproc_per_node=4")
    assert row["snippet"]["language"] == "bash"
    assert row["snippet"]["status"] == "passed", row["snippet"]["detail"]
    assert "torchrun accepts --nproc_per_node" in row["reason"]
    assert "checked as a command, not run" in row["reason"]


def test_second_list_comes_from_the_cache(
    store_dir: Path, cold: tuple[dict[str, Any], float], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, cold_s = cold
    t0 = time.perf_counter()
    proc = _kgqa("snippets", "list", "--store", str(store_dir))
    warm_s = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    n = len(first["rows"])
    assert f"0 validated now, {n} from the cache" in proc.stdout
    assert "validating" not in proc.stderr  # nothing was sent to the sandbox
    for row in first["rows"]:
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(row["snippet"]["id"]))
        assert line.split()[3:5] == [row["snippet"]["status"], "cache"], line

    def no_validation(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached snippet was validated again")

    monkeypatch.setattr(store_check, "check_code", no_validation)
    listing = validate_store_snippets(Store.open(store_dir))
    assert listing.validated == 0 and listing.from_cache == n
    print(
        f"\nsnippets list: cold {cold_s:.1f} s, cached CLI {warm_s:.2f} s "
        f"(in-process {listing.seconds:.3f} s)"
    )


def test_answers_carry_the_cached_status(
    store_dir: Path, cold: tuple[dict[str, Any], float]
) -> None:
    statuses = {r["snippet"]["id"]: r["snippet"]["status"] for r in cold[0]["rows"]}
    assistant = Assistant.open(store_dir, dense=False)
    assert {s.id: s.status.value for s in assistant.snippets} == statuses
    assert all(s.detail for s in assistant.snippets)


def test_a_changed_environment_or_code_is_stale(
    store_dir: Path, cold: tuple[dict[str, Any], float], tmp_path: Path
) -> None:
    store = Store.open(store_dir)
    raw = json.loads((store_dir / "snippet_results.json").read_text("utf-8"))
    saved = json.dumps(raw)
    ddp = _row(cold[0], "init_process_group")["snippet"]["id"]
    onnx = _row(cold[0], "torch.onnx.export")["snippet"]["id"]
    raw["results"][ddp]["env"]["pkg:torch"] = "torch==0.0.1"
    raw["results"][onnx]["code_hash"] = "0" * 64
    try:
        store.write_snippet_results(raw)
        snippets = [s for r in store.records() for s in r.snippets]
        shown = {s.id: s for s in apply_cached_results(store, snippets)}
        assert shown[ddp].status is SnippetStatus.UNCHECKED
        assert "torch: torch==0.0.1 → torch==" in shown[ddp].detail
        assert shown[onnx].status is SnippetStatus.UNCHECKED
        assert "the code changed" in shown[onnx].detail
        fresh = [s for s in shown.values() if s.id not in {ddp, onnx}]
        assert fresh and all(s.status is not SnippetStatus.UNCHECKED for s in fresh)
        proc = _kgqa("snippets", "list", "--store", str(store_dir), "--cached", "--json")
        rows = {r["snippet"]["id"]: r for r in json.loads(proc.stdout)["rows"]}
        assert rows[ddp]["snippet"]["status"] == "unchecked"
        assert "environment changed" in rows[ddp]["stale"]
    finally:
        store.write_snippet_results(json.loads(saved))


def test_a_corrupt_cache_is_ignored_not_fatal(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("运行：python -m pip --version。\n", encoding="utf-8")
    store = _build_store(tmp_path / "store", corpus)
    (tmp_path / "store" / "snippet_results.json").write_text("{not json", encoding="utf-8")
    proc = _kgqa("snippets", "list", "--store", str(tmp_path / "store"), "--cached")
    assert proc.returncode == 0, proc.stderr
    assert "ignoring the snippet cache" in proc.stderr
    assert "unchecked" in proc.stdout and "not validated yet" in proc.stdout
    assert len(next(iter(store.records())).snippets) == 1


# -- check FILE ----------------------------------------------------------------------------------
def test_check_file_with_a_misspelled_kwarg_exits_1_and_names_it(tmp_path: Path) -> None:
    bad = tmp_path / "copy.py"
    bad.write_text('import shutil\nshutil.copy("a", "b", follow_symlink=False)\n', "utf-8")
    proc = _kgqa("snippets", "check", str(bad))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed" in proc.stdout
    assert "no keyword argument 'follow_symlink' (did you mean 'follow_symlinks'?)" in proc.stdout

    good = tmp_path / "ok.py"
    good.write_text("print(sum(range(4)))\n", "utf-8")
    proc = _kgqa("snippets", "check", str(good), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "passed" and result["language"] == "python"
    assert result["reason"].startswith("run: ok — exit 0")


def test_check_file_stops_a_runaway_loop_within_10_s_of_cpu(tmp_path: Path) -> None:
    """`while True: pass` is stopped by its CPU budget (10 s for the code, imports not counted),
    not held for the wall clock's 120 s; CPU seconds do not depend on the machine's load."""
    loop = tmp_path / "loop.py"
    loop.write_text("while True:\n    pass\n", "utf-8")
    proc = _kgqa("snippets", "check", str(loop), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "failed"
    reason = result["reason"]
    assert reason.startswith(
        "run: failed — stopped at the CPU limit (10 s for the code, imports not counted) after "
    ), reason
    used = re.search(r"after ([\d.]+) s of CPU", reason)
    # its 10 s, with the interpreter's start, rounded up to the limit's whole seconds
    assert used is not None and 10.0 <= float(used.group(1)) <= 11.5, reason
    assert "it did not end within 10 s of CPU for its own code" in reason


@_needs("peft")
def test_check_file_names_a_misspelled_peft_argument(tmp_path: Path) -> None:
    bad = tmp_path / "lora.py"
    bad.write_text("from peft import LoraConfig\nLoraConfig(r=8, lora_alpah=16)\n", "utf-8")
    proc = _kgqa("snippets", "check", str(bad), "--json")
    assert proc.returncode == 1
    assert "'lora_alpah' (did you mean 'lora_alpha'?)" in json.loads(proc.stdout)["reason"]


@_needs("torch")
def test_check_shell_file_with_an_unknown_option_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "launch.sh"
    bad.write_text("torchrun --nproc_per_nodes=4 train.py\n", "utf-8")
    proc = _kgqa("snippets", "check", str(bad))
    assert proc.returncode == 1
    assert "does not accept --nproc_per_nodes" in proc.stdout


def test_check_unreadable_file_exits_2(tmp_path: Path) -> None:
    proc = _kgqa("snippets", "check", str(tmp_path / "nope.py"))
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr


# -- LLM-written code ----------------------------------------------------------------------------
def test_validate_answer_code() -> None:
    bad = validate_answer_code('import shutil\nshutil.copy("a", "b", follow_symlink=False)')
    assert bad.status == "failed"
    assert "follow_symlink" in bad.detail
    good = validate_answer_code("x = [i * i for i in range(3)]\nprint(x)")
    assert good.status == "passed", good.detail
    hits = store_check._answer_report.cache_info().hits
    again = validate_answer_code("x = [i * i for i in range(3)]\nprint(x)")
    assert again == good and store_check._answer_report.cache_info().hits == hits + 1
    # a wall-clock limit that python's start-up cannot reach on a busy machine; the snippet
    # sleeps through it (a hang: it waits, it does not work)
    hung = validate_answer_code("import time\nwhile True:\n    time.sleep(1)", timeout_s=6.0)
    assert hung.status == "failed" and "timed out" in hung.detail, hung.detail
