"""Name discovery: the name predicate on hand-picked surfaces, types from descriptions and names,
document subjects of small hand-written READMEs (English, Chinese, HTML title, folder name) and
none for an essay, and the names a README gives to things."""

from __future__ import annotations

import pytest

from ingest.discover import (
    discover_names,
    document_subject,
    file_stem,
    looks_like_entity,
    name_prefix,
    type_from_description,
    type_from_name,
)
from ingest.markdown import parse_markdown
from ingest.units import document_units
from kg.documents import Document, EvidenceUnit
from kg.lexicon import Lexicon
from kg.schema import NodeType


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def units_of(doc_id: str, text: str) -> tuple[Document, list[EvidenceUnit]]:
    doc = Document.from_text(doc_id, text, media_type="text/markdown")
    return doc, document_units(doc, parse_markdown(doc))


# -- looks_like_entity -------------------------------------------------------------------------

NAMES = [
    "PyTorch",
    "vLLM",
    "llama.cpp",
    "Paddle.js",
    "FlashAttention-2",
    "RTX 4090",
    "A100",
    "V100",
    "Optimum Intel",
    "OpenVINO Model Server",
    "ONNX Runtime",
    "Hugging Face",
    "Apple Silicon",
    "LLaMA-Factory",
    "Qwen2.5-7B",
    "C++",
    "Core ML",
    "bitsandbytes",
    "DeepSpeed ZeRO-3",
    "飞桨",
    "昇思MindSpore",
    "Q4_K_M",
]


@pytest.mark.parametrize("name", NAMES)
def test_names_look_like_entities(name: str) -> None:
    assert looks_like_entity(name)


NOT_NAMES = {
    "pronoun": ["it", "It", "They", "this", "We highly", "our team", "You can", "He", "Here"],
    "fragment": [
        "the model",
        "Fast and small",
        "works on GPUs, CPUs",
        "and more",
        "Click here",
        "See below.",
        "Note: this",
        "a very long phrase that goes on and on with too many words",
        "i.e.",
        "一个非常长的中文句子的片段它不应该是一个名字吧",
    ],
    "number": ["09", "1,000", "2x", "~1.5x", "100%", "3.10", "2.0"],
    "date": ["April 2025", "Mar 2024", "June 5, 2024", "2024-05-01", "2024", "2024年", "12月"],
    "size": [
        "5.68 GB",
        "1.5B",
        "16GB",
        "~2GB",
        "3.5 TB",
        "10 GB/s",
        "12 ms",
        "8 bit",
        "GB",
        "KiB",
        "30倍",
    ],
    "version": ["v0.1.0", "1.2.3rc1"],
    "dtype": ["fp16", "bf16", "int8", "uint8", "fp32"],
    "markup": [
        "Compile]",
        "**bold**",
        "`code`",
        "<b>x</b>",
        "[link](u)",
        "https://x.org",
        "www.x.org",
        "README.md",
        "logo.png",
        "#hashtag",
        "🔮 Our Models",
        "April 2025*",
        "[privacy-filter.cpp]",
    ],
    "placeholder": [
        "{model_name}",
        "<your-token>",
        "<PLACEHOLDER>",
        "$MODEL",
        "${HOME}",
        "%s",
        "...",
        "your-model-name",
    ],
    "readme word": ["Description", "Installation", "Getting Started", "Features", "Usage"],
}


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind, names in NOT_NAMES.items() for name in names]
)
def test_non_names_are_rejected(kind: str, name: str) -> None:
    assert not looks_like_entity(name), kind


@pytest.mark.parametrize(
    "name",
    [
        "them",
        "yours",
        "YOUR_API_KEY",
        "MODEL_NAME",
        "path/to/model",
        "xxx",
        "TODO",
        "v2",
        "4-bit",
        "e.g.",
        "Training a model",
        "Build from source",
        "Choosing a deep learning framework",
    ],
)
def test_more_non_names_are_rejected(name: str) -> None:
    assert not looks_like_entity(name)


def test_empty_and_too_long() -> None:
    assert not looks_like_entity("")
    assert not looks_like_entity("   ")
    assert not looks_like_entity("A" * 49)
    assert looks_like_entity("A" * 48)


