"""`kgqa ask "QUESTION"`: one answer, as readable text or (`--json`) the Answer object."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qa.config import Settings
    from qa.schema import Answer

__all__ = ["cmd_ask", "format_answer", "register"]


def format_answer(answer: Answer) -> str:
    """A readable answer: the Markdown text, then every cited path with its quotes and documents."""
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
    lines.append(f"({answer.backend}, {answer.latency_ms:.0f} ms)")
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


def _without_llm(answer: Answer, spec: str, settings: Settings) -> str | None:
    """Why an answer asked of the LLM came from the graph instead, for the top of the output:
    the fallback, and where the server is to blame (gone, or its engine broken:
    `qa.llm.selfcheck.diagnose_server`) what is wrong with it and the fix."""
    from qa.llm.offline import parse_offline_spec
    from qa.llm.selfcheck import diagnose_server
    from qa.schema import FallbackKind

    fallback = answer.fallback
    if fallback is None or not fallback.kind.is_llm:
        return None
    lines = [f"kgqa ask: answered without the LLM ({fallback.kind.value}): {fallback.detail}"]
    server_side = {FallbackKind.LLM_UNAVAILABLE, FallbackKind.LLM_BAD_RESPONSE}
    if fallback.kind in server_side and parse_offline_spec(spec) is None:
        llm = settings.llm if spec == "auto" else settings.llm.model_copy(update={"base_url": spec})
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

    offline_vllm_environment(args.llm)
    _ensure_store(settings)
    assistant = Assistant.open(
        settings.store, settings=settings, dense=not args.no_dense, llm=args.llm
    )
    answer = assistant.ask(args.question, use_llm=args.llm != "none")
    if args.llm != "none" and (why := _without_llm(answer, args.llm, settings)):
        print(why, file=sys.stderr, flush=True)
    print(answer.model_dump_json(indent=1) if args.json else format_answer(answer))
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
        "--llm", default="none", help="none (default) | auto | URL of an OpenAI-compatible server"
    )
    ask.add_argument("--json", action="store_true", help="print the Answer object")
    ask.add_argument("--no-dense", action="store_true", help="skip the embedding model")
    ask.set_defaults(func=cmd_ask)
