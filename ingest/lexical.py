"""BM25 lexical index over chunk texts, tokenized by its own `ingest.text.Tokenizer`.

English is lowercased and technical tokens stay whole (`torch.compile`, `w&b`, `vllm`, `c++`);
their alphanumeric parts are indexed too so `torch compile` still matches. Chinese runs are cut
with jieba's search mode; `add_terms` teaches the index's tokenizer entity names so they segment
as one token. The index owns that tokenizer: the answering stack tokenizes questions with it
(`LexicalIndex.tokenizer`), never with a process-wide jieba. The index is plain arrays
(`to_state`/`from_state`); the store module writes them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ingest.text import Tokenizer
from kg.errors import StoreError

__all__ = ["LEXICAL_STATE_VERSION", "LexicalIndex", "LexicalState"]

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

    def add_terms(self, terms: list[str]) -> None:
        """Add entity names to the segmentation dictionary. Call before `build` (texts already
        indexed keep their old segmentation); the terms are saved with the state."""
        new = [t for t in dict.fromkeys(terms) if t and t not in self.terms]
        self.terms.extend(new)
        self.tokenizer.add_terms(new)

    def build(self, ids: list[str], texts: list[str]) -> None:
        """Index `texts` under `ids` (replaces any earlier contents)."""
        if len(ids) != len(texts) or len(set(ids)) != len(ids):
            raise ValueError("ids must be unique and as many as texts")
        counts = [Counter(self.tokenizer.tokenize(text)) for text in texts]
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
        for term, qtf in Counter(self.tokenizer.tokenize(query)).items():
            t = self._vocab.get(term)
            if t is None:
                continue
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._doc_index[lo:hi], self._term_freq[lo:hi]
            scores[docs] += qtf * self._idf[t] * tf * (self.k1 + 1.0) / (tf + norm[docs])
        hits = np.flatnonzero(scores > 0.0)
        order = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [(self.ids[i], float(scores[i])) for i in order]

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
