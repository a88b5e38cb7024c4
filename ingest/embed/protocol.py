"""The `Embedder` protocol: the one seam between kgqa and an embedding model.

The index and retrieval depend on this protocol only. Scores from multilingual e5 are squeezed
into ~0.7-1.0: use ranks, never absolute thresholds.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kg.errors import KGQAError

__all__ = ["Embedder", "EmbedderError", "EmbedderWrapper", "Vectors", "normalised"]

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
