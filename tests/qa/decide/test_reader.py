"""The reader: what it is shown (a reading of the bundled corpus's store), the draft a verdict
makes, and the real llama.cpp server (0.5B model) on 127.0.0.1 reading through the grammar,
started once per session by tests/qa/conftest.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from grounding import Edges, assert_grounded
from store_fixture import (  # fixtures
    article_store,
    assistant,  # noqa: F401
    corpus_edges,  # noqa: F401
    corpus_store,  # noqa: F401
    documents_on_disk,  # noqa: F401
)

from kg.documents import EvidenceUnit
from kg.errors import LLMError
from kg.schema import normalize_name
from qa.api import Assistant
from qa.config import LLMSettings
from qa.decide import Candidate, Reader, Reading, Verdict, draft_from_verdict
from qa.decide.candidates import names_unit
from qa.decide.prompts import LINE_CHOICES, NONE, reader_messages, reader_schema
from qa.llm.answerer import make_llm, stream_answer_field
from qa.llm.client import ChatModel
from qa.llm.serve import ServerHandle
from qa.render import render_draft
from qa.schema import Answer, AnswerDraft, DraftPoint

QUESTIONS = ["我是零基础，先学哪个框架？", "Which engine should I use for LLM serving?"]


@pytest.fixture
def grounded(
    corpus_edges: Edges,  # noqa: F811
    documents_on_disk: dict[str, str],  # noqa: F811
) -> Callable[[Answer], None]:
    """Cited edges are in the graph export, quotes verbatim in the documents on disk."""
    return lambda answer: assert_grounded(answer, corpus_edges, documents_on_disk)


def _reading(assistant: Assistant, question: str) -> Reading:  # noqa: F811
    parsed = assistant.understand(question)
    draft, specific, ranked = assistant._drafted(parsed)
    return assistant.reading(parsed, draft, specific, ranked)


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_reader_is_shown_numbered_evidence_and_the_names_it_gives(
    assistant: Assistant,  # noqa: F811
    question: str,
) -> None:
    reading = _reading(assistant, question)
    assert reading.choose and 1 <= len(reading.evidence) <= 8
    assert len({u.id for u in reading.evidence}) == len(reading.evidence)
    assert all(u.kind != "heading" for u in reading.evidence)
    user = reader_messages(reading, "pick")[-1]["content"]
    lines = user.splitlines()
    assert lines[-1].endswith(reading.question)  # the question comes last
    # the lines in rank order, each document's name once above its run of lines
    numbered = [line for line in lines[1:-1] if line.startswith("[")]
    assert [line[:4] for line in numbered] == [
        f"[{i}] " for i in range(1, len(reading.evidence) + 1)
    ]
    assert lines[1].startswith("# ")
    assert sum(line.startswith("# ") for line in lines) == 1 + sum(
        a.doc != b.doc for a, b in zip(reading.evidence, reading.evidence[1:], strict=False)
    )
    # every candidate is a name the evidence (or the graph's pick among it) gives, none is a
    # word of the question
    folded_question = normalize_name(question)
    texts = normalize_name(
        " ".join(
            assistant.documents[u.doc][u.start : u.end] + " " + " ".join(u.heading_path)
            for u in reading.evidence
        )
    )
    for candidate in reading.candidates:
        key = normalize_name(candidate.name)
        assert key not in folded_question
        entity = candidate.entity
        assert key in texts or (entity is not None and entity in assistant.graph), candidate
    assert reader_schema(reading, "pick") == {
        "type": "string",
        "enum": [*dict.fromkeys(c.name for c in reading.candidates), NONE],
    }


def test_a_verdict_makes_a_draft_of_the_evidence_that_names_the_pick(
    assistant: Assistant,  # noqa: F811
    grounded: Callable[[Answer], None],
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    parsed = assistant.understand(QUESTIONS[0])
    base = assistant.graph_draft(parsed)
    pick = next(c for c in reading.candidates if c.name == "PyTorch")
    verdict = Verdict(evidence=[2], pick=pick, sentence="", model="m")
    made = draft_from_verdict(reading, verdict, assistant.evidence.point, base)
    top = made.recommendations[0]
    assert top.id == pick.key and top.points
    assert all(
        pick.entity in {n for e in p.edges for n in (e.source, e.target)}
        or "pytorch" in normalize_name(p.quote + p.heading)
        for p in top.points
    )
    cited = reading.evidence[1]
    shown = [(p.doc, p.start) for p in made.points()]
    assert (cited.doc, cited.start) in shown  # the cited evidence is shown
    verified, _result = assistant.verifier.verify_draft(made)
    answer = render_draft(verified, assistant.graph)
    assert answer.recommendations[0].name == "PyTorch" and answer.backend == "llm:m"
    grounded(answer)


def test_a_thing_the_graph_knows_and_did_not_pick_gives_way_to_the_graphs_pick(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    base = assistant.graph_draft(assistant.understand(QUESTIONS[0]))
    graph_pick = base.recommendations[0]
    assert not graph_pick.id.startswith("value:")
    picked = {r.id for r in base.recommendations}
    other = next(c for c in reading.candidates if c.entity and c.entity not in picked)
    verdict = Verdict(evidence=other.evidence[:1], pick=other, model="m")
    made = draft_from_verdict(reading, verdict, assistant.evidence.point, base)
    assert made.recommendations[0] == graph_pick
    assert other.key not in {r.id for r in made.recommendations}
    assert any(other.name in note and graph_pick.name in note for note in made.notes)
    # a pick among the graph's own is the reader's to make: it stands, with no note
    own = next(c for c in reading.candidates if c.key == graph_pick.id)
    chosen = draft_from_verdict(
        reading, Verdict(evidence=[], pick=own, model="m"), assistant.evidence.point, base
    )
    assert chosen.recommendations[0].id == graph_pick.id and chosen.notes == base.notes


def test_a_pick_the_graph_knows_whose_evidence_cites_no_edge_of_it_stands_on_its_text(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    base = assistant.graph_draft(assistant.understand(QUESTIONS[0]))
    base = base.model_copy(update={"recommendations": []})  # the graph picked nothing

    def cites(c: Candidate) -> bool:  # a point of a line naming it cites an edge of it
        points = [assistant.evidence.point(reading.evidence[n - 1], c.entity) for n in c.evidence]
        return any(c.entity in (e.source, e.target) for p in points for e in p.edges)

    pick = next(c for c in reading.candidates if c.entity and cites(c))
    verdict = Verdict(evidence=pick.evidence[:1], pick=pick, model="m")

    def bare(unit: EvidenceUnit, prefer: str | None) -> DraftPoint:  # points citing no edge
        return assistant.evidence.point(unit, prefer).model_copy(update={"edges": []})

    made = draft_from_verdict(reading, verdict, bare, base)
    assert made.recommendations[0].id == f"value:{pick.name}"
    verified, _result = assistant.verifier.verify_draft(made)
    answer = render_draft(verified, assistant.graph)
    assert answer.recommendations and answer.recommendations[0].name == pick.name
    kept = verified.recommendations[0].points
    assert any(normalize_name(pick.name) in normalize_name(p.quote) for p in kept)  # verbatim
    # where a point cites an edge of it, the pick is the entity, verified on that path
    edged = draft_from_verdict(reading, verdict, assistant.evidence.point, base)
    assert edged.recommendations[0].id == pick.entity


def test_a_verdict_without_a_pick_shows_the_cited_evidence_first(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[1])
    base = assistant.graph_draft(assistant.understand(QUESTIONS[1]))
    last = len(reading.evidence)
    made = draft_from_verdict(
        reading, Verdict(evidence=[last], model="m"), assistant.evidence.point, base
    )
    assert not made.recommendations
    assert (made.facts[0].doc, made.facts[0].start) == (
        reading.evidence[-1].doc,
        reading.evidence[-1].start,
    )


def test_stream_answer_field_decodes_escapes_across_pieces() -> None:
    pieces = iter(['{"answer": "a\\\\', "nb \\u4e2", 'd", "abstain": false}'])
    items = list(stream_answer_field(pieces))
    assert "".join(i for i in items if isinstance(i, str)) == "a\\nb 中"
    assert items[-1] == {"answer": "a\\nb 中", "abstain": False}


def test_a_server_that_is_down_gives_no_reader() -> None:
    with pytest.raises(LLMError, match="kgqa llm serve"):
        make_llm("http://127.0.0.1:9/v1", LLMSettings())
    assert make_llm("auto", LLMSettings(base_url="http://127.0.0.1:9/v1")) is None


# -- against the real server: the grammar bounds the choice ------------------------------------
def _reader(server: ServerHandle, *, mode: str = "pick") -> Reader:
    # one request takes 5-60 s on 2 cores shared with other work
    settings = LLMSettings(base_url=server.base_url, model=server.model, timeout_s=300)
    return Reader(ChatModel(settings), mode=mode)


def test_a_reader_at_a_url_is_named_after_the_model_its_server_serves(
    llamacpp_server: ServerHandle,
) -> None:
    # configured for another model than the server was started with: the server's one model
    # names the reader (and its requests), not the configured name
    settings = LLMSettings(model="a-model-this-server-does-not-serve", timeout_s=300)
    reader = make_llm(llamacpp_server.base_url, settings)
    assert reader is not None and isinstance(reader.chat, ChatModel)
    assert reader.name == reader.chat.settings.model == llamacpp_server.model
    reply = reader.chat.chat([{"role": "user", "content": "Say yes."}], max_tokens=2)
    assert reply.model == llamacpp_server.model


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_real_reader_picks_a_candidate_it_was_shown(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    question: str,
) -> None:
    reading = _reading(assistant, question)
    verdict = _reader(llamacpp_server).read(reading)
    assert verdict.model == llamacpp_server.model
    assert verdict.pick is None or verdict.pick in reading.candidates


def test_the_full_reader_streams_its_sentence_and_the_answer_is_verified(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    grounded: Callable[[Answer], None],
) -> None:
    reading_assistant = assistant.with_llm(_reader(llamacpp_server, mode="full"))
    events = list(reading_assistant.ask_stream(QUESTIONS[0]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "graph" and kinds[-1] == "final"
    final = events[-1].answer
    assert final is not None
    if final.backend.startswith("llm:"):
        assert "delta" in kinds
        grounded(final)
    else:  # the graph answer stands, with the typed reason
        assert final.fallback is not None and final.fallback.kind.is_llm, final.notes


class _FirstNamed:
    """A chat model (the `StructuredChat` seam, no protocol) that always picks the candidate the
    prompt lists first: a reader whose pick moves with the order."""

    class settings:
        model = "first"

    def chat(self, messages, *, schema=None, schema_name="answer", max_tokens=None):  # type: ignore[no-untyped-def]
        from qa.llm.client import ChatResult

        line = messages[-1]["content"].splitlines()[-2]  # the candidates; the question last
        body = line.split("：", 1)[1] if "：" in line else line.split(": ", 1)[1]
        name = body.split("、")[0].split("; ")[0].split(" [")[0].rstrip("★")
        content = json.dumps(name, ensure_ascii=False)
        return ChatResult(content=content, model="first", prompt_tokens=100, completion_tokens=3)


def test_a_pick_that_moves_with_the_order_is_no_decision(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    assert len(reading.candidates) > 1 and reading.candidates[0].proposed
    verdict = Reader(_FirstNamed(), mode="pick", consistency=True).read(reading)  # type: ignore[arg-type]
    # asked in two orders it named the first each time: two names, so the graph's pick stands
    assert verdict.unsure and verdict.pick == next(c for c in reading.candidates if c.proposed)
    once = Reader(_FirstNamed(), mode="pick", consistency=False).read(reading)  # type: ignore[arg-type]
    assert not once.unsure and once.pick == reading.candidates[0]
    # a verdict asked twice costs both requests
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (200, 6)
    assert (once.prompt_tokens, once.completion_tokens) == (100, 3)


def test_a_pick_that_holds_in_both_orders_costs_both_requests(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    pick = reading.candidates[0]

    class _Same(_FirstNamed):
        def chat(self, messages, *, schema=None, schema_name="answer", max_tokens=None):  # type: ignore[no-untyped-def]
            from qa.llm.client import ChatResult

            content = json.dumps(pick.name, ensure_ascii=False)
            return ChatResult(content=content, model="same", prompt_tokens=100)

    verdict = Reader(_Same(), mode="pick", consistency=True).read(reading)  # type: ignore[arg-type]
    assert verdict.pick == pick and not verdict.unsure
    assert verdict.prompt_tokens == 200 and verdict.completion_tokens is None


def test_every_unit_the_reader_read_is_on_screen(
    assistant: Assistant,  # noqa: F811
) -> None:
    """What the reader decided from is shown: each unit it read is a point of the draft, in a
    recommendation or among the facts, however few the draft's own facts would be."""
    for question in QUESTIONS:
        reading = _reading(assistant, question)
        base = assistant.graph_draft(assistant.understand(question))
        pick = reading.candidates[0] if reading.candidates else None
        made = draft_from_verdict(
            reading, Verdict(evidence=[], pick=pick, model="m"), assistant.evidence.point, base
        )
        points = made.points()
        for unit in reading.evidence:
            assert any(
                p.doc == unit.doc and p.start <= unit.start and unit.end <= p.end for p in points
            ), unit.id


