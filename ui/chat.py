"""One chat turn of the app, streamed: the question, the grounded answer, then the LLM's.

`chat_turn` runs a `qa.session.Session` over the browser session's `Conversation`, so a
follow-up is read against the previous turn and the chat says how it was read. A question that
cannot be asked (empty, too long) changes nothing but the feedback line under the question box:
one message, in the question's language (an empty one takes the conversation's, else the
browser's), and the text stays in the box to be edited.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gradio as gr

from kg.errors import QuestionError
from qa.api import Assistant
from qa.schema import Answer, FallbackKind
from qa.session import Conversation, Reading, Session
from ui.graphview import edges_svg
from ui.panels import Lang, answer_panel, feedback_html, lang_of, subgraph_panel, t, text_lang

__all__ = ["ChatOutputs", "Message", "chat_turn", "request_language"]

Message = dict[str, str]
#: chat messages, answer panel, picture, conversation, question box, feedback line
ChatOutputs = tuple[Any, Any, Any, Conversation, Any, str]
PICTURE_EDGE_LIMIT = 24


def request_language(request: gr.Request | None) -> Lang:
    """The browser's language (its Accept-Language header): zh for Chinese, else en."""
    header = request.headers.get("accept-language", "") if request is not None else ""
    return "zh" if header.strip().lower().startswith("zh") else "en"


def _question_lang(assistant: Assistant, text: str) -> Lang:
    try:
        return lang_of(assistant.understand(text).language)
    except QuestionError:
        return text_lang(text)


def _cited_picture(assistant: Assistant, answer: Answer, lang: Lang) -> str:
    edges = [edge for citation in answer.citations for edge in citation.path]
    svg = edges_svg(assistant.graph, edges[:PICTURE_EDGE_LIMIT], lang, title=answer.question)
    return subgraph_panel(svg, lang)


def _reading_note(reading: Reading, lang: Lang) -> str:
    if not reading.follow_up:
        return ""
    return f"_({t('read_as', lang)}: {reading.text})_\n\n"


def chat_turn(
    assistant: Assistant,
    message: str,
    history: list[Message],
    conversation: Conversation,
    fallback: Lang = "en",
) -> Iterator[ChatOutputs]:
    """One chat turn, streamed: (messages, answer panel, picture, conversation, question box,
    feedback). Outputs that do not change are `gr.skip()`."""
    skip = gr.skip()
    session = Session(assistant, conversation)
    rejection = session.check(message, fallback)
    if rejection is not None:
        yield skip, skip, skip, conversation, skip, feedback_html(rejection.message)
        return
    reading = session.read(message)
    lang = _question_lang(assistant, reading.text)
    note = _reading_note(reading, lang)
    asked = [*history, {"role": "user", "content": message}]
    turn = len(conversation.turns) + 1  # lets a page (and the browser tests) tell turns apart
    yield [*asked, {"role": "assistant", "content": "…"}], skip, skip, conversation, "", ""
    graph_text, llm_text, panel, picture = "", "", skip, skip
    for event in session.ask_stream(message, reading=reading):
        if event.kind == "delta":
            llm_text += event.text
        elif event.answer is not None:
            answer = event.answer
            if answer.fallback is not None and answer.fallback.kind is FallbackKind.REJECTED:
                # the assistant refused it after all: say so once, where rejections are said
                yield history, skip, skip, conversation, message, feedback_html(answer.answer)
                return
            if event.kind == "graph":
                graph_text = note + answer.answer
                llm_text = t("llm_pending", lang)
            elif graph_text:  # the LLM's verified final answer after the graph answer
                llm_text = answer.answer
            else:
                graph_text = note + answer.answer
            panel = f'<div data-turn="{turn}">{answer_panel(assistant.graph, answer, lang)}</div>'
            picture = _cited_picture(assistant, answer, lang)
        messages = [*asked, {"role": "assistant", "content": graph_text}]
        if llm_text:
            messages.append({"role": "assistant", "content": f"**LLM**\n\n{llm_text}"})
        yield messages, panel, picture, session.conversation, "", ""
