"""BM25 lexical index over chunk texts, with jieba segmentation for Chinese.

English is lowercased and technical tokens stay whole (`torch.compile`, `w&b`, `vllm`, `c++`);
their alphanumeric parts are indexed too so `torch compile` still matches. Chinese runs are cut
with jieba's search mode; `add_terms` teaches jieba entity names so they segment as one token.
The index is plain arrays (`to_state`/`from_state`); the store module writes them.

jieba's own start-up reads its whole prefix dictionary (half a million entries, 0.5-3 s). Here
its default tokenizer instead reads a sorted-array copy of that dictionary (built once per jieba
version under the kgqa cache directory, `$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa` or
`~/.cache/kgqa`) and looks up only the substrings of the texts it cuts: the same entries and the
same total, so the same segmentation, at a fraction of the cost for a one-question process.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from ingest.cache import cache_dir, save_arrays
from kg.errors import StoreError

__all__ = [
    "LEXICAL_STATE_VERSION",
    "JiebaDictionary",
    "LexicalIndex",
    "LexicalState",
    "add_jieba_terms",
    "jieba_dictionary_path",
    "tokenize",
]

LEXICAL_STATE_VERSION = 1

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# An ASCII technical token: letters/digits joined by . _ - + & / # (trailing + and # kept: c++, c#).
_TOKEN = re.compile(rf"[{_CJK}]+|[A-Za-z0-9]+(?:[._\-&/+#][A-Za-z0-9]+)*[+#]*")
_PART = re.compile(r"[a-z0-9]+")
_HAS_CJK = re.compile(f"[{_CJK}]")
# Function words that carry no retrieval signal (jieba's search mode emits them on their own).
_CJK_STOPWORDS = frozenset("的了是在和与及或也都就而等把被对从到为以于之其这那个吗呢啊")

_DICT_FORMAT = 1  # layout of the cached dictionary file; part of its name
_ABSENT = -1  # memo value of a string that is not in the dictionary
_PREFETCH = 4  # `prefetch` looks up every substring up to this many characters in one batch


def jieba_dictionary_path() -> Path | None:
    """Where the array copy of jieba's default dictionary lives (None: jieba has no dict file).

    The name carries jieba's version and the dictionary file's size and mtime, so an upgraded
    jieba gets a fresh copy."""
    import jieba

    source = Path(jieba.__file__).with_name(jieba.DEFAULT_DICT_NAME)
    try:
        info = source.stat()
    except OSError:
        return None
    stamp = f"{jieba.__version__}-{info.st_size}-{info.st_mtime_ns}"
    return cache_dir() / f"jieba-dict-v{_DICT_FORMAT}-{stamp}.npz"


def _write_dictionary(path: Path) -> None:
    """Parse jieba's dictionary file as jieba does and save it as sorted arrays (atomically)."""
    import jieba

    reader = jieba.Tokenizer()
    freq, total = reader.gen_pfdict(reader.get_dict_file())
    by_length: dict[int, list[tuple[bytes, int]]] = {}
    for word, count in freq.items():
        key = word.encode("utf-8")
        by_length.setdefault(len(key), []).append((key, count))
    arrays: dict[str, Any] = {"total": np.array(total, dtype=np.int64)}
    for length, pairs in by_length.items():
        pairs.sort()
        arrays[f"w{length}"] = np.array([k for k, _ in pairs], dtype=f"S{length}")
        arrays[f"f{length}"] = np.array([c for _, c in pairs], dtype=np.int64)
    save_arrays(path, arrays)


