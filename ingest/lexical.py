"""BM25 lexical index over chunk texts, tokenized by its own `ingest.text.Tokenizer`.

English is lowercased and technical tokens stay whole (`torch.compile`, `w&b`, `vllm`, `c++`);
their alphanumeric parts are indexed too so `torch compile` still matches. Chinese runs are cut
with jieba's search mode; `add_terms` teaches the index's tokenizer entity names so they segment
as one token. The index owns that tokenizer: the answering stack tokenizes questions with it
(`LexicalIndex.tokenizer`), never with a process-wide jieba. The index is plain arrays
(`to_state`/`from_state`); the store module writes them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from ingest.text import Tokenizer
from ingest.topk import top_k
from kg.errors import StoreError

__all__ = ["LEXICAL_STATE_VERSION", "LexicalIndex", "LexicalState"]

#: Bump when tokenization changes: a rebuild reuses the postings of an index of this version.
LEXICAL_STATE_VERSION = 1


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

    def __init__(
        self, tokenizer: Tokenizer | None = None, *, k1: float = 1.5, b: float = 0.75
    ) -> None:
        self.tokenizer = tokenizer or Tokenizer()
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
        self._by_doc: _DocTerms | None = None  # the postings by document, made on first use
        self._id_ranks: npt.NDArray[np.int64] | None = None
        # (the lengths it was made from, (k1, b), the norm): see `_length_norm`
        self._norm: tuple[Any, tuple[float, float], npt.NDArray[np.float32]] | None = None
        self._lock = threading.Lock()

    def add_terms(self, terms: list[str]) -> None:
        """Add entity names to the segmentation dictionary. Call before `build` (texts already
        indexed keep their old segmentation); the terms are saved with the state."""
        new = [t for t in dict.fromkeys(terms) if t and t not in self.terms]
        self.terms.extend(new)
        self.tokenizer.add_terms(new)

    def build(
        self,
        ids: list[str],
        texts: Sequence[str],
        *,
        reuse: tuple[LexicalState | Mapping[str, npt.NDArray[Any]], Collection[str]] | None = None,
    ) -> None:
        """Index `texts` under `ids` (replaces any earlier contents).

        `reuse` is an earlier state (or its `to_arrays`) and the ids whose texts have not changed
        since: when that index had the same terms, those documents keep its postings instead of
        being tokenized
        again (re-ingesting one changed document of a large corpus), and their texts are not
        read (`texts` may make them when asked). The index is the one a full build makes."""
        if len(ids) != len(texts) or len(set(ids)) != len(ids):
            raise ValueError("ids must be unique and as many as texts")
        earlier = _Postings.of(reuse[0]) if reuse is not None else None
        old = earlier if earlier is not None and self._can_reuse(earlier) else None
        old_at = {doc_id: at for at, doc_id in enumerate(old.ids)} if old is not None else {}
        kept = reuse[1] if reuse is not None else ()
        reused = {
            i: old_at[doc_id] for i, doc_id in enumerate(ids) if doc_id in kept and doc_id in old_at
        }
        counts = {
            i: Counter(self.tokenizer.tokenize(texts[i]))
            for i in range(len(ids))
            if i not in reused
        }
        terms = [term for counter in counts.values() for term in counter]
        docs = np.array([i for i, c in counts.items() for _ in c], dtype=np.int64)
        freqs = np.array([tf for c in counts.values() for tf in c.values()], dtype=np.float32)
        self._doc_len = np.zeros(len(ids), dtype=np.float32)
        for i, counter in counts.items():
            self._doc_len[i] = sum(counter.values())
        vocab, term_ids = sorted(set(terms)), np.zeros(0, dtype=np.int64)
        if old is not None and reused:
            old_terms, old_docs, old_freqs = _kept_postings(old, reused)
            docs, freqs = np.concatenate([docs, old_docs]), np.concatenate([freqs, old_freqs])
            # the old terms still used (in order: the sort below finds them one run) and the
            # new texts' others
            used = np.flatnonzero(np.bincount(old_terms, minlength=old.vocab_size)).tolist()
            kept_terms = [old.vocab(t) for t in used]
            known = set(kept_terms)
            vocab = sorted(kept_terms + [term for term in vocab if term not in known])
            self._vocab = {term: t for t, term in enumerate(vocab)}
            remap = np.zeros(old.vocab_size, dtype=np.int64)
            remap[used] = [self._vocab[old.vocab(t)] for t in used]
            term_ids = remap[old_terms]
            for i, at in reused.items():
                self._doc_len[i] = old.doc_len[at]
        else:
            self._vocab = {term: t for t, term in enumerate(vocab)}
        term_ids = np.concatenate([[self._vocab[term] for term in terms], term_ids]).astype(
            np.int64
        )
        # term-major, documents ascending: one key per posting (a document has one posting a
        # term), sorted stably, which merges the kept postings' sorted run in linear time
        order = np.argsort(term_ids * max(1, len(ids)) + docs, kind="stable")
        self._by_doc, self._id_ranks = None, None
        self.ids = list(ids)
        per_term = np.bincount(term_ids, minlength=len(vocab))
        self._indptr = np.concatenate([[0], np.cumsum(per_term)]).astype(np.int64)
        self._doc_index = docs[order].astype(np.int32)
        self._term_freq = freqs[order].astype(np.float32)
        self._update_idf()

    def grouped(self, groups: dict[str, list[str]]) -> LexicalIndex:
        """An index whose documents are groups of this index's documents (their term counts
        added), made from the postings without tokenizing again: a corpus's documents, or an
        entity's units, searched as one text each. A document belongs to one group at most; ids
        this index does not hold are ignored.

        >>> units = LexicalIndex()
        >>> units.build(["a1", "a2", "b1"], ["fast engine", "runs on GPUs", "slow engine"])
        >>> docs = units.grouped({"a": ["a1", "a2"], "b": ["b1"]})
        >>> docs.search("fast gpus", 2)[0][0], docs.ids
        ('a', ['a', 'b'])
        """
        out = LexicalIndex(self.tokenizer, k1=self.k1, b=self.b)
        out.terms = list(self.terms)
        names = list(groups)
        at = {doc_id: i for i, doc_id in enumerate(self.ids)}
        group_of = np.full(len(self.ids), -1, dtype=np.int64)
        for g, name in enumerate(names):
            for doc_id in groups[name]:
                if doc_id in at:
                    group_of[at[doc_id]] = g
        term_of = np.repeat(np.arange(len(self._vocab), dtype=np.int64), np.diff(self._indptr))
        group = group_of[self._doc_index]
        keep = group >= 0
        term_of, group, freq = term_of[keep], group[keep], self._term_freq[keep]
        # one posting per (term, group): counts of the group's documents added
        key = term_of * max(1, len(names)) + group
        unique, inverse = np.unique(key, return_inverse=True)
        summed = np.bincount(inverse, weights=freq).astype(np.float32)
        terms = unique // max(1, len(names))
        vocab_all = sorted(self._vocab, key=self._vocab.__getitem__)
        used = np.unique(terms)
        out._vocab = {vocab_all[t]: i for i, t in enumerate(used.tolist())}
        remap = np.zeros(len(vocab_all), dtype=np.int64)
        remap[used] = np.arange(len(used))
        new_terms = remap[terms]
        order = np.lexsort(((unique % max(1, len(names))), new_terms))
        out.ids = names
        out._indptr = np.concatenate(
            [[0], np.cumsum(np.bincount(new_terms, minlength=len(used)))]
        ).astype(np.int64)
        out._doc_index = (unique % max(1, len(names)))[order].astype(np.int32)
        out._term_freq = summed[order]
        lengths = np.zeros(len(names), dtype=np.float64)
        np.add.at(lengths, group_of[group_of >= 0], self._doc_len[group_of >= 0])
        out._doc_len = lengths.astype(np.float32)
        out._update_idf()
        return out

    def _can_reuse(self, old: _Postings) -> bool:
        """An earlier index's postings stand for an unchanged text when it tokenized as this one
        does: same state version (bumped when tokenization changes) and the same terms taught
        to the segmenter (a new Latin name teaches it nothing)."""
        learnable = Tokenizer.learnable
        return old.version == LEXICAL_STATE_VERSION and learnable(old.terms) == learnable(
            self.terms
        )

    def _update_idf(self) -> None:
        n = len(self.ids)
        df = np.diff(self._indptr).astype(np.float32)
        self._idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The `k` best (id, BM25 score) pairs, best first; only documents sharing a term."""
        if not self.ids or k <= 0:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        norm = self._length_norm()
        for term, qtf in Counter(self.tokenizer.tokenize(query)).items():
            t = self._vocab.get(term)
            if t is None:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._doc_index[lo:hi], self._term_freq[lo:hi]
            scores[docs] += qtf * self._idf[t] * tf * (self.k1 + 1.0) / (tf + norm[docs])
        order = top_k(scores, np.flatnonzero(scores > 0.0), k)
        return [(self.ids[i], float(scores[i])) for i in order]

    def search_weighted(self, weights: dict[str, float], k: int = 10) -> list[tuple[str, float]]:
        """`search` with a weight per query token (tokens as `tokenize` makes them)."""
        if not self.ids or k <= 0:
            return []
        scores = self.weighted_scores(weights)
        order = top_k(scores, np.flatnonzero(scores > 0.0), k)
        return [(self.ids[i], float(scores[i])) for i in order]

    def weighted_scores(
        self,
        weights: dict[str, float],
        twice: Mapping[str, npt.NDArray[np.int64]] | None = None,
    ) -> npt.NDArray[np.float32]:
        """The BM25 score of every document (`ids` order) for weighted query tokens. `twice`
        (a token: positions in `ids`, as `holding` gives them): the documents where that token
        counts twice (a text that says a thing as the query says it: both deny it).

        >>> index = LexicalIndex()
        >>> index.build(["a", "b"], ["fast engine", "fast runtime"])
        >>> scores = index.weighted_scores({"fast": 1.0}, {"fast": np.array([0])})
        >>> bool(scores[0] == 2 * scores[1])
        True
        """
        scores = np.zeros(len(self.ids), dtype=np.float32)
        norm = self._length_norm()
        for term, weight in weights.items():
            t = self._vocab.get(term)
            if t is None or weight <= 0:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._doc_index[lo:hi], self._term_freq[lo:hi]
            gained = weight * self._idf[t] * tf * (self.k1 + 1.0) / (tf + norm[docs])
            stressed = twice.get(term) if twice else None
            if stressed is not None:
                gained = np.where(np.isin(docs, stressed), 2 * gained, gained)
            scores[docs] += gained
        return scores

    def holding(self, term: str) -> npt.NDArray[np.int64]:
        """The positions (in `ids`) of the documents that hold a token.

        >>> index = LexicalIndex()
        >>> index.build(["a", "b"], ["fast engine", "runs on GPUs"])
        >>> index.holding("gpus").tolist(), index.holding("slow").tolist()
        ([1], [])
        """
        t = self._vocab.get(term)
        if t is None:
            return np.zeros(0, dtype=np.int64)
        return self._doc_index[self._indptr[t] : self._indptr[t + 1]].astype(np.int64)

    def _length_norm(self) -> npt.NDArray[np.float32]:
        """BM25's length normalisation of every document, `k1 * (1 - b + b * len / avglen)`:
        the same array for every query, made once per set of lengths (a search of a large
        corpus's units made it again for each of a question's ~10 searches)."""
        made = self._norm
        if made is None or made[0] is not self._doc_len or made[1] != (self.k1, self.b):
            avgdl = float(self._doc_len.mean()) or 1.0
            norm = self.k1 * (1.0 - self.b + self.b * self._doc_len / avgdl)
            made = self._norm = (self._doc_len, (self.k1, self.b), norm)
        return made[2]

    def id_ranks(self) -> npt.NDArray[np.int64]:
        """Each document's place among the ids in string order (ties between scores are broken
        by id): made on first use."""
        ranks = self._id_ranks
        if ranks is None or len(ranks) != len(self.ids):
            order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
            ranks = np.empty(len(self.ids), dtype=np.int64)
            ranks[order] = np.arange(len(self.ids), dtype=np.int64)
            self._id_ranks = ranks
        return ranks

    def terms_of(self, doc_id: str) -> frozenset[str] | None:
        """The distinct tokens of an indexed text, read from the postings (None for an id the
        index does not hold): what `tokenizer.tokenize` made of it when it was indexed.

        >>> index = LexicalIndex()
        >>> index.build(["a", "b"], ["fast engine", "runs on GPUs"])
        >>> sorted(index.terms_of("b")), index.terms_of("c")
        (['gpus', 'on', 'runs'], None)
        """
        return self._doc_terms().terms_of(doc_id)

    def position(self, doc_id: str) -> int | None:
        """Where a document is among `ids` (None for one the index does not hold).

        >>> index = LexicalIndex()
        >>> index.build(["a", "b"], ["fast engine", "runs on GPUs"])
        >>> index.position("b"), index.position("c")
        (1, None)
        """
        return self._doc_terms().at.get(doc_id)

    def _doc_terms(self) -> _DocTerms:
        by_doc = self._by_doc
        if by_doc is None:
            with self._lock:
                by_doc = self._by_doc = self._by_doc or _DocTerms(self)
        return by_doc

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
    def from_state(
        cls, state: LexicalState | dict[str, Any], *, cache_dir: Path | None = None
    ) -> LexicalIndex:
        """Rebuild an index from `to_state()` output, with a tokenizer of its own that knows the
        saved terms (`cache_dir`: where jieba's array dictionary is kept); raises `StoreError` if
        the state is inconsistent."""
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
        index = cls(Tokenizer(cache_dir=cache_dir), k1=state.k1, b=state.b)
        index.add_terms(state.terms)
        index.ids = list(state.ids)
        index._vocab = {term: i for i, term in enumerate(state.vocab)}
        index._doc_len = np.array(state.doc_len, dtype=np.float32)
        index._indptr = np.array(state.indptr, dtype=np.int64)
        index._doc_index = np.array(state.doc_index, dtype=np.int32)
        index._term_freq = np.array(state.term_freq, dtype=np.float32)
        index._update_idf()
        return index

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The index as numpy arrays (strings NUL-separated UTF-8), for the store to write in
        `.npz` form: reading it back costs milliseconds where the JSON state cost ~0.1 s."""
        vocab = sorted(self._vocab, key=self._vocab.__getitem__)
        return {
            "version": np.array([LEXICAL_STATE_VERSION], dtype=np.int64),
            "k1_b": np.array([self.k1, self.b], dtype=np.float64),
            "ids": _joined(self.ids),
            "vocab": _joined(vocab),
            "terms": _joined(self.terms),
            "doc_len": self._doc_len.astype(np.int64),
            "indptr": self._indptr.astype(np.int64),
            "doc_index": self._doc_index.astype(np.int32),
            "term_freq": self._term_freq.astype(np.int64),
        }

    @classmethod
    def from_arrays(
        cls,
        arrays: Mapping[str, npt.NDArray[Any]],
        *,
        cache_dir: Path | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> LexicalIndex:
        """Rebuild an index from `to_arrays()` output (as `from_state`); raises `StoreError` if
        the arrays are missing, of another version or inconsistent. `tokenizer`: one already
        taught the index's terms, shared (a `grouped` index's, its units' index's)."""
        try:
            version = int(arrays["version"][0])
            k1, b = (float(x) for x in arrays["k1_b"])
            ids, vocab = _split(arrays["ids"]), _split(arrays["vocab"])
            terms = _split(arrays["terms"])
            doc_len, indptr = arrays["doc_len"], arrays["indptr"]
            doc_index, term_freq = arrays["doc_index"], arrays["term_freq"]
        except (KeyError, IndexError, ValueError, UnicodeDecodeError) as err:
            raise StoreError(
                f"lexical index arrays are unreadable ({err}): re-run `kgqa ingest`"
            ) from err
        if version != LEXICAL_STATE_VERSION:
            raise StoreError(
                f"lexical index version {version}, expected {LEXICAL_STATE_VERSION}: "
                "re-run `kgqa ingest`"
            )
        consistent = (
            indptr.shape == (len(vocab) + 1,)
            and doc_len.shape == (len(ids),)
            and doc_index.shape == term_freq.shape == (int(indptr[-1]),)
            and (not len(doc_index) or (doc_index.min() >= 0 and doc_index.max() < len(ids)))
        )
        if not consistent:
            raise StoreError("lexical index arrays are inconsistent: re-run `kgqa ingest`")
        if tokenizer is None:
            index = cls(Tokenizer(cache_dir=cache_dir), k1=k1, b=b)
            index.add_terms(terms)
        else:
            index = cls(tokenizer, k1=k1, b=b)
            index.terms = terms
        index.ids = ids
        index._vocab = {term: i for i, term in enumerate(vocab)}
        index._doc_len = doc_len.astype(np.float32)
        index._indptr = indptr.astype(np.int64)
        index._doc_index = doc_index.astype(np.int32)
        index._term_freq = term_freq.astype(np.float32)
        index._update_idf()
        return index


class _DocTerms:
    """An index's postings turned document-major: each document's term ids."""

    def __init__(self, index: LexicalIndex) -> None:
        self.vocab = sorted(index._vocab, key=index._vocab.__getitem__)
        self.at = {doc_id: i for i, doc_id in enumerate(index.ids)}
        terms = np.repeat(np.arange(len(self.vocab), dtype=np.int64), np.diff(index._indptr))
        order = np.argsort(index._doc_index, kind="stable")
        self.terms = terms[order]
        counts = np.bincount(index._doc_index, minlength=len(index.ids))
        self.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def terms_of(self, doc_id: str) -> frozenset[str] | None:
        i = self.at.get(doc_id)
        if i is None:
            return None
        vocab = self.vocab
        return frozenset(vocab[t] for t in self.terms[self.indptr[i] : self.indptr[i + 1]].tolist())


def _joined(strings: list[str]) -> npt.NDArray[np.uint8]:
    """Strings as one array of UTF-8 bytes, each ended by NUL (`_split` reads them back).

    >>> _split(_joined(["vllm", "", "推理"])), _split(_joined([]))
    (['vllm', '', '推理'], [])
    """
    data = "".join(s + "\0" for s in strings).encode("utf-8")
    return np.frombuffer(data, dtype=np.uint8)


def _split(array: npt.NDArray[Any]) -> list[str]:
    """The strings `_joined` wrote."""
    return array.astype(np.uint8).tobytes().decode("utf-8").split("\0")[:-1]


@dataclass(frozen=True)
class _Postings:
    """An earlier index's postings, from its state or its arrays."""

    version: int
    terms: list[str]
    ids: list[str]
    vocab_size: int
    vocab: Callable[[int], str]
    doc_len: npt.NDArray[np.float32]
    indptr: npt.NDArray[np.int64]
    doc_index: npt.NDArray[np.int64]
    term_freq: npt.NDArray[np.float32]

    @classmethod
    def of(cls, old: LexicalState | Mapping[str, npt.NDArray[Any]]) -> _Postings:
        if isinstance(old, LexicalState):
            return cls(
                old.version,
                old.terms,
                old.ids,
                len(old.vocab),
                old.vocab.__getitem__,
                np.asarray(old.doc_len, dtype=np.float32),
                np.asarray(old.indptr, dtype=np.int64),
                np.asarray(old.doc_index, dtype=np.int64),
                np.asarray(old.term_freq, dtype=np.float32),
            )
        vocab = _split(old["vocab"])
        return cls(
            int(old["version"][0]),
            _split(old["terms"]),
            _split(old["ids"]),
            len(vocab),
            vocab.__getitem__,
            old["doc_len"].astype(np.float32),
            old["indptr"].astype(np.int64),
            old["doc_index"].astype(np.int64),
            old["term_freq"].astype(np.float32),
        )


def _kept_postings(
    old: _Postings, reused: dict[int, int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The postings of `old` for the documents kept (`reused`: new index -> old index), with
    their new document index: (term ids in `old`'s vocabulary, documents, term frequencies)."""
    new_of_old = np.full(len(old.ids), -1, dtype=np.int64)
    for i, at in reused.items():
        new_of_old[at] = i
    terms = np.repeat(np.arange(old.vocab_size, dtype=np.int64), np.diff(old.indptr))
    docs = new_of_old[old.doc_index]
    keep = docs >= 0
    return terms[keep], docs[keep], old.term_freq[keep]
