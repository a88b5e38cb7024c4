"""`kgqa ask "QUESTION"`: one answer, as readable text or (`--json`) the Answer object."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qa.config import LLMSettings, Settings
    from qa.schema import Answer

__all__ = ["cmd_ask", "format_answer", "register"]


def format_answer(answer: Answer, store: str | None = None) -> str:
    """A readable answer: the Markdown text, then every cited path with its quotes and
    documents, then who answered (and from which store) in how long."""
    lines = [answer.answer, ""]
    if answer.citations:
        lines.append("Cited paths:")
        for number, citation in enumerate(answer.citations, start=1):
            hops = " ; ".join(f"{e.source} -{e.relation}-> {e.target}" for e in citation.path)
            lines.append(f"  [{number}] {hops}")
            for edge in citation.path:
                for ev in edge.evidence[:1]:
                    lines.append(f"      “{ev.quote}” — {ev.doc} [{ev.start}:{ev.end}]")
    for note in answer.notes:
        lines.append(f"note: {note}")
    where = f", store {store}" if store else ""
    lines.append(f"({answer.backend}, {answer.latency_ms:.0f} ms{where})")
    return "\n".join(lines).strip()


def _ensure_store(settings: Settings) -> None:
    """Build the store from the configured corpus on first use (the newcomer's first `ask`)."""
    from kg.store import Store

    if Store.exists(settings.store):
        return
    if not any(Path(c).exists() for c in settings.corpus):
        return  # Store.open will say what to run
    from qa.cli.ingest import ingest_with

    print(
        f"kgqa: no store at {settings.store}; ingesting "
        f"{', '.join(map(str, settings.corpus))} first",
        file=sys.stderr,
    )
    ingest_with(settings)


def _without_llm(
    answer: Answer, spec: str, settings: Settings, server: LLMSettings | None = None
) -> str | None:
    """Why an answer asked of the LLM came from the graph instead, for the top of the output:
    the fallback, and where the server is to blame (gone, or its engine broken:
    `qa.llm.selfcheck.diagnose_server`) what is wrong with it and the fix. `server`: the
    settings of the server the reader talked to (the embedded one's port is its own)."""
    from qa.llm.offline import parse_offline_spec
    from qa.llm.selfcheck import diagnose_server
    from qa.schema import FallbackKind

    fallback = answer.fallback
    if fallback is None or not fallback.kind.is_llm:
        return None
    lines = [f"kgqa ask: answered without the LLM ({fallback.kind.value}): {fallback.detail}"]
    server_side = {FallbackKind.LLM_UNAVAILABLE, FallbackKind.LLM_BAD_RESPONSE}
    if fallback.kind in server_side and parse_offline_spec(spec) is None:
        llm = server or (
            settings.llm if spec == "auto" else settings.llm.model_copy(update={"base_url": spec})
        )
        why = diagnose_server(llm)
        if why:
            lines.append(f"kgqa ask: {why}")
    return "\n".join(lines)


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    """Answer one question; `--json` prints the Answer object; exit 2 for a rejected question.

    An answer asked of the LLM that the graph gave instead says why first (on stderr), and what
    is wrong with the LLM server where it is to blame (`_without_llm`)."""
    from qa.api import Assistant
    from qa.cli import offline_vllm_environment
    from qa.schema import FallbackKind

    if not args.json:
        from qa.session import rejection_of

        rejection = rejection_of(args.question)
        if rejection is not None:  # said once, in the question's language; nothing is opened
            print(f"kgqa: {rejection.message}", file=sys.stderr)
            return 2
    spec = args.llm or settings.reader
    offline_vllm_environment(spec)
    _ensure_store(settings)
    assistant = Assistant.open(settings.store, settings=settings, dense=not args.no_dense, llm=spec)
    answer = assistant.ask(args.question, use_llm=spec != "none")
    chat = getattr(assistant.llm, "chat", None)
    server = getattr(chat, "settings", None)
    if spec != "none" and (why := _without_llm(answer, spec, settings, server)):
        print(why, file=sys.stderr, flush=True)
    if args.json:
        print(answer.model_dump_json(indent=1))
    else:
        status = assistant.status()
        print(format_answer(answer, f"{status.store}: {status.documents} documents"))
    rejected = answer.fallback is not None and answer.fallback.kind is FallbackKind.REJECTED
    return 2 if rejected else 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `ask` to the `kgqa` parser (imports nothing)."""
    ask = sub.add_parser("ask", help="answer one question")
    with_store(ask)
    ask.add_argument(
        "--lexicon", type=Path, action="append", help="extra alias lexicon file (as ingest)"
    )
    ask.add_argument("question")
    ask.add_argument(
        "--llm",
        default=None,
        help="who reads and decides: auto (default: a configured server, else the embedded "
        "model) | none (the graph alone) | URL of an OpenAI-compatible server",
    )
    ask.add_argument("--json", action="store_true", help="print the Answer object")
    ask.add_argument("--no-dense", action="store_true", help="skip the embedding model")
    ask.set_defaults(func=cmd_ask)
