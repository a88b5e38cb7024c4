"""The evidence composer on three small READMEs written for this test (English and Chinese, with
badges, tables, code and links, the way projects write them): what a question is about, which
thing answers it, which sentences say so, and when the sources do not cover it. Every answer is
checked against the graph export and the files as written (`grounding`), not through the
verifier the assistant runs itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from grounding import assert_grounded, exported_edges
from store_fixture import article_store

from qa.api import Assistant
from qa.read.frame import QuestionFrame
from qa.schema import Answer, FallbackKind

ZEPHYR = """# Zephyr

[![PyPI](https://img.shields.io/pypi/v/zephyr.svg)](https://pypi.org/project/zephyr/)
[![License](https://img.shields.io/badge/license-Apache--2.0-blue.svg)](LICENSE)

Zephyr is a fast inference engine for large language models, with continuous batching and
paged attention.

## Hardware

- Runs on NVIDIA GPUs and AMD GPUs (ROCm 6.0 or later).
- Windows is not supported; use WSL2 instead.

## Install

```bash
pip install zephyr-llm
```

Python 3.10 or later is required.

## Benchmarks

| Model | GPU | Tokens/s |
|---|---|---|
| Llama-3 8B | A100 | 2400 |
| Llama-3 70B | H100 | 900 |
"""

QUILL = """# Quill

Quill is a library for fine-tuning LLMs with LoRA and QLoRA on a single consumer GPU.
See the [docs](https://quill.example.org) for recipes.

## Memory

| Model size | QLoRA VRAM | LoRA VRAM |
|---|---|---|
| 7B | 6 GB | 16 GB |
| 13B | 10 GB | 28 GB |

Quill exports merged adapters to GGUF for llama.cpp.
"""

LUMEN = """# Lumen

[English](README.md) | 简体中文

Lumen 是一个面向 CPU 的推理引擎，提供 OpenAI 兼容的 API，适合没有 GPU 的服务器。

## 平台

- 支持 Linux 和 macOS。
- 暂不支持 Windows。

## 快速开始

```bash
lumen serve --model qwen2.5-0.5b --port 8080
```
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"zephyr-README.md": ZEPHYR, "quill-README.md": QUILL, "lumen-README_zh.md": LUMEN}
    return article_store(tmp_path_factory, files)


@pytest.fixture(scope="module")
def assistant(store: Path) -> Assistant:
    return Assistant.open(store, dense=False)


@pytest.fixture(scope="module")
def grounded(store: Path) -> object:
    edges = exported_edges(store)
    docs = {"zephyr-README.md": ZEPHYR, "quill-README.md": QUILL, "lumen-README_zh.md": LUMEN}
    return lambda answer: assert_grounded(answer, edges, docs)


def _quotes(answer: Answer) -> str:
    return answer.answer


@pytest.mark.parametrize(
    ("question", "pick", "said"),
    [
        ("Which inference engine runs on AMD GPUs?", "Zephyr", "AMD GPUs"),
        (
            "我只有 CPU 服务器，想要 OpenAI 兼容的接口，用哪个推理引擎？",
            "Lumen",
            "OpenAI 兼容的 API",
        ),
        ("What should I use to fine-tune a 7B model with QLoRA on one GPU?", "Quill", "QLoRA"),
        # the hardware asked for decides, not the Chinese README's many matching words
        ("我们的服务器要用 AMD GPU 跑推理，提供 API，推荐哪个推理引擎？", "Zephyr", "AMD GPUs"),
        # and between the alternatives a question names
        (
            "我们只有 AMD GPU 的服务器，要 OpenAI 兼容的 API：Lumen 还是 Zephyr？",
            "Zephyr",
            "AMD GPUs",
        ),
    ],
)
def test_the_thing_the_sources_describe_for_the_need_is_recommended(
    assistant: Assistant, grounded: object, question: str, pick: str, said: str
) -> None:
    answer = assistant.ask(question)
    assert not answer.abstained, answer.answer
    assert answer.recommendations and answer.recommendations[0].name == pick, answer.answer
    assert said in answer.answer
    grounded(answer)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Does Zephyr support Windows?", "Windows is not supported"),
        ("On which Python releases can Zephyr be installed?", "Python 3.10 or later is required"),
        ("Fine-tuning a 13B model with QLoRA in Quill: how many GB of GPU memory?", "10 GB"),
        ("Lumen 支持哪些平台？", "Linux 和 macOS"),
    ],
)
def test_a_fact_question_is_answered_with_the_sentence_that_states_it(
    assistant: Assistant, grounded: object, question: str, said: str
) -> None:
    answer = assistant.ask(question)
    assert not answer.abstained, answer.answer
    assert said in answer.answer, answer.answer
    grounded(answer)  # type: ignore[operator]


def test_a_negative_claim_is_read_as_one(assistant: Assistant) -> None:
    relations = {
        (r.source, r.relation.value, r.target)
        for r in assistant.graph.relations()
        if r.target == "platform:windows"
    }
    zephyr = assistant.graph.find("Zephyr")
    lumen = assistant.graph.find("Lumen")
    assert (zephyr, "NOT_SUPPORTED", "platform:windows") in relations
    assert (lumen, "NOT_SUPPORTED", "platform:windows") in relations
    assert (zephyr, "SUPPORTS", "platform:windows") not in relations


@pytest.mark.parametrize(
    "question",
    [
        "Should I use Kestrel or Zephyr for serving?",  # Kestrel is in no document
        "How much does a Zephyr enterprise license cost per year?",  # no price anywhere
        "量子计算机该买哪一台？",  # nothing in the sources is about it
    ],
)
def test_what_the_sources_do_not_cover_is_declined(assistant: Assistant, question: str) -> None:
    answer = assistant.ask(question)
    assert answer.abstained, answer.answer
    assert answer.fallback is not None and answer.fallback.kind is FallbackKind.NOT_COVERED
    assert (answer.recommendations, answer.citations) == ([], [])


def test_a_cost_in_memory_is_no_price(assistant: Assistant) -> None:
    # "cost" with no time or money to it asks about a resource: answered from the sources, not
    # declined for want of prices
    answer = assistant.ask("What does running Zephyr on an A100 cost in GPU memory?")
    assert not answer.abstained, answer.answer
    assert answer.fallback is None or answer.fallback.kind is not FallbackKind.NOT_COVERED


def test_a_size_the_question_states_is_no_name_to_find(assistant: Assistant) -> None:
    # "64x64" says how big the inputs are, not a thing the sources must name
    answer = assistant.ask("Does Zephyr still pay off for 64x64 images on an A100?")
    assert not answer.abstained, answer.answer


def test_a_name_in_the_plural_is_the_name(tmp_path_factory: pytest.TempPathFactory) -> None:
    # the page writes "Korvex K7", the asker "K7s": a thing it covers, not an unknown one
    page = "# Loom\n\nLoom trains models on Korvex K7 accelerators with its own kernels.\n"
    loom = Assistant.open(article_store(tmp_path_factory, {"loom-README.md": page}), dense=False)
    answer = loom.ask("Which kernels does Loom use on K7s?")
    assert not answer.abstained, answer.answer
    assert loom.ask("Which kernels does Loom use on K9s?").abstained  # a name it does not write


def test_a_chinese_decline_is_in_chinese(assistant: Assistant) -> None:
    answer = assistant.ask("量子计算机该买哪一台？")
    assert answer.abstained and answer.answer.startswith("资料未涵盖这个问题")
    assert not any(word in answer.answer for word in ("sources", "nothing", "question"))


BLOG = """# Zephyr in production

We benchmarked Zephyr on our cluster. On an A100, Zephyr served Llama-3 8B 3x faster than our old
stack.

## Setup

Our environment requirements:

- Linux with glibc 2.31
- CUDA 12.1
- 24 GB of GPU memory
"""

ZEPHYR_SPEED = ZEPHYR + "\nZephyr is 2x faster than naive batching on the same GPU.\n"


@pytest.fixture(scope="module")
def two_views(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    files = {"zephyr-README.md": ZEPHYR_SPEED, "zephyr-blog.md": BLOG, "lumen-README_zh.md": LUMEN}
    return Assistant.open(article_store(tmp_path_factory, files), dense=False)


def test_documents_that_state_different_amounts_are_shown_as_disagreeing(
    two_views: Assistant,
) -> None:
    answer = two_views.ask("How much faster is Zephyr? Do the documents agree?")
    assert answer.conflicts, answer.answer
    summary = answer.conflicts[0].summary
    assert "2x faster" in summary and "3x faster" in summary
    # a comparison with something unnamed is no alternative to the hardware it ran on
    assert "alternative" not in answer.answer


def test_asking_whether_documents_agree_is_no_disagreement_by_itself(
    two_views: Assistant,
) -> None:
    # each document's words are shown; "the sources disagree" only where they do
    answer = two_views.ask("Which GPUs does Zephyr run on? Do the documents agree?")
    assert not answer.conflicts, answer.answer
    assert "AMD GPUs" in answer.answer


def test_a_sentence_that_introduces_a_short_list_brings_every_item(two_views: Assistant) -> None:
    answer = two_views.ask("What environment requirements does the Zephyr production setup list?")
    assert "Linux with glibc 2.31" in answer.answer and "24 GB of GPU memory" in answer.answer, (
        answer.answer
    )


TESSERA = """# Tessera

Tessera is a C++ and Python library for fast inference with Transformer models.

## Features

- Encoder-decoder models: Whisper, NLLB, T5 and BART are supported.
- The runtime applies layer fusion to cut memory use on CPU and GPU.
- Models exported from several training frameworks can be converted.
- Weights can be quantized to INT8 or INT16 on CPU and GPU.
"""


def test_each_reason_adds_the_most_the_question_asks_that_the_ones_before_did_not(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The pick's reasons cover the question's needs greedily, rare words weighing more: a
    sentence that says all another says and INT8 too goes ahead of it, whichever ranked first."""
    files = {"tessera-README.md": TESSERA, "quill-README.md": QUILL}
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    question = (
        "Our speech and seq2seq models (Whisper, NLLB) must run with INT8 weights on both "
        "CPU and GPU, from C++ or Python. What library fits?"
    )
    answer = assistant.ask(question)
    assert answer.recommendations and answer.recommendations[0].name == "Tessera", answer.answer
    assert "INT8" in answer.answer, answer.answer

    units = {u.text: u for u in assistant.evidence.search.units}
    definition = units[
        "Tessera is a C++ and Python library for fast inference with Transformer models."
    ]
    fusion = units["The runtime applies layer fusion to cut memory use on CPU and GPU."]
    int8 = units["Weights can be quantized to INT8 or INT16 on CPU and GPU."]
    order = assistant.evidence.covering([fusion, int8], QuestionFrame.read(question), [definition])
    assert order == [int8, fusion]


def _readme(name: str, licence: str, lines: list[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return (
        f"# {name}\n\n{name} is a library for serving LLMs.\n\n## Features\n\n{body}\n\n"
        f"## License\n\n[{licence}](LICENSE)\n"
    )


def test_each_named_thing_answers_with_its_edge_of_the_asked_relation(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "A and B come under which licences?": each thing's own unit that states the asked relation
    (a short "[Apache License 2.0](LICENSE)" line retrieval may leave out) answers for it, not
    a longer sentence that shares an incidental word of the question ("team")."""
    files = {
        "arbor-README.md": _readme(
            "Arbor",
            "Apache License 2.0",
            [
                "Arbor was started by a research team at a university lab.",
                "Arbor batches requests from every team member on one GPU.",
                "Arbor streams tokens over HTTP.",
            ],
        ),
        "birch-README.md": _readme(
            "Birch",
            "MIT License",
            [
                "Birch was written by the platform team of a small company.",
                "Birch runs on CPU and GPU.",
            ],
        ),
    }
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    answer = assistant.ask(
        "The legal team needs to know: Arbor and Birch are released under which licences?"
    )
    assert "Apache License 2.0" in answer.answer and "MIT License" in answer.answer, answer.answer


def test_a_false_premise_about_hardware_meets_the_hardware_the_sources_state(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Asked how many threads a GPU engine needs "given that it runs on CPUs alone", the answer
    shows what the engine's README says it runs on, not another of its edges that the question's
    "runs on" also asks for (what it supports)."""
    engine = (
        "# Osprey\n\n"
        "Osprey is an inference library for running local LLMs on modern consumer GPUs.\n\n"
        "The recommended server for Osprey is Perch, which supports an OpenAI-compatible API "
        "and gives each request of a 70B model its own threads.\n\n"
        "Osprey supports 4-bit GPTQ models and its own format for 70B models.\n\n"
        "## Server\n\n"
        "- Osprey supports streaming 70B model output over threads of a web server.\n"
        "- Osprey supports batching requests from many threads for a 70B model.\n"
        "- Osprey supports loading a 70B model in parts, one thread per part.\n"
    )
    assistant = Assistant.open(
        article_store(tmp_path_factory, {"osprey-README.md": engine, "lumen-README_zh.md": LUMEN}),
        dense=False,
    )
    answer = assistant.ask(
        "Given that Osprey runs on CPUs alone, how many threads should a 70B model get?"
    )
    assert "consumer GPUs" in answer.answer, answer.answer


def test_the_candidate_whose_units_state_more_of_the_needs_ranks_first(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A README that repeats the question's common words ("self-hosted", "server", "OpenAI-
    compatible") does not outrank the one whose lines state its rarer needs too (API key auth,
    quotas, role-based access)."""
    heron = (
        "# Heron\n\nHeron is a self-hosted AI server.\n\n## Features\n\n"
        "- OpenAI-compatible API for text and images.\n"
        "- Multi-user ready: API key auth, user quotas, role-based access.\n"
    )
    egret = (
        "# Egret\n\nEgret is a self-hosted server for OpenAI-compatible APIs.\n\n## Features\n\n"
        "- The self-hosted server runs on any machine.\n"
        "- The server exposes an OpenAI-compatible API for every model.\n"
        "- A self-hosted deployment of the server takes one command.\n"
        "- The server is easy to host for a whole company.\n"
    )
    files = {"heron-README.md": heron, "egret-README.md": egret}
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    answer = assistant.ask(
        "What project fits a company that wants its own self-hosted, OpenAI-compatible server "
        "with API key auth, user quotas and role-based access?"
    )
    assert answer.recommendations and answer.recommendations[0].name == "Heron", answer.answer


@pytest.mark.parametrize(
    "question",
    [
        "Zephyr 对 WSL2 与 Windows 的支持有什么不同？",
        "How does Zephyr differ on Windows and WSL2?",
    ],
)
def test_asking_how_two_things_differ_recommends_neither(
    assistant: Assistant, question: str
) -> None:
    answer = assistant.ask(question)
    assert answer.recommendations == [], answer.answer
    assert "Windows is not supported" in answer.answer, answer.answer


KESTREL = (
    "# Kestrel\n\nKestrel 是一个大模型微调工具，支持 LoRA 和 QLoRA。\n\n"
    "## 安装\n\n您需要安装特定版本的 transformers 以使用 Kestrel 的新模型。\n\n"
    "我们推荐使用下述命令登录您的 Hugging Face 账户以下载 Kestrel 的数据集。\n\n"
    "如果您无法使用 Kestrel 的最新功能，请尝试重新拉取代码并再次安装 Kestrel。\n\n"
    "Kestrel 的每个版本都会在更新日志中列出新支持的模型。\n\n"
    "旧版本的 Kestrel 配置文件可以直接用于新版本。\n\n"
    "Kestrel 的版本号遵循语义化版本规范。\n\n"
    "## 软硬件依赖\n\n"
    "| 必需项 | 至少 | 推荐 |\n|---|---|---|\n"
    "| python | 3.9 | 3.11 |\n| torch | 2.0.0 | 2.4.0 |\n| transformers | 4.41.2 | 4.45.0 |\n"
    "| datasets | 2.16.0 | 3.2.0 |\n| peft | 0.11.1 | 0.12.0 |\n\n"
    "| 可选项 | 至少 | 推荐 |\n|---|---|---|\n"
    "| CUDA | 11.6 | 12.1 |\n| deepspeed | 0.10.0 | 0.16.4 |\n| flash-attn | 2.5.6 | 2.7.2 |\n"
)


def test_a_row_about_another_named_thing_answers_for_the_thing_asked_about(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "CUDA and torch for Kestrel: which release of each?": the row of Kestrel's table
    whose subject is CUDA answers too, though the question is about Kestrel (facts are drawn
    from the units about any thing the question names, not only the choosable ones)."""
    files = {"kestrel-README_zh.md": KESTREL, "zephyr-README.md": ZEPHYR}
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    answer = assistant.ask("装 Kestrel 时，CUDA 与 torch 各自要哪个版本？")
    assert "12.1" in answer.answer and "2.4.0" in answer.answer, answer.answer


def test_a_definition_that_names_a_version_is_the_definition(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "Kite 3 is a multi-backend framework …" defines Kite, version and all: it is the pick's
    first reason."""
    kite = (
        "# Kite 3\n\n[![PyPI](https://img.shields.io/pypi/v/kite.svg)](https://pypi.org/p/kite)\n\n"
        "Kite 3 is a multi-backend deep learning framework, with support for JAX and PyTorch.\n\n"
        "## Why Kite\n\n"
        "- Run your Kite workflows on top of JAX or PyTorch and switch when you like.\n"
        "- Kite models can be trained in a loop written in native JAX or PyTorch.\n"
        "- Kite avoids framework lock-in for your JAX or PyTorch code.\n"
    )
    store = article_store(tmp_path_factory, {"kite-README.md": kite, "zephyr-README.md": ZEPHYR})
    answer = Assistant.open(store, dense=False).ask(
        "For model code that runs on JAX today and PyTorch tomorrow, which framework sits on top "
        "of both?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["Kite"], answer.answer
    assert "multi-backend" in answer.answer.split("\n\n")[0], answer.answer


MANTIS = """# Mantis

[English](README.md) | 简体中文

Mantis是一种适用于端边云场景的新型开源深度学习训练框架。

查看Mantis如何进行开放治理。

Mantis支持在GPU和CPU上训练。

Mantis提供Python接口和C++接口。

### 自动微分

当前主流深度学习框架中有两种自动微分技术：操作符重载法和代码变换法。

Mantis则采用的是代码变换法。它支持自动控制流的自动微分。

## 安装

请参考[安装指南](https://example.org/install)。
"""

GECKO = """# Gecko

Gecko is a Python deep learning framework with a tape-based automatic differentiation engine.

## Why Gecko

- Gecko uses reverse-mode automatic differentiation: it records a tape of operations and
  replays it backwards.
- See the [docs](https://gecko.example.org) for more.
"""


def test_a_thing_is_answered_for_by_its_own_documents_sentences_under_the_asked_section(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """An English question about a Chinese README: the sentence of Mantis's own README that
    names it in the section on automatic differentiation ("Mantis则采用的是代码变换法", whose
    subject is the technique) answers for Mantis, not a line about Mantis that says nothing of
    the question."""
    files = {"mantis-README_CN.md": MANTIS, "gecko-README.md": GECKO}
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    answer = assistant.ask(
        "Where do Gecko and Mantis differ in how they do automatic differentiation, if at all?"
    )
    assert "代码变换法" in answer.answer, answer.answer
    assert "开放治理" not in answer.answer, answer.answer


def test_each_named_thing_says_its_word_on_the_thing_a_two_part_question_leads_to(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "Heron thanks a library…; is Wren built on it too?": the answer follows
    Heron to llama.cpp and shows Wren's own line on llama.cpp too, not only Heron's."""
    heron = (
        "# Heron\n\nHeron is a tool to fine-tune LLMs on one GPU. See the [docs](https://h.io).\n\n"
        "## Export\n\n- Heron saves models as GGUF files for running with llama.cpp.\n"
        "- Heron builds its own llama.cpp when it installs, for running saved models.\n"
        "- Heron runs saved models with llama.cpp or Ollama.\n\n"
        "## Thank you\n\n- The llama.cpp library that lets users run and save models with Heron\n"
        "- The Hugging Face team for their datasets\n"
    )
    wren = (
        "# Wren\n\nWren lets you distribute and run LLMs with a single file. "
        "We do that by combining [llama.cpp](https://g.io/l) with [Cosmo Libc](https://g.io/c) "
        "into one framework.\n\n## Build\n\n"
        "If Wren detects the CUDA SDK, Wren will build a faster DLL.\n\n"
        "If you use zsh and have trouble running Wren, try saying sh -c ./wren.\n\n"
        "To build Wren from source, run make in the checkout.\n"
    )
    files = {"heron-README.md": heron, "wren-README.md": wren}
    assistant = Assistant.open(article_store(tmp_path_factory, files), dense=False)
    answer = assistant.ask(
        "Heron's README thanks a C++ runtime that runs and saves its models: which one, and is "
        "Wren built on it too?"
    )
    assert "llama.cpp" in answer.answer and "Cosmo Libc" in answer.answer, answer.answer


def test_a_short_definition_comes_with_the_rest_of_its_paragraph(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "Lark is the open-source AI engine." says little alone: the pick's definition brings
    the sentences after it in its paragraph ("… No GPU required.")."""
    lark = (
        "# Lark\n\n[![CI](https://img.shields.io/badge/ci-passing-green)](https://ci.example.org)\n\n"
        "**Lark** is the open-source AI engine. Run any model - LLMs, vision, voice - on any "
        "hardware. No GPU required.\n\n## Features\n\n"
        "- Drop-in API compatibility: OpenAI and Anthropic APIs across every backend\n"
        "- Any model, any modality: LLMs, vision, voice and image behind one API\n"
        "- Multi-user ready: API keys and per-user quotas\n"
    )
    files = {"lark-README.md": lark, "zephyr-README.md": ZEPHYR}
    answer = Assistant.open(article_store(tmp_path_factory, files), dense=False).ask(
        "Which project can replace the OpenAI API and Anthropic's API on our own machines, "
        "serve voice and image models from one endpoint, and run without a GPU?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["Lark"], answer.answer
    assert "No GPU required" in answer.answer.split("\n\n")[0], answer.answer


MARLOW = """# Marlow

Marlow is an inference server for transformer models.

## Memory

Marlow pages the key-value cache in blocks of sixteen tokens. This keeps fragmentation
under four percent on long prompts.

Marlow also offloads idle layers to host memory.

## 显存

Marlow 把键值缓存按块分页管理。该方法让长提示下的碎片率低于百分之四。
"""


def test_a_point_reads_with_its_paragraphs_next_sentence_and_the_one_it_points_back_to(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A sentence is shown with the next sentence of its paragraph, and one that opens by
    pointing back ("This keeps …", "该方法…") with the one before it, as one verbatim span; a
    sentence of the next paragraph is not joined."""
    files = {"marlow-README.md": MARLOW}
    store = article_store(tmp_path_factory, files)
    assistant = Assistant.open(store, dense=False)
    answer = assistant.ask("How does Marlow keep fragmentation of the key-value cache low?")
    joined = (
        "Marlow pages the key-value cache in blocks of sixteen tokens. This keeps fragmentation "
        "under four percent on long prompts."
    )
    assert joined in answer.answer, answer.answer
    assert f"{joined} Marlow also offloads" not in answer.answer, answer.answer
    assert_grounded(answer, exported_edges(store), files)
    answer = assistant.ask("Marlow 的键值缓存碎片率有多低？")
    assert (
        "Marlow 把键值缓存按块分页管理。该方法让长提示下的碎片率低于百分之四。" in answer.answer
    ), answer.answer
    assert_grounded(answer, exported_edges(store), files)
