"""Each language's cue words, in one place: the words that say what a question asks ("which",
"recommend", "how much", 哪个, 吗) and how a document advises, requires or denies ("首选",
"requires", "not supported", 不支持). Ingest and qa build every cue pattern here.

The words are data, one file per language: `kg/data/cues_en.toml` and `kg/data/cues_zh.toml`.
Each key (`question.choice`, `document.negation`, ...) names one cue; its value is the list of
that language's alternatives, each a regular expression: a word, or a short phrase with its
own word boundaries. `{other.key}` inside an alternative stands for the same language's
alternatives of another cue (`should (?:i|we) (?:{question.pick_verbs})`). A cue one language
does not have is simply absent from its file.

>>> bool(pattern("question.difference").search("A 和 B 有什么区别？"))
True
>>> bool(pattern("question.difference").search("How do they differ?"))
True
>>> words("question.pick_verbs", "en")[:3]
('use', 'pick', 'choose')
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from functools import cache
from importlib import resources
from typing import Final

__all__ = ["LANGUAGES", "alternatives", "fingerprint", "known_keys", "pattern", "words"]

#: the languages with a cue file, in the order their alternatives are joined
LANGUAGES: Final = ("en", "zh")
_REFERENCE: Final = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)+)\}")


def _flatten(table: dict[str, object], prefix: str = "") -> dict[str, tuple[str, ...]]:
    """`{"a": {"b": ["x"]}}` -> `{"a.b": ("x",)}`.

    >>> _flatten({"question": {"each": ["分别"], "who": {"x": ["谁"]}}})
    {'question.each': ('分别',), 'question.who.x': ('谁',)}
    """
    flat: dict[str, tuple[str, ...]] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, key + "."))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            flat[key] = tuple(value)
        else:
            raise ValueError(f"kg/data/cues: {key} is neither a table nor a list of strings")
    return flat


@cache
def _raw(language: str) -> dict[str, tuple[str, ...]]:
    text = resources.files("kg").joinpath(f"data/cues_{language}.toml").read_text("utf-8")
    return _flatten(tomllib.loads(text))


@cache
def fingerprint() -> str:
    """A digest of every language's cue file: what ingest made with other cues is made again.

    >>> len(fingerprint())
    16
    """
    digest = hashlib.sha256()
    for language in LANGUAGES:
        digest.update(resources.files("kg").joinpath(f"data/cues_{language}.toml").read_bytes())
    return digest.hexdigest()[:16]


@cache
def known_keys() -> frozenset[str]:
    """Every cue key some language's file defines."""
    return frozenset(k for language in LANGUAGES for k in _raw(language))


@cache
def words(key: str, language: str) -> tuple[str, ...]:
    """One language's alternatives of a cue, references expanded; () where it has none."""
    if key not in known_keys():
        raise KeyError(f"no cue {key!r} in kg/data/cues_*.toml: add it to a language's file")

    def expand(m: re.Match[str]) -> str:
        inner = words(m.group(1), language)
        if not inner:
            raise KeyError(f"cue {key!r} ({language}) refers to {m.group(1)!r}, which it lacks")
        return "(?:" + "|".join(inner) + ")"

    return tuple(_REFERENCE.sub(expand, alt) for alt in _raw(language).get(key, ()))


@cache
def alternatives(key: str, languages: tuple[str, ...] = LANGUAGES) -> str:
    """A cue's alternatives in every language as one group, to build a larger pattern with.

    >>> alternatives("question.each", ("zh",))
    '(?:分别|各自|各是)'
    """
    found = [alt for language in languages for alt in words(key, language)]
    if not found:
        raise KeyError(f"cue {key!r} has no alternatives in {', '.join(languages)}")
    return "(?:" + "|".join(found) + ")"


@cache
def pattern(key: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """A cue's alternatives in every language, compiled (case ignored unless `flags` says)."""
    return re.compile(alternatives(key), flags)
