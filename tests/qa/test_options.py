"""Questions that name two alternatives, decided by a README's tables of measurements (a
benchmark per section, row-group labels, options as rows or as columns), in a README written for
this test the way projects write their benchmark sections."""

from __future__ import annotations

import pytest
from store_fixture import article_store

from qa.api import Assistant

FERRET = """# Ferret

Ferret is a fast inference engine for speech models on CPU and GPU.
See the [documentation](https://ferret.example.org) to get started.

## Benchmarks

The benchmark reports target tokens generated per second (higher is better).

#### CPU

| | Tokens per second | Max. memory | BLEU |
| --- | --- | --- | --- |
| **WMT14 model** | | | |
| Flowy 2.3 (with Torchy 2.1) | 209.2 | 2653MB | 26.93 |
| Torchy 2.1 | 280.5 | 2010MB | 26.71 |
| - int8 | 320.1 | 1350MB | 26.70 |
| Marlin 1.11 | 344.5 | 7605MB | 27.93 |
| Ferret 1.0 | 650.2 | 850MB | 26.71 |
| - int8 | 900.4 | 600MB | 26.64 |

#### GPU

| | Tokens per second | Max. GPU memory | Max. CPU memory | BLEU |
| --- | --- | --- | --- | --- |
| **WMT14 model** | | | | |
| Torchy 2.1 | 5000.0 | 1500MB | 1100MB | 26.71 |
| Ferret 1.0 | 6600.0 | 1200MB | 950MB | 26.71 |

## Fine-tuning memory

| Method | Runnable on | Peak memory | Tokens/sec |
| --- | --- | --- | --- |
| LoRA | 1x 4090 | 16.2 GiB | 3083 |
| QLoRA | 1x 4090 | 7.4 GiB | 2413 |

## Speed by GPU

Measured on an RTX 3090 Ti and an RTX 4090 with ExLlama kernels.

| Model | Mode | 3090Ti | 4090 |
| --- | --- | --- | --- |
| Llama2 70B | 2.5 bpw | 33 t/s | 38 t/s |
| Llama2 7B | 4.0 bpw | 185 t/s | 211 t/s |
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return Assistant.open(
        article_store(tmp_path_factory, {"ferret-README.md": FERRET}), dense=False
    )


def test_how_two_things_compare_in_measured_quantities_is_decided_by_the_table(
    assistant: Assistant,
) -> None:
    """ "A vs B: how do they differ in memory and in tokens per second?" names no winner to find,
    but the table does: more tokens per second and less memory, in the section the question
    names (CPU), with the other option's row beside the winner's."""
    answer = assistant.ask(
        "On CPU, Ferret vs Torchy: how do they differ in memory and in tokens per second?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["Ferret"], answer.answer
    assert "650.2" in answer.answer and "280.5" in answer.answer, answer.answer


def test_the_quantity_a_question_qualifies_decides_alone(assistant: Assistant) -> None:
    """ "Does LoRA or QLoRA use less memory, and how does throughput change?": the
    memory column decides, not a vote of memory against throughput."""
    answer = assistant.ask(
        "Fine-tuning with Ferret on one RTX 4090 card: does LoRA or QLoRA use less memory, and "
        "how does throughput change?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["QLoRA"], answer.answer


def test_options_that_are_columns_are_recommended_as_the_value_the_row_states(
    assistant: Assistant,
) -> None:
    """Options that are no entities (a table's "4090" column) are recommended as values: the
    verbatim row under their columns is what backs the pick."""
    answer = assistant.ask(
        "Llama2 70B quantised to 2.5 bpw in Ferret: is RTX 4090 or RTX 3090 Ti quicker?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["4090"], answer.answer
    assert "38 t/s" in answer.answer, answer.answer


def test_telling_two_things_apart_without_a_measure_recommends_neither(
    assistant: Assistant,
) -> None:
    answer = assistant.ask("Ferret vs Torchy: how do they differ?")
    assert answer.recommendations == [], answer.answer


HERON = """# Heron

[![PyPI](https://img.shields.io/pypi/v/heron.svg)](https://pypi.org/project/heron/)

Heron is a distributed inference framework for language, speech and image models.

## Why Heron

| Feature | Heron | Egret | Ibis |
| --- | --- | --- | --- |
| OpenAI-compatible API | ✅ | ✅ | ✅ |
| More platforms (CPU, Metal) | ✅ | ✅ | ❌ |
| Distributed cluster deployment | ✅ | ❌ | ❌ |
| Embedding models | ✅ | ❌ | ❌ |
"""


def test_a_feature_matrix_decides_and_its_rows_back_the_pick(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The ✅ rows the question asks about decide between the columns; the pick stands on the
    edges of the rows shown with it, though the rows it asks about have none of their own."""
    store = article_store(tmp_path_factory, {"heron-README.md": HERON, "ferret-README.md": FERRET})
    answer = Assistant.open(store, dense=False).ask(
        "Heron or Egret: which supports distributed cluster deployment and embedding models better?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["Heron"], answer.answer
    assert "Embedding models" in answer.answer, answer.answer


def test_the_pick_shows_its_own_row_of_the_table_that_backs_it(assistant: Assistant) -> None:
    """A recommendation backed by a benchmark table quotes its own row ("Ferret 1.0 | 650.2"),
    not only the rows of the frameworks the question names."""
    answer = assistant.ask(
        "Our Torchy and Marlin speech models run on CPU-only machines; which inference engine "
        "gives more tokens per second with less memory than Torchy does?"
    )
    assert [r.name for r in answer.recommendations][:1] == ["Ferret"], answer.answer
    reasons = answer.answer.split("\n\n")[0]
    assert "650.2" in reasons, answer.answer
