"""The LLM answerer over the graph's verified draft: the prompt and the draft built from the
model's output (no server), and a real llama.cpp server (0.5B model) on 127.0.0.1, started once per
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

from kg.errors import LLMBadResponse
from qa.api import Assistant
from qa.config import LLMKind, LLMSettings
from qa.llm.answerer import ChatAnswerer, PromptPlan, make_llm, stream_answer_field
from qa.llm.client import ChatModel
from qa.llm.serve import ServerHandle
from qa.render import render_draft
from qa.schema import AbstainReason, Answer, AnswerDraft, FallbackKind, Question


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
    llm = make_llm(server.base_url, assistant.graph, settings)
    assert llm is not None
    return llm


def _key(point: object) -> tuple[str, int]:
    return (point.doc, point.start)  # type: ignore[attr-defined]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_llm_draft_uses_only_the_graph_drafts_evidence(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    question: str,
    grounded: Callable[[Answer], None],
) -> None:
    llm = _answerer(llamacpp_server, assistant)
    parsed = assistant.understand(question)
    draft = assistant.graph_draft(parsed)
    plan = llm.plan(parsed, draft)
    answered = llm.answer(parsed, draft)
    assert answered.backend == f"llm:{llamacpp_server.model}"
    assert answered.abstain == AbstainReason.LLM_DECLINED or answered.prose.strip()
    assert {r.id for r in answered.recommendations} <= set(plan.names.values())
    # every point the model's draft shows is one the graph's verified draft had
    assert {_key(p) for p in answered.points()} <= {_key(p) for p in draft.points()}
    verified, _result = assistant.verifier.verify_draft(answered)
    grounded(render_draft(verified, assistant.graph))


def test_the_llm_answer_streams_and_is_verified(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    grounded: Callable[[Answer], None],
) -> None:
    assistant_with_llm = assistant.with_llm(_answerer(llamacpp_server, assistant))
    events = list(assistant_with_llm.ask_stream(QUESTIONS[0]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "graph" and kinds[-1] == "final"
    final = events[-1].answer
    assert final is not None
    # either the LLM answered (streamed prose, grounded citations) or the graph answer stands
    # with a typed fallback; never nothing
    if final.backend.startswith("llm:"):
        assert "delta" in kinds
        grounded(final)
    else:
        assert final.fallback is not None and final.fallback.kind.is_llm


def test_stream_answer_field_decodes_escapes_across_pieces() -> None:
    pieces = iter(['{"answer": "a\\\\', "nb \\u4e2", 'd", "abstain": false}'])
    items = list(stream_answer_field(pieces))
    assert "".join(i for i in items if isinstance(i, str)) == "a\\nb 中"
    assert items[-1] == {"answer": "a\\nb 中", "abstain": False}


def test_a_server_that_is_down_gives_no_llm() -> None:
    from kg.errors import LLMError
    from kg.graph import KnowledgeGraph

    with pytest.raises(LLMError, match="kgqa llm serve"):
        make_llm("http://127.0.0.1:9/v1", KnowledgeGraph(), LLMSettings())


# -- the compact prompt and the draft built from the model's output (no server needed) -----------
def _offline_answerer(assistant: Assistant) -> ChatAnswerer:  # noqa: F811
    """An answerer whose server is never called: for the prompt and the build step only."""
    chat = ChatModel(LLMSettings(base_url="http://127.0.0.1:9/v1", kind=LLMKind.LLAMACPP))
    return ChatAnswerer(chat, assistant.graph)


class Planned(NamedTuple):
    """A question read and drafted by the graph, and the LLM request planned for it."""

    llm: ChatAnswerer
    parsed: Question
    draft: AnswerDraft
    plan: PromptPlan


def _planned(assistant: Assistant, question: str) -> Planned:  # noqa: F811
    llm = _offline_answerer(assistant)
    parsed = assistant.understand(question)
    draft = assistant.graph_draft(parsed)
    return Planned(llm, parsed, draft, llm.plan(parsed, draft))


def _rendered(assistant: Assistant, draft: AnswerDraft) -> Answer:  # noqa: F811
    return render_draft(assistant.verifier.verify_draft(draft)[0], assistant.graph)


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_prompt_is_compact_and_the_schema_enumerates_the_evidence(
    assistant: Assistant,  # noqa: F811
    question: str,
) -> None:
    llm, parsed, draft, plan = _planned(assistant, question)
    user = plan.messages[-1].content
    # a few hundred tokens at most: a 0.5B model on 2 loaded cores prefills ~10-70 tokens/s
    assert len(plan.messages[0].content) + len(user) < 1000, user
    assert 1 <= len(plan.points) <= llm.max_points
    assert user.splitlines()[-1].endswith(parsed.text)  # the question comes last
    props = plan.schema_["properties"]
    assert list(props) == ["decline", "recommendations", "citations", "answer"]
    assert props["recommendations"]["items"]["enum"] == list(plan.names)
    assert props["citations"]["items"]["enum"] == [f"E{i}" for i in range(1, len(plan.points) + 1)]
    assert props["answer"]["maxLength"] == llm.answer_chars[plan.lang]
    # the draft's picks come first among the candidates, then every other candidate it weighed
    picks = [r.id for r in draft.recommendations]
    weighed = [c.id for c in draft.candidates]
    names = list(plan.names.values())
    assert names[: len(picks)] == picks[: llm.max_candidates]
    assert (
        names[len(picks) : len(picks) + len(weighed)] == weighed[: llm.max_candidates - len(picks)]
    )
    assert all(node in assistant.graph for node in names)
    # the points shown are the draft's, the first of them in its order, and each other
    # candidate's best point
    shown = [_key(p) for p in draft.points()]
    keys = [_key(p) for p in plan.points]
    assert keys[:2] == list(dict.fromkeys(shown))[:2]
    assert set(keys) <= set(shown) | {_key(c.points[0]) for c in draft.candidates}


def test_the_model_reorders_the_picks_and_its_sentence_goes_on_top(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[1])
    assert len(draft.recommendations) >= 2
    second = draft.recommendations[1]
    data = {"decline": False, "recommendations": [second.name], "citations": [], "answer": "好。"}
    built = llm.build(parsed, data, plan, draft)
    assert [r.id for r in built.recommendations] == [second.id]
    assert built.recommendations[0].points == second.points  # the draft's evidence for it
    assert any("over the graph's" in n for n in built.notes)
    answer = _rendered(assistant, built)
    assert answer.answer.startswith("好。\n\n") and answer.backend.startswith("llm:")
    assert answer.recommendations[0].id == second.id


def test_no_pick_keeps_the_drafts_picks_and_cited_facts_come_first(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[0])
    data = {"decline": False, "recommendations": [], "citations": ["E1"], "answer": "Use it."}
    built = llm.build(parsed, data, plan, draft)
    assert [r.id for r in built.recommendations] == [r.id for r in draft.recommendations]
    graph_text = _rendered(assistant, draft).answer
    assert _rendered(assistant, built).answer == "Use it.\n\n" + graph_text


def test_a_pick_of_the_models_own_comes_with_the_points_that_name_it(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[1])
    drafted = {r.id for r in draft.recommendations}
    own = [(name, node) for name, node in plan.names.items() if node not in drafted]
    if not own:
        pytest.fail(f"control: the draft's points name no other candidate: {plan.names}")
    name, node = own[0]
    data = {"decline": False, "recommendations": [name], "citations": [], "answer": "x y z"}
    built = llm.build(parsed, data, plan, draft)
    assert built.recommendations[0].id == node
    assert all(
        any(node in (e.source, e.target) for e in p.edges) or name.casefold() in p.text.casefold()
        for p in built.recommendations[0].points
    )


def test_a_decline_is_a_not_covered_answer(assistant: Assistant) -> None:  # noqa: F811
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[0])
    data = {"decline": True, "recommendations": [], "citations": [], "answer": "-"}
    answer = _rendered(assistant, llm.build(parsed, data, plan, draft))
    assert answer.abstained and not answer.recommendations and not answer.citations
    assert answer.fallback is not None and answer.fallback.kind == FallbackKind.NOT_COVERED


def test_empty_or_echoed_prose_is_refused(assistant: Assistant) -> None:  # noqa: F811
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[0])
    for prose in [" ", f" {parsed.text} "]:
        with pytest.raises(LLMBadResponse):
            llm.build(
                parsed, {"recommendations": [], "citations": [], "answer": prose}, plan, draft
            )


def test_a_sentence_naming_what_no_kept_point_says_is_left_out(
    assistant: Assistant,  # noqa: F811
) -> None:
    llm, parsed, draft, plan = _planned(assistant, QUESTIONS[0])
    said = " ".join(p.text for p in draft.points()).casefold()
    stranger = next(
        e.name
        for e in assistant.graph.entities()
        if len(e.name) >= 4 and e.name.isascii() and e.name.casefold() not in said
    )
    for prose in [f"用 {stranger}。", "它快 37 倍。"]:
        data = {"recommendations": [], "citations": [], "answer": prose}
        answer = _rendered(assistant, llm.build(parsed, data, plan, draft))
        assert prose not in answer.answer
        assert any("sentence was left out" in n for n in answer.notes)
        assert answer.recommendations  # the rest of the answer stands


def test_nothing_citable_means_no_llm_request(assistant: Assistant) -> None:  # noqa: F811
    llm, parsed, draft, _plan = _planned(assistant, QUESTIONS[0])
    empty = draft.model_copy(update={"recommendations": [], "facts": [], "caveats": []})
    with pytest.raises(LLMBadResponse, match="no evidence"):
        llm.plan(parsed, empty)


# -- against the real server: the grammar bounds the output ----------------------------------------
def test_the_output_is_bounded_and_the_sentence_is_verified(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
) -> None:
    llm = _answerer(llamacpp_server, assistant)
    parsed = assistant.understand(QUESTIONS[0])
    draft = assistant.graph_draft(parsed)
    plan = llm.plan(parsed, draft)
    result = llm.chat.chat(plan.messages, schema=plan.schema_, max_tokens=llm.max_tokens)
    assert result.finish_reason == "stop", result.content  # closed by the grammar, not cut
    assert result.completion_tokens is not None and result.completion_tokens <= llm.max_tokens
    data = result.parse_json()
    assert isinstance(data["decline"], bool)
    assert len(data["recommendations"]) <= 2
    assert set(data["recommendations"]) <= set(plan.names)
    assert 0 < len(data["answer"]) <= llm.answer_chars[plan.lang]
    if data["decline"]:
        return
    answer = _rendered(assistant, llm.build(parsed, data, plan, draft))
    prose = " ".join(data["answer"].split())
    # the sentence is shown first, or left out with a note saying why
    assert answer.answer.startswith(prose) or any("left out" in n for n in answer.notes)
