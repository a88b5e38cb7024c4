"""Retrieval over a tiny hand-made graph and four hand-made chunks (no store): situation matching,
GPU-count scales, typed ranked paths, lexical + dense chunk fusion, and the lazy embedder."""

from __future__ import annotations

import threading

import pytest

from ingest.embed import E5Embedder, Embedder
from ingest.lexical import LexicalIndex
from ingest.vector import DenseIndex
from kg.documents import Chunk
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType
from qa.read.understand import QuestionReader, gpu_count
from qa.retrieve.paths import Retriever, in_scale

DOC = "guide.md"
PARTS = [
    "单机多卡、模型装得下 → DDP，每进程一份模型，梯度 all-reduce 同步。",
    "超大模型、单卡装不下 → FSDP，把参数、梯度和优化器状态分片到各卡。",
    "PyTorch 模型先导出为 ONNX，再交给 TensorRT 在 NVIDIA GPU 上推理。",
    "实验追踪：本地用 TensorBoard，团队协作用 W&B。",
]
TEXT = "\n".join(PARTS)

MULTI = "scenario:单机多卡"
HUGE = "scenario:超大模型"
SCALE_MID = "scenario:8-64-卡"
SCALE_SMALL = "scenario:<4-卡"
DDP, FSDP = "parallel-strategy:ddp", "parallel-strategy:fsdp"
PYTORCH, ONNX, TENSORRT = "framework:pytorch", "format:onnx", "inference-engine:tensorrt"


def _ev(quote: str) -> Evidence:
    start = TEXT.index(quote)
    return Evidence(doc=DOC, quote=quote, start=start, end=start + len(quote))


def _chunks() -> list[Chunk]:
    chunks, start = [], 0
    for part in PARTS:
        chunks.append(
            Chunk(
                id=f"{DOC}#{start}-{start + len(part)}",
                doc=DOC,
                start=start,
                end=start + len(part),
                text=part,
            )
        )
        start += len(part) + 1
    return chunks


def _graph() -> KnowledgeGraph:
    graph = KnowledgeGraph()
    for node, kind, name in [
        (MULTI, NodeType.SCENARIO, "单机多卡"),
        (HUGE, NodeType.SCENARIO, "超大模型/单卡装不下"),
        (SCALE_MID, NodeType.SCENARIO, "8–64 卡"),
        (SCALE_SMALL, NodeType.SCENARIO, "<4 卡"),
        (DDP, NodeType.PARALLEL_STRATEGY, "DDP"),
        (FSDP, NodeType.PARALLEL_STRATEGY, "FSDP"),
        (PYTORCH, NodeType.FRAMEWORK, "PyTorch"),
        (ONNX, NodeType.FORMAT, "ONNX"),
        (TENSORRT, NodeType.INFERENCE_ENGINE, "TensorRT"),
    ]:
        graph.add_entity(Entity(id=node, type=kind, name=name))
    for source, relation, target, quote in [
        (MULTI, RelationType.RECOMMENDED_FOR, DDP, "单机多卡、模型装得下 → DDP"),
        (HUGE, RelationType.RECOMMENDED_FOR, FSDP, "超大模型、单卡装不下 → FSDP"),
        (FSDP, RelationType.SUITS_SCALE, SCALE_MID, "超大模型、单卡装不下 → FSDP"),
        (DDP, RelationType.SUITS_SCALE, SCALE_SMALL, "单机多卡、模型装得下 → DDP"),
        (PYTORCH, RelationType.EXPORTS_TO, ONNX, "PyTorch 模型先导出为 ONNX"),
        (ONNX, RelationType.EXPORTS_TO, TENSORRT, "再交给 TensorRT"),
    ]:
        graph.add_relation(
            Relation(source=source, relation=relation, target=target, evidence=[_ev(quote)])
        )
    return graph


def _lexical(chunks: list[Chunk]) -> LexicalIndex:
    index = LexicalIndex()
    index.build([c.id for c in chunks], [c.text for c in chunks])
    return index


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    return _graph()


@pytest.fixture(scope="module")
def reader(graph: KnowledgeGraph) -> QuestionReader:
    return QuestionReader(graph, Lexicon.default())


@pytest.fixture(scope="module")
def retriever(graph: KnowledgeGraph) -> Retriever:
    chunks = _chunks()
    return Retriever(graph, Lexicon.default(), chunks, _lexical(chunks))


# -- GPU counts and scales ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("单机 8 张卡训练", 8),
        ("on 16 GPUs", 16),
        ("超过 64 卡", 65),
        ("fewer than 4 GPUs", 3),
        ("2块显卡", 2),
        ("which GPU?", None),
        ("PyTorch 2.3", None),
    ],
)
def test_gpu_count(text: str, count: int | None) -> None:
    assert gpu_count(text) == count


@pytest.mark.parametrize(
    ("count", "scale", "inside"),
    [
        (8, "8–64 卡", True),
        (64, "8-64 卡", True),
        (65, "8–64 卡", False),
        (3, "<4 卡", True),
        (4, "<4 卡", False),
    ],
)
def test_in_scale(count: int, scale: str, inside: bool) -> None:
    assert in_scale(count, scale) is inside


