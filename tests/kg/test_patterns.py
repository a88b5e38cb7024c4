"""One pass for many names (`kg.patterns`, `ingest.names`): the same matches as one alternation of
the same patterns, on every line of the bundled and real-docs corpora; the lexicon's mentions and
terms, and a name matcher with case-sensitive names, as the joined patterns find them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from needs import real_docs

from ingest.names import NameMatcher, flex_pattern
from kg.lexicon import Lexicon, Mention, _longest_first, as_verb, surface_pattern
from kg.patterns import one_pass_pattern, split_head
from kg.schema import normalize_name

ROOT = Path(__file__).resolve().parents[2]
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lines(root: Path) -> list[str]:
    return [
        line
        for path in sorted(root.iterdir())
        if path.suffix in (".md", ".txt")
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    found = _lines(ROOT / "corpus") + _lines(real_docs())
    assert len(found) > 5000
    return found


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def _spans(pattern: re.Pattern[str], texts: Iterable[str]) -> list[list[tuple[int, int, str]]]:
    return [[(m.start(), m.end(), m.group(0)) for m in pattern.finditer(t)] for t in texts]


def _tolerant_pattern(surface: str) -> str:
    """A name pattern like the corpus linker's: "FlashAttention" also as "Flash-Attention"."""
    body = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])", "\0", surface.strip())
    parts = [re.escape(p) for p in re.split(r"[\s\-_\0]+", body) if p]
    pattern = r"[\s\-_]?".join(parts)
    if re.match(r"[A-Za-z0-9]", surface):
        pattern = r"(?<![A-Za-z0-9_])" + pattern
    return pattern + r"(?![A-Za-z0-9_]|\.\d)"


def test_one_pass_finds_what_the_joined_patterns_find(lexicon: Lexicon, lines: list[str]) -> None:
    surfaces = _longest_first({s for e in lexicon.entries.values() for s in e.surfaces})
    folded = [line.lower() for line in lines]
    for make in (lambda s: surface_pattern(s.lower()), lambda s: _tolerant_pattern(s).lower()):
        patterns = [make(s) for s in surfaces if len(s) > 1]
        joined = re.compile("|".join(patterns))
        found = _spans(one_pass_pattern(patterns), folded)
        assert sum(map(len, found)) > 2000
        assert found == _spans(joined, folded)


@pytest.mark.parametrize(
    ("patterns", "text"),
    [
        ([r"(?<![a-z])ab", r"(?<![a-z])a", "b"], "ab xab ab"),  # look-behind at the text start
        ([r"(?<=x)ab", r"(?<=\s)ab", "a"], "ab xab ab"),  # positive look-behinds
        ([r"\-x", "-xy", r"(?<![a-z])-xyz"], "-xyz a-xyz"),  # one first character, two spellings
        ([r"\.net", "c", r"c\+\+"], "c++ and .net"),
        (["ab|c", "a"], "abc"),  # an alternation itself: the joined pattern is used
        ([r"\d+", "1"], "a 123"),
    ],
)
def test_one_pass_keeps_order_and_look_behinds(patterns: list[str], text: str) -> None:
    assert _spans(one_pass_pattern(patterns), [text]) == _spans(
        re.compile("|".join(patterns)), [text]
    )


def test_patterns_it_cannot_split_are_joined_as_they_are() -> None:
    assert [split_head(p) for p in ("ab|c", r"\d1", "a*b", "(?:x)")] == [None] * 4
    assert one_pass_pattern(["ab|c", "x"]).pattern == "ab|c|x"
    assert one_pass_pattern([]).search("anything") is None


