"""The shape of what a question asks: its parts, the relation and the kind of value it asks
about, whether it asks two things in a row (which thing, then something of it), whether it asks if
the sources agree, and how much a text says."""

from __future__ import annotations

import re

from kg import cues
from kg.schema import Entity, RelationType
from qa.read.frame import asks_setting, asks_yes_no

__all__ = [
    "DISAGREE",
    "SECTION_NUMBER",
    "answer_hints",
    "asked_relations",
    "names_setting",
    "question_parts",
    "second_part",
    "text_width",
    "two_part",
    "version_after",
]

_ASKS_WHICH = cues.pattern("question.asks_which")


_REFERS_BACK = cues.pattern("question.refers_back")


_SECOND_PART = re.compile(
    rf",?\s+{cues.alternatives('question.option.and')}\s+"
    rf"(?={cues.alternatives('question.part.second_asks')}\b)|[?？]\s*(?=\S)"
)


def second_part(question: str) -> str:
    """The last part of a two-part question (what to ask of the entity the first part finds).

    >>> second_part("Which engine does Foo embed, and does Bar ship it too?")
    'does Bar ship it too?'
    """
    parts = _SECOND_PART.split(question)
    return parts[-1].strip() if len(parts) > 1 else question


_PART_SPLIT = re.compile(
    rf"[,，;；]?\s*\b{cues.alternatives('question.part.join')}\s+"
    rf"(?={cues.alternatives('question.part.asks')}\b)|(?<=[?？])\s*|"
    rf"[，,]\s*(?={cues.alternatives('question.part.next')})",
    re.I,
)


def question_parts(question: str) -> list[str]:
    """The sub-questions of a question that asks several things (one part: no split).

    >>> question_parts("Does Foo phone home, and how do I turn that off?")
    ['Does Foo phone home', 'how do I turn that off?']
    >>> question_parts("Which card is quieter?")
    []
    """
    parts = [p.strip(" ,，") for p in _PART_SPLIT.split(question) if p and p.strip(" ,，")]
    return parts if len(parts) > 1 else []


def version_after(question: str, entity: Entity) -> str | None:
    """The version a question gives right after an entity's name ("Foo 2.1" -> "2.1")."""
    for name in [entity.name, *entity.aliases]:
        m = re.search(re.escape(name) + r"\s*[vV]?(\d+(?:\.\d+)+)", question, re.I)
        if m:
            return m.group(1)
    return None


def two_part(question: str) -> bool:
    """Whether a question asks two things in a row, the second about what the first finds: it
    asks which thing, then refers back to it.

    >>> two_part("Which library does Foo load, and is it also in Bar?")
    True
    >>> two_part("Are there Foo builds for ARM, and which compiler release do they need?")
    False
    """
    first = _ASKS_WHICH.search(question)
    return first is not None and _REFERS_BACK.search(question, first.end()) is not None


_RELATION_WORDS: list[tuple[re.Pattern[str], frozenset[RelationType]]] = [
    (cues.pattern("question.relation.licence"), frozenset({RelationType.LICENSED_UNDER})),
    (cues.pattern("question.relation.requires"), frozenset({RelationType.REQUIRES})),
    (
        cues.pattern("question.relation.runs_on"),
        frozenset({RelationType.RUNS_ON, RelationType.SUPPORTS, RelationType.NOT_SUPPORTED}),
    ),
    (cues.pattern("question.relation.alternative"), frozenset({RelationType.ALTERNATIVE_TO})),
    (
        cues.pattern("question.relation.integrates"),
        frozenset({RelationType.USED_WITH, RelationType.SUPPORTS}),
    ),
    (cues.pattern("question.relation.exports"), frozenset({RelationType.EXPORTS_TO})),
]


def asked_relations(question: str) -> frozenset[RelationType]:
    """The graph relations a question asks about, from its predicate words.

    >>> sorted(asked_relations("Foo ships under which licence?"))
    [<RelationType.LICENSED_UNDER: 'LICENSED_UNDER'>]
    """
    found: set[RelationType] = set()
    for pattern, relations in _RELATION_WORDS:
        if pattern.search(question):
            found |= relations
    return frozenset(found)


DISAGREE = cues.pattern("question.disagree")


