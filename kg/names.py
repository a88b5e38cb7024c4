"""Find names in text: longest first, non-overlapping, word-bounded, in one pass per case mode.

`SurfaceMatcher` takes (surface, key, case_sensitive) triples, as a corpus linker collects them
from the lexicon and from the documents: a surface written like an ordinary capitalised word
("Candle") is matched only as written, others in any case. Each mode is one `one_pass_pattern`
over all its surfaces, so the cost grows with the text, hardly with the number of names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from kg.lexicon import Mention, surface_pattern
from kg.patterns import one_pass_pattern
from kg.schema import normalize_name

__all__ = ["SurfaceMatcher", "folded_surface_pattern"]


def folded_surface_pattern(surface: str) -> str:
    """`surface_pattern` for lower-cased text.

    >>> folded_surface_pattern("vLLM")
    '(?<![a-za-z0-9_])vllm(?:s|es)?(?![a-za-z0-9_])'
    """
    return surface_pattern(surface).lower()


class SurfaceMatcher:
    """Names in a text, each resolved to its key: longest surface first where two overlap.

    Surfaces shorter than two characters (normalised) are left out. Case-insensitive ones are
    matched by `folded_pattern(surface)` in the lower-cased text, case-sensitive ones by
    `exact_pattern(surface)` in the text as written. A match resolves to the key of its
    normalised form (a case-sensitive one first to the key of its exact spelling), or of that
    form without a plural `s`/`es`; the first of several surfaces with one form keeps it.

    >>> matcher = SurfaceMatcher([("PyTorch", "pt", False), ("Candle", "candle", True)])
    >>> [(m.surface, m.key) for m in matcher.find("pytorch and Candle; a candle")]
    [('pytorch', 'pt'), ('Candle', 'candle')]
    """

    def __init__(
        self,
        surfaces: Iterable[tuple[str, str, bool]],
        *,
        folded_pattern: Callable[[str], str] = folded_surface_pattern,
        exact_pattern: Callable[[str], str] = surface_pattern,
    ) -> None:
        unique = {(s.strip(), k, cs) for s, k, cs in surfaces if len(normalize_name(s)) >= 2}
        ordered = sorted(unique, key=lambda t: (-len(t[0]), t[0], t[1]))
        self._keys: dict[str, str] = {}
        folded, exact = [], []
        for surface, key, case_sensitive in ordered:
            self._keys.setdefault(normalize_name(surface), key)
            if case_sensitive:
                self._keys.setdefault("=" + surface, key)
                exact.append(exact_pattern(surface))
            else:
                folded.append(folded_pattern(surface))
        self._folded = one_pass_pattern(folded)
        self._exact = one_pass_pattern(exact)

    def find(self, text: str) -> list[Mention]:
        """Non-overlapping mentions in text order, the longer where two start together."""
        found = [
            *self._matches(self._folded, text.lower(), text, exact=False),
            *self._matches(self._exact, text, text, exact=True),
        ]
        found.sort(key=lambda m: (m.start, -(m.end - m.start)))
        kept: list[Mention] = []
        for mention in found:
            if not kept or mention.start >= kept[-1].end:
                kept.append(mention)
        return kept

    def _matches(
        self, pattern: re.Pattern[str], searched: str, text: str, *, exact: bool
    ) -> Iterator[Mention]:
        for match in pattern.finditer(searched):
            start, end = match.span()
            key = self._resolve(text[start:end], exact=exact)
            if key is not None:
                yield Mention(start=start, end=end, surface=match.group(0), key=key)

    def _resolve(self, surface: str, *, exact: bool) -> str | None:
        if exact and "=" + surface in self._keys:
            return self._keys["=" + surface]
        norm = normalize_name(surface)
        key = self._keys.get(norm)
        if key is None and norm.endswith("s"):
            key = self._keys.get(norm[:-1]) or self._keys.get(norm[:-2])
        return key
