"""Structure parsing: each block kind on a small hand-made document, then both seed articles."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ingest.load import load_document
from ingest.structure import (
    definition_spans,
    parse_blocks,
    split_arrows,
    split_definition,
)
from kg.documents import Block, BlockKind, Document

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def _parse(text: str, media_type: str = "text/plain") -> tuple[Document, list[Block]]:
    doc = Document.from_text("t.txt", text, media_type=media_type)
    blocks = parse_blocks(doc)
    _check_spans(doc, blocks)
    return doc, blocks


def _check_spans(doc: Document, blocks: list[Block]) -> None:
    end = 0
    for b in blocks:
        assert b.text == doc.text[b.start : b.end]
        assert b.start >= end, f"overlap at {b.start}: {b.text[:30]!r}"
        end = b.end
        for item, (s, e) in zip(b.items, b.item_spans, strict=True):
            assert doc.text[s:e] == item
            assert b.start <= s <= e <= b.end
        assert len(b.depths) == len(b.items)
        for row, spans in zip(b.rows, b.cell_spans, strict=True):
            assert [doc.text[s:e] for s, e in spans] == row
        if b.kind == BlockKind.CODE:
            assert b.code == b.text


def _kinds(blocks: list[Block]) -> list[str]:
    return [b.kind.value for b in blocks]


SCRAPED = """指南标题
一句话定义：框架是研究速度与工程效率的权衡。
一、训练基础设施
1. 单卡
单卡就够了，先学会混合精度。
2. 多卡：DDP 与 FSDP
多卡用 DDP。
一个务实提醒
别过早优化。
二、部署
部署用 ONNX Runtime。
"""


def test_scraped_headings_nest_by_style() -> None:
    _, blocks = _parse(SCRAPED)
    heads = [(b.text, b.level, b.heading_path) for b in blocks if b.kind == BlockKind.HEADING]
    assert heads == [
        ("指南标题", 1, ("指南标题",)),
        ("一、训练基础设施", 2, ("指南标题", "一、训练基础设施")),
        ("1. 单卡", 3, ("指南标题", "一、训练基础设施", "1. 单卡")),
        ("2. 多卡：DDP 与 FSDP", 3, ("指南标题", "一、训练基础设施", "2. 多卡：DDP 与 FSDP")),
        (
            "一个务实提醒",
            4,
            ("指南标题", "一、训练基础设施", "2. 多卡：DDP 与 FSDP", "一个务实提醒"),
        ),
        ("二、部署", 2, ("指南标题", "二、部署")),
    ]
    prose = {b.text: b.heading_path for b in blocks if b.kind == BlockKind.PROSE}
    assert prose["多卡用 DDP。"] == ("指南标题", "一、训练基础设施", "2. 多卡：DDP 与 FSDP")
    assert prose["部署用 ONNX Runtime。"] == ("指南标题", "二、部署")
    assert blocks[1].kind == BlockKind.DEFINITION
    assert blocks[1].term == "一句话定义"


BLANK_SEPARATED = """我的标题？

导读：

1. 第一部分
2. 第二部分

核心维度：从计算到易用

这是一段普通的说明文字，很短。

短句没有标点

3. 我主要做什么（研究 vs. 工程）？

   • 研究：PyTorch

下一节（附录）

