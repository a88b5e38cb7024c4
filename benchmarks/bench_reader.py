"""Latency of answers read by the reader model, beside the graph alone, on this machine's cores.

    python benchmarks/bench_reader.py --store DIR --questions FILE [--llm URL|auto] [--n 40]

For each question (the first `--n` of the file): the answer streamed by `Assistant.ask_stream`
with the reader (the embedded model started for this run with `--llm auto`, or the server at
URL), timed at its first event (the graph's answer, shown at once: "first text on screen") and at
its final answer; the reader's own request (prompt and completion tokens, seconds); and the same
question with the graph alone (`--llm none`). Prints p50/p95 of each, the prompt's size, the
prefill rate it implies, and the 1-minute load before and after (wall times follow the load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qa.api import Assistant  # noqa: E402
from qa.decide import Reading, Verdict  # noqa: E402
from qa.decide.reader import Reader  # noqa: E402
from qa.eval.score import percentile  # noqa: E402


class _Timed:
    """A reader that remembers its verdicts (their token counts and seconds)."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.name = reader.name
        self.verdicts: list[Verdict] = []

    def stream(self, reading: Reading) -> Iterator[str | Verdict]:
        for item in self.reader.stream(reading):
            if isinstance(item, Verdict):
                self.verdicts.append(item)
            yield item


def _row(name: str, values: list[float], unit: str = "ms") -> str:
    if not values:
        return f"{name:<34} —"
    p50, p95 = percentile(values, 50), percentile(values, 95)
    return f"{name:<34} p50 {p50:8.0f} {unit}   p95 {p95:8.0f} {unit}   (n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--llm", default="auto", help="auto (the embedded model) | URL")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--no-dense", action="store_true")
    args = parser.parse_args()
    questions = [
        json.loads(line)["question"]
        for line in args.questions.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ][: args.n]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    assistant = Assistant.open(args.store, dense=not args.no_dense, llm=args.llm)
    opened = time.perf_counter() - started
    if not isinstance(assistant.llm, Reader):
        print(f"no reader model answers ({args.llm}): nothing to measure", file=sys.stderr)
        return 1
    timed = _Timed(assistant.llm)
    reading = assistant.with_llm(timed)
    graph_only = assistant.with_llm(None)
    reading.ask("warm-up: which framework should I learn first?")
    timed.verdicts.clear()
    first: list[float] = []
    final: list[float] = []
    graph: list[float] = []
    for question in questions:
        t0 = time.perf_counter()
        shown: float | None = None
        for event in reading.ask_stream(question):
            now = (time.perf_counter() - t0) * 1000
            shown = now if shown is None else shown
            if event.kind == "final":
                final.append(now)
        first.append(shown or 0.0)
        graph.append(graph_only.ask(question).latency_ms)
    prompt = [v.prompt_tokens for v in timed.verdicts if v.prompt_tokens]
    seconds = [v.seconds for v in timed.verdicts if v.seconds]
    completion = [v.completion_tokens for v in timed.verdicts if v.completion_tokens]
    print(
        f"store {args.store}, reader {assistant.llm.name} at {args.llm}, {len(questions)} "
        f"questions; opened (with the reader's start) in {opened:.1f} s; 1-min load "
        f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores"
    )
    print(_row("first text on screen (graph)", first))
    print(_row("answer with the reader", final))
    print(_row("the reader's request", [s * 1000 for s in seconds]))
    print(_row("answer with the graph alone", graph))
    if prompt:
        rate = sum(prompt) / sum(seconds) if seconds else 0.0
        print(
            f"prompt tokens p50 {statistics.median(prompt):.0f} (max {max(prompt)}), "
            f"completion tokens p50 {statistics.median(completion or [0]):.0f}; "
            f"{rate:.0f} prompt tokens per second of request (prefill-bound)"
        )
    read_during = (sum(final) / 1000) if final else 0.0
    print(
        f"{len(final)} questions with the reader in {read_during:.0f} s "
        f"({read_during / max(len(final), 1):.1f} s each)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
