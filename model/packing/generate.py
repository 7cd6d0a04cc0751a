"""Seeded generators of offset-packing instances, for measuring packers off their tuning set.

Two families:

- `cut_instance`: a full `capacity x horizon` rectangle cut into buffers, so
  every moment has exactly `capacity` bytes alive and the optimum height is the
  capacity with no slack at all (the shape of MiniMalloc's "challenging"
  suite). Cuts are guillotine (one straight cut through a piece, in time or in
  address) or, with probability `pinwheel`, non-guillotine: a piece is split
  into five around a centre (a pinwheel) that no straight cut separates. The
  cut positions give a certificate packing, returned beside the buffers.
- `activation_instance`: production-like lifetimes and sizes of ML
  activations: many short-lived buffers, some skip connections, a few that
  live long, sizes of power-of-two flavour; its capacity is the peak live size
  (the lower bound), which may or may not pack.

Both are deterministic functions of their arguments (NumPy's PCG64 seeded by
`seed`); buffers are shuffled so that the row order leaks nothing of the
certificate. `HELDOUT` is the fixed benchmark set built from them.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import atomic_write
from memplace.model.packing.packers import Buffer, peak_live_size


@dataclass(frozen=True)
class Generated:
    """A generated instance: its buffers, the capacity to pack them at, and (for cut
    instances) offsets of a packing at exactly that capacity."""

    name: str
    buffers: list[Buffer]
    capacity: int
    certificate: np.ndarray | None = None


def _cut_point(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An interior grid point of [lo, hi), away from the ends more often than not."""
    return int(lo + 1 + min(rng.integers(0, hi - lo - 1), rng.integers(0, hi - lo - 1))
               if rng.random() < 0.3 else rng.integers(lo + 1, hi))


def cut_instance(buffers: int, seed: int, pinwheel: float = 0.25, grid: int = 1024,
                 grain: int = 1024) -> Generated:
    """`buffers` buffers tiling a `grid x grid` rectangle of `grain`-byte, `grain`-tick cells.

    Capacity and horizon are `grid * grain` (1048576 by default, as in MiniMalloc's
    suite). Pieces are chosen for cutting with probability proportional to their
    area, so sizes and lifetimes vary over orders of magnitude; a piece too thin to
    cut the chosen way is cut the other way. `pinwheel` is the share of cuts that
    are non-guillotine (each adds four pieces instead of one).
    """
    if buffers < 1:
        raise MemplaceError(f"cut instance: buffers {buffers} must be at least 1")
    if not 0.0 <= pinwheel <= 1.0:
        raise MemplaceError(f"cut instance: pinwheel share {pinwheel} must be within [0, 1]")
    if grid < 2 or grid * grid < buffers:
        raise MemplaceError(f"cut instance: a {grid}x{grid} grid cannot hold {buffers} buffers")
    rng = np.random.default_rng(seed)
    # pieces as (t0, t1, o0, o1) in grid cells
    pieces = [(0, grid, 0, grid)]
    while len(pieces) < buffers:
        area = np.array([(p[1] - p[0]) * (p[3] - p[2]) for p in pieces], float)
        cuttable = area > 1
        weights = np.where(cuttable, area, 0.0)
        k = int(rng.choice(len(pieces), p=weights / weights.sum()))
        t0, t1, o0, o1 = pieces[k]
        wide, tall = t1 - t0, o1 - o0
        if (len(pieces) + 4 <= buffers and wide >= 3 and tall >= 3
                and rng.random() < pinwheel):
            x1 = int(rng.integers(t0 + 1, t1 - 1))
            x2 = int(rng.integers(x1 + 1, t1))
            y1 = int(rng.integers(o0 + 1, o1 - 1))
            y2 = int(rng.integers(y1 + 1, o1))
            pieces[k] = (t0, x2, o0, y1)
            pieces += [(x2, t1, o0, y2), (x1, t1, y2, o1), (t0, x1, y1, o1), (x1, x2, y1, y2)]
            continue
        # cut across the longer side more often, so pieces stay varied but not slivers
        in_time = wide > 1 and (tall == 1 or rng.random() < wide / (wide + tall))
        if in_time:
            x = _cut_point(rng, t0, t1)
            pieces[k] = (t0, x, o0, o1)
            pieces.append((x, t1, o0, o1))
        else:
            y = _cut_point(rng, o0, o1)
            pieces[k] = (t0, t1, o0, y)
            pieces.append((t0, t1, y, o1))
    order = rng.permutation(len(pieces))
    out = [Buffer(str(i), pieces[j][0] * grain, pieces[j][1] * grain,
                  (pieces[j][3] - pieces[j][2]) * grain) for i, j in enumerate(order)]
    certificate = np.array([pieces[j][2] * grain for j in order], np.int64)
    kind = "cut" if pinwheel == 0 else "cutpw"
    return Generated(f"{kind}-{buffers}-s{seed}", out, grid * grain, certificate)


