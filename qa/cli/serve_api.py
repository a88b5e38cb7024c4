"""`kgqa serve-api`: the answerer as an HTTP API, in N processes over one store.

    kgqa serve-api --store falkordb://db:6379/docs --workers 4 --port 8080 --llm none
    curl -s localhost:8080/ask -H 'content-type: application/json' -d '{"question": "..."}'

`POST /ask` takes `{"question": "...", "id": "q1"}` (id optional) and returns the Answer object
(DESIGN.md); `GET /health` says which store and backend answer. An answerer only reads its store,
so any number of these processes, on any number of machines, can serve one store (a FalkorDB
primary or its replicas, or a copy of a store directory) behind any load balancer. On one machine
`--workers N` runs N processes on one port (uvicorn's workers share the socket: the kernel spreads
the connections); each builds its settings as this command did (config file, environment, flags)
and opens the store itself. With an LLM each process takes `llm.max_concurrency / N` requests in
flight (at least one), so that all of them together send the LLM server what it was configured
to take.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qa.workers import WorkerSpec, worker_share

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    from qa.api import Assistant
    from qa.config import Settings

__all__ = ["app_from_environment", "build_api", "cmd_serve_api", "register", "worker_share"]

#: How the command hands its inputs to the worker processes it starts (they read it once).
_ENV = "KGQA_SERVE_API_ARGS"


def build_api(assistant: Assistant) -> Starlette:
    """The Starlette app answering from `assistant` (read-only, thread-safe)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def ask(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": 'the body must be JSON: {"question": "..."}'}, 400)
        question = body.get("question") if isinstance(body, dict) else None
        if not isinstance(question, str):
            return JSONResponse({"error": 'give the question as {"question": "..."}'}, 400)
        qid = body.get("id")
        answer = await run_in_threadpool(
            assistant.ask, question, qid=str(qid) if qid is not None else None
        )
        return JSONResponse(answer.model_dump(mode="json"))

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", **assistant.status().model_dump(mode="json")})

    return Starlette(routes=[Route("/ask", ask, methods=["POST"]), Route("/health", health)])


def _open(inputs: dict[str, Any]) -> Assistant:
    """The assistant of one worker, from the command's inputs."""
    from qa.cli import offline_vllm_environment
    from qa.config import load_settings

    config = Path(inputs["config"]) if inputs.get("config") else None
    settings = load_settings(
        config,
        store=Path(inputs["store"]) if inputs.get("store") else None,
        lexicon=[Path(p) for p in inputs.get("lexicon") or []] or None,
    )
    offline_vllm_environment(inputs["llm"])
    spec = WorkerSpec(
        store=settings.store, settings=settings, llm=inputs["llm"], dense=not inputs["no_dense"]
    )
    return spec.open(worker_share(settings.llm.max_concurrency, int(inputs["workers"])))


_PR_SET_PDEATHSIG = 1


def _die_with_supervisor(supervisor: int) -> None:
    """In a worker process uvicorn started: SIGTERM when the command's process (uvicorn's
    supervisor) dies, so that a supervisor killed with SIGKILL, which cannot stop its workers,
    leaves none holding the port; exit at once if it died before the signal was armed."""
    if os.getpid() == supervisor or sys.platform != "linux":
        return  # one worker runs in the command's own process
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != supervisor:
        os._exit(0)


def app_from_environment() -> Starlette:
    """The app of a worker process (uvicorn's factory): opens the store the command named."""
    inputs = json.loads(os.environ[_ENV])
    _die_with_supervisor(int(inputs["supervisor"]))
    return build_api(_open(inputs))


def cmd_serve_api(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the API until interrupted (SIGINT/SIGTERM stop every worker; a worker dies with
    the command's process)."""
    import uvicorn

    inputs = {
        "config": str(args.config) if args.config else None,
        "store": str(args.store) if args.store else None,
        "lexicon": [str(p) for p in args.lexicon or []],
        "llm": args.llm,
        "no_dense": args.no_dense,
        "workers": args.workers,
        "supervisor": os.getpid(),
    }
    os.environ[_ENV] = json.dumps(inputs)  # read by the workers uvicorn starts, nowhere else
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: serving on {args.host} without authentication: put a proxy in front")
    print(
        f"kgqa serve-api: http://{args.host}:{args.port}/ask over {settings.store}, "
        f"{args.workers} worker(s) (Ctrl-C stops)",
        flush=True,
    )
    uvicorn.run(
        "qa.cli.serve_api:app_from_environment",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="warning",
        access_log=False,
    )
    return 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `kgqa serve-api` to the command line."""
    serve = sub.add_parser("serve-api", help="serve answers over HTTP from N processes")
    with_store(serve)
    serve.add_argument(
        "--lexicon", type=Path, action="append", help="extra alias lexicon file (as ingest)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--workers", type=int, default=1, help="answering processes (default 1)")
    serve.add_argument("--llm", default="auto", help="auto (default) | none | URL")
    serve.add_argument(
        "--no-dense", action="store_true", help="skip the embedding model (lexical retrieval only)"
    )
    serve.set_defaults(func=cmd_serve_api)
