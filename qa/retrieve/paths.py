"""Retrieval: link the question to situations and entities, walk the graph, fuse with chunk hits.

1. Seeds: entities the question names (score 1) and situations (Scenario / Persona / Criterion /
   Hardware that recommends something) whose facets the question shares: thesaurus terms, named
   entities, Chinese character bigrams. Facet overlap is a fraction of the situation's facets.
2. Chunks: BM25 (jieba-segmented) and dense (multilingual embeddings) hits fused by reciprocal rank.
3. Paths: edges from seeds (1 hop) and on to what the question constrains (2 hops), ranked by seed
   score × personalized PageRank of the far end × support from the fused chunk hits.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable
from functools import cached_property

import numpy as np

from ingest.embed import Embedder
from ingest.lexical import LexicalIndex
from ingest.text import FUNCTION_BIGRAMS, cjk_bigrams
from ingest.vector import DenseIndex
from kg import cues
from kg.documents import Chunk
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import NodeType, Relation, RelationType
from qa.read.understand import gpu_count
from qa.schema import EvidenceBundle, GraphPath, PathEdge, Question, RetrievedChunk

__all__ = ["Retriever", "cjk_bigrams", "path_from_relations"]

_SITUATION_TYPES = {NodeType.SCENARIO, NodeType.PERSONA, NodeType.CRITERION, NodeType.HARDWARE}
_SEED_THRESHOLD = 0.3
_ENOUGH_INFORMATION = 2.5
_RRF_K = 60
_RANGE = re.compile(
    rf"([<>≤≥＜＞])?\s*(\d+)\s*(?:(?:[–\-~～]|{cues.alternatives('value.range_to')})\s*(\d+))?\s*"
    + cues.alternatives("value.gpu_unit"),
    re.I,
)


def in_scale(count: int, name: str) -> bool:
    """Whether a GPU count falls in a scale written as `<4 卡`, `8–64 卡`, `>64 卡`.

    >>> in_scale(16, "8–64 卡"), in_scale(2, "<4 卡"), in_scale(100, ">64 卡、百亿级")
    (True, True, True)
    >>> in_scale(5, "单卡")
    False
    """
    match = _RANGE.search(name)
    if match is None:
        return False
    op, low, high = match.group(1), int(match.group(2)), match.group(3)
    if high is not None:
        return low <= count <= int(high)
    if op in ("<", "＜"):
        return count < low
    if op in (">", "＞"):
        return count > low
    if op == "≤":
        return count <= low
    if op == "≥":
        return count >= low
    return count == low


def path_from_relations(relations: list[Relation], score: float = 0.0) -> GraphPath:
    """A typed path from graph relations (evidence included)."""
    return GraphPath(
        edges=[
            PathEdge(
                source=r.source,
                relation=r.relation,
                target=r.target,
                evidence=list(r.evidence),
            )
            for r in relations
        ],
        score=score,
    )


class Retriever:
    """Read-only over one store's graph and indexes; safe to share across threads."""

    def __init__(
        self,
        graph: KnowledgeGraph,
        lexicon: Lexicon,
        chunks: list[Chunk],
        lexical: LexicalIndex,
        dense: DenseIndex | None = None,
        embedder: Callable[[], Embedder] | None = None,
    ) -> None:
        self.graph = graph
        self.lexicon = lexicon
        self.chunks = {c.id: c for c in chunks}
        self.lexical = lexical
        self.dense = dense
        self._embedder_factory = embedder
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    # -- situations ---------------------------------------------------------------------------
    @cached_property
    def _facets(self) -> dict[str, list[tuple[set[str], set[str]]]]:
        """Per situation node, per alternative ("A/B、C" lists three): (keys, CJK bigrams).

        The first entry is the whole name; a question matching any one alternative matches the
        situation.
        """
        facets = {}
        for entity in self.graph.entities():
            if entity.type not in _SITUATION_TYPES:
                continue
            if entity.type == NodeType.HARDWARE and not any(
                r.relation == RelationType.RECOMMENDED_FOR
                for r in self.graph.out_relations(entity.id)
            ):
                continue
            names = " ".join([entity.name, *entity.aliases])
            parts = [names] + [
                p for p in re.split(r"[/、，,；;：:（）()]", entity.name) if p.strip()
            ]
            entries = []
            for part in dict.fromkeys(parts):
                keys = self.lexicon.term_keys(part) | {
                    m.key for m in self.lexicon.entity_mentions(part)
                }
                keys.discard(entity.id)
                grams = cjk_bigrams(part) - FUNCTION_BIGRAMS
                if keys or grams:
                    entries.append((keys, grams))
            facets[entity.id] = entries
        return facets

    @cached_property
    def _facet_weights(self) -> dict[str, float]:
        """Inverse document frequency of each facet over the situations (rare facets weigh more)."""
        counts: dict[str, int] = {}
        for entries in self._facets.values():
            keys, grams = entries[0] if entries else (set(), set())
            for facet in keys | grams:
                counts[facet] = counts.get(facet, 0) + 1
        total = max(len(self._facets), 1)
        return {f: math.log(1 + total / c) for f, c in counts.items()}

    def _term_grams(self, terms: Iterable[str]) -> set[str]:
        """The CJK bigrams of a term's Chinese synonyms: "functional" also reads as 函数式.

        A question without CJK text matches a Chinese situation name through its terms; the name's
        bigrams that no matched term explains ("实验追踪（本地）": 本地) still count against it.
        """
        grams: set[str] = set()
        for term in terms:
            for surface in self.lexicon.terms.get(term, []):
                if len(surface) >= 2:
                    grams |= cjk_bigrams(surface)
        return grams

    @cached_property
    def _facet_index(self) -> tuple[dict[str, set[str]], list[str]]:
        """Which situations each facet belongs to, and the situations that are scales ("8–64
        卡"): a question is scored against the situations it shares a facet with, no others."""
        index: dict[str, set[str]] = {}
        scales = []
        for node, entries in self._facets.items():
            if _RANGE.search(self.graph.entity(node).name):
                scales.append(node)
                continue
            for keys, grams in entries:
                for facet in keys | grams:
                    index.setdefault(facet, set()).add(node)
        return index, scales

    def situation_scores(self, question: Question) -> dict[str, float]:
        """Situations the question matches, scored 0..1.

        The score is the weighted share of a situation's facets (thesaurus terms and named
        entities; CJK bigrams) that the question has, damped when only little information matched;
        a stated GPU count inside a situation's range ("8–64 卡") matches it fully.
        """
        named = set(question.entity_ids)
        keys = set(question.terms) | named
        grams = cjk_bigrams(question.text) or self._term_grams(question.terms)
        weights = self._facet_weights
        gpus = gpu_count(question.text)
        index, scales = self._facet_index
        scores: dict[str, float] = {node: 1.0 for node in named if node in self._facets}
        if gpus is not None:
            # a scale matches a stated GPU count, never the mere word "GPU"
            scores |= {n: 1.0 for n in scales if in_scale(gpus, self.graph.entity(n).name)}
        sharing = set().union(*(index.get(facet, set()) for facet in keys | grams))
        for node in sorted(sharing - named):
            whole, best_part = 0.0, 0.0
            for at, (facet_keys, facet_grams) in enumerate(self._facets[node]):
                parts = []
                for facets, have in ((facet_keys, keys), (facet_grams, grams)):
                    if not facets:
                        continue
                    common = facets & have
                    if not common:
                        parts.append(0.0)
                        continue
                    total = sum(weights.get(f, 1.0) for f in facets)
                    matched = sum(weights.get(f, 1.0) for f in common)
                    parts.append((matched / total) * min(1.0, matched / _ENOUGH_INFORMATION))
                part_score = sum(parts) / len(parts) if parts else 0.0
                if at == 0:
                    whole = part_score
                else:
                    best_part = max(best_part, part_score)
            # one alternative of "A/B、C" matching fully is a match; the whole name still counts
            score = max(whole, 0.5 * whole + 0.5 * best_part)
            if score >= _SEED_THRESHOLD:
                scores[node] = round(score, 4)
        return self._prefer_specific({n: scores[n] for n in self._facets if n in scores})

    def _prefer_specific(self, scores: dict[str, float]) -> dict[str, float]:
        """A refinement ("实验追踪（本地）") matched at least as well halves its parent."""
        names = {node: self.graph.entity(node).name for node in scores}
        adjusted = dict(scores)
        for parent, parent_name in names.items():
            for child, child_name in names.items():
                if (
                    child != parent
                    and len(child_name) > len(parent_name)
                    and child_name.startswith(parent_name)
                    and child_name[len(parent_name)] in "（(：:"
                    and scores[child] >= max(0.6, scores[parent])
                ):
                    adjusted[parent] = scores[parent] * 0.5
        return adjusted

    # -- chunks -------------------------------------------------------------------------------
    def _embedder_or_none(self) -> Embedder | None:
        if self._embedder_factory is None or self.dense is None:
            return None
        with self._lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory()
        return self._embedder

    def chunk_hits(self, question: Question, k: int = 6) -> list[RetrievedChunk]:
        """Lexical and dense hits fused by reciprocal rank (RRF, k=60)."""
        fused: dict[str, float] = {}
        for rank, (cid, _score) in enumerate(self.lexical.search(question.text, 2 * k)):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (_RRF_K + rank)
        embedder = self._embedder_or_none()
        if embedder is not None and self.dense is not None:
            dense_hits = self.dense.search_text(question.text, embedder, 2 * k)
            for rank, (cid, _score) in enumerate(dense_hits):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (_RRF_K + rank)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        hits = []
        for cid, score in best:
            chunk = self.chunks.get(cid)
            if chunk is not None:
                hits.append(RetrievedChunk.from_chunk(chunk, round(score * _RRF_K, 4)))
        return hits

    # -- paths --------------------------------------------------------------------------------
    @cached_property
    def _edge_arrays(self) -> tuple[list[str], dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
        """Nodes, their index, and the undirected edge list (both directions) with out-degrees."""
        nodes = sorted(self.graph.g.nodes)
        index = {n: i for i, n in enumerate(nodes)}
        pairs = {(index[s], index[t]) for s, t in self.graph.g.edges() if s != t}
        pairs |= {(t, s) for s, t in pairs}
        src = np.array([p[0] for p in sorted(pairs)], dtype=np.int64)
        dst = np.array([p[1] for p in sorted(pairs)], dtype=np.int64)
        degree = np.bincount(src, minlength=len(nodes)).astype(np.float64)
        return nodes, index, src, dst, degree

    def _pagerank(
        self, seeds: dict[str, float], alpha: float = 0.7, rounds: int = 30
    ) -> dict[str, float]:
        """Personalized PageRank by power iteration over the undirected graph (numpy only)."""
        nodes, index, src, dst, degree = self._edge_arrays
        if not seeds or not nodes:
            return {}
        restart = np.zeros(len(nodes))
        for node, weight in seeds.items():
            if node in index:
                restart[index[node]] = weight
        if restart.sum() == 0:
            return {}
        restart /= restart.sum()
        rank = restart.copy()
        out_degree = np.where(degree > 0, degree, 1.0)[src]
        dangles = degree == 0
        for _ in range(rounds):
            spread = np.bincount(dst, weights=rank[src] / out_degree, minlength=len(nodes))
            dangling = rank[dangles].sum()
            rank = (1 - alpha) * restart + alpha * (spread + dangling * restart)
        return {nodes[i]: float(rank[i]) for i in np.nonzero(rank)[0]}

    @staticmethod
    def _support(relation: Relation, chunks: list[RetrievedChunk]) -> float:
        """1 + the fused score of chunks that contain this edge's evidence."""
        support = 1.0
        for chunk in chunks:
            if any(
                ev.doc == chunk.doc and chunk.start <= ev.start and ev.end <= chunk.end
                for ev in relation.evidence
            ):
                support += chunk.score
        return support

    def retrieve(
        self, question: Question, *, max_paths: int = 24, k_chunks: int = 6
    ) -> EvidenceBundle:
        """The typed evidence bundle for a question."""
        situations = self.situation_scores(question)
        linked = {e: 1.0 for e in question.entity_ids if e in self.graph}
        seeds = {**linked, **situations}  # a situation's own score (a refined one halves it)
        chunks = self.chunk_hits(question, k_chunks)
        ranks = self._pagerank(seeds)
        top_rank = max(ranks.values(), default=1.0) or 1.0
        # candidate paths by id (`GraphPath.id`), with their best score: only the kept ones
        # become `GraphPath`s (a hub node of a large graph offers thousands)
        scored: dict[str, tuple[float, list[Relation]]] = {}
        support: dict[int, float] = {}

        def supported(relation: Relation) -> float:
            value = support.get(id(relation))
            if value is None:
                value = support[id(relation)] = self._support(relation, chunks)
            return value

        def add(relations: list[Relation], weight: float) -> None:
            far = relations[-1].target if relations[-1].source in seeds else relations[-1].source
            score = weight * (0.5 + ranks.get(far, 0.0) / top_rank)
            score = round(score * max(supported(r) for r in relations), 4)
            path_id = ";".join(f"{r.source}|{r.relation}|{r.target}" for r in relations)
            known = scored.get(path_id)
            if known is None or known[0] < score:
                scored[path_id] = (score, relations)

        for seed, weight in seeds.items():
            for rel in self.graph.out_relations(seed):
                if rel.target in seeds:
                    # an edge between two things the question names is the most direct evidence
                    add([rel], 2 * weight * seeds[rel.target])
                add([rel], weight)
                for onward in self.graph.out_relations(rel.target):
                    if onward.target in seeds and onward.target != seed:
                        add([rel, onward], weight * seeds[onward.target])
            for rel in self.graph.in_relations(seed):
                add([rel], weight * 0.8)
        best = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))[:max_paths]
        paths = [path_from_relations(relations, score) for _id, (score, relations) in best]
        return EvidenceBundle(
            question=question.text,
            language=question.language,
            kind=question.kind,
            linked=list(linked),
            situations=situations,
            paths=paths,
            chunks=chunks,
        )
