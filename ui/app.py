"""The Gradio app: chat with grounded answers, the evidence beside it, a graph explorer, an API.

`build_app(assistant)` returns the Blocks; `launch_app(...)` serves it with safe defaults
(127.0.0.1, optional authentication, no files served from outside the app, no analytics, no
share link).

The first page says what the store holds and what to ask it (`ui.overview`), with example
questions drawn from the store (`ui.examples`) unless the caller gives its own. The chat streams
(`ui.chat`): the graph composer's answer appears at once, then, when the assistant has an LLM,
the LLM's text streams in below it and its verified final answer replaces it; a follow-up is read
against the previous turn ("New chat" starts afresh). The question box counts characters as they
are typed, and a question that cannot be asked gets one message under it. The explorer finds an
entity by a name, an alias or a misspelling (with suggestions) or from the list of all entities.
The endpoint `/ask` (`api_name="ask"`) takes the question text and returns the Answer object as
JSON. Analytics are off through the app itself (`gr.Blocks(analytics_enabled=False)`), not
through the process environment.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import gradio as gr
from gradio.events import api as gradio_api

from qa.api import Assistant
from qa.read.understand import MAX_QUESTION_CHARS
from qa.session import Conversation
from ui.chat import ChatOutputs, Message, chat_turn, request_language
from ui.examples import store_examples
from ui.explorer import entity_names, explore, find_entity
from ui.overview import overview_panel, store_overview
from ui.panels import CSS, Lang, status_line, t

__all__ = ["build_app", "explore", "find_entity", "launch_app"]

#: the question box's character counter, run in the browser on every change
_COUNTER_JS = f"""(text) => {{
  const n = [...(text || "")].length;
  const over = n > {MAX_QUESTION_CHARS};
  return `<div class="kgqa-counter" data-count="${{n}}"><span class="${{over ? "kgqa-over" : ""}}">`
    + `${{n}} / {MAX_QUESTION_CHARS}</span></div>`;
}}"""
_COUNTER_START = (
    f'<div class="kgqa-counter" data-count="0"><span class="">0 / {MAX_QUESTION_CHARS}</span></div>'
)


def _ask_endpoint(assistant: Assistant) -> Any:
    def ask(question: str) -> dict[str, Any]:
        """Answer one question; returns the Answer object (DESIGN.md) as a JSON dict."""
        return assistant.ask(question).model_dump(mode="json")

    return ask


def build_app(
    assistant: Assistant,
    *,
    examples: Sequence[str] | None = None,
    concurrency: int = 32,
) -> gr.Blocks:
    """The Blocks app over one assistant (which is read-only and thread-safe). `examples`
    default to questions drawn from the store (`ui.examples.store_examples`). Each event
    listener runs up to `concurrency` events at once (Gradio's default is one): answers are not
    serialised, and LLM requests are bounded where they are made (`llm.max_concurrency`)."""
    shown = list(examples) if examples is not None else store_examples(assistant)
    overview = store_overview(assistant)
    first: dict[Lang, str] = {lang: overview_panel(overview, shown, lang) for lang in ("zh", "en")}
    names = entity_names(assistant)
    demo: gr.Blocks
    with gr.Blocks(title="kgqa", analytics_enabled=False) as demo:
        gr.HTML(status_line(assistant.status()), elem_id="kgqa-status-line")
        with gr.Tab("Ask 提问", id="ask"):
            with gr.Row():
                with gr.Column(scale=5):
                    chatbot = gr.Chatbot(
                        elem_id="kgqa-chat", height=520, label="kgqa", feedback_options=None
                    )
                    question = gr.Textbox(
                        elem_id="kgqa-question",
                        show_label=False,
                        placeholder="问一个选型问题… / Ask a selection question…",
                        lines=2,
                        max_lines=6,
                    )
                    with gr.Row(equal_height=True):
                        feedback = gr.HTML(elem_id="kgqa-feedback-line")
                        counter = gr.HTML(_COUNTER_START, elem_id="kgqa-counter-line")
                    with gr.Row():
                        send = gr.Button("Ask 提问", variant="primary", elem_id="kgqa-send")
                        clear = gr.Button("New chat 新对话", elem_id="kgqa-clear")
                    if shown:
                        gr.Examples(
                            examples=[[q] for q in shown],
                            inputs=question,
                            label="Examples from this store 示例（来自本知识库）",
                            elem_id="kgqa-examples",
                        )
                with gr.Column(scale=4):
                    panel = gr.HTML(first["en"], elem_id="kgqa-answer")
            picture = gr.HTML(elem_id="kgqa-picture")
        with gr.Tab("Graph explorer 图谱浏览", id="explore"):
            with gr.Row():
                search = gr.Textbox(
                    elem_id="kgqa-search",
                    show_label=False,
                    placeholder="PyTorch, 英伟达, vLLM…",
                    scale=4,
                )
                go = gr.Button("Search 搜索", elem_id="kgqa-search-go", scale=1)
                listed = gr.Dropdown(
                    choices=names,
                    value=None,
                    label=f"{t('entity_list', 'en')} {t('entity_list', 'zh')} ({len(names)})",
                    filterable=True,
                    elem_id="kgqa-entity-list",
                    scale=3,
                )
            suggestions = gr.Radio(
                choices=[],
                label=f"{t('suggestions', 'en')} {t('suggestions', 'zh')}",
                visible=False,
                elem_id="kgqa-suggestions",
            )
            entity_picture = gr.HTML(elem_id="kgqa-entity-picture")
            entity_panel = gr.HTML(elem_id="kgqa-entity-panel")
        state = gr.State(Conversation())

        def turn(
            message: str,
            history: list[Message],
            conversation: Conversation,
            request: gr.Request,
        ) -> Iterator[ChatOutputs]:
            yield from chat_turn(
                assistant, message, history or [], conversation, request_language(request)
            )

        def fresh(request: gr.Request) -> tuple[Any, ...]:
            return [], first[request_language(request)], "", Conversation(), "", ""

        def look_up(query: str) -> tuple[Any, ...]:
            found = explore(assistant, query or "")
            radio = gr.Radio(choices=found.suggestions, value=None, visible=bool(found.suggestions))
            return found.picture, found.panel, radio

        def pick(name: str | None) -> tuple[Any, ...]:
            if not name:
                return gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return (name, *look_up(name))

        outputs = [chatbot, panel, picture, state, question, feedback]
        for trigger in (send.click, question.submit):
            trigger(turn, [question, chatbot, state], outputs, api_visibility="private")
        clear.click(fresh, None, outputs, api_visibility="private")
        question.change(None, [question], [counter], js=_COUNTER_JS, api_visibility="private")

        def welcome(request: gr.Request) -> str:
            return first[request_language(request)]

        demo.load(welcome, None, [panel], api_visibility="private")
        found = [entity_picture, entity_panel, suggestions]
        for trigger in (go.click, search.submit):
            trigger(look_up, [search], found, api_visibility="private")
        for chooser in (suggestions, listed):
            chooser.input(pick, [chooser], [search, *found], api_visibility="private")
        gradio_api(_ask_endpoint(assistant), api_name="ask")
    demo.queue(default_concurrency_limit=concurrency)
    return demo


#: Read by Gradio from the environment when a queue is made (`Blocks.queue`), set by the entry
#: point (`kgqa ui`) where the operator has not: Gradio's queue sums up its finished events with
#: pandas after every event, over up to 10,000 kept events, for a monitoring page this app does not
#: serve (`enable_monitoring=False`): a DataFrame per answer that grows with the events served (5%
#: of the server's time after 600 answers in `benchmarks/bench_ui_concurrency.py`). Keep one
#: event, and never sum it up.
QUEUE_ANALYTICS = {
    "GRADIO_ANALYTICS_MAX_EVENTS": "1",
    "GRADIO_ANALYTICS_CACHE_FREQUENCY": "1000000000",
}


def _absent_fail_fast(module: str) -> None:
    """Make importing a module that is not installed fail at once. Gradio imports matplotlib
    around every event it runs (to switch its backend, when installed): not installed, each
    import searched every path again, 2 of them per answer, ~5% of the server's time."""
    if module not in sys.modules and importlib.util.find_spec(module) is None:
        sys.modules[module] = None  # type: ignore[assignment]  # what `import` reads as absent


def launch_app(
    assistant: Assistant,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    auth: tuple[str, str] | None = None,
    block: bool = True,
    examples: Sequence[str] | None = None,
    concurrency: int = 32,
) -> gr.Blocks:
    """Serve the app. Nothing outside the app is served (`allowed_paths=[]`), no share link.
    `examples`: the example questions (default: drawn from the store). Gradio runs events in a
    pool of `concurrency + 8` threads: every listener's `concurrency` events fit, with room for
    the page's own requests."""
    demo = build_app(assistant, examples=examples, concurrency=concurrency)
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
