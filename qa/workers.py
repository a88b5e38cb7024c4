"""Answers from worker processes: one process's lock no longer holds every answer.

An answer is Python work (reading the question, retrieval, the graph's draft, verification),
and one process runs Python one thread at a time: a `kgqa ui` serving many sessions spends its
lock on answers and on the web server's own work in turns. `AnswerPool` answers in N worker
processes instead, each over its own copy of the store, opened as the command opened its own
(`WorkerSpec`); the process that holds the pool keeps the web server.

    pool = AnswerPool(WorkerSpec(store=".store", settings=Settings(), llm="none"), workers=1)
    for event in pool.ask_stream("我只有 CPU，用哪个推理引擎？"):
        ...                      # the same `AnswerEvent`s as `Assistant.ask_stream`
    pool.close()

`Assistant.answering_in(pool)` gives an assistant whose `ask`/`ask_stream` go to the pool and
whose other parts (graph, understanding, explorer) stay in its own process. A worker that is
not ready yet, or has died, answers nothing: its questions are answered in the calling process
(`PoolUnavailable`), so a crash loses no answer, and a dead worker is started again.
Each worker answers up to `concurrency` questions at once (threads: an answer with a reader
waits on the model's server most of the time), and that server is shared: the workers are given
the URL the command's own assistant reads through, each with its share of `llm.max_concurrency`.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import queue
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg.errors import KGQAError

if TYPE_CHECKING:
    from qa.api import AnswerEvent, Assistant
    from qa.config import Settings

__all__ = [
    "AnswerPool",
    "PoolUnavailable",
    "WorkerSpec",
    "default_workers",
    "worker_share",
    "worker_spec",
]


class PoolUnavailable(KGQAError):
    """No worker can answer (none ready, or the one answering died): answer in this process."""


def worker_share(total: int, workers: int) -> int:
    """Each worker's part of `total` LLM requests in flight (at least one).

    >>> worker_share(8, 3), worker_share(8, 1), worker_share(2, 4)
    (2, 8, 1)
    """
    return max(1, total // max(1, workers))


def default_workers(cpus: int | None) -> int:
    """Worker processes for a machine with `cpus` CPUs: one per CPU but the web server's, at most
    four (past that the web server's own process is the bound); none on one CPU.

    >>> [default_workers(n) for n in (None, 1, 2, 4, 16)]
    [0, 0, 1, 3, 4]
    """
    return 0 if not cpus else max(0, min(4, cpus - 1))


@dataclass(frozen=True)
class WorkerSpec:
    """How a worker opens its assistant: the command's settings, store, embedder choice and
    reader (`none`, or the URL of the model's server the command's own assistant reads through).
    """

    store: str | Path
    settings: Settings
    llm: str = "none"
    dense: bool = True

    def open(self, share: int) -> Assistant:
        """The worker's assistant, its LLM requests in flight capped at `share`."""
        from qa.api import Assistant

        settings = self.settings.model_copy(deep=True)
        settings.llm.max_concurrency = share
        return Assistant.open(self.store, settings=settings, dense=self.dense, llm=self.llm)


def worker_spec(
    assistant: Assistant, store: str | Path, settings: Settings, *, dense: bool = True
) -> WorkerSpec | None:
    """How workers open what `assistant` (opened over `store` with `settings`) answers from:
    the same store and settings, and its reader's server (its URL and model). None where its
    reader runs in this process (vLLM offline, a reader given in code): workers cannot share it.
    """
    from qa.llm.client import ChatModel

    reader = assistant.llm
    if reader is None:
        return WorkerSpec(store=store, llm="none", dense=dense, settings=settings)
    chat = getattr(reader, "chat", None)
    if not isinstance(chat, ChatModel):
        return None
    served = settings.model_copy(update={"llm": chat.settings.model_copy()})
    return WorkerSpec(store=store, llm=chat.settings.base_url, dense=dense, settings=served)


#: what a worker sends: ("ready", None, None), ("event", job, AnswerEvent), ("error", job, text)
_Message = tuple[str, int | None, Any]


def _serve(spec: WorkerSpec, share: int, concurrency: int, conn: Connection) -> None:
    """A worker's main: open the assistant, say ready, answer each job in a thread, streaming its
    events back; stop when the pool says so (None) or its process is gone."""
    assistant = spec.open(share)
    assistant.warm_up()  # ready means as quick as it will be
    send_lock = threading.Lock()

    def send(message: _Message) -> None:
        with send_lock:
            conn.send(message)

    def answer(job: int, question: str, qid: str | None, use_llm: bool) -> None:
        try:
            for event in assistant.ask_stream(question, qid=qid, use_llm=use_llm):
                send(("event", job, event))
        except Exception as err:  # the pool answers this one in its own process
            send(("error", job, f"{type(err).__name__}: {err}"))

    send(("ready", None, None))
    with ThreadPoolExecutor(concurrency) as threads:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the pool's process is gone
            if message is None:
                return  # the pool closes
            threads.submit(answer, *message)


@dataclass
class _Worker:
    process: Any  # multiprocessing's SpawnProcess
    conn: Connection
    ready: threading.Event = field(default_factory=threading.Event)
    jobs: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    dead: bool = False


class AnswerPool:
    """N worker processes answering questions (see the module docstring); thread-safe."""

    def __init__(self, spec: WorkerSpec, workers: int, *, concurrency: int = 32) -> None:
        if workers < 1:
            raise ValueError("an answer pool needs at least one worker")
        self.spec = spec
        self.concurrency = concurrency
        self._context = mp.get_context("spawn")  # a fresh interpreter: no threads forked
        self._share = worker_share(spec.settings.llm.max_concurrency, workers)
        self._jobs: dict[int, queue.SimpleQueue[Any]] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._closed = False
        #: questions the workers answered (a question answered here is not counted)
        self.answered = 0
        self._workers = [self._start() for _ in range(workers)]

    def _start(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_serve,
            args=(self.spec, self._share, self.concurrency, theirs),
            name="kgqa-answers",
            daemon=True,  # ends with this process
        )
        process.start()
        theirs.close()
        worker = _Worker(process, ours)
        threading.Thread(target=self._listen, args=(worker,), daemon=True).start()
        return worker

    def _listen(self, worker: _Worker) -> None:
        """Route a worker's messages to the jobs waiting on them; on its death, tell its jobs
        and start another in its place."""
        while True:
            try:
                kind, job, payload = worker.conn.recv()
            except (EOFError, OSError):
                break
            except Exception:  # a message that cannot be read: the worker is trusted no further
                worker.process.kill()
                break
            if kind == "ready":
                worker.ready.set()
                continue
            with self._lock:
                waiting = self._jobs.get(job) if job is not None else None
            if waiting is not None:
                waiting.put(PoolUnavailable(payload) if kind == "error" else payload)
        with self._lock:
            worker.dead = True
            orphans = [self._jobs[j] for j in worker.jobs if j in self._jobs]
            # one that never opened its store would fail the same way again: not restarted
            replace = not self._closed and worker.ready.is_set()
        for waiting in orphans:
            waiting.put(PoolUnavailable("the worker answering it died"))
        worker.process.join(timeout=5)
        if not worker.ready.is_set():
            print(
                f"kgqa: an answering worker exited ({worker.process.exitcode}) before it opened "
                "the store: questions are answered in this process",
                file=sys.stderr,
                flush=True,
            )
        if replace:
            with self._lock:
                self._workers = [self._start() if w is worker else w for w in self._workers]

    def ready(self, timeout: float | None = None) -> bool:
        """Wait until every worker has opened its store (True), or `timeout` seconds passed, or
        a worker died before it opened it (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            workers = list(self._workers)
            if all(w.ready.is_set() for w in workers):
                return True
            if any(w.dead and not w.ready.is_set() for w in workers):
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def alive(self) -> list[int]:
        """The process ids of the workers that answer now."""
        with self._lock:
            return [w.process.pid for w in self._workers if w.ready.is_set() and not w.dead]

    def ask_stream(
        self, question: str, *, qid: str | None = None, use_llm: bool = True
    ) -> Iterator[AnswerEvent]:
        """A worker's events for one question, as `Assistant.ask_stream` gives them; raises
        `PoolUnavailable` when no worker is ready or the one answering fails."""
        waiting: queue.SimpleQueue[Any] = queue.SimpleQueue()
        with self._lock:
            ready = [w for w in self._workers if w.ready.is_set() and not w.dead]
            if self._closed or not ready:
                raise PoolUnavailable("no answering worker is ready")
            worker = min(ready, key=lambda w: len(w.jobs))
            job = next(self._ids)
            self._jobs[job] = waiting
            worker.jobs.add(job)
        try:
            try:
                with worker.lock:
                    worker.conn.send((job, question, qid, use_llm))
            except (OSError, ValueError) as err:
                raise PoolUnavailable(f"the worker cannot be reached: {err}") from err
            while True:
                item = waiting.get()
                if isinstance(item, PoolUnavailable):
                    raise item
                yield item
                if item.kind == "final":
                    with self._lock:
                        self.answered += 1
                    return
        finally:
            with self._lock:
                self._jobs.pop(job, None)
                worker.jobs.discard(job)

    def close(self) -> None:
        """Stop the workers (their questions in flight get `PoolUnavailable`)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        for worker in workers:  # a stop message: closing this end alone would not wake the
            with contextlib.suppress(OSError, ValueError), worker.lock:  # listener's recv
                worker.conn.send(None)
        for worker in workers:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(timeout=10)
            worker.conn.close()
