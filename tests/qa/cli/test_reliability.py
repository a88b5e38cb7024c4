"""Kill the product's long-lived pieces at random points, and check what they leave.

`kgqa llm serve`, `kgqa ui --llm`, `kgqa eval --llm` and `kgqa snippets check` run as real
subprocesses (the LLM is the real llama.cpp server); each is killed with SIGTERM, SIGINT or SIGKILL
at a moment drawn from a seeded generator. Then:

- no process it started is still running, found four ways: its process tree just before the
  kill, an environment tag that servers inherit, the uids its sandbox runs get, and the pid that
  sandbox supervisors and server keepers are configured with (``"parent": PID``);
- the store still loads, unchanged (readers never write to it);
- a resumed eval neither loses nor duplicates answers.

``KGQA_RELIABILITY_SEED=N`` draws other moments and signals (default 14; each draw is printed).
The draws are reproducible; the timing of the processes is not, so a draw names a moment ("while
the model loads", "after 2 answers, 0.8 s into the next"), not an instruction. What a test needs
of a moment it waits for as a state, never as a time (the machine may be busy): an answer written
to the results file, the UI answering its page, the LLM server idle again after a killed client;
and where a kill must land before the last answer, the process is frozen (SIGSTOP) while the
state is checked, then killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from processes import (
    die_with_parent,
    port_is_free,
    process_tree,
    processes_naming,
    processes_with_env,
    sandbox_uid_block,
    still_running,
    uid_processes,
    wait_for,
)
from store_fixture import article_store

from kg.store import Store
from qa.llm.serve import ServerHandle, free_port

REPO = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("KGQA_RELIABILITY_SEED", "14"))
TAG = "KGQA_RELIABILITY_RUN"
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]
# Short LLM answers keep the module quick on 2 busy cores (a full one takes 4-40 s there); a
# truncated answer falls back to the graph composer's, which is an answer all the same.
SHORT_ANSWERS = {"KGQA_LLM_MAX_TOKENS": "128", "KGQA_LLM_TIMEOUT_S": "20"}
ARTICLE = """# 部署选型

| 引擎 | 特点 |
|---|---|
| TensorRT | NVIDIA GPU 上延迟最低 |
| OpenVINO | Intel CPU 与边缘设备 |

边缘设备：用 OpenVINO 部署 PyTorch 模型。
"""
QUESTIONS = [
    "在 NVIDIA GPU 上延迟最低的推理引擎是什么？",
    "Intel 边缘设备用什么部署 PyTorch 模型？",
    "OpenVINO 适合什么设备？",
    "我想在 GPU 上部署模型，选哪个？",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"guide.md": ARTICLE})


@pytest.fixture()
def rng(request: pytest.FixtureRequest) -> random.Random:
    """Draws for this test, from the seed and the test's name."""
    print(f"\nKGQA_RELIABILITY_SEED={SEED}")
    return random.Random(f"{SEED}:{request.node.name}")


class Piece:
    """One `kgqa` subprocess under test: tagged, logged, and dying with the test process."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.tag = uuid.uuid4().hex
        self.log = log
        env = {**os.environ, TAG: self.tag, "PYTHONPATH": str(REPO), **SHORT_ANSWERS}
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "qa.cli", *args],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )

    def left(self, tree: dict[int, str]) -> list[str]:
        """Whatever this piece started that still runs."""
        pid = self.proc.pid
        found = still_running(tree) + processes_with_env(TAG, self.tag)
        found += uid_processes(sandbox_uid_block(pid)) + processes_naming(f'"parent": {pid}')
        return sorted(set(found))

    def running(self) -> bool:
        """Still running (a frozen piece counts: it has not ended)."""
        return self.proc.poll() is None

    def freeze(self) -> None:
        """SIGSTOP: nothing of the piece moves until `kill` (which continues it)."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def kill(self, sig: signal.Signals, *, nothing_left_within_s: float = 60.0) -> float:
        """Send ``sig`` (to a frozen piece too: it is continued to take it); returns how long
        until nothing of the piece was running. The bounds are generous on purpose: they only
        turn a hang into a failure, on a machine as busy as it may be."""
        tree = process_tree(self.proc.pid)
        start = time.monotonic()
        self.proc.send_signal(sig)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGCONT)
        self.proc.wait(timeout=180)
        gone = wait_for(lambda: not self.left(tree), nothing_left_within_s)
        assert gone is not None, f"after {sig.name}: {self.left(tree)}\n{self.log.read_text()}"
        return time.monotonic() - start


