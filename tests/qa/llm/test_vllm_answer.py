"""The reader against the real vLLM server (CPU build, 0.5B model) on 127.0.0.1, started once per
session by tests/qa/conftest.py, over the bundled corpus: the structured output keeps the pick
among the candidates shown, and the citation verifier keeps every citation."""

from __future__ import annotations

import pytest
from store_fixture import assistant, corpus_store  # noqa: F401  (fixtures)

from qa.api import Assistant
from qa.config import LLMKind, LLMSettings
from qa.decide import Reader, Reading
from qa.decide.prompts import reader_messages, reader_schema
from qa.llm.answerer import make_llm
from qa.llm.client import ChatModel
from qa.llm.serve import ServerHandle

pytestmark = pytest.mark.vllm

QUESTIONS = ["我是零基础，先学哪个框架？", "Which engine should I use for LLM serving?"]


def _reader(server: ServerHandle) -> Reader:
    # Generous: vLLM's CPU build decodes ~9 tok/s on 2 idle cores, ~1-3 on the shared dev machine.
    settings = LLMSettings(
        base_url=server.base_url, model=server.model, kind=LLMKind.AUTO, timeout_s=900,
        max_tokens=384,
    )  # fmt: skip
    reader = make_llm(server.base_url, settings)
    assert reader is not None
    assert isinstance(reader.chat, ChatModel)
    assert reader.chat.server_kind() is LLMKind.VLLM  # told apart by GET /v1/models
    return reader


def _reading(assistant: Assistant, question: str) -> Reading:  # noqa: F811
    parsed = assistant.understand(question)
    draft, specific, ranked = assistant._drafted(parsed)
    return assistant.reading(parsed, draft, specific, ranked)


def test_vllm_reads_through_the_schema(
    vllm_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    reader = _reader(vllm_server)
    reading = _reading(assistant, QUESTIONS[1])
    assert reading.evidence and reading.candidates  # the test would be empty otherwise
    schema = reader_schema(reading, "full")
    reply = reader.chat.chat(reader_messages(reading, "full"), schema=schema, max_tokens=384)
    data = reply.parse_json()  # vLLM's structured output: valid JSON, values from the enums
    assert set(data["evidence"]) <= set(range(1, len(reading.evidence) + 1))
    assert data["pick"] in schema["properties"]["pick"]["enum"]
    verdict = reader.verdict(reading, data)
    assert verdict.pick is None or verdict.pick in reading.candidates


def test_vllm_reads_a_line_through_the_schema(
    vllm_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    """The line reader's two turns under vLLM's structured output: a line number of the
    evidence, then a name that line gives."""
    reader = _reader(vllm_server)
    assert reader.mode == "line"  # the default
    reading = _reading(assistant, QUESTIONS[1])
    schema = reader_schema(reading, "line")
    reply = reader.chat.chat(reader_messages(reading, "line"), schema=schema, max_tokens=8)
    line = reply.parse_json()
    assert isinstance(line, int) and 1 <= line <= len(reading.evidence)
    verdict = reader.read(reading)
    assert len(verdict.evidence) == 1 and 1 <= verdict.evidence[0] <= len(reading.evidence)
    assert verdict.pick is None or verdict.pick in reading.candidates


def test_vllm_reader_answers_through_the_assistant(
    vllm_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    with_reader = assistant.with_llm(_reader(vllm_server))
    events = list(with_reader.ask_stream(QUESTIONS[0]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "graph" and kinds[-1] == "final"
    final = events[-1].answer
    assert final is not None
    if final.backend.startswith("llm:"):
        assert all(c.path for c in final.citations)
        _kept, result = assistant.verifier.verify(final)
        assert result.dropped == 0, result.reasons
    else:  # the graph answer stands, with the reason
        assert final.fallback is not None and final.fallback.kind.is_llm, final.notes