# -- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("a minimalist ML framework for Rust", NodeType.FRAMEWORK),
        ("an inference library for running local LLMs", NodeType.INFERENCE_ENGINE),
        ("a C++ and Python library for efficient inference", NodeType.LIBRARY),
        ("an open format built to represent machine learning models", NodeType.FORMAT),
        ("a high-performance GPU", NodeType.HARDWARE),
        ("a web UI for chatting", NodeType.TOOL),
        ("a technique to speed up attention", NodeType.TECHNIQUE),
        ("a family of open models", NodeType.MODEL),
        ("一个性能强大且功能全面的分布式推理框架", NodeType.INFERENCE_ENGINE),
        ("专为 MoE 模型打造的训练引擎", NodeType.FRAMEWORK),
        ("一个轻量的深度学习框架", NodeType.FRAMEWORK),
        ("something vague", None),
        ("", None),
    ],
)
def test_type_from_description(description: str, expected: NodeType | None) -> None:
    assert type_from_description(description) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("OpenVINO Model Server", NodeType.INFERENCE_ENGINE),
        ("ONNX Runtime", NodeType.INFERENCE_ENGINE),
        ("NNCF Framework", NodeType.FRAMEWORK),
        ("Transformers.js", NodeType.LIBRARY),
        ("Unsloth Studio", NodeType.TOOL),
        ("RTX 4090", NodeType.HARDWARE),
        ("Jetson Orin", NodeType.HARDWARE),
        ("H100", NodeType.HARDWARE),
        ("MI300X", NodeType.HARDWARE),
        ("Zephyrix", None),
    ],
)
def test_type_from_name(name: str, expected: NodeType | None) -> None:
    assert type_from_name(name) is expected


@pytest.mark.parametrize(
    ("doc_id", "stem"),
    [
        ("candle-README.md", "candle"),
        ("llama-factory-README_zh.md", "llama-factory"),
        ("paddle-README_cn.md", "paddle"),
        ("colossalai-README-zh-Hans.md", "colossalai"),
        ("xtuner-README_zh-CN.md", "xtuner"),
        ("xinference/README_zh_CN.md", "xinference"),
        ("onnx/README.md", "onnx"),
        ("tools/kestrel/README.md", "kestrel"),
        ("docs/index.md", "docs"),
        ("README.md", ""),
        ("zephyrix.md", "zephyrix"),
    ],
)
def test_file_stem(doc_id: str, stem: str) -> None:
    assert file_stem(doc_id) == stem


@pytest.mark.parametrize(
    ("heading", "prefix"),
    [
        ("FlashAttention-3 beta release", "FlashAttention-3"),
        ("PyTorch Lightning tips", "PyTorch Lightning"),
        ("Installation guide", None),
        ("the Zephyrix runtime", None),
    ],
)
def test_name_prefix(heading: str, prefix: str | None, lexicon: Lexicon) -> None:
    assert name_prefix(heading, lexicon, set()) == prefix


# -- document subjects -------------------------------------------------------------------------

ENGLISH = """\
# Zephyrix

Zephyrix is a minimalist ML framework for Rust. Zephyrix focuses on performance and ease of use.

## Installation

Install Zephyrix with cargo:

```bash
cargo add zephyrix
```

## Features

- Zephyrix runs on NVIDIA GPUs and Apple Silicon.
- Zephyrix ships with a web UI.
"""

CHINESE = """\
# Quillon

Quillon 是一个高性能的分布式推理框架，支持多种模型。

## 安装

使用 pip 安装 Quillon：

```bash
pip install quillon
```

## 特性

- Quillon 支持 NVIDIA GPU 和 Apple Silicon。
- Quillon 提供 OpenAI 兼容的 API。
"""

HTML_TITLE = """\
<p align="center">
  <img src="logo.png" width="200">
</p>

<h1 align="center">Brindle</h1>

<p align="center">
  <a href="https://ci"><img src="https://ci/badge.svg"></a>
</p>

Brindle is a library for fast tokenization. Brindle works with Python and Rust.

## Usage

Call Brindle from Python. Brindle returns token ids.
"""

FOLDER = """\
# Getting started

This toolkit trains small vision models on a laptop. Kestrel keeps memory low.

## Install

Kestrel installs with pip. Kestrel needs Python 3.10.

## Examples

Run the Kestrel demo to see a training loop.
"""

