"""Concurrent `gradio_client` sessions against the `ask` endpoint of `kgqa ui`.

    python benchmarks/bench_ui_concurrency.py --store .store            # starts `kgqa ui` itself
    python benchmarks/bench_ui_concurrency.py --url http://127.0.0.1:7860/

Each of `--sessions` threads opens its own `gradio_client.Client` and asks `--questions` questions
from `corpus/dev_questions.jsonl` in turn; prints errors, p50/p95/max latency and throughput, and
exits 1 if any call failed.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from gradio_client import Client  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[1]


def _questions(path: Path) -> list[str]:
    lines = path.read_text("utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def _start(store: Path, dense: bool) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "qa.cli", "ui", "--store", str(store), "--port", str(port)]
    proc = subprocess.Popen(command + ([] if dense else ["--no-dense"]), cwd=REPO)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit("kgqa ui did not start within 300 s")


def _session(
    url: str, questions: list[str], latencies: list[float], errors: list[str], lock: threading.Lock
) -> None:
    try:
        # a generous timeout: on a loaded machine joining the queue can take longer than the
        # client's default of 20 s, which is a slow answer, not a failed one
        client = Client(url, verbose=False, httpx_kwargs={"timeout": 120})
    except Exception as err:  # every failure is counted and printed, none is hidden
        with lock:
            errors.append(f"connect: {err!r}")
        return
    for question in questions:
        started = time.perf_counter()
        try:
            answer = client.predict(question, api_name="/ask")
            if not isinstance(answer, dict) or "answer" not in answer:
                raise ValueError(f"not an Answer object: {str(answer)[:100]}")
        except Exception as err:
            with lock:
                errors.append(f"{question[:40]}: {err!r}")
            continue
        with lock:
            latencies.append((time.perf_counter() - started) * 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default=None, help="a running app (otherwise one is started)")
    parser.add_argument("--store", type=Path, default=Path(".store"))
    parser.add_argument("--no-dense", action="store_true", help="start the app without embeddings")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--questions", type=int, default=10, help="questions per session")
    parser.add_argument("--file", type=Path, default=REPO / "corpus" / "dev_questions.jsonl")
    args = parser.parse_args()
    pool = _questions(args.file)
    proc, url = (None, args.url) if args.url else _start(args.store, not args.no_dense)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    threads = [
        threading.Thread(
            target=_session,
            args=(
                url,
                [pool[(s * args.questions + k) % len(pool)] for k in range(args.questions)],
                latencies,
                errors,
                lock,
            ),
        )
        for s in range(args.sessions)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=30)
    total = args.sessions * args.questions
    print(f"{args.sessions} sessions x {args.questions} questions = {total} calls in {wall:.1f} s")
    print(f"ok {len(latencies)}, errors {len(errors)}, throughput {len(latencies) / wall:.2f}/s")
    if latencies:
        cuts = statistics.quantiles(latencies, n=100)
        print(
            f"latency ms: p50 {statistics.median(latencies):.0f}  p95 {cuts[94]:.0f}  "
            f"max {max(latencies):.0f}"
        )
    for error in errors[:10]:
        print("ERROR", error)
    return 1 if errors or len(latencies) != total else 0


if __name__ == "__main__":
    sys.exit(main())
