"""`kgqa eval --llm URL` and the server behind it: as many questions at once as the server takes,
a broken engine stops the run before it answers, and a server that crashes mid-run fails the run
at the top of its summary, writes none of the answers it took down, and the rerun resumes.

The server is `tests/qa/llm/standin_llm.py`, a real HTTP server process that can die of a real
segmentation fault at a chosen request (as a llama.cpp built for another CPU does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from processes import die_with_parent
from store_fixture import SETTINGS, article_store

from qa.config import LLMSettings
from qa.eval.run import eval_concurrency, eval_llm, llm_concurrency, open_assistant

ROOT = Path(__file__).resolve().parents[3]
STANDIN = ROOT / "tests" / "qa" / "llm" / "standin_llm.py"
ALIAS = "standin"
GUIDE = """# 部署选型

| 引擎 | 特点 |
|---|---|
| TensorRT | NVIDIA GPU 上延迟最低 |
| OpenVINO | Intel CPU 与边缘设备 |
"""
QUESTION = "在 NVIDIA GPU 上延迟最低的推理引擎是什么？"

Start = Callable[..., str]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"guide.md": GUIDE})


@pytest.fixture()
def standin() -> Iterator[Start]:
    """Start a stand-in server (mode, owned_by, crash_at, port); returns its base URL."""
    started: list[subprocess.Popen[str]] = []

    def start(mode: str, owned_by: str = "me", crash_at: int = 0, port: int = 0) -> str:
        argv = [sys.executable, str(STANDIN), str(port), ALIAS, owned_by, mode, str(crash_at)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("port "), line
        return f"http://127.0.0.1:{line.split()[1]}/v1"

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _eval(store: Path, tmp_path: Path, url: str, n: int) -> subprocess.CompletedProcess[str]:
    questions = tmp_path / "q.jsonl"
    lines = [
        json.dumps({"id": f"q{i}", "question": QUESTION}, ensure_ascii=False) for i in range(n)
    ]
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = [sys.executable, "-m", "qa.cli", "eval", str(questions), "--out"]
    argv += [str(tmp_path / "out.jsonl"), "--store", str(store), "--no-dense", "--no-progress"]
    argv += ["--llm", url]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KGQA_LLM_MODEL": ALIAS}
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _ids(out: Path) -> list[str]:
    return [json.loads(line)["id"] for line in out.read_text("utf-8").splitlines()]


def test_a_server_that_crashes_mid_run_fails_the_run_at_the_top(
    store: Path, tmp_path: Path, standin: Start
) -> None:
    # one request at a time ("me": llama-cpp-python): the check, q0, then q1 kills the server
    url = standin("good", crash_at=3)
    done = _eval(store, tmp_path, url, 6)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"RUN FAILED: the LLM server at {url} stopped answering during the run")
    assert "rerun the same command to resume" in first
    assert "not asked, the LLM server being lost: " in done.stderr
    assert _ids(tmp_path / "out.jsonl") == ["q0"]  # what the crash took down is not written
    kept = (tmp_path / "out.jsonl").read_text("utf-8")

    standin("good", port=int(url.rsplit(":", 1)[1].split("/")[0]))  # the server is back
    again = _eval(store, tmp_path, url, 6)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        "RUN FAILED" not in again.stdout and "5 answered, 1 already in the results" in again.stdout
    )
    resumed = (tmp_path / "out.jsonl").read_text("utf-8")
    assert resumed.startswith(kept)
    assert sorted(_ids(tmp_path / "out.jsonl")) == [f"q{i}" for i in range(6)]
    # with a reader, the graph alone answers the same questions too, side by side
    assert sorted(_ids(tmp_path / "out.graph.jsonl")) == [f"q{i}" for i in range(6)]
    assert "graph acc" in again.stdout


def test_a_broken_engine_stops_the_run_before_it_answers(
    store: Path, tmp_path: Path, standin: Start
) -> None:
    done = _eval(store, tmp_path, standin("garbage"), 3)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "RUN FAILED before answering: the llama.cpp engine is broken" in done.stderr
    assert "CPU flags (/proc/cpuinfo)" in done.stderr and "scripts/setup.sh" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(("owned_by", "takes"), [("me", 1), ("vllm", 8)])
def test_eval_answers_as_many_at_once_as_the_server_takes(
    store: Path, standin: Start, owned_by: str, takes: int
) -> None:
    url = standin("good", owned_by=owned_by)
    llm = LLMSettings(base_url=url, model=ALIAS, max_concurrency=8)
    settings = SETTINGS.model_copy(update={"store": store, "llm": llm})
    assistant, _ = open_assistant(settings, dense=False)
    answerer, note = eval_llm(url, assistant, settings)
    assert answerer is not None, note
    assert eval_concurrency(None, llm_concurrency(answerer, settings)) == takes