class _JoinedLexicon:
    """`Lexicon.entity_mentions` and `term_keys` as they were: one plain alternation each."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        entity_surfaces = _longest_first(
            {s for e in lexicon.entries.values() for s in e.surfaces if len(normalize_name(s)) > 1}
        )
        self.entities = self._joined(entity_surfaces)
        self.by_surface: dict[str, list[str]] = {}
        for key, surfaces in lexicon.terms.items():
            for surface in surfaces:
                self.by_surface.setdefault(normalize_name(surface), []).append(key)
        self.terms = self._joined(_longest_first({s for ss in lexicon.terms.values() for s in ss}))

    @staticmethod
    def _joined(surfaces: list[str]) -> re.Pattern[str]:
        return re.compile("|".join(surface_pattern(s.translate(ASCII_LOWER)) for s in surfaces))

    def entity_mentions(self, text: str) -> list[Mention]:
        mentions = []
        for match in self.entities.finditer(text.translate(ASCII_LOWER)):
            surface = text[match.start() : match.end()]
            entry = self.lexicon.lookup(surface)
            if entry is None and surface[-1:] == "s":
                entry = self.lexicon.lookup(surface[:-1]) or self.lexicon.lookup(surface[:-2])
            # the verb rule is the lexicon's, not its pattern's: the reference applies it too
            if entry is not None and not (entry.verb and as_verb(text, match.start(), surface)):
                start, end = match.span()
                mentions.append(Mention(start=start, end=end, surface=surface, key=entry.id))
        return mentions

    def term_keys(self, text: str) -> set[str]:
        keys: set[str] = set()
        for match in self.terms.finditer(text.translate(ASCII_LOWER)):
            keys.update(self.by_surface.get(normalize_name(match.group(0)), []))
        return keys


def test_lexicon_mentions_and_terms_are_the_joined_patterns(
    lexicon: Lexicon, lines: list[str]
) -> None:
    reference = _JoinedLexicon(lexicon)
    mentions = [lexicon.entity_mentions(line) for line in lines]
    assert sum(map(len, mentions)) > 2000
    assert mentions == [reference.entity_mentions(line) for line in lines]
    terms = [lexicon.term_keys(line) for line in lines]
    assert sum(map(len, terms)) > 500
    assert terms == [reference.term_keys(line) for line in lines]


class _JoinedMatcher:
    """`NameMatcher` with one plain alternation per case mode (the reference)."""

    def __init__(self, surfaces: list[tuple[str, str, bool]]) -> None:
        unique = {(s.strip(), k, cs) for s, k, cs in surfaces if len(normalize_name(s)) >= 2}
        ordered = sorted(unique, key=lambda t: (-len(t[0]), t[0], t[1]))
        self.keys: dict[str, str] = {}
        folded_parts, exact_parts = [], []
        for surface, key, case_sensitive in ordered:
            self.keys.setdefault(normalize_name(surface), key)
            if case_sensitive:
                self.keys.setdefault("=" + surface, key)
                exact_parts.append(surface_pattern(surface))
            else:
                folded_parts.append(flex_pattern(surface).translate(ASCII_LOWER))
        self.folded = re.compile("|".join(folded_parts) or "(?!)")
        self.exact = re.compile("|".join(exact_parts) or "(?!)")

    def find(self, text: str) -> list[tuple[int, int, str, str]]:
        found = []
        for pattern, searched, exact in (
            (self.folded, text.translate(ASCII_LOWER), False),
            (self.exact, text, True),
        ):
            for match in pattern.finditer(searched):
                surface = text[match.start() : match.end()]
                key = self.keys.get("=" + surface) if exact else None
                norm = normalize_name(surface)
                key = key or self.keys.get(norm)
                if key is None and norm.endswith("s"):
                    key = self.keys.get(norm[:-1]) or self.keys.get(norm[:-2])
                if key is not None:
                    found.append((match.start(), match.end(), match.group(0), key))
        found.sort(key=lambda m: (m[0], -(m[1] - m[0])))
        kept: list[tuple[int, int, str, str]] = []
        for mention in found:
            if not kept or mention[0] >= kept[-1][1]:
                kept.append(mention)
        return kept


def test_name_matcher_is_the_joined_matcher(lexicon: Lexicon, lines: list[str]) -> None:
    # names written like ordinary capitalised words are matched only as written
    surfaces = [
        (surface, entry.id, surface[:1].isupper() and surface[1:].islower())
        for entry in lexicon.entries.values()
        for surface in entry.surfaces
    ]
    assert any(cs for _s, _k, cs in surfaces) and not all(cs for _s, _k, cs in surfaces)
    matcher = NameMatcher(surfaces)
    reference = _JoinedMatcher(surfaces)
    found = [[(m.start, m.end, m.surface, m.key) for m in matcher.find(t)] for t in lines]
    assert sum(map(len, found)) > 2000
    assert found == [reference.find(t) for t in lines]
