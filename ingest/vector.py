"""Dense chunk index: a float32 matrix of unit vectors plus chunk ids, searched by dot product.

The same vectors can be handed to llama-index (`as_llamaindex`) so that any llama-index vector
store can hold them; its retriever is the "naive RAG" baseline (`naive_retriever`). llama-index is
imported only there (it takes seconds to import), and never with its global `Settings` defaults,
which would reach for OpenAI or download tokenizer data.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from ingest.chunk import chunk_embedding_text
from ingest.embed import Embedder
from ingest.topk import top_k
from kg.documents import Chunk
from kg.errors import StoreError
from kg.store import atomic_write_bytes, npy_bytes

if TYPE_CHECKING:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.vector_stores.types import BasePydanticVectorStore

__all__ = [
    "DENSE_STATE_VERSION",
    "DenseIndex",
    "DenseMeta",
    "LlamaIndexEmbedding",
    "as_llamaindex",
    "naive_retriever",
]

DENSE_STATE_VERSION = 1
_META_FILE = "dense.json"
_VECTORS_FILE = "dense.npy"


class DenseMeta(BaseModel):
    """What goes beside the vector matrix: row ids and the embedder that made them."""

    version: int = DENSE_STATE_VERSION
    embedder_id: str
    dim: int
    ids: list[str]


class DenseIndex:
    """Exact nearest-neighbour search over L2-normalised vectors (cosine = dot product)."""

    def __init__(self, ids: list[str], vectors: npt.NDArray[np.float32], embedder_id: str) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids) or len(set(ids)) != len(ids):
            raise StoreError(
                f"dense index needs one vector per unique id: {len(ids)} ids, shape {matrix.shape}"
            )
        self.ids = list(ids)
        self.vectors = matrix
        self.embedder_id = embedder_id
        self._recent: dict[str, npt.NDArray[np.float32]] = {}  # query text -> scores
        self._lock = threading.Lock()

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder: Embedder) -> DenseIndex:
        """Embed `chunk_embedding_text` of every chunk."""
        vectors = embedder.embed_passages([chunk_embedding_text(c) for c in chunks])
        return cls([c.id for c in chunks], vectors, embedder.id)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.vectors.shape[1])

    def search(self, query_vec: npt.NDArray[np.float32], k: int = 10) -> list[tuple[str, float]]:
        """The `k` nearest (id, cosine) pairs, best first (ties keep index order)."""
        if k <= 0 or not self.ids:
            return []
        return self._best(self._scores(query_vec), k)

    def _scores(self, query_vec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise StoreError(f"query vector has dim {query.shape[0]}, index has {self.dim}")
        scores: npt.NDArray[np.float32] = self.vectors @ query
        return scores

    def _best(self, scores: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        order = top_k(scores, np.arange(len(scores)), k)
        return [(self.ids[i], float(scores[i])) for i in order]

    def search_text(self, query: str, embedder: Embedder, k: int = 10) -> list[tuple[str, float]]:
        """Embed `query` with `embedder` (which must be the one that built the index) and search."""
        if embedder.id != self.embedder_id:
            raise StoreError(
                f"index was built with embedder {self.embedder_id!r}, not {embedder.id!r}: "
                "re-run `kgqa ingest` with this embedder or configure the original one"
            )
        if k <= 0 or not self.ids:
            return []
        # a question is searched more than once (chunks, then units): its scores are kept
        scores = self._recent.get(query)
        if scores is None:
            scores = self._scores(embedder.embed_queries([query])[0])
            with self._lock:
                if len(self._recent) >= 8:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[query] = scores
        return self._best(scores, k)

    def to_state(self) -> tuple[DenseMeta, npt.NDArray[np.float32]]:
        """The JSON-able metadata and the (n, dim) float32 matrix, for the store to write."""
        meta = DenseMeta(embedder_id=self.embedder_id, dim=self.dim, ids=self.ids)
        return meta, self.vectors

    @classmethod
    def from_state(cls, meta: DenseMeta, vectors: npt.NDArray[np.float32]) -> DenseIndex:
        """Rebuild from `to_state()` output; raises `StoreError` on a version or shape mismatch."""
        if meta.version != DENSE_STATE_VERSION:
            raise StoreError(
                f"dense index version {meta.version}, expected {DENSE_STATE_VERSION}: "
                "re-run `kgqa ingest`"
            )
        if vectors.shape != (len(meta.ids), meta.dim):
            raise StoreError(
                f"dense vectors have shape {vectors.shape}, metadata says "
                f"({len(meta.ids)}, {meta.dim}): re-run `kgqa ingest`"
            )
        return cls(meta.ids, vectors, meta.embedder_id)

    def save(self, directory: Path) -> None:
        """Write `dense.npy` and `dense.json` into `directory`, each atomically."""
        meta, vectors = self.to_state()
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(directory / _VECTORS_FILE, npy_bytes(vectors))
        data = json.dumps(meta.model_dump(), ensure_ascii=False).encode("utf-8")
        atomic_write_bytes(directory / _META_FILE, data)

    @classmethod
    def load(cls, directory: Path) -> DenseIndex:
        """Read what `save` wrote; raises `StoreError` when files are missing or inconsistent."""
        try:
            meta = DenseMeta.model_validate_json((directory / _META_FILE).read_bytes())
            vectors = np.load(directory / _VECTORS_FILE, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read dense index in {directory}: {exc}") from exc
        return cls.from_state(meta, vectors)


@cache
def _llamaindex_embedding_class() -> Callable[[Embedder], BaseEmbedding]:
    """Define the llama-index adapter on first use, so importing this module stays fast."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class LlamaIndexEmbedding(BaseEmbedding):
        """A llama-index embedding model backed by a kgqa `Embedder` (no network, no Settings)."""

        _embedder: Embedder = PrivateAttr()

        def __init__(self, embedder: Embedder, **kwargs: Any) -> None:
            super().__init__(model_name=embedder.id, **kwargs)
            self._embedder = embedder

        @classmethod
        def class_name(cls) -> str:
            return "KgqaEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return [float(x) for x in self._embedder.embed_queries([query])[0]]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return [float(x) for x in self._embedder.embed_passages([text])[0]]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [[float(x) for x in row] for row in self._embedder.embed_passages(texts)]

    return LlamaIndexEmbedding