# -- situations ---------------------------------------------------------------------------------
def test_a_question_matches_the_situation_it_describes(
    retriever: Retriever, reader: QuestionReader
) -> None:
    scores = retriever.situation_scores(reader.read("单机多卡训练，用什么并行？"))
    assert max(scores, key=scores.__getitem__) == MULTI
    assert HUGE not in scores or scores[HUGE] < scores[MULTI]


def test_one_alternative_of_a_situation_name_is_enough(
    retriever: Retriever, reader: QuestionReader
) -> None:
    scores = retriever.situation_scores(reader.read("模型单卡装不下怎么办？"))
    assert scores.get(HUGE, 0.0) >= 0.5


@pytest.mark.parametrize(
    ("text", "scale"),
    [("我有 16 张卡训练大模型", SCALE_MID), ("just 2 GPUs at home", SCALE_SMALL)],
)
def test_a_stated_gpu_count_matches_its_scale_fully(
    retriever: Retriever, reader: QuestionReader, text: str, scale: str
) -> None:
    scores = retriever.situation_scores(reader.read(text))
    other = SCALE_SMALL if scale == SCALE_MID else SCALE_MID
    assert scores[scale] == 1.0
    assert other not in scores


def test_the_word_gpu_alone_matches_no_scale(retriever: Retriever, reader: QuestionReader) -> None:
    scores = retriever.situation_scores(reader.read("Which GPU should I train on?"))
    assert SCALE_MID not in scores and SCALE_SMALL not in scores


# -- paths --------------------------------------------------------------------------------------
def test_paths_are_typed_graph_edges_with_evidence_ranked_best_first(
    retriever: Retriever, reader: QuestionReader, graph: KnowledgeGraph
) -> None:
    bundle = retriever.retrieve(reader.read("我有 16 张卡，超大模型单卡装不下，用什么？"))
    assert bundle.paths, "no paths"
    scores = [p.score for p in bundle.paths]
    assert scores == sorted(scores, reverse=True)
    for path in bundle.paths:
        for edge in path.edges:
            assert graph.edge(edge.source, edge.relation, edge.target) is not None
            assert edge.evidence and all(TEXT[e.start : e.end] == e.quote for e in edge.evidence)
    top = {(e.source, e.relation, e.target) for p in bundle.paths[:3] for e in p.edges}
    assert (HUGE, "RECOMMENDED_FOR", FSDP) in top


def test_an_edge_between_two_named_things_ranks_first(
    retriever: Retriever, reader: QuestionReader
) -> None:
    bundle = retriever.retrieve(reader.read("PyTorch 能导出 ONNX 吗？"))
    assert bundle.linked == [PYTORCH, ONNX]
    assert bundle.paths[0].id == f"{PYTORCH}|EXPORTS_TO|{ONNX}"


def test_two_hop_paths_reach_what_the_question_constrains(
    retriever: Retriever, reader: QuestionReader
) -> None:
    bundle = retriever.retrieve(reader.read("PyTorch 模型怎么上 TensorRT？"))
    ids = [p.id for p in bundle.paths]
    assert f"{PYTORCH}|EXPORTS_TO|{ONNX};{ONNX}|EXPORTS_TO|{TENSORRT}" in ids


def test_retrieval_is_deterministic(retriever: Retriever, reader: QuestionReader) -> None:
    question = reader.read("单机多卡还是超大模型？")
    assert retriever.retrieve(question) == retriever.retrieve(question)


def test_nothing_linked_gives_an_empty_bundle(retriever: Retriever, reader: QuestionReader) -> None:
    bundle = retriever.retrieve(reader.read("量子计算机怎么买？"))
    assert (bundle.linked, bundle.situations, bundle.paths, bundle.chunks) == ([], {}, [], [])


# -- chunks -------------------------------------------------------------------------------------
def test_lexical_hits_find_the_chunk_sharing_the_words(
    retriever: Retriever, reader: QuestionReader
) -> None:
    hits = retriever.chunk_hits(reader.read("实验追踪用 TensorBoard 还是 W&B？"), k=2)
    assert hits[0].text == PARTS[3]
    assert TEXT[hits[0].start : hits[0].end] == hits[0].text


class CountingFactory:
    """Builds the real e5 embedder, counting how often it is asked to."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> Embedder:
        with self.lock:
            self.calls += 1
        return E5Embedder(num_threads=1)


def test_dense_hits_fuse_with_lexical_and_the_embedder_loads_once(
    graph: KnowledgeGraph, reader: QuestionReader
) -> None:
    chunks = _chunks()
    embedder = E5Embedder(num_threads=1)
    dense = DenseIndex.build(chunks, embedder)
    factory = CountingFactory()
    retriever = Retriever(graph, Lexicon.default(), chunks, _lexical(chunks), dense, factory)
    # no word in common with any chunk: only the dense index can find it
    question = reader.read("How do I train a network too large for a single graphics card?")
    assert retriever.lexical.search(question.text, 4) == []
    results: list[list[str]] = []

    def ask() -> None:
        results.append([h.id for h in retriever.chunk_hits(question, k=2)])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert factory.calls == 1
    assert len(results) == 4 and all(r == results[0] for r in results)
    # the two chunks about training across cards, not inference or experiment tracking
    assert set(results[0]) == {chunks[0].id, chunks[1].id}
