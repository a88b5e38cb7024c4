"""The Gradio app: chat with grounded answers, the evidence beside it, a graph explorer, an API.

`build_app(assistant)` returns the Blocks; `launch_app(...)` serves it with safe defaults
(127.0.0.1, optional authentication, no files served from outside the app, no analytics, no
share link).

The chat streams: the graph composer's answer appears at once, then, when the assistant has an LLM,
the LLM's text streams in below it and its verified final answer replaces it. The endpoint
`/ask` (`api_name="ask"`) takes the question text and returns the Answer object as JSON.
Analytics are off through the app itself (`gr.Blocks(analytics_enabled=False)`), not through the
process environment.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import gradio as gr
from gradio.events import api as gradio_api

from kg.errors import QuestionError
from qa.api import Assistant
from qa.schema import Answer, PathEdge
from ui.graphview import edges_svg
from ui.panels import (
    CSS,
    Lang,
    answer_panel,
    explorer_panel,
    lang_of,
    not_found_panel,
    status_line,
    subgraph_panel,
    t,
    text_lang,
)
from ui.session import ChatState, resolve_question

__all__ = ["DEFAULT_EXAMPLES", "build_app", "explore", "find_entity", "launch_app"]

DEFAULT_EXAMPLES: tuple[str, ...] = (
    "我想复现一篇顶会论文的代码，应该选哪个深度学习框架？",
    "要在 NVIDIA GPU 上做低延迟推理部署，用什么推理引擎？",
    "Which framework should I learn first as a beginner?",
    "What should I use to train a model that does not fit on one GPU?",
)
_EXPLORER_EDGE_LIMIT = 40
_PICTURE_EDGE_LIMIT = 24

Message = dict[str, str]
ChatOutputs = tuple[list[Message], str, str, ChatState, str]


def find_entity(assistant: Assistant, query: str) -> str | None:
    """The node id a search names: an id, a name or alias (zh or en), or a name containing it."""
    graph = assistant.graph
    query = query.strip()
    if not query:
        return None
    entry = assistant.lexicon.lookup(query)
    surfaces = [query, *([entry.name, *entry.aliases] if entry is not None else [])]
    for surface in surfaces:
        node = surface if surface in graph else graph.find(surface)
        if node is not None:
            return node
    if entry is not None and entry.id in graph:
        return entry.id
    # a lexicon entity absent from the graph (an organisation) still finds the nodes named after it
    for surface in surfaces:
        folded = surface.casefold()
        hits = sorted(
            (len(e.name), e.id)
            for e in graph.entities()
            if folded in e.name.casefold() or any(folded in a.casefold() for a in e.aliases)
        )
        if hits:
            return hits[0][1]
    return None


def _edges_of(assistant: Assistant, node: str) -> list[PathEdge]:
    graph = assistant.graph
    relations = graph.out_relations(node) + graph.in_relations(node)
    return [
        PathEdge(source=r.source, relation=r.relation.value, target=r.target, evidence=r.evidence)
        for r in relations
    ]


def explore(assistant: Assistant, query: str) -> tuple[str, str]:
    """The explorer's picture and evidence list for a search (zh or en)."""
    lang = text_lang(query)
    node = find_entity(assistant, query)
    if node is None:
        return "", not_found_panel(query, lang)
    edges = _edges_of(assistant, node)[:_EXPLORER_EDGE_LIMIT]
    name = assistant.graph.entity(node).name
    svg = edges_svg(assistant.graph, edges[:_PICTURE_EDGE_LIMIT], lang, focus=node, title=name)
    return subgraph_panel(svg, lang, "neighbourhood"), explorer_panel(
        assistant.graph, node, edges, lang
    )


def _question_lang(assistant: Assistant, text: str) -> Lang:
    try:
        return lang_of(assistant.understand(text).language)
    except QuestionError:
        return text_lang(text)


def _cited_picture(assistant: Assistant, answer: Answer, lang: Lang) -> str:
    edges = [edge for citation in answer.citations for edge in citation.path]
    svg = edges_svg(assistant.graph, edges[:_PICTURE_EDGE_LIMIT], lang, title=answer.question)
    return subgraph_panel(svg, lang)


def chat_turn(
    assistant: Assistant, message: str, history: list[Message], state: ChatState
) -> Iterator[ChatOutputs]:
    """One chat turn, streamed: (messages, answer panel, subgraph panel, state, textbox)."""
    if not message or not message.strip():
        yield history, "", "", state, ""
        return
    asked = resolve_question(assistant, message, state.previous)
    lang = _question_lang(assistant, asked)
    reading = (
        "" if asked == message else f"_({'理解为' if lang == 'zh' else 'read as'}: {asked})_\n\n"
    )
    history = [*history, {"role": "user", "content": message}]
    state = ChatState(questions=[*state.questions, asked])
    yield [*history, {"role": "assistant", "content": "…"}], "", "", state, ""
    graph_text, llm_text, panel, picture = "", "", "", ""
    for event in assistant.ask_stream(asked):
        if event.kind == "delta":
            llm_text += event.text
        elif event.answer is not None:
            answer = event.answer
            if event.kind == "graph":
                graph_text = reading + answer.answer
                llm_text = t("llm_pending", lang)
            elif graph_text:  # the LLM's verified final answer after the graph answer
                llm_text = answer.answer
            else:
                graph_text = reading + answer.answer
            turn = len(state.questions)  # lets a page (and the browser tests) tell turns apart
            panel = f'<div data-turn="{turn}">{answer_panel(assistant.graph, answer, lang)}</div>'
            picture = _cited_picture(assistant, answer, lang)
        messages = [*history, {"role": "assistant", "content": graph_text}]
        if llm_text:
            messages.append({"role": "assistant", "content": f"**LLM**\n\n{llm_text}"})
        yield messages, panel, picture, state, ""


