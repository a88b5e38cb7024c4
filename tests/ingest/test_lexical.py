"""BM25 over mixed Chinese/English chunk texts: ranking, state round trip, the index's own terms.

Tokenization itself is `ingest.text.Tokenizer` (tests/ingest/test_text.py)."""

from __future__ import annotations

import json

import pytest

from ingest.lexical import LexicalIndex, LexicalState
from ingest.text import Tokenizer
from kg.errors import StoreError

IDS = ["a", "b", "c", "d"]
TEXTS = [
    "PyTorch 是研究界事实标准，动态图易于调试，torch.compile 进一步优化。",
    "在英特尔边缘设备上部署模型，推荐使用 OpenVINO 工具套件。",
    "用 W&B 或 TensorBoard 监控训练；大模型服务用 vLLM。",
    "FSDP 把参数、梯度、优化器状态分片到各卡，适合单卡装不下的模型。",
]


@pytest.fixture
def index() -> LexicalIndex:
    lexical = LexicalIndex()
    lexical.build(IDS, TEXTS)
    return lexical


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("torch.compile", "a"),
        ("torch compile 编译", "a"),
        ("边缘设备部署", "b"),
        ("openvino", "b"),
        ("W&B 监控", "c"),
        ("VLLM", "c"),
        ("优化器状态分片", "d"),
    ],
)
def test_search_ranks_the_matching_chunk_first(
    index: LexicalIndex, query: str, expected: str
) -> None:
    hits = index.search(query, k=4)
    assert hits[0][0] == expected
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_search_without_shared_terms_returns_nothing(index: LexicalIndex) -> None:
    assert index.search("kubernetes helm", k=3) == []
    assert index.search("PyTorch", k=0) == []
    assert LexicalIndex().search("PyTorch") == []


def test_state_round_trip_through_json_gives_identical_results(index: LexicalIndex) -> None:
    state = json.loads(json.dumps(index.to_state().model_dump()))
    restored = LexicalIndex.from_state(state)
    for query in ("边缘设备 OpenVINO", "torch.compile", "分片 模型", "监控训练"):
        assert restored.search(query, k=4) == index.search(query, k=4)


def test_corrupt_or_old_state_is_refused(index: LexicalIndex) -> None:
    state = index.to_state()
    with pytest.raises(StoreError, match="version"):
        LexicalIndex.from_state(state.model_copy(update={"version": 0}))
    with pytest.raises(StoreError, match="inconsistent"):
        LexicalIndex.from_state(state.model_copy(update={"doc_len": state.doc_len[:-1]}))
    assert isinstance(LexicalIndex.from_state(state.model_dump()), LexicalIndex)
    assert LexicalState.model_validate(state.model_dump()) == state


def test_added_terms_segment_as_one_token_and_survive_the_state() -> None:
    term = "昇腾芯片栈"
    lexical = LexicalIndex()
    lexical.add_terms([term, term])
    assert lexical.terms == [term]
    assert term in lexical.tokenizer.tokenize(f"国产{term}部署")
    lexical.build(["x", "y"], [f"国产{term}部署", "英伟达显卡"])
    assert lexical.search(term, k=1)[0][0] == "x"
    restored = LexicalIndex.from_state(lexical.to_state())
    assert restored.terms == [term]
    assert term in restored.tokenizer.tokenize(f"国产{term}部署")


def test_an_index_teaches_its_own_tokenizer_only() -> None:
    # `from_state` once changed jieba's process-wide dictionary: another index, or the tokenizer
    # of another store, tokenized differently depending on what had been loaded before
    term = "昇腾芯片栈"
    text = f"国产{term}部署"
    other = Tokenizer()
    before = other.tokenize(text)
    taught = LexicalIndex()
    taught.add_terms([term])
    LexicalIndex.from_state(taught.to_state())
    assert term in taught.tokenizer.tokenize(text)
    assert other.tokenize(text) == before and term not in before
    assert term not in LexicalIndex().tokenizer.tokenize(text)


def test_build_rejects_mismatched_ids() -> None:
    with pytest.raises(ValueError, match="unique"):
        LexicalIndex().build(["a", "a"], ["x", "y"])


