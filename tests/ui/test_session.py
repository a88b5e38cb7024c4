"""A conversation over a user's own store: follow-ups read against the previous turn change the
answer where what changed changes it; rejected questions get one message in their language."""

from __future__ import annotations

from pathlib import Path

import pytest

from qa.api import Assistant
from qa.read.understand import MAX_QUESTION_CHARS
from qa.session import Conversation, Session, rejection_of


@pytest.fixture(scope="module")
def assistant(own_store: Path) -> Assistant:
    return Assistant.open(own_store, dense=False)


def _top(session: Session, text: str) -> str:
    answer = session.ask(text)
    assert not answer.abstained, answer.answer
    return answer.recommendations[0].name


def test_follow_up_replaces_the_hardware_and_changes_the_answer(assistant: Assistant) -> None:
    chat = Session(assistant)
    assert _top(chat, "Which inference engine runs on Ascend NPUs?") == "Quokka Serve"
    assert _top(chat, "What about NVIDIA GPUs?") == "Wombat Infer"
    assert chat.last is not None
    assert chat.last.asked == "What about NVIDIA GPUs?"
    assert chat.last.read_as == "Which inference engine runs on NVIDIA GPUs?"
    assert chat.conversation.turns[0].read_as == "Which inference engine runs on Ascend NPUs?"


def test_chinese_follow_up_replaces_the_hardware(assistant: Assistant) -> None:
    chat = Session(assistant)
    assert _top(chat, "哪个推理引擎能在昇腾 NPU 上运行？") == "Numbat"
    assert _top(chat, "那如果是英伟达显卡呢？") == "Kangaroo"
    assert chat.last is not None and chat.last.read_as == "哪个推理引擎能在英伟达显卡 上运行？"


def test_a_new_constraint_is_added_and_a_question_of_its_own_stands_alone(
    assistant: Assistant,
) -> None:
    chat = Session(assistant)
    chat.ask("Which inference engine runs on NVIDIA GPUs?")
    reading = chat.read("and on Windows?")
    assert reading.follow_up
    assert reading.text == "Which inference engine runs on NVIDIA GPUs? and on Windows?"
    assert [c.after for c in reading.changes] == ["Windows"]
    own = "What license does Quokka Serve use?"
    assert chat.read(own).text == own and not chat.read(own).follow_up


def test_new_chat_starts_afresh(assistant: Assistant) -> None:
    chat = Session(assistant)
    chat.ask("Which inference engine runs on Ascend NPUs?")
    chat.reset()
    assert chat.conversation == Conversation()
    assert chat.read("What about NVIDIA GPUs?").text == "What about NVIDIA GPUs?"


def test_rejected_questions_are_said_once_in_their_language_and_are_not_turns(
    assistant: Assistant,
) -> None:
    chat = Session(assistant)
    empty = chat.check("   ", fallback="zh")
    assert empty is not None and empty.kind == "empty" and empty.message.startswith("请输入")
    long_zh = rejection_of("为什么" * MAX_QUESTION_CHARS)
    assert long_zh is not None and long_zh.kind == "too-long" and long_zh.language == "zh"
    assert f"{MAX_QUESTION_CHARS * 3} 个字符" in long_zh.message
    long_en = rejection_of("why " * MAX_QUESTION_CHARS)
    assert long_en is not None and long_en.language == "en" and "too long" in long_en.message
    answer = chat.ask("why " * MAX_QUESTION_CHARS)
    assert answer.abstained and chat.conversation.turns == []
    chat.ask("Which inference engine runs on Ascend NPUs?")
    assert chat.check("") is not None and chat.check("").language == "en"  # the conversation's
