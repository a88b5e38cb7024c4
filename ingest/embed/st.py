"""`SentenceTransformerEmbedder`: any sentence-transformers model from a local directory (or the
hub, for users with internet). `sentence_transformers` is imported on first use only."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ingest.embed.protocol import EmbedderError, Vectors, normalised

__all__ = ["SentenceTransformerEmbedder"]


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
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderError(
                    "sentence-transformers is not installed: pip install 'kgqa[st]' "
                    "(install torch==2.13.0 first on CPU machines)"
                ) from exc
            source = str(self._local) if self._local is not None else self._name
            try:
                # a local directory never reaches for the hub (there may be no network)
                self._model = SentenceTransformer(
                    source, device=self._device, local_files_only=self._local is not None
                )
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
        return normalised(vectors, self.dim)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages with `passage_prefix`."""
        return self._embed(texts, self._passage_prefix)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed queries with `query_prefix`."""
        return self._embed(texts, self._query_prefix)
