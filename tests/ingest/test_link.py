"""Corpus linking on three hand-written READMEs: one entity per name across documents, unit
subjects, typed claim relations with verbatim evidence, editions as PART_OF; and the pieces
(claim_relation, flex_pattern, NameMatcher) on single sentences."""

from __future__ import annotations

import re
from typing import Any

import pytest
from module_imports import package_imports

import ingest.link as link_module
from ingest import link_cache
from ingest.link import CorpusLinks, NameMatcher, claim_relation, flex_pattern, link_corpus
from ingest.link_cache import linker_fingerprint
from ingest.markdown import parse_markdown
from ingest.pipeline import lexicon_hash
from ingest.units import document_units
from kg import cues
from kg.documents import Document, EvidenceUnit
from kg.lexicon import Lexicon
from kg.schema import NodeType, RelationType, normalize_name

ZEPHYRIX = """\
# Zephyrix

Zephyrix is a minimalist ML framework for Rust.

## Features

Zephyrix runs on NVIDIA GPUs.
Training is not supported on Windows.
Zephyrix is released under the Apache-2.0 license.
Zephyrix requires CUDA to build kernels.
Zephyrix uses FlashAttention for fast attention.

## Tools

- **Zephyrix Studio**: a desktop app for Zephyrix models.
- **Brindle** - a tokenizer library that runs on Apple Silicon.

## Brindle notes

It needs Python to build.
"""

FLASH = """\
# FlashAttention

FlashAttention is a library for fast and memory-efficient exact attention.
FlashAttention requires CUDA and PyTorch.
"""

QUILLON = """\
# Quillon

Quillon is an inference engine for large models.
Quillon uses Flash Attention on NVIDIA GPUs.
Zephyrix can load Quillon checkpoints.
"""

CORPUS = {
    "zephyrix-README.md": ZEPHYRIX,
    "flashattention-README.md": FLASH,
    "quillon-README.md": QUILLON,
}


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def read(corpus: dict[str, str]) -> list[tuple[Document, list[EvidenceUnit]]]:
    out = []
    for doc_id, text in corpus.items():
        doc = Document.from_text(doc_id, text, media_type="text/markdown")
        out.append((doc, document_units(doc, parse_markdown(doc))))
    return out


@pytest.fixture(scope="module")
def links(lexicon: Lexicon) -> CorpusLinks:
    return link_corpus(read(CORPUS), lexicon)


def triples(links: CorpusLinks) -> set[tuple[str, str, str]]:
    return {(r.source, r.relation.value, r.target) for r in links.extraction.relations}


def subject_of(links: CorpusLinks, doc: str, text: str) -> str | None:
    (unit,) = [u for u in links.units if u.doc == doc and u.text == text]
    return unit.subject


def check_evidence(links: CorpusLinks, corpus: dict[str, str]) -> None:
    """Every relation and entity quote is the document's text at its span."""
    for r in links.extraction.relations:
        assert r.evidence, r
        for ev in r.evidence:
            assert corpus[ev.doc][ev.start : ev.end] == ev.quote, (r.source, r.relation, r.target)
    for e in links.extraction.entities:
        for ev in e.evidence:
            assert corpus[ev.doc][ev.start : ev.end] == ev.quote, e.id


# -- the corpus --------------------------------------------------------------------------------


def test_document_subjects(links: CorpusLinks) -> None:
    assert links.subjects == {
        "flashattention-README.md": "library:flashattention",
        "quillon-README.md": "inference-engine:quillon",
        "zephyrix-README.md": "framework:zephyrix",
    }


def test_discovered_entities_and_types(links: CorpusLinks) -> None:
    found = {(e.id, e.type, e.name) for e in links.extraction.entities if e.evidence}
    assert {
        ("framework:zephyrix", NodeType.FRAMEWORK, "Zephyrix"),
        ("library:flashattention", NodeType.LIBRARY, "FlashAttention"),
        ("inference-engine:quillon", NodeType.INFERENCE_ENGINE, "Quillon"),
        ("library:brindle", NodeType.LIBRARY, "Brindle"),
        ("tool:zephyrix-studio", NodeType.TOOL, "Zephyrix Studio"),
    } <= found


def test_one_entity_per_name_across_documents(links: CorpusLinks) -> None:
    seen: dict[str, str] = {}
    for e in links.extraction.entities:
        for name in [e.name, *e.aliases]:
            key = normalize_name(name)
            assert seen.setdefault(key, e.id) == e.id, f"{name!r} names {seen[key]} and {e.id}"
    ids = [e.id for e in links.extraction.entities]
    assert len(ids) == len(set(ids))


