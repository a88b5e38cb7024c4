"""The `Embedder` protocol: the one seam between kgqa and an embedding model.

The index and retrieval depend on this protocol only. Scores from multilingual e5 are squeezed
into ~0.7-1.0: use ranks, never absolute thresholds.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kg.errors import KGQAError

__all__ = [
    "CachingEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderWrapper",
    "Vectors",
    "normalised",
    "prepare",
]

Vectors = npt.NDArray[np.float32]


class EmbedderError(KGQAError):
    """An embedder could not be built or loaded (bad spec, missing model directory)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (len(texts), dim); safe to call
    from several threads (the UI and `kgqa eval --concurrency` do)."""

    @property
    def id(self) -> str:
        """Model, version and dimension: a store built with one id is unusable with another."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed documents / chunks."""
        ...

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed questions (asymmetric models prefix these differently from passages)."""
        ...


def normalised(vectors: Any, dim: int) -> Vectors:
    """Cast to a float32 (n, dim) matrix with unit-length rows (zero rows stay zero).

    >>> normalised([[3.0, 4.0], [0.0, 0.0]], 2).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


class EmbedderWrapper:
    """An `Embedder` around another that forwards everything to it; a subclass overrides what it
    adds (a cache of query vectors, counting, timing). Its id is the wrapped embedder's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def id(self) -> str:
        """The wrapped embedder's id (the store checks it)."""
        return self.inner.id

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dim

    def embed_passages(self, texts: list[str]) -> Vectors:
        """The wrapped embedder's passage vectors."""
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """The wrapped embedder's query vectors."""
        return self.inner.embed_queries(texts)

    def prepare_passages(self, chars: int) -> None:
        """The wrapped embedder's `prepare_passages`, where it has one (see `prepare`)."""
        prepare(self.inner, chars)


class CachingEmbedder(EmbedderWrapper):
    """An `Embedder` that remembers query vectors (thread-safe): re-retrieval embeds nothing."""

    def __init__(self, inner: Embedder, max_entries: int = 10_000) -> None:
        super().__init__(inner)
        self.max_entries = max_entries
        self._queries: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every cached query vector."""
        with self._lock:
            self._queries.clear()

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed the queries not seen yet, in one batch; return all rows in order."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            fresh = self.inner.embed_queries(missing)
            with self._lock:
                if len(self._queries) + len(missing) > self.max_entries:
                    self._queries.clear()
                self._queries.update(zip(missing, fresh, strict=True))
        with self._lock:
            rows = [self._queries.get(t) for t in texts]
        if any(r is None for r in rows):  # evicted meanwhile: embed directly
            return self.inner.embed_queries(texts)
        return np.stack([r for r in rows if r is not None]).astype(np.float32)


def prepare(embedder: Embedder, chars: int) -> None:
    """Tell an embedder that about `chars` characters of passages are coming, if it wants to
    know (an optional `prepare_passages(chars)` method: the e5-int8 embedder loads its model and
    native tokenizer). Ingest calls it while its workers parse the first documents."""
    hook = getattr(embedder, "prepare_passages", None)
    if callable(hook):
        hook(chars)
