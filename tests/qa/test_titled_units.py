"""A section that says one thing is found by its title's words: a troubleshooting page written
for this test, whose entries are titled by the symptom and answered in one sentence, ingested
for real. The question shares most of its words with another section, and only the symptom
with the entry."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import article_store

from qa.api import Assistant

PAGE = """# Running Wisp

## Serving

Wisp serves models over HTTP with the wisp serve command.

Wisp serves a model to many clients at once from one process.

The wisp serve command takes the model folder and a port.

## Troubleshooting

### Garbled output

Upgrade to version 0.4 or later.

### Out of memory

Lower the cache ratio.

Or serve fewer clients at once.
"""


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    store: Path = article_store(tmp_path_factory, {"wisp-running.md": PAGE})
    return Assistant.open(store, dense=False, llm="none")


def test_an_entry_is_found_by_the_symptom_its_title_names(assistant: Assistant) -> None:
    ranked = assistant.units.search("Wisp serves garbled output. What can I do?")
    texts = [r.unit.text for r in ranked[:2]]
    assert "Upgrade to version 0.4 or later." in texts, texts


def test_a_title_over_two_sentences_is_not_their_words(assistant: Assistant) -> None:
    # "memory" is in no sentence of its section: a title heading two of them stays out of both
    ranked = assistant.units.search("Wisp runs out of memory")
    found = {r.unit.text: r.lexical for r in ranked}
    assert found.get("Lower the cache ratio.", 0.0) == 0.0, found