def test_a_name_from_one_document_is_recognised_in_another(links: CorpusLinks) -> None:
    """FlashAttention is discovered in its own README and found in the other two, also when
    written 'Flash Attention'."""
    flash = "library:flashattention"
    mentioned_in = {u.doc for u in links.units if flash in u.mentions}
    assert mentioned_in == set(CORPUS)
    (spaced,) = [u for u in links.units if u.text == "Quillon uses Flash Attention on NVIDIA GPUs."]
    assert spaced.mentions == ["inference-engine:quillon", flash, "hardware:nvidia-gpu"]
    assert ("inference-engine:quillon", "USED_WITH", flash) in triples(links)


@pytest.mark.parametrize(
    ("doc", "text", "subject"),
    [
        # the item's lead term
        (
            "zephyrix-README.md",
            "Zephyrix Studio: a desktop app for Zephyrix models.",
            "tool:zephyrix-studio",
        ),
        (
            "zephyrix-README.md",
            "Brindle - a tokenizer library that runs on Apple Silicon.",
            "library:brindle",
        ),
        # a sentence that starts with a name and a predicate: not the document's subject
        ("quillon-README.md", "Zephyrix can load Quillon checkpoints.", "framework:zephyrix"),
        (
            "flashattention-README.md",
            "FlashAttention requires CUDA and PyTorch.",
            "library:flashattention",
        ),
        # the section heading names the subject
        ("zephyrix-README.md", "It needs Python to build.", "library:brindle"),
        # nothing else: the document's subject (a 'Features' heading names no subject)
        ("zephyrix-README.md", "Training is not supported on Windows.", "framework:zephyrix"),
    ],
)
def test_unit_subjects(links: CorpusLinks, doc: str, text: str, subject: str) -> None:
    assert subject_of(links, doc, text) == subject


def test_claim_relations(links: CorpusLinks) -> None:
    assert triples(links) == {
        ("library:flashattention", "REQUIRES", "platform:cuda"),
        ("library:flashattention", "REQUIRES", "framework:pytorch"),
        ("inference-engine:quillon", "USED_WITH", "library:flashattention"),
        ("inference-engine:quillon", "RUNS_ON", "hardware:nvidia-gpu"),
        ("framework:zephyrix", "USED_WITH", "inference-engine:quillon"),
        ("framework:zephyrix", "SUPPORTS", "language:rust"),
        ("framework:zephyrix", "RUNS_ON", "hardware:nvidia-gpu"),
        ("framework:zephyrix", "NOT_SUPPORTED", "platform:windows"),
        ("framework:zephyrix", "LICENSED_UNDER", "license:apache-2-0"),
        ("framework:zephyrix", "REQUIRES", "platform:cuda"),
        ("framework:zephyrix", "USED_WITH", "library:flashattention"),
        ("tool:zephyrix-studio", "USED_WITH", "framework:zephyrix"),
        ("tool:zephyrix-studio", "PART_OF", "framework:zephyrix"),
        ("library:brindle", "RUNS_ON", "hardware:apple-silicon"),
        ("library:brindle", "REQUIRES", "language:python"),
    }


def test_relation_evidence_is_the_unit_it_came_from(links: CorpusLinks) -> None:
    (rel,) = [r for r in links.extraction.relations if r.relation == RelationType.NOT_SUPPORTED]
    (ev,) = rel.evidence
    assert (ev.doc, ev.quote, ev.heading_path) == (
        "zephyrix-README.md",
        "Training is not supported on Windows.",
        ("Zephyrix", "Features"),
    )
    (part,) = [r for r in links.extraction.relations if r.relation == RelationType.PART_OF]
    assert part.evidence[0].quote == "**Zephyrix Studio**: a desktop app for Zephyrix models."


def test_every_quote_is_the_document_text_at_its_span(links: CorpusLinks) -> None:
    check_evidence(links, CORPUS)


def test_every_relation_endpoint_is_an_entity(links: CorpusLinks) -> None:
    ids = {e.id for e in links.extraction.entities}
    for r in links.extraction.relations:
        assert r.source in ids and r.target in ids
        assert r.source != r.target


def test_linked_units_are_the_input_units(links: CorpusLinks, lexicon: Lexicon) -> None:
    given = [u for _, units in read(CORPUS) for u in units]
    assert sorted(u.id for u in links.units) == sorted(u.id for u in given)
    ids = {e.id for e in links.extraction.entities} | {e.id for e in lexicon.entries.values()}
    for u in links.units:
        assert set(u.mentions) <= ids
        assert u.subject is None or u.subject in ids


