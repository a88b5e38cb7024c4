"""The alias lexicon: zh/en surface forms, user extension files, mention finding, data sanity."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from kg.errors import StoreError
from kg.lexicon import Lexicon
from kg.schema import normalize_name


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


@pytest.mark.parametrize(
    ("surface", "entity_id"),
    [
        ("英伟达显卡", "hardware:nvidia-gpu"),
        ("N卡", "hardware:nvidia-gpu"),
        ("边缘设备", "hardware:edge-device"),
        ("torch", "framework:pytorch"),
        ("Py Torch", "framework:pytorch"),
        ("ONNXRuntime", "inference-engine:onnx-runtime"),
        ("onnx", "format:onnx"),
        ("混合精度", "technique:mixed-precision"),
        ("FullyShardedDataParallel", "parallel-strategy:fsdp"),
        ("Weights & Biases", "tool:w-b"),
    ],
)
def test_zh_and_en_surfaces_name_one_entry(lexicon: Lexicon, surface: str, entity_id: str) -> None:
    entry = lexicon.lookup(surface)
    assert entry is not None and entry.id == entity_id


def test_unknown_surface_is_none(lexicon: Lexicon) -> None:
    assert lexicon.lookup("FooServe") is None


def test_mentions_are_longest_first_and_word_bounded(lexicon: Lexicon) -> None:
    text = "用 TensorFlow Lite 部署到手机，TFLite 比 TF 小；ONNX Runtime 读 ONNX。"
    mentions = lexicon.entity_mentions(text)
    assert [(m.surface, m.key) for m in mentions] == [
        ("TensorFlow Lite", "inference-engine:tflite"),
        ("手机", "hardware:mobile"),
        ("TFLite", "inference-engine:tflite"),
        ("TF", "framework:tensorflow"),
        ("ONNX Runtime", "inference-engine:onnx-runtime"),
        ("ONNX", "format:onnx"),
    ]
    for m in mentions:
        assert text[m.start : m.end] == m.surface


def test_a_name_that_is_a_verb_is_no_mention_where_it_is_the_verb(tmp_path: Path) -> None:
    # one file names the tool, a later one marks the known name as a verb
    extra, verbs = tmp_path / "tools.json", tmp_path / "verbs.json"
    entry = {"type": "Tool", "name": "boost", "aliases": ["Boost"]}
    extra.write_text(json.dumps({"entities": [entry]}), encoding="utf-8")
    verbs.write_text(json.dumps({"entities": [{**entry, "verb": True}]}), encoding="utf-8")
    assert len(Lexicon.default([extra]).entity_mentions("help to boost it")) == 1
    lexicon = Lexicon.default([extra, verbs])
    text = "Kernels help to boost training; install boost, or use Boost to Boost it. TO boost"
    assert [(m.surface, m.start) for m in lexicon.entity_mentions(text)] == [
        ("boost", text.index("boost,")),
        ("Boost", text.index("Boost to")),
        ("Boost", text.index("Boost it")),
    ]
    # the bundled library named by a verb: its name written as the verb names nothing
    bundled = Lexicon.default()
    said = "A cache meant to accelerate lookups; pip install accelerate."
    assert [m.start for m in bundled.entity_mentions(said)] == [said.rindex("accelerate")]


def test_user_file_adds_entities_and_aliases(tmp_path: Path) -> None:
    extra = tmp_path / "mine.json"
    extra.write_text(
        json.dumps(
            {
                "entities": [
                    {"type": "InferenceEngine", "name": "FooServe", "aliases": ["福服务"]},
                    {"type": "Framework", "name": "PyTorch", "aliases": ["火炬"]},
                ],
                "terms": {"deploy": ["上架"]},
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    lexicon = Lexicon.default([extra])
    found = lexicon.lookup("福服务")
    assert found is not None and found.id == "inference-engine:fooserve"
    torch = lexicon.lookup("火炬")
    assert torch is not None and torch.id == "framework:pytorch"
    assert "torch" in torch.aliases  # the bundled aliases stay
    assert "deploy" in lexicon.term_keys("模型上架")
    assert "福服务" in lexicon.all_surfaces()


def test_unreadable_user_file_says_what_to_do(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(StoreError, match=r"bad\.json.*--lexicon"):
        Lexicon.default([bad])


def test_no_surface_names_two_entries(lexicon: Lexicon) -> None:
    owners: dict[str, set[str]] = defaultdict(set)
    for entry in lexicon.entries.values():
        for surface in entry.surfaces:
            owners[normalize_name(surface)].add(entry.id)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}


def test_entry_ids_are_their_canonical_names(lexicon: Lexicon) -> None:
    for entity_id, entry in lexicon.entries.items():
        assert entry.id == entity_id
        assert lexicon.lookup(entry.name) is not None
