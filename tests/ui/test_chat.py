"""Chat turns over a real store: follow-ups are read against the previous turn; a rejected
question changes nothing but the feedback line; the reader's text streams after the graph answer.
The reader here is a scripted `ReaderModel` (no model server is needed to test the streaming
order; the real reader goes through the same seam)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from qa.api import Assistant
from qa.decide import Reading, Verdict
from qa.read.understand import MAX_QUESTION_CHARS
from qa.session import Conversation, Session
from ui.chat import chat_turn
from ui.explorer import explore


class ScriptedLLM:
    """Streams three deltas, then picks PyTorch with its first evidence and a sentence."""

    name = "scripted"

    def stream(self, reading: Reading) -> Iterator[str | Verdict]:
        yield from ("LLM ", "says ", "PyTorch.")
        pick = next(c for c in reading.candidates if c.name == "PyTorch")
        yield Verdict(evidence=[1], pick=pick, sentence="LLM final: PyTorch.", model="scripted")


@pytest.fixture(scope="module")
def assistant(store_dir: Path) -> Assistant:
    return Assistant.open(store_dir, dense=False)


def test_follow_up_is_read_with_the_previous_question(assistant: Assistant) -> None:
    chat = Session(assistant)
    first = "Which framework should I use for research?"
    assert chat.read(first).text == first
    chat.ask(first)
    assert chat.read("and for inference?").text.startswith(first.rstrip("?"))
    chat.reset()
    chat.ask("研究选什么框架？")
    assert chat.read("那推理呢？").text.startswith("研究选什么框架？")
    own = "What should I use on TPU?"
    assert chat.read(own).text == own


def test_chat_turn_without_llm_gives_one_grounded_answer(assistant: Assistant) -> None:
    question = "Which framework should I use for research?"
    steps = list(chat_turn(assistant, question, [], Conversation()))
    messages, panel, picture, state, box, feedback = steps[-1]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "Recommendation" in messages[1]["content"]
    assert "kgqa-recommendation" in panel and "<svg" in picture and "kgqa-legend" in picture
    assert [t.read_as for t in state.turns] == [question] and box == "" and feedback == ""
    follow = list(chat_turn(assistant, "and for inference?", messages, state))[-1]
    assert len(follow[0]) == 4 and "read as:" in follow[0][3]["content"]
    assert len(follow[3].turns) == 2


def test_rejected_question_changes_nothing_but_the_feedback(assistant: Assistant) -> None:
    text = "为什么" * MAX_QUESTION_CHARS
    steps = list(chat_turn(assistant, text, [{"role": "user", "content": "x"}], Conversation()))
    assert len(steps) == 1
    messages, panel, picture, state, box, feedback = steps[0]
    skipped = {"__type__": "update"}
    assert messages == panel == picture == box == skipped and state == Conversation()
    assert "问题太长了" in feedback and feedback.count("kgqa-feedback") == 1
    empty = next(chat_turn(assistant, "  ", [], Conversation(), "zh"))[5]
    assert "请输入一个问题" in empty


def test_llm_text_streams_after_the_graph_answer(store_dir: Path) -> None:
    assistant = Assistant.open(store_dir, dense=False, llm=ScriptedLLM())
    steps = list(chat_turn(assistant, "我想做研究，选哪个框架？", [], Conversation()))
    contents = [[m["content"] for m in step[0]] for step in steps]
    assert contents[0][-1] == "…"  # the question shows at once
    graph_step = next(c for c in contents if len(c) == 3 and "正在补充" in c[2])
    assert "推荐" in graph_step[1]  # the grounded answer is there before any LLM text
    assert any(c[-1].endswith("LLM says ") for c in contents)
    final = contents[-1][-1]
    assert "LLM final: PyTorch." in final and "推荐" in final  # the sentence, then the evidence
    assert final.index("LLM final: PyTorch.") < final.index("推荐")
    assert "llm:scripted" in steps[-1][1]
    assert assistant.status().backend == "llm:scripted"


def test_explorer_finds_english_and_chinese_names(assistant: Assistant) -> None:
    found = explore(assistant, "PyTorch")
    assert "<svg" in found.picture and "PyTorch" in found.panel and "kgqa-quote" in found.panel
    assert "NVIDIA" in explore(assistant, "英伟达").panel
    missed = explore(assistant, "zzz-unknown")
    assert missed.picture == "" and "No entity in the graph matches" in missed.panel
