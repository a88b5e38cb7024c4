"""The graph composer on an article written for this test (not the bundled corpus): a question
about a named thing that happens to mention hardware is answered about that thing, not turned into
a list of everything that runs on the hardware; questions that ask to choose keep their
recommendations."""

from __future__ import annotations

import pytest
from store_fixture import article_store

from kg.schema import RelationType
from qa.api import Assistant
from qa.decide.graph.advice import asks_to_choose

ARTICLE = """# 多卡训练与上线笔记

## 一、多卡怎么省显存
FSDP 的做法：把参数、梯度和优化器状态切分到每张 GPU 上，单卡放不下的模型也能训。

## 二、上线
- TensorRT 在 GPU 上跑得最快。
- ONNX Runtime 在 GPU 和 CPU 上都能跑。
- PyTorch 模型先导出 ONNX，再交给 TensorRT。
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return Assistant.open(article_store(tmp_path_factory, {"notes.md": ARTICLE}), dense=False)


def test_the_article_links_engines_and_the_strategy_to_the_gpu(assistant: Assistant) -> None:
    # the premise of the tests below: several things share the generic GPU link
    on_gpu = {
        r.source
        for r in assistant.graph.in_relations("hardware:gpu")
        if r.relation == RelationType.RUNS_ON
    }
    assert {"inference-engine:tensorrt", "inference-engine:onnx-runtime"} <= on_gpu


@pytest.mark.parametrize(
    "question",
    [
        "What exactly does FSDP split across the GPUs?",  # no kind cue: read as CHOOSE by default
        "FSDP 在多张 GPU 上切分的是什么？",  # FACT
        "How does FSDP save memory on GPUs?",  # HOW_TO
        "Is FSDP still a recommended way to save memory on GPUs?",  # yes/no: no choice
    ],
)
def test_a_question_about_a_named_thing_recommends_nothing_else(
    assistant: Assistant, question: str
) -> None:
    answer = assistant.ask(question)
    assert not answer.abstained
    assert answer.recommendations == [], [r.name for r in answer.recommendations]
    assert "Recommendation" not in answer.answer and "推荐" not in answer.answer
    # the facts about the named thing stay in the answer
    for fact in ("参数", "梯度", "优化器状态"):
        assert fact in answer.answer
    # and what merely runs on the same GPU is no fact about it: no cited edge touches it
    touched = {end for c in answer.citations for e in c.path for end in (e.source, e.target)}
    assert not touched & {"inference-engine:tensorrt", "inference-engine:onnx-runtime"}, touched


def test_a_choose_question_keeps_the_hardware_signal(assistant: Assistant) -> None:
    answer = assistant.ask("我只有 GPU 服务器，推理引擎选哪个？")
    names = [r.name for r in answer.recommendations]
    assert names[:2] and set(names[:2]) <= {"TensorRT", "ONNX Runtime"}, names


def test_what_the_named_thing_leads_to_is_recommended_with_its_path(assistant: Assistant) -> None:
    # PyTorch -> ONNX -> TensorRT leads from what is named: the pick is on that path, cited whole
    answer = assistant.ask(
        "I trained my model in PyTorch and serve it on GPUs. What deployment path should I take?"
    )
    route = [("framework:pytorch", "format:onnx"), ("format:onnx", "inference-engine:tensorrt")]
    assert any([(e.source, e.target) for e in c.path] == route for c in answer.citations)
    assert answer.recommendations and answer.recommendations[0].id in {
        "format:onnx",
        "inference-engine:tensorrt",
    }
    assert "PyTorch —exports to→ ONNX —is used with→ TensorRT" in answer.answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("我只有 GPU 服务器，推理引擎选哪个？", True),
        ("On a GPU, which library would you pick?", True),
        ("What exactly does FSDP split across the GPUs?", False),
        ("FSDP 在多张 GPU 上切分的是什么？", False),
        ("Is FSDP still recommended on GPUs?", False),  # a yes/no question about what it names
        ("多卡训练还推荐用 FSDP 吗？", False),
        ("For my GPU server, which engine would you recommend?", True),
    ],
)
def test_asks_to_choose(assistant: Assistant, question: str, expected: bool) -> None:
    assert asks_to_choose(assistant.understand(question)) is expected
