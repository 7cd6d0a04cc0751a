"""The timeline of a packing instance: the times at which buffers start or end, and the
bytes live between them.

Lifespans are half-open `[lower, upper)`; between consecutive time points (a
*section*) the same buffers are live. The live load over the sections gives the peak
live size, a lower bound on any packing's height, and the features the exact searches
rank buffers by."""
from __future__ import annotations

import numpy as np


def time_points(lowers: np.ndarray, uppers: np.ndarray) -> np.ndarray:
    """The distinct times at which a buffer starts or ends, increasing.

    Sorting and dropping repeats, not `np.unique`: numpy 2's `np.unique` imports
    `numpy.ma` on its first call, 12 ms of CPU that `memplace pack` would spend at
    start-up for nothing."""
    points = np.sort(np.concatenate([lowers, uppers]))
    if points.size == 0:
        return points
    keep = np.empty(points.size, bool)
    keep[0] = True
    np.not_equal(points[1:], points[:-1], out=keep[1:])
    return points[keep]


def live_load(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(load, first, end): the bytes live from each time point to the next (0 from the
    last), and per buffer the index of the time point it starts at and of the one it
    ends at, so that it is live in the sections `first[i]:end[i]`."""
    points = time_points(lowers, uppers)
    first = np.searchsorted(points, lowers)
    end = np.searchsorted(points, uppers)
    delta = np.zeros(points.size, np.int64)
    np.add.at(delta, first, sizes)
    np.add.at(delta, end, -sizes)
    return np.cumsum(delta), first, end


def peak_live(sizes: np.ndarray, lowers: np.ndarray, uppers: np.ndarray) -> int:
    """The peak live size: no packing of the buffers is lower (0 without buffers)."""
    return int(live_load(sizes, lowers, uppers)[0].max()) if sizes.size else 0
