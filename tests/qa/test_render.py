"""Rendering: a long evidence unit is shown with the sentence that answers the question, all
it showed before kept, whatever language it is in."""

from __future__ import annotations

import pytest

from kg.graph import KnowledgeGraph
from qa.render import render_draft
from qa.schema import AnswerDraft, DraftPoint, Language

LONG_EN = (
    "Kestrel is a serving engine for small clusters. It batches requests continuously and pages "
    "its key-value cache. It ships a router that spreads requests over replicas. It reads "
    "checkpoints from three hubs and converts them on load. It exposes an HTTP API and a Python "
    "client, and it logs metrics that common dashboards read. Its int8 weights decode 1.7 times "
    "as fast as bf16 weights on one GPU."
)
LONG_ZH = (
    "简介：Kestrel 是面向小集群的服务引擎，支持连续批处理和分页的键值缓存。它自带路由，"
    "可以把请求分散到多个副本上。它能从三个模型仓库读取权重并在加载时转换格式。它提供 HTTP 接口和"
    "Python 客户端，也支持流式输出和多轮对话的缓存，日志与监控指标可以接入常见的可观测平台。"
    "它的 8bit 量化权重解码速度约为 BF16 的 1.7 倍。"
)


def _answer(text: str, question: str, language: Language) -> str:
    point = DraftPoint(doc="k.md", start=0, end=len(text), quote=text, text=text)
    draft = AnswerDraft(question=question, language=language, facts=[point])
    return render_draft(draft, KnowledgeGraph()).answer


@pytest.mark.parametrize(
    ("text", "question", "language"),
    [
        (LONG_EN, "How much faster does Kestrel decode int8 weights than bf16?", Language.EN),
        (LONG_ZH, "Kestrel 的 8bit 量化权重解码比 BF16 快几倍？", Language.ZH),
    ],
    ids=["en", "zh"],
)
def test_a_long_unit_is_shown_with_the_sentence_that_answers(
    text: str, question: str, language: Language
) -> None:
    # a question the opening answers: the unit is cut at its end
    opening = _answer(text, "What is Kestrel?", language)
    assert "1.7" not in opening and "…" in opening
    shown = opening.split("“", 1)[1].split("…", 1)[0]
    # a question a later sentence answers: that sentence is shown too, and all shown before
    answer = _answer(text, question, language)
    assert "1.7" in answer and shown in answer, answer
