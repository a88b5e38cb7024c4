"""`serve` with real subprocesses: a server that dies at start-up is reported with its log."""

from __future__ import annotations

import importlib.util
import os
import socket
import time
from pathlib import Path

import pytest
from needs import missing_modules, needs
from store_fixture import SETTINGS

from kg.errors import LLMError, LLMUnavailable
from qa.llm.serve import ServerHandle, free_port, serve


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@needs("llamacpp", missing_modules("llama_cpp"))
def test_dead_server_is_reported_with_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    t0 = time.monotonic()
    with pytest.raises(LLMUnavailable, match="exited with code") as caught:
        serve(
            "llamacpp",
            str(broken),
            port=0,
            settings=SETTINGS,
            environ=os.environ,
            log_dir=tmp_path,
            startup_timeout_s=60,
        )
    assert time.monotonic() - t0 < 60
    assert "log " in str(caught.value) and str(tmp_path) in str(caught.value)
    logs = list(tmp_path.glob("serve-llamacpp-*.log"))
    assert len(logs) == 1 and logs[0].read_text()


def test_missing_engine_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(LLMError, match="pip install 'llama-cpp-python"):
        serve("llamacpp", "x.gguf", port=0, settings=SETTINGS, environ=os.environ)


def test_handle_stops_its_server(llamacpp_server: ServerHandle) -> None:
    assert llamacpp_server.alive()
    assert llamacpp_server.instructions().startswith(
        f"export KGQA_LLM_BASE_URL={llamacpp_server.base_url}"
    )
    assert llamacpp_server.startup_s > 0
