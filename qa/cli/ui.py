"""`kgqa ui`: serve the Gradio app over a store."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kg.errors import KGQAError

if TYPE_CHECKING:
    from qa.api import Assistant
    from qa.config import Settings

__all__ = ["cmd_ui", "parse_auth", "register"]


def parse_auth(value: str | None) -> tuple[str, str] | None:
    """`user:password` as a pair (None for no authentication).

    >>> parse_auth("ada:s3cret:x"), parse_auth(None)
    (('ada', 's3cret:x'), None)
    """
    if not value:
        return None
    user, sep, password = value.partition(":")
    if not sep or not user or not password:
        raise KGQAError("--auth must be USER:PASSWORD (or set KGQA_UI_AUTH=USER:PASSWORD)")
    return user, password


def cmd_ui(args: argparse.Namespace, settings: Settings) -> int:
    """Open the store and serve the app until interrupted."""
    from qa.api import Assistant
    from qa.cli import offline_vllm_environment
    from ui.app import QUEUE_ANALYTICS, launch_app

    configured = settings.ui_auth.get_secret_value() if settings.ui_auth else None
    auth = parse_auth(args.auth or configured)
    if args.host not in ("127.0.0.1", "localhost", "::1") and auth is None:
        print(f"warning: serving on {args.host} without --auth: anyone who can reach it can ask")
    spec = args.llm or settings.reader
    offline_vllm_environment(spec)
    assistant = Assistant.open(settings.store, settings=settings, dense=not args.no_dense, llm=spec)
    if spec != "none":
        print(f"kgqa ui: answering backend {assistant.status().backend}", flush=True)
    assistant = _answering_workers(assistant, args, settings)
    examples = _examples(args.examples, settings)
    status = assistant.status()
    print(
        f"kgqa ui: store {status.store} ({status.documents} documents); examples "
        + ("given" if examples is not None else "drawn from the store"),
        flush=True,
    )
    print(f"kgqa ui: http://{args.host}:{args.port}/ (Ctrl-C stops)", flush=True)
    for name, value in QUEUE_ANALYTICS.items():  # before Gradio makes the queue
        os.environ.setdefault(name, value)
    launch_app(assistant, host=args.host, port=args.port, auth=auth, examples=examples)
    return 0


def _answering_workers(
    assistant: Assistant, args: argparse.Namespace, settings: Settings
) -> Assistant:
    """The assistant the app answers with: its answers computed in `--workers` processes
    (default: one per CPU but the app's own, at most four), or in this process."""
    from qa.workers import AnswerPool, default_workers, worker_spec

    workers = args.workers
    if workers is None:
        affinity = getattr(os, "sched_getaffinity", None)  # Linux: the CPUs this may use
        workers = default_workers(len(affinity(0)) if affinity else os.cpu_count())
    if workers < 1:
        return assistant
    spec = worker_spec(assistant, settings.store, settings, dense=not args.no_dense)
    if spec is None:
        print("kgqa ui: the reader runs in this process: answers are computed here", flush=True)
        return assistant
    print(f"kgqa ui: answers computed in {workers} worker process(es)", flush=True)
    return assistant.answering_in(AnswerPool(spec, workers))


def _examples(path: Path | None, settings: Settings) -> list[str] | None:
    """The example questions the user gave (`--examples FILE`, else `examples` in kgqa.toml);
    None: draw them from the store."""
    if path is not None:
        from ui.examples import read_examples

        return read_examples(path)
    return list(settings.examples) or None


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `kgqa ui` to the command line."""
    ui = sub.add_parser("ui", help="serve the Gradio chat app")
    with_store(ui)
    ui.add_argument(
        "--lexicon", type=Path, action="append", help="extra alias lexicon file (as ingest)"
    )
    ui.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=7860)
    ui.add_argument(
        "--llm",
        default=None,
        help="who reads and decides: auto (default: a configured server, else the embedded "
        "model) | none (the graph alone) | URL of an OpenAI-compatible server",
    )
    ui.add_argument(
        "--auth", default=None, help="USER:PASSWORD to require a login (or env KGQA_UI_AUTH)"
    )
    ui.add_argument(
        "--no-dense", action="store_true", help="skip the embedding model (lexical retrieval only)"
    )
    ui.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes that compute answers, each over its own copy of the store (default: one "
        "per CPU but the app's own, at most 4; 0: in the app's process)",
    )
    ui.add_argument(
        "--examples",
        type=Path,
        default=None,
        help="example questions to offer: one per line, or JSON Lines with a question field "
        "(default: `examples` in kgqa.toml, else questions drawn from the store)",
    )
    ui.set_defaults(func=cmd_ui)
