"""Scaling out: ingest on Ray, the store on FalkorDB, answers from N processes, on corpora of 1x,
10x and 100x the public sets (README "Scaling out").

    python benchmarks/bench_scale_out.py [--factors 1 10] [--parts ingest stores ui]
        [--sessions 20 50] [--ray-cpus 2]

- corpus: the public sets' documents (the bundled articles and ../shared/real-docs) once, and
  for a factor F, F - 1 more copies of each made from its own evidence units reshuffled (the
  sections in another order, the units of each section in another order; a seeded shuffle per
  copy): new chunk texts, so that every copy is embedded, with the names and the sentences of
  real documents.
- ingest: `kgqa ingest` locally and `kgqa ingest --ray` on a local Ray cluster of `--ray-cpus`
  worker CPUs started here, each with an empty passage cache (derived model files linked from
  the kgqa cache directory): wall seconds, chunks/s, stage seconds; whether the two stores are
  the same, field by field. Then the same corpus into a FalkorDB server started here (the
  vectors now come from the passage cache: what is left is the writing).
- stores: in fresh processes, store open (`Assistant.open`) and warm answers (p50/p95 over the
  public sets' questions, `--llm none`) from the file store and from the FalkorDB store, and
  how many answers are the same field by field.
- ui: `kgqa ui --llm none` over the bundled store under `--sessions` concurrent sessions of 10
  questions through Gradio's HTTP API (`bench_ui_concurrency.py --client http`) and through
  `gradio_client`, and `kgqa serve-api --workers 2` (`--client api`): p50, p95, errors.

Every figure carries the load average: on a shared 2-core machine other work skews wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # this script is an entry point
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REAL_DOCS = ROOT.parent / "shared" / "real-docs"
QUESTION_FILES = [ROOT / "corpus" / "dev_questions.jsonl", REAL_DOCS / "questions.jsonl"]
DERIVED = ("e5-vocab-", "e5-graph-", "jieba-dict-")
BIN = Path(sys.executable).parent


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- the corpus ---------------------------------------------------------------------------------
def _reshuffled(doc: Any, copy: int) -> str:
    """A document made of `doc`'s units: sections and the units in them in a seeded new order."""
    from ingest.pipeline import document_blocks
    from ingest.units import document_units
    from kg.documents import UnitKind

    rng = random.Random(f"{doc.id}:{copy}")
    sections: dict[tuple[str, ...], list[str]] = {}
    for unit in document_units(doc, document_blocks(doc)):
        if unit.kind != UnitKind.HEADING:
            sections.setdefault(tuple(unit.heading_path), []).append(unit.text)
    order = list(sections)
    rng.shuffle(order)
    lines = [f"# {Path(doc.id).stem} ({copy})", ""]
    for path in order:
        units = sections[path]
        rng.shuffle(units)
        if path:
            lines += [f"## {' / '.join(path)}", ""]
        lines += [text for unit in units for text in (unit, "")]
    return "\n".join(lines)


def generate(factor: int, into: Path) -> tuple[Path, int]:
    """The corpus of `factor` x the public sets (see the module docstring) and its documents."""
    from ingest.load import iter_corpus

    corpus = into / f"corpus-{factor}x"
    shutil.rmtree(corpus, ignore_errors=True)
    sources = {"bundled": ROOT / "corpus", "real-docs": REAL_DOCS / "corpus"}
    count = 0
    for name, source in sources.items():
        docs = [r.document for r in iter_corpus([source]) if r.document is not None]
        for doc in docs:
            target = corpus / name / doc.id
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(doc.text, encoding="utf-8")
            for copy in range(1, factor):
                made = corpus / f"{name}-{copy:03d}" / f"{Path(doc.id).stem}.md"
                made.parent.mkdir(parents=True, exist_ok=True)
                made.write_text(_reshuffled(doc, copy), encoding="utf-8")
            count += factor
    return corpus, count


def _fresh_cache(into: Path) -> Path:
    """A cache directory with the user's derived model files and no passage vectors."""
    from qa.config import load_settings

    cache = into
    cache.mkdir(parents=True, exist_ok=True)
    source = load_settings().cache_dir
    for path in source.iterdir() if source.is_dir() else []:
        if path.name.startswith(DERIVED) and not (cache / path.name).exists():
            (cache / path.name).symlink_to(path)
    return cache


#: Ray on this machine only, on 127.0.0.1 (Ray binds and dials the interface's address else)
RAY_LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, **RAY_LOOPBACK, "KGQA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}


