"""Small random buffer sets and the drop-order oracle, shared by the packing tests
(written without the package's search, so they can check it)."""
from __future__ import annotations

import itertools

from hypothesis import strategies as st

from memplace.model.packing.packers import Buffer


@st.composite
def small_instances(draw, max_buffers=7, max_size=6, alignments=(1,)):
    """1 to `max_buffers` buffers over times 0..10, sizes 1..`max_size`, alignments drawn
    from `alignments`."""
    n = draw(st.integers(1, max_buffers))
    out = []
    for i in range(n):
        lower = draw(st.integers(0, 8))
        upper = draw(st.integers(lower + 1, 10))
        out.append(Buffer(f"t{i}", lower, upper, draw(st.integers(1, max_size)),
                          draw(st.sampled_from(alignments))))
    return out


def drop_order_optimum(buffers) -> int:
    """Least height over every order of dropping buffers onto those met in time (exhaustive:
    a packing lowered until each buffer rests, aligned, on another or on 0 is one of these
    orders, so the buffers pack into a capacity exactly when this is at most it)."""
    best = None
    for order in itertools.permutations(range(len(buffers))):
        tops: dict[int, int] = {}
        for i in order:
            b = buffers[i]
            floor = max((tops[j] for j in tops if buffers[j].lower < b.upper
                         and b.lower < buffers[j].upper), default=0)
            tops[i] = -(-floor // b.alignment) * b.alignment + b.size
        height = max(tops.values())
        best = height if best is None else min(best, height)
    return best