def _ask_endpoint(assistant: Assistant) -> Any:
    def ask(question: str) -> dict[str, Any]:
        """Answer one question; returns the Answer object (DESIGN.md) as a JSON dict."""
        return assistant.ask(question).model_dump(mode="json")

    return ask


def build_app(
    assistant: Assistant,
    *,
    examples: Sequence[str] = DEFAULT_EXAMPLES,
    concurrency: int = 32,
) -> gr.Blocks:
    """The Blocks app over one assistant (which is read-only and thread-safe). Each event
    listener runs up to `concurrency` events at once (Gradio's default is one): answers are not
    serialised, and LLM requests are bounded where they are made (`llm.max_concurrency`)."""
    demo: gr.Blocks
    with gr.Blocks(title="kgqa", analytics_enabled=False) as demo:
        gr.HTML(status_line(assistant.status()), elem_id="kgqa-status-line")
        with gr.Tab("Ask 提问", id="ask"), gr.Row():
            with gr.Column(scale=5):
                chatbot = gr.Chatbot(
                    elem_id="kgqa-chat", height=520, label="kgqa", feedback_options=None
                )
                question = gr.Textbox(
                    elem_id="kgqa-question",
                    show_label=False,
                    placeholder="问一个选型问题… / Ask a selection question…",
                    lines=1,
                )
                with gr.Row():
                    send = gr.Button("Ask 提问", variant="primary", elem_id="kgqa-send")
                    clear = gr.Button("New chat 新对话", elem_id="kgqa-clear")
                gr.Examples(
                    examples=[[q] for q in examples], inputs=question, label="Examples 示例"
                )
            with gr.Column(scale=4):
                panel = gr.HTML(elem_id="kgqa-answer")
                picture = gr.HTML(elem_id="kgqa-picture")
        with gr.Tab("Graph explorer 图谱浏览", id="explore"):
            with gr.Row():
                search = gr.Textbox(
                    elem_id="kgqa-search", show_label=False, placeholder="PyTorch, 英伟达, vLLM…"
                )
                go = gr.Button("Search 搜索", elem_id="kgqa-search-go")
            entity_picture = gr.HTML(elem_id="kgqa-entity-picture")
            entity_panel = gr.HTML(elem_id="kgqa-entity-panel")
        state = gr.State(ChatState())

        def turn(message: str, history: list[Message], session: ChatState) -> Iterator[ChatOutputs]:
            yield from chat_turn(assistant, message, history or [], session)

        outputs = [chatbot, panel, picture, state, question]
        for trigger in (send.click, question.submit):
            trigger(turn, [question, chatbot, state], outputs, api_visibility="private")
        clear.click(lambda: ([], "", "", ChatState(), ""), None, outputs, api_visibility="private")
        for trigger in (go.click, search.submit):
            trigger(
                lambda q: explore(assistant, q),
                [search],
                [entity_picture, entity_panel],
                api_visibility="private",
            )
        gradio_api(_ask_endpoint(assistant), api_name="ask")
    _without_queue_analytics()
    demo.queue(default_concurrency_limit=concurrency)
    return demo


#: Read by Gradio when a queue is made (`Blocks.queue`); an operator's own values win.
_QUEUE_ANALYTICS = {
    "GRADIO_ANALYTICS_MAX_EVENTS": "1",
    "GRADIO_ANALYTICS_CACHE_FREQUENCY": "1000000000",
}


def _absent_fail_fast(module: str) -> None:
    """Make importing a module that is not installed fail at once. Gradio imports matplotlib
    around every event it runs (to switch its backend, when installed): not installed, each
    import searched every path again, 2 of them per answer, ~5% of the server's time."""
    if module not in sys.modules and importlib.util.find_spec(module) is None:
        sys.modules[module] = None  # type: ignore[assignment]  # what `import` reads as absent


def _without_queue_analytics() -> None:
    """Gradio's queue sums up its finished events with pandas after every event, over up to
    10,000 kept events, for a monitoring page this app does not serve (`enable_monitoring=False`):
    a DataFrame per answer that grows with the events served (5% of the server's time after 600
    answers in `benchmarks/bench_ui_concurrency.py`). Keep one event, and never sum it up."""
    for name, value in _QUEUE_ANALYTICS.items():
        os.environ.setdefault(name, value)


def launch_app(
    assistant: Assistant,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    auth: tuple[str, str] | None = None,
    block: bool = True,
    concurrency: int = 32,
) -> gr.Blocks:
    """Serve the app. Nothing outside the app is served (`allowed_paths=[]`), no share link.
    Gradio runs events in a pool of `concurrency + 8` threads: every listener's `concurrency`
    events fit, with room for the page's own requests."""
    demo = build_app(assistant, concurrency=concurrency)
    _absent_fail_fast("matplotlib")
    demo.launch(
        server_name=host,
        server_port=port,
        auth=auth,
        share=False,
        allowed_paths=[],
        footer_links=["api"],
        enable_monitoring=False,
        mcp_server=False,
        ssr_mode=False,
        run_history=False,
        show_error=False,
        quiet=True,
        css=CSS,
        prevent_thread_lock=not block,
        max_threads=concurrency + 8,
    )
    return demo