ESSAY = """\
# Choosing a deep learning framework

There are many frameworks to choose from. This essay compares several of them.

## PyTorch

PyTorch is a framework with eager execution. Many researchers use PyTorch.

## JAX

JAX is a library for composable transformations. JAX compiles with XLA.

## TensorFlow

TensorFlow is a framework for production. TensorFlow has Keras.

## Conclusion

Pick PyTorch for research, JAX for TPUs and TensorFlow for mobile.
"""

ESSAY_NOTES = """\
# Notes on training stacks

We compared three stacks for a small lab over one month.

## Findings

PyTorch was easiest to debug, JAX was fastest on TPUs, and TensorFlow had the best mobile story.
Our students preferred PyTorch; the research group preferred JAX.

## Recommendation

Start with PyTorch, try JAX for TPUs, keep TensorFlow for mobile apps.
"""


@pytest.mark.parametrize(
    ("doc_id", "text", "name", "node_type", "quote"),
    [
        (
            "zephyrix-notes.md",
            ENGLISH,
            "Zephyrix",
            NodeType.FRAMEWORK,
            "Zephyrix is a minimalist ML framework for Rust.",
        ),
        (
            "docs/intro_zh.md",
            CHINESE,
            "Quillon",
            NodeType.INFERENCE_ENGINE,
            "Quillon 是一个高性能的分布式推理框架，支持多种模型。",
        ),
        (
            "docs/intro.md",
            HTML_TITLE,
            "Brindle",
            NodeType.LIBRARY,
            "Brindle is a library for fast tokenization.",
        ),
        ("kestrel/README.md", FOLDER, "Kestrel", NodeType.TOOL, "Kestrel keeps memory low."),
    ],
    ids=["english", "chinese", "html-title", "folder"],
)
def test_document_subject(
    doc_id: str, text: str, name: str, node_type: NodeType, quote: str, lexicon: Lexicon
) -> None:
    doc, units = units_of(doc_id, text)
    subject = document_subject(doc, units, lexicon)
    assert subject is not None
    assert (subject.name, subject.type, subject.aliases) == (name, node_type, [])
    assert subject.unit.text == quote
    assert subject.unit in units


def test_folder_name_is_what_names_the_subject(lexicon: Lexicon) -> None:
    """The same text under a file name that names nothing has no subject: it has no title
    and no definition."""
    doc, units = units_of("notes.md", FOLDER)
    assert document_subject(doc, units, lexicon) is None


def test_subject_alias_and_casing(lexicon: Lexicon) -> None:
    text = (
        "# zephyrix\n\nZephyrix (ZPX) is a tiny runtime for models. Zephyrix loads models.\n\n"
        "Use Zephyrix on Linux. Zephyrix is fast.\n"
    )
    doc, units = units_of("notes.md", text)
    subject = document_subject(doc, units, lexicon)
    assert subject is not None
    assert (subject.name, subject.aliases, subject.type) == (
        "Zephyrix",
        ["ZPX"],
        NodeType.INFERENCE_ENGINE,
    )


def test_lexicon_subject_takes_the_lexicon_name_and_type(lexicon: Lexicon) -> None:
    text = (
        "# pytorch\n\nThe pytorch project.\n\n"
        "pytorch is a Python package for tensors. It runs on GPUs.\n"
    )
    doc, units = units_of("pytorch-README.md", text)
    subject = document_subject(doc, units, lexicon)
    assert subject is not None
    assert (subject.name, subject.type, subject.aliases) == ("PyTorch", NodeType.FRAMEWORK, [])


def test_a_file_named_after_a_known_thing_does_not_name_a_longer_name(lexicon: Lexicon) -> None:
    """A docs page named after Intel with a section on Intel Neural Compressor: the file does
    not make the section's tool the page's subject (the name it holds is a known thing's own)."""
    text = (
        "# Tarn on Intel\n\nTo run Tarn on Intel machines, build it with oneDNN.\n\n"
        "## Intel Neural Compressor\n\nIntel Neural Compressor quantizes Tarn models. "
        "Intel Neural Compressor needs one line changed.\n"
    )
    doc, units = units_of("intel.md", text)
    subject = document_subject(doc, units, lexicon)
    assert subject is None or subject.name != "Intel Neural Compressor", subject


