"""What the LLM server takes at once, and that the client sends no more: the real llama.cpp server
(llama-cpp-python's, no parallel slots) runs one request at a time and survives 8 concurrent chats,
answered in turn; a counting HTTP server shows the client's bound for each kind of server."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from processes import wait_for

from qa.config import LLMSettings
from qa.llm.client import ChatModel
from qa.llm.selfcheck import check_chat
from qa.llm.serve import ServerHandle


def test_the_real_server_runs_one_request_at_a_time(
    llamacpp_server: ServerHandle,
) -> None:
    assert llamacpp_server.slots == 1
    assert "export KGQA_LLM_MAX_CONCURRENCY=1" in llamacpp_server.instructions()
    with ChatModel(LLMSettings(base_url=llamacpp_server.base_url, max_concurrency=8)) as chat:
        assert chat.server_concurrency() == 1 and chat.concurrency() == 1


def test_eight_concurrent_chats_are_all_answered_and_the_server_stays_up(
    llamacpp_server: ServerHandle,
) -> None:
    """Straight at the server (it queues them: ``--interrupt_requests false``), and through one
    client that lets one at a time through."""
    questions = [f"What is {i} + {i}? Answer with the number." for i in range(1, 9)]

    def raw(question: str) -> httpx.Response:
        body = {"messages": [{"role": "user", "content": question}], "max_tokens": 12}
        return httpx.post(
            f"{llamacpp_server.base_url}/chat/completions",
            json=body | {"temperature": 0},
            timeout=900,
        )

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(raw, questions))
    assert [r.status_code for r in replies] == [200] * 8
    contents = [r.json()["choices"][0]["message"]["content"] for r in replies]
    assert sum(str(2 * i) in c for i, c in enumerate(contents, start=1)) >= 6, contents

    settings = LLMSettings(
        base_url=llamacpp_server.base_url, model=llamacpp_server.model, timeout_s=900,
        max_tokens=12, max_concurrency=8,
    )  # fmt: skip
    with ChatModel(settings) as chat, ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda q: chat.chat([{"role": "user", "content": q}]), questions))
        assert chat.concurrency() == 1
    assert all(r.content.strip() for r in results)
    assert llamacpp_server.alive()
    check_chat(settings, "llamacpp")  # still answering, and still right


# -- the client sends what the server takes -------------------------------------------------------
class CountingServer:
    """A real HTTP server that answers chats after ``hold_s`` and counts requests in flight."""

    def __init__(self, owned_by: str, props: dict[str, Any] | None = None) -> None:
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/props":
                    self._send(props or {})
                    return
                self._send({"data": [{"id": "m", "owned_by": owned_by}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server.lock:
                    server.in_flight += 1
                    server.most = max(server.most, server.in_flight)
                server.release.wait(30)
                with server.lock:
                    server.in_flight -= 1
                choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}}
                self._send({"model": "m", "choices": [choice]})

            def _send(self, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    ("owned_by", "props", "takes"),
    [("me", None, 1), ("llamacpp", {"total_slots": 3}, 3), ("vllm", None, 6)],
    ids=["llama-cpp-python", "llama-server", "vllm"],
)
def test_the_client_sends_no_more_at_once_than_the_server_takes(
    owned_by: str, props: dict[str, Any] | None, takes: int
) -> None:
    server = CountingServer(owned_by, props)
    settings = LLMSettings(base_url=server.base_url, model="m", max_concurrency=6, timeout_s=60)
    try:
        with ChatModel(settings) as chat, ThreadPoolExecutor(6) as pool:
            futures = [
                pool.submit(chat.chat, [{"role": "user", "content": "hi"}]) for _ in range(6)
            ]
            # the server holds every request until as many as the client lets through are in
            held = wait_for(lambda: server.in_flight >= takes, 30)
            assert held is not None, f"{server.in_flight} in flight, expected {takes}"
            server.release.set()
            assert all(f.result().content == "ok" for f in futures)
            assert chat.concurrency() == takes
        assert server.most == takes
    finally:
        server.close()
