"""What a sentence claims of the things it names: a typed relation from the unit's subject to
each named thing (`claim_relation`: not supported, requires, an alternative, an export, a licence,
or the kind of thing named), and advice ("For edge devices: use X", `advice`)."""

from __future__ import annotations

import re

from ingest.patterns import CJK, LIST_JOIN
from kg import cues
from kg.lexicon import Mention
from kg.schema import (
    IDEA_TYPES,
    SOLUTION_TYPES,
    NodeType,
    RelationType,
)

__all__ = ["advice", "claim_relation", "listed_together"]

_RECOMMEND_VERB = cues.alternatives("document.advice.verb")
#: "For edge devices: use X", "If you need 8-bit inference, try X", "边缘设备：用 X"
_ADVICE = (
    re.compile(
        rf"^\s*{cues.alternatives('document.advice.condition', ('en',))}\s+"
        r"(?P<situation>[^:,.;!?]{2,60}?)\s*[:,]\s*" + _RECOMMEND_VERB + r"\s+",
        re.I,
    ),
    re.compile(
        rf"^\s*{cues.alternatives('document.advice.condition', ('zh',))}?"
        r"(?P<situation>[^：:，,。；;！？]{2,24}?)\s*[：:]\s*" + _RECOMMEND_VERB + r"\s*"
    ),
)
#: what a situation may name: it is a condition, not a product
_SITUATIONAL = frozenset(
    {NodeType.HARDWARE, NodeType.PLATFORM, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
)
# English cues start a word: "OpenVINO supports" holds no "no support"
_NEGATION = re.compile(cues.alternatives("document.not_supported") + "|❌", re.I)
_REQUIRE = re.compile(cues.alternatives("document.requires") + "|>=|≥", re.I)
_REQUIRE_NEGATED = re.compile(cues.alternatives("document.requires_negated") + r"\s*$", re.I)
_ALTERNATIVE = cues.pattern("document.alternative")
_OWNER = cues.pattern("document.owner_before")
_OWNER_AFTER = re.compile(r"\s*" + cues.alternatives("document.owner_after"))
_EXPORT = cues.pattern("document.export_word")
_LICENSE = cues.pattern("document.licence")
# a full stop or a semicolon (an English one before a space: "e.g." and "v1.5" go on), or a
# comma before a contrast
_CLAUSE_START = re.compile(
    rf"[.;]\s|[。；]|[,，]\s*{cues.alternatives('document.clause_contrast')}"
)
_LISTED_AFTER = re.compile(
    rf"^(?:\s*(?:,|、|{cues.alternatives('document.list_join')})\s*[\w.+\-]+)*"
)
_NEGATED_BEFORE = re.compile(cues.alternatives("document.negated_before"))
_NEGATED_AFTER = re.compile(
    rf"\s*{cues.alternatives('document.copula_after')}?\s*"
    rf"({cues.alternatives('document.negated_after')}|❌)"
)
_NEGATED_COPULA = re.compile(rf"\s*{cues.alternatives('document.negated_copula')}\b")
_REQUIRED_AFTER = re.compile(r"[\s\d.+]*" + cues.alternatives("document.required_after"))
_WITHOUT = re.compile(rf"{cues.alternatives('document.without')}\s*$", re.I)
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
    NodeType.EXECUTION_MODE: RelationType.SUPPORTS,
}


#: a remark in parentheses, which a list may hold between its names ("A（…）、B")
_PARENTHETICAL = r"（[^（）]*）|\([^()]*\)"
_LIST_GAP = re.compile(rf"(?:\s|{_PARENTHETICAL}|{LIST_JOIN})*", re.I)
_LIST_MARK = re.compile(LIST_JOIN, re.I)


def listed_together(text: str, one: Mention, other: Mention, mentions: list[Mention]) -> bool:
    """Whether two names are members of one list in `text`: between them only other names,
    separators and parenthetical remarks ("常见选择：A（…）和 B", "A, B and C"). Things listed side
    by side are examples of one kind; the list says nothing of how one relates to the other.

    >>> def m(key, text, name):
    ...     return Mention(key=key, start=text.find(name), end=text.find(name) + len(name),
    ...                    surface=name)
    >>> t = "常见选择：Keras（内置于框架里）和 Quillon 等。"
    >>> listed_together(t, m("framework:keras", t, "Keras"), m("tool:quillon", t, "Quillon"), [])
    True
    >>> t = "Keras runs Quillon"
    >>> listed_together(t, m("framework:keras", t, "Keras"), m("tool:quillon", t, "Quillon"), [])
    False
    >>> t = "Keras Quillon"
    >>> listed_together(t, m("framework:keras", t, "Keras"), m("tool:quillon", t, "Quillon"), [])
    False
    """
    first, second = sorted((one, other), key=lambda m: m.start)
    gap = text[first.end : second.start]
    for inside in sorted(mentions, key=lambda m: -m.start):
        if first.end <= inside.start and inside.end <= second.start:
            gap = gap[: inside.start - first.end] + " " + gap[inside.end - first.end :]
    bare = re.sub(_PARENTHETICAL, " ", gap)
    # two names side by side ("Quillon 推理", "Linux GPU") are one phrase, not a list
    return _LIST_GAP.fullmatch(gap) is not None and _LIST_MARK.search(bare) is not None


