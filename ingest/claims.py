"""What a sentence claims of the things it names: a typed relation from the unit's subject to
each named thing (`claim_relation`: not supported, requires, an alternative, an export, a licence,
or the kind of thing named), and advice ("For edge devices: use X", `advice`)."""

from __future__ import annotations

import re

from kg.lexicon import Mention
from kg.schema import (
    SOLUTION_TYPES,
    NodeType,
    RelationType,
)

__all__ = ["advice", "claim_relation"]

_RECOMMEND_VERB = (
    r"(?:(?:we\s+)?(?:recommend|suggest)(?:ed)?(?:\s+using)?|use|try|choose|pick|go\s+with|prefer|"
    r"推荐(?:使用)?|建议(?:使用|用)?|首选|选择?|使用|用|考虑)"
)
#: "For edge devices: use X", "If you need 8-bit inference, try X", "边缘设备：用 X"
_ADVICE = (
    re.compile(
        r"^\s*(?:for|if\s+you(?:\s+(?:need|want|have))?|when(?:\s+you\s+(?:need|want))?)\s+"
        r"(?P<situation>[^:,.;!?]{2,60}?)\s*[:,]\s*" + _RECOMMEND_VERB + r"\s+",
        re.I,
    ),
    re.compile(
        r"^\s*(?:对于|如果|若)?(?P<situation>[^：:，,。；;！？]{2,24}?)\s*[：:]\s*"
        + _RECOMMEND_VERB
        + r"\s*"
    ),
)
#: what a situation may name: it is a condition, not a product
_SITUATIONAL = frozenset(
    {NodeType.HARDWARE, NodeType.PLATFORM, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
)
_NEGATION = re.compile(
    # English cues start a word: "OpenVINO supports" holds no "no support"
    r"\b(?:not (?:yet )?supported|unsupported|no support|"
    r"(?:does|do|did)(?:n't| not) (?:support|work|run)|"
    r"won't|cannot|can't|not available|isn't available)|❌|不支持|暂不支持|无法|不能",
    re.I,
)
_REQUIRE = re.compile(
    r"requires?|required|needs?\b|depends? on|dependenc|prerequisite|minimum|at least|>=|≥|"
    r"must have|需要|依赖|要求|最低|前提",
    re.I,
)
_ALTERNATIVE = re.compile(
    r"alternative|instead of|replacement|drop-in|compared (?:to|with)|\bvs\.?\b|versus|faster than|"
    r"better than|than\b|替代|相比|对比|比起|优于|快于",
    re.I,
)
_OWNER = re.compile(
    r"\b(?:by|from|part of|backed by|maintained by|developed by|created by|built by)\s+(?:the\s+)?$"
    r"|(?:由|来自)\s*$",
    re.I,
)
_OWNER_AFTER = re.compile(r"\s*(?:'s\b|’s\b|出品|开发|开源|推出|维护)")
_EXPORT = re.compile(r"export|convert|导出|转换", re.I)
_LICENSE = re.compile(r"licen[cs]e|许可|协议", re.I)
_BY_TARGET: dict[NodeType, RelationType] = {
    NodeType.HARDWARE: RelationType.RUNS_ON,
    NodeType.PLATFORM: RelationType.RUNS_ON,
    NodeType.FORMAT: RelationType.SUPPORTS,
    NodeType.MODEL: RelationType.SUPPORTS,
    NodeType.LANGUAGE: RelationType.SUPPORTS,
    NodeType.TECHNIQUE: RelationType.IMPLEMENTS,
    NodeType.PARALLEL_STRATEGY: RelationType.IMPLEMENTS,
    NodeType.LICENSE: RelationType.LICENSED_UNDER,
    NodeType.FRAMEWORK: RelationType.USED_WITH,
    NodeType.LIBRARY: RelationType.USED_WITH,
    NodeType.INFERENCE_ENGINE: RelationType.USED_WITH,
    NodeType.TOOL: RelationType.USED_WITH,
    NodeType.CONCEPT: RelationType.SUPPORTS,
}


def claim_relation(text: str, at: int, end: int, target: NodeType) -> RelationType:
    """How a unit's subject relates to a thing the unit names at `text[at:end]`.

    Words in the same clause before the name decide first (not supported, requires, instead of,
    export), then the kind of thing named.

    >>> claim_relation("Training is not supported on Windows", 29, 36, NodeType.PLATFORM)
    <RelationType.NOT_SUPPORTED: 'NOT_SUPPORTED'>
    >>> claim_relation("Runs on NVIDIA GPUs", 8, 19, NodeType.HARDWARE)
    <RelationType.RUNS_ON: 'RUNS_ON'>
    >>> claim_relation("OpenVINO supports the CPU and NPU", 22, 25, NodeType.HARDWARE)
    <RelationType.RUNS_ON: 'RUNS_ON'>
    >>> claim_relation("a drop-in replacement for PyTorch", 26, 33, NodeType.FRAMEWORK)
    <RelationType.ALTERNATIVE_TO: 'ALTERNATIVE_TO'>
    """
    clause_start = max(
        (m.start() for m in re.finditer(r"[.;。；]\s|[,，]\s*(?:but|however|但|不过)", text[:at])),
        default=0,
    )
    before = text[clause_start:at].lstrip(".;。；,， ")
    # what follows the name in its clause, through a list of names ("Linux and Windows are not")
    after = re.split(r"[.;。；,，](?:\s|$)", text[end : end + 80], maxsplit=1)[0]
    after_verb = re.sub(r"^(?:\s*(?:,|and|or|和|与|、)\s*[\w.+\-]+)*", "", after)
    if (
        _NEGATION.search(before[-60:])
        or re.search(r"\bbut not\b|\bnot (?:on|for|with|in)\s*$|(?:不|无法)\S{0,4}$", before[-20:])
        or re.match(r"\s*(?:is|are|was|were)?\s*(?:not\b|n't\b|unsupported|❌|不|暂不)", after_verb)
        or re.match(r"\s*(?:isn't|aren't|is not|are not)\b", after)
    ):
        return RelationType.NOT_SUPPORTED
    if re.match(
        r"[\s\d.+]*(?:or (?:later|newer|above|higher)\s+)?(?:is|are)\s+(?:required|needed)", after
    ):
        return RelationType.REQUIRES
    if target == NodeType.LICENSE or (
        target != NodeType.ORGANIZATION and _LICENSE.search(before[-40:])
    ):
        return RelationType.LICENSED_UNDER if target == NodeType.LICENSE else RelationType.MENTIONS
    if (
        _ALTERNATIVE.search(before[-50:])
        and target in SOLUTION_TYPES
        and target not in (NodeType.HARDWARE, NodeType.PLATFORM, NodeType.CONCEPT)
    ):
        return RelationType.ALTERNATIVE_TO
    if _EXPORT.search(before[-40:]) and target in (NodeType.FORMAT, NodeType.INFERENCE_ENGINE):
        return RelationType.EXPORTS_TO
    if re.search(r"(?:没有|无|\bwithout|\bno)\s*$", before, re.I):
        return RelationType.MENTIONS  # "适合没有 GPU 的服务器", "works without a GPU"
    if _REQUIRE.search(before[-50:]):
        return RelationType.REQUIRES
    if target == NodeType.ORGANIZATION:
        # "developed by Intel", "Hugging Face 出品": an organisation named beside a provider cue
        # owns the subject; named otherwise ("API providers (OpenAI, Anthropic)") it is mentioned
        own = _OWNER.search(before[-40:]) or _OWNER_AFTER.match(text[end : end + 12])
        return RelationType.PART_OF_ECOSYSTEM if own else RelationType.MENTIONS
    return _BY_TARGET.get(target, RelationType.MENTIONS)


def advice(
    text: str, mentions: list[Mention], types: dict[str, NodeType]
) -> tuple[str, str] | None:
    """(situation, recommended entity id) when `text` is shaped as advice.

    The recommended thing is the first product named right after the verb; the situation may
    name only conditions (hardware, platforms, people, scenarios).

    >>> found = [Mention(start=22, end=30, surface="FooServe", key="fooserve")]
    >>> advice("For edge devices: use FooServe", found, {"fooserve": NodeType.INFERENCE_ENGINE})
    ('edge devices', 'fooserve')
    """
    for pattern in _ADVICE:
        match = pattern.match(text)
        if match is None:
            continue
        situation_end = match.end("situation")
        for mention in mentions:
            kind = types.get(mention.key)
            if mention.start < situation_end and kind not in _SITUATIONAL:
                return None
            if mention.start >= match.end() and mention.start - match.end() <= 2:
                if kind in SOLUTION_TYPES and kind not in (NodeType.HARDWARE, NodeType.CONCEPT):
                    return match.group("situation").strip(), mention.key
                return None
        return None
    return None
