"""Text helpers shared by chunking, structure parsing, retrieval and the composer: the one sentence
splitter, the lexical `Tokenizer` (jieba for Chinese), and the stopword vocabulary.

A `Tokenizer` owns its jieba segmenter and the words taught to it: two tokenizers never share
state, so what one store's lexical index taught jieba cannot change how another tokenizes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ingest.jieba_dict import JiebaDictionary, open_dictionary
from kg import cues

__all__ = [
    "CJK_PARTICLES",
    "COLONS",
    "FUNCTION_BIGRAMS",
    "QUESTION_STOPWORDS",
    "Tokenizer",
    "add_trimmed",
    "cjk_bigrams",
    "split_sentences",
    "strip_span",
]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: what ends a line that announces what follows it ("Pick a backend:", "支持以下框架：")
COLONS = (":", "：")
# An ASCII technical token: letters/digits joined by . _ - + & / # (trailing + and # kept: c++, c#).
_TOKEN = re.compile(rf"[{_CJK}]+|[A-Za-z0-9]+(?:[._\-&/+#][A-Za-z0-9]+)*[+#]*")
_PART = re.compile(r"[a-z0-9]+")
_HAS_CJK = re.compile(f"[{_CJK}]")
_ABBREV = set(cues.words("words.abbreviation", "en"))
_SENTENCE_END = re.compile(r"[。！？；!?]+|;(?=\s)|\.(?=\s|$)|…+|\n")
_CLOSERS = "”’\"'）)」』】]"
#: How often a word taught to jieba (`Tokenizer.add_terms`) counts: it wins over its parts.
_TERM_FREQ = 2_000_000

# -- stopwords ----------------------------------------------------------------------------------
#: Single CJK characters that carry no retrieval signal; `Tokenizer` drops them (jieba's search
#: mode emits them on their own).
CJK_PARTICLES = frozenset(cues.words("words.particles", "zh"))
#: Chinese function words of a question: they say what it asks, not what it is about.
_QUESTION_WORDS_ZH = frozenset(cues.words("words.question", "zh"))
_QUESTION_WORDS_EN = frozenset(cues.words("words.question", "en"))
#: Tokens a question shares with a text without sharing its subject (the composer's overlaps).
QUESTION_STOPWORDS = (
    _QUESTION_WORDS_ZH | _QUESTION_WORDS_EN | set(cues.words("words.question_more", "zh"))
)
#: Chinese bigrams that say nothing about a situation (retrieval's facets of situation names).
FUNCTION_BIGRAMS = _QUESTION_WORDS_ZH | frozenset(cues.words("words.function_bigrams", "zh"))


# -- spans and sentences ------------------------------------------------------------------------
def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink `[start, end)` so that it neither starts nor ends with whitespace.

    >>> strip_span("  ab ", 0, 5)
    (2, 4)
    """
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def add_trimmed(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    """Append `[start, end)` of `text` without its outer whitespace, unless nothing is left.

    >>> spans = []
    >>> add_trimmed(spans, " a b ", 0, 5), add_trimmed(spans, "   ", 0, 3), spans
    (None, None, [(1, 4)])
    """
    s, e = strip_span(text, start, end)
    if s < e:
        spans.append((s, e))


def cjk_bigrams(text: str) -> set[str]:
    """Character bigrams of the CJK runs in a text.

    >>> sorted(cjk_bigrams("两张显卡跑 Kestrel"))
    ['两张', '卡跑', '张显', '显卡']
    """
    grams: set[str] = set()
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans in `text` (Chinese and English), whitespace-trimmed; newlines always end one.

    A sentence ends after `。！？；!?` (and `;` or `.` before whitespace), with any closing quotes
    or brackets; `vs.`, `e.g.` and the like do not end one, nor does the dot of `torch.compile`.

    >>> t = "先学 PyTorch。再看 JAX！Use vs. compare. Done"
    >>> [t[s:e] for s, e in split_sentences(t)]
    ['先学 PyTorch。', '再看 JAX！', 'Use vs. compare.', 'Done']
    >>> t = "用 torch.compile 加速。Then export it. 好！"
    >>> [t[s:e] for s, e in split_sentences(t)]
    ['用 torch.compile 加速。', 'Then export it.', '好！']
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() < pos:
            continue
        end = m.end()
        if m.group() == ".":
            word = re.search(r"([A-Za-z.]+)$", text[pos : m.start()])
            if word and word.group(1).lower() in _ABBREV:
                continue
        if m.group() == "\n":
            end = m.start()
        else:
            while end < len(text) and text[end] in _CLOSERS:
                end += 1
        add_trimmed(spans, text, pos, end)
        pos = m.end() if m.group() == "\n" else end
    add_trimmed(spans, text, pos, len(text))
    return spans


# -- tokens -------------------------------------------------------------------------------------
#: Texts up to this long have their tokens memoised (longer ones: a corpus's chunks, once each).
_MEMO_CHARS = 200


class Tokenizer:
    """Lexical tokens of mixed Chinese/English text: lowercased technical tokens kept whole
    (`torch.compile`, `w&b`, `c++`) plus their alphanumeric parts; Chinese runs cut by jieba's
    search mode, particles dropped.

    The jieba segmenter is this object's own, built on first use: from the sorted-array copy of
    jieba's dictionary under `cache_dir` when there is one (`ingest.jieba_dict`), else by jieba
    from its own file. Words taught with `add_terms` segment as one token; teach them before
    tokenizing what an index is built from. Thread-safe.

    >>> Tokenizer().tokenize("用 torch.compile 和 W&B 监控 vLLM")
    ['用', 'torch.compile', 'torch', 'compile', 'w&b', 'w', 'b', '监控', 'vllm']
    """

    def __init__(self, terms: Iterable[str] = (), *, cache_dir: Path | None = None) -> None:
        self.cache_dir = cache_dir
        self._terms: list[str] = []
        self._segmenter: Any = None
        self._lock = threading.Lock()
        # cuts are memoised: chunk sentences and quotes are cut again for every question; so
        # are short texts' tokens (names and thesaurus terms come back with every question)
        self._cut = lru_cache(maxsize=65536)(self._cut_piece)
        self._tokens = lru_cache(maxsize=16384)(self._tokenize)
        self.add_terms(terms)

    @property
    def terms(self) -> tuple[str, ...]:
        """The Chinese words taught to this tokenizer, in order."""
        return tuple(self._terms)

    @staticmethod
    def learnable(terms: Iterable[str]) -> list[str]:
        """The words of `terms` that `add_terms` teaches (those with Chinese characters): two
        tokenizers taught the same of these, in the same order, tokenize alike.

        >>> Tokenizer.learnable(["vLLM", "飞桨", "PaddlePaddle 飞桨"])
        ['飞桨', 'PaddlePaddle 飞桨']
        """
        return [t for t in terms if _HAS_CJK.search(t)]

    def add_terms(self, terms: Iterable[str]) -> None:
        """Teach the segmenter these words (those with Chinese characters) as single tokens."""
        new = self.learnable(terms)
        with self._lock:
            self._terms.extend(new)
            if self._segmenter is not None:
                for term in new:
                    self._segmenter.add_word(term, freq=_TERM_FREQ)
            self._cut.cache_clear()  # segmentation may have changed
            self._tokens.cache_clear()

    @property
    def segmenter(self) -> Any:
        """This tokenizer's own `jieba.Tokenizer` (built on first use, with the taught words)."""
        return self._jieba()

    def _jieba(self) -> Any:
        with self._lock:
            if self._segmenter is None:
                import jieba

                jieba.setLogLevel(60)  # silence "Building prefix dict..." on stderr
                segmenter = jieba.Tokenizer()
                dictionary = open_dictionary(self.cache_dir) if self.cache_dir else None
                if dictionary is not None:
                    segmenter.FREQ = dictionary
                    segmenter.total = dictionary.total
                    segmenter.initialized = True
                for term in self._terms:
                    segmenter.add_word(term, freq=_TERM_FREQ)
                self._segmenter = segmenter
            return self._segmenter

    def _cut_piece(self, piece: str) -> tuple[str, ...]:
        """jieba's search-mode cut of one CJK run, particles dropped."""
        segmenter = self._jieba()
        if isinstance(segmenter.FREQ, JiebaDictionary):
            segmenter.FREQ.prefetch(piece)
        words = segmenter.cut_for_search(piece, HMM=True)
        return tuple(t for t in words if t not in CJK_PARTICLES)

    def tokenize(self, text: str) -> list[str]:
        """The lexical tokens of `text`, in order (see the class docstring)."""
        if len(text) <= _MEMO_CHARS:
            return list(self._tokens(text))
        return list(self._tokenize(text))

    def _tokenize(self, text: str) -> tuple[str, ...]:
        tokens: list[str] = []
        for match in _TOKEN.finditer(text):
            piece = match.group()
            if not piece[0].isascii():
                tokens.extend(self._cut(piece))
                continue
            token = piece.lower()
            tokens.append(token)
            if token.isalnum():  # one part, the token itself
                continue
            parts = _PART.findall(token)
            if len(parts) > 1:
                tokens.extend(parts)
        return tuple(tokens)
