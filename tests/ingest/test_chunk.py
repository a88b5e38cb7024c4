"""Chunking over hand-made blocks: exact spans, section boundaries, sentence cuts, tables."""

from __future__ import annotations

import itertools

import pytest

from ingest.chunk import chunk_document, chunk_embedding_text
from ingest.text import split_sentences
from kg.documents import Block, BlockKind, Chunk, Document
from kg.errors import IngestError

H1 = "一、框架对比"
H2 = "二、部署"
PROSE = (
    "PyTorch 是研究界事实标准。它的动态图易于调试！JAX 适合 TPU 上的大规模并行；"
    "TensorFlow 存量系统多。Use torch.compile for speed. Then profile it."
)
TABLE = "| 维度 | PyTorch | JAX |\n|---|---|---|\n| 易用性 | 高 | 中 |\n| 性能 | 好 | 强 |"
TREE = "部署到哪里？\n├─ 英特尔 CPU → OpenVINO\n├─ NVIDIA GPU → TensorRT\n└─ 服务大模型 → vLLM"
DEPLOY = "在边缘设备上部署模型用 OpenVINO。服务端用 vLLM。"
TEXT = f"{H1}\n{PROSE}\n{TABLE}\n{H2}\n{DEPLOY}\n{TREE}\n"


def _block(doc: Document, kind: BlockKind, text: str, path: tuple[str, ...]) -> Block:
    start = doc.text.index(text)
    block = Block(kind=kind, start=start, end=start + len(text), text=text, heading_path=path)
    if kind in (BlockKind.TABLE, BlockKind.DECISION_TREE):
        lines = text.split("\n")
        block.items = lines
        offsets = [start + sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
        block.item_spans = [(o, o + len(x)) for o, x in zip(offsets, lines, strict=True)]
    return block


def _doc_and_blocks() -> tuple[Document, list[Block]]:
    doc = Document.from_text("notes/dl.txt", TEXT)
    blocks = [
        _block(doc, BlockKind.HEADING, H1, (H1,)),
        _block(doc, BlockKind.PROSE, PROSE, (H1,)),
        _block(doc, BlockKind.TABLE, TABLE, (H1,)),
        _block(doc, BlockKind.HEADING, H2, (H2,)),
        _block(doc, BlockKind.PROSE, DEPLOY, (H2,)),
        _block(doc, BlockKind.DECISION_TREE, TREE, (H2,)),
    ]
    return doc, blocks


def _check_spans(doc: Document, chunks: list[Chunk]) -> None:
    for chunk in chunks:
        assert chunk.text == doc.text[chunk.start : chunk.end]
        assert chunk.id == f"{doc.id}#{chunk.start}-{chunk.end}"
        assert chunk.doc == doc.id
        assert chunk.text == chunk.text.strip()


def test_large_budget_gives_one_chunk_per_section() -> None:
    doc, blocks = _doc_and_blocks()
    chunks = chunk_document(doc, blocks, max_chars=400)
    _check_spans(doc, chunks)
    assert [c.heading_path for c in chunks] == [(H1,), (H2,)]
    assert chunks[0].text == f"{PROSE}\n{TABLE}"
    assert chunks[1].text == f"{DEPLOY}\n{TREE}"
    assert H1 not in chunks[0].text and H2 not in chunks[1].text


def test_chunks_never_cross_a_section_and_cut_at_sentences() -> None:
    doc, blocks = _doc_and_blocks()
    h2_start = TEXT.index(H2)
    chunks = chunk_document(doc, blocks, max_chars=40, overlap_sentences=0)
    _check_spans(doc, chunks)
    for chunk in chunks:
        in_first = chunk.end <= h2_start
        assert in_first == (chunk.heading_path == (H1,))
        assert in_first or chunk.start > h2_start
    prose_chunks = [c for c in chunks if doc.text.index(PROSE) <= c.start < doc.text.index(TABLE)]
    assert len(prose_chunks) > 2
    for chunk in prose_chunks:
        assert len(chunk.text) <= 40
        assert chunk.text[-1] in "。！；."
    # No overlap: together the prose chunks cover each sentence exactly once.
    assert "".join(c.text for c in prose_chunks).replace(" ", "") == PROSE.replace(" ", "")


def test_overlap_repeats_the_last_sentence() -> None:
    doc, blocks = _doc_and_blocks()
    chunks = chunk_document(doc, blocks, max_chars=60, overlap_sentences=1)
    prose = [c for c in chunks if c.heading_path == (H1,) and not c.text.startswith("|")]
    assert len(prose) >= 2
    for first, second in itertools.pairwise(prose):
        last_sentence = first.text[split_sentences(first.text)[-1][0] :]
        assert second.text.startswith(last_sentence)
        assert second.start < first.end


def test_table_and_tree_stay_whole_when_they_fit_twice_the_budget() -> None:
    doc, blocks = _doc_and_blocks()
    budget = max(len(TABLE), len(TREE)) // 2 + 1
    chunks = chunk_document(doc, blocks, max_chars=budget)
    texts = [c.text for c in chunks]
    assert TABLE in texts
    assert TREE in texts


def test_oversized_table_and_tree_split_between_rows() -> None:
    doc, blocks = _doc_and_blocks()
    chunks = chunk_document(doc, blocks, max_chars=12, overlap_sentences=0)
    _check_spans(doc, chunks)
    table_lines = set(TABLE.split("\n"))
    table_chunks = [c for c in chunks if c.text.startswith("|")]
    assert len(table_chunks) >= 2
    for chunk in table_chunks:
        assert set(chunk.text.split("\n")) <= table_lines  # whole rows only
    tree_lines = set(TREE.split("\n"))
    tree_chunks = [c for c in chunks if c.text.split("\n")[0] in tree_lines]
    assert {line for c in tree_chunks for line in c.text.split("\n")} == tree_lines


def test_ids_are_stable_and_sorted() -> None:
    doc, blocks = _doc_and_blocks()
    first = chunk_document(doc, blocks, max_chars=50)
    second = chunk_document(doc, list(reversed(blocks)), max_chars=50)
    assert [c.id for c in first] == [c.id for c in second]
    assert [c.start for c in first] == sorted(c.start for c in first)


def test_block_that_disagrees_with_the_document_is_rejected() -> None:
    doc, blocks = _doc_and_blocks()
    bad = blocks[1].model_copy(update={"start": blocks[1].start + 1})
    with pytest.raises(IngestError, match=r"notes/dl\.txt"):
        chunk_document(doc, [bad])


def test_overlong_sentence_is_hard_cut() -> None:
    text = "甲" * 25 + "。"
    doc = Document.from_text("d.txt", text)
    block = Block(kind=BlockKind.PROSE, start=0, end=len(text), text=text)
    chunks = chunk_document(doc, [block], max_chars=10)
    assert [len(c.text) for c in chunks] == [10, 10, 6]
    soft = Document.from_text("e.txt", "短句，" * 6)
    soft_block = Block(kind=BlockKind.PROSE, start=0, end=18, text=soft.text)
    assert [c.text for c in chunk_document(soft, [soft_block], max_chars=10)] == ["短句，" * 3] * 2
    _check_spans(doc, chunks)


def test_embedding_text_carries_the_heading_path() -> None:
    doc, blocks = _doc_and_blocks()
    chunk = chunk_document(doc, blocks)[1]
    assert chunk_embedding_text(chunk) == f"{H2}\n{DEPLOY}\n{TREE}"
    bare = chunk.model_copy(update={"heading_path": ()})
    assert chunk_embedding_text(bare) == bare.text


def test_list_splits_between_items_and_sentences() -> None:
    items = ["GPU 云：按小时租卡。训练任务用 torchrun。", "实验管理：W&B 或 MLflow。"]
    text = "云平台\n" + "\n".join(f"- {item}" for item in items) + "\n"
    doc = Document.from_text("list.txt", text)
    spans = [(text.index(item), text.index(item) + len(item)) for item in items]
    start, end = spans[0][0] - 2, spans[-1][1]
    block = Block(
        kind=BlockKind.LIST,
        start=start,
        end=end,
        text=text[start:end],
        heading_path=("云平台",),
        items=items,
        item_spans=spans,
        depths=[0, 0],
    )
    chunks = chunk_document(doc, [block], max_chars=20, overlap_sentences=0)
    _check_spans(doc, chunks)
    assert [c.text for c in chunks] == [
        "GPU 云：按小时租卡。",
        "训练任务用 torchrun。",
        "实验管理：W&B 或 MLflow。",
    ]
    whole = chunk_document(doc, [block], max_chars=100)
    assert [c.text for c in whole] == [text[spans[0][0] : end]]
