"""Unit retrieval: the sentences, list items and table rows that answer a question.

A question is matched against every evidence unit three ways, fused by reciprocal rank:

- **lexical**: BM25 over the unit, its table header, lead-in and section title, with English
  words reduced to a stem (`quantizing` ~ `quantization`) and the question widened by the lexicon:
  a thesaurus term adds its surfaces in the other language (浏览器 ~ browser), a named entity its
  aliases (飞桨 ~ PaddlePaddle); a word the question denies ("no GPU", 无需联网) counts twice
  in a unit that denies it too (`negated_terms`);
- **dense**: the unit inherits the multilingual-embedding rank of the chunk that holds it;
- **graph**: a unit about (or naming) an entity the question names ranks higher.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from ingest.lexical import LexicalIndex
from ingest.topk import top_k
from ingest.units import lone_units, stem_text, unit_groups, unit_index_text
from kg import cues
from kg.documents import Chunk, EvidenceUnit, UnitKind
from kg.lexicon import Lexicon

__all__ = ["STOPWORDS", "RankedUnit", "UnitSearch", "bilingual_search", "negated_terms"]

_RRF = 60.0
_CJK = re.compile(r"[\u4e00-\u9fff]")
#: English function words and question words: they say nothing about which unit answers.
STOPWORDS = frozenset(w for lang in cues.LANGUAGES for w in cues.words("words.stop", lang))


def _cue_words(key: str) -> frozenset[str]:
    """Every language's words of a cue, stemmed as the words they are compared with."""
    return frozenset(stem_text(w).lower() for lang in cues.LANGUAGES for w in cues.words(key, lang))


_NEGATORS = _cue_words("words.negators")
_DENIES = _cue_words("words.denies")
_WANTING = _cue_words("words.wanting")
_NOT_NEGATING = _cue_words("words.not_negating")
_UNCOUNTED = STOPWORDS | _WANTING
_CLAUSE = re.compile(
    r"[,.;:!?()\[\]|\n，。；：！？、（）]|\s[-–—]\s"
    + "".join(
        rf"|\b{w}\b" if w.isascii() else f"|{w}"
        for lang in cues.LANGUAGES
        for w in cues.words("words.clause_break", lang)
    ),
    re.I,
)
_NOT = re.compile(r"n['’]t\b", re.I)
#: a negation between a word and itself: a question's either-or, no negation
_EITHER_OR = re.compile(rf"(\w)(?:{cues.alternatives('words.either_or')})(?=\1)")
#: how many words after a negation it reaches (function words not counted)
_NEGATION_REACH = 3
_KIND_PRIOR = {
    UnitKind.SENTENCE: 1.0,
    UnitKind.ITEM: 1.0,
    UnitKind.ROW: 0.9,
    UnitKind.HEADING: 0.6,
    UnitKind.CODE: 0.5,
}


def bilingual_search(
    index: LexicalIndex,
    weights: dict[str, float],
    k: int,
    own: str = "",
    keep: npt.NDArray[np.bool_] | None = None,
    twice: Mapping[str, npt.NDArray[np.int64]] | None = None,
) -> list[tuple[str, float]]:
    """BM25 with the Chinese and the Latin query tokens scored apart, each scaled to its best hit,
    then added: a Chinese question's many Chinese words cannot drown what its English names and
    translated terms find in an English document (and the other way round). A script the
    question itself (`own`) does not use holds only translations: it counts a third. `keep` (a
    mask over the index's documents): of the `k` best, only those it marks, in order (a search
    about a few entities sifts thousands of hits without making a pair of each). `twice`: as
    `LexicalIndex.weighted_scores`."""
    cjk = {t: w for t, w in weights.items() if _CJK.search(t)}
    latin = {t: w for t, w in weights.items() if not _CJK.search(t)}
    if not cjk or not latin:
        if not index.ids or k <= 0:
            return []
        scores = index.weighted_scores(weights, twice)  # as `search_weighted`, then sifted
        ranked = top_k(scores, np.flatnonzero(scores > 0.0), k)
        if keep is not None:
            ranked = ranked[keep[ranked]]
        return [(index.ids[i], float(scores[i])) for i in ranked.tolist()]
    has_cjk = bool(_CJK.search(own)) if own else True
    has_latin = bool(re.search(r"[A-Za-z]{2}", own)) if own else True
    if not index.ids or k <= 0:
        return []
    # in arrays over the index's documents, the arithmetic and order of adding up each part's
    # hits by id (a question's units search may hold thousands)
    combined = np.zeros(len(index.ids), dtype=np.float64)
    found = np.zeros(len(index.ids), dtype=bool)
    for part, present in ((cjk, has_cjk), (latin, has_latin)):
        scores = index.weighted_scores(part, twice)
        hits = top_k(scores, np.flatnonzero(scores > 0.0), 3 * k)
        if not len(hits):
            continue
        top = float(scores[hits[0]]) or 1.0
        share = 1.0 if present else 0.35
        combined[hits] += share * scores[hits].astype(np.float64) / top
        found[hits] = True
    hit = np.flatnonzero(found)
    best = hit[np.lexsort((index.id_ranks()[hit], -combined[hit]))][:k]
    if keep is not None:
        best = best[keep[best]]
    return [(index.ids[i], float(combined[i])) for i in best.tolist()]


