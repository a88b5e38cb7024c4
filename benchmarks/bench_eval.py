"""Throughput of `kgqa eval` over a question set, on 2 cores: graph composer only, or with an LLM.

    python benchmarks/bench_eval.py --store .store [--questions corpus/dev_questions.jsonl]
        [--concurrency 1 2] [--no-dense] [--cores 2]
    python benchmarks/bench_eval.py --store .store --llm http://127.0.0.1:8201/v1 --limit 16 \
        --concurrency 1 4

With ``--llm`` the questions are `--limit` questions spread over the file (every n-th) that the
graph composer answers (it does not ask the LLM when it abstains), each answered by the LLM server
one at a time and then with N requests in flight; printed per run: q/s, the gain over the first
concurrency, how many answers came from the LLM, fallbacks by reason, and the 1-minute load average
at the start and end (the machine is shared: read figures with it). Set ``KGQA_LLM_MODEL`` to the
served model name and ``KGQA_LLM_TIMEOUT_S`` above N times the one-request latency.

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

from kg.errors import QuestionError
from qa.config import Settings, load_settings
from qa.eval.records import GoldQuestion, read_questions, read_results
from qa.eval.run import (
    KgqaAnswerer,
    eval_llm,
    open_assistant,
    prefetch_queries,
    run_questions,
)
from qa.eval.score import percentile


def _settings(store: Path) -> Settings:
    """This script is an entry point: the settings of the environment, over `--store`."""
    return load_settings(store=store)


def main() -> None:
    """Print one line per concurrency level."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path(".store"))
    ap.add_argument("--questions", type=Path, default=Path("corpus/dev_questions.jsonl"))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-dense", action="store_true", help="lexical + graph retrieval only")
    ap.add_argument("--batch-embed", action="store_true", help="prefetch query embeddings")
    ap.add_argument("--cores", type=int, default=2, help="pin the process to this many cores")
    ap.add_argument("--llm", default="none", help="none | auto | URL of an LLM server")
    ap.add_argument("--limit", type=int, default=0, help="answer this many questions (0: all)")
    args = ap.parse_args()
    if args.llm != "none":
        bench_llm(args)
        return

    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))[: args.cores]
        os.sched_setaffinity(0, set(cores))
        print(f"pinned to cores {cores}; load average {os.getloadavg()[0]:.1f}")
    questions = read_questions(args.questions).questions
    started = time.perf_counter()
    assistant, cache = open_assistant(_settings(args.store), dense=not args.no_dense)
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


def _spread(questions: list[GoldQuestion], limit: int) -> list[GoldQuestion]:
    """``limit`` questions taken at an even stride through the file (all kinds and languages).

    >>> [q.id for q in _spread([GoldQuestion(id=str(i), question="?") for i in range(10)], 3)]
    ['0', '3', '6']
    """
    if limit <= 0 or limit >= len(questions):
        return questions
    step = len(questions) // limit
    return questions[::step][:limit]


def bench_llm(args: argparse.Namespace) -> None:
    """One line per concurrency: the same questions through the LLM server each time."""
    settings = _settings(args.store)
    graph_only, _cache = open_assistant(settings, dense=not args.no_dense)
    llm, note = eval_llm(args.llm, graph_only, settings)
    if llm is None:
        raise SystemExit(note)
    pool = read_questions(args.questions).questions
    answerable = []
    for question in pool:  # the LLM is asked only where the graph composer does not abstain
        try:
            parsed = graph_only.understand(question.question)
        except QuestionError:
            continue
        if not graph_only.graph_answer(parsed)[0].abstained:
            answerable.append(question)
    questions = _spread(answerable, args.limit)
    answerer = KgqaAnswerer(graph_only.with_llm(llm), use_llm=True)
    print(f"{len(questions)} questions through {args.llm}: {', '.join(q.id for q in questions)}")
    print(f"{'concurrency':>11} {'q/s':>7} {'gain':>6} {'wall s':>7} {'LLM':>4}  load  fallbacks")
    first: float | None = None
    for concurrency in args.concurrency:
        with tempfile.TemporaryDirectory() as tmp:
            stats = run_questions(
                questions,
                answerer,
                Path(tmp) / "out.jsonl",
                concurrency=concurrency,
                progress=False,
            )
        qps = stats.throughput_qps or 0.0
        first = first or qps
        gain = qps / first if first else 0.0
        llm_answers = sum(n for b, n in stats.backends.items() if b.startswith("llm:"))
        load = "→".join(f"{x:.1f}" for x in stats.load_average)
        falls = ", ".join(f"{k} {v}" for k, v in stats.fallbacks.items()) or "none"
        print(
            f"{concurrency:>11} {qps:>7.3f} {gain:>5.2f}x {stats.wall_s:>7.1f} {llm_answers:>4}"
            f"  {load}  {falls}",
            flush=True,
        )


if __name__ == "__main__":
    main()
