"""Recommendations stated in running prose, found by cue words around entity mentions.

- `situation，首选 X` / `新项目优先考虑 X 或 Y`: the text before the cue (or the segment before) is
  the situation, the names right after the cue are recommended;
- `如果你追求…，X 是首选` / `…，X 和 Y 更适合`: names before a suitability cue are recommended for
  the segment before;
- `团队都是 X 高手，别非要切换到 Y`: Y is not recommended there, X is kept.

Segments are split at commas outside quotes and parentheses. Generic patterns, no article facts.
"""

from __future__ import annotations

import re

from ingest.patterns import LIST_JOIN, RECOMMEND_CUE
from ingest.resolve import DocumentEntities
from kg import cues
from kg.lexicon import Mention
from kg.schema import IDEA_TYPES, SOLUTION_TYPES, Evidence, NodeType, RelationType

__all__ = ["cue_recommendations", "segments"]

SUITS_AFTER = cues.pattern("document.suits_after")
NEGATED_SWITCH = re.compile(
    rf"{cues.alternatives('document.switch.negation')}\s*"
    rf"{cues.alternatives('document.switch.insist')}?\s*{cues.alternatives('document.switch.verb')}",
    re.I,
)
_LEAD = re.compile(
    rf"^[\s•\-*\d.、]*{cues.alternatives('document.lead_connective')}?\s*"
    rf"{cues.alternatives('document.lead_condition')}?\s*",
    re.I,
)
_SEPARATOR = re.compile(rf"^(?:[\s+]|{LIST_JOIN})*$", re.I)
_SITUATION_TAIL = re.compile(rf"{cues.alternatives('document.situation_tail')}+$")
_CHOOSABLE = SOLUTION_TYPES - IDEA_TYPES - {NodeType.HARDWARE}


def segments(text: str) -> list[tuple[int, int]]:
    """Comma-separated segments outside quotes and parentheses, as spans.

    >>> t = "如果你喜欢“完全掌控，甚至定义规则”，PyTorch和JAX更适合"
    >>> [t[s:e] for s, e in segments(t)]
    ['如果你喜欢“完全掌控，甚至定义规则”', 'PyTorch和JAX更适合']
    """
    spans: list[tuple[int, int]] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in '“（(「《"' and not (ch == '"' and depth):
            depth += 1
        elif ch in "”）)」》" or (ch == '"' and depth):
            depth = max(0, depth - 1)
        elif ch in "，," and depth == 0:
            spans.append((start, i))
            start = i + 1
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _situation_text(text: str) -> str:
    name = _LEAD.sub("", text).strip(' “”"「」：:。')
    name = _SITUATION_TAIL.sub("", name)
    return name if 2 <= len(name) <= 48 else ""


def _listed_after(mentions: list[tuple[Mention, str]], text: str, start: int) -> list[str]:
    """The choosable names listed right after position `start` ("首选 A、B 或 C")."""
    chosen: list[str] = []
    last = start
    for mention, eid in mentions:
        if mention.start < start:
            continue
        gap = text[last : mention.start]
        if chosen and not _SEPARATOR.match(gap):
            break
        if not chosen and len(gap.strip()) > 6:
            break
        chosen.append(eid)
        last = mention.end
    return chosen


def cue_recommendations(
    found: DocumentEntities,
    start: int,
    clause: str,
    ev: Evidence,
    context_term: str | None = None,
) -> None:
    """Relations from cue words in one clause (see the module docstring)."""
    spans = segments(clause)
    for index, (s, e) in enumerate(spans):
        seg = clause[s:e]
        mentions = [
            (m, eid)
            for m, eid in found.mentions(start + s, start + e)
            if found.type_of(eid) in _CHOOSABLE
        ]
        previous = (
            _situation_text(clause[spans[index - 1][0] : spans[index - 1][1]]) if index else ""
        )
        negated = NEGATED_SWITCH.search(seg)
        if negated and previous:
            situation = found.situation(previous, ev)
            targets = _listed_after(mentions, seg, negated.end())
            if situation is not None and targets:
                for target in targets:
                    found.relate(situation, RelationType.NOT_RECOMMENDED, target, ev)
                for _m, kept in found.mentions(
                    start + spans[index - 1][0], start + spans[index - 1][1]
                ):
                    if found.type_of(kept) in _CHOOSABLE:
                        found.relate(situation, RelationType.RECOMMENDED_FOR, kept, ev)
            continue
        suits = SUITS_AFTER.search(seg)
        if suits and previous:
            before = [eid for m, eid in mentions if m.end <= suits.start()]
            if before:
                situation = found.situation(previous, ev)
                for target in before if situation else []:
                    found.relate(situation, RelationType.RECOMMENDED_FOR, target, ev)  # type: ignore[arg-type]
                continue
        # the first cue with names right after it ("批量转写：调度用 torchrun": 转 is no cue here)
        cue, targets = None, []
        for candidate in RECOMMEND_CUE.finditer(seg):
            targets = _listed_after(mentions, seg, candidate.end())
            if targets:
                cue = candidate
                break
        if cue is None:
            continue
        prefix = seg[: cue.start()]
        if any(m.start < cue.start() for m, _ in mentions):
            continue
        name = _situation_text(prefix) or previous
        if context_term:
            name = f"{context_term}（{name}）" if name else context_term
        situation = found.situation(name, ev) if name else None
        for target in targets if situation else []:
            found.relate(situation, RelationType.RECOMMENDED_FOR, target, ev)  # type: ignore[arg-type]
