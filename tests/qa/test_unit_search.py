"""`bilingual_search`: its array arithmetic gives what adding up each script's hits by id does."""

from __future__ import annotations

import itertools
import re

import numpy as np

from ingest.lexical import LexicalIndex
from qa.retrieve.units import bilingual_search

_CJK = re.compile(r"[\u4e00-\u9fff]")

TEXTS = {
    "a#0": "PyTorch 训练 GPU 推理",
    "a#1": "GPU inference with TensorRT",
    "b#0": "推理 引擎 支持 GPU",
    "b#1": "GPU GPU inference",
    "c#0": "训练 框架 PyTorch",
    "c#1": "inference 推理",
    "d#0": "TensorRT 推理 引擎",
    "d#1": "GPU inference with TensorRT",  # the same text as a#1: a tie broken by id
}


def _by_ids(
    index: LexicalIndex, weights: dict[str, float], k: int, own: str
) -> list[tuple[str, float]]:
    """The scores added up by id in a dict, as `bilingual_search` once did."""
    cjk = {t: w for t, w in weights.items() if _CJK.search(t)}
    latin = {t: w for t, w in weights.items() if not _CJK.search(t)}
    if not cjk or not latin:
        return index.search_weighted(weights, k)
    combined: dict[str, float] = {}
    has_cjk = bool(_CJK.search(own)) if own else True
    has_latin = bool(re.search(r"[A-Za-z]{2}", own)) if own else True
    for part, present in ((cjk, has_cjk), (latin, has_latin)):
        hits = index.search_weighted(part, 3 * k)
        if not hits:
            continue
        top = hits[0][1] or 1.0
        share = 1.0 if present else 0.35
        for doc, score in hits:
            combined[doc] = combined.get(doc, 0.0) + share * score / top
    return sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def test_bilingual_search_adds_up_each_script_as_by_id() -> None:
    index = LexicalIndex()
    index.build(list(TEXTS), list(TEXTS.values()))
    words = ["推理", "训练", "gpu", "inference", "tensorrt", "pytorch", "引擎"]
    checked = 0
    for size in (1, 2, 3):
        for chosen in itertools.combinations(words, size):
            weights = {w: 1.0 - 0.2 * i for i, w in enumerate(chosen)}
            for k, own in itertools.product((1, 2, 3, 8), ("", "推理 GPU", "GPU only", "只有中文")):
                assert bilingual_search(index, weights, k, own) == _by_ids(index, weights, k, own)
                checked += 1
    assert checked > 500


def test_bilingual_search_keeps_the_marked_among_the_k_best() -> None:
    """`keep` sifts the k best (in their order), whatever the scripts of the query."""
    index = LexicalIndex()
    index.build(list(TEXTS), list(TEXTS.values()))
    at = {doc: i for i, doc in enumerate(index.ids)}
    words = ["推理", "gpu", "inference", "tensorrt", "引擎"]
    masks = [
        np.array([doc.startswith(prefix) for doc in index.ids]) for prefix in ("a", "b", "d", "x")
    ]
    kept = 0
    for chosen in itertools.combinations(words, 2):
        weights = {w: 1.0 - 0.2 * i for i, w in enumerate(chosen)}
        for k, own, keep in itertools.product((1, 3, 8), ("", "推理 GPU"), masks):
            whole = bilingual_search(index, weights, k, own)
            sifted = bilingual_search(index, weights, k, own, keep=keep)
            assert sifted == [hit for hit in whole if keep[at[hit[0]]]]
            kept += len(sifted)
    assert kept > 20