def _snapshot(store: Path) -> tuple[str, object]:
    opened = Store.open(store)
    return opened.dir.name, opened.graph().to_node_link(with_node_evidence=True)


# -- kgqa llm serve ------------------------------------------------------------------------------
def _stream_a_completion(base_url: str) -> None:
    body = {
        "model": "qwen2.5-coder-0.5b",
        "messages": [{"role": "user", "content": "Count from 1 to 50."}],
        "max_tokens": 64,
        "stream": True,
    }
    try:
        with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=60) as r:
            for _ in r.iter_bytes():
                pass
    except httpx.HTTPError:
        pass  # the server went away mid-stream: expected here


def test_kgqa_llm_serve_killed_at_random_points(
    llamacpp_gguf: Path, tmp_path: Path, rng: random.Random
) -> None:
    for round_ in range(3):
        moment = rng.choice(["while the model loads", "idle", "while answering"])
        sig = rng.choice(SIGNALS)
        delay = rng.uniform(0.2, 1.5)
        port = free_port()
        piece = Piece(["llm", "serve", "--engine", "llamacpp", "--port", str(port)], tmp_path / "s")
        if moment == "while the model loads":
            time.sleep(delay)
        else:
            up = wait_for(lambda p=piece: "Point kgqa at it" in p.log.read_text(), 600, 0.1)
            assert up is not None, piece.log.read_text()
        if moment == "while answering":
            url = f"http://127.0.0.1:{port}/v1"
            threading.Thread(target=_stream_a_completion, args=(url,), daemon=True).start()
            time.sleep(delay)
        assert piece.running(), f"kgqa llm serve ended before the kill:\n{piece.log.read_text()}"
        # an answer in flight may finish first: the keeper's graceful stop gives the server 20 s
        # (then SIGKILL), whatever the machine's load; the bound only turns a hang into a failure
        took = piece.kill(sig, nothing_left_within_s=90)
        assert wait_for(lambda p=port: port_is_free(p), 60) is not None
        print(f"round {round_}: {sig.name} {moment} (+{delay:.2f} s): all gone in {took:.2f} s")


# -- kgqa eval --llm -----------------------------------------------------------------------------
def _answers(out: Path) -> list[str]:
    """The complete lines of the results file (a line torn by the kill is not an answer)."""
    data = out.read_bytes() if out.exists() else b""
    return data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines()


def _wait_until_idle(base_url: str) -> None:
    """Until the server answers at once (an answer abandoned by a killed client may still be
    generating: llama.cpp then keeps /v1/models waiting, and kgqa would take it for down)."""

    def idle() -> bool:
        try:
            return httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    assert wait_for(idle, 600, 0.5) is not None, f"{base_url} stays busy"


def _kill_before_the_last(
    piece: Piece, out: Path, after: int, delay: float, sig: signal.Signals
) -> float:
    """Kill the eval once `after` answers are written, `delay` s into the next one, but before
    the last answer: the wait ends early when only one is left, and the eval is frozen while
    the count is read, so no answer lands between the check and the kill."""
    total = len(QUESTIONS)
    reached = wait_for(lambda: len(_answers(out)) >= after or not piece.running(), 900, 0.01)
    assert reached is not None and piece.running(), (
        f"eval ended, or wrote no {after} answers:\n{piece.log.read_text()}"
    )
    wait_for(lambda: len(_answers(out)) >= total - 1 or not piece.running(), delay, 0.01)
    piece.freeze()
    written = len(_answers(out))
    assert piece.running() and written < total, (
        f"the eval answered all {total} questions before the kill (one answer per LLM call, "
        f"concurrency 1: an answer takes a chat request):\n{piece.log.read_text()}"
    )
    return piece.kill(sig)


