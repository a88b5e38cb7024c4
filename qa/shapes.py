"""The shape of what a question asks: its parts, the relation and the kind of value it asks
about, whether it asks two things in a row (which thing, then something of it), whether it asks if
the sources agree, and how much a text says."""

from __future__ import annotations

import re

from kg.schema import Entity, RelationType
from qa.frame import asks_setting, asks_yes_no

__all__ = [
    "DISAGREE",
    "SECTION_NUMBER",
    "answer_hints",
    "asked_relations",
    "question_parts",
    "second_part",
    "text_width",
    "two_part",
    "version_after",
]

_ASKS_WHICH = re.compile(
    r"\bwhich (?:\w+ ){0,2}(?:library|tool|framework|engine|integration|project|backend|one)\b|"
    r"what is it called|哪个库|哪个框架|哪个工具|哪个项目|是哪个|叫什么",
    re.I,
)


_REFERS_BACK = re.compile(
    r"\b(?:it|its|that|this|the same)\b|该库|这个库|这个工具|这个框架|它|其|自己的|本身|同一",
    re.I,
)


def second_part(question: str) -> str:
    """The last part of a two-part question (what to ask of the entity the first part finds).

    >>> second_part("Which library is it, and does llamafile build on the same one?")
    'does llamafile build on the same one?'
    """
    parts = re.split(
        r",?\s+and\s+(?=(?:which|what|how|does|do|is|are|can)\b)|[?？]\s*(?=\S)", question
    )
    return parts[-1].strip() if len(parts) > 1 else question


_PART_SPLIT = re.compile(
    r"[,，;；]?\s*\b(?:and|but|also)\s+(?=(?:which|what|how|does|do|did|is|are|can|could|should|"
    r"why|where|when|who)\b)|(?<=[?？])\s*|[，,]\s*(?=(?:还是|那|又|并且|而且|以及))",
    re.I,
)


def question_parts(question: str) -> list[str]:
    """The sub-questions of a question that asks several things (one part: no split).

    >>> question_parts("Does OpenVINO collect telemetry, and how do I opt out?")
    ['Does OpenVINO collect telemetry', 'how do I opt out?']
    >>> question_parts("Which GPU is faster?")
    []
    """
    parts = [p.strip(" ,，") for p in _PART_SPLIT.split(question) if p and p.strip(" ,，")]
    return parts if len(parts) > 1 else []


def version_after(question: str, entity: Entity) -> str | None:
    """The version a question gives right after an entity's name ("PaddlePaddle 3.0" -> "3.0")."""
    for name in [entity.name, *entity.aliases]:
        m = re.search(re.escape(name) + r"\s*[vV]?(\d+(?:\.\d+)+)", question, re.I)
        if m:
            return m.group(1)
    return None


def two_part(question: str) -> bool:
    """Whether a question asks two things in a row, the second about what the first finds: it
    asks which thing, then refers back to it.

    >>> two_part("Which library is it, and does llamafile build on the same one?")
    True
    >>> two_part("Are there PyTorch wheels for Jetson, and which JetPack version do they need?")
    False
    """
    first = _ASKS_WHICH.search(question)
    return first is not None and _REFERS_BACK.search(question, first.end()) is not None


_RELATION_WORDS: list[tuple[re.Pattern[str], frozenset[RelationType]]] = [
    (re.compile(r"licen[cs]|许可|开源协议", re.I), frozenset({RelationType.LICENSED_UNDER})),
    (
        re.compile(r"requir|\bneed|depend|prerequisite|minimum|要求|需要|依赖|环境", re.I),
        frozenset({RelationType.REQUIRES}),
    ),
    (
        re.compile(
            r"\bsupport|run(?:s)? on|devices?|hardware|platforms?|\btarget|\bgpus?\b|\bnpus?\b|"
            r"支持|运行|硬件|平台|设备|显卡",
            re.I,
        ),
        frozenset({RelationType.RUNS_ON, RelationType.SUPPORTS, RelationType.NOT_SUPPORTED}),
    ),
    (re.compile(r"alternative|instead|替代", re.I), frozenset({RelationType.ALTERNATIVE_TO})),
    (
        re.compile(r"integrat|backend|works? with|集成|后端|搭配", re.I),
        frozenset({RelationType.USED_WITH, RelationType.SUPPORTS}),
    ),
    (re.compile(r"export|convert|导出|转换", re.I), frozenset({RelationType.EXPORTS_TO})),
]


