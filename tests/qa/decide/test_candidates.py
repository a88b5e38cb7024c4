"""The names a reader may pick, drawn from a docs page written for this test and ingested for
real: section titles without their numbering, bold and code spans, bracketed aliases, a table's
row labels, defined terms; never a word of the question, never a section label that heads many
sections."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import normalize_name
from qa.api import Assistant
from qa.decide import Candidate, Reading, candidate_names
from qa.decide.candidates import number_evidence, section_labels
from qa.decide.prompts import reader_messages

PAGE = """# Quokka 压缩指南

Quokka 是一个端侧推理引擎。

## 📦 一、权重压缩（Weight Packing）

### ✅ 适用场景

- 只想缩小模型文件，不改变计算精度，也没有校准数据时，用 **权重压缩**。

### 🧪 使用方法

设置 `--packBits 8` 即可。

## 🔍 二、校准压缩（推荐用于加速）

### ✅ 适用场景

- 有几百张校准图片、想要最快的整型推理时，用校准压缩（Calibrated Packing，CP）。

### 🧪 使用方法

| 方案 | 命令 | 需要数据 |
|---|---|---|
| 校准压缩 | `quokka-pack --calib images/` | 是 |
| 权重压缩 | `quokka-pack --packBits 8` | 否 |

Halo 模式: 体积最小但最慢的方案。
"""

QUESTION = "我们没有任何校准数据，只想把 Quokka 模型文件变小，不改变精度。用哪种压缩方式？"


def _page_assistant(factory: pytest.TempPathFactory, name: str, page: str) -> Assistant:
    """The graph-only assistant over a store of one page, ingested for real."""
    store: Path = article_store(factory, {name: page})
    return Assistant.open(store, dense=False, llm="none")


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return _page_assistant(tmp_path_factory, "quokka-compress.md", PAGE)


def _reading(assistant: Assistant, question: str) -> Reading:
    parsed = assistant.understand(question)
    draft, specific, ranked = assistant._drafted(parsed)
    return assistant.reading(parsed, draft, specific, ranked)


def _page_candidates(assistant: Assistant, question: str = "") -> list[Candidate]:
    """The candidates every unit of the page gives (retrieval aside)."""
    units = [u for u in assistant.units.units if u.kind != UnitKind.HEADING]
    return candidate_names(
        assistant.graph,
        units,
        assistant.documents,
        question=question,
        labels=section_labels(assistant.units.units),
        limit=100,
    )


def test_the_candidates_are_the_names_the_page_gives(assistant: Assistant) -> None:
    names = [c.name for c in _page_candidates(assistant)]
    # section titles without numbering, emoji or a bracketed note; a bracketed alias in another
    # script is a name too; bold terms and code spans, a row's label, a defined term, the Latin
    # gloss of a Chinese term
    for name in (
        "权重压缩",
        "Weight Packing",
        "--packBits 8",
        "校准压缩",
        "Halo 模式",
        "Calibrated Packing",
        "CP",
    ):
        assert name in names, names
    # a note in brackets is no name, nor the labels that head every section, nor the page's title
    for label in ("推荐用于加速", "适用场景", "使用方法", "Quokka 压缩指南"):
        assert label not in names, names


def test_the_readers_candidates_leave_out_the_askers_words(assistant: Assistant) -> None:
    reading = _reading(assistant, QUESTION)
    names = [c.name for c in reading.candidates]
    assert "权重压缩" in names, names
    # the question's own words and the thing it names are the asker's situation, not answers
    folded = normalize_name(QUESTION)
    assert all(normalize_name(n) not in folded for n in names)
    assert "Quokka" not in names and "quokka" not in [normalize_name(n) for n in names]
    # each candidate comes with the evidence lines that name it, and some line names each
    assert all(c.evidence for c in reading.candidates)
    for candidate in reading.candidates:
        for number in candidate.evidence:
            unit = reading.evidence[number - 1]
            said = normalize_name(
                assistant.documents[unit.doc][unit.start : unit.end] + " ".join(unit.heading_path)
            )
            assert normalize_name(candidate.name) in said or candidate.entity in {
                unit.subject,
                *unit.mentions,
            }


def test_the_prompt_lists_numbered_evidence_then_candidates_then_the_question(
    assistant: Assistant,
) -> None:
    reading = _reading(assistant, QUESTION)
    lines = reader_messages(reading, "pick")[1]["content"].splitlines()
    assert lines[0] == "证据："
    assert lines[1] == "# quokka-compress" and lines[2].startswith("[1] (")
    assert lines[-2].startswith("候选") and lines[-1] == f"问题：{reading.question}"


def test_a_question_asking_how_much_has_no_pick_to_make(assistant: Assistant) -> None:
    # a figure answers it: the reader reads the lines, and no name is offered to pick
    reading = _reading(assistant, "用校准压缩时，需要准备多少张校准图片？")
    assert not reading.choose and reading.candidates == []
    assert reading.evidence
    # asking which one, and how much, still asks for a pick
    reading = _reading(assistant, "校准压缩和权重压缩选哪个？各要多少数据？")
    assert reading.choose and reading.candidates


def test_a_yes_or_no_question_about_a_thing_has_no_pick_to_make(assistant: Assistant) -> None:
    # the evidence answers yes or no: the reader reads the lines, and no name is offered
    for question in (
        "权重压缩需要校准数据吗？",
        "Does weight packing change the precision?",
        "For a small model, does weight packing change the precision?",
    ):
        reading = _reading(assistant, question)
        assert not reading.choose and reading.candidates == [], question
        assert reading.evidence
    # asking whether one should do something asks for a pick: the better way, if not that one
    for question in (
        "没有校准数据，还应该用校准压缩吗？",
        "Is calibrated packing a good idea here?",
    ):
        reading = _reading(assistant, question)
        assert reading.choose and reading.candidates, question


def test_a_name_inside_a_longer_word_is_not_named() -> None:
    text = "On OOM lower `--gpu_memory_utilization` (see [FAQ](http://docs.github.io/x)) on 2 GPUs."
    seen = "On OOM lower --gpu_memory_utilization (see FAQ) on 2 GPUs."
    unit = EvidenceUnit(
        id=f"d#0-{len(text)}", doc="d", start=0, end=len(text), kind=UnitKind.SENTENCE, text=seen
    )
    names = ["GPU", "TP", "--gpu_memory_utilization", "OOM", "UT", "GitHub"]
    numbered = number_evidence([Candidate(name=n) for n in names], [unit], {"d": text})
    # "GPU" is named by "GPUs", not by the flag; "UT" is in a flag's word only, and "TP" and
    # "GitHub" in a link's address, which the reader does not see
    assert {c.name: c.evidence for c in numbered} == {
        "GPU": [1],
        "TP": [],
        "--gpu_memory_utilization": [1],
        "OOM": [1],
        "UT": [],
        "GitHub": [],
    }


def _names_of_sentence(quote: str) -> list[str]:
    """The candidates a document of one sentence gives (its text the quote without markup)."""
    unit = EvidenceUnit(
        id=f"d#0-{len(quote)}",
        doc="d",
        start=0,
        end=len(quote),
        kind=UnitKind.SENTENCE,
        text=quote.replace("`", ""),
    )
    return [c.name for c in candidate_names(KnowledgeGraph(), [unit], {"d": quote})]


def test_a_single_letter_is_no_name() -> None:
    names = _names_of_sentence("Pass `y` as the second array of `jnp.dot`.")
    assert "jnp.dot" in names and "y" not in names, names


def test_a_literal_value_is_no_name() -> None:
    quote = "With `torch.compile`, set `use_orig_params` to `True` (default: `None`)."
    names = _names_of_sentence(quote)
    assert names == ["torch.compile", "use_orig_params"], names


def _tutorial(engine: str, fix: str) -> str:
    return f"""# 用 {engine} 部署 Quokka

