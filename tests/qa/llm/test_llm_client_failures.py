"""ChatModel against real misbehaving HTTP servers on 127.0.0.1: each failure is the right
LLMError, quickly, and nothing hangs.

The slow servers hold a request for 30 s; a bound of 10 s tells a timeout from a wait while leaving
room for a loaded CI machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kg.errors import LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable
from qa.config import LLMKind, LLMSettings
from qa.llm.client import ChatModel
from qa.llm.serve import free_port

Factory = Callable[..., Any]
QUICK_S = 10.0
HELLO = [{"role": "user", "content": "hi"}]


def client(base_url: str, **overrides: Any) -> ChatModel:
    values: dict[str, Any] = {
        "base_url": base_url,
        "model": "fake",
        "timeout_s": 0.5,
        "connect_timeout_s": 0.5,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    values.update(overrides)
    return ChatModel(LLMSettings(**values))


def test_well_behaved_server_chat_and_stream(misbehaving_server: Factory) -> None:
    server = misbehaving_server("ok")
    with client(server.base_url) as chat:
        result = chat.chat(HELLO)
        assert (result.content, result.completion_tokens) == ("Hello", 2)
        assert list(chat.stream(HELLO)) == ["Hel", "lo"]
    # what the server takes at once is asked once, before the first chat
    assert server.paths == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
    assert server.requests[1]["stream"] is True


def test_server_down_is_unavailable_after_retries(stopwatch: Callable[[], float]) -> None:
    with (
        client(f"http://127.0.0.1:{free_port()}/v1") as chat,
        pytest.raises(LLMUnavailable, match="kgqa llm serve"),
    ):
        chat.chat(HELLO)
    assert stopwatch() < QUICK_S
    with client(f"http://127.0.0.1:{free_port()}/v1") as chat:
        assert chat.health() is False


def test_slow_server_times_out(misbehaving_server: Factory, stopwatch: Callable[[], float]) -> None:
    server = misbehaving_server("slow")
    with client(server.base_url) as chat, pytest.raises(LLMTimeout, match="KGQA_LLM_TIMEOUT_S"):
        chat.chat(HELLO)
    assert stopwatch() < QUICK_S
    assert len(server.requests) == 1  # a timeout is not retried


def test_trickling_server_is_cut_at_the_total_timeout(
    misbehaving_server: Factory, stopwatch: Callable[[], float]
) -> None:
    server = misbehaving_server("trickle")  # a byte every 0.2 s never trips the read timeout
    with client(server.base_url, timeout_s=1.0) as chat, pytest.raises(LLMTimeout):
        chat.chat(HELLO)
    assert stopwatch() < QUICK_S


@pytest.mark.parametrize("mode", ["malformed", "text"])
def test_malformed_reply_is_bad_response(misbehaving_server: Factory, mode: str) -> None:
    server = misbehaving_server(mode)
    with client(server.base_url) as chat, pytest.raises(LLMBadResponse, match="not JSON"):
        chat.chat(HELLO)


def test_500_then_success_is_retried(misbehaving_server: Factory) -> None:
    server = misbehaving_server("flaky", fail_first=2)
    with client(server.base_url, max_retries=2) as chat:
        assert chat.chat(HELLO).content == "Hello"
    assert len(server.requests) == 3


def test_persistent_500_gives_up(misbehaving_server: Factory) -> None:
    server = misbehaving_server("always500")
    with client(server.base_url, max_retries=1) as chat, pytest.raises(LLMUnavailable, match="500"):
        chat.chat(HELLO)
    assert len(server.requests) == 2


def test_4xx_is_not_retried(misbehaving_server: Factory) -> None:
    server = misbehaving_server("bad_request")
    with client(server.base_url) as chat, pytest.raises(LLMBadResponse, match="HTTP 400"):
        chat.chat(HELLO)
    assert len(server.requests) == 1


@pytest.mark.parametrize("mode", ["cutoff_stream", "cutoff_chunked"])
def test_cut_off_stream_is_bad_response(
    misbehaving_server: Factory, stopwatch: Callable[[], float], mode: str
) -> None:
    server = misbehaving_server(mode)
    pieces: list[str] = []
    with client(server.base_url) as chat, pytest.raises(LLMBadResponse, match="cut off"):
        pieces.extend(chat.stream(HELLO))
    assert pieces == ["Hel"]
    assert stopwatch() < QUICK_S


def test_stalled_stream_times_out(
    misbehaving_server: Factory, stopwatch: Callable[[], float]
) -> None:
    server = misbehaving_server("stall_stream")
    with client(server.base_url) as chat, pytest.raises(LLMTimeout):
        list(chat.stream(HELLO))
    assert stopwatch() < QUICK_S


@pytest.mark.parametrize(
    ("owned_by", "expected_type"), [("vllm", "json_schema"), ("me", "json_object")]
)
def test_auto_kind_expresses_schema_for_the_server(
    misbehaving_server: Factory, owned_by: str, expected_type: str
) -> None:
    server = misbehaving_server("ok", owned_by=owned_by)
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    with client(server.base_url, kind=LLMKind.AUTO) as chat:
        chat.chat(HELLO, schema=schema)
        assert chat.list_models() == ["fake"]
    sent = server.requests[0]["response_format"]
    assert sent["type"] == expected_type
    assert (sent.get("schema") or sent["json_schema"]["schema"]) == schema


def test_every_error_is_an_llm_error() -> None:
    assert all(issubclass(e, LLMError) for e in (LLMUnavailable, LLMTimeout, LLMBadResponse))


def test_api_key_is_sent_as_bearer(misbehaving_server: Factory) -> None:
    server = misbehaving_server("ok")
    with client(server.base_url, api_key="s3cret") as chat:
        assert chat.health() is True
        assert "s3cret" not in repr(chat.settings)
