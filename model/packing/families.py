"""Seeded generators of packing families unlike the cut and activation ones of `generate`.

Written to measure the exact search away from the shapes it was tuned on:

- `kv_instance`: a transformer decoding with continuous batching. Every layer
  of every decode step writes each active request's KV cache afresh, one token
  longer than the step before (a concatenation: the old cache dies when the new
  one is written), beside per-step hidden states and attention scores; requests
  arrive and finish at random steps, with prompts of different lengths, so
  sizes climb in staircases of every height.
- `pipeline_instance`: one stage of a pipeline-parallel 1F1B schedule. Each
  micro-batch's forward pass stashes the activations of every layer of the
  stage until its backward pass, which also needs short-lived gradient and
  workspace buffers; gradient accumulators live from the first backward to the
  end. Micro-batches carry different sequence lengths.
- `tiny_instance`: a few huge buffers (a fifth to a half of the peak each) among
  many tiny ones (16 B to 4 KiB, some aligned to 64 or 256 bytes), with lifetimes
  from one step to nearly the whole horizon.
- `tight_instance`: capacity at 99.9% slack-free: activation-like buffers placed
  by an online first fit (the order a runtime allocator sees them), every hole
  of that packing below its height filled with further buffers, and the capacity
  set so that the peak live size is 99.9% of it. A certificate packing exists at
  the capacity, but only 0.1% is left over anywhere.

The first three take the peak live size as capacity (the lowest that can pack;
whether it packs is for the packer to settle: it packs or it proves it cannot).
All are deterministic functions of (size, seed), with the buffer order shuffled.
`HELDOUT_FAMILIES` is the benchmark set made of them (committed as files, so a
change here never changes it silently).
"""
from __future__ import annotations

import numpy as np

from memplace.model.core.errors import MemplaceError
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.generate import Generated
from memplace.model.packing.packers import peak_live_size

KIB = 1024


def _shuffled(rng: np.random.Generator, rows: list[tuple[int, int, int, int]],
              ) -> tuple[list[Buffer], np.ndarray]:
    """Buffers from (lower, upper, size, alignment) rows in a random order, and that order."""
    order = rng.permutation(len(rows))
    return [Buffer(str(k), rows[j][0], rows[j][1], rows[j][2], rows[j][3])
            for k, j in enumerate(order)], order


def _at_peak(name: str, rng: np.random.Generator, rows: list[tuple[int, int, int, int]]
             ) -> Generated:
    buffers, _ = _shuffled(rng, rows)
    return Generated(name, buffers, peak_live_size(buffers))


