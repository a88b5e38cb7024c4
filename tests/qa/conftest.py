"""Fixtures for the LLM tests: real chat servers (started once per session) and real misbehaving
HTTP servers on 127.0.0.1 that fail the way LLM servers fail (down, slow, malformed, cut off)."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from needs import skip_or_fail
from store_fixture import SETTINGS

from kg.errors import LLMError
from qa.llm.prepare import DEFAULT_MODEL, convert_for_vllm, prepare_model
from qa.llm.runtime import find_vllm_python
from qa.llm.serve import ServerHandle, serve

MODELS_DIR = SETTINGS.cache_dir / "models"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "vllm: needs the real vLLM CPU server (minutes to start); -m 'not vllm' skips"
    )


# -- real servers ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def llamacpp_gguf() -> Path:
    """The embedded model's GGUF, for llama.cpp (skips locally, fails on CI, without llama.cpp or
    the model: `tests/needs.py`). Tests that start their own servers take this."""
    if importlib.util.find_spec("llama_cpp") is None:
        skip_or_fail(
            "llamacpp", "llama.cpp not installed: pip install 'llama-cpp-python[server]==0.3.36'"
        )
    try:
        return prepare_model(DEFAULT_MODEL, MODELS_DIR)
    except LLMError as exc:
        skip_or_fail("llamacpp", f"model not available: {exc}")


@pytest.fixture(scope="session")
def llamacpp_server(
    llamacpp_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    """llama.cpp serving the 0.5B model on a free port, shared by the whole session."""
    gguf = llamacpp_gguf
    logs = tmp_path_factory.mktemp("llamacpp-logs")
    with serve(
        "llamacpp",
        str(gguf),
        port=0,
        settings=SETTINGS,
        environ=os.environ,
        alias=DEFAULT_MODEL,
        log_dir=logs,
    ) as handle:
        yield handle


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The interpreter of vLLM's environment (skips locally, fails on CI, when there is none)."""
    python = find_vllm_python(SETTINGS.vllm_python)
    if python is None:
        skip_or_fail(
            "vllm", "vLLM not installed: run scripts/setup_vllm_env.sh (creates .venv-vllm)"
        )
    return python


@pytest.fixture(scope="session")
def vllm_model_dir(vllm_python: str) -> Path:
    """The embedded model converted for vLLM (once; reused from the cache afterwards)."""
    try:
        return convert_for_vllm(prepare_model(DEFAULT_MODEL, MODELS_DIR), python=vllm_python)
    except LLMError as exc:
        skip_or_fail("vllm", f"model not available for vLLM: {exc}")


@pytest.fixture(scope="session")
def vllm_server(
    vllm_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    """vLLM (CPU build here) serving the same model, converted once; minutes to start."""
    logs = tmp_path_factory.mktemp("vllm-logs")
    # Eager (no torch.compile): up in ~2 min instead of ~4-9 on 2 cores, where nothing is cached
    # (CI); the tests check behaviour, benchmarks/bench_llm.py measures the compiled server.
    eager = ["--enforce-eager"] if os.environ.get("KGQA_VLLM_COMPILE", "0") != "1" else []
    with serve(
        "vllm",
        str(vllm_model_dir),
        port=0,
        settings=SETTINGS,
        environ=os.environ,
        alias=DEFAULT_MODEL,
        log_dir=logs,
        extra_args=eager,
    ) as handle:
        print(f"\nvLLM server up in {handle.startup_s:.1f}s")
        yield handle


# -- misbehaving servers -----------------------------------------------------------------------
def completion_body(content: str, model: str = "fake") -> dict[str, Any]:
    """A well-formed non-streamed chat completion."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def sse_event(content: str) -> bytes:
    """One SSE event of a streamed chat completion."""
    event = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
    return f"data: {json.dumps(event)}\n\n".encode()


class MisbehavingServer:
    """A real HTTP server on 127.0.0.1 whose replies follow ``mode``; it records request bodies.

    Modes: ok, slow, malformed, text, flaky (``fail_first`` 500s then ok), always500, bad_request,
    cutoff_stream (close-delimited, no [DONE]), cutoff_chunked (dies inside a chunk),
    stall_stream (one event, then silence), trickle (a byte every 0.2 s).
    """

    def __init__(self, mode: str, *, owned_by: str = "vllm", fail_first: int = 2) -> None:
        self.mode = mode
        self.owned_by = owned_by
        self.fail_first = fail_first
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.paths.append(self.path)
                body = {"object": "list", "data": [{"id": "fake", "owned_by": server.owned_by}]}
                self._send(200, json.dumps(body).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(payload)
                server.paths.append(self.path)
                server.reply(self, payload)

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def reply(self, h: Any, payload: dict[str, Any]) -> None:
        mode, n = self.mode, len(self.requests)
        if (mode == "flaky" and n > self.fail_first) or mode == "ok":
            if payload.get("stream"):
                h.send_response(200)
                h.send_header("Content-Type", "text/event-stream")
                h.end_headers()
                h.close_connection = True
                h.wfile.write(b": keep-alive\n\n" + sse_event("Hel") + sse_event("lo"))
                h.wfile.write(b"data: [DONE]\n\n")
            else:
                h._send(200, json.dumps(completion_body("Hello")).encode())
        elif mode in {"flaky", "always500"}:
            h._send(500, b'{"error": "overloaded"}')
        elif mode == "bad_request":
            h._send(400, b'{"error": "no such model"}')
        elif mode == "slow":
            self._stop.wait(30.0)
            h._send(200, json.dumps(completion_body("late")).encode())
        elif mode == "malformed":
            h._send(200, b'{"choices": [{"message": ')
        elif mode == "text":
            h._send(200, b"<html>502 Bad Gateway</html>", "text/html")
        elif mode == "cutoff_stream":
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.end_headers()
            h.close_connection = True
            h.wfile.write(sse_event("Hel"))
        elif mode == "cutoff_chunked":
            h.protocol_version = "HTTP/1.1"
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            event = sse_event("Hel")
            h.wfile.write(f"{len(event) + 100:x}\r\n".encode() + event)  # promises 100 more
            h.wfile.flush()
            h.close_connection = True
        elif mode == "stall_stream":
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.end_headers()
            h.wfile.write(sse_event("Hel"))
            h.wfile.flush()
            self._stop.wait(30.0)
        elif mode == "trickle":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.end_headers()
            for byte in json.dumps(completion_body("slowly")).encode():
                if self._stop.wait(0.2):
                    return
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
        else:
            raise ValueError(f"unknown mode {mode}")


@pytest.fixture
def misbehaving_server() -> Iterator[Callable[..., MisbehavingServer]]:
    """Factory: ``misbehaving_server("slow")`` starts one; all are closed after the test."""
    started: list[MisbehavingServer] = []

    def start(mode: str, **kwargs: Any) -> MisbehavingServer:
        server = MisbehavingServer(mode, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.fixture
def stopwatch() -> Callable[[], float]:
    """Seconds since the test started (to assert that failures come quickly)."""
    t0 = time.monotonic()
    return lambda: time.monotonic() - t0
