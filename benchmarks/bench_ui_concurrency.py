"""Concurrent sessions against the `ask` endpoint of `kgqa ui` (or of `kgqa serve-api`).

    python benchmarks/bench_ui_concurrency.py --store .store   # starts `kgqa ui --llm none` itself
    python benchmarks/bench_ui_concurrency.py --store .store --workers 0   # answers in its process
    python benchmarks/bench_ui_concurrency.py --url http://127.0.0.1:7860/
    python benchmarks/bench_ui_concurrency.py --client http --url http://127.0.0.1:7860/
    python benchmarks/bench_ui_concurrency.py --client api --url http://127.0.0.1:8080/

Each of `--sessions` threads asks `--questions` questions from `corpus/dev_questions.jsonl` in
turn, through its own client: `gradio` (default) a `gradio_client.Client`; `http` one keep-alive
connection speaking Gradio's HTTP API (POST `/gradio_api/call/ask`, then its event stream:
what gradio_client does, without opening a new connection, and TLS context, per request, which
on a 2-core machine costs the client more CPU than the server spends answering); `api` POST
`/ask` of `kgqa serve-api`. Prints errors, p50/p95/max latency and throughput, and exits 1 if
any call failed.
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


def _start(
    store: Path, dense: bool, llm: str, workers: int | None
) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "qa.cli", "ui", "--store", str(store), "--port", str(port)]
    command += ["--llm", llm]
    command += [] if workers is None else ["--workers", str(workers)]
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


def _gradio_http(client: httpx.Client, question: str) -> dict[str, object]:
    """One answer through Gradio's HTTP API: join the queue, read the event stream."""
    joined = client.post("gradio_api/call/ask", json={"data": [question]})
    joined.raise_for_status()
    event_id = joined.json()["event_id"]
    with client.stream("GET", f"gradio_api/call/ask/{event_id}") as stream:
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event in ("complete", "error"):
                if event == "error":
                    raise ValueError(f"error event: {line[6:200]}")
                answer: dict[str, object] = json.loads(line[6:])[0]
                return answer
    raise ValueError("the event stream ended without an answer")


def _api(client: httpx.Client, question: str) -> dict[str, object]:
    """One answer from `kgqa serve-api`."""
    response = client.post("ask", json={"question": question})
    response.raise_for_status()
    answer: dict[str, object] = response.json()
    return answer


def _lean_session(
    kind: str,
    url: str,
    questions: list[str],
    latencies: list[float],
    errors: list[str],
    lock: threading.Lock,
) -> None:
    ask = _gradio_http if kind == "http" else _api
    with httpx.Client(base_url=url, timeout=120) as client:
        for question in questions:
            started = time.perf_counter()
            try:
                answer = ask(client, question)
                if "answer" not in answer:
                    raise ValueError(f"not an Answer object: {str(answer)[:100]}")
            except Exception as err:  # every failure is counted and printed, none is hidden
                with lock:
                    errors.append(f"{question[:40]}: {err!r}")
                continue
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)


def _session(
    url: str, questions: list[str], latencies: list[float], errors: list[str], lock: threading.Lock
) -> None:
    try:
        # a generous timeout: on a loaded machine joining the queue can take longer than the
        # client's default of 20 s, which is a slow answer, not a failed one
        client = Client(
            url,
            verbose=False,
            httpx_kwargs={"timeout": 120},
            # gradio_client opens a new httpx client per request, each loading the CA bundle
            # for TLS; over plain http to 127.0.0.1 no certificate is checked: load none
            ssl_verify=not url.startswith("http://"),
        )
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
    parser.add_argument(
        "--llm", default="none", help="the started app's reader (default none: the graph alone)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="the started app's answering processes (default: `kgqa ui`'s own; 0: in its process)",
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--questions", type=int, default=10, help="questions per session")
    parser.add_argument("--file", type=Path, default=REPO / "corpus" / "dev_questions.jsonl")
    parser.add_argument(
        "--warmup", type=int, default=5, help="untimed questions first (the model loads lazily)"
    )
    parser.add_argument(
        "--client", choices=("gradio", "http", "api"), default="gradio", help="see the docstring"
    )
    args = parser.parse_args()
    pool = _questions(args.file)
    proc, url = (
        (None, args.url)
        if args.url
        else _start(args.store, not args.no_dense, args.llm, args.workers)
    )
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    if args.warmup:
        with httpx.Client(base_url=url, timeout=300) as client:
            warm = _api if args.client == "api" else _gradio_http
            for question in pool[: args.warmup]:
                warm(client, question)
    threads = [
        threading.Thread(
            target=_session if args.client == "gradio" else _lean_session,
            args=(
                *(() if args.client == "gradio" else (args.client,)),
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
