"""Many regular expressions matched as one, in one pass over a text.

`re.compile("|".join(patterns))` over hundreds of names tries every alternative at every position
of the text, each starting with its own look-behind: finding the lexicon's names cost ~0.5 ms a
sentence. `one_pass_pattern` compiles the same alternatives grouped by the literal character each
must start with, its look-behind moved after that character: the regex engine then skips to
positions whose character can start a name and tries only that character's alternatives. The
matches (positions, text, which alternative) are those of the joined pattern: alternatives that
start with different characters never match at the same position, and within a group the order
is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["one_pass_pattern", "split_head"]

# a look-behind over one character class, as `kg.lexicon.surface_pattern` writes it
_LOOKBEHIND: Final = re.compile(r"\(\?<(?P<sign>[!=])(?P<cls>\[(?:\\.|[^\]\\])+\]|\\[wWdDsS])\)")
_SPECIAL: Final = frozenset("\\.^$*+?{}[]|()")


def split_head(pattern: str) -> tuple[str, str, str] | None:
    """(look-behind, first character, rest) of a pattern that starts with an optional one-class
    look-behind and a literal character (escaped or not); None for any other pattern.

    >>> split_head(r"(?<![A-Za-z0-9_])vllm(?![A-Za-z0-9_])")
    ('(?<![A-Za-z0-9_])', 'v', 'llm(?![A-Za-z0-9_])')
    >>> split_head(r"\\.net"), split_head(r"(?:a|b)"), split_head("a+b")
    (('', '.', 'net'), None, None)
    """
    behind = _LOOKBEHIND.match(pattern)
    at = behind.end() if behind else 0
    if at >= len(pattern) or _top_level_bar(pattern):
        return None
    if pattern[at] == "\\":
        escaped = pattern[at : at + 2]
        # an escaped punctuation character is a literal; \d, \s, \w, \1 ... are not
        if len(escaped) < 2 or escaped[1].isalnum():
            return None
        head = escaped
    elif pattern[at] in _SPECIAL:
        return None
    else:
        head = pattern[at]
    if pattern[at + len(head) : at + len(head) + 1] in ("*", "+", "?", "{"):
        return None  # a quantified first character is not a literal start
    return (behind.group(0) if behind else ""), head[-1], pattern[at + len(head) :]


def _top_level_bar(pattern: str) -> bool:
    """Whether `pattern` is itself an alternation (a `|` outside groups and classes).

    >>> _top_level_bar(r"a(?:b|c)[|][^]|]\\|"), _top_level_bar("ab|c")
    (False, True)
    """
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += 1
            i += pattern[i : i + 1] == "^"
            i += pattern[i : i + 1] == "]"  # "[]...]" and "[^]...]" hold a "]"
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += 1
    return False


def one_pass_pattern(patterns: Sequence[str]) -> re.Pattern[str]:
    """A compiled pattern that finds what `re.compile("|".join(patterns))` finds, faster (see
    the module's docstring); the joined pattern itself where some alternative does not start
    with a literal character. Compiled without flags (fold the case of text and patterns
    instead of re.IGNORECASE); capturing groups inside the patterns are not numbered as in the
    joined pattern.

    >>> names = [r"(?<![a-z])torch(?![a-z])", r"(?<![a-z])tf(?![a-z])", r"飞桨"]
    >>> [m.group(0) for m in one_pass_pattern(names).finditer("tf and torch, 飞桨; tflite")]
    ['tf', 'torch', '飞桨']
    """
    heads = [split_head(p) for p in patterns]
    if not patterns or any(h is None for h in heads):
        return re.compile("|".join(patterns) or "(?!)")
    groups: dict[str, list[str]] = {}
    for head in heads:
        assert head is not None
        behind, first, rest = head
        if behind:
            # "(?<!C)x" == "x(?<!Cx)": the look-behind, now two characters wide, sees the one
            # before x as before (and nothing at the start of the text, as before)
            rest = f"(?<{behind[3]}{behind[4:-1]}{re.escape(first)})" + rest
        groups.setdefault(first, []).append(rest)
    return re.compile(
        "|".join(f"{re.escape(first)}(?:{'|'.join(rests)})" for first, rests in groups.items())
    )
