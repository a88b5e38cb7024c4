"""Passage vectors by (embedder, text): what ingest embedded once it never embeds again.

A chunk's vector depends on its embedder and its text only, so an ingest after an extraction-only
change, or of an edited document, needs new vectors only for the chunk texts it has not seen:
`PassageCache.vectors` embeds those and takes the others from what it remembers -- the previous
version of the document (`remember`) and the vectors kept on disk under the kgqa cache directory,
one directory per embedder id (`passages-v1-<digest>/`), holding segments of (text digest,
vector) rows written atomically (`ingest.cache`). `save` adds this run's new vectors as one
segment and merges the segments when there are many. Deleting the directory is always safe.

Vectors are kept as float32 bit for bit, so a store built from remembered vectors is the store
built by embedding again (with an embedder whose vectors do not depend on the batch, as
`E5Int8Embedder`'s do not).
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import time
from pathlib import Path
from typing import Final

import numpy as np

from ingest.cache import load_array_dir, save_array_dir
from ingest.embed.protocol import Embedder, Vectors

__all__ = ["PassageCache", "text_key"]

_FORMAT: Final = 1  # layout of the cache directory; part of its name
_MAX_SEGMENTS: Final = 16  # more are merged into one by `save`
_KEY_BYTES: Final = 16


def text_key(text: str) -> bytes:
    """The cache key of a passage: the first 16 bytes of the SHA-256 of its UTF-8 text.

    >>> text_key("PyTorch").hex()
    '03312bee2e657c9ed7249268b32925e7'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:_KEY_BYTES]


class PassageCache:
    """The passage vectors of one embedder: remembered, kept on disk, or embedded now.

    `cache_dir` None keeps them in memory for this run only. `embedded` counts the texts this
    cache had to embed, `seconds` the time the embedder took.
    """

    def __init__(self, embedder: Embedder, cache_dir: Path | None) -> None:
        self.embedder = embedder
        digest = hashlib.sha256(embedder.id.encode("utf-8")).hexdigest()[:16]
        self.dir = cache_dir / f"passages-v{_FORMAT}-{digest}" if cache_dir else None
        self.embedded = 0
        self.seconds = 0.0
        self._known: dict[bytes, tuple[int, int]] | None = None  # read from disk on first use
        self._segment_vectors: list[Vectors] = []
        self._remembered: dict[bytes, Vectors] = {}
        self._new: dict[bytes, Vectors] = {}

    def remember(self, texts: list[str], vectors: Vectors) -> None:
        """Vectors this embedder gave these texts before (a previous store's)."""
        for text, row in zip(texts, vectors, strict=True):
            self._remembered.setdefault(text_key(text), row)

    def add_embedded(self, texts: list[str], vectors: Vectors, seconds: float = 0.0) -> None:
        """Vectors this embedder gave these texts just now, elsewhere (a Ray worker): those of
        texts not known yet count as embedded by this run (and are kept by `save`), the others
        are dropped (the known vector stands: the same, for an embedder that does not depend on
        the batch)."""
        fresh = 0
        for text, row in zip(texts, vectors, strict=True):
            key = text_key(text)
            if not self._has(key):
                self._new[key] = row
                fresh += 1
        self.embedded += fresh
        self.seconds += seconds

    def vectors(self, texts: list[str]) -> Vectors:
        """The vector of each text, (len(texts), dim): embedding only the texts never seen."""
        keys = [text_key(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if not self._has(key)}
        if missing:
            started = time.perf_counter()
            fresh = self.embedder.embed_passages(list(missing.values()))
            self.seconds += time.perf_counter() - started
            self.embedded += len(missing)
            self._new.update(zip(missing, fresh, strict=True))
        if not keys:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self._get(key) for key in keys]).astype(np.float32, copy=False)

    def _has(self, key: bytes) -> bool:
        return key in self._new or key in self._remembered or key in self._disk()

    def _get(self, key: bytes) -> Vectors:
        for source in (self._new, self._remembered):
            if key in source:
                return source[key]
        if key not in self._disk():
            raise KeyError(key.hex())
        return self._disk_row(key)

    def _disk_row(self, key: bytes) -> Vectors:
        segment, row = self._disk()[key]
        vector: Vectors = self._segment_vectors[segment][row]
        return vector

    def _disk(self) -> dict[bytes, tuple[int, int]]:
        """Key -> (segment, row) of every vector kept on disk; rows are read when asked for
        (a row view of the mapped file each, for tens of thousands, cost ~0.1 s)."""
        if self._known is None:
            self._known = {}
            for segment in self._segments():
                try:
                    arrays = load_array_dir(segment, ("keys", "vectors"))
                except (OSError, ValueError):
                    continue  # a damaged segment is a miss, not an error
                keys, vectors = arrays["keys"], arrays["vectors"]
                shaped = keys.shape == (len(vectors), _KEY_BYTES) and vectors.ndim == 2
                if shaped and vectors.shape[1] == self.embedder.dim:
                    number = len(self._segment_vectors)
                    self._segment_vectors.append(vectors)
                    raw, width = keys.tobytes(), _KEY_BYTES
                    self._known.update(
                        (raw[i * width : (i + 1) * width], (number, i)) for i in range(len(keys))
                    )
        return self._known

    def _segments(self) -> list[Path]:
        if self.dir is None or not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.iterdir() if p.name.startswith("seg-"))

    def save(self) -> None:
        """Keep this run's new vectors on disk (nothing without a cache directory); an
        unwritable cache is no error, the next run embeds again."""
        if self.dir is None or not self._new:
            return
        with contextlib.suppress(OSError):
            self._write(self._new)
            segments = self._segments()
            if len(segments) > _MAX_SEGMENTS:
                merged = {**{key: self._disk_row(key) for key in self._disk()}, **self._new}
                self._write(merged)
                for old in segments:
                    if old.name != _segment_name(merged):
                        shutil.rmtree(old, ignore_errors=True)
        self._new = {}

    def _write(self, rows: dict[bytes, Vectors]) -> None:
        assert self.dir is not None
        path = self.dir / _segment_name(rows)
        if path.exists():
            return
        keys = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, _KEY_BYTES)
        vectors = np.stack(list(rows.values())).astype(np.float32)
        save_array_dir(path, {"keys": keys, "vectors": vectors})


def _segment_name(rows: dict[bytes, Vectors]) -> str:
    """A segment is named after the keys it holds (two runs that add the same rows agree)."""
    return "seg-" + hashlib.sha256(b"".join(sorted(rows))).hexdigest()[:16]
