"""Language patterns shared by the extractors: recommendation cues, negation, rankings, arrows.

These are generic Chinese/English writing patterns, not facts about any article.
"""

from __future__ import annotations

import re

__all__ = [
    "ARROW",
    "CLAUSE_SPLIT",
    "CONTRAST",
    "DEFAULT_CUE",
    "DISCOURSE_LABEL",
    "EXPORT_CUE",
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
#: Clause breaks: semicolons, and line breaks except a soft wrap inside a sentence (a line
#: ending in a word, a CJK character or a joining mark goes on: "管理用\naccelerate").
CLAUSE_SPLIT = re.compile(r"[；;]|(?<![\w\u4e00-\u9fff+、，,（(/])\n")
RECOMMEND_CUE = re.compile(
    r"首选|推荐|建议|选|(?<![易使作适常通实应费运不])用|转|考虑|主力|补充|关注|可以学习|上手|"
    r"\b(?:use|choose|pick|prefer|recommend(?:ed)?|go with|try|switch to|consider|start with)\b",
    re.I,
)
NEGATION = re.compile(
    r"(?:别|不要|不推荐|避免|已不推荐|勿|不用|don't|do not|avoid|not recommended|never)\s*\S{0,6}$",
    re.I,
)
NOT_RECOMMENDED_NOTE = re.compile(r"已不推荐|不推荐|不建议|deprecated|not recommended", re.I)
CONTRAST = re.compile(r"但是|但|然而|不过|\b(?:but|however|although)\b", re.I)
DISCOURSE_LABEL = re.compile(
    r"总结|定义|提醒|注意|示例|例如|比如|指标|目录|导读|参考|延伸|"
    r"\b(?:summary|note|tip|example|e\.g|tl;?dr|definition|see also|reference)\b",
    re.I,
)
EXPORT_CUE = re.compile(r"导出|export(?:s|ed)?\s*(?:to)?|转换为|convert(?:ed)?\s+to", re.I)
DEFAULT_CUE = re.compile(r"默认|为主|核心模式|default|by default|primarily|mainly", re.I)
PAIRING_CUE = re.compile(r"搭配|配合|together with|paired with|combined with", re.I)
RANK_OPERATOR = re.compile(r"^\s*(>>|>=|≥|>|＞＞|＞)\s*$")
SCALE_VALUE = re.compile(
    r"[<>≤≥]?\s*\d+\s*(?:[–\-~～至到]\s*\d+\s*)?(?:卡|GPUs?|nodes?|节点|机)", re.I
)
SPEEDUP_VALUE = re.compile(
    r"\d+(?:\.\d+)?\s*(?:[–\-~～至到]\s*\d+(?:\.\d+)?\s*)?(?:倍|x\b|×)", re.I
)
VERSION_AFTER = re.compile(r"^\s*(\d+(?:\.\d+)*(?:\.x)?|\d+\.x)")

_ROLE_WORDS: dict[str, re.Pattern[str]] = {
    "scale": re.compile(r"规模|scale|size|卡数|集群", re.I),
    "use": re.compile(
        r"适用|用途|场景|用于|适合|作用|定位|use|best for|purpose|scenario|when", re.I
    ),
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
