"""`bilingual_search`: its array arithmetic gives what adding up each script's hits by id does."""

from __future__ import annotations

import itertools
import re

from ingest.lexical import LexicalIndex
from qa.units import bilingual_search

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