结尾。
"""


def test_blank_separated_headings_titles_and_numbered_lists() -> None:
    _, blocks = _parse(BLANK_SEPARATED)
    assert _kinds(blocks) == [
        "heading",  # title line, may end with ？
        "prose",  # lead-in ending with a colon
        "list",  # consecutive numbered lines are a list, not headings
        "heading",  # standalone short line with a colon, blank line after
        "prose",
        "heading",
        "heading",  # an isolated numbered question
        "list",
        "heading",
        "prose",
    ]
    heads = [b for b in blocks if b.kind == BlockKind.HEADING]
    assert [h.level for h in heads] == [1, 2, 2, 3, 2]
    assert heads[3].heading_path == (
        "我的标题？",
        "短句没有标点",
        "3. 我主要做什么（研究 vs. 工程）？",
    )
    assert blocks[2].items == ["第一部分", "第二部分"]
    assert blocks[7].heading_path == heads[3].heading_path


def test_prose_sentences_are_not_headings() -> None:
    text = (
        "标题\n这是第一句。\n做好三件事：a、b、c。\n1. 先安装 PyTorch，然后配置环境。\n"
        "很好\n内容。\n末行\n"
    )
    _, blocks = _parse(text)
    assert [b.kind for b in blocks[1:]] == [
        BlockKind.PROSE,
        BlockKind.DEFINITION,
        BlockKind.LIST,  # numbered, but a sentence: a one-item list
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.PROSE,  # nothing follows: not a heading
    ]
    # a short line right after a paragraph cut mid-sentence continues it
    long_line = "这是一段相当长的正文，它在硬换行的时候被切断了，没有写完的句子"
    wrapped = f"标题\n{long_line}\n所以这里\n接着写完。\n"
    _, blocks = _parse(wrapped)
    assert _kinds(blocks) == ["heading", "prose"]
    assert blocks[1].text == f"{long_line}\n所以这里\n接着写完。"


def test_a_wrapped_list_items_rest_in_lower_case_is_no_heading() -> None:
    # a slide's bullet wrapped over short lines (a PDF's text layer): its rest starts in lower
    # case under a line cut mid-sentence; a title under it starts otherwise
    text = (
        "Results\n• Pruning: smaller models\n• 30% fewer steps for\nthe same loss on\n"
        "held-out data\n\nvLLM Notes\n• Paged cache\n"
    )
    _, blocks = _parse(text)
    assert _kinds(blocks) == ["heading", "list", "heading", "list"]
    assert blocks[1].items == [
        "Pruning: smaller models",
        "30% fewer steps for\nthe same loss on\nheld-out data",
    ]
    assert blocks[2].text == "vLLM Notes"


def test_markdown_headings_only_trust_hashes() -> None:
    text = (
        "# Guide\n\nShort line\n\n## Setup\n\n1. install\n\n### Detail\n\ntext.\n\n## Run\n\nok.\n"
    )
    _, blocks = _parse(text, "text/markdown")
    heads = [(b.heading_path, b.level) for b in blocks if b.kind == BlockKind.HEADING]
    assert heads == [
        (("Guide",), 1),
        (("Guide", "Setup"), 2),
        (("Guide", "Setup", "Detail"), 3),
        (("Guide", "Run"), 2),
    ]
    assert _kinds(blocks)[1:3] == ["prose", "heading"]
    assert blocks[3].kind == BlockKind.LIST


def test_tables_with_and_without_outer_pipes_and_ragged_rows() -> None:
    text = (
        "表格如下：\n"
        "| 库 | 作用 | 用法 |\n"
        "|:---|---:|---|\n"
        "transformers | 模型接口 | 微调 |\n"
        "| peft | 高效微调 |\n"
        "datasets | 数据 | 流式 | 多余 |\n"
        "| a \\| b | c | d\n"
        "表后文字。\n"
    )
    doc, blocks = _parse(text)
    assert _kinds(blocks) == ["prose", "table", "prose"]
    table = blocks[1]
    assert table.rows == [
        ["库", "作用", "用法"],
        ["transformers", "模型接口", "微调"],
        ["peft", "高效微调", ""],
        ["datasets", "数据", "流式"],
        ["a \\| b", "c", "d"],
    ]
    assert table.text.endswith("| a \\| b | c | d")
    s, e = table.cell_spans[1][0]
    assert (s, e) == (doc.text.index("transformers"), doc.text.index("transformers") + 12)


TREE = """按场景走：
你的首要目标是什么？
├─ 做研究
│ └─ PyTorch ──────→ PyTorch + transformers
├─ 大规模训练
│ └─ JAX
└─ 把已有模型上线
├─ 通用服务 → ONNX Runtime
└─ 边缘端 → OpenVINO
规模？
├─ 单卡 → 混合精度
└─ 多卡 → DDP
"""


def test_decision_trees_with_root_and_lost_indentation() -> None:
    _, blocks = _parse(TREE)
    assert _kinds(blocks) == ["prose", "decision_tree", "decision_tree"]
    first, second = blocks[1], blocks[2]
    assert first.items == [
        "你的首要目标是什么？",
        "做研究",
        "PyTorch ──────→ PyTorch + transformers",
        "大规模训练",
        "JAX",
        "把已有模型上线",
        "通用服务 → ONNX Runtime",
        "边缘端 → OpenVINO",
    ]
    assert first.depths == [0, 1, 2, 1, 2, 1, 2, 2]
    assert second.items == ["规模？", "单卡 → 混合精度", "多卡 → DDP"]
    assert second.depths == [0, 1, 1]
    item = first.items[2]
    assert [item[s:e] for s, e in split_arrows(item)] == ["PyTorch", "PyTorch + transformers"]


def test_space_indented_tree_without_root() -> None:
    text = "正文。\n\n├── a\n│   ├── b\n│   └── c\n└── d\n    └── e\n"
    _, blocks = _parse(text)
    assert blocks[1].kind == BlockKind.DECISION_TREE
    assert blocks[1].items == ["a", "b", "c", "d", "e"]
    assert blocks[1].depths == [1, 2, 2, 1, 2]


def test_nested_lists_and_glued_items() -> None:
    text = (
        "要点：\n"
        "• 抽象层次：\n"
        "\n"
        "  • 高度封装：像搭积木。\n"
        "    * 命令式：立即执行。\n"
        "• 生态\n"
        "- GPU 云：按小时租卡；训练任务管理用\n"
        "accelerate。 - 实验追踪：W&B 记录指标；本地先用 TensorBoard +\n"
        "config.yaml。 - 规模化：Kubernetes。\n"
        "后面是正文。\n"
    )
    _, blocks = _parse(text)
    assert _kinds(blocks) == ["prose", "list", "prose"]
    lst = blocks[1]
    assert lst.items == [
        "抽象层次：",
        "高度封装：像搭积木。",
        "命令式：立即执行。",
        "生态",
        "GPU 云：按小时租卡；训练任务管理用\naccelerate。",
        "实验追踪：W&B 记录指标；本地先用 TensorBoard +\nconfig.yaml。",
        "规模化：Kubernetes。",
    ]
    assert lst.depths == [0, 1, 2, 0, 0, 0, 0]


def test_definitions() -> None:
    _, blocks = _parse("标题\n首选：PyTorch，先学会搭模型。\nNote: see the docs.\n选型逻辑：\n")
    assert [(b.kind.value, b.term) for b in blocks[1:]] == [
        ("definition", "首选"),
        ("definition", "Note"),
        ("prose", None),
    ]
    assert split_definition("• x：y") is None
    assert split_definition("研究/写论文：PyTorch >> JAX") == ("研究/写论文", "PyTorch >> JAX")
    assert split_definition("见 https://pytorch.org 文档") is None
    assert split_definition("这是一个很长很长的句子里面恰好出现了一个冒号：后面") is None
    text = "  首选： PyTorch  "
    spans = definition_spans(text)
    assert spans is not None
    assert [text[s:e] for s, e in spans] == ["首选", "PyTorch"]


CODE = """PyTorch DDP 最小示例：
python
import torch.distributed as dist
def init(rank, world_size):
dist.init_process_group("nccl", rank=rank)
model = DDP(YourModel().to(rank))
return model
mp.spawn(init, args=(2,), nprocs=2)启动命令：torchrun --nproc_per_node=4 train.py。
bash
# 导出示例
torch.onnx.export(model, x, "m.onnx",
input_names=["输入"],
dynamic_axes={"input": {0: "batch"}})三、下一节
正文。
"""


def test_code_with_lost_fences_is_cut_before_glued_prose() -> None:
    _, blocks = _parse(CODE)
    assert _kinds(blocks) == ["prose", "code", "definition", "code", "heading", "prose"]
    py, sh = blocks[1], blocks[3]
    assert py.language == "python"
    assert py.code is not None
    assert py.code.startswith("import torch.distributed")
    assert py.code.endswith("nprocs=2)")
    assert blocks[2].text == "启动命令：torchrun --nproc_per_node=4 train.py。"
    assert sh.language == "bash"
    assert sh.code == (
        '# 导出示例\ntorch.onnx.export(model, x, "m.onnx",\ninput_names=["输入"],\n'
        'dynamic_axes={"input": {0: "batch"}})'
    )
    assert blocks[4].text == "三、下一节"


def test_fenced_and_unmarked_code() -> None:
    text = "# Use\n\n```python\nimport jax\n\n  x = 1\n```\n\nfrom a import b\nb()\n\nDone.\n"
    _, blocks = _parse(text, "text/markdown")
    assert _kinds(blocks) == ["heading", "code", "code", "prose"]
    assert (blocks[1].language, blocks[1].code) == ("python", "import jax\n\n  x = 1")
    assert (blocks[2].language, blocks[2].code) == ("python", "from a import b\nb()")
    assert blocks[1].heading_path == ("Use",)


def test_a_language_word_without_code_is_text() -> None:
    _, blocks = _parse("标题\npython\n是一种语言。\n")
    assert all(b.kind != BlockKind.CODE for b in blocks)


def test_empty_document() -> None:
    assert parse_blocks(Document.from_text("e", "")) == []


# --- the bundled articles -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def article1() -> tuple[Document, list[Block]]:
    doc = load_document(CORPUS / "framework-and-tool-selection.txt", CORPUS)
    return doc, parse_blocks(doc)


@pytest.fixture(scope="module")
def article2() -> tuple[Document, list[Block]]:
    doc = load_document(CORPUS / "how-to-judge-dl-frameworks.txt", CORPUS)
    return doc, parse_blocks(doc)


def test_article_spans(
    article1: tuple[Document, list[Block]], article2: tuple[Document, list[Block]]
) -> None:
    for doc, blocks in (article1, article2):
        _check_spans(doc, blocks)
        assert len(blocks) > 20


def test_article1_code_blocks(article1: tuple[Document, list[Block]]) -> None:
    doc, blocks = article1
    code = [b for b in blocks if b.kind == BlockKind.CODE]
    assert [b.language for b in code] == ["python", "bash", "python"]
    ddp = next(b for b in code if "DistributedDataParallel" in b.text)
    assert ddp.text.endswith("nprocs=torch.cuda.device_count())")
    assert doc.text[ddp.end :].startswith("启动命令")
    onnx = code[1]
    assert onnx.text.startswith("# ") and "torch.onnx.export(" in onnx.text
    assert onnx.text.endswith('{0: "batch"}})')
    heading_after = next(b for b in blocks if b.start >= onnx.end)
    assert heading_after.kind == BlockKind.HEADING
    assert heading_after.text.startswith("四、")


def test_article1_tables(article1: tuple[Document, list[Block]]) -> None:
    _, blocks = article1
    tables = [b for b in blocks if b.kind == BlockKind.TABLE]
    assert [(len(t.rows), {len(r) for r in t.rows}) for t in tables] == [
        (8, {4}),
        (5, {4}),
        (6, {4}),
        (5, {3}),
    ]
    hf = tables[3]
    assert [r[0] for r in hf.rows] == ["库", "transformers", "datasets", "diffusers", "peft"]
    assert hf.rows[1][1] == "预训练模型统一接口"


def test_article1_trees_and_lists(article1: tuple[Document, list[Block]]) -> None:
    _, blocks = article1
    trees = [b for b in blocks if b.kind == BlockKind.DECISION_TREE]
    assert [len(t.items) for t in trees] == [12, 4]
    assert [t.items[0] for t in trees] == ["你的首要目标是什么？", "训练规模？"]
    assert trees[0].depths == [0, 1, 2, 1, 2, 1, 2, 1, 2, 2, 2, 2]
    assert trees[1].depths == [0, 1, 1, 1]
    glued = next(b for b in blocks if b.kind == BlockKind.LIST and "实验追踪" in b.text)
    assert len(glued.items) == 3
    assert glued.items[1].startswith("实验追踪：")


def test_article1_headings(article1: tuple[Document, list[Block]]) -> None:
    _, blocks = article1
    heads = [b.text for b in blocks if b.kind == BlockKind.HEADING]
    assert sum(h[0] in "一二三四五六" and h[1] == "、" for h in heads) == 6
    assert {"1. 单卡", "2. 多卡：DDP 与 FSDP", "3. 云平台与实验管理", "一个务实提醒"} <= set(heads)
    single = next(b for b in blocks if b.text == "1. 单卡")
    assert single.heading_path[-2].startswith("二、")


def test_article2_headings_and_lists(article2: tuple[Document, list[Block]]) -> None:
    _, blocks = article2
    heads = [b for b in blocks if b.kind == BlockKind.HEADING]
    numbered = [h for h in heads if h.text[0].isdigit()]
    assert len(numbered) == 5
    assert all(h.heading_path[-2].startswith("判断框架优劣") for h in numbered)
    toc = next(b for b in blocks if b.kind == BlockKind.LIST)
    assert len(toc.items) == 4
    assert not any(b.kind == BlockKind.HEADING and b.text.endswith("。") for b in blocks)


@pytest.mark.parametrize("media_type", ["text/plain", "text/markdown"])
def test_shuffled_and_damaged_articles_keep_invariants(media_type: str) -> None:
    lines = [ln for p in sorted(CORPUS.glob("*.txt")) for ln in p.read_text("utf-8").split("\n")]
    rng = random.Random(7)
    junk = ["", "|", "├─ ", "```", "python", "\t", "  • ", "：", "import os"]
    for n in range(60):
        sample = rng.sample(lines, rng.randint(1, 50))
        if n % 2:
            sample = [ln[: rng.randint(0, len(ln))] + rng.choice(junk) for ln in sample]
        doc = Document.from_text("x", "\n".join(sample), media_type=media_type)
        _check_spans(doc, parse_blocks(doc))