def activation_instance(ops: int, seed: int, slack: float = 0.0) -> Generated:
    """Buffers of a network of `ops` operators run in order, as a compiler sees them.

    Each operator writes one activation (and, one time in five, a scratch buffer
    alive only during the operator). Most activations are read by the next one to
    three operators; one in eight is a skip connection read 4-40 operators later;
    one in fifty lives to the end (an output or a state). Sizes are 2^k KiB times
    1, 3/2 or 5/4 with k mostly 2..8, as channel counts and spatial sizes make them.
    The capacity is the peak live size times `1 + slack`, rounded up to 1 KiB.
    """
    if ops < 1:
        raise MemplaceError(f"activation instance: ops {ops} must be at least 1")
    if slack < 0:
        raise MemplaceError(f"activation instance: slack {slack} must not be negative")
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(ops):
        kinds = rng.random()
        if kinds < 0.02:
            end = ops + 1
        elif kinds < 0.145:
            end = t + 1 + int(rng.integers(4, 41))
        else:
            end = t + 1 + int(rng.geometric(0.6))
        rows.append((t, min(end, ops + 1)))
        if rng.random() < 0.2:
            rows.append((t, t + 1))
    out = []
    for i in rng.permutation(len(rows)):
        k = int(np.clip(np.round(rng.normal(5.0, 1.6)), 0, 10))
        factor = (4, 4, 4, 6, 5)[int(rng.integers(0, 5))]  # quarters: 1, 3/2, 5/4
        size = (2 ** k) * factor * 256
        lower, upper = rows[i]
        out.append(Buffer(str(len(out)), lower, upper, size))
    peak = peak_live_size(out)
    capacity = -(-int(peak * (1 + slack)) // 1024) * 1024
    name = f"act-{ops}-s{seed}" + (f"-x{slack:g}" if slack else "")
    return Generated(name, out, max(capacity, peak))


def compiler_trace(buffers: int, seed: int) -> Generated:
    """`buffers` buffers of one training step as a compiler's memory planner sees it, shaped
    like the shared compiler traces (MindSpore SOMAS's ResNet-50 and Pangu-2.6B: lifespans
    of 2-20 steps for most, a tail of long ones, sizes from a few dozen distinct values).

    A forward pass of F operators, a backward pass of 2F and an optimiser tail of F/4. Each
    forward operator writes an activation: most are read within a few operators, one in
    five is saved for the backward pass and lives until the operator that mirrors it (so
    the saved ones nest, and the live size peaks where the passes meet); one in four has a
    scratch buffer of two steps. Each backward operator writes a gradient read soon after,
    and one in six a weight gradient that lives to the end (a staircase of buffers alive to
    the end, as in Pangu's trace). One buffer in sixteen is tiny (4-64 bytes) and long-lived
    (a scalar, a flag); three live throughout. Sizes come from a palette of 24 values of
    power-of-two flavour, a few of them common. The capacity is the peak live size (the
    trivial bound: these traces are for minimising the height).
    """
    if buffers < 8:
        raise MemplaceError(f"compiler trace: buffers {buffers} must be at least 8")
    rng = np.random.default_rng(seed)
    palette = np.unique((2 ** rng.integers(10, 25, 24)) * rng.choice([4, 5, 6], 24) // 4)
    weights = rng.zipf(1.6, palette.size).astype(float)
    weights /= weights.sum()
    forward = max(2, round(buffers / 4.4))
    backward = 2 * forward
    end = forward + backward + max(1, forward // 4)
    rows: list[tuple[int, int]] = []
    for t in range(forward):
        kind = rng.random()
        if kind < 0.55:
            rows.append((t, t + 1 + int(rng.geometric(0.5))))
        elif kind < 0.8:
            rows.append((t, t + int(rng.integers(5, 21))))
        else:
            rows.append((t, forward + 2 * (forward - 1 - t) + 1 + int(rng.integers(0, 4))))
        if rng.random() < 0.25:
            rows.append((t, t + 2))
    for t in range(forward, forward + backward):
        rows.append((t, t + 1 + int(rng.geometric(0.4))))
        if rng.random() < 1 / 6:
            rows.append((t, end))
    while len(rows) < buffers:  # the optimiser's short-lived buffers fill up to `buffers`
        t = int(rng.integers(forward + backward, end))
        rows.append((t, t + 2))
    keep = rng.permutation(len(rows))[:buffers]
    out = []
    for k, i in enumerate(keep):
        lower, upper = rows[i]
        upper = min(max(upper, lower + 2), end)
        size = int(palette[rng.choice(palette.size, p=weights)])
        if k < 3:
            lower, upper = 0, end
        elif rng.random() < 1 / 16:
            size = int(4 * 2 ** rng.integers(0, 5))
            upper = min(end, lower + int(rng.integers(1000, 20000)))
        out.append(Buffer(str(k), lower, max(upper, lower + 1), size))
    peak = peak_live_size(out)
    return Generated(f"trace-{buffers}-s{seed}", out, peak)


# The held-out benchmark set: fixed before the search was changed and never used to
# choose its rules. (kind, size, seed); cut kinds at MiniMalloc's scale (150-300
# buffers, capacity 2^20) and a few larger, activation instances at 200-1000 ops.
HELDOUT: tuple[tuple[str, int, int], ...] = (
    ("cut", 150, 101), ("cut", 200, 102), ("cut", 300, 103),
    ("cutpw", 150, 201), ("cutpw", 200, 202), ("cutpw", 250, 203), ("cutpw", 300, 204),
    ("cutpw", 400, 205), ("cutpw", 500, 206),
    ("act", 200, 301), ("act", 500, 302), ("act", 1000, 303),
)


def generate(kind: str, size: int, seed: int) -> Generated:
    """One instance by kind: "cut" (guillotine cuts only), "cutpw" (a quarter of the cuts
    are pinwheels), "act" (activation lifetimes; `size` is the operator count), or one of
    the families of `memplace.model.packing.families` ("kv", "pipe", "tiny", "tight"), or
    "trace" (`compiler_trace`; `size` is the buffer count)."""
    from memplace.model.packing.families import FAMILIES, family_instance
    if kind in FAMILIES:
        return family_instance(kind, size, seed)
    if kind == "cut":
        return cut_instance(size, seed, pinwheel=0.0)
    if kind == "cutpw":
        return cut_instance(size, seed, pinwheel=0.25)
    if kind == "act":
        return activation_instance(size, seed)
    if kind == "trace":
        return compiler_trace(size, seed)
    raise MemplaceError(f"unknown instance kind {kind!r}; known: cut, cutpw, act, trace, "
                        f"{', '.join(FAMILIES)}")


def heldout_set() -> list[Generated]:
    """The instances of HELDOUT, generated afresh (a few milliseconds each)."""
    return [generate(*spec) for spec in HELDOUT]


def write_csv(path: str | Path, buffers: Sequence[Buffer],
              offsets: Sequence[int] | None = None) -> None:
    """Write buffers as MiniMalloc CSV (`id,lower,upper,size`, plus `alignment` when any
    buffer has one above 1 and `offset` when given), atomically."""
    aligned = any(b.alignment != 1 for b in buffers)
    with atomic_write(path, "packing file", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["id", "lower", "upper", "size"] + (["alignment"] if aligned else [])
                        + (["offset"] if offsets is not None else []))
        for k, b in enumerate(buffers):
            row = [b.id, b.lower, b.upper, b.size] + ([b.alignment] if aligned else [])
            writer.writerow(row + ([int(offsets[k])] if offsets is not None else []))