_VERSION_HINT = re.compile(r"\d+\.\d+|\bv\d")
_NUMBER_HINT = re.compile(r"\d")
_NUM = r"\d+(?:\.\d+)?\s*"


_MODEL_SIZE = re.compile(rf"{_NUM}{cues.alternatives('value.model_size_unit')}|\d+[BT]\b", re.I)
_DIMENSIONS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (
        cues.pattern("question.dimension.speed"),
        re.compile(
            rf"{_NUM}(?:×|{cues.alternatives('value.times')})|{_NUM}%|"
            rf"{cues.alternatives('value.speedup_word')}",
            re.I,
        ),
    ),
    (
        cues.pattern("question.dimension.memory"),
        re.compile(
            rf"{_NUM}(?:[GMT]i?B)\b|{_NUM}%\s*{cues.alternatives('value.less')}|"
            rf"{cues.alternatives('value.less_memory')}",
            re.I,
        ),
    ),
    (
        cues.pattern("question.dimension.time"),
        re.compile(rf"{_NUM}{cues.alternatives('value.time_unit')}|\(\d+h\)", re.I),
    ),
    (cues.pattern("question.dimension.size"), _MODEL_SIZE),
    (cues.pattern("question.dimension.version"), _VERSION_HINT),
]


#: what a parameter, flag or option looks like written down: `--flag`, `use_x: true`, `key=1`
_SETTING = re.compile(
    r"(?<![\w-])--?[a-z][\w-]+|\b[a-z]+(?:_[a-z0-9]+)+\b|\b\w+\s*[:=]\s*(?:true|false|\d+)\b",
    re.I,
)


def names_setting(text: str) -> bool:
    """Whether a text writes a setting down (`_SETTING`): a flag, a `snake_case` or
    `UPPER_CASE` name, a `key=value`.

    >>> names_setting("set TARN_HOST to 0.0.0.0"), names_setting("-f/--fast")
    (True, True)
    >>> names_setting("Modelfile"), names_setting("a 4-bit model")
    (False, False)
    """
    return _SETTING.search(text) is not None


_ON_PLATFORM = cues.pattern("question.on_platform")
_RESTRICTION = cues.pattern("value.restriction")
_ASKS_VALUE = cues.pattern("question.asks_value")


def answer_hints(question: str) -> list[re.Pattern[str]]:
    """The shapes of every value a question asks for, when it says: a setting (`--flag`), a
    speed-up, an amount of memory, a duration, a model size, a version, else any number
    ("快多少、省多少内存": a speed-up and an amount of memory); [] when it asks for none.

    >>> len(answer_hints("Foo 的新内核快多少、省多少内存？")), answer_hints("Is it fast?")
    (2, [])
    >>> bool(answer_hints("换了新版本能提速多少？")[0].search("训练速度提高了 45%"))
    True

    Whether a thing works on a platform is answered by what it is limited to or does not do:
    >>> hint = answer_hints("Can I install it on Linux?")[0]
    >>> bool(hint.search("Only macOS is supported for now."))
    True
    """
    if asks_yes_no(question) and _ON_PLATFORM.search(question):
        return [_RESTRICTION]
    hints = [_SETTING] if asks_setting(question) else []
    if not _ASKS_VALUE.search(question):
        return hints
    shapes = [
        shape
        for asked, shape in _DIMENSIONS
        # "传哪个参数" asks for a setting, not for a model's parameter count
        if asked.search(question) and not (hints and shape is _MODEL_SIZE)
    ]
    return hints + (shapes or [_NUMBER_HINT])


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


def text_width(text: str) -> int:
    """How much a text says, in Latin characters: a Chinese character says about two.

    >>> text_width("Runs on GPUs."), text_width("支持 Linux 和 macOS。")
    (13, 20)
    """
    if text.isascii():  # no Chinese character to count (most units of a large corpus)
        return len(text)
    return len(text) + len(_CJK_CHAR.findall(text))


#: "二、", "3.", "1.2 ", "(4)": a section's numbering, not part of its title. A number is
#: numbering where a mark or a space ends it: "8-bit", "3D" and "1.5B" begin a title's words.
SECTION_NUMBER = re.compile(
    r"^\s*(?:[一二三四五六七八九十]+[、.．]|\d+(?:\.\d+)*(?:[、．:)）]|\.(?!\d)|(?=\s))"
    r"|[（(]\d+[)）])\s*"
)
