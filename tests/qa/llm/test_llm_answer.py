"""The LLM answerer against a real llama.cpp server (0.5B model) on 127.0.0.1, started once per
session by tests/qa/conftest.py, over the bundled corpus."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest
from grounding import Edges, assert_grounded
from store_fixture import (  # fixtures
    assistant,  # noqa: F401
    corpus_edges,  # noqa: F401
    corpus_store,  # noqa: F401
    documents_on_disk,  # noqa: F401
)

from ingest.text import Tokenizer
from kg.errors import LLMBadResponse
from qa.api import Assistant
from qa.config import LLMKind, LLMSettings
from qa.llm.answerer import ChatAnswerer, PromptPlan, make_llm, stream_answer_field
from qa.llm.client import ChatModel
from qa.llm.serve import ServerHandle
from qa.schema import Answer, EvidenceBundle, Question


@pytest.fixture
def grounded(
    corpus_edges: Edges,  # noqa: F811
    documents_on_disk: dict[str, str],  # noqa: F811
) -> Callable[[Answer], None]:
    """Cited edges are in the graph export, quotes verbatim in the documents on disk."""
    return lambda answer: assert_grounded(answer, corpus_edges, documents_on_disk)


QUESTIONS = ["我是零基础，先学哪个框架？", "Which engine should I use for LLM serving?"]


def _answerer(server: ServerHandle, assistant: Assistant) -> ChatAnswerer:  # noqa: F811
    # one request takes 15-60 s on 2 cores shared with other work (prefill 7-70 tokens/s)
    settings = LLMSettings(base_url=server.base_url, model=server.model, timeout_s=300)
    llm = make_llm(server.base_url, assistant.graph, assistant.tokenizer, settings)
    assert llm is not None
    return llm


@pytest.mark.parametrize("question", QUESTIONS)
def test_llm_answer_cites_only_what_retrieval_produced(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    question: str,
    grounded: Callable[[Answer], None],
) -> None:
    llm = _answerer(llamacpp_server, assistant)
    parsed = assistant.understand(question)
    draft, bundle = assistant.graph_answer(parsed)
    _messages, _schema, paths, allowed = llm.prompt(parsed, bundle, draft)
    answer = llm.answer(parsed, bundle, draft)
    assert answer.backend == f"llm:{llamacpp_server.model}"
    assert answer.answer.strip()
    assert {r.id for r in answer.recommendations} <= set(allowed)
    # the numbered paths shown to the model, and the draft's verified evidence for kept picks
    shown = [p.edges for p in paths] + [c.path for c in draft.citations]
    path_ids = {tuple((e.source, e.relation, e.target) for e in edges) for edges in shown}
    for citation in answer.citations:
        assert tuple((e.source, e.relation, e.target) for e in citation.path) in path_ids
    grounded(answer)


def test_the_llm_answer_streams_and_is_verified(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    assistant_with_llm = assistant.with_llm(_answerer(llamacpp_server, assistant))
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
        make_llm("http://127.0.0.1:9/v1", KnowledgeGraph(), Tokenizer(), LLMSettings())


# -- the compact prompt and the Answer built from the model's output (no server needed) ----------
def _offline_answerer(assistant: Assistant) -> ChatAnswerer:  # noqa: F811
    """An answerer whose server is never called: for the prompt and the build step only."""
    chat = ChatModel(LLMSettings(base_url="http://127.0.0.1:9/v1", kind=LLMKind.LLAMACPP))
    return ChatAnswerer(chat, assistant.graph, assistant.tokenizer)


class Planned(NamedTuple):
    """A question read and answered by the graph, and the LLM request planned for it."""

    llm: ChatAnswerer
    parsed: Question
    draft: Answer
    bundle: EvidenceBundle
    plan: PromptPlan


def _planned(assistant: Assistant, question: str) -> Planned:  # noqa: F811
    llm = _offline_answerer(assistant)
    parsed = assistant.understand(question)
    draft, bundle = assistant.graph_answer(parsed)
    return Planned(llm, parsed, draft, bundle, llm.plan(parsed, bundle, draft))


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_prompt_is_compact_and_the_schema_enumerates_the_evidence(
    assistant: Assistant,  # noqa: F811
    question: str,
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, question)
    user = plan.messages[-1].content
    # a few hundred tokens at most: a 0.5B model on 2 loaded cores prefills ~10-70 tokens/s
    assert len(plan.messages[0].content) + len(user) < 900, user
    assert 1 <= len(plan.paths) <= llm.max_paths and len(plan.sentences) <= llm.max_sentences
    assert user.splitlines()[-1].endswith(parsed.text)  # the question comes last
    props = plan.schema_["properties"]
    # the draft recommends: the model first confirms it or not, then picks among its names
    assert list(props) == ["draft_ok", "recommendations", "citations", "answer"]
    assert props["recommendations"]["items"]["enum"] == list(plan.names)
    assert list(plan.names.values()) == [r.id for r in draft.recommendations][: llm.max_candidates]
    cites = props["citations"]["items"]["enum"]
    assert cites == [f"P{i}" for i in range(1, len(plan.paths) + 1)] + [
        f"S{i}" for i in range(1, len(plan.sentences) + 1)
    ]
    assert props["answer"]["maxLength"] == llm.answer_chars[plan.lang]
    assert draft.recommendations[0].name in plan.names  # the draft's pick is a candidate
    assert all(node in assistant.graph for node in plan.names.values())


def test_build_renders_the_cited_evidence_after_the_model_sentence(
    assistant: Assistant,  # noqa: F811,
    grounded: Callable[[Answer], None],
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, QUESTIONS[1])
    name = list(plan.names)[1]  # not the draft's top pick: the model revises the draft
    data = {
        "recommendations": [name, "NotACandidate", name],
        "citations": ["P1", "S1", "P99", "X1"],
        "answer": "  Use it,\n because the sources say so.  ",
    }
    answer = llm.build(parsed, data, plan, draft)
    assert answer.backend.startswith("llm:") and not answer.abstained
    assert [r.id for r in answer.recommendations] == [plan.names[name]]
    text = answer.answer
    assert text.startswith("Use it, because the sources say so.\n\nSources:")
    first = plan.paths[0]
    assert answer.citations[0].path == first.edges
    assert first.edges[0].evidence[0].quote in text  # the whole quote, not the prompt's clip
    assert " ".join(plan.sentences[0][0].split()) in text  # verbatim, whitespace folded
    grounded(answer)


def test_the_same_top_pick_confirms_the_draft_and_keeps_its_evidence(
    assistant: Assistant,  # noqa: F811,
    grounded: Callable[[Answer], None],
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, QUESTIONS[1])
    top = draft.recommendations[0]
    data = {"draft_ok": False, "recommendations": [top.name], "citations": [], "answer": "Use it."}
    answer = llm.build(parsed, data, plan, draft)
    assert [r.id for r in answer.recommendations] == [top.id]  # the model's own pick list
    assert answer.answer == "Use it.\n\n" + draft.answer  # its prose, then the graph answer
    assert all(c.path in [a.path for a in answer.citations] for c in draft.citations)
    grounded(answer)


def test_a_draft_without_picks_keeps_its_facts_and_the_model_picks_nothing(
    assistant: Assistant,  # noqa: F811,
    grounded: Callable[[Answer], None],
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, "TensorFlow 现在的主要用户是哪些人？")
    assert not draft.recommendations and draft.citations  # a fact question with cited facts
    data = {"recommendations": list(plan.names)[:1], "citations": [], "answer": "No: use DDP."}
    answer = llm.build(parsed, data, plan, draft)
    assert answer.recommendations == []
    assert answer.answer == "No: use DDP.\n\n" + draft.answer
    grounded(answer)


def test_build_rejects_an_empty_answer_and_cites_the_evidence_of_an_uncited_pick(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, QUESTIONS[0])
    with pytest.raises(LLMBadResponse, match="empty"):
        llm.build(parsed, {"recommendations": [], "citations": [], "answer": " "}, plan, draft)
    name = draft.recommendations[0].name
    answer = llm.build(
        parsed, {"recommendations": [name], "citations": [], "answer": "x"}, plan, draft
    )
    node = plan.names[name]
    assert answer.citations and all(
        any(node in (e.source, e.target) for e in c.path) for c in answer.citations
    )
    drafted = [c.path for c in draft.citations]
    assert all(c.path in drafted for c in answer.citations)  # the draft's evidence for the pick


def test_a_confirmed_draft_keeps_its_picks_and_an_echo_is_refused(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, _bundle, plan = _planned(assistant, QUESTIONS[0])
    last = list(plan.names)[-1]
    data = {"draft_ok": True, "recommendations": [last], "citations": ["P1"], "answer": "好。"}
    answer = llm.build(parsed, data, plan, draft)
    assert [r.id for r in answer.recommendations] == [r.id for r in draft.recommendations]
    # confirming the draft cites all its evidence, once each, and shows the graph answer whole
    assert len(answer.citations) == len(draft.citations)
    assert answer.answer == "好。\n\n" + draft.answer
    revised = llm.build(parsed, {**data, "draft_ok": False}, plan, draft)
    assert [r.name for r in revised.recommendations] == [last]
    with pytest.raises(LLMBadResponse, match="echoed the question"):
        llm.build(parsed, {**data, "answer": f" {parsed.text} "}, plan, draft)


def test_nothing_citable_means_no_llm_request(assistant: Assistant) -> None:  # noqa: F811
    llm = _offline_answerer(assistant)
    parsed = assistant.understand(QUESTIONS[1])
    draft, bundle = assistant.graph_answer(parsed)
    assert llm.plan(parsed, bundle, draft).paths  # control: this question has evidence
    empty = EvidenceBundle(question=parsed.text, language=parsed.language, kind=parsed.kind)
    uncited = draft.model_copy(update={"citations": []})
    with pytest.raises(LLMBadResponse, match="nothing citable"):
        llm.plan(parsed, empty, uncited)


# -- against the real server: the grammar bounds the output ----------------------------------------
def test_the_output_is_bounded_and_every_cited_quote_is_in_the_answer(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    llm = _answerer(llamacpp_server, assistant)
    parsed = assistant.understand(QUESTIONS[0])
    draft, bundle = assistant.graph_answer(parsed)
    plan = llm.plan(parsed, bundle, draft)
    result = llm.chat.chat(plan.messages, schema=plan.schema_, max_tokens=llm.max_tokens)
    assert result.finish_reason == "stop", result.content  # closed by the grammar, not cut
    assert result.completion_tokens is not None and result.completion_tokens <= llm.max_tokens
    data = result.parse_json()
    assert isinstance(data["draft_ok"], bool)
    assert len(data["recommendations"]) <= 2
    assert set(data["recommendations"]) <= set(plan.names)
    assert 0 < len(data["answer"]) <= llm.answer_chars[plan.lang]
    answer = llm.build(parsed, data, plan, draft)
    assert answer.answer.startswith(" ".join(data["answer"].split()))
    for citation in answer.citations:
        assert citation.path[0].evidence[0].quote in answer.answer
