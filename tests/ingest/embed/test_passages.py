"""The passage cache: a text is embedded once per embedder, remembered vectors and vectors kept
on disk are the embedder's to the bit, segments are merged, a damaged cache is a miss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingest.embed import E5Int8Embedder, EmbedderWrapper, Vectors
from ingest.embed.passages import PassageCache

TEXTS = [
    "PyTorch is the default for research.",
    "OpenVINO runs models on Intel CPUs and edge devices.",
    "vLLM serves large language models with paged attention.",
    "JAX compiles with jit to XLA.",
]


class CountingEmbedder(EmbedderWrapper):
    """The real int8 embedder, counting the passages it embeds."""

    def __init__(self) -> None:
        super().__init__(E5Int8Embedder())
        self.passages = 0

    def embed_passages(self, texts: list[str]) -> Vectors:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


def test_a_text_is_embedded_once_and_kept_on_disk(
    embedder: CountingEmbedder, tmp_path: Path
) -> None:
    embedder.passages = 0
    cache = PassageCache(embedder, tmp_path)
    first = cache.vectors(TEXTS[:3] + TEXTS[:1])  # a repeated text is embedded once
    assert embedder.passages == cache.embedded == 3
    np.testing.assert_array_equal(first[3], first[0])
    cache.save()
    again = PassageCache(embedder, tmp_path)
    vectors = again.vectors(TEXTS)
    assert embedder.passages == 4 and again.embedded == 1  # only the new text
    np.testing.assert_array_equal(vectors[:3], first[:3])
    np.testing.assert_array_equal(vectors, embedder.inner.embed_passages(TEXTS))
    assert again.vectors([]).shape == (0, embedder.dim)


def test_remembered_vectors_are_not_embedded_again(embedder: CountingEmbedder) -> None:
    embedder.passages = 0
    cache = PassageCache(embedder, None)
    known = embedder.inner.embed_passages(TEXTS[:2])
    cache.remember(TEXTS[:2], known)
    np.testing.assert_array_equal(cache.vectors(TEXTS[:2]), known)
    assert embedder.passages == 0
    cache.save()  # nothing to keep without a cache directory


def test_another_embedder_does_not_see_the_vectors(
    embedder: CountingEmbedder, tmp_path: Path
) -> None:
    PassageCache(embedder, tmp_path).vectors(TEXTS[:1])

    class Renamed(CountingEmbedder):
        @property
        def id(self) -> str:
            return "another:model:384"

    cache = PassageCache(embedder, tmp_path)
    cache.vectors(TEXTS[:1])
    cache.save()
    other = PassageCache(Renamed(), tmp_path)
    other.vectors(TEXTS[:1])
    assert other.embedded == 1
    assert len({p.name for p in tmp_path.iterdir()}) == 1  # one directory per embedder id


def test_segments_are_merged_and_a_damaged_one_is_a_miss(
    embedder: CountingEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ingest.embed.passages._MAX_SEGMENTS", 2)
    for text in TEXTS:
        cache = PassageCache(embedder, tmp_path)
        cache.vectors([text])
        cache.save()
    (folder,) = tmp_path.iterdir()
    segments = sorted(folder.iterdir())
    assert 1 <= len(segments) <= 2
    merged = PassageCache(embedder, tmp_path)
    merged.vectors(TEXTS)
    assert merged.embedded == 0
    for segment in segments:
        (segment / "vectors.npy").write_bytes(b"not an array")
    damaged = PassageCache(embedder, tmp_path)
    np.testing.assert_array_equal(damaged.vectors(TEXTS), embedder.inner.embed_passages(TEXTS))
    assert damaged.embedded == len(TEXTS)


def test_an_unwritable_cache_directory_is_no_error(
    embedder: CountingEmbedder, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    cache = PassageCache(embedder, blocked / "cache")
    cache.vectors(TEXTS[:1])
    cache.save()
    assert PassageCache(embedder, blocked / "cache").vectors(TEXTS[:1]).shape == (1, embedder.dim)


def test_vectors_embedded_elsewhere_count_once_and_are_kept(
    embedder: CountingEmbedder, tmp_path: Path
) -> None:
    embedder.passages = 0
    cache = PassageCache(embedder, tmp_path)
    known = cache.vectors(TEXTS[:1])
    elsewhere = embedder.inner.embed_passages(TEXTS[:3])  # as a Ray worker would
    embedder.passages = 0
    cache.add_embedded(TEXTS[:3], elsewhere, seconds=1.5)
    assert cache.embedded == 3 and cache.seconds >= 1.5  # the first text was embedded here
    np.testing.assert_array_equal(cache.vectors(TEXTS[:3]), elsewhere)
    np.testing.assert_array_equal(cache.vectors(TEXTS[:1]), known)
    assert embedder.passages == 0
    cache.save()
    again = PassageCache(embedder, tmp_path)
    np.testing.assert_array_equal(again.vectors(TEXTS[:3]), elsewhere)
    assert embedder.passages == 0 and again.embedded == 0
