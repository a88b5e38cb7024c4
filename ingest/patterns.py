"""Language patterns shared by the extractors: recommendation cues, negation, rankings, arrows.

Built from the cue words of `kg.cues` (one file per language); generic writing patterns, not facts
about any article.
"""

from __future__ import annotations

import re

from kg import cues

__all__ = [
    "ARROW",
    "CJK",
    "CLAUSE_SPLIT",
    "CONTRAST",
    "DEFAULT_CUE",
    "DISCOURSE_LABEL",
    "EXPORT_CUE",
    "LIST_JOIN",
    "LOCATION_AFFIX",
    "MARK_NO",
    "MARK_YES",
    "NEGATION",
    "NOT_RECOMMENDED_NOTE",
    "PAIRING_CUE",
    "RANK_OPERATOR",
    "RECOMMEND_CUE",
    "SCALE_VALUE",
    "SPEEDUP_VALUE",
    "VERSION_AFTER",
    "column_role",
    "residual_text",
]

ARROW = re.compile(r"\s*(?:─*→|->|=>|⇒|──+>)\s*")
#: a Chinese character
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Clause breaks: semicolons, and line breaks except a soft wrap inside a sentence (a line
#: ending in a word, a CJK character or a joining mark goes on: "管理用\naccelerate").
CLAUSE_SPLIT = re.compile(r"[；;]|(?<![\w\u4e00-\u9fff+、，,（(/])\n")
RECOMMEND_CUE = cues.pattern("document.recommend")
#: What joins the items of a list: a list mark or a joining word of either language ("A、B 和 C",
#: "A, B, and C"): one pattern for every reader of lists to build with (compiled with re.I).
LIST_JOIN = (
    rf"[、,，/]|\b{cues.alternatives('document.list_join', ('en',))}\b|"
    rf"{cues.alternatives('document.list_join', ('zh',))}"
)
NEGATION = re.compile(rf"{cues.alternatives('document.negation')}\s*\S{{0,6}}$", re.I)
NOT_RECOMMENDED_NOTE = cues.pattern("document.not_recommended_note")
CONTRAST = cues.pattern("document.contrast")
DISCOURSE_LABEL = cues.pattern("document.discourse_label")
EXPORT_CUE = cues.pattern("document.export")
DEFAULT_CUE = cues.pattern("document.default")
PAIRING_CUE = cues.pattern("document.pairing")
#: "在 Linux 上", "on edge devices": the words around a place's name
LOCATION_AFFIX = re.compile(
    rf"^{cues.alternatives('document.location_before')}\s*|"
    rf"\s*{cues.alternatives('document.location_after')}$",
    re.I,
)
RANK_OPERATOR = re.compile(r"^\s*(>>|>=|≥|>|＞＞|＞)\s*$")
_RANGE = rf"(?:[–\-~～]|{cues.alternatives('value.range_to')})"
SCALE_VALUE = re.compile(
    rf"[<>≤≥]?\s*\d+\s*(?:{_RANGE}\s*\d+\s*)?{cues.alternatives('value.scale_unit')}", re.I
)
SPEEDUP_VALUE = re.compile(
    rf"\d+(?:\.\d+)?\s*(?:{_RANGE}\s*\d+(?:\.\d+)?\s*)?(?:{cues.alternatives('value.times')}|×)",
    re.I,
)
VERSION_AFTER = re.compile(r"^\s*(\d+(?:\.\d+)*(?:\.x)?|\d+\.x)")

_ROLE_WORDS: dict[str, re.Pattern[str]] = {
    "scale": cues.pattern("document.column.scale"),
    "use": cues.pattern("document.column.use"),
}


def column_role(header: str) -> str:
    """What a table column states about its row subject: `scale`, `use` or `attribute`.

    >>> column_role("适用规模"), column_role("用途"), column_role("机制")
    ('scale', 'use', 'attribute')
    """
    for role, pattern in _ROLE_WORDS.items():
        if pattern.search(header):
            return role
    return "attribute"


def residual_text(text: str, spans: list[tuple[int, int]]) -> str:
    """The text left when the given spans (entity mentions) and separators are removed.

    >>> residual_text("PyTorch + ONNX", [(0, 7), (10, 14)])
    ''
    """
    kept = []
    last = 0
    for start, end in sorted(spans):
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return re.sub(r"[\s+/、,，()（）\-─→>:：。.]+", "", "".join(kept))


#: a table cell that only says yes (✅), or no (❌): a feature matrix's cells
MARK_YES = re.compile(rf"^\W*(?:✅|✔|✓|☑|{cues.alternatives('document.mark_yes')})\W*$", re.I)
MARK_NO = re.compile(rf"^\W*(?:❌|✗|✘|✖|⛔|{cues.alternatives('document.mark_no')})\W*$", re.I)
