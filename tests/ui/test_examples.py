"""Example questions drawn from a store (answered before they are offered) or given by the user;
what the first page says about a store; explorer search with suggestions."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.errors import KGQAError
from qa.api import Assistant
from ui.examples import candidate_examples, read_examples, store_examples
from ui.explorer import entity_names, explore, suggest
from ui.overview import overview_panel, store_overview


@pytest.fixture(scope="module")
def assistant(own_store: Path) -> Assistant:
    return Assistant.open(own_store, dense=False)


def test_examples_come_from_the_store_in_its_languages_and_are_answered(
    assistant: Assistant,
) -> None:
    examples = store_examples(assistant)
    assert len(examples) == 4 and len(set(examples)) == 4
    names = {e.name for e in assistant.graph.entities()}
    for question in examples:
        assert any(name in question for name in names), question
        answer = assistant.ask(question, use_llm=False)
        assert not answer.abstained and answer.citations, question
    chinese = [q for q in examples if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
    assert 0 < len(chinese) < len(examples)  # the store holds English and Chinese documents


def test_candidates_take_turns_between_relations(assistant: Assistant) -> None:
    candidates = list(candidate_examples(assistant.graph, {"en": 2, "zh": 2}))
    first = candidates[:3]
    assert len({c.relation for c in first}) == 3
    assert len({c.question for c in candidates}) == len(candidates)


def test_examples_given_by_the_user(tmp_path: Path) -> None:
    lines = tmp_path / "mine.txt"
    lines.write_text("# mine\nWhich engine runs on Ascend?\n\n昇腾上用什么？\n", encoding="utf-8")
    assert read_examples(lines) == ["Which engine runs on Ascend?", "昇腾上用什么？"]
    jsonl = tmp_path / "mine.jsonl"
    jsonl.write_text('{"id": "a", "question": "Does X run on Y?"}\n', encoding="utf-8")
    assert read_examples(jsonl) == ["Does X run on Y?"]
    jsonl.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(KGQAError, match="question"):
        read_examples(jsonl)
    with pytest.raises(KGQAError, match="unreadable"):
        read_examples(tmp_path / "absent.txt")


def test_overview_says_what_the_store_holds(assistant: Assistant) -> None:
    overview = store_overview(assistant)
    assert overview.documents == ["kangaroo.md", "numbat.md", "quokka-serve.md", "wombat-infer.md"]
    assert overview.languages == {"en": 2, "zh": 2}
    assert overview.top[0].degree >= overview.top[-1].degree
    assert {e.name for e in overview.top[:4]} >= {"Wombat Infer"}
    html = overview_panel(overview, ["Q1?"], "zh")
    assert "文档" in html and "kgqa-example" in html and "Wombat Infer" in html


def test_explorer_suggests_names_for_a_misspelling(assistant: Assistant) -> None:
    assert suggest(assistant, "Qokka Serv")[0] == "Quokka Serve"
    assert suggest(assistant, "Wombt")[0] == "Wombat Infer"
    missed = explore(assistant, "Qokka Serv")
    assert missed.node is None and missed.suggestions[0] == "Quokka Serve"
    assert "Did you mean:" in missed.panel and missed.picture == ""
    found = explore(assistant, "Quokka Serve")
    assert found.node == "inference-engine:quokka-serve" and "<svg" in found.picture
    assert found.panel.count("Neighbours and evidence") == 1
    names = entity_names(assistant)
    assert set(names) == {e.name for e in assistant.graph.entities()}
