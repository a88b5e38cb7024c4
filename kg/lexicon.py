"""The alias lexicon: canonical names with Chinese and English surface forms, kept as data.

The default vocabulary is `kg/data/lexicon.json` (domain knowledge about deep-learning tooling, not
about any article). Users extend it with files in the same format. Two parts:

- `entities`: nameable things with a node type (`英伟达显卡` and `NVIDIA GPU` name one node);
- `terms`: a zh/en thesaurus (`复现` = `reproduce`) used to match questions to situations.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable
from functools import cached_property
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field

from kg.errors import StoreError
from kg.patterns import one_pass_pattern
from kg.schema import NodeType, entity_id, normalize_name

__all__ = [
    "Lexicon",
    "LexiconEntry",
    "LexiconFile",
    "LexiconPattern",
    "Mention",
    "as_verb",
    "surface_pattern",
]


class LexiconEntry(BaseModel):
    """One canonical entity and its surface forms."""

    type: NodeType
    name: str
    aliases: list[str] = Field(default_factory=list)
    verb: bool = Field(
        default=False,
        description="its name is also an English verb (the library `accelerate`): written in "
        'lower case after "to" it is the verb, not this thing',
    )

    @property
    def id(self) -> str:
        """The node id this entry canonicalises to."""
        return entity_id(self.type, self.name)

    @property
    def surfaces(self) -> list[str]:
        """The name and every alias."""
        return [self.name, *self.aliases]


class LexiconPattern(BaseModel):
    """A family of names of one type, as a regular expression ("RTX 4090", "Qwen2.5-7B")."""

    type: NodeType
    pattern: str = Field(description="a Python regex that must match the whole name")
    in_text: bool = Field(
        default=False,
        description="its names are found in running text too, not only typed once discovered "
        "(instruction sets, GPU architectures: words no other rule finds as names)",
    )


class LexiconFile(BaseModel):
    """The on-disk format of a lexicon file."""

    version: int = 1
    about: str = ""
    entities: list[LexiconEntry] = Field(default_factory=list)
    terms: dict[str, list[str]] = Field(default_factory=dict)
    patterns: list[LexiconPattern] = Field(default_factory=list)


class Mention(BaseModel):
    """A surface form found in a text, resolved to a lexicon entry (or a term key)."""

    start: int
    end: int
    surface: str
    key: str = Field(description="entity id, or term key for term mentions")


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
#: "to" right before a position: the word after it is a verb (searched in the few characters
#: before it, not the whole text before it)
_INFINITIVE = re.compile(r"(?<![A-Za-z])to\s+$", re.I)
_INFINITIVE_REACH = 16


def surface_pattern(surface: str) -> str:
    """A regex for a surface form: spacing-tolerant, word-bounded on Latin ends, case-insensitive.

    >>> bool(re.search(surface_pattern("tensor flow"), "Use TensorFlow now", re.I))
    True
    >>> bool(re.search(surface_pattern("TF"), "TFLite", re.I))
    False
    >>> [bool(re.search(surface_pattern("A100"), t)) for t in ["only A100s", "A1000", "A100x"]]
    [True, False, False]
    """
    parts = [re.escape(p) for p in re.split(r"\s+", surface.strip()) if p]
    body = r"\s*".join(parts)
    if re.match(r"[A-Za-z0-9]", surface):
        body = r"(?<![A-Za-z0-9_])" + body
    if re.search(r"[A-Za-z]$", surface):
        body += r"(?:s|es)?(?![A-Za-z0-9_])"  # "NVIDIA GPUs" names "NVIDIA GPU"
    elif re.search(r"[0-9]$", surface):
        body += r"s?(?![A-Za-z0-9_])"  # "A100s" names "A100"
    return body


def _longest_first(surfaces: set[str]) -> list[str]:
    """Longest first, ties in code-point order: "XLA 编译" and "XLA编译器" both match at the
    start of "XLA编译器", and which one wins must not depend on the order of a set (it changes
    with each process's hash seed).

    >>> _longest_first({"XLA编译器", "XLA 编译", "XLA"})
    ['XLA 编译', 'XLA编译器', 'XLA']
    """
    return sorted(surfaces, key=lambda s: (-len(s), s))


def as_verb(text: str, start: int, surface: str) -> bool:
    """Whether a name that is also an English verb (`LexiconEntry.verb`), found at `start`,
    is written as the verb: in lower case, right after "to".

    >>> as_verb("a cache meant to accelerate lookups", 17, "accelerate")
    True
    >>> as_verb("install accelerate", 8, "accelerate"), as_verb("to Accelerate", 3, "Accelerate")
    (False, False)
    """
    reach = max(0, start - _INFINITIVE_REACH)
    return surface.islower() and _INFINITIVE.search(text, reach, start) is not None


class Lexicon:
    """Surface-form lookup and mention finding over entities and terms."""

    def __init__(self, files: Iterable[LexiconFile]) -> None:
        self.entries: dict[str, LexiconEntry] = {}
        self.terms: dict[str, list[str]] = {}
        self.patterns: list[tuple[re.Pattern[str], NodeType]] = []
        self._in_text: list[str] = []
        for file in files:
            for item in file.patterns:
                if item.in_text:
                    self._in_text.append(item.pattern)
                try:
                    self.patterns.append((re.compile(item.pattern, re.I), item.type))
                except re.error as err:
                    raise StoreError(f"lexicon pattern {item.pattern!r} is invalid: {err}") from err
            for entry in file.entities:
                self._add_entry(entry)
            for key, surfaces in file.terms.items():
                self.terms.setdefault(key, [])
                self.terms[key].extend(s for s in surfaces if s not in self.terms[key])
        self._by_surface: dict[str, LexiconEntry] = {}
        for entry in self.entries.values():
            for surface in entry.surfaces:
                self._by_surface.setdefault(normalize_name(surface), entry)

    def _add_entry(self, entry: LexiconEntry) -> None:
        known = self.entries.get(entry.id)
        if known is None:
            self.entries[entry.id] = entry.model_copy(deep=True)
        else:
            known.aliases.extend(a for a in entry.aliases if a not in known.aliases)
            known.verb = known.verb or entry.verb

    @classmethod
    def default(cls, extra: Iterable[Path] = ()) -> Lexicon:
        """The bundled vocabulary, extended by the user's files (later files add aliases, and
        may mark a known name as a verb)."""
        text = resources.files("kg").joinpath("data/lexicon.json").read_text(encoding="utf-8")
        files = [LexiconFile.model_validate_json(text)]
        for path in extra:
            try:
                files.append(LexiconFile.model_validate(json.loads(path.read_text("utf-8"))))
            except (OSError, ValueError) as err:
                raise StoreError(
                    f"lexicon file {path} is unreadable ({err}); fix it or drop --lexicon"
                ) from err
        return cls(files)

    @cached_property
    def verbs(self) -> frozenset[str]:
        """The ids of the entries whose name is also an English verb (`LexiconEntry.verb`)."""
        return frozenset(key for key, entry in self.entries.items() if entry.verb)

    def lookup(self, surface: str) -> LexiconEntry | None:
        """The entry a surface form names, ignoring case, spacing and dashes.

        >>> Lexicon.default().lookup("英伟达显卡").name
        'NVIDIA GPU'
        """
        return self._by_surface.get(normalize_name(surface))

    @cached_property
    def _entity_regex(self) -> re.Pattern[str]:
        surfaces = _longest_first(
            {s for e in self.entries.values() for s in e.surfaces if len(normalize_name(s)) > 1}
        )
        # ASCII case is folded on both sides (positions kept): far cheaper than re.IGNORECASE;
        # one pass over the text, not one try per surface at each position (`kg.patterns`)
        return one_pass_pattern([surface_pattern(s.translate(_ASCII_LOWER)) for s in surfaces])

    @cached_property
    def _term_regex(self) -> tuple[re.Pattern[str], dict[str, list[str]]]:
        by_surface: dict[str, list[str]] = {}
        for key, surfaces in self.terms.items():
            for surface in surfaces:
                by_surface.setdefault(normalize_name(surface), []).append(key)
        ordered = _longest_first({s for ss in self.terms.values() for s in ss})
        pattern = one_pass_pattern([surface_pattern(s.translate(_ASCII_LOWER)) for s in ordered])
        return pattern, by_surface

    def entity_mentions(self, text: str) -> list[Mention]:
        """Non-overlapping entity mentions, longest surface first at each position. A name
        that is also an English verb (`LexiconEntry.verb`), written in lower case after "to",
        is the verb.

        >>> [m.key for m in Lexicon.default().entity_mentions("PyTorch 导出 ONNX 到 TensorRT")]
        ['framework:pytorch', 'format:onnx', 'inference-engine:tensorrt']
        >>> [m.surface for m in Lexicon.default().entity_mentions(
        ...     "Use accelerate or Accelerate to accelerate sorting, not to Accelerate.")]
        ['accelerate', 'Accelerate', 'Accelerate']
        """
        mentions = []
        for match in self._entity_regex.finditer(text.translate(_ASCII_LOWER)):
            surface = text[match.start() : match.end()]
            entry = self.lookup(surface)
            if entry is None and surface[-1:] == "s":  # a plural the pattern allowed
                entry = self.lookup(surface[:-1]) or self.lookup(surface[:-2])
            if entry is not None and not (entry.verb and as_verb(text, match.start(), surface)):
                mentions.append(
                    Mention(start=match.start(), end=match.end(), surface=surface, key=entry.id)
                )
        return mentions

    def term_keys(self, text: str) -> set[str]:
        """Thesaurus keys mentioned in a text.

        >>> sorted(Lexicon.default().term_keys("复现论文"))
        ['reproduce', 'research']
        """
        pattern, by_surface = self._term_regex
        keys: set[str] = set()
        for match in pattern.finditer(text.translate(_ASCII_LOWER)):
            keys.update(by_surface.get(normalize_name(match.group(0)), []))
        return keys

    def pattern_type(self, name: str) -> NodeType | None:
        """The type of a name that matches one of the lexicon's name families, if any.

        >>> Lexicon.default().pattern_type("RTX 4090")
        <NodeType.HARDWARE: 'Hardware'>
        """
        for pattern, node_type in self.patterns:
            if pattern.fullmatch(name.strip()):
                return node_type
        return None

    @cached_property
    def _family_regex(self) -> re.Pattern[str] | None:
        """The name families found in running text, as one word-bounded pattern."""
        if not self._in_text:
            return None
        body = "|".join(f"(?:{p})" for p in self._in_text)
        return re.compile(rf"(?<![\w.\-/])(?:{body})(?![\w\-])", re.I)

    def family_names(self, text: str) -> list[tuple[str, NodeType]]:
        """The names of a text that a name family found in running text (`in_text`) types,
        in text order.

        >>> Lexicon.default().family_names("Runs on AVX2 CPUs and Blackwell GPUs like B200")
        [('AVX2', <NodeType.PLATFORM: 'Platform'>), ('Blackwell', <NodeType.HARDWARE: 'Hardware'>)]
        """
        regex = self._family_regex
        if regex is None:
            return []
        found = []
        for match in regex.finditer(text):
            node_type = self.pattern_type(match.group(0))
            if node_type is not None:
                found.append((match.group(0), node_type))
        return found

    def all_surfaces(self) -> list[str]:
        """Every entity surface form (for word segmentation dictionaries)."""
        return sorted({s for e in self.entries.values() for s in e.surfaces})
