"""Example questions: drawn from the store (its entities and relations, in its documents'
languages, each one answered before it is offered), or given by the user.

`store_examples(assistant)` writes a question from each of the store's best-connected typed edges
("Which inference engine runs on Ascend NPU?" from a RUNS_ON edge, "Numbat 支持 Linux 吗？" from a
SUPPORTS edge whose evidence is Chinese), asks it with the graph answerer, and keeps it only when
the answer is not a decline and names the entity the edge is about. Relations take turns, so
that the examples show different kinds of question. `read_examples(path)` reads a user's file:
one question per line, or JSON Lines with a "question" field (the `kgqa eval` format).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from kg.errors import KGQAError
from kg.graph import KnowledgeGraph
from kg.schema import NodeType, Relation, RelationType
from qa.schema import Answer, FallbackKind
from ui.layout import display_width
from ui.overview import degrees, document_language

if TYPE_CHECKING:
    from qa.api import Assistant

__all__ = ["Example", "candidate_examples", "read_examples", "store_examples"]

Lang = Literal["zh", "en"]

#: what a thing of a type is called in a question
_KIND_WORDS: dict[NodeType, tuple[str, str]] = {
    NodeType.FRAMEWORK: ("框架", "framework"),
    NodeType.LIBRARY: ("库", "library"),
    NodeType.INFERENCE_ENGINE: ("推理引擎", "inference engine"),
    NodeType.TOOL: ("工具", "tool"),
    NodeType.MODEL: ("模型", "model"),
    NodeType.PARALLEL_STRATEGY: ("并行策略", "parallel strategy"),
    NodeType.TECHNIQUE: ("技术", "technique"),
    NodeType.FORMAT: ("格式", "format"),
}
#: relation -> (zh, en) question templates over {s} (source), {t} (target), {kind} (source kind)
_TEMPLATES: dict[RelationType, tuple[str, str]] = {
    RelationType.RECOMMENDED_FOR: ("{s}用哪个{kind}？", "Which {kind} should I use for {s}?"),
    RelationType.RUNS_ON: ("哪个{kind}能在 {t} 上运行？", "Which {kind} runs on {t}?"),
    RelationType.SUPPORTS: ("{s} 支持 {t} 吗？", "Does {s} support {t}?"),
    RelationType.NOT_SUPPORTED: ("{s} 支持 {t} 吗？", "Does {s} support {t}?"),
    RelationType.LICENSED_UNDER: ("{s} 用什么许可证？", "What license does {s} use?"),
    RelationType.REQUIRES: ("{s} 需要 {t} 吗？", "Does {s} require {t}?"),
    RelationType.EXPORTS_TO: ("{s} 能导出为 {t} 吗？", "Can {s} export to {t}?"),
    RelationType.ALTERNATIVE_TO: ("{s} 和 {t} 该选哪个？", "{s} or {t}: which should I choose?"),
    RelationType.RANKS_ABOVE: ("{s} 和 {t} 该选哪个？", "{s} or {t}: which should I choose?"),
}
#: where the question's subject is: the end of the edge the answer must name
_ABOUT_TARGET = frozenset({RelationType.RECOMMENDED_FOR})
_LIMIT_CELLS = 28


class Example(BaseModel):
    """A question written from one edge, and the entity its answer must name."""

    question: str
    language: Lang
    relation: str
    expects: list[str]


def read_examples(path: Path) -> list[str]:
    """A user's example questions: one per line (blank lines and `#` comments skipped), or
    JSON Lines with a "question" field. Raises `KGQAError` for a file it cannot read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise KGQAError(f"examples file {path} is unreadable: {err}; check the path") from err
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError as err:
                raise KGQAError(f"{path}:{number}: not a JSON object: {err}") from err
            question = record.get("question") if isinstance(record, dict) else None
            if not isinstance(question, str) or not question.strip():
                raise KGQAError(f'{path}:{number}: a JSON line needs a "question" string')
            line = question.strip()
        questions.append(line)
    if not questions:
        raise KGQAError(f"examples file {path} holds no question (one per line)")
    return questions


