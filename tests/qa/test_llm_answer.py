"""The LLM answerer against a real llama.cpp server (0.5B model) on 127.0.0.1, started once per
session by tests/qa/conftest.py, over the bundled corpus."""

from __future__ import annotations

import pytest
from store_fixture import assistant, corpus_store  # noqa: F401  (fixtures)

from qa.api import Assistant
from qa.llm.serve import ServerHandle
from qa.llm.settings import LLMSettings
from qa.llm_answer import ChatAnswerer, make_llm, stream_answer_field

QUESTIONS = ["我是零基础，先学哪个框架？", "Which engine should I use for LLM serving?"]


def _answerer(server: ServerHandle, assistant: Assistant) -> ChatAnswerer:  # noqa: F811
    settings = LLMSettings(base_url=server.base_url, model=server.model, timeout_s=120)
    llm = make_llm(server.base_url, assistant.graph, settings)
    assert llm is not None
    return llm


@pytest.mark.parametrize("question", QUESTIONS)
def test_llm_answer_cites_only_what_retrieval_produced(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    question: str,
) -> None:
    llm = _answerer(llamacpp_server, assistant)
    parsed = assistant.understand(question)
    draft, bundle = assistant.graph_answer(parsed)
    _messages, _schema, paths, allowed = llm.prompt(parsed, bundle, draft)
    answer = llm.answer(parsed, bundle, draft)
    assert answer.backend == f"llm:{llamacpp_server.model}"
    assert answer.answer.strip()
    assert {r.id for r in answer.recommendations} <= set(allowed)
    path_ids = {tuple((e.source, e.relation, e.target) for e in p.edges) for p in paths}
    for citation in answer.citations:
        assert tuple((e.source, e.relation, e.target) for e in citation.path) in path_ids
    _verified, result = assistant.verifier.verify(answer)
    assert result.dropped == 0, result.reasons


def test_the_llm_answer_streams_and_is_verified(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    assistant_with_llm = Assistant(
        assistant.store, assistant.lexicon, llm=_answerer(llamacpp_server, assistant)
    )
    events = list(assistant_with_llm.ask_stream(QUESTIONS[0]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "graph" and kinds[-1] == "final"
    final = events[-1].answer
    assert final is not None
    # either the LLM answered (streamed prose, verified citations) or the graph answer stands
    # with a note saying why; never nothing
    if final.backend.startswith("llm:"):
        assert "delta" in kinds
        assert all(c.path for c in final.citations)
    else:
        assert any("showing the graph answer" in n for n in final.notes)


def test_stream_answer_field_decodes_escapes_across_pieces() -> None:
    pieces = iter(['{"answer": "a\\\\', "nb \\u4e2", 'd", "abstain": false}'])
    items = list(stream_answer_field(pieces))
    assert "".join(i for i in items if isinstance(i, str)) == "a\\nb 中"
    assert items[-1] == {"answer": "a\\nb 中", "abstain": False}


def test_a_server_that_is_down_gives_no_llm() -> None:
    from kg.errors import LLMError
    from kg.graph import KnowledgeGraph

    with pytest.raises(LLMError, match="kgqa llm serve"):
        make_llm("http://127.0.0.1:9/v1", KnowledgeGraph())
