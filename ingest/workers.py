"""Parse and extract documents in worker processes while the caller embeds the ones before.

`processed_in_order` runs a document function (parse, extract, chunk: pure Python, so processes,
not threads) over documents in a pool of `workers` processes, a few documents ahead of the
caller, and yields the results in the documents' order: what is written does not depend on the
number of workers or on which finished first. With no workers, or one document, it runs in the
caller's process (starting a worker costs ~1 s of imports). A worker exits when the process
that started it is gone.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from kg.documents import Document
from kg.lexicon import Lexicon
from kg.store import DocRecord

__all__ = ["DocumentWork", "InOrder", "Processed", "default_workers", "processed_in_order"]

DocumentWork = Callable[[Document, Lexicon], DocRecord]

_lexicon: Lexicon | None = None  # a worker's copy, sent once when the worker starts


@dataclass(frozen=True)
class Processed:
    """One document's result: its record, or why it failed (`errors` the work raised), and
    the CPU seconds the work took (in whichever process ran it)."""

    document: Document
    record: DocRecord | None
    error: str | None
    seconds: float


def default_workers() -> int:
    """Worker processes for parsing: one core is left to the embedder, at most four.

    >>> 1 <= default_workers() <= 4
    True
    """
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def _start_worker(lexicon: Lexicon, parent: int) -> None:
    global _lexicon
    _lexicon = lexicon
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    """A killed ingest (SIGKILL leaves it no time to stop its pool) takes its workers along:
    they would wait for work, or to hand in a result, forever. `parent` is the pid the ingest
    had, not this process's parent when it got here: that may already be init."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _run(
    work: DocumentWork, doc: Document, lexicon: Lexicon, errors: tuple[type[Exception], ...]
) -> Processed:
    started = time.process_time()
    try:
        record: DocRecord | None = work(doc, lexicon)
        error = None
    except errors as err:
        record, error = None, f"{type(err).__name__}: {err}"
    return Processed(doc, record, error, time.process_time() - started)


def _run_in_worker(
    work: DocumentWork, doc: Document, errors: tuple[type[Exception], ...]
) -> Processed:
    assert _lexicon is not None, "worker started without a lexicon"
    return _run(work, doc, _lexicon, errors)


def processed_in_order(
    docs: list[Document],
    work: DocumentWork,
    lexicon: Lexicon,
    *,
    workers: int,
    errors: tuple[type[Exception], ...] = (),
) -> InOrder:
    """`work(doc, lexicon)` of each document, in order; an exception in `errors` becomes the
    document's `error`, any other propagates. `work` must be a module-level function (it is
    sent to the workers by name). The workers start at once (the caller can prepare its own
    work meanwhile); at most `2 * workers + 1` documents wait ahead of the caller."""
    return InOrder(docs, work, lexicon, workers=workers, errors=errors)


class InOrder(Iterator[Processed]):
    """The results of `processed_in_order`, as they are due; `close()` (or the end) stops the
    workers."""

    def __init__(
        self,
        docs: list[Document],
        work: DocumentWork,
        lexicon: Lexicon,
        *,
        workers: int,
        errors: tuple[type[Exception], ...],
    ) -> None:
        self._work, self._lexicon, self._errors = work, lexicon, errors
        self._upcoming = iter(docs)
        self._waiting: deque[Future[Processed]] = deque()
        self._pool: ProcessPoolExecutor | None = None
        if workers >= 1 and len(docs) >= 2:
            context = multiprocessing.get_context("spawn")  # no fork of a running process
            self._pool = ProcessPoolExecutor(
                workers,
                mp_context=context,
                initializer=_start_worker,
                initargs=(lexicon, os.getpid()),
            )
            for doc in itertools.islice(self._upcoming, 2 * workers + 1):
                self._submit(doc)

    def _submit(self, doc: Document) -> None:
        assert self._pool is not None
        self._waiting.append(self._pool.submit(_run_in_worker, self._work, doc, self._errors))

    def __next__(self) -> Processed:
        if self._pool is None:
            doc = next(self._upcoming)  # StopIteration at the end
            return _run(self._work, doc, self._lexicon, self._errors)
        if not self._waiting:
            self.close()
            raise StopIteration
        try:
            done = self._waiting.popleft().result()
        except BaseException:
            self.close()
            raise
        following = next(self._upcoming, None)
        if following is not None:
            self._submit(following)
        return done

    def close(self) -> None:
        """Stop the workers (what was not started is dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._waiting.clear()
