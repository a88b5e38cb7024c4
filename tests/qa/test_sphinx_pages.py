"""Two Sphinx docs pages written for this test (reStructuredText, the way a project's docs site
writes them: links with their URLs, `**Note**:` paragraphs, a section per component), ingested
for real: a link reads as its text, a label that leads notes on both pages is no name to pick,
a section titled with the plural of the question's word is the kind asked for, hardware
written with a gloss between its words ("AMD (ROCm) GPUs") is mentioned, an identifier is
named only as it is written, and a question that asks why asks for no pick."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from qa.api import Assistant
from qa.decide import Reading

INSTALL = """Installing Tarn
===============

Tarn is a library for training one model on many machines.

Controllers
-----------

Tarn coordinates its workers through a controller. Both Wisp and Ember are built by default.

Wisp
~~~~

Wisp is the original controller of Tarn.

**Note**: Wisp 2.1.0 may hang. Use Wisp 2.0.9 or `Wisp 3 <https://wisp.example.org/faq/?release=3>`_
instead.

If both Wisp and Ember are built, Wisp is the default controller.

Ember
~~~~~

Ember needs no extra dependencies. Ember is required for resizable training.

**Note**: macOS users must install ``libhive`` before they build Ember.

Hardware
--------

Tarn's collective operations run on both NVIDIA (CUDA) and AMD (ROCm) GPUs.
"""

TUNING = """Tuning Tarn
===========

Tarn can tune its own buffer sizes while it trains.

**Note**: tuning never changes what the model learns.

Enable automatic tuning with the ``--autotune`` flag of ``tarnrun``.
"""


GPU = """Tarn with GPU
=============

Tarn shares gradients between GPUs through its own ring.

Environment Variables
---------------------

- ``TARN_WITH_GPU`` - build Tarn with GPU support.
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    store: Path = article_store(
        tmp_path_factory,
        {"tarn-install.rst": INSTALL, "tarn-tuning.rst": TUNING, "tarn-gpu.rst": GPU},
    )
    return Assistant.open(store, dense=False, llm="none")


def _reading(assistant: Assistant, question: str) -> Reading:
    parsed = assistant.understand(question)
    draft, specific, ranked = assistant._drafted(parsed)
    return assistant.reading(parsed, draft, specific, ranked)


def test_a_link_reads_as_its_text(assistant: Assistant) -> None:
    # the URL is no text to read, and its "?" ends no sentence
    unit = next(u for u in assistant.units.units if "2.0.9" in u.text)
    assert "Use Wisp 2.0.9 or Wisp 3 instead." in unit.text, unit.text
    assert "https" not in unit.text


@pytest.mark.parametrize(
    "question",
    [
        "Wisp 2.1.0 hangs for me. Which release is safe instead?",
        "在 macOS 上编译 Ember 之前要先装什么？",
    ],
)
def test_a_label_that_leads_notes_is_no_candidate(assistant: Assistant, question: str) -> None:
    reading = _reading(assistant, question)
    assert any(u.text.startswith("Note:") for u in reading.evidence), reading.evidence
    assert "Note" not in [c.name for c in reading.candidates]


def test_a_title_that_is_the_plural_of_the_asked_kind_is_no_candidate(
    assistant: Assistant,
) -> None:
    reading = _reading(
        assistant, "If both Wisp and Ember are built, which one is the default controller?"
    )
    assert reading.evidence[0].text.startswith("If both Wisp and Ember are built"), reading.evidence
    assert "Controllers" not in [c.name for c in reading.candidates]


def test_hardware_written_with_a_gloss_between_its_words_is_mentioned(
    assistant: Assistant,
) -> None:
    # "AMD (ROCm) GPUs" names AMD GPUs: the question is answered from that line, not declined
    answer = assistant.ask("Tarn 用 AMD GPU 训练行不行？")
    assert not answer.abstained, answer.answer
    assert "AMD (ROCm) GPUs" in answer.answer


def test_an_identifier_is_named_as_it_is_written(assistant: Assistant) -> None:
    # TARN_WITH_GPU folds to the page's title ("Tarn with GPU"), but no line under that title
    # names the variable unless it writes it
    reading = _reading(assistant, "How does Tarn share gradients between GPUs?")
    ring = next(n for n, u in enumerate(reading.evidence, 1) if "own ring" in u.text)
    variable = next(c for c in reading.candidates if c.name == "TARN_WITH_GPU")
    assert ring not in variable.evidence, variable


def test_a_question_that_asks_why_asks_for_no_pick(assistant: Assistant) -> None:
    # a reason answers it: the reader is asked for the line, not for a name
    assert not _reading(assistant, "Why do macOS users have to install libhive?").choose
    assert not _reading(assistant, "为什么 Wisp 会卡住？").choose
    assert _reading(assistant, "Which controller is the default?").choose
    # asked which, and why too: a pick with its reason
    assert _reading(
        assistant, "Which of Wisp and Ember needs no extra dependencies, and why?"
    ).choose