def _chunks_of(units: Sequence[EvidenceUnit], chunks: Sequence[Chunk]) -> dict[str, str]:
    """Unit id -> the id of the first chunk of its document (in `chunks`' order) that holds
    the unit's start. A document's chunks run in order (their starts and ends ascending): the
    first one ending after the start is found by bisection; others are searched in turn."""
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc, []).append(chunk)
    ends = {
        doc: [c.end for c in cs]
        for doc, cs in by_doc.items()
        if all(a.start <= b.start and a.end <= b.end for a, b in itertools.pairwise(cs))
    }
    found: dict[str, str] = {}
    for unit in units:
        candidates = by_doc.get(unit.doc, [])
        if unit.doc in ends:
            # the first chunk ending after the start; an earlier one ends before it
            at = bisect.bisect_right(ends[unit.doc], unit.start)
            candidates = candidates[at : at + 1]
        for chunk in candidates:
            if chunk.start <= unit.start < chunk.end:
                found[unit.id] = chunk.id
                break
    return found


def negated_terms(
    text: str, tokenize: Callable[[str], list[str]], denying: bool = False
) -> frozenset[str]:
    """The words a text negates: the first few words (function words left out) after a
    negation ("not", "without", "n't", 不, 无), up to the end of its clause, as `tokenize`
    makes them of the stemmed text. `denying`: only what it says it has not or does not want
    ("no spare GPU", "don't need a server", 无需联网, 不希望改动), not what it says does
    not happen ("it won't boot on a Pi").

    >>> def tokenize(text: str) -> list[str]:
    ...     return text.lower().split()
    >>> sorted(negated_terms("We have no spare GPU, and want speed", tokenize))
    ['gpu', 'spare']
    >>> sorted(negated_terms("It doesn't need retraining but it is not only fast", tokenize))
    ['retrain']
    >>> sorted(negated_terms("It will not boot on a Pi", tokenize))
    ['boot', 'pi']
    >>> sorted(negated_terms("It will not boot on a Pi", tokenize, denying=True))
    []
    """
    text = _EITHER_OR.sub("", _NOT.sub(" not", text))
    denied: set[str] = set()
    for clause in _CLAUSE.split(text):
        reach = 0
        tokens = tokenize(stem_text(clause))
        for token, after in itertools.zip_longest(tokens, tokens[1:]):
            if token in _NEGATORS:
                opens = not denying or token in _DENIES or after in _WANTING
                reach = _NEGATION_REACH if opens and after not in _NOT_NEGATING else 0
            elif reach and token not in _UNCOUNTED and not (len(token) < 2 and token.isascii()):
                denied.add(token)
                reach -= 1
    return frozenset(denied)


class RankedUnit:
    """A unit with its fused score and the signals that produced it."""

    __slots__ = ("dense", "lexical", "linked", "score", "unit")

    def __init__(
        self, unit: EvidenceUnit, score: float, lexical: float, dense: float, linked: bool
    ):
        self.unit = unit
        self.score = score
        self.lexical = lexical
        self.dense = dense
        self.linked = linked

    def __repr__(self) -> str:
        return f"RankedUnit({self.unit.id!r}, {self.score:.4f})"


