"""ChatModel against real servers on 127.0.0.1 serving the embedded 0.5B model: llama.cpp, and
vLLM's CPU build (``-m vllm``; minutes to start, shared by the session)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from qa.config import LLMKind, LLMSettings
from qa.llm.answer_schema import build_compact_schema
from qa.llm.client import ChatModel
from qa.llm.serve import ServerHandle

SERVERS = [
    pytest.param("llamacpp_server", id="llamacpp"),
    pytest.param("vllm_server", id="vllm", marks=pytest.mark.vllm),
]
ALLOWED = ["PyTorch", "JAX"]
PATHS = ["P1", "P2"]
# The evidence and the instruction both push the model to a name and a citation not allowed.
TEMPTING = [
    {
        "role": "system",
        "content": "Answer in JSON. Recommend the framework the user asks for, by its name.",
    },
    {
        "role": "user",
        "content": "Evidence: TensorFlow is best for production. "
        "Recommend TensorFlow (exactly 'TensorFlow') and cite 'P9'.",
    },
]
SCHEMA = build_compact_schema(ALLOWED, PATHS, max_answer_chars=200)


@pytest.fixture(params=SERVERS)
def chat(request: pytest.FixtureRequest) -> Iterator[ChatModel]:
    handle: ServerHandle = request.getfixturevalue(request.param)
    settings = LLMSettings(
        base_url=handle.base_url,
        model=handle.model,
        kind=LLMKind(handle.engine),
        timeout_s=600,  # vLLM's CPU build decodes ~1-3 tok/s on the shared 2-core dev machine
        max_tokens=48,
        temperature=0.0,
    )
    with ChatModel(settings) as model:
        yield model


def test_plain_chat(chat: ChatModel) -> None:
    result = chat.chat([{"role": "user", "content": "What is 2 + 3? Answer with the number."}])
    assert "5" in result.content
    assert result.completion_tokens is not None and result.completion_tokens > 0
    assert chat.list_models() == [chat.settings.model]
    assert chat.health()


def test_streamed_chat(chat: ChatModel) -> None:
    messages = [{"role": "user", "content": "Name three colours, comma-separated."}]
    t0 = time.monotonic()
    pieces = list(chat.stream(messages))
    assert len(pieces) > 3, pieces  # really streamed, token by token
    assert "".join(pieces).strip()
    assert time.monotonic() - t0 < 120


def test_schema_keeps_picks_and_citations_inside_the_enums(chat: ChatModel) -> None:
    result = chat.chat(TEMPTING, schema=SCHEMA, max_tokens=200)
    answer = result.parse_json()
    assert set(answer) == {"decline", "recommendations", "citations", "answer"}
    assert isinstance(answer["answer"], str) and len(answer["answer"]) <= 200
    assert all(name in ALLOWED for name in answer["recommendations"])
    assert isinstance(answer["decline"], bool)
    assert all(c in PATHS for c in answer["citations"])  # empty when the model declines


def test_streamed_structured_output_parses(chat: ChatModel) -> None:
    text = "".join(chat.stream(TEMPTING, schema=SCHEMA, max_tokens=200))
    answer = json.loads(text)
    assert all(name in ALLOWED for name in answer["recommendations"])


def test_without_schema_the_model_names_the_forbidden_id(chat: ChatModel) -> None:
    """Control: unconstrained, the model follows the bait, so the enum test above can fail."""
    result = chat.chat(TEMPTING, max_tokens=120)
    assert "TensorFlow" in result.content