class JiebaDictionary:
    """jieba's prefix dictionary (word -> frequency; every prefix of a word -> 0 if not a word)
    read from sorted per-length arrays on demand; answers `in`, `[]`, `get` and `[]=` as the dict
    jieba would have built does. Lookups are memoised; words added at run time live in the memo.

    >>> words = np.array([b"ab", b"ac"], dtype="S2")
    >>> d = JiebaDictionary({"total": np.array(7), "w2": words, "f2": np.array([0, 5])})
    >>> d.total, "ab" in d, d["ab"], d.get("ac"), "x" in d, d.get("x", 1)
    (7, True, 0, 5, False, 1)
    >>> d["x"] = 3
    >>> d["x"], "x" in d
    (3, True)
    """

    def __init__(self, arrays: Any) -> None:
        self.total = int(arrays["total"])
        self._words: dict[int, npt.NDArray[np.bytes_]] = {}
        self._freqs: dict[int, npt.NDArray[np.int64]] = {}
        for name in arrays:
            if name.startswith("w"):
                self._words[int(name[1:])] = arrays[name]
                self._freqs[int(name[1:])] = arrays[f"f{name[1:]}"]
        self._known: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> JiebaDictionary:
        """Read a file written for this jieba version."""
        with np.load(path, allow_pickle=False) as arrays:
            return cls({name: arrays[name] for name in arrays.files})

    def _search(self, key: str) -> int:
        raw = key.encode("utf-8", "surrogatepass")
        words = self._words.get(len(raw))
        if words is None or not raw or b"\0" in raw:
            return _ABSENT
        i = int(np.searchsorted(words, raw))
        return int(self._freqs[len(raw)][i]) if i < len(words) and words[i] == raw else _ABSENT

    def _lookup(self, key: str) -> int:
        value = self._known.get(key)
        if value is None:
            value = self._known.setdefault(key, self._search(key))
        return value

    def prefetch(self, text: str) -> None:
        """Look up every substring of `text` up to a few characters in one vectorised batch."""
        wanted = {
            text[i : i + n] for n in range(1, _PREFETCH + 1) for i in range(len(text) - n + 1)
        }
        by_length: dict[int, list[tuple[str, bytes]]] = {}
        for key in wanted:
            if key not in self._known:
                raw = key.encode("utf-8", "surrogatepass")
                by_length.setdefault(len(raw), []).append((key, raw))
        found: dict[str, int] = {}
        for length, pairs in by_length.items():
            words = self._words.get(length)
            if words is None or not len(words):
                found.update((key, _ABSENT) for key, _raw in pairs)
                continue
            probes = np.array([raw for _key, raw in pairs], dtype=f"S{length}")
            at = np.minimum(np.searchsorted(words, probes), len(words) - 1)
            hit = words[at] == probes
            counts = self._freqs[length][at]
            for (key, raw), ok, count in zip(pairs, hit.tolist(), counts.tolist(), strict=True):
                found[key] = count if ok and b"\0" not in raw else _ABSENT
        with self._lock:  # words added meanwhile (`[]=`) win over what the arrays say
            for key, value in found.items():
                self._known.setdefault(key, value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup(key) != _ABSENT

    def __getitem__(self, key: str) -> int:
        value = self._lookup(key)
        if value == _ABSENT:
            raise KeyError(key)
        return value

    def get(self, key: str, default: int | None = None) -> int | None:
        """The frequency of `key` (0 for a mere prefix), or `default`."""
        value = self._lookup(key)
        return default if value == _ABSENT else value

    def __setitem__(self, key: str, value: int) -> None:
        with self._lock:
            self._known[key] = int(value)


def _open_dictionary() -> JiebaDictionary | None:
    """The array dictionary, built first if missing; None where it cannot be read or written."""
    try:
        path = jieba_dictionary_path()
        if path is None:
            return None
        if not path.is_file():
            _write_dictionary(path)
        return JiebaDictionary.load(path)
    except (OSError, ValueError, KeyError):
        return None


@cache
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(60)  # silence "Building prefix dict..." on stderr
    tokenizer = jieba.dt
    with tokenizer.lock:
        if not tokenizer.initialized and tokenizer.dictionary == jieba.DEFAULT_DICT:
            dictionary = _open_dictionary()
            if dictionary is not None:
                tokenizer.FREQ = dictionary
                tokenizer.total = dictionary.total
                tokenizer.initialized = True
    return jieba


def add_jieba_terms(terms: Iterable[str]) -> None:
    """Teach jieba's (process-wide) dictionary these words so they segment as one token."""
    jieba = _jieba()
    for term in terms:
        if _HAS_CJK.search(term):
            jieba.add_word(term, freq=2_000_000)
    _cut.cache_clear()  # segmentation may have changed


@lru_cache(maxsize=65536)
def _cut(piece: str) -> tuple[str, ...]:
    """jieba's search-mode cut of one CJK run, stopwords dropped (memoised: chunk sentences and
    quotes are cut again for every question)."""
    jieba = _jieba()
    if isinstance(jieba.dt.FREQ, JiebaDictionary):
        jieba.dt.FREQ.prefetch(piece)
    return tuple(t for t in jieba.cut_for_search(piece, HMM=True) if t not in _CJK_STOPWORDS)


def tokenize(text: str) -> list[str]:
    """Lexical tokens of mixed Chinese/English text.

    >>> tokenize("用 torch.compile 和 W&B 监控 vLLM")
    ['用', 'torch.compile', 'torch', 'compile', 'w&b', 'w', 'b', '监控', 'vllm']
    """
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if not piece[0].isascii():
            tokens.extend(_cut(piece))
            continue
        token = piece.lower()
        tokens.append(token)
        parts = _PART.findall(token)
        if len(parts) > 1:
            tokens.extend(parts)
    return tokens


class LexicalState(BaseModel):
    """A JSON-able BM25 index: term-major postings (CSR) plus per-document lengths."""

    version: int = LEXICAL_STATE_VERSION
    k1: float
    b: float
    ids: list[str]
    doc_len: list[int]
    vocab: list[str]
    indptr: list[int] = Field(description="postings of vocab[t] are [indptr[t], indptr[t+1])")
    doc_index: list[int]
    term_freq: list[int]
    terms: list[str] = Field(default_factory=list, description="user dictionary for jieba")


class LexicalIndex:
    """Okapi BM25 over tokenised texts, implemented with numpy postings."""

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.terms: list[str] = []
        self.ids: list[str] = []
        self._vocab: dict[str, int] = {}
        self._doc_len = np.zeros(0, dtype=np.float32)
        self._indptr = np.zeros(1, dtype=np.int64)
        self._doc_index = np.zeros(0, dtype=np.int32)
        self._term_freq = np.zeros(0, dtype=np.float32)
        self._idf = np.zeros(0, dtype=np.float32)

    def add_terms(self, terms: list[str]) -> None:
        """Add entity names to the segmentation dictionary. Call before `build` (texts already
        indexed keep their old segmentation); the terms are saved with the state."""
        new = [t for t in dict.fromkeys(terms) if t and t not in self.terms]
        self.terms.extend(new)
        add_jieba_terms(new)

    def build(self, ids: list[str], texts: list[str]) -> None:
        """Index `texts` under `ids` (replaces any earlier contents)."""
        if len(ids) != len(texts) or len(set(ids)) != len(ids):
            raise ValueError("ids must be unique and as many as texts")
        counts = [Counter(tokenize(text)) for text in texts]
        vocab = sorted({term for c in counts for term in c})
        self._vocab = {term: i for i, term in enumerate(vocab)}
        postings: list[list[tuple[int, int]]] = [[] for _ in vocab]
        for doc, counter in enumerate(counts):
            for term, tf in counter.items():
                postings[self._vocab[term]].append((doc, tf))
        self.ids = list(ids)
        self._doc_len = np.array([sum(c.values()) for c in counts], dtype=np.float32)
        lengths = np.array([len(p) for p in postings], dtype=np.int64)
        self._indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = [pair for plist in postings for pair in plist]
        self._doc_index = np.array([d for d, _ in flat], dtype=np.int32)
        self._term_freq = np.array([tf for _, tf in flat], dtype=np.float32)
        self._update_idf()

    def _update_idf(self) -> None:
        n = len(self.ids)
        df = np.diff(self._indptr).astype(np.float32)
        self._idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The `k` best (id, BM25 score) pairs, best first; only documents sharing a term."""
        if not self.ids or k <= 0:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        avgdl = float(self._doc_len.mean()) or 1.0
        norm = self.k1 * (1.0 - self.b + self.b * self._doc_len / avgdl)
        for term, qtf in Counter(tokenize(query)).items():
            t = self._vocab.get(term)
            if t is None:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._doc_index[lo:hi], self._term_freq[lo:hi]
            scores[docs] += qtf * self._idf[t] * tf * (self.k1 + 1.0) / (tf + norm[docs])
        hits = np.flatnonzero(scores > 0.0)
        order = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [(self.ids[i], float(scores[i])) for i in order]

    def search_weighted(self, weights: dict[str, float], k: int = 10) -> list[tuple[str, float]]:
        """`search` with a weight per query token (tokens as `tokenize` makes them)."""
        if not self.ids or k <= 0:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        avgdl = float(self._doc_len.mean()) or 1.0
        norm = self.k1 * (1.0 - self.b + self.b * self._doc_len / avgdl)
        for term, weight in weights.items():
            t = self._vocab.get(term)
            if t is None or weight <= 0:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._doc_index[lo:hi], self._term_freq[lo:hi]
            scores[docs] += weight * self._idf[t] * tf * (self.k1 + 1.0) / (tf + norm[docs])
        hits = np.flatnonzero(scores > 0.0)
        order = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [(self.ids[i], float(scores[i])) for i in order]

    def idf(self, term: str) -> float:
        """The inverse document frequency of a token (0 when no document has it)."""
        t = self._vocab.get(term)
        return float(self._idf[t]) if t is not None else 0.0

    def to_state(self) -> LexicalState:
        """The index as a JSON-able model."""
        vocab = sorted(self._vocab, key=self._vocab.__getitem__)
        return LexicalState(
            k1=self.k1,
            b=self.b,
            ids=self.ids,
            doc_len=[int(x) for x in self._doc_len],
            vocab=vocab,
            indptr=self._indptr.tolist(),
            doc_index=self._doc_index.tolist(),
            term_freq=[int(x) for x in self._term_freq],
            terms=self.terms,
        )

    @classmethod
    def from_state(cls, state: LexicalState | dict[str, Any]) -> LexicalIndex:
        """Rebuild an index from `to_state()` output; raises `StoreError` if it is inconsistent."""
        if isinstance(state, dict):
            state = LexicalState.model_validate(state)
        if state.version != LEXICAL_STATE_VERSION:
            raise StoreError(
                f"lexical index version {state.version}, expected {LEXICAL_STATE_VERSION}: "
                "re-run `kgqa ingest`"
            )
        consistent = (
            len(state.indptr) == len(state.vocab) + 1
            and len(state.doc_len) == len(state.ids)
            and len(state.doc_index) == len(state.term_freq) == (state.indptr[-1])
            and all(0 <= d < len(state.ids) for d in state.doc_index)
        )
        if not consistent:
            raise StoreError("lexical index arrays are inconsistent: re-run `kgqa ingest`")
        index = cls(k1=state.k1, b=state.b)
        index.add_terms(state.terms)
        index.ids = list(state.ids)
        index._vocab = {term: i for i, term in enumerate(state.vocab)}
        index._doc_len = np.array(state.doc_len, dtype=np.float32)
        index._indptr = np.array(state.indptr, dtype=np.int64)
        index._doc_index = np.array(state.doc_index, dtype=np.int32)
        index._term_freq = np.array(state.term_freq, dtype=np.float32)
        index._update_idf()
        return index