# -- the line reader: the line that answers, then the name it gives -----------------------------
class _Lines:
    """A chat model (the `StructuredChat` seam, no protocol) that answers the line reader: line
    `line` at the first turn, then the last name the second turn offers; it keeps every request
    it was sent."""

    class settings:
        model = "lines"

    def __init__(self, line: int) -> None:
        self.line = line
        self.sent: list[tuple[list[dict[str, str]], dict[str, object]]] = []

    def chat(self, messages, *, schema=None, schema_name="answer", max_tokens=None):  # type: ignore[no-untyped-def]
        from qa.llm.client import ChatResult

        self.sent.append((list(messages), schema))
        answer = self.line if schema["type"] == "integer" else schema["enum"][-1]
        content = json.dumps(answer, ensure_ascii=False)
        return ChatResult(content=content, model="lines", prompt_tokens=100, completion_tokens=2)


def _said(reading: Reading, line: int) -> list[Candidate]:
    """The candidates the text of evidence line `line` names (its title left out)."""
    unit = reading.evidence[line - 1]
    return [
        c
        for c in reading.candidates
        if line in c.evidence and names_unit(c, unit, "", titles=False)
    ]


def _line_naming(reading: Reading, count: Callable[[int], bool]) -> int | None:
    """The first evidence line whose text names a number of candidates `count` accepts."""
    return next(
        (n for n in range(1, len(reading.evidence) + 1) if count(len(_said(reading, n)))),
        None,
    )