## 启动服务

用 `{engine} serve quokka-7b` 启动服务。

## 常见问题

### 输出乱码

{fix}

## 参考链接

- [{engine} 文档](https://example.org/{engine})
- [Quokka 主页](https://example.org/quokka)
"""


def test_a_title_many_pages_share_is_no_name(tmp_path_factory: pytest.TempPathFactory) -> None:
    # two tutorials of one site: the sections every page has say what a section is ("参考链接",
    # "常见问题"), and a symptom two pages answer is no thing to pick either; a shared title
    # that the pages' sentences say too ("启动服务") is a name they use, and stays one
    store: Path = article_store(
        tmp_path_factory,
        {
            "wisp-deploy.md": _tutorial("wisp", "升级 wisp 到 0.4 以上。"),
            "fennel-deploy.md": _tutorial("fennel", "关闭 `--fast-kernels` 即可。"),
        },
    )
    assistant = Assistant.open(store, dense=False, llm="none")
    units = [u for u in assistant.units.units if u.kind != UnitKind.HEADING]
    names = [
        c.name
        for c in candidate_names(
            assistant.graph,
            units,
            assistant.documents,
            labels=assistant.section_labels,
            limit=100,
        )
    ]
    for label in ("参考链接", "常见问题", "输出乱码"):
        assert label not in names, names
    assert "--fast-kernels" in names and "启动服务" in names, names


SPLIT_PAGE = """# Marrowflow serving notes

Marrowflow serves language models; it is an inference engine.

## Splitting a large model

When a model is too big for one GPU but fits on one machine, use tensor parallelism: set
`--tp` to the number of GPUs. When it needs several machines, add pipeline parallelism.
"""


def test_a_kind_word_in_the_question_leaves_every_kind_a_candidate(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    assistant = _page_assistant(tmp_path_factory, "marrowflow-serving.md", SPLIT_PAGE)
    # "inference engine" names the kind of thing Marrowflow is; the answer is a parallelism
    question = "Which way should our inference engine split a model that is too big for one GPU?"
    names = [c.name for c in _reading(assistant, question).candidates]
    assert assistant.graph.find("tensor parallelism") is not None  # an entity, of another kind
    assert "Tensor Parallelism" in names, names


SHRINK_PAGE = """# Quokka 瘦身指南

## 剪枝

剪枝去掉不重要的权重，模型文件变小，但要在 Quokka 的稀疏内核上才会变快。

## 知识蒸馏

知识蒸馏用大模型教一个小模型，小模型在手机上又小又快，但要重新训练。
"""


def test_two_things_the_question_links_and_joins_are_its_options(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    assistant = _page_assistant(tmp_path_factory, "quokka-shrink.md", SHRINK_PAGE)
    question = "Quokka 的模型要放到手机上，是做剪枝还是知识蒸馏？"
    parsed = assistant.understand(question)
    assert not parsed.frame.options  # Chinese terms have no name's shape for the pattern
    names = [c.name for c in _reading(assistant, question).candidates]
    # both alternatives, by the graph's names, come first although the question says them
    graph = assistant.graph
    options = [
        graph.entity(e).name for e in ("technique:pruning", "technique:knowledge-distillation")
    ]
    assert names[:2] == options, names


def test_a_lead_of_two_sentences_is_no_name() -> None:
    # a reference list's "Author. Title: what it is" leads with two sentences: no candidate;
    # a one-sentence lead of the same list is one
    doc = "- Wren. Wren Handbook: the packer's guide\n- Kestrel Notes: a blog\n"
    units = [
        EvidenceUnit(
            id=f"refs.md#{start}",
            doc="refs.md",
            start=start,
            end=start + len(text),
            kind=UnitKind.ITEM,
            text=text,
            lead=text.split(":")[0],
        )
        for start, text in (
            (2, "Wren. Wren Handbook: the packer's guide"),
            (44, "Kestrel Notes: a blog"),
        )
    ]
    names = [c.name for c in candidate_names(KnowledgeGraph(), units, {"refs.md": doc})]
    assert "Kestrel Notes" in names
    assert not any("Wren. Wren" in name for name in names)


TARN_PAGE = """\
# Shrinking Quokka models

Two packages quantize Quokka checkpoints.

```bash
pip install tarnlib gizmo-quant
```

## Which to use

With tarnlib, 4-bit weights are made as the checkpoint is read, from no sample inputs.
tarnlib runs on Vulkan. Gizmo-Quant requires CUDA and a few hundred sample inputs, but its
4-bit models answer sooner than tarnlib's.
"""


def test_a_package_named_in_lower_case_is_an_option_said_twice_with_its_preposition(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # "tarnlib" is a thing only because the page pip-installs it; "with A or with B" puts the
    # two side by side as "A or B" does
    assistant = _page_assistant(tmp_path_factory, "quokka-shrink-bits.md", TARN_PAGE)
    question = "With no sample inputs at hand, should I shrink it with tarnlib or with Gizmo-Quant?"
    names = [c.name.casefold() for c in _reading(assistant, question).candidates]
    assert names[:2] == ["tarnlib", "gizmo-quant"], names
    # alternatives named in the situation before the clause that asks are not its options
    question = "我们的模型是 Whisper、ViT 这类，量化用 tarnlib 还是用 Gizmo-Quant？"
    names = [c.name.casefold() for c in _reading(assistant, question).candidates]
    assert names[:2] == ["tarnlib", "gizmo-quant"], names
    # where the clause that asks names none, those named before it are its options
    question = "tarnlib 和 Gizmo-Quant 比，哪个不需要样本输入？"
    names = [c.name.casefold() for c in _reading(assistant, question).candidates]
    assert names[:2] == ["tarnlib", "gizmo-quant"], names


SHARDING_PAGE = """# Splitting the lookup table of a Quokka ranker

## Two ways to split it

Row-wise sharding gives each card a slice of the vocabulary; every card looks up every input.
Column-wise sharding gives each card a slice of every vector, which suits tables whose vectors
are very wide, as a ranker's feature tables are.

## 两种切法

按词表切分时，每张卡只存一部分词表。按向量切分时，每张卡存每个向量的一段，特征维度很大的表更适合这种切法。
"""


def test_alternatives_written_as_plain_words_are_options_where_the_page_says_them(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # neither alternative has a name's shape or is a thing the graph knows: the words next to
    # the joiner that the page also says are the options, and come first
    assistant = _page_assistant(tmp_path_factory, "quokka-ranker-tables.md", SHARDING_PAGE)
    question = "My ranker's feature vectors are huge: row-wise sharding or column-wise sharding?"
    names = [c.name.casefold() for c in _reading(assistant, question).candidates]
    assert names[:2] == ["row-wise sharding", "column-wise sharding"], names
    question = "特征维度很大，选按词表切分还是按向量切分？"
    names = [c.name for c in _reading(assistant, question).candidates]
    assert names[:2] == ["按词表切分", "按向量切分"], names


BOARDS = """# 几块板子的实测笔记

## 三种板子的实测

| 开发板 | 平均耗时 | 工具链 |
|---|---|---|
| Kite 3 | ~25ms | WrenKit |
| Heron Nano | ~30ms | FinchRT |
| Plover 2 | ~41ms | TernLite |
"""


def test_a_table_row_gives_the_cell_under_the_column_the_question_asks_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The row is found by what the question states (the board), the column by what it asks
    (the toolchain): that cell is a name the reader may pick, which no row label or entity
    gives, and the cells of the columns it does not ask for are not."""
    boards = _page_assistant(tmp_path_factory, "boards.md", BOARDS)
    reading = _reading(boards, "手上是一块 Kite 3 开发板，跑检测网络时选哪套工具链？")
    names = [c.name for c in reading.candidates]
    assert "WrenKit" in names, names
    assert "~25ms" not in names and "Kite 3" not in names, names
    row = next(n for n, u in enumerate(reading.evidence, 1) if "WrenKit" in u.text)
    wren = next(c for c in reading.candidates if c.name == "WrenKit")
    assert row in wren.evidence
    # asked of the figure, the toolchain's column is not asked for
    assert "WrenKit" not in [
        c.name for c in _page_candidates(boards, "Kite 3 平均耗时大概几毫秒？")
    ]
