"""`kgqa serve-api --workers 2`: a real server on 127.0.0.1 whose worker processes answer what
`Assistant.ask` answers, concurrently; bad requests get a 400; SIGTERM stops every process."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from processes import die_with_parent, process_tree, still_running, wait_for
from store_fixture import SETTINGS, article_store

from qa.api import Assistant

REPO = Path(__file__).resolve().parents[3]
ARTICLE = """深度学习框架选型

初学者：用 PyTorch，先学会搭模型和训练。
边缘设备：用 OpenVINO 部署模型。
大规模训练：用 DeepSpeed。
"""
QUESTIONS = [
    "初学者先学哪个框架？",
    "在边缘设备上部署用什么？",
    "Which tool for large-scale training?",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"选型.txt": ARTICLE})


def _serve(store: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`kgqa serve-api --workers 2` over `store`, once it answers."""
    port = _free_port()
    command = [sys.executable, "-m", "qa.cli", "serve-api", "--store", str(store)]
    command += ["--port", str(port), "--workers", "2", "--llm", "none"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
    url = f"http://127.0.0.1:{port}"
    up = wait_for(lambda: proc.poll() is not None or _healthy(url), 300, step_s=0.5)
    assert up is not None and proc.poll() is None, log.read_text()
    return proc, url


@pytest.fixture(scope="module")
def api(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The server's URL and the pid of the command."""
    proc, url = _serve(store, tmp_path_factory.mktemp("serve-api") / "log")
    yield url, proc.pid
    proc.kill()
    proc.wait()


def _without_latency(answer: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in answer.items() if k != "latency_ms"}


def test_workers_answer_what_the_assistant_answers(api: tuple[str, int], store: Path) -> None:
    url, pid = api
    assert len(process_tree(pid)) >= 3  # the command and its two workers
    assistant = Assistant.open(store, settings=SETTINGS, llm="none")
    expected = [assistant.ask(q).model_dump(mode="json", exclude={"latency_ms"}) for q in QUESTIONS]
    with httpx.Client(base_url=url, timeout=120) as client, ThreadPoolExecutor(8) as pool:
        asked = list(
            pool.map(lambda q: client.post("/ask", json={"question": q, "id": "q"}), QUESTIONS * 4)
        )
    assert [r.status_code for r in asked] == [200] * len(asked)
    answers = [_without_latency(r.json()) for r in asked]
    assert answers == [{**e, "id": "q"} for e in expected * 4]
    assert answers[0]["recommendations"]
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["backend"] == "graph"
    assert health["store"] == str(store) and health["documents"] == 1


def test_bad_requests_get_400(api: tuple[str, int]) -> None:
    url, _pid = api
    assert httpx.post(f"{url}/ask", content=b"not json").status_code == 400
    reply = httpx.post(f"{url}/ask", json={"q": "x"})
    assert reply.status_code == 400 and "question" in reply.json()["error"]


def test_sigterm_stops_every_worker(store: Path, tmp_path: Path) -> None:
    proc, _url = _serve(store, tmp_path / "log")
    tree = process_tree(proc.pid)
    assert len(tree) >= 3
    proc.send_signal(signal.SIGTERM)
    assert wait_for(lambda: not still_running(tree), 60) is not None, still_running(tree)
    assert proc.wait(timeout=10) == 0


def test_a_killed_command_leaves_no_worker(store: Path, tmp_path: Path) -> None:
    proc, _url = _serve(store, tmp_path / "log")
    tree = process_tree(proc.pid)
    assert len(tree) >= 3
    proc.kill()  # SIGKILL: uvicorn's supervisor cannot stop its workers itself
    proc.wait()
    assert wait_for(lambda: not still_running(tree), 60) is not None, still_running(tree)