def test_kgqa_eval_killed_and_resumed_loses_and_repeats_nothing(
    llamacpp_server: ServerHandle, store: Path, tmp_path: Path, rng: random.Random
) -> None:
    questions = tmp_path / "q.jsonl"
    lines = [json.dumps({"id": f"q{i}", "question": q}) for i, q in enumerate(QUESTIONS)]
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "results.jsonl"
    args = ["eval", str(questions), "--out", str(out), "--store", str(store), "--no-dense"]
    # one question at a time: answers land one by one, each after its own chat request (at 8,
    # requests queued behind the one llama.cpp works on time out together, and their graph
    # fallbacks land at once: a run could then finish between two looks at the file)
    args += ["--no-progress", "--llm", llamacpp_server.base_url, "--concurrency", "1"]
    before = _snapshot(store)
    kept: list[str] = []
    for round_ in range(2):
        # kill after some answers, never after the last
        after = min(len(kept) + (rng.randint(1, 2) if round_ == 0 else 1), len(QUESTIONS) - 1)
        sig = rng.choice(SIGNALS)
        delay = rng.uniform(0.0, 3.0) if after < len(QUESTIONS) - 1 else 0.0
        _wait_until_idle(llamacpp_server.base_url)  # a killed run's answer may still generate
        piece = Piece(args, tmp_path / "eval.log")
        took = _kill_before_the_last(piece, out, after, delay, sig)
        now = _answers(out)
        assert now[: len(kept)] == kept, "a resumed run rewrote earlier answers"
        kept = now
        assert _snapshot(store) == before
        print(f"round {round_}: {sig.name} after {after} answers +{delay:.2f} s: {len(kept)} kept")
        print(f"  all gone in {took:.2f} s")
    assert len(kept) < len(QUESTIONS), "nothing was left to resume"
    _wait_until_idle(llamacpp_server.base_url)
    env = {**os.environ, "PYTHONPATH": str(REPO), **SHORT_ANSWERS}
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", *args], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    final = _answers(out)
    assert final[: len(kept)] == kept
    ids = [json.loads(line)["id"] for line in final]
    assert sorted(ids) == sorted(f"q{i}" for i in range(len(QUESTIONS)))  # none lost, none twice
    assert all(json.loads(line)["answer"] for line in final)


# -- kgqa ui --llm -------------------------------------------------------------------------------
def _serving(url: str) -> bool:
    """Does the UI answer its page (not only hold the port)?"""
    try:
        return httpx.get(url, timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def test_kgqa_ui_killed_at_random_points(
    llamacpp_server: ServerHandle, store: Path, tmp_path: Path, rng: random.Random
) -> None:
    from gradio_client import Client  # type: ignore[import-untyped]

    before = _snapshot(store)
    for round_ in range(2):
        moment = rng.choice(["while starting", "while answering"])
        sig = rng.choice(SIGNALS)
        delay = rng.uniform(0.3, 3.0)
        port = free_port()
        # `kgqa ui --llm` checks the server as it starts: not while a killed round's answer runs
        _wait_until_idle(llamacpp_server.base_url)
        args = ["ui", "--store", str(store), "--port", str(port), "--no-dense"]
        piece = Piece([*args, "--llm", llamacpp_server.base_url], tmp_path / "ui.log")
        if moment == "while starting":
            time.sleep(delay)  # a moment drawn, not a state waited for: whatever it reached
        else:
            url = f"http://127.0.0.1:{port}/"
            up = wait_for(lambda u=url, p=piece: _serving(u) or not p.running(), 600, 0.2)
            assert up is not None and piece.running(), f"kgqa ui not up:\n{piece.log.read_text()}"
            Client(url, verbose=False).submit(QUESTIONS[round_], api_name="/ask")
            time.sleep(delay)  # into the answer: the moment drawn
        assert piece.running(), f"kgqa ui ended before the kill:\n{piece.log.read_text()}"
        took = piece.kill(sig)
        assert _snapshot(store) == before
        print(f"round {round_}: {sig.name} {moment} (+{delay:.2f} s): all gone in {took:.2f} s")


# -- kgqa snippets check -------------------------------------------------------------------------
BUSY_SNIPPET = """
import os, time
for i in range(3):
    if os.fork() == 0:
        if i == 0:
            os.setsid()
        time.sleep(120)
        os._exit(0)
print("running", flush=True)
time.sleep(120)
"""


def test_kgqa_snippets_check_killed_at_random_points(tmp_path: Path, rng: random.Random) -> None:
    snippet = tmp_path / "busy.py"
    snippet.write_text(BUSY_SNIPPET)
    for round_ in range(3):
        moment = rng.choice(["while checking signatures", "while the snippet runs"])
        sig = rng.choice(SIGNALS)
        delay = rng.uniform(0.0, 1.0)
        piece = Piece(["snippets", "check", str(snippet)], tmp_path / "check.log")
        uids = sandbox_uid_block(piece.proc.pid)
        wanted = 1 if moment == "while checking signatures" else 5  # worker; snippet + 3 + worker
        started = wait_for(lambda u=uids, n=wanted: len(uid_processes(u)) >= n, 600, 0.02)
        assert started is not None, piece.log.read_text()
        time.sleep(delay)  # the moment drawn, once the state it names is reached
        took = piece.kill(sig)
        print(f"round {round_}: {sig.name} {moment} (+{delay:.2f} s): all gone in {took:.2f} s")
