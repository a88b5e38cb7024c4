"""The served app runs 20 answers at once: 20 `/ask` calls through Gradio's HTTP API meet inside
the answerer (a barrier of 20 that a queue admitting fewer at a time would never fill)."""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from store_fixture import SETTINGS, article_store

from qa.api import Assistant
from qa.schema import Answer

SESSIONS = 20
ARTICLE = "框架选型\n\n初学者：用 PyTorch。\n边缘设备：用 OpenVINO。\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ask(url: str, question: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=120) as client:
        joined = client.post("gradio_api/call/ask", json={"data": [question]})
        joined.raise_for_status()
        event = ""
        with client.stream("GET", f"gradio_api/call/ask/{joined.json()['event_id']}") as stream:
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event in ("complete", "error"):
                    assert event == "complete", line
                    answer: dict[str, Any] = json.loads(line[6:])[0]
                    return answer
    raise AssertionError("the event stream ended without an answer")


def test_twenty_answers_run_at_once(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gradio")
    from ui.app import QUEUE_ANALYTICS, launch_app

    for name, value in QUEUE_ANALYTICS.items():  # as `kgqa ui` serves it
        monkeypatch.setenv(name, value)

    store: Path = article_store(tmp_path_factory, {"选型.txt": ARTICLE})
    assistant = Assistant.open(store, settings=SETTINGS, dense=False, llm="none")
    meeting = threading.Barrier(SESSIONS, timeout=120)
    answering = assistant.ask

    def ask(question: str, **options: Any) -> Answer:
        meeting.wait()  # BrokenBarrierError (a failed call) unless all 20 are in here at once
        return answering(question, **options)

    assistant.ask = ask  # type: ignore[method-assign]
    port = _free_port()
    # examples given: drawn from the store, they would be asked of the answerer (at the barrier)
    demo = launch_app(assistant, port=port, block=False, examples=["初学者先学哪个框架？"])
    try:
        url = f"http://127.0.0.1:{port}/"
        with ThreadPoolExecutor(SESSIONS) as pool:
            answers = list(pool.map(lambda _: _ask(url, "初学者先学哪个框架？"), range(SESSIONS)))
        assert [a["recommendations"][0]["name"] for a in answers] == ["PyTorch"] * SESSIONS
        assert not meeting.broken
    finally:
        demo.close()