# Declared for type checkers and `__all__`; bound on first access by the module `__getattr__`.
LlamaIndexEmbedding: Callable[[Embedder], BaseEmbedding]


def __getattr__(name: str) -> Any:
    """`LlamaIndexEmbedding(embedder)` is built lazily (importing llama-index takes seconds)."""
    if name == "LlamaIndexEmbedding":
        return _llamaindex_embedding_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_llamaindex(
    chunks: Sequence[Chunk],
    vectors: npt.NDArray[np.float32],
    embedder: Embedder,
    vector_store: BasePydanticVectorStore | None = None,
) -> VectorStoreIndex:
    """A llama-index `VectorStoreIndex` over `chunks` with our precomputed `vectors`.

    Node ids are chunk ids; nothing is re-embedded; `vector_store` (any llama-index vector
    store) defaults to the in-memory `SimpleVectorStore`. Only queries go through `embedder`.
    """
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import BaseNode, TextNode, TransformComponent

    if len(chunks) != len(vectors):
        raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors")

    class _NoTransform(TransformComponent):
        """Stands in for llama-index's default node parser, which would load a tokenizer."""

        def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
            return nodes

    nodes = [
        TextNode(
            id_=chunk.id,
            text=chunk.text,
            embedding=[float(x) for x in vector],
            start_char_idx=chunk.start,
            end_char_idx=chunk.end,
            metadata={"doc": chunk.doc, "heading_path": " > ".join(chunk.heading_path)},
        )
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]
    storage = StorageContext.from_defaults(vector_store=vector_store)
    return VectorStoreIndex(
        nodes=nodes,
        embed_model=_llamaindex_embedding_class()(embedder),
        storage_context=storage,
        transformations=[_NoTransform()],
    )


def naive_retriever(
    index: VectorStoreIndex, k: int = 5
) -> Callable[[str], list[tuple[str, float]]]:
    """The naive-RAG baseline: a function from a question to its top-`k` (chunk id, score)."""
    retriever = index.as_retriever(similarity_top_k=k)

    def retrieve(question: str) -> list[tuple[str, float]]:
        return [(hit.node.node_id, float(hit.score or 0.0)) for hit in retriever.retrieve(question)]

    return retrieve
