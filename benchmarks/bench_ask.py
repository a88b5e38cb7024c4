"""Latency of `ask` with the graph composer (no LLM), warm and cold, on this machine's cores.

    python benchmarks/bench_ask.py --store DIR [--questions corpus/dev_questions.jsonl]
        [--cold-runs 5] [--skip-dense] [--cold-only]

1. Warm: one `Assistant` per mode (lexical + graph; with dense retrieval), one warm-up question,
   then every dev question once; p50/p95 of `Answer.latency_ms`. Target: p95 < 50 ms.
2. Cold: `python -m qa.cli ask "..." --store DIR` in a fresh process (with and without
   `--no-dense`): wall time and CPU time of the process, best and median of `--cold-runs`.
   Target: < 2 s.
3. Cold breakdown, median of `--cold-runs` fresh processes that do what `kgqa ask` does, timed
   step by step: interpreter start (`python -c pass`), CLI import + parse + settings, import of
   the answering stack, `Assistant.open` (store, graph, indexes), first answer (question
   linking, retrieval, query embedding, composing), second answer.
4. `python -X importtime` of the cold `--no-dense` run: the ten slowest imports (cumulative, top
   two levels) and the ten slowest by their own time.

The child processes get a bytecode cache (`PYTHONPYCACHEPREFIX` in a temp directory, warmed by
one untimed run) even where `PYTHONDONTWRITEBYTECODE` is set, as an installed kgqa has one;
without it every project module is compiled from source on each start (~0.2 s more).
Figures depend on the load: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qa.api import Assistant  # noqa: E402
from qa.eval.score import percentile  # noqa: E402

COLD_QUESTION = "我是零基础，先学哪个框架？"
_PYCACHE = Path(tempfile.gettempdir()) / "kgqa-bench-pycache"


def _child_env() -> dict[str, str]:
    """The environment of the timed child processes: a bytecode cache, as an install has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    return env


def _run(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + system) seconds of one child process, and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=_child_env()
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, cpu, done


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def warm(store: Path, questions: list[str], *, dense: bool) -> None:
    """Open, warm up, answer every question; print p50/p95/max."""
    started = time.perf_counter()
    assistant = Assistant.open(store, dense=dense, llm="none")  # the graph composer's figures
    opened = time.perf_counter() - started
    assistant.ask(questions[0], use_llm=False)  # lazy indexes, embedding model
    warmed = time.perf_counter() - started
    latencies = [assistant.ask(q, use_llm=False).latency_ms for q in questions]
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    assert p50 is not None and p95 is not None
    mode = "lexical+graph+dense" if dense else "lexical+graph      "
    verdict = "ok" if p95 < 50 else "OVER TARGET"
    print(
        f"warm ask [{mode}] n={len(latencies)}  p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  "
        f"max {max(latencies):7.1f} ms  (open {opened:.2f} s, open+warm-up {warmed:.2f} s)  "
        f"target p95 < 50 ms: {verdict}"
    )


def _cli(
    store: Path, *extra: str, python_flags: tuple[str, ...] = ()
) -> tuple[float, float, str, str]:
    """Wall time, CPU time, stdout and stderr of one fresh `python -m qa.cli ask ... --json`."""
    command = [sys.executable, *python_flags, "-m", "qa.cli", "ask", COLD_QUESTION]
    command += ["--store", str(store), "--json", "--llm", "none", *extra]
    wall, cpu, done = _run(command)
    return wall, cpu, done.stdout, done.stderr


def cold(store: Path, runs: int) -> None:
    """Fresh-process `kgqa ask` wall times."""
    _cli(store)  # untimed: fills the bytecode cache
    for extra in ((), ("--no-dense",)):
        walls, cpus, latencies = [], [], []
        for _ in range(runs):
            wall, cpu, stdout, _stderr = _cli(store, *extra)
            walls.append(wall)
            cpus.append(cpu)
            latencies.append(float(json.loads(stdout)["latency_ms"]))
        latency = statistics.median(latencies)
        label = " ".join(extra) or "(dense)"
        verdict = "ok" if statistics.median(walls) < 2 else "OVER TARGET"
        print(
            f"cold `kgqa ask --json {label}`: wall best {min(walls):.2f} s, median "
            f"{statistics.median(walls):.2f} s; CPU median {statistics.median(cpus):.2f} s; "
            f"over {runs} runs (in-process ask {latency:.0f} ms)  target < 2 s: {verdict}"
        )


