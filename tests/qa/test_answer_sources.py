"""Where an answer says its quotes come from and what they are under, on notes written for
this test: the section's title is shown whole, since a title often says what its lines were
measured on, and a piece of a code block is shown under the command it continues."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from qa.api import Assistant

TITLE = "Latency measured on a Raspberry Pi 5 with 8 GB of memory, batch size 1"
NOTES = f"""# Edge model notes

## {TITLE}

| Model | Latency |
| --- | --- |
| TinyNet | 12 ms |
| WideNet | 48 ms |

## Which to take

TinyNet is the model to take where latency matters more than accuracy.
"""


def _assistant(tmp_path_factory: pytest.TempPathFactory, name: str, text: str) -> Assistant:
    """An assistant over one document (lexical and graph retrieval: no embedder to load)."""
    store: Path = article_store(tmp_path_factory, {name: text})
    return Assistant.open(store, dense=False)


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return _assistant(tmp_path_factory, "edge-notes.md", NOTES)


def test_a_quote_shows_its_sections_title_whole(assistant: Assistant) -> None:
    answer = assistant.ask("What latency does TinyNet have?", use_llm=False)
    assert "12 ms" in answer.answer, answer.answer
    assert f"edge-notes.md · {TITLE})" in answer.answer, answer.answer


RUN_NOTES = """# Running Wisp

## Benchmark

Install it and run the small model with 4-bit weights:

```bash
pip install wisp

wisp run tiny-model \\
  --bits 4 \\
  --threads 2 \\
  --max-tokens 64
...
Throughput: 41.5 tok/s
Peak memory: 2.25 GB
```
"""


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    return _assistant(tmp_path_factory, "wisp-run.md", RUN_NOTES)


def test_a_commands_output_is_quoted_under_the_command(runner: Assistant) -> None:
    # the block's second piece (its last option and the output) is read under the command it
    # continues: found by the command's words, shown on the lines under it
    answer = runner.ask("What peak memory did the wisp run of tiny-model report?", use_llm=False)
    assert "wisp run tiny-model --bits 4 --threads 2\n--max-tokens 64" in answer.answer, (
        answer.answer
    )
    assert "Peak memory: 2.25 GB" in answer.answer