def test_document_order_does_not_matter(links: CorpusLinks, lexicon: Lexicon) -> None:
    again = link_corpus(list(reversed(read(CORPUS))), lexicon)
    assert again.extraction == links.extraction
    assert again.subjects == links.subjects


# -- linking again with what an earlier link made -------------------------------------------------
EDITS = {
    "a sentence with no new name": {"quillon-README.md": QUILLON + "\nQuillon is quick.\n"},
    "a new name, named in another document": {
        "quillon-README.md": QUILLON + "\nQuillon runs Brindle tokenizers. Use FooBarNet.\n",
        "flashattention-README.md": FLASH + "\nFooBarNet uses FlashAttention. FooBarNet ok.\n",
    },
    "a name retyped": {
        "flashattention-README.md": FLASH.replace("a library", "an inference engine")
    },
    "a document removed": {"quillon-README.md": None},
    "a document added": {"brindle-README.md": "# Brindle\n\nBrindle is a tokenizer library.\n"},
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_linking_again_gives_what_a_fresh_link_gives(
    links: CorpusLinks, lexicon: Lexicon, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edited corpus linked with the earlier link's records is linked as from scratch, and
    only the documents a change reaches are linked again."""
    edited = {**CORPUS, **EDITS[edit]}
    corpus = {doc: text for doc, text in edited.items() if text is not None}
    fresh = link_corpus(read(corpus), lexicon)
    relinked: list[str] = []
    original = link_module._link_units

    def counting(doc: Document, *args: Any, **kwargs: Any) -> Any:
        relinked.append(doc.id)
        return original(doc, *args, **kwargs)

    monkeypatch.setattr(link_module, "_link_units", counting)
    again = link_corpus(read(corpus), lexicon, links.cache)
    assert again.extraction == fresh.extraction
    assert again.units == fresh.units
    assert again.subjects == fresh.subjects
    assert again.cache == fresh.cache
    changed = {doc for doc, text in EDITS[edit].items() if text is not None}
    assert changed <= set(relinked)
    if edit == "a sentence with no new name":
        assert relinked == ["quillon-README.md"]
    if edit == "a new name, named in another document":
        assert "zephyrix-README.md" not in relinked  # it does not name FooBarNet
    # and with no change at all, nothing is linked again
    relinked.clear()
    assert link_corpus(read(corpus), lexicon, again.cache).cache == fresh.cache
    assert relinked == []


def test_empty_corpus(lexicon: Lexicon) -> None:
    empty = link_corpus([], lexicon)
    assert empty.extraction.relations == [] and empty.units == [] and empty.subjects == {}


def test_but_not_on_is_no_runs_on(lexicon: Lexicon) -> None:
    corpus = {
        "zephyrix-README.md": "# Zephyrix\n\nZephyrix is a framework for Rust.\n\n"
        "Zephyrix runs on Linux, but not on Windows.\n"
    }
    result = link_corpus(read(corpus), lexicon)
    assert ("framework:zephyrix", "RUNS_ON", "platform:windows") not in triples(result)


def test_a_library_named_by_a_verb_is_not_what_the_verb_says(lexicon: Lexicon) -> None:
    # the bundled lexicon's `accelerate` is also a verb: "keeps its plan to accelerate warm
    # starts" names no library, "pairs with accelerate" does
    corpus = {
        "zephyrix-planner.md": "# Planner\n\n"
        "- **Zephyrix planner** - Zephyrix keeps its plan to accelerate warm starts on phones.\n\n"
        "Zephyrix pairs with accelerate when it shards a job.\n",
    }
    links = link_corpus(read(corpus), lexicon)
    (verb,) = [u for u in links.units if "to accelerate" in u.text]
    assert "library:accelerate" not in verb.mentions
    (name,) = [u for u in links.units if "with accelerate" in u.text]
    assert "library:accelerate" in name.mentions
    evidence = [
        e.quote
        for r in links.extraction.relations
        if "library:accelerate" in (r.source, r.target)
        for e in r.evidence
    ]
    assert not [q for q in evidence if "to accelerate" in q]


def test_a_sentence_that_names_its_own_subject_claims_for_it(lexicon: Lexicon) -> None:
    # a feature list's bold label is not what the item's later sentences speak of
    corpus = {
        "zephyrix-README.md": "# Zephyrix\n\nZephyrix is an inference engine for Rust.\n\n"
        "## Features\n\n"
        "- **Broad Reach**: Deploy anywhere. Zephyrix runs on Linux and the Intel NPU.\n"
    }
    found = triples(link_corpus(read(corpus), lexicon))
    engine = next(s for s, _r, _t in found if s.endswith(":zephyrix"))
    assert (engine, "RUNS_ON", "platform:linux") in found
    assert not {t for t in found if t[0] != engine and t[2] == "platform:linux"}


def test_a_feature_label_is_no_subject(lexicon: Lexicon) -> None:
    # "**Unified Memory**: …" in a feature list describes the README's project
    corpus = {
        "zephyrix-README.md": "# Zephyrix\n\nZephyrix is an array framework for Rust.\n\n"
        "## Features\n\n- **Unified Memory**: Arrays live in shared memory on Apple silicon.\n"
    }
    links = link_corpus(read(corpus), lexicon)
    (unit,) = [u for u in links.units if u.text.startswith("Unified Memory")]
    assert unit.subject is not None and unit.subject.endswith(":zephyrix"), unit


def test_a_chinese_clause_speaks_of_the_name_it_ends_with(lexicon: Lexicon) -> None:
    # "…在浏览器中使用的前端推理引擎 Zephyr.js": the browser is Zephyr.js's, not the README's
    corpus = {
        "zephyrix-README_cn.md": "# Zephyrix\n\nZephyrix 是一个深度学习框架。\n\n"
        "Zephyrix 提供完备的推理引擎，包括面向服务器的推理库 Zephyr Inference，"
        "以及在 Web Browser 中使用的前端推理引擎 Zephyr.js。\n"
    }
    found = triples(link_corpus(read(corpus), lexicon))
    browser = {(s, r) for s, r, t in found if t == "hardware:web-browser"}
    assert len(browser) == 1 and next(iter(browser))[0].endswith(":zephyr-js"), found
    assert any(s.endswith(":zephyrix") and t.endswith(":zephyr-js") for s, _r, t in found)


def test_a_lead_term_is_about_the_thing_its_parenthesis_names(lexicon: Lexicon) -> None:
    # "<a kind of API>（<Name> 式）：…" / "<a method> (<Name>): …": the term stands for that
    # thing, which claims what the item names; a condition in the parenthesis is no subject
    corpus = {
        "styles.md": "# 风格\n\n"
        "- 易用接口（Keras 式）：几行就能跑通，新手友好，也可训练 ResNet。\n"
        "- 最快路线（多卡 GPU）：先编译再交给 TensorRT。\n"
        "- ZeRO offload (DeepSpeed): trades GPU memory for host memory.\n"
    }
    links = link_corpus(read(corpus), lexicon)
    subjects = {u.text.split("：")[0].split(":")[0]: u.subject for u in links.units}
    assert subjects["易用接口（Keras 式）"] == "framework:keras", subjects
    assert subjects["最快路线（多卡 GPU）"] is None, subjects
    assert (subjects["ZeRO offload (DeepSpeed)"] or "").endswith(":deepspeed"), subjects
    assert ("framework:keras", "SUPPORTS", "model:resnet") in triples(links)


def test_names_listed_side_by_side_are_peers(lexicon: Lexicon) -> None:
    # "常见选择：A（…）和 B": the list says nothing of how A relates to B; "A 和 B 都在 C 上跑"
    # still claims C for A
    corpus = {
        "peers.md": "# 工具\n\n"
        "- 高阶接口（Keras 式）：常见选择：Keras（内置于框架里）与 PyTorch Lightning。\n"
        "- 本地部署（Ollama 式）：Ollama 运行在 Linux 上。\n"
    }
    found = triples(link_corpus(read(corpus), lexicon))
    keras = {(r, t) for s, r, t in found if s == "framework:keras"}
    assert ("MENTIONS", "framework:pytorch-lightning") in keras, found
    assert ("USED_WITH", "framework:pytorch-lightning") not in keras, found
    ollama = next(s for s, _r, _t in found if s.endswith(":ollama"))
    assert (ollama, "RUNS_ON", "platform:linux") in found, found


def test_a_package_pip_installs_is_a_library_however_plainly_it_is_written(
    lexicon: Lexicon,
) -> None:
    # "tarnlib" has no capital, digit or dot: only the install command says it is a thing; the
    # guide's other page then speaks of it in running text. "kernels" is an English word the
    # guide inflects ("kernel"): installing it makes no entity of the word.
    corpus = {
        "setup.md": "# Setup\n\nInstall the two packages.\n\n"
        "```bash\npip install -U tarnlib==0.4 kernels\n```\n",
        "speed.md": "# Speed\n\nWith tarnlib, 4-bit weights load on Vulkan.\n"
        "Each kernel is fused; the kernels run on the GPU.\n",
    }
    links = link_corpus(read(corpus), lexicon)
    entities = {e.id: e for e in links.extraction.entities}
    assert entities.get("library:tarnlib") is not None, sorted(entities)
    assert not any("kernel" in eid for eid in entities), sorted(entities)
    (unit,) = [u for u in links.units if u.text.startswith("With tarnlib")]
    assert "library:tarnlib" in [unit.subject, *unit.mentions], unit


def test_a_clause_counting_the_things_before_it_claims_for_each(lexicon: Lexicon) -> None:
    # "两者都…" / "Both …" after a list that names that many things of one kind: each of them
    # claims what the clause names; a count that matches nothing claims nothing
    corpus = {
        "engines.md": "# 引擎\n\n"
        "- 显存：vLLM 和 TGI 在大显存卡上表现接近。\n"
        "- 硬件：两者都支持 NVIDIA GPU，也都能在 AMD 上跑。\n"
        "- 格式：三者都能读 GGUF。\n\n"
        "## Serving\n\n"
        "Ollama and llama.cpp start in seconds. Both run on Apple Silicon.\n"
    }
    found = triples(link_corpus(read(corpus), lexicon))
    for engine in ("inference-engine:vllm", "inference-engine:tgi"):
        assert (engine, "RUNS_ON", "hardware:nvidia-gpu") in found, found
    assert not {t for t in found if t[2] == "format:gguf"}, found
    runs = {s for s, r, t in found if r == "RUNS_ON" and t == "hardware:apple-silicon"}
    assert len(runs) == 2 and any(s.endswith(":ollama") for s in runs), runs


def test_a_bold_label_over_a_list_is_what_its_items_are_about(lexicon: Lexicon) -> None:
    # a page comparing options labels each option's list in bold: its items speak of that
    # option, not of the page's subject; a plain paragraph between breaks the label's reach
    corpus = {
        "options.md": "# Ways to serve\n\nTwo engines are compared below.\n\n"
        "**vLLM (throughput)**\n\n- ✅ batches many requests\n- ❗ needs an NVIDIA GPU\n\n"
        "**Ollama**\n\nA note on setup follows.\n\n- runs on Linux\n"
    }
    links = link_corpus(read(corpus), lexicon)
    found = triples(links)
    assert ("inference-engine:vllm", "REQUIRES", "hardware:nvidia-gpu") in found, found
    assert subject_of(links, "options.md", "runs on Linux") != "inference-engine:ollama"


def test_a_name_listed_among_known_things_of_one_kind_is_of_that_kind(lexicon: Lexicon) -> None:
    # "AWQ, GPTQ or Zorro": Zorro is of the kind its two known peers are, and the section
    # it heads is about it; a list of things of mixed kinds types nothing
    corpus = {
        "squeeze.md": "# Squeeze\n\nSqueeze compresses weights with AWQ, GPTQ or Zorro.\n\n"
        "## Zorro quantization\n\nZorro runs on Linux only.\n\n"
        "## Other\n\nWe tested PyTorch, Linux and Wombat.\n"
    }
    links = link_corpus(read(corpus), lexicon)
    types = {e.id: e.type for e in links.extraction.entities}
    assert types.get("technique:zorro") == NodeType.TECHNIQUE, types
    assert ("technique:zorro", "RUNS_ON", "platform:linux") in triples(links)
    assert not any(eid.endswith(":wombat") for eid in types), types


def test_edition_from_a_section_heading(lexicon: Lexicon) -> None:
    # an edition a section heading names, and its definition types (an app)
    text = (
        "# Zephyrix\n\nZephyrix is a minimalist ML framework for Rust.\n\n"
        "## Zephyrix Studio\n\nZephyrix Studio is a desktop app for Zephyrix models.\n"
    )
    result = link_corpus(read({"zephyrix-README.md": text}), lexicon)
    assert ("tool:zephyrix-studio", "PART_OF", "framework:zephyrix") in triples(result)


# -- claim_relation ----------------------------------------------------------------------------


def _claim(text: str, name: str, target: NodeType) -> RelationType:
    at = text.index(name)
    return claim_relation(text, at, at + len(name), target)


@pytest.mark.parametrize(
    ("text", "name", "target", "expected"),
    [
        ("Runs on NVIDIA GPUs", "NVIDIA GPUs", NodeType.HARDWARE, RelationType.RUNS_ON),
        ("Works on Linux", "Linux", NodeType.PLATFORM, RelationType.RUNS_ON),
        (
            "Training is not supported on Windows",
            "Windows",
            NodeType.PLATFORM,
            RelationType.NOT_SUPPORTED,
        ),
        ("Windows is not supported", "Windows", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("It doesn't support ROCm", "ROCm", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("No support for macOS", "macOS", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("Cannot run on TPUs", "TPUs", NodeType.HARDWARE, RelationType.NOT_SUPPORTED),
        ("暂不支持 Windows", "Windows", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("Works on Windows. Linux is fine", "Windows", NodeType.PLATFORM, RelationType.RUNS_ON),
        (
            "Released under the Apache-2.0 license",
            "Apache-2.0",
            NodeType.LICENSE,
            RelationType.LICENSED_UNDER,
        ),
        ("The license file mentions PyTorch", "PyTorch", NodeType.FRAMEWORK, RelationType.MENTIONS),
        ("Requires CUDA 12", "CUDA", NodeType.PLATFORM, RelationType.REQUIRES),
        ("Needs Python 3.10 at least", "Python", NodeType.LANGUAGE, RelationType.REQUIRES),
        ("依赖 CUDA", "CUDA", NodeType.PLATFORM, RelationType.REQUIRES),
        (
            "A faster alternative to PyTorch",
            "PyTorch",
            NodeType.FRAMEWORK,
            RelationType.ALTERNATIVE_TO,
        ),
        (
            "Unlike LoRA, it trains every weight",
            "LoRA",
            NodeType.TECHNIQUE,
            RelationType.ALTERNATIVE_TO,
        ),
        (
            "Weights stay whole, like in ZeRO",
            "ZeRO",
            NodeType.PARALLEL_STRATEGY,
            RelationType.ALTERNATIVE_TO,
        ),
        ("不同于 LoRA，它训练全部权重", "LoRA", NodeType.TECHNIQUE, RelationType.ALTERNATIVE_TO),
        ("Export models to ONNX", "ONNX", NodeType.FORMAT, RelationType.EXPORTS_TO),
        ("Supports GGUF files", "GGUF", NodeType.FORMAT, RelationType.SUPPORTS),
        (
            "Implements FlashAttention",
            "FlashAttention",
            NodeType.TECHNIQUE,
            RelationType.IMPLEMENTS,
        ),
        ("Works with PyTorch", "PyTorch", NodeType.FRAMEWORK, RelationType.USED_WITH),
        (
            "Made by Hugging Face",
            "Hugging Face",
            NodeType.ORGANIZATION,
            RelationType.PART_OF_ECOSYSTEM,
        ),
        ("Scores high on speed", "speed", NodeType.CRITERION, RelationType.MENTIONS),
    ],
)
def test_claim_relation(text: str, name: str, target: NodeType, expected: RelationType) -> None:
    assert _claim(text, name, target) == expected


@pytest.mark.parametrize(
    ("text", "name", "target", "expected"),
    [
        (
            "Runs on Linux, but not on Windows",
            "Windows",
            NodeType.PLATFORM,
            RelationType.NOT_SUPPORTED,
        ),
        ("Windows isn't supported", "Windows", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("Windows is unsupported", "Windows", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        ("We do not support Windows", "Windows", NodeType.PLATFORM, RelationType.NOT_SUPPORTED),
        (
            "Linux and Windows are not supported",
            "Linux",
            NodeType.PLATFORM,
            RelationType.NOT_SUPPORTED,
        ),
        ("Python 3.10 or later is required", "Python", NodeType.LANGUAGE, RelationType.REQUIRES),
        # a cue inside a word is no cue: "OpeNVINO SUPPORTs", "NoSupportLib supports"
        ("OpenVINO supports the CPU and NPU", "NPU", NodeType.HARDWARE, RelationType.RUNS_ON),
        ("DynaNoSupport runs on Linux", "Linux", NodeType.PLATFORM, RelationType.RUNS_ON),
        # a Chinese full stop ends the clause its cue words are in ("需要…。可选：X")
        ("需要重写损失函数。可选：JAX", "JAX", NodeType.FRAMEWORK, RelationType.USED_WITH),
    ],
)
def test_claim_relation_negations_and_requirements(
    text: str, name: str, target: NodeType, expected: RelationType
) -> None:
    assert _claim(text, name, target) == expected


# -- flex_pattern and NameMatcher --------------------------------------------------------------


@pytest.mark.parametrize(
    ("surface", "text", "matches"),
    [
        ("FlashAttention", "via Flash Attention 2.5.7+", True),
        ("FlashAttention", "flash-attention", True),
        ("FlashAttention", "flash_attention", True),
        ("FlashAttention", "FlashAttentions", True),
        ("FlashAttention", "xFlashAttention", False),
        (
            "flashattention-2",
            "Flash Attention 2",
            False,
        ),  # no split is invented between two letters
        ("FlashAttention-2", "FlashAttention2", True),
        ("FlashAttention-2", "FlashAttention-2.5.7", False),
        ("LLaMA-Factory", "LlamaFactory", True),
        ("LLaMA-Factory", "llama factory", True),
        ("llama.cpp", "llama.cpp", True),
        ("llama.cpp", "llamaXcpp", False),
        ("RTX 4090", "RTX4090", True),
        ("RTX 4090", "RTX 40900", False),
    ],
)
def test_flex_pattern(surface: str, text: str, matches: bool) -> None:
    assert bool(re.search(flex_pattern(surface), text, re.I)) is matches


@pytest.fixture(scope="module")
def matcher() -> NameMatcher:
    return NameMatcher(
        [
            ("Harbor", "tool:harbor", True),  # an ordinary word: only as written
            ("FlashAttention", "library:fa", False),
            ("FlashAttention-2", "library:fa2", False),
            ("llama.cpp", "library:llamacpp", False),
            ("RTX 4090", "hardware:rtx-4090", False),
            ("x", "concept:x", False),  # too short to match
        ]
    )


def _found(matcher: NameMatcher, text: str) -> list[tuple[str, str]]:
    mentions = matcher.find(text)
    for m in mentions:
        assert text[m.start : m.end] == m.surface or text[m.start : m.end].lower() == m.surface
    return [(text[m.start : m.end], m.key) for m in mentions]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a harbor at sea; Harbor builds", [("Harbor", "tool:harbor")]),
        (
            "flash-attention, FLASH ATTENTION and Flash Attention",
            [
                ("flash-attention", "library:fa"),
                ("FLASH ATTENTION", "library:fa"),
                ("Flash Attention", "library:fa"),
            ],
        ),
        (
            "FlashAttention-2 vs FlashAttention",
            [("FlashAttention-2", "library:fa2"), ("FlashAttention", "library:fa")],
        ),
        (
            "Llama.CPP on rtx 4090",
            [("Llama.CPP", "library:llamacpp"), ("rtx 4090", "hardware:rtx-4090")],
        ),
        ("Flash Attention 2.5.7 installed", [("Flash Attention", "library:fa")]),
        ("x marks nothing", []),
        ("", []),
    ],
)
def test_name_matcher(matcher: NameMatcher, text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(matcher, text) == expected


def test_name_matcher_positions_after_a_dotted_capital_i(matcher: NameMatcher) -> None:
    assert _found(matcher, "İstanbul team: FlashAttention") == [("FlashAttention", "library:fa")]


def test_a_sentence_without_a_subject_takes_the_one_before_it_in_its_paragraph_only(
    lexicon: Lexicon,
) -> None:
    notes = (
        "# Notes\n\n"
        "TensorRT is the fastest engine on NVIDIA GPUs. It fuses layers.\n\n"
        "DeepMind is said to favour JAX for AlphaFold.\n"
    )
    links = link_corpus(read({"notes.md": notes}), lexicon)
    assert subject_of(links, "notes.md", "It fuses layers.") == "inference-engine:tensorrt"
    # a new paragraph is not about the last paragraph's subject
    assert subject_of(links, "notes.md", "DeepMind is said to favour JAX for AlphaFold.") != (
        "inference-engine:tensorrt"
    )
    assert not any(
        r.source == "inference-engine:tensorrt" and "deepmind" in r.target
        for r in links.extraction.relations
    )


def test_an_opening_phrase_and_a_pointing_back_sentence_keep_the_subject(lexicon: Lexicon) -> None:
    # the section is about memory, but "For instance, DeepSpeed is …" speaks of DeepSpeed,
    # and "This library …" after it too; a new paragraph is the section's again
    notes = (
        "# Notes\n\n## Memory\n\n"
        "Optimizer states fill the memory of large runs. For instance, DeepSpeed is a "
        "library that shards them. This library runs on NVIDIA GPUs.\n\n"
        "This library has a pure Python fallback.\n\n"
        "## 部署\n\n例如，TensorRT 是一个推理引擎。该引擎需要 CUDA。\n"
    )
    links = link_corpus(read({"notes.md": notes}), lexicon)
    deepspeed = "library:deepspeed"
    assert subject_of(links, "notes.md", "This library runs on NVIDIA GPUs.") == deepspeed
    assert (deepspeed, "RUNS_ON", "hardware:nvidia-gpu") in triples(links)
    assert subject_of(links, "notes.md", "This library has a pure Python fallback.") != deepspeed
    assert subject_of(links, "notes.md", "该引擎需要 CUDA。") == "inference-engine:tensorrt"


def test_other_cue_words_link_and_extract_again(
    lexicon: Lexicon, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the cue words decide claims and names as the code does: a store made under other words
    # is linked and extracted again, not read from its caches
    before = linker_fingerprint(lexicon), lexicon_hash(lexicon)
    monkeypatch.setattr(cues, "fingerprint", lambda: "other words")
    assert linker_fingerprint(lexicon) != before[0]
    assert lexicon_hash(lexicon) != before[1]


def test_the_link_cache_depends_on_every_module_that_links() -> None:
    # a cache is taken back only under the same linking code: every module of the packages that
    # a linking module imports (but the data models and the cue words' own loader, whose files
    # `cues.fingerprint` covers) is one whose source the fingerprint reads
    plain = {"ingest.context", "kg.cues", "kg.documents", "kg.errors"}
    for name in link_cache._LINKING_MODULES:
        for module in package_imports(name):
            if module not in plain:
                assert module in link_cache._LINKING_MODULES, (name, module)


CATALOGUE = """\
# Serving Shelf

A short curated list of model-serving tools.

## Engines

- [Kestrant](https://example.org/kestrant) - A nearest-neighbour search engine written in Zig.
- [Quillon Server](https://example.org/quillon) - An inference server for small GPUs.

## Operators

| Project | Details |
|---|---|
| [Harbo](https://example.org/harbo) | A cluster scheduler that serves and tunes models. |
| [Marlin](https://example.org/marlin) | Serves models on spot instances. |
| [Zephyr.js](https://example.org/zephyr) | Runs models in the browser. |

## Databases

Pelicant is a library for indexing sparse tensors.
"""


def test_a_catalogue_has_no_subject_and_its_entries_are_things(lexicon: Lexicon) -> None:
    """A README that says it is a curated list is a catalogue: the list is no thing one uses
    (it would be the pick for every question its entries answer), what it lists are, though
    plain words name them ("Kestrant" ends like an English adjective); so is a name its
    definition types."""
    links = link_corpus(read({"serving-shelf-README.md": CATALOGUE}), lexicon)
    names = {e.name: e.type for e in links.extraction.entities}
    assert not any("Shelf" in name for name in names), names
    assert all(u.subject is None or "shelf" not in u.subject for u in links.units)
    for name in ["Kestrant", "Quillon Server", "Harbo", "Marlin", "Pelicant"]:
        assert name in names, (name, sorted(names))
    assert names["Kestrant"] is NodeType.INFERENCE_ENGINE
    assert names["Pelicant"] is NodeType.LIBRARY
    (row,) = [u for u in links.units if u.cells and u.cells[0] == "Harbo"]
    assert row.subject is not None and row.subject.endswith(":harbo"), row


def test_a_requirement_denied_is_no_requirement(lexicon: Lexicon) -> None:
    """A requirement denied ("does not need X", "不需要 X") says nothing of X that an edge
    could type: neither that the subject requires it nor that it does not support it."""
    corpus = {
        "egret-README.md": "# Egret\n\nEgret is a serving engine for small boards.\n\n"
        "Egret does not require a GPU, and it needs Linux.\n\n"
        "Egret 不需要 ONNX 或 TensorRT，直接加载原始权重。\n"
    }
    found = triples(link_corpus(read(corpus), lexicon))
    egret = {(r, t) for s, r, t in found if s.endswith(":egret")}
    assert ("REQUIRES", "platform:linux") in egret, egret
    for target in ["hardware:gpu", "format:onnx", "inference-engine:tensorrt"]:
        assert not any(t == target and r in ("REQUIRES", "NOT_SUPPORTED") for r, t in egret), egret
