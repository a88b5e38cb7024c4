"""Find the corpus's names in a text: every surface of every entity, with spacing, dashes and
(for names that are not ordinary words) case folded (`NameMatcher`)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass

from kg.lexicon import Mention, as_verb, surface_pattern
from kg.patterns import one_pass_pattern
from kg.schema import (
    normalize_name,
)

__all__ = ["NameMatcher", "flex_pattern", "squash", "surface_keys"]

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def flex_pattern(surface: str) -> str:
    """A regex for a name that tolerates how people split it: `FlashAttention` also matches
    `Flash Attention` and `flash-attention`; `LLaMA-Factory` matches `LlamaFactory`.

    >>> p = re.compile(flex_pattern("flashattention-2"), re.I)
    >>> [bool(p.search(t)) for t in ["Flash Attention 2", "FlashAttention-2", "flashattention2x"]]
    [False, True, False]
    >>> bool(re.search(flex_pattern("FlashAttention"), "via Flash Attention 2.5.7+"))
    True
    """
    pieces: list[str] = []
    prev = ""
    for ch in surface.strip():
        if ch in " -_":
            if pieces and pieces[-1] != r"[\s\-_]?":
                pieces.append(r"[\s\-_]?")
            prev = ch
            continue
        if prev and ((prev.islower() and ch.isupper()) or (prev.isalpha() and ch.isdigit())):
            pieces.append(r"[\s\-_]?")
        pieces.append(re.escape(ch))
        prev = ch
    body = "".join(pieces)
    if re.match(r"[A-Za-z0-9]", surface):
        body = r"(?<![A-Za-z0-9_])" + body
    if re.search(r"[A-Za-z]$", surface):
        body += r"(?:s|es)?(?![A-Za-z0-9_])"
    elif re.search(r"[0-9]$", surface):
        body += (
            r"s?(?![A-Za-z0-9_]|\.\d)"  # "A100s"; "Flash Attention 2.5.7" is no "FlashAttention-2"
        )
    return body


_SEPARATORS = re.compile(r"[\s\-_]+")


def squash(text: str) -> str:
    """A text without separators, in ASCII lower case: where a name's pattern (`flex_pattern`,
    `surface_pattern`) matches in a text, the squashed name is inside the squashed text.

    >>> squash("Flash-Attention 2"), squash("via flash attention-2!")
    ('flashattention2', 'viaflashattention2!')
    """
    return _SEPARATORS.sub("", text.translate(_ASCII_LOWER))


def _ordered(surfaces: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """The names a matcher looks for, longest first (then by text and entity)."""
    unique = {(s.strip(), k, cs) for s, k, cs in surfaces if len(normalize_name(s)) >= 2}
    return sorted(unique, key=lambda t: (-len(t[0]), t[0], t[1]))


def surface_keys(surfaces: Iterable[tuple[str, str, bool]]) -> dict[str, str]:
    """What a matcher resolves a found name to: its normalised form -> entity (the first name
    in `_ordered` order wins), and `=` + the exact text of a case-sensitive name -> entity.

    >>> surface_keys([("vLLM", "tool:vllm", False), ("Candle", "framework:candle", True)])
    {'candle': 'framework:candle', '=Candle': 'framework:candle', 'vllm': 'tool:vllm'}
    """
    keys: dict[str, str] = {}
    for surface, key, case_sensitive in _ordered(surfaces):
        keys.setdefault(normalize_name(surface), key)
        if case_sensitive:
            keys.setdefault("=" + surface, key)
    return keys


@dataclass(frozen=True)
class _Surface:
    text: str
    key: str
    case_sensitive: bool


class NameMatcher:
    """Finds entity names in text: longest name first, non-overlapping, word-bounded.

    Names written like ordinary capitalised words ("Candle", "Optimum") match only with that
    capital; shaped names ("vLLM", "llama.cpp", "RTX 4090") match in any case.
    """

    def __init__(
        self,
        surfaces: Iterable[tuple[str, str, bool]],
        within: str | None = None,
        verbs: frozenset[str] = frozenset(),
    ) -> None:
        """`within`: the matcher is only asked about texts inside this one (the units of the
        documents being linked again): the names that cannot occur in it are left out of the
        pattern (compiling every name of a large corpus costs ~0.3 s), which finds what the
        whole one finds there. `verbs`: the keys whose name is also an English verb
        (`kg.lexicon.as_verb`): written as the verb, they name nothing."""
        self._verbs = verbs
        ordered = _ordered(surfaces)
        self._keys = surface_keys(ordered)
        folded_parts, exact_parts = [], []
        squashed = squash(within) if within is not None else None
        for surface, _key, case_sensitive in ordered:
            if squashed is not None and squash(surface) not in squashed:
                continue
            if case_sensitive:
                exact_parts.append(surface_pattern(surface))
            else:
                folded_parts.append(flex_pattern(surface).translate(_ASCII_LOWER))
        # one pass over the text, whatever the number of names (`kg.patterns`)
        self._folded = one_pass_pattern(folded_parts)
        self._exact = one_pass_pattern(exact_parts)

    def find(self, text: str) -> list[Mention]:
        """Non-overlapping mentions, longest first where two overlap."""
        found: list[Mention] = []
        for match in self._folded.finditer(text.translate(_ASCII_LOWER)):
            surface = text[match.start() : match.end()]
            key = self._resolve(surface, exact=False)
            if key is not None and not (
                key in self._verbs and as_verb(text, match.start(), surface)
            ):
                found.append(
                    Mention(start=match.start(), end=match.end(), surface=match.group(0), key=key)
                )
        for match in self._exact.finditer(text):
            key = self._resolve(match.group(0), exact=True)
            if key is not None:
                found.append(
                    Mention(start=match.start(), end=match.end(), surface=match.group(0), key=key)
                )
        found.sort(key=lambda m: (m.start, -(m.end - m.start)))
        kept: list[Mention] = []
        for mention in found:
            if kept and mention.start < kept[-1].end:
                continue
            kept.append(mention)
        return kept

    def _resolve(self, surface: str, *, exact: bool) -> str | None:
        if exact and "=" + surface in self._keys:
            return self._keys["=" + surface]
        norm = normalize_name(surface)
        key = self._keys.get(norm)
        if key is None and norm.endswith("s"):
            key = self._keys.get(norm[:-1]) or self._keys.get(norm[:-2])
        return key