def _kgqa(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """A `kgqa ... --json` command: its wall seconds and its JSON report."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", *args, "--json"], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"kgqa {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return seconds, report


# -- servers -------------------------------------------------------------------------------------
class _RayHead:
    """A local Ray head (`ray start --head --block`) with `cpus` worker CPUs."""

    def __init__(self, cpus: int) -> None:
        self.port = _free_port()
        self.temp = Path(tempfile.mkdtemp(prefix="kgqa-ray-", dir="/tmp"))
        log = (self.temp / "head.log").open("wb")
        command = [str(BIN / "ray"), "start", "--head", "--block", "--port", str(self.port)]
        command += ["--node-ip-address", "127.0.0.1"]
        command += ["--num-cpus", str(cpus), "--include-dashboard=false"]
        command += ["--disable-usage-stats", "--object-store-memory", str(200 * 1024 * 1024)]
        command += ["--temp-dir", str(self.temp)]
        self.process = subprocess.Popen(
            command, env={**os.environ, **RAY_LOOPBACK}, stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 180
        while b"Ray runtime started" not in (self.temp / "head.log").read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ray start failed: see {self.temp / 'head.log'}")
            time.sleep(0.5)
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        shutil.rmtree(self.temp, ignore_errors=True)


def _serve(command: list[str], url: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import httpx

    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit(f"{' '.join(command[:4])} did not answer at {url}")


# -- the parts ------------------------------------------------------------------------------------
def _same_store(one: Path, other: Path) -> bool:
    import numpy as np

    from kg.store import LEXICAL_FILE, UNITS_LEXICAL_FILE, Store

    a, b = Store.open(one), Store.open(other)
    same = list(a.graph().relations()) == list(b.graph().relations())
    same = same and list(a.graph().entities()) == list(b.graph().entities())
    same = same and a.units() == b.units() and list(a.records()) == list(b.records())
    for doc_id in b.manifest.documents:
        same = same and np.array_equal(a.doc_vectors(doc_id), b.doc_vectors(doc_id))
    for name in (LEXICAL_FILE, UNITS_LEXICAL_FILE):
        x, y = a.arrays(name), b.arrays(name)
        same = same and all(np.array_equal(x[k], y[k]) for k in x)
    return same


def _ingest_figures(seconds: float, report: dict[str, Any]) -> dict[str, Any]:
    chunks = report["embedded_chunks"]
    return {
        "wall_s": round(seconds, 1),
        "documents": report["documents"],
        "chunks_embedded": chunks,
        "chunks_per_s": round(chunks / seconds, 1),
        "stages_s": {k: round(v, 1) for k, v in report["seconds"].items()},
        "load": _load(),
    }


def bench_ingest(
    factor: int, tmp: Path, ray: _RayHead | None, falkordb: Any
) -> tuple[dict[str, Any], Path, str]:
    corpus, documents = generate(factor, tmp)
    figures: dict[str, Any] = {"factor": factor, "documents": documents}
    file_store = tmp / f"file-{factor}x"
    local_cache = _fresh_cache(tmp / f"cache-local-{factor}x")
    args = ["ingest", "--corpus", str(corpus), "--store", str(file_store)]
    figures["local"] = _ingest_figures(*_kgqa(args, _env(local_cache)))
    print(f"  local ingest: {figures['local']}", flush=True)
    if ray is not None:
        ray_store = tmp / f"ray-{factor}x"
        ray_cache = _fresh_cache(tmp / f"cache-ray-{factor}x")
        args = ["ingest", "--corpus", str(corpus), "--store", str(ray_store), "--ray", ray.address]
        figures["ray"] = _ingest_figures(*_kgqa(args, _env(ray_cache)))
        figures["ray"]["same_store_as_local"] = _same_store(ray_store, file_store)
        print(f"  ray ingest: {figures['ray']}", flush=True)
    location = f"{falkordb.location}/gen-{factor}x"
    args = ["ingest", "--corpus", str(corpus), "--store", location]
    figures["falkordb"] = _ingest_figures(*_kgqa(args, _env(local_cache)))
    print(f"  falkordb ingest (vectors cached): {figures['falkordb']}", flush=True)
    return figures, file_store, location


def ask_child(store: str, out: Path) -> dict[str, Any]:
    """Store open and warm answers over the public questions, in this process; the answers
    (without their latency) go to `out`."""
    from qa.api import Assistant
    from qa.config import load_settings
    from qa.eval.score import percentile

    questions = [
        json.loads(line)["question"]
        for path in QUESTION_FILES
        if path.is_file()
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]
    settings = load_settings(store=Path(store))
    started = time.perf_counter()
    assistant = Assistant.open(store, settings=settings, llm="none")
    figures: dict[str, Any] = {"open_s": round(time.perf_counter() - started, 2)}
    assistant.ask(questions[0])
    answers = [assistant.ask(q) for q in questions]
    latencies = [a.latency_ms for a in answers]
    figures |= {"questions": len(questions), "load": _load()}
    figures["warm_p50_ms"] = round(percentile(latencies, 50), 1)
    figures["warm_p95_ms"] = round(percentile(latencies, 95), 1)
    with out.open("w", encoding="utf-8") as handle:
        for answer in answers:
            handle.write(answer.model_dump_json(exclude={"latency_ms"}) + "\n")
    return figures


def bench_stores(file_store: Path, location: str, tmp: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    outputs = {}
    for name, store in (("file", str(file_store)), ("falkordb", location)):
        out = tmp / f"answers-{name}.jsonl"
        command = [sys.executable, str(Path(__file__).resolve()), "--ask-child", store, str(out)]
        done = subprocess.run(command, capture_output=True, text=True, env=_env(tmp / "c"))
        if done.returncode != 0:
            raise SystemExit(f"ask child failed:\n{done.stderr[-3000:]}")
        figures[name] = json.loads(done.stdout.splitlines()[-1])
        outputs[name] = out.read_text("utf-8").splitlines()
    same = sum(a == b for a, b in zip(outputs["file"], outputs["falkordb"], strict=True))
    figures["same_answers"] = f"{same}/{len(outputs['file'])}"
    return figures


def _sessions_bench(url: str, client: str, sessions: int) -> str:
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_ui_concurrency.py"), "--url", url]
    command += ["--client", client, "--sessions", str(sessions)]
    done = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ok ", "latency"))]
    return f"{'; '.join(lines)}  [{_load()}]"


def bench_ui(store: Path, sessions: list[int]) -> dict[str, str]:
    """Each run against a server of its own: the answers' query vectors are cached by the
    server, and a run after another would find the questions' all there."""
    from qa.config import load_settings

    env = _env(load_settings().cache_dir)
    figures: dict[str, str] = {}
    runs = [("ui", client, count) for count in sessions for client in ("gradio", "http")]
    runs += [("serve-api", "api", count) for count in sessions]
    for verb, client, count in runs:
        port = _free_port()
        command = [sys.executable, "-m", "qa.cli", verb, "--store", str(store)]
        command += ["--port", str(port), "--llm", "none"]
        command += ["--workers", "2"] if verb == "serve-api" else []
        health = "health" if verb == "serve-api" else ""
        proc = _serve(command, f"http://127.0.0.1:{port}/{health}", env)
        try:
            name = f"{verb} {client} x{count}"
            figures[name] = _sessions_bench(f"http://127.0.0.1:{port}/", client, count)
            print(f"  {name}: {figures[name]}", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or its ask child)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--parts", nargs="+", default=["ingest", "stores", "ui"])
    parser.add_argument("--sessions", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray ingest")
    parser.add_argument("--ui-store", type=Path, default=None, help="default: bundled, built")
    parser.add_argument("--ask-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ask_child:
        print(json.dumps(ask_child(args.ask_child[0], Path(args.ask_child[1]))))
        return 0
    from kg.falkor_server import FalkorServer

    results: dict[str, Any] = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="kgqa-scale-out-") as tmp_name:
        tmp = Path(tmp_name)
        if {"ingest", "stores"} & set(args.parts):
            ray = None if args.no_ray else _RayHead(args.ray_cpus)
            try:
                with FalkorServer(_free_port(), tmp / "falkordb") as falkordb:
                    for factor in args.factors:
                        print(f"== {factor}x  [{_load()}]", flush=True)
                        part, file_store, location = bench_ingest(factor, tmp, ray, falkordb)
                        if "stores" in args.parts:
                            part["stores"] = bench_stores(file_store, location, tmp)
                            print(f"  stores: {part['stores']}", flush=True)
                        results[f"{factor}x"] = part
            finally:
                if ray is not None:
                    ray.stop()
        if "ui" in args.parts:
            store = args.ui_store
            if store is None:
                store = tmp / "bundled"
                from qa.config import load_settings

                _kgqa(["ingest", "--store", str(store)], _env(load_settings().cache_dir))
            print(f"== ui/api over {store}  [{_load()}]", flush=True)
            results["ui"] = bench_ui(store, args.sessions)
    print(json.dumps(results, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
