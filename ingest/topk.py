"""The k best of a score array, in the order a full stable sort gives, without sorting it all."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["top_k"]


def top_k(
    scores: npt.NDArray[np.float32], candidates: npt.NDArray[np.intp], k: int
) -> npt.NDArray[np.intp]:
    """The `k` best of `candidates` (indices into `scores`, ascending) by score, best first, ties
    in index order: `candidates[np.argsort(-scores[candidates], kind="stable")][:k]`, with only
    the candidates that can be among the `k` best sorted (a partition finds them).

    >>> top_k(np.array([0.5, 0.9, 0.5, 0.1], dtype=np.float32), np.arange(4), 2).tolist()
    [1, 0]
    >>> top_k(np.array([0.5, 0.9, 0.5, 0.1], dtype=np.float32), np.array([0, 2, 3]), 5).tolist()
    [0, 2, 3]
    """
    if k <= 0:
        return candidates[:0]
    negated = -scores[candidates]
    if k < len(candidates):
        # every candidate as good as the k-th best (ties included) stays, in index order
        kth = np.partition(negated, k - 1)[k - 1]
        keep = np.flatnonzero(negated <= kth)
        candidates, negated = candidates[keep], negated[keep]
    return candidates[np.argsort(negated, kind="stable")][:k]