def asked_relations(question: str) -> frozenset[RelationType]:
    """The graph relations a question asks about, from its predicate words.

    >>> sorted(asked_relations("what licences do PyTorch and TensorFlow use?"))
    [<RelationType.LICENSED_UNDER: 'LICENSED_UNDER'>]
    """
    found: set[RelationType] = set()
    for pattern, relations in _RELATION_WORDS:
        if pattern.search(question):
            found |= relations
    return frozenset(found)


DISAGREE = re.compile(
    r"\bdisagree|\bagree\b|consistent|contradict|conflict|一致|矛盾|分歧|说法不同|说法一样", re.I
)


_VERSION_HINT = re.compile(r"\d+\.\d+|\bv\d")
_NUMBER_HINT = re.compile(r"\d")
_NUM = r"\d+(?:\.\d+)?\s*"


_MODEL_SIZE = re.compile(rf"{_NUM}(?:[BTM]\b|万亿|千亿|亿|billion|trillion)|\d+[BT]\b", re.I)
_DIMENSIONS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (
        re.compile(r"faster|speed|fast|提速|加速|快多少|速度", re.I),
        re.compile(rf"{_NUM}(?:×|x\b|倍)|{_NUM}%|(?:faster|speedup|提速|加速)", re.I),
    ),
    (
        re.compile(r"memory|vram|显存|内存", re.I),
        re.compile(
            rf"{_NUM}(?:[GMT]i?B)\b|{_NUM}%\s*(?:less|lower|fewer)|less (?:memory|vram)", re.I
        ),
    ),
    (
        re.compile(r"how long|time|多久|时间", re.I),
        re.compile(rf"{_NUM}(?:h\b|hours?|min(?:utes)?\b|seconds?|小时|分钟|天)|\(\d+h\)", re.I),
    ),
    (re.compile(r"parameters?|参数|规模|多大", re.I), _MODEL_SIZE),
    (re.compile(r"\bversions?\b|版本", re.I), _VERSION_HINT),
]


#: what a parameter, flag or option looks like written down: `--flag`, `use_x: true`, `key=1`
_SETTING = re.compile(
    r"(?<![\w-])--?[a-z][\w-]+|\b[a-z]+(?:_[a-z0-9]+)+\b|\b\w+\s*[:=]\s*(?:true|false|\d+)\b",
    re.I,
)
_ON_PLATFORM = re.compile(r"windows|linux|mac\s?os|\bmac\b|\bwsl|android|\bios\b|苹果", re.I)
_RESTRICTION = re.compile(
    r"\bonly\b|\bexclusively\b|仅|只支持|只能|不支持|暂不支持|not (?:yet )?supported|unsupported",
    re.I,
)


def answer_hints(question: str) -> list[re.Pattern[str]]:
    """The shapes of every value a question asks for, when it says: a setting (`--flag`), a
    speed-up, an amount of memory, a duration, a model size, a version, else any number
    ("能快多少、省多少显存": a speed-up and an amount of memory); [] when it asks for none.

    >>> len(answer_hints("unsloth 宣称能快多少、省多少显存？")), answer_hints("Is it fast?")
    (2, [])
    >>> bool(answer_hints("到底能提速多少？")[0].search("提供 170% 的训练速度"))
    True

    Whether a thing works on a platform is answered by what it is limited to or does not do:
    >>> hint = answer_hints("Can I build it with ROCm on Windows?")[0]
    >>> bool(hint.search("supported only for Linux"))
    True
    """
    if asks_yes_no(question) and _ON_PLATFORM.search(question):
        return [_RESTRICTION]
    hints = [_SETTING] if asks_setting(question) else []
    asks_value = re.search(
        r"how (?:much|many|long|fast|large)|\bminimum\b|\bwhich versions?\b|"
        r"多少|多久|几|多大|多快|版本",
        question,
        re.I,
    )
    if not asks_value:
        return hints
    shapes = [
        shape
        for asked, shape in _DIMENSIONS
        # "用什么参数" asks for a setting, not for a model's parameter count
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


#: "二、", "3.", "(4)": a section's numbering, not part of its title
SECTION_NUMBER = re.compile(
    r"^\s*(?:[一二三四五六七八九十]+[、.]|\d+(?:\.\d+)*[、.]?|[（(]\d+[)）])\s*"
)