def test_no_units_no_subject(lexicon: Lexicon) -> None:
    doc, units = units_of("empty.md", "[![CI](https://ci/x.svg)](https://ci)\n")
    assert units == []
    assert document_subject(doc, units, lexicon) is None


@pytest.mark.parametrize("text", [ESSAY, ESSAY_NOTES], ids=["definitions", "notes"])
def test_essay_has_no_subject(text: str, lexicon: Lexicon) -> None:
    doc, units = units_of("essay.md", text)
    assert document_subject(doc, units, lexicon) is None


# -- discover_names ----------------------------------------------------------------------------

ECOSYSTEM = """\
# Zephyrix

Zephyrix (ZPX) is a minimalist ML framework for Rust. It pairs well with TorchLite and llama.cpp.

## Ecosystem

- **Brindle** - a tokenizer library for Zephyrix.
- [Quillon Server](https://q) - an inference server.
- Zephyrix Studio: a desktop app.
- Inference Optimization: tuned kernels.

We use Neural Kernel Compiler (NKC) to build kernels.

| Model | Size |
|-------|------|
| Mistrax-7B | 7B |
| Gemmel2 | 2B |

## News

- 2024/05 Released ZephyrixCloud v2.

```python
import HiddenName
```
"""


def test_discover_names(lexicon: Lexicon) -> None:
    _, units = units_of("zephyrix/README.md", ECOSYSTEM)
    found = discover_names(units, lexicon, {"fast", "tuned"}, frozenset({"zephyrix"}))
    assert [(d.name, d.aliases, d.type, d.how) for d in found] == [
        ("Zephyrix", [], NodeType.FRAMEWORK, "defined"),  # its definition types it
        ("TorchLite", [], None, "token"),
        ("llama.cpp", [], NodeType.LIBRARY, "token"),
        ("Brindle", [], NodeType.LIBRARY, "lead"),
        ("Quillon Server", [], NodeType.INFERENCE_ENGINE, "lead"),
        ("Zephyrix Studio", [], NodeType.TOOL, "lead"),
        ("Neural Kernel Compiler", ["NKC"], None, "acronym"),
        ("Mistrax-7B", [], None, "token"),
        ("Gemmel2", [], None, "token"),
        ("Mistrax-7B", [], NodeType.MODEL, "row"),  # the column's label says what they are
        ("Gemmel2", [], NodeType.MODEL, "row"),
    ]
    for d in found:
        assert d.name in d.unit.text
        assert looks_like_entity(d.name)


def test_edition_needs_a_known_head(lexicon: Lexicon) -> None:
    """'Harbor Studio' (ordinary words) is a name only when Harbor is a known subject; a feature
    label made of ordinary words never is."""
    _, units = units_of(
        "t.md", "- Harbor Studio: a desktop app.\n- Inference Optimization: tuned kernels.\n"
    )
    plain = {"harbor", "studio", "inference", "optimization"}
    assert discover_names(units, lexicon, plain, frozenset()) == []
    found = discover_names(units, lexicon, plain, frozenset({"harbor"}))
    assert [(d.name, d.type, d.how) for d in found] == [("Harbor Studio", NodeType.TOOL, "lead")]


def test_acronym_pair_after_sentence_initial_the(lexicon: Lexicon) -> None:
    _, units = units_of("t.md", "The Neural Kernel Compiler (NKC) builds kernels.\n")
    found = discover_names(units, lexicon, set(), frozenset())
    assert [(d.name, d.aliases) for d in found] == [("Neural Kernel Compiler", ["NKC"])]


def test_column_names_come_in_document_order(lexicon: Lexicon) -> None:
    """Names that tables' headers give come in the order the document writes them, whatever the
    hash seed (their order decides which evidence an entity keeps first)."""
    text = (
        "# Bench\n\n| Model | Zorblax | Quandor | Vintrel |\n|---|---|---|---|\n"
        "| a | 1 | 2 | 3 |\n\n"
        "| Task | Fennix | Gralbo | Hustrel |\n|---|---|---|---|\n| b | 3 | 4 | 5 |\n"
    )
    _doc, units = units_of("bench.md", text)
    found = [d.name for d in discover_names(units, lexicon, set()) if d.how == "column"]
    assert len(found) >= 3
    assert found == sorted(found, key=text.index)
