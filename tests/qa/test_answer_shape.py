"""The shape of answers on a deployment guide written for this test: a question about who gets
the fact, not the guide's recommendation for the situation it mentions; no sentence is quoted
twice in one answer; and beside a recommendation only a few excerpts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from store_fixture import article_store

from qa.api import Assistant

GUIDE = """# 推理部署选型笔记

## 选型逻辑

- 边缘端 Intel 设备 → OpenVINO
- 高吞吐 GPU 推理 → TensorRT
- 边缘设备：考虑 TensorRT/OpenVINO 的量化模型（INT8），或直接用 ONNX Runtime。
- 超大规模训练 → JAX

## 各家说明

OpenVINO 由 Intel 开发，针对 CPU、GPU 和 NPU 做了优化，适合边缘端 Intel 设备。

TensorRT 是 NVIDIA GPU 专属的推理框架，层融合和 INT8 量化让延迟最低。

ONNX Runtime 跨平台，支持 CPU 和 GPU，能跑从 PyTorch 导出的模型。

据说 DeepMind 偏爱 JAX，把它用于 AlphaFold 的大规模训练。

JAX 的学习曲线陡峭，社区相对小。
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    store: Path = article_store(tmp_path_factory, {"deploy-guide.md": GUIDE})
    return Assistant.open(store, dense=False)


@pytest.mark.parametrize(
    "question",
    ["Which lab is said to favour JAX for large-scale training?", "哪个实验室偏爱 JAX？"],
)
def test_a_question_about_who_gets_the_fact_not_a_recommendation(
    assistant: Assistant, question: str
) -> None:
    answer = assistant.ask(question)
    assert answer.recommendations == [], answer.answer
    assert "DeepMind" in answer.answer


def _facts(answer_text: str) -> list[str]:
    parts = re.split(r"\n(?:From the sources|资料中的相关内容)[:：]\n", answer_text)
    return (
        [line for line in parts[1].split("\n") if line.startswith("- ")] if len(parts) > 1 else []
    )


@pytest.mark.parametrize(
    "question",
    [
        "模型要部署到边缘端的 Intel 设备上，推荐哪个推理框架？",
        "Lowest latency on an edge device: which inference engine?",
        "高吞吐 GPU 推理用什么？",
    ],
)
def test_a_recommendation_quotes_each_sentence_once_with_few_excerpts(
    assistant: Assistant, question: str
) -> None:
    answer = assistant.ask(question)
    assert answer.recommendations, answer.answer
    quotes = re.findall(r"“([^”]+)”", answer.answer)
    assert len(quotes) == len(set(quotes)), answer.answer
    assert len(_facts(answer.answer)) <= 3, answer.answer