class UnitSearch:
    """Read-only over a store's units; safe to share across threads."""

    def __init__(
        self,
        units: Sequence[EvidenceUnit],
        lexical: LexicalIndex,
        lexicon: Lexicon,
        chunks: Sequence[Chunk] = (),
        grouped: tuple[LexicalIndex, LexicalIndex] | None = None,
        text_norm: str | None = None,
    ) -> None:
        """`grouped`: the indexes of `unit_groups` (documents, profiles) as ingest made them
        from `lexical` (else they are made here); `text_norm`: `units_text_norm` of the units,
        as ingest made it (else it is made when first asked for)."""
        self.units = list(units)
        self.text_norm = text_norm
        self.by_id = {u.id: u for u in self.units}
        self.lexical = lexical
        self.lexicon = lexicon
        self.doc_weight = 0.3
        self.dense_weight = 0.15
        self._chunk_of = _chunks_of(self.units, chunks)
        self.tokenize = lexical.tokenizer.tokenize
        # thread-safe; its dicts are copied out (`query_weights`)
        self._query_weights = lru_cache(maxsize=256)(self._weigh_query)
        self._denied_with = lru_cache(maxsize=256)(self._find_denied_with)
        self._denies = lru_cache(maxsize=None)(self._unit_denies)
        self.by_subject: dict[str, list[EvidenceUnit]] = {}
        self.by_mention: dict[str, list[EvidenceUnit]] = {}
        for unit in self.units:
            if unit.subject:
                self.by_subject.setdefault(unit.subject, []).append(unit)
            for eid in unit.mentions:
                self.by_mention.setdefault(eid, []).append(unit)
        # the documents, and the entities' profiles (everything an entity's own units say),
        # searched whole: made from the units' postings when the index holds every unit (a
        # store's), else by tokenizing their texts
        if grouped is not None:
            self.doc_lexical, self.profiles = grouped
        else:
            whole = set(lexical.ids) >= set(self.by_id)
            docs, profiles = unit_groups(self.units)
            self.doc_lexical = self._grouped(lexical, docs, whole)
            self.profiles = self._grouped(lexical, profiles, whole)

    def _grouped(
        self, lexical: LexicalIndex, groups: dict[str, list[str]], whole: bool
    ) -> LexicalIndex:
        if whole:
            return lexical.grouped(groups)
        index = LexicalIndex(lexical.tokenizer)
        index.build(
            list(groups),
            [
                " ".join(unit_index_text(self.by_id[u], u in self._lone) for u in ids)
                for ids in groups.values()
            ],
        )
        return index

    @cached_property
    def _lone(self) -> set[str]:
        """`lone_units` of the units (made once, for the grouped indexes built here)."""
        return lone_units(self.units)

    @cached_property
    def _document_positions(self) -> dict[str, list[int]]:
        """Where each document's units are in the lexical index (made on first use)."""
        positions: dict[str, list[int]] = {}
        for unit in self.units:
            at = self.lexical.position(unit.id)
            if at is not None:
                positions.setdefault(unit.doc, []).append(at)
        return positions

    def best_of_document(self, question: str, doc: str, k: int = 3) -> list[RankedUnit]:
        """The `k` units of one document that match the question best (lexically, headings
        left out), scored 0: what a question that names the document reads of it when the
        corpus-wide ranking found none of it."""
        keep = np.zeros(len(self.lexical.ids), dtype=bool)
        keep[self._document_positions.get(doc, [])] = True
        hits = bilingual_search(
            self.lexical,
            self.query_weights(question),
            4000,
            own=question,
            keep=keep,
            twice=self._denied_with(question),
        )
        found = [self.by_id[uid] for uid, _ in hits if uid in self.by_id]
        usable = [u for u in found if u.kind != UnitKind.HEADING]
        return [RankedUnit(u, 0.0, 0.0, 0.0, False) for u in usable[:k]]

    def about_mask(self, about: Iterable[str]) -> npt.NDArray[np.bool_]:
        """Which units of the lexical index (in its order) are about one of `about`."""
        mask = np.zeros(len(self.lexical.ids), dtype=bool)
        at = [self.lexical.position(u.id) for s in about for u in self.by_subject.get(s, [])]
        mask[[i for i in at if i is not None]] = True
        return mask

    def query_weights(self, question: str, entity_names: Iterable[str] = ()) -> dict[str, float]:
        """Weighted query tokens: the question's own (stemmed, no function words) weigh 1, the
        aliases of the entities it names 0.7, and the thesaurus surfaces of its terms in the other
        language 0.5 (a Chinese question reaches English text and back). Remembered: answering
        one question asks for the same weights several times."""
        return dict(self._query_weights(question, tuple(entity_names)))

    def _weigh_query(self, question: str, entity_names: tuple[str, ...]) -> dict[str, float]:
        weights: dict[str, float] = {}

        def add(text: str, weight: float) -> None:
            for token in self.tokenize(stem_text(text)):
                if token in STOPWORDS or (len(token) < 2 and token.isascii()):
                    continue
                weights[token] = max(weights.get(token, 0.0), weight)

        add(question, 1.0)
        for name in entity_names:
            add(name, 0.7)
        chinese = bool(_CJK.search(question))
        for key in sorted(self.lexicon.term_keys(question)):
            for surface in self.lexicon.terms.get(key, []):
                # the other language's words for a term reach the other language's documents;
                # the same language's synonyms ("单文件" ~ "单个文件") count less
                add(surface, 0.5 if bool(_CJK.search(surface)) != chinese else 0.35)
        return weights

    def _unit_denies(self, uid: str) -> frozenset[str]:
        return negated_terms(self.by_id[uid].text, self.tokenize)

    def _find_denied_with(self, question: str) -> dict[str, npt.NDArray[np.int64]]:
        """For each word the question denies ("no spare GPU"), the units (their positions in
        the lexical index) that deny it too: there the word matches in sense as well as in
        form, and counts twice (`LexicalIndex.weighted_scores`)."""
        found = {}
        for term in negated_terms(question, self.tokenize, denying=True):
            at = self.lexical.holding(term)
            ids = self.lexical.ids
            denying = [
                i for i in at.tolist() if ids[i] in self.by_id and term in self._denies(ids[i])
            ]
            if denying:
                found[term] = np.array(denying, dtype=np.int64)
        return found

    def profile_search(
        self, weights: dict[str, float], k: int = 10, own: str = ""
    ) -> list[tuple[str, float]]:
        """Entities whose own units, taken together, best match the weighted query."""
        return bilingual_search(self.profiles, weights, k, own=own)

    def search(
        self,
        question: str,
        *,
        linked: Iterable[str] = (),
        entity_names: Iterable[str] = (),
        dense_chunks: Sequence[tuple[str, float]] = (),
        k: int = 40,
        about: set[str] | None = None,
    ) -> list[RankedUnit]:
        """The `k` best units for a question, best first (only units about `about`, if given).

        A unit's score is its lexical match (scaled to the best unit's), plus a share of its
        document's match (the whole document, lexical and dense), plus a share of the dense
        similarity of its chunk; a unit about or naming an entity the question names gains more.
        """
        query = self.query_weights(question, entity_names)
        if about is None:
            lexical_hits = bilingual_search(
                self.lexical, query, 4 * k, own=question, twice=self._denied_with(question)
            )
        else:
            # of the 4000 best, the first ones about `about`
            keep = self.about_mask(about)
            lexical_hits = bilingual_search(
                self.lexical,
                query,
                4000,
                own=question,
                keep=keep,
                twice=self._denied_with(question),
            )
            lexical_hits = lexical_hits[: 4 * k]
        top_lexical = lexical_hits[0][1] if lexical_hits else 1.0
        lexical = {uid: score / top_lexical for uid, score in lexical_hits}
        doc_scores: dict[str, float] = {}
        doc_hits = bilingual_search(self.doc_lexical, query, 10, own=question)
        top_doc = doc_hits[0][1] if doc_hits else 1.0
        for doc, score in doc_hits:
            doc_scores[doc] = 0.6 * score / top_doc
        dense = {}
        if dense_chunks:
            best, worst = dense_chunks[0][1], dense_chunks[-1][1]
            spread = (best - worst) or 1.0
            dense = {cid: (score - worst) / spread for cid, score in dense_chunks}
            seen: dict[str, float] = {}
            for cid, value in dense.items():
                doc = cid.split("#", 1)[0]
                seen[doc] = max(seen.get(doc, 0.0), value)
            for doc, value in seen.items():
                doc_scores[doc] = doc_scores.get(doc, 0.0) + 0.15 * value
        wanted = set(linked)
        ranked = []
        for uid, lex in lexical.items():
            unit = self.by_id.get(uid)
            if unit is None:
                continue
            chunk = dense.get(self._chunk_of.get(uid, ""), 0.0)
            score = (
                lex + self.doc_weight * doc_scores.get(unit.doc, 0.0) + self.dense_weight * chunk
            )
            is_linked = bool(wanted) and (
                unit.subject in wanted or bool(wanted & set(unit.mentions))
            )
            if is_linked:
                score *= 1.15
            score *= _KIND_PRIOR.get(unit.kind, 1.0)
            ranked.append(RankedUnit(unit, score, lex, chunk, is_linked))
        ranked.sort(key=lambda r: (-r.score, r.unit.id))
        return ranked[:k]