def _usable_name(name: str) -> bool:
    """Whether a name reads well inside a question.

    >>> _usable_name("vLLM"), _usable_name("研究/写论文/做研究"), _usable_name("x")
    (True, False, False)
    """
    return 2 <= display_width(name) <= _LIMIT_CELLS and not any(c in name for c in "/\n|[]")


def _language(relation: Relation) -> Lang:
    quotes = " ".join(ev.quote for ev in relation.evidence)
    return document_language(quotes)


def _example(graph: KnowledgeGraph, relation: Relation, lang: Lang) -> Example | None:
    template = _TEMPLATES.get(relation.relation)
    if template is None:
        return None
    source, target = graph.entity(relation.source), graph.entity(relation.target)
    if not (_usable_name(source.name) and _usable_name(target.name)):
        return None
    subject = target if relation.relation in _ABOUT_TARGET else source
    kind = _KIND_WORDS.get(subject.type)
    if "{kind}" in template[1] and kind is None:
        return None
    zh, en = template
    words = kind or ("", "")
    question = (zh if lang == "zh" else en).format(
        s=source.name, t=target.name, kind=words[0] if lang == "zh" else words[1]
    )
    return Example(
        question=question, language=lang, relation=relation.relation.value, expects=[subject.id]
    )


def candidate_examples(graph: KnowledgeGraph, languages: dict[str, int]) -> Iterator[Example]:
    """Questions from the graph's typed edges, best-connected first, relations taking turns,
    each in the language of its evidence (or the store's main language): first one per
    subject, then the others."""
    counts = degrees(graph)
    main: Lang = "zh" if languages.get("zh", 0) > languages.get("en", 0) else "en"
    queues: dict[str, list[Relation]] = {}
    for relation in graph.relations():
        if relation.relation in _TEMPLATES:
            queues.setdefault(relation.relation.value, []).append(relation)
    for queue in queues.values():
        queue.sort(key=lambda r: (-(counts[r.source] + counts[r.target]), r.source, r.target))
    order = sorted(queues, key=lambda name: (-len(queues[name]), name))
    seen: set[str] = set()
    asked: set[str] = set()
    later: list[Example] = []
    for round_ in range(max((len(q) for q in queues.values()), default=0)):
        for name in order:
            if round_ >= len(queues[name]):
                continue
            relation = queues[name][round_]
            lang = _language(relation) if relation.evidence else main
            example = _example(graph, relation, lang)
            if example is None or example.question in asked:
                continue
            asked.add(example.question)
            # first one question per subject and per thing asked about ("runs on NVIDIA GPU")
            about = {*example.expects, f"{relation.relation.value}:{relation.target}"}
            if about & seen:
                later.append(example)
                continue
            seen.update(about)
            yield example
    yield from later


def _answers(answer: Answer, example: Example) -> bool:
    """Whether an answer is a real one that names what the example's edge is about."""
    if answer.abstained or (
        answer.fallback is not None
        and answer.fallback.kind in (FallbackKind.REJECTED, FallbackKind.NOT_COVERED)
    ):
        return False
    named = {r.id for r in answer.recommendations} | {
        n for c in answer.citations for e in c.path for n in (e.source, e.target)
    }
    return any(e in named for e in example.expects)


def store_examples(assistant: Assistant, limit: int = 4, tries: int = 24) -> list[str]:
    """Up to `limit` questions the store answers, written from its edges (at most `tries`
    asked), in its languages: when both are there, the examples alternate between them."""
    languages = _languages_of(assistant)
    want_both = len([n for n in languages.values() if n]) > 1
    kept: list[Example] = []
    for asked, example in enumerate(candidate_examples(assistant.graph, languages)):
        if asked >= tries or len(kept) >= limit:
            break
        if (
            want_both
            and len(kept) >= limit // 2
            and all(k.language == example.language for k in kept)
        ):
            continue  # leave room for the other language
        if _answers(assistant.ask(example.question, use_llm=False), example):
            kept.append(example)
    return [k.question for k in kept]


def _languages_of(assistant: Assistant) -> dict[str, int]:
    """Documents per language."""
    counts: dict[str, int] = {}
    for text in assistant.documents.values():
        lang = document_language(text)
        counts[lang] = counts.get(lang, 0) + 1
    return counts