def _negates(text: str) -> bool:
    """Whether a negation cue that starts `text` negates: a Chinese one must be a word of its
    own, an adverb or verb (不, 不能), as jieba's part-of-speech tagger reads it; a word it only
    begins (不同 "unlike", 不错 "good", 不仅 "not only") negates nothing.

    >>> _negates("不兼容老驱动"), _negates("不能装"), _negates("不同，Egret 更快")
    (True, True, False)
    >>> _negates("not supported")
    True
    """
    if not text or CJK.match(text) is None:
        return True
    import jieba.posseg  # Chinese text only: its tagger loads jieba's dictionary once

    jieba.setLogLevel(60)  # silence "Building prefix dict..." on stderr
    word = next(iter(jieba.posseg.cut(text[:12], HMM=False)), None)
    return word is not None and word.flag.startswith(("d", "v"))


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
    >>> claim_relation("Egret 在 Heron 不能装的机器上", 8, 13, NodeType.FRAMEWORK)
    <RelationType.NOT_SUPPORTED: 'NOT_SUPPORTED'>
    >>> claim_relation("与 Heron 不同，Egret 只在 CPU 上运行", 2, 7, NodeType.FRAMEWORK)
    <RelationType.USED_WITH: 'USED_WITH'>
    >>> [claim_relation(t, t.index("ONNX"), t.index("ONNX") + 4, NodeType.FORMAT)
    ...     for t in ["Egret 需要先转成 ONNX", "Egret 不需要先转成 ONNX"]]
    [<RelationType.REQUIRES: 'REQUIRES'>, <RelationType.MENTIONS: 'MENTIONS'>]
    >>> t = "Egret does not require a GPU"
    >>> claim_relation(t, t.index("GPU"), len(t), NodeType.HARDWARE)
    <RelationType.MENTIONS: 'MENTIONS'>
    """
    clause_start = max(
        (m.start() for m in _CLAUSE_START.finditer(text[:at])),
        default=0,
    )
    before = text[clause_start:at].lstrip(".;。；,， ")
    # what follows the name in its clause, through a list of names ("Linux and Windows are not")
    after = re.split(r"[.;。；,，](?:\s|$)", text[end : end + 80], maxsplit=1)[0]
    after_verb = _LISTED_AFTER.sub("", after)
    # "不需要先转成 ONNX", "does not require a GPU": a requirement denied is no requirement, nor
    # something unsupported (unless a negation of its own follows: "不需要 X，不支持 Y")
    window = before[-50:]
    required = list(_REQUIRE.finditer(window))
    if (
        required
        and _REQUIRE_NEGATED.search(window[: required[-1].start()][-8:])
        and not _NEGATION.search(window[required[-1].end() :])
    ):
        return RelationType.MENTIONS
    negated_before = _NEGATED_BEFORE.search(before[-20:])
    negated_after = _NEGATED_AFTER.match(after_verb)
    if (
        _NEGATION.search(before[-60:])
        or (negated_before is not None and _negates(negated_before.group(0)))
        or (negated_after is not None and _negates(after_verb[negated_after.start(1) :]))
        or _NEGATED_COPULA.match(after)
    ):
        return RelationType.NOT_SUPPORTED
    if _REQUIRED_AFTER.match(after):
        return RelationType.REQUIRES
    if target == NodeType.LICENSE or (
        target != NodeType.ORGANIZATION and _LICENSE.search(before[-40:])
    ):
        return RelationType.LICENSED_UNDER if target == NodeType.LICENSE else RelationType.MENTIONS
    if (
        _ALTERNATIVE.search(before[-50:])
        and target in SOLUTION_TYPES
        and target not in IDEA_TYPES | {NodeType.HARDWARE, NodeType.PLATFORM}
    ):
        return RelationType.ALTERNATIVE_TO
    if _EXPORT.search(before[-40:]) and target in (NodeType.FORMAT, NodeType.INFERENCE_ENGINE):
        return RelationType.EXPORTS_TO
    if _WITHOUT.search(before):
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
                if kind in SOLUTION_TYPES - IDEA_TYPES and kind != NodeType.HARDWARE:
                    return match.group("situation").strip(), mention.key
                return None
        return None
    return None
