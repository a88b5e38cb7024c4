"""The graph composer on an article written for this test (not the bundled corpus): routes from
what the question already uses to what is recommended, a section named by its title, a source
question answered by the sentence after it, and a recommendation whose line wraps mid-sentence."""

from __future__ import annotations

import pytest
from store_fixture import article_store

from kg.schema import RelationType
from qa.api import Assistant

ARTICLE = """# 语音模型上线指南

## 一、部署路线
- 通用语音服务：PyTorch → 导出 ONNX → OpenVINO，在 Intel CPU 上延迟低。
- 云上批量转写：训练任务调度用
  torchrun。

## 二、三条提醒
- 别追新：新框架不一定更好。
- 先测延迟：上线前量一下 p95。
- 留好回退：旧模型保留一周。

## 三、常见问题
怎么判断一个语音模型能否跑在 Intel CPU 上？答案是先转成 OpenVINO IR 再测一遍延迟。
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return Assistant.open(article_store(tmp_path_factory, {"speech.md": ARTICLE}), dense=False)


def test_a_line_wrapped_mid_sentence_still_yields_its_recommendation(
    assistant: Assistant,
) -> None:
    sources = {
        assistant.graph.entity(r.source).name
        for r in assistant.graph.in_relations("tool:torchrun")
        if r.relation == RelationType.RECOMMENDED_FOR
    }
    assert any("训练任务调度" in name for name in sources), sources


def test_the_answer_shows_the_route_from_what_the_user_has(assistant: Assistant) -> None:
    answer = assistant.ask("我用 PyTorch 训练了语音模型，要在 Intel CPU 上部署，选哪个推理引擎？")
    assert answer.recommendations and answer.recommendations[0].name == "OpenVINO"
    # the route is shown as one path beside its quote, and cited as one two-edge path
    assert "PyTorch —导出为→ ONNX —搭配→ OpenVINO" in answer.answer
    routes = [c for c in answer.citations if len(c.path) == 2]
    assert [(e.source, e.target) for e in routes[0].path] == [
        ("framework:pytorch", "format:onnx"),
        ("format:onnx", "inference-engine:openvino"),
    ]


def test_a_section_named_by_its_title_is_answered_with_its_points(
    assistant: Assistant,
) -> None:
    answer = assistant.ask("“三条提醒”一节讲了什么？")
    assert not answer.abstained
    for point in ("别追新", "先测延迟", "留好回退"):
        assert point in answer.answer


def test_a_question_in_the_source_comes_with_its_answer(assistant: Assistant) -> None:
    answer = assistant.ask("怎么判断语音模型能不能跑在 Intel CPU 上？")
    assert "先转成 OpenVINO IR" in answer.answer
