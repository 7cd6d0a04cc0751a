"""Rankings of buffers for the exact searches, most constrained first.

MiniMalloc's static preorderings rank buffers by three features (the peak load
over a buffer's lifespan, its length, its area); randomised rankings mix the same
features with random weights and noise, for restarts that cut the heavy tail of
search times any one fixed ranking shows on some instances.
"""
from __future__ import annotations

import numpy as np

from memplace.model.packing.timeline import live_load

RANDOM_SPREAD = 0.5


def features(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per buffer: "total", the peak load over its lifespan; "width", its length; "area",
    width times size. Buffers high in all three are the most constrained."""
    width = uppers - lowers
    area = width * sizes
    load, lo, hi = live_load(sizes, lowers, uppers)
    total = _range_max(load, lo, hi)
    return total, width, area


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i]]) for every i, by a sparse table (O(n log n), no Python loop
    per buffer)."""
    table = [values]
    k = 1
    while 2 * k <= values.size:
        prev = table[-1]
        table.append(np.maximum(prev[:-k], prev[k:]))
        k *= 2
    length = np.maximum(hi - lo, 1)
    level = np.floor(np.log2(length)).astype(np.int64)
    out = np.empty(lo.size, np.int64)
    for j in range(int(level.max(initial=-1)) + 1):
        sel = np.flatnonzero(level == j)
        if not sel.size:
            continue
        row = table[j]
        out[sel] = np.maximum(row[lo[sel]], row[hi[sel] - (1 << j)])
    return out


def static_orders(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray) -> list[np.ndarray]:
    """Rankings tried in turn, each most-constrained first (MiniMalloc's three)."""
    total, width, area = features(sizes, lowers, uppers)
    idx = np.arange(sizes.size)
    # np.lexsort sorts by the last key first; negated keys sort decreasing
    keys = [
        (idx, -area, -width, -total),   # total, then width, then area
        (idx, -width, -area, -total),   # total, then area, then width
        (idx, -total, -area, -width),   # width, then area, then total
    ]
    return [np.lexsort(k) for k in keys]


def random_order(feats: tuple[np.ndarray, np.ndarray, np.ndarray],
                 rng: np.random.Generator) -> np.ndarray:
    """A randomised most-constrained-first ranking: a product of the features with random
    exponents, times per-buffer noise."""
    total, width, area = (np.log(np.maximum(f, 1)).astype(float) for f in feats)
    w = rng.lognormal(0.0, RANDOM_SPREAD, 3)
    key = w[0] * total + w[1] * width + 0.5 * w[2] * area
    key += rng.normal(0.0, RANDOM_SPREAD, key.size)
    return np.argsort(-key, kind="stable")