# What `kgqa ask` does (qa.cli.main -> qa.cli.ask.cmd_ask), timed step by step.
_PHASES = """
import os, sys, time
t0 = time.perf_counter()
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as qa.cli.main does
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from qa.cli import build_parser, settings_of
argv = ["ask", sys.argv[3], "--store", sys.argv[1], "--llm", "none"]
argv += ["--no-dense"] if sys.argv[2] == "no-dense" else []
args = build_parser(argv).parse_args(argv)
settings = settings_of(args)
t1 = time.perf_counter()
from qa.api import Assistant
from qa.cli.ask import format_answer
t2 = time.perf_counter()
a = Assistant.open(settings.store, settings=settings, dense=not args.no_dense, llm="none")
t3 = time.perf_counter()
format_answer(a.ask(args.question, use_llm=False))
t4 = time.perf_counter()
a.ask(args.question, use_llm=False)
t5 = time.perf_counter()
print(f"{t1 - t0:.4f} {t2 - t1:.4f} {t3 - t2:.4f} {t4 - t3:.4f} {t5 - t4:.4f}")
"""


def cold_phases(store: Path, runs: int) -> None:
    """Where a fresh process spends its time, median of `runs` processes."""
    starts = [_run([sys.executable, "-c", "pass"])[0] for _ in range(runs)]
    start = statistics.median(starts)
    print(f"cold breakdown, median of {runs} fresh processes (interpreter start {start:.2f} s):")
    for mode in ("dense", "no-dense"):
        rows, walls, cpus = [], [], []
        for _ in range(runs):
            wall, cpu, done = _run([sys.executable, "-c", _PHASES, str(store), mode, COLD_QUESTION])
            rows.append([float(x) for x in done.stdout.split()])
            walls.append(wall)
            cpus.append(cpu)
        cli, stack, opened, first, second = (
            statistics.median(col) for col in zip(*rows, strict=True)
        )
        print(
            f"  [{mode:>8}] wall {statistics.median(walls):.2f} s (CPU "
            f"{statistics.median(cpus):.2f} s) = interpreter {start:.2f} + CLI import/parse/"
            f"settings {cli:.2f} + import answering stack {stack:.2f} + Assistant.open "
            f"{opened:.2f} + first answer {first:.2f} s (second answer {second:.3f} s)"
        )


def import_times(store: Path) -> None:
    """Top imports of a cold `--no-dense` ask (python -X importtime)."""
    _wall, _cpu, _stdout, stderr = _cli(store, "--no-dense", python_flags=("-X", "importtime"))
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        parts = line[len("import time:") :].split("|")
        self_us, cumulative_us, name = int(parts[0]), int(parts[1]), parts[2]
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append((name.strip(), depth, self_us, cumulative_us))
    total = sum(r[2] for r in rows) / 1e6
    print(f"imports of a cold `ask --no-dense`: {len(rows)} modules, {total:.2f} s in total")
    print("  slowest by cumulative time (top two levels):")
    for name, depth, _s, cum in sorted((r for r in rows if r[1] <= 1), key=lambda r: -r[3])[:10]:
        print(f"    {cum / 1000:8.1f} ms  {'  ' * depth}{name}")
    print("  slowest by own time:")
    for name, _d, self_us, _c in sorted(rows, key=lambda r: -r[2])[:10]:
        print(f"    {self_us / 1000:8.1f} ms  {name}")


def main() -> None:
    """Print warm and cold figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=ROOT / "corpus" / "dev_questions.jsonl")
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--skip-dense", action="store_true", help="warm: lexical + graph only")
    ap.add_argument("--cold-only", action="store_true", help="skip the warm figures")
    args = ap.parse_args()
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    print(_load())
    if not args.cold_only:
        warm(args.store, questions, dense=False)
        if not args.skip_dense:
            warm(args.store, questions, dense=True)
        print(_load())
    cold(args.store, args.cold_runs)
    print(_load())
    cold_phases(args.store, args.cold_runs)
    import_times(args.store)
    print(_load())


if __name__ == "__main__":
    main()
