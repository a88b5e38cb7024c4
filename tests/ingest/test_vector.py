"""Dense index (exact search, save/load) and the llama-index layer over the same vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ingest.embed import E5Embedder
from ingest.vector import DenseIndex, DenseMeta, as_llamaindex, naive_retriever
from kg.documents import Chunk
from kg.errors import StoreError

TEXTS = [
    "在英特尔 CPU 和边缘设备上部署模型，推荐使用 OpenVINO。",
    "FSDP 把参数、梯度和优化器状态分片到各张显卡上，适合单卡装不下的大模型。",
    "JAX 是函数式的，用 jit 编译到 XLA，适合在 TPU 上做大规模并行。",
    "vLLM 是大语言模型推理服务引擎，用分页注意力提高吞吐。",
]
QUERIES = {
    "Which toolkit should I use to deploy models on Intel edge devices?": 0,
    "How do I shard optimizer states across GPUs?": 1,
    "Which framework compiles to XLA for TPU parallelism?": 2,
    "What engine serves large language models with high throughput?": 3,
}


def _chunks() -> list[Chunk]:
    chunks, pos = [], 0
    for text in TEXTS:
        chunks.append(
            Chunk(
                id=f"t.md#{pos}-{pos + len(text)}",
                doc="t.md",
                start=pos,
                end=pos + len(text),
                text=text,
                heading_path=("部署",),
            )
        )
        pos += len(text) + 1
    return chunks


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="module")
def dense(e5: E5Embedder) -> DenseIndex:
    return DenseIndex.build(_chunks(), e5)


def test_dense_search_finds_the_cross_lingual_match(dense: DenseIndex, e5: E5Embedder) -> None:
    ids = [c.id for c in _chunks()]
    for query, expected in QUERIES.items():
        hits = dense.search_text(query, e5, k=2)
        assert len(hits) == 2
        assert hits[0][0] == ids[expected]
        assert hits[0][1] >= hits[1][1]


def test_dense_search_is_exact_on_known_vectors() -> None:
    vectors = np.eye(3, dtype=np.float32)
    index = DenseIndex(["a", "b", "c"], vectors, "test-basis:3")
    query = np.array([0.1, 0.9, 0.3], dtype=np.float32)
    assert [i for i, _ in index.search(query, k=3)] == ["b", "c", "a"]
    assert index.search(query, k=0) == []
    with pytest.raises(StoreError, match="dim"):
        index.search(np.ones(4, dtype=np.float32))


def test_save_load_round_trip_gives_identical_results(
    dense: DenseIndex, e5: E5Embedder, tmp_path: Path
) -> None:
    dense.save(tmp_path / "index")
    loaded = DenseIndex.load(tmp_path / "index")
    assert loaded.ids == dense.ids and loaded.embedder_id == dense.embedder_id
    np.testing.assert_array_equal(loaded.vectors, dense.vectors)
    for query in QUERIES:
        assert loaded.search_text(query, e5, k=4) == dense.search_text(query, e5, k=4)
    assert not [p for p in (tmp_path / "index").iterdir() if p.name.endswith(".tmp")]


def test_state_checks_refuse_mismatches(dense: DenseIndex, tmp_path: Path) -> None:
    meta, vectors = dense.to_state()
    with pytest.raises(StoreError, match="version"):
        DenseIndex.from_state(meta.model_copy(update={"version": 99}), vectors)
    with pytest.raises(StoreError, match="shape"):
        DenseIndex.from_state(meta, vectors[:-1])
    with pytest.raises(StoreError, match="cannot read"):
        DenseIndex.load(tmp_path / "missing")
    with pytest.raises(StoreError, match="one vector per unique id"):
        DenseIndex(["a", "a"], np.eye(2, dtype=np.float32), "x")
    assert isinstance(meta, DenseMeta)


def test_search_text_refuses_another_embedder(dense: DenseIndex) -> None:
    other = DenseIndex(dense.ids, dense.vectors, "some-other-model:384")
    with pytest.raises(StoreError, match="re-run `kgqa ingest`"):
        other.search_text("OpenVINO", E5Embedder(), k=1)


def test_llamaindex_retrieval_uses_our_vectors(dense: DenseIndex, e5: E5Embedder) -> None:
    chunks = _chunks()
    index = as_llamaindex(chunks, dense.vectors, e5)
    retrieve = naive_retriever(index, k=2)
    for query, expected in QUERIES.items():
        hits = retrieve(query)
        assert [i for i, _ in hits] == [i for i, _ in dense.search_text(query, e5, k=2)]
        assert hits[0][0] == chunks[expected].id
        assert hits[0][1] == pytest.approx(dense.search_text(query, e5, k=1)[0][1], abs=1e-4)
    node = index.docstore.get_node(chunks[0].id)
    assert node.get_content() == chunks[0].text
    assert node.metadata == {"doc": "t.md", "heading_path": "部署"}


def test_llamaindex_does_not_re_embed_passages(dense: DenseIndex) -> None:
    class QueryOnly(E5Embedder):
        def embed_passages(self, texts: list[str]) -> npt.NDArray[np.float32]:
            raise AssertionError("passages must not be re-embedded")

    index = as_llamaindex(_chunks(), dense.vectors, QueryOnly())
    assert naive_retriever(index, k=1)("OpenVINO edge deployment")[0][0] == _chunks()[0].id
    with pytest.raises(StoreError, match="vectors"):
        as_llamaindex(_chunks(), dense.vectors[:2], QueryOnly())


def test_llamaindex_embedding_adapter(e5: E5Embedder) -> None:
    from ingest.vector import LlamaIndexEmbedding

    adapter = LlamaIndexEmbedding(e5)
    assert adapter.model_name == e5.id
    query = adapter.get_query_embedding("OpenVINO")
    np.testing.assert_allclose(query, e5.embed_queries(["OpenVINO"])[0], atol=1e-6)
    texts = adapter.get_text_embedding_batch(TEXTS[:2])
    np.testing.assert_allclose(texts, e5.embed_passages(TEXTS[:2]), atol=1e-6)
