"""A word the question denies ("we have no GPU cluster") matches in sense where a unit denies
it too: pages written for this test, ingested for real, where the unit that says the denied
thing positively shares more of the question's words than the unit that denies it."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from qa.api import Assistant

PAGE_EN = """# Building models for Mote

## Kiln

Kiln compiles the model on a GPU cluster.

## Ember

Ember needs no GPU cluster: it compiles the model on one CPU.
"""

PAGE_ZH = """# 给 Mote 编译模型

## 砚台

砚台在显卡集群上编译模型。

## 墨池

墨池无需显卡集群：它用处理器编译模型。
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    store: Path = article_store(
        tmp_path_factory, {"mote-building.md": PAGE_EN, "mote-building-zh.md": PAGE_ZH}
    )
    return Assistant.open(store, dense=False, llm="none")


def _first(assistant: Assistant, question: str) -> str:
    return assistant.units.search(question)[0].unit.text


def test_a_unit_that_denies_what_the_question_denies_ranks_first(assistant: Assistant) -> None:
    first = _first(assistant, "We have no GPU cluster. What compiles the model?")
    assert first.startswith("Ember needs no GPU cluster"), first
    first = _first(assistant, "我们没有显卡集群，用什么编译模型？")
    assert first.startswith("墨池无需显卡集群"), first


def test_a_question_that_denies_nothing_reads_as_before(assistant: Assistant) -> None:
    # the same words said, not denied: the unit that says them most still ranks first
    first = _first(assistant, "We have a GPU cluster. What compiles the model?")
    assert first.startswith("Kiln compiles"), first
    first = _first(assistant, "我们有显卡集群，用什么编译模型？")
    assert first.startswith("砚台在显卡集群上"), first
