"""Answers from worker processes (`qa.workers`): the same answers as in the calling process,
field by field, with the graph alone and with a real reader; a worker killed while it answers
loses no answer and is replaced; a worker that cannot open its store leaves every question to
the calling process, without starting again and again."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from store_fixture import SETTINGS, article_store

from qa.api import Assistant
from qa.schema import Answer
from qa.workers import AnswerPool, WorkerSpec, worker_spec

ARTICLE = """部署与选型笔记

入门：先学 Quillon，它的教程最全。
边缘盒子：用 Brisket Runtime 部署，延迟最低。
多机训练：用 Marrowflow，它切分优化器状态。
"""
QUESTIONS = [
    "入门先学哪个框架？",
    "边缘盒子上部署用什么，延迟最低？",
    "Which tool should we use for training on many machines?",
    "",  # an empty question is declined, by the worker as here
]


def _fields(answer: Answer) -> dict[str, Any]:
    """What an answer says: everything but how long it took."""
    return answer.model_dump(mode="json", exclude={"latency_ms"})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"notes.txt": ARTICLE})


@pytest.fixture(scope="module")
def pool(store: Path) -> Iterator[AnswerPool]:
    spec = WorkerSpec(store=store, llm="none", dense=False, settings=SETTINGS)
    started = AnswerPool(spec, workers=1)
    assert started.ready(timeout=300), "the worker did not open the store"
    yield started
    started.close()


def test_workers_answer_what_this_process_answers(store: Path, pool: AnswerPool) -> None:
    here = Assistant.open(store, settings=SETTINGS, dense=False, llm="none")
    pooled = here.answering_in(pool)
    before = pool.answered
    for question in QUESTIONS:
        assert _fields(pooled.ask(question)) == _fields(here.ask(question)), question
    assert pool.answered - before == len(QUESTIONS)  # every one by the worker
    events = [e.kind for e in pooled.ask_stream(QUESTIONS[0])]
    assert events == ["final"]  # the graph alone: one answer, as here


def test_a_worker_killed_loses_no_answer_and_is_replaced(store: Path, pool: AnswerPool) -> None:
    here = Assistant.open(store, settings=SETTINGS, dense=False, llm="none")
    pooled = here.answering_in(pool)
    expected = {q: _fields(here.ask(q)) for q in QUESTIONS}
    [first] = pool.alive()
    with ThreadPoolExecutor(8) as threads:
        in_flight = [threads.submit(pooled.ask, QUESTIONS[i % 3]) for i in range(24)]
        os.kill(first, signal.SIGKILL)
        # asked after the kill: sent to a dead worker, or finding none ready, and answered here
        after = [threads.submit(pooled.ask, QUESTIONS[i % 3]) for i in range(8)]
        answers = [(a.result(timeout=300), i % 3) for i, a in enumerate(in_flight + after)]
    for answer, q in answers:
        assert _fields(answer) == expected[QUESTIONS[q]]
    assert wait_for(lambda: len(pool.alive()) == 1 and pool.alive() != [first], 300) is not None
    before = pool.answered
    assert _fields(pooled.ask(QUESTIONS[1])) == expected[QUESTIONS[1]]
    assert pool.answered == before + 1  # by the new worker


def test_a_worker_that_cannot_open_its_store_leaves_questions_here(
    store: Path, tmp_path: Path
) -> None:
    missing = WorkerSpec(store=tmp_path / "no-store", llm="none", dense=False, settings=SETTINGS)
    broken = AnswerPool(missing, workers=1)
    try:
        assert not broken.ready(timeout=300)  # it died before it was ready
        assert broken.alive() == []
        here = Assistant.open(store, settings=SETTINGS, dense=False, llm="none")
        answer = here.answering_in(broken).ask(QUESTIONS[0])
        assert _fields(answer) == _fields(here.ask(QUESTIONS[0]))
        assert broken.answered == 0
    finally:
        broken.close()


def test_workers_read_with_the_same_llm_server(store: Path, llamacpp_server: Any) -> None:
    here = Assistant.open(store, settings=SETTINGS, dense=False, llm=llamacpp_server.base_url)
    spec = worker_spec(here, store, SETTINGS, dense=False)
    assert spec is not None and spec.llm == llamacpp_server.base_url
    assert spec.settings is not None and spec.settings.llm.model == llamacpp_server.model
    readers = AnswerPool(spec, workers=1)
    try:
        assert readers.ready(timeout=300)
        pooled = here.answering_in(readers)
        kinds = [e.kind for e in pooled.ask_stream(QUESTIONS[1])]
        assert kinds[0] == "graph" and kinds[-1] == "final"
        there, mine = pooled.ask(QUESTIONS[1]), here.ask(QUESTIONS[1])
        assert there.backend.startswith("llm:")
        assert _fields(there) == _fields(mine)  # greedy reading: the same answer
        assert readers.answered == 2
    finally:
        readers.close()


def test_a_reader_in_this_process_is_not_shared(store: Path) -> None:
    from qa.decide.reader import Verdict

    class InProcess:
        name = "in-process"

        def stream(self, reading: Any) -> Iterator[str | Verdict]:
            yield Verdict(evidence=[])

    here = Assistant.open(store, settings=SETTINGS, dense=False, llm=InProcess())
    assert worker_spec(here, store, SETTINGS) is None