def test_the_line_reader_names_what_the_line_it_read_gives(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _unproposed(_reading(assistant, QUESTIONS[0]))
    line = _line_naming(reading, lambda n: n > 1)
    assert line is not None
    chat = _Lines(line)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    (first, first_schema), (second, second_schema) = chat.sent
    # the first turn shows every line and no candidates, and asks for one of the lines
    # retrieval ranks first; the second extends it
    assert len(reading.evidence) > LINE_CHOICES
    assert first_schema == {"type": "integer", "enum": list(range(1, LINE_CHOICES + 1))}
    assert all(f"[{n}] " in first[-1]["content"] for n in range(1, len(reading.evidence) + 1))
    assert not any(c.name + " [" in first[-1]["content"] for c in reading.candidates)
    assert second[: len(first)] == first and second[len(first)]["content"] == str(line)
    named = [c.name for c in _said(reading, line)]
    assert second_schema["enum"] == named  # what the line's text names, not its title
    assert verdict.pick is not None and verdict.pick.name == named[-1]
    assert verdict.evidence == [line] and not verdict.unsure
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (200, 4)


def _unproposed(reading: Reading) -> Reading:
    """The reading as if the graph had picked nothing (no candidate ★)."""
    candidates = [c.model_copy(update={"proposed": False}) for c in reading.candidates]
    return reading.model_copy(update={"candidates": candidates})


def test_a_line_that_names_the_graphs_first_pick_among_others_gives_it_without_a_second_turn(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _unproposed(_reading(assistant, QUESTIONS[0]))
    line = _line_naming(reading, lambda n: n > 1)
    assert line is not None
    # the graph's pick is the line's last name (the second turn's stand-in answers the last)
    # and not its first: it stands because the graph picked it, not for where it is
    said = _said(reading, line)
    graphs = said[0]
    marked = [c.model_copy(update={"proposed": c == graphs}) for c in reading.candidates]
    chat = _Lines(line)
    verdict = Reader(chat, mode="line").read(  # type: ignore[arg-type]
        reading.model_copy(update={"candidates": marked})
    )
    assert len(chat.sent) == 1 and verdict.evidence == [line] and not verdict.unsure
    assert verdict.pick is not None and verdict.pick.name == graphs.name != said[-1].name
    # the graph's first pick on another line, its later one on this: the second turn is asked
    elsewhere = next(c for c in reading.candidates if line not in c.evidence)
    ordered = [elsewhere, *(c for c in reading.candidates if c != elsewhere)]
    marked = [c.model_copy(update={"proposed": c in (elsewhere, graphs)}) for c in ordered]
    chat = _Lines(line)
    verdict = Reader(chat, mode="line").read(  # type: ignore[arg-type]
        reading.model_copy(update={"candidates": marked})
    )
    assert len(chat.sent) == 2 and verdict.pick is not None
    assert verdict.pick.name == said[-1].name


def test_a_line_names_what_its_words_name_before_the_topic_of_its_page() -> None:
    # a page about Kestrel (every line's subject) whose line speaks of Sorrel
    said = _unit(1, "Precision", "When using Sorrel on few GPUs, expect upcasting overheads.")
    said = said.model_copy(update={"subject": "engine:kestrel", "mentions": ["engine:sorrel"]})
    other = _unit(2, "Precision", "Kestrel keeps the weights in bf16.")
    other = other.model_copy(update={"subject": "engine:kestrel"})
    kestrel = Candidate(name="Kestrel", entity="engine:kestrel", evidence=[1, 2], proposed=True)
    sorrel = Candidate(name="Sorrel", entity="engine:sorrel", evidence=[1])
    reading = _choosing(
        "Which of Kestrel and Sorrel has more overhead on few GPUs?",
        [said, other],
        [kestrel, sorrel],
    )
    chat = _Lines(1)
    Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    # the graph's pick is line 1's topic, not a word of it: it does not stand unasked, and
    # the second turn lists the name the line's words give first
    assert len(chat.sent) == 2
    assert chat.sent[1][1]["enum"] == ["Sorrel", "Kestrel"]
    # a line whose words name the graph's pick gives it without a second turn
    chat = _Lines(2)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert len(chat.sent) == 1 and verdict.pick == kestrel


def test_a_line_names_the_thing_it_describes_before_what_it_compares_it_with() -> None:
    # a catalogue's row and a nested item's description: each describes its own thing (the
    # row's first cell, the item it is under) and names others beside it
    row = _unit(1, "Operators", "Harbo | A cluster scheduler, leaner than Kestrel. |")
    row = row.model_copy(
        update={
            "kind": "row",
            "cells": ["Harbo", "A cluster scheduler, leaner than Kestrel."],
            "header": ["Project", "Details"],
            "subject": "tool:harbo",
            "mentions": ["engine:kestrel"],
        }
    )
    item = _unit(2, "Engines", "简介：一个服务框架，可在 CPU 上运行。")
    item = item.model_copy(
        update={
            "kind": "item",
            "lead": "简介",
            "context": "Marlin：",
            "subject": "tool:marlin",
            "mentions": ["hardware:cpu"],
        }
    )
    kestrel = Candidate(name="Kestrel", entity="engine:kestrel", evidence=[1], proposed=True)
    harbo = Candidate(name="Harbo", entity="tool:harbo", evidence=[1])
    marlin = Candidate(name="Marlin", entity="tool:marlin", evidence=[2])
    cpu = Candidate(name="CPU", entity="hardware:cpu", evidence=[2])
    reading = _choosing(
        "Which scheduler serves models on a cluster?", [row, item], [kestrel, cpu, harbo, marlin]
    )
    # the graph's pick, named in the row beside the row's own thing, does not stand unasked;
    # the second turn lists the row's thing first
    chat = _Lines(1)
    Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert len(chat.sent) == 2
    assert chat.sent[1][1]["enum"] == ["Harbo", "Kestrel"]
    chat = _Lines(2)
    Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert chat.sent[1][1]["enum"] == ["Marlin", "CPU"]


def test_a_line_names_the_name_it_opens_with_first() -> None:
    # a sentence that opens with a name says something of it; the names it gives after it
    # are what it says that of, whichever of them the graph picked
    line = _unit(1, "Sharding", "**Wisp Turbo** fuses Gorse and Kestrel into one plan.")
    line = line.model_copy(update={"mentions": ["engine:kestrel"]})
    kestrel = Candidate(name="Kestrel", entity="engine:kestrel", evidence=[1], proposed=True)
    reading = _choosing(
        "Which plan should a long-sequence run use?",
        [line],
        [
            kestrel,
            Candidate(name="Gorse", evidence=[1]),
            Candidate(name="Wisp", evidence=[1]),
            Candidate(name="Wisp Turbo", evidence=[1]),
        ],
    )
    chat = _Lines(1)
    Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    # the graph's pick, named later in the line, does not stand unasked; the second turn lists
    # the line's opening name (the longest one that opens it) first
    assert len(chat.sent) == 2
    assert chat.sent[1][1]["enum"] == ["Wisp Turbo", "Kestrel", "Gorse", "Wisp"]
    # a line that opens with the graph's pick gives it unasked
    line = line.model_copy(update={"text": "Kestrel fuses Gorse and Wisp Turbo into one plan."})
    chat = _Lines(1)
    verdict = Reader(chat, mode="line").read(  # type: ignore[arg-type]
        reading.model_copy(update={"evidence": [line]})
    )
    assert len(chat.sent) == 1 and verdict.pick == kestrel


def test_a_line_that_gives_one_name_needs_no_second_turn(
    assistant: Assistant,  # noqa: F811
) -> None:
    for question in QUESTIONS:
        reading = _reading(assistant, question)
        line = _line_naming(reading, lambda n: n == 1)
        if line is None:
            continue
        chat = _Lines(line)
        verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
        assert len(chat.sent) == 1
        assert verdict.pick == _said(reading, line)[0]
        return
    pytest.fail("no evidence line of the test questions names exactly one candidate")


def test_a_line_that_gives_no_name_leaves_the_pick_to_the_graph(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    reading = reading.model_copy(
        update={"candidates": [c for c in reading.candidates if 1 not in c.evidence]}
    )
    proposed = next(c for c in reading.candidates if c.proposed)
    verdict = Reader(_Lines(1), mode="line").read(reading)  # type: ignore[arg-type]
    assert verdict.unsure and verdict.pick == proposed and verdict.evidence == [1]


def _amount_reading() -> Reading:
    """A how-much question whose first line says how to turn a feature on and whose second
    says what it costs."""
    from qa.schema import Language

    lines = [
        _unit(1, "Checkpointing", "Turn on activation checkpointing with --checkpoint-layers."),
        _unit(2, "Checkpointing", "Checkpointing makes each Quill step about 30% slower."),
        _unit(3, "Checkpointing", "Quill then keeps only every fourth activation."),
    ]
    return Reading(
        question="How much slower is a Quill step with checkpointing?",
        language=Language.EN,
        choose=False,
        evidence=lines,
        figure=True,
    )


def test_a_question_a_figure_answers_is_read_from_a_line_that_states_one() -> None:
    reading = _amount_reading()
    chat = _Lines(2)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    ((_, schema),) = chat.sent
    assert schema == {"type": "integer", "enum": [2]} and verdict.evidence == [2]
    # where neither line it may give states a figure, both are its to give
    plain = [
        u.model_copy(update={"text": u.text.replace("about 30%", "much")}) for u in reading.evidence
    ]
    chat = _Lines(1)
    Reader(chat, mode="line").read(reading.model_copy(update={"evidence": plain}))  # type: ignore[arg-type]
    assert chat.sent[0][1] == {"type": "integer", "enum": [1, 2]}


def test_a_sentence_that_announces_what_follows_is_no_line_to_give() -> None:
    # "… as follows:" says nothing itself: the lines after it are the reader's to give
    evidence = [
        _unit(0, "Serving", "To serve a Gorse model across nodes, set the options as follows:"),
        _unit(1, "Serving", "Gorse shards the model's layers with Wisp when it spans nodes."),
        _unit(2, "Serving", "**Wisp** keeps each layer on one node."),
    ]
    names = [Candidate(name="Wisp", evidence=[2, 3])]
    chat = _Lines(2)
    reading = _choosing("How does Gorse serve across nodes?", evidence, names)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert chat.sent[0][1] == {"type": "integer", "enum": [2, 3]}
    assert verdict.evidence == [2] and verdict.pick == names[0]
    # a list item that ends with a colon heads the items under it: it is a line to give
    item = evidence[0].model_copy(update={"kind": "item", "text": "Across nodes:"})
    headed = reading.model_copy(update={"evidence": [item, *evidence[1:]]})
    chat = _Lines(1)
    Reader(chat, mode="line").read(headed)  # type: ignore[arg-type]
    assert chat.sent[0][1] == {"type": "integer", "enum": [1, 2]}


def test_the_real_line_reader_gives_a_line_that_states_the_figure(
    llamacpp_server: ServerHandle,
) -> None:
    # the grammar leaves the model one line to give, the one that states a figure; a server
    # that did not hold to the schema could give any of the three
    verdict = _reader(llamacpp_server, mode="line").read(_amount_reading())
    assert verdict.evidence == [2] and verdict.pick is None


def test_a_question_asking_how_many_in_chinese_is_read_for_a_figure(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, "混合精度训练时，每个参数的权重要占几个字节？")
    assert reading.figure and not reading.choose and not reading.candidates
    # "这几个" is "these few", not "how many": a pick is still asked for
    reading = _reading(assistant, "这几个框架里，零基础先学哪个？")
    assert not reading.figure and reading.choose


def test_a_reading_without_evidence_asks_the_line_reader_nothing(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0]).model_copy(update={"evidence": []})
    chat = _Lines(1)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert not chat.sent and verdict.unsure and verdict.evidence == []
    assert verdict.pick is not None and verdict.pick.proposed


def test_a_line_reader_given_no_line_is_a_bad_response(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    with pytest.raises(LLMError, match="no line of the evidence"):
        Reader(_Lines(len(reading.evidence) + 1), mode="line").read(reading)  # type: ignore[arg-type]


def test_the_real_line_reader_picks_a_name_its_line_gives(
    llamacpp_server: ServerHandle,
    assistant: Assistant,  # noqa: F811
    grounded: Callable[[Answer], None],
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    verdict = _reader(llamacpp_server, mode="line").read(reading)
    (line,) = verdict.evidence
    assert 1 <= line <= len(reading.evidence)
    assert verdict.pick is not None
    assert line in verdict.pick.evidence or (verdict.unsure and verdict.pick.proposed)
    # a name the line's text gives, where it gives one (never the title it is under then)
    assert not _said(reading, line) or verdict.pick in _said(reading, line)
    answer = assistant.with_llm(_reader(llamacpp_server, mode="line")).ask(QUESTIONS[0])
    assert answer.backend == f"llm:{llamacpp_server.model}", answer.notes
    grounded(answer)


def test_a_line_whose_text_names_nothing_leaves_the_pick_to_the_graph_not_its_title(
    assistant: Assistant,  # noqa: F811
) -> None:
    reading = _reading(assistant, QUESTIONS[0])
    line = next(
        n
        for n in range(1, len(reading.evidence) + 1)
        if not _said(reading, n) and any(n in c.evidence for c in reading.candidates)
    )
    verdict = Reader(_Lines(line), mode="line").read(reading)  # type: ignore[arg-type]
    proposed = next(c for c in reading.candidates if c.proposed)
    assert verdict.unsure and verdict.pick == proposed
    # with no pick of the graph's, the titles the line is under are what it gives
    alone = reading.model_copy(
        update={
            "candidates": [c.model_copy(update={"proposed": False}) for c in reading.candidates]
        }
    )
    chat = _Lines(line)
    verdict = Reader(chat, mode="line").read(alone)  # type: ignore[arg-type]
    assert verdict.pick is not None and line in verdict.pick.evidence and not verdict.unsure


def test_a_line_that_names_nothing_gives_the_alternative_its_section_is_titled() -> None:
    """ "Foo or Bar?" read from a line under the title "Foo" that names neither: Foo, whatever
    the graph proposed, without a second turn; with no alternatives asked, the graph's pick."""
    units = [
        _unit(1, "Foo", "Best for one request at a time, when a user waits on each result."),
        _unit(2, "Bar", "Best when many requests are in flight and only the total rate counts."),
    ]
    names = [
        Candidate(name="Foo", evidence=[1]),
        Candidate(name="Bar", evidence=[2], proposed=True),
        Candidate(name="Guide", evidence=[1, 2]),
    ]
    reading = _choosing(
        "A user waits on each result: Foo or Bar?", units, names, options=["foo", "bar"]
    )
    chat = _Lines(1)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert verdict.pick is not None and verdict.pick.name == "Foo" and not verdict.unsure
    assert len(chat.sent) == 1
    verdict = Reader(_Lines(1), mode="line").read(reading.model_copy(update={"options": []}))  # type: ignore[arg-type]
    assert verdict.pick is not None and verdict.pick.name == "Bar" and verdict.unsure


def _choosing(
    question: str, evidence: list[EvidenceUnit], candidates: list[Candidate], **more: object
) -> Reading:
    """An English question asking to choose among `candidates`, over `evidence`."""
    from qa.schema import Language

    return Reading.model_validate(
        {
            "question": question,
            "language": Language.EN,
            "choose": True,
            "evidence": evidence,
            "candidates": candidates,
            **more,
        }
    )


def _unit(i: int, title: str, text: str) -> EvidenceUnit:
    """Unit `i` of one guide, in the section `title`, 100 characters apart."""
    return EvidenceUnit(
        id=f"d#{i}",
        doc="d",
        start=i * 100,
        end=i * 100 + len(text),
        kind="sentence",
        text=text,
        heading_path=("Guide", title),
    )


def _point(u: EvidenceUnit, _prefer: str | None) -> DraftPoint:
    """A unit as an answer point (a `PointMaker`)."""
    return DraftPoint(
        doc=u.doc, start=u.start, end=u.end, quote=u.text, text=u.text, heading=u.heading_path[-1]
    )


def test_the_picks_own_section_goes_on_beyond_what_the_reader_read() -> None:
    # units retrieval ranked below the eight read that lie in the pick's section and speak of
    # it follow the pick's reasons (two at most); a unit of another section does not
    read = _unit(0, "Kestrel", "Kestrel packs weights in 2 bits.")
    further = [
        _unit(1, "Wren", "Kestrel is slower than Wren."),
        _unit(2, "Kestrel", "Use a checkpoint someone packed already."),
        _unit(3, "Kestrel", "Packing takes a day on one card."),
        _unit(4, "Kestrel", "Adapters are saved apart."),
    ]
    reading = Reading(
        question="Which packer?",
        language="en",
        choose=True,
        evidence=[read],
        candidates=[Candidate(name="Kestrel", evidence=[1])],
        further=further,
    )
    verdict = Verdict(evidence=[1], pick=Candidate(name="Kestrel", evidence=[1]), model="m")
    base = AnswerDraft(question="Which packer?", language="en")
    made = draft_from_verdict(reading, verdict, _point, base)
    assert [p.start for p in made.recommendations[0].points] == [0, 200, 300]
    # no pick: the cited line's section goes on among the facts, whatever it names
    plain = draft_from_verdict(reading, Verdict(evidence=[1], model="m"), _point, base, max_next=0)
    assert [p.start for p in plain.facts] == [0, 200, 300]


def test_the_sources_go_on_with_the_units_ranked_next_after_those_read() -> None:
    # after what the reader read (and its section's further lines), the units retrieval ranked
    # next, `max_next` of them, each span once, whatever section they are in
    read = [_unit(0, "Kestrel", "Kestrel packs weights in 2 bits."), _unit(9, "Wren", "Wren.")]
    further = [
        _unit(1, "Wren", "Kestrel is slower than Wren."),
        _unit(2, "Kestrel", "Use a checkpoint someone packed already."),
        _unit(5, "Tern", "Tern needs a calibration set."),
        _unit(6, "Tern", "Tern runs on CPUs."),
        _unit(7, "Tern", "Tern is new."),
    ]
    reading = Reading(
        question="Which packer?", language="en", choose=True, evidence=read, further=further
    )
    base = AnswerDraft(question="Which packer?", language="en")
    made = draft_from_verdict(reading, Verdict(evidence=[1], model="m"), _point, base)
    # read: 0 (cited), its section's further line 200, 900; then ranked next: 100, 500, 600
    # (200 is on screen already, and the fourth ranked next is the last one taken)
    assert [p.start for p in made.facts] == [0, 200, 900, 100, 500, 600]
    fewer = draft_from_verdict(reading, Verdict(evidence=[1], model="m"), _point, base, max_next=1)
    assert [p.start for p in fewer.facts] == [0, 200, 900, 100]


def test_the_cited_lines_neighbours_in_its_section_follow_it() -> None:
    # the units next to a line the reader cited, in its section (`Reading.around`), follow
    # what retrieval ranked next in that section, two at most; a neighbour in another section
    # does not
    read = _unit(2, "Kestrel", "Kestrel packs weights in 2 bits.")
    reading = Reading(
        question="How does Kestrel pack?",
        language="en",
        choose=False,
        evidence=[read],
        further=[_unit(6, "Kestrel", "Packing takes a day on one card.")],
        around=[
            _unit(3, "Kestrel", "It keeps the scales in 16 bits."),
            _unit(1, "Wren", "Wren reads them."),
            _unit(4, "Kestrel", "Adapters are saved apart."),
            _unit(5, "Kestrel", "Checkpoints load lazily."),
        ],
    )
    base = AnswerDraft(question=reading.question, language="en")
    made = draft_from_verdict(reading, Verdict(evidence=[1], model="m"), _point, base)
    assert [p.start for p in made.facts] == [200, 600, 300, 400]


def test_a_units_window_is_its_section_nearest_first(assistant: Assistant) -> None:  # noqa: F811
    # every unit's window lies in its own section and document, within the width, nearest
    # first, the next before the previous; no heading, never the unit itself (after the
    # section's note, where a quote block opens the section)
    units = assistant.units.units
    position = {u.id: i for i, u in enumerate(units)}
    checked = 0
    for unit in units:
        window = assistant.evidence.section_window(unit, 2)
        section = [
            u
            for u in units[: position[unit.id] + 1]
            if u.doc == unit.doc and u.heading_path == unit.heading_path and u.kind != "heading"
        ]
        text = assistant.documents[unit.doc]
        if window and section and window[0] is section[0]:
            # the section's note, first wherever it lies: its first unit, in a quote block
            opening = text[text.rfind("\n", 0, section[0].start) + 1 : section[0].start]
            if opening.lstrip().startswith(">"):
                window = window[1:]
        steps = [position[w.id] - position[unit.id] for w in window]
        assert all(w.doc == unit.doc and w.heading_path == unit.heading_path for w in window)
        assert all(w.kind != "heading" and w.id != unit.id for w in window)
        assert all(0 < abs(s) <= 2 for s in steps)
        assert steps == sorted(steps, key=lambda s: (abs(s), s < 0))
        checked += len(window)
    assert checked > len(units)


NOTED_PAGE = """# Packing with Tern

## Tern

> Tern is retired: pack new models with Wren.

Tern packs the weights of a model in 2 bits. Tern reads a few hundred samples first. Tern
writes the scales beside the weights. Tern checks every layer once. Tern saves the result in
one file.

## Wren

Wren packs the weights of a model in 4 bits.
"""


def test_a_note_that_opens_a_section_is_around_every_unit_of_it_first(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    store = article_store(tmp_path_factory, {"tern-packing.md": NOTED_PAGE})
    noted = Assistant.open(store, dense=False, llm="none")
    units = [u for u in noted.units.units if u.kind != "heading"]
    last = next(u for u in units if u.text.startswith("Tern saves"))
    window = noted.evidence.section_window(last, 2)
    assert window[0].text.startswith("Tern is retired"), [w.text for w in window]
    assert [w.text[:10] for w in window[1:]] == ["Tern check", "Tern write"]
    # a section that no quote block opens has no note; the note has none of its own
    wren = next(u for u in units if u.text.startswith("Wren packs"))
    assert noted.evidence.section_window(wren, 2) == []
    note = window[0]
    assert all(w.id != note.id for w in noted.evidence.section_window(note, 2))


# -- a question that asks which setting -----------------------------------------------------------
DEVICES_PAGE = """# Running Quokka on a shared box

## Picking the cards

Quokka uses every GPU it finds when its server starts, and Quokka runs fastest on an RTX card.
To keep Quokka on two of four cards under Docker, start it with `QUOKKA_DEVICES="0,1"` set.

## Logs

Quokka writes its logs to the directory its server was started in.
"""


class _FirstChoice(_Lines):
    """The line reader's chat model that gives the first line the grammar allows, then the
    first name the second turn offers."""

    def chat(self, messages, *, schema=None, schema_name="answer", max_tokens=None):  # type: ignore[no-untyped-def]
        from qa.llm.client import ChatResult

        self.sent.append((list(messages), schema))
        answer = schema["enum"][0]
        content = json.dumps(answer, ensure_ascii=False)
        return ChatResult(content=content, model="lines", prompt_tokens=100, completion_tokens=2)


def test_a_question_that_asks_which_setting_is_answered_by_a_setting_a_line_writes_down(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    store = article_store(tmp_path_factory, {"quokka-shared-box.md": DEVICES_PAGE})
    shared_box = Assistant.open(store, dense=False, llm="none")
    question = "I want Quokka on only two of my four GPUs: which variable do I set?"
    reading = _reading(shared_box, question)
    assert reading.setting and reading.choose
    # the setting a quoted assignment sets is a candidate, by its name
    assert "QUOKKA_DEVICES" in [c.name for c in reading.candidates], reading.candidates
    lines = [u.text for u in reading.evidence]
    at = next(n for n, text in enumerate(lines, 1) if "QUOKKA_DEVICES" in text)
    assert at <= LINE_CHOICES, lines  # the page is short: retrieval ranks it among the first
    # only the lines that write a setting down may be given, and of its names the setting
    chat = _FirstChoice(line=0)
    verdict = Reader(chat, mode="line").read(reading)  # type: ignore[arg-type]
    assert chat.sent[0][1]["enum"] == [at], chat.sent[0][1]
    assert verdict.pick is not None and verdict.pick.name == "QUOKKA_DEVICES", verdict


BENCHMARK_POST = """# Serving a 400B model on eight Zephyr-9 cards

We rented a bare-metal box with eight Zephyr-9 cards for this benchmark of a 400B model and ran
every test inside Docker.

KestrelServe is an engine that hosts chat models. SorrelLM is an engine that hosts chat models
too.

## Results

At large batch sizes and long prompts, KestrelServe answers sooner than SorrelLM.

SorrelLM starts faster, but it falls behind once many long requests are in flight.

## Recommendation

For long prompts and large batches, use KestrelServe.
"""


def test_a_question_that_offers_alternatives_is_answered_with_one_of_them(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """ "A or B?": a pick that is neither (a name only the text gives, a section title) gives
    way to the graph's pick where that is one of them; a pick that is one of them stands
    against a graph pick that is neither. A question that names them as examples ("such as A
    or B") offers no alternatives."""
    store = article_store(tmp_path_factory, {"serving-bench.md": BENCHMARK_POST})
    page = Assistant.open(store, dense=False, llm="none")
    setup = "We have a bare-metal box with eight Zephyr-9 cards for a 400B model and use Docker."
    question = setup + " Should we serve it with KestrelServe or SorrelLM?"
    reading = _reading(page, question)
    assert reading.alternatives
    offered = [c for c in reading.candidates if c.offered]
    assert {c.name for c in offered} == {"KestrelServe", "SorrelLM"}
    base, _specific, _ranked = page._drafted(page.understand(question))
    graph_pick = base.recommendations[0]
    assert graph_pick.name in {c.name for c in offered}
    neither = next(c for c in reading.candidates if not c.offered)
    verdict = Verdict(evidence=neither.evidence[:1], pick=neither, model="m")
    made = draft_from_verdict(reading, verdict, page.evidence.point, base)
    assert made.recommendations[0] == graph_pick
    assert any("alternatives" in note and graph_pick.name in note for note in made.notes)
    # the same pick where the question offers no alternatives: the reader's stands
    plain = reading.model_copy(
        update={
            "alternatives": False,
            "candidates": [c.model_copy(update={"offered": False}) for c in reading.candidates],
        }
    )
    made = draft_from_verdict(plain, verdict, page.evidence.point, base)
    assert made.recommendations[0].name == neither.name
    # one of them, a thing the graph knows and did not pick, against a graph whose first pick
    # is a third thing: the pick stands (where no alternatives are asked, it gives way)
    known = next(c for c in offered if c.name != graph_pick.name)
    other = known.model_copy(update={"entity": "inference-engine:" + known.name.lower()})
    reading = reading.model_copy(
        update={"candidates": [other if c == known else c for c in reading.candidates]}
    )
    third = base.model_copy(
        update={
            "recommendations": [
                graph_pick.model_copy(update={"id": "tool:docker", "name": "Docker"}),
                graph_pick,
            ]
        }
    )
    verdict = Verdict(evidence=other.evidence[:1], pick=other, model="m")
    made = draft_from_verdict(reading, verdict, page.evidence.point, third)
    assert made.recommendations[0].name == other.name
    made = draft_from_verdict(plain, verdict, page.evidence.point, third)
    assert made.recommendations[0].name == "Docker"
    examples = _reading(page, setup + " Which server fits engines such as KestrelServe?")
    assert not examples.alternatives
    examples = _reading(
        page, setup + " Which server fits, for engines such as KestrelServe or SorrelLM?"
    )
    assert not examples.alternatives and not any(c.offered for c in examples.candidates)
