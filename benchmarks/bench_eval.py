"""Throughput of `kgqa eval --llm none` (graph composer only) over a question set, on 2 cores.

    python benchmarks/bench_eval.py --store .store [--questions corpus/dev_questions.jsonl]
        [--concurrency 1 2] [--no-dense] [--cores 2]

For each concurrency the whole question set is answered into a fresh results file (what
`kgqa eval` does, retrieval recording included) after one warm-up question. Printed per run:
questions/s (wall), CPU ms per question (process time: less sensitive to other load on the
machine), and latency p50/p95 as the answers recorded them. Target: >= 50 q/s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qa.eval_run import (
    KgqaAnswerer,
    open_assistant,
    prefetch_queries,
    read_questions,
    read_results,
    run_questions,
)
from qa.evaluate import percentile


def main() -> None:
    """Print one line per concurrency level."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path(".store"))
    ap.add_argument("--questions", type=Path, default=Path("corpus/dev_questions.jsonl"))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-dense", action="store_true", help="lexical + graph retrieval only")
    ap.add_argument("--batch-embed", action="store_true", help="prefetch query embeddings")
    ap.add_argument("--cores", type=int, default=2, help="pin the process to this many cores")
    args = ap.parse_args()

    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))[: args.cores]
        os.sched_setaffinity(0, set(cores))
        print(f"pinned to cores {cores}; load average {os.getloadavg()[0]:.1f}")
    questions = read_questions(args.questions).questions
    started = time.perf_counter()
    assistant, cache = open_assistant(args.store, dense=not args.no_dense)
    answerer = KgqaAnswerer(assistant, use_llm=False)
    answerer(questions[0])  # loads the embedder, builds lazy indexes
    print(f"open + warm-up: {time.perf_counter() - started:.1f} s; {len(questions)} questions")
    print(f"{'concurrency':>11} {'q/s':>8} {'CPU ms/q':>9} {'p50 ms':>8} {'p95 ms':>8}")
    for concurrency in args.concurrency:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.jsonl"
            cpu = time.process_time()
            if cache is not None:
                cache.clear()  # every round embeds its own queries
                if args.batch_embed:
                    prefetch_queries(cache, questions)
            stats = run_questions(questions, answerer, out, concurrency=concurrency, progress=False)
            cpu_ms = (time.process_time() - cpu) * 1000 / max(1, stats.answered)
            latencies = [r.latency_ms for r in read_results(out)[0].values()]
        p50, p95 = percentile(latencies, 50) or 0.0, percentile(latencies, 95) or 0.0
        print(
            f"{concurrency:>11} {stats.throughput_qps or 0:>8.1f} {cpu_ms:>9.1f} "
            f"{p50:>8.1f} {p95:>8.1f}"
        )


if __name__ == "__main__":
    main()