def _chunk_texts() -> tuple[list[str], list[str]]:
    from pathlib import Path

    from ingest.chunk import chunk_document, chunk_embedding_text
    from ingest.load import iter_corpus
    from ingest.structure import parse_blocks

    root = Path(__file__).resolve().parents[2] / "corpus"
    chunks = [
        c
        for r in iter_corpus([root])
        if r.document is not None
        for c in chunk_document(r.document, parse_blocks(r.document))
    ]
    return [c.id for c in chunks], [chunk_embedding_text(c) for c in chunks]


class CountingTokenizer(Tokenizer):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def tokenize(self, text: str) -> list[str]:
        self.texts += 1
        return super().tokenize(text)


def test_a_rebuild_keeps_the_postings_of_unchanged_texts() -> None:
    ids, texts = _chunk_texts()
    terms = ["研究界", "边缘设备"]
    before = LexicalIndex()
    before.add_terms(terms)
    before.build(ids, texts)
    # one text changed, one gone, one new: the rest are not tokenized again
    changed = texts[:]
    changed[3] += " 新增的一句话 with new words"
    new_ids, new_texts = [*ids[:5], *ids[6:], "new#0-1"], [*changed[:5], *changed[6:], "全新 chunk"]
    full = LexicalIndex()
    full.add_terms(terms)
    full.build(new_ids, new_texts)
    tokenizer = CountingTokenizer()
    reused = LexicalIndex(tokenizer)
    reused.add_terms(terms)
    unchanged = set(ids) - {ids[3]}
    reused.build(new_ids, new_texts, reuse=(before.to_state(), unchanged))
    assert tokenizer.texts == 2
    assert reused.to_state() == full.to_state()
    # other terms: the old segmentation may not hold, everything is tokenized again
    other = LexicalIndex(CountingTokenizer())
    other.add_terms([*terms, "一句话"])
    other.build(new_ids, new_texts, reuse=(before.to_state(), unchanged))
    assert isinstance(other.tokenizer, CountingTokenizer)
    assert other.tokenizer.texts == len(new_texts)
    # a Latin name teaches the segmenter nothing: the postings stand, the index is a full one's
    latin = LexicalIndex(CountingTokenizer())
    latin.add_terms([*terms, "QuuxRunner"])
    latin.build(new_ids, new_texts, reuse=(before.to_state(), unchanged))
    assert isinstance(latin.tokenizer, CountingTokenizer)
    assert latin.tokenizer.texts == 2
    full_latin = LexicalIndex()
    full_latin.add_terms([*terms, "QuuxRunner"])
    full_latin.build(new_ids, new_texts)
    assert latin.to_state() == full_latin.to_state()


def test_grouped_index_is_the_index_of_the_joined_texts() -> None:
    # documents made of units: the postings of the units, added, are those of the joined text
    units = {
        "zh-1": TEXTS[:2],
        "zh-2": TEXTS[2:],
        "en-1": ["Zephyr runs on NVIDIA GPUs.", "Windows is not supported.", "Use WSL2 instead."],
        "en-2": ["Quill fine-tunes LLMs with LoRA.", "QLoRA needs 6 GB for a 7B model."],
        "en-3": ["Lumen serves models on CPUs.", "Lumen exports GGUF for llama.cpp."],
    }
    ids = [f"{doc}#{i}" for doc, lines in units.items() for i in range(len(lines))]
    texts = [line for lines in units.values() for line in lines]
    per_unit = LexicalIndex()
    per_unit.build(ids, texts)
    groups = {doc: [f"{doc}#{i}" for i in range(len(lines))] for doc, lines in units.items()}
    grouped = per_unit.grouped(groups)
    joined = LexicalIndex()
    joined.build(list(units), [" ".join(lines) for lines in units.values()])
    assert grouped.ids == joined.ids == list(units)
    for query in ["PyTorch 研究", "部署 OpenVINO", "FSDP 分片", "GPUs Windows", "LoRA 7B", "Lumen"]:
        got, want = grouped.search(query, 5), joined.search(query, 5)
        assert got and [d for d, _s in got] == [d for d, _s in want], query
        for (_d, a), (_e, b) in zip(got, want, strict=True):
            assert a == pytest.approx(b, rel=1e-5), query