def kv_instance(steps: int, seed: int) -> Generated:
    """`steps` decode steps of a 2-4 layer transformer serving requests in continuous batches."""
    if steps < 1:
        raise MemplaceError(f"kv instance: steps {steps} must be at least 1")
    rng = np.random.default_rng(seed)
    layers = int(rng.integers(2, 5))
    token = int(rng.choice([2, 4, 8])) * KIB        # K and V of one token, one layer
    hidden = int(rng.choice([4, 8, 16])) * KIB       # one token's hidden state
    ticks = 3                                        # per layer: qkv, attention, mlp
    requests = []                                    # (arrival step, prompt, generated)
    for _ in range(max(2, steps // 6)):
        requests.append((int(rng.integers(0, max(1, steps - 2))),
                         int(rng.integers(4, 65)), int(rng.integers(4, max(5, steps // 2)))))
    rows = []

    def tick(step: int, layer: int, k: int) -> int:
        return (step * layers + layer) * ticks + k

    for step in range(steps):
        active = [(a, p, g) for a, p, g in requests if a <= step < a + g]
        if not active:
            continue
        for layer in range(layers):
            t0 = tick(step, layer, 0)
            rows.append((t0, t0 + ticks, hidden * len(active), 1))      # hidden states in
            for a, p, g in active:
                length = p + step - a + 1
                # the new cache is written by the attention op and read by the next step's
                end = tick(step + 1, layer, 2) if step + 1 < a + g else t0 + ticks
                rows.append((t0 + 1, end, length * token, 1))
                rows.append((t0 + 1, t0 + 2, length * 4 * int(rng.choice([4, 8])), 1))  # scores
    return _at_peak(f"kv-{steps}-s{seed}", rng, rows)


def pipeline_instance(microbatches: int, seed: int) -> Generated:
    """One stage of a 1F1B pipeline schedule over `microbatches` micro-batches."""
    if microbatches < 1:
        raise MemplaceError(f"pipeline instance: micro-batches {microbatches} must be at least 1")
    rng = np.random.default_rng(seed)
    stages = int(rng.integers(2, 9))
    stage = int(rng.integers(0, stages))
    depth = int(rng.integers(2, 6))                      # layers in this stage
    widths = [int(rng.choice([1, 2, 3, 4])) for _ in range(depth)]
    seq = [int(rng.integers(8, 33)) for _ in range(microbatches)]  # KiB per unit width
    warmup = min(microbatches, stages - stage)
    # the 1F1B order of passes: warm-up forwards, then one backward per forward, then the rest
    passes = [("F", m) for m in range(warmup)]
    fwd, bwd = warmup, 0
    while bwd < microbatches:
        passes.append(("B", bwd))
        bwd += 1
        if fwd < microbatches:
            passes.append(("F", fwd))
            fwd += 1
    slot = 2 * depth + 1
    forward_at = {m: k * slot for k, (kind, m) in enumerate(passes) if kind == "F"}
    backward_at = {m: k * slot for k, (kind, m) in enumerate(passes) if kind == "B"}
    end = len(passes) * slot
    rows = []
    for m in range(microbatches):
        f, b = forward_at[m], backward_at[m]
        for layer in range(depth):
            size = widths[layer] * seq[m] * KIB
            # stashed activation: written in the forward, last read in this layer's backward
            rows.append((f + layer, b + 2 * (depth - layer), size, 1))
            rows.append((f + layer, f + layer + 1, size // 2 + KIB, 1))       # forward workspace
            t = b + 2 * (depth - 1 - layer)
            rows.append((t, t + 3, size, 1))                                   # its gradient
        rows.append((f, f + 1, seq[m] * KIB, 1))                               # received input
    first_backward = min(backward_at.values())
    for layer in range(depth):
        rows.append((first_backward, end, widths[layer] * 64 * KIB, 1))        # weight grads
    return _at_peak(f"pipe-{microbatches}-s{seed}", rng, rows)


def tiny_instance(buffers: int, seed: int) -> Generated:
    """`buffers` buffers: 3-8 huge ones among tiny ones, over a horizon of about buffers/4."""
    if buffers < 10:
        raise MemplaceError(f"tiny instance: buffers {buffers} must be at least 10")
    rng = np.random.default_rng(seed)
    horizon = max(16, buffers // 4)
    huge = int(rng.integers(3, 9))
    rows = []
    for _ in range(buffers - huge):
        start = int(rng.integers(0, horizon))
        kind = rng.random()
        length = 1 + (int(rng.geometric(0.4)) if kind < 0.8 else int(rng.integers(1, horizon)))
        size = int(2 ** rng.integers(4, 13)) * int(rng.choice([1, 1, 3]))
        align = int(rng.choice([1, 1, 1, 64, 256]))
        rows.append((start, min(horizon, start + length), size, align))
    small_peak = peak_live_size([Buffer("", lo, hi, s) for lo, hi, s, _ in rows])
    for _ in range(huge):
        start = int(rng.integers(0, horizon - 1))
        length = int(rng.integers(1, horizon - start + 1))
        size = int(small_peak * rng.uniform(0.6, 3.0)) // 64 * 64 + 64
        rows.append((start, start + length, size, 1))
    return _at_peak(f"tiny-{buffers}-s{seed}", rng, rows)


def _first_fit_online(rows: list[tuple[int, int, int]]) -> list[int]:
    """Offsets of an online first fit: buffers by start time, each at the lowest offset
    free over its lifespan (O(n^2), for generating only)."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], i))
    offsets = [0] * len(rows)
    placed: list[int] = []
    for i in order:
        lo, hi, size = rows[i]
        busy = sorted((offsets[j], offsets[j] + rows[j][2]) for j in placed
                      if rows[j][0] < hi and lo < rows[j][1])
        at = 0
        for a, b in busy:
            if at + size <= a:
                break
            at = max(at, b)
        offsets[i] = at
        placed.append(i)
    return offsets


def _holes(rows: list[tuple[int, int, int]], offsets: list[int], height: int
           ) -> list[tuple[int, int, int, int]]:
    """The free space of a packing below `height` cut into rectangles (t0, t1, a0, a1): per
    time section the free address intervals, each extended over the following sections for
    as long as exactly that interval stays free."""
    points = sorted({t for lo, hi, _ in rows for t in (lo, hi)})
    free_at = []
    for t0, t1 in zip(points, points[1:]):
        busy = sorted((offsets[i], offsets[i] + rows[i][2]) for i in range(len(rows))
                      if rows[i][0] < t1 and t0 < rows[i][1])
        free, at = [], 0
        for a, b in busy:
            if a > at:
                free.append((at, a))
            at = max(at, b)
        if at < height:
            free.append((at, height))
        free_at.append(set(free))
    out, open_ = [], {}
    for k, free in enumerate(free_at):
        for interval in list(open_):
            if interval not in free:
                out.append((open_.pop(interval), points[k], *interval))
        for interval in free:
            open_.setdefault(interval, points[k])
    out += [(start, points[-1], *interval) for interval, start in open_.items()]
    return out


def tight_instance(ops: int, seed: int) -> Generated:
    """Activation-like buffers of `ops` operators plus fillers of their online packing's
    holes; capacity such that the peak live size (the packing's height) is 99.9% of it."""
    if ops < 2:
        raise MemplaceError(f"tight instance: ops {ops} must be at least 2")
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(ops):
        kind = rng.random()
        end = ops + 1 if kind < 0.03 else t + 1 + (int(rng.integers(3, 30)) if kind < 0.15
                                                   else int(rng.geometric(0.6)))
        size = int(2 ** np.clip(round(rng.normal(4.0, 1.5)), 0, 8)) * int(rng.choice([4, 5, 6])) * KIB
        rows.append((t, min(end, ops + 1), size))
    offsets = _first_fit_online(rows)
    height = max(o + r[2] for o, r in zip(offsets, rows))
    fillers = [(t0, t1, a1 - a0) for t0, t1, a0, a1 in _holes(rows, offsets, height)]
    every = [(lo, hi, size, 1) for lo, hi, size in rows + fillers]
    buffers, order = _shuffled(rng, every)
    certificate = np.array(offsets + [a0 for _, _, a0, _ in _holes(rows, offsets, height)],
                           np.int64)[order]
    capacity = -(-height * 1000 // 999)
    return Generated(f"tight-{ops}-s{seed}", buffers, capacity, certificate)


# The held-out families: committed as files under benchmarks/families/ (NAME.CAPACITY.csv,
# written by `memplace pack-generate --families`) before the search was changed for them.
HELDOUT_FAMILIES: tuple[tuple[str, int, int], ...] = (
    ("kv", 24, 401), ("kv", 40, 402), ("kv", 64, 403),
    ("pipe", 8, 501), ("pipe", 16, 502), ("pipe", 32, 503),
    ("tiny", 300, 601), ("tiny", 1000, 602), ("tiny", 3000, 603),
    ("tight", 60, 701), ("tight", 120, 702), ("tight", 250, 703),
)

FAMILIES = {"kv": kv_instance, "pipe": pipeline_instance, "tiny": tiny_instance,
            "tight": tight_instance}


def family_instance(kind: str, size: int, seed: int) -> Generated:
    """One instance of family `kind` (one of FAMILIES)."""
    if kind not in FAMILIES:
        raise MemplaceError(f"unknown family {kind!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[kind](size, seed)
