"""`msa`: XLA's memory-space assignment as the residency problem's default (docs/spec.md section 12).

XLA (openxla/xla, `xla/service/memory_space_assignment`) homes every value in the
default memory and gives values *allocations* in the alternate (fast) memory, buffer
by buffer, in decreasing *memory boundedness*: the latency the buffer's uses save when
fast, divided by the square root of its size. For each use of a buffer, in time order
(`AllocateSegment`), it

1. keeps the value in fast memory without a copy when it is there already (or is being
   defined there) and the interval since that allocation began is short enough (the
   picker's no-copy bound) and the space is free;
2. else evicts it to the default memory (only needed for a value defined in fast memory:
   the default copy is stale until then), due where the picker prefers;
3. else prefetches it for the use, trying the starts the cost-analysis prefetch interval
   picker proposes (`interval_picker.py`) until one has free space.

Chunks are placed best-fit, with a best-fit repack of the level when a chunk does not
fit although the load leaves room (`occupancy.py`).

In the residency problem's terms: the default memory is the slowest level (every home),
an allocation in fast memory is a `Window` (defining = written by the producer into
fast memory; prefetch = copied from the home), and a defining window that covers the
whole live range without an eviction is a *fast home* (XLA's whole-life no-copy
allocation), so it is written as a home in that level. Choices where XLA has no
counterpart:

- More than two levels: each segment tries the fastest level first, then the next
  ones down to the level just above the home (a no-copy extension stays in its level);
  the picker's `max` bound uses the capacity of the level tried.
- XLA's cost analysis guides every choice; the residency simulator (section 11) then
  checks each window as it is made (incremental re-simulation) and a window that does
  not lower the latency is dropped (its use is served by the home). This stands in for
  the parts of XLA's cost model that a heuristic cannot see here (channel contention).
- The result is compared with the static `compiler` placement (no windows) and the
  faster one is returned (ties: msa's own), so msa is never slower than `compiler`.
- XLA has one default memory; here a tensor's *default memory* is its home. `homes=
  "slowest"` homes everything in the slowest level (XLA's two-level picture taken
  literally), `homes="compiler"` in the static compiler placement's levels, `"best"`
  (the default) runs both and keeps the faster. Why not "slowest" alone: on a hierarchy
  with a large middle level (nnpi's 24 MB LLC, ten times DRAM's bandwidth) every tensor
  homed in DRAM must cross DRAM's channel each inference, which the compiler's homes in
  the LLC avoid; every window msa then adds only moves bytes DRAM's channel has no
  idle time for, so its allocation loses to the static compiler placement and msa fell
  back to it (no windows) on synth-1000/10000@nnpi and the imported ResNet-50. Over the
  compiler's homes the same algorithm keeps hundreds of windows there (see
  docs/residency-scale.md).
"""
from __future__ import annotations

from memplace.model.residency import ResidencySolution, lower_bound, simulate
from memplace.solvers import Param, SearchContext, register
from memplace.solvers.residency.machinery.starts import (HOMES, finish_seconds, msa_solution,
                                                         static_homes)

PARAMS = {
    "min_overlap": Param(0.8, float, 0.0, "preferred_overlap",
                         doc="a prefetch overlaps at least this many copy times"),
    "preferred_overlap": Param(1.5, float, "min_overlap", "max_overlap",
                               doc="prefetches and evictions aim at this many copy times"),
    "max_overlap": Param(10.0, float, "preferred_overlap",
                         doc="no-copy stays and prefetch overlaps last at most this many "
                             "copy times of the whole fast level"),
    "max_repacks": Param(16, int, 0, doc="best-fit repacks of an addressed level allowed"),
    "homes": Param("best", str, choices=HOMES,
                   doc="homes windows are added to: XLA's default memory, compiler's, or both"),
}


@register("msa", "XLA's memory-space assignment: windows by memory boundedness, no-copy / "
          "evict / prefetch per use with the cost-analysis interval picker (never slower than "
          "the static compiler placement); the residency problem's baseline", params=PARAMS, deterministic=True,
          problem="residency")
def solve_msa(ctx: SearchContext, min_overlap: float, preferred_overlap: float,
              max_overlap: float, max_repacks: int, homes: str) -> None:
    inst = ctx.instance
    ctx.lower_bound = lower_bound(inst)  # before the allocation, which takes the time left
    place, offsets = static_homes(inst, "compiler")  # an incumbent before the allocation
    static = ResidencySolution(inst.name, place, offsets)
    static.latency = simulate(inst, static)  # the claim a validator checks, if it stays best
    ctx.offer(static, static.latency)
    sol, stats = msa_solution(ctx.instance, min_overlap, preferred_overlap, max_overlap,
                              max_repacks, homes, deadline=ctx.deadline - finish_seconds(ctx.instance))
    ctx.count(1)
    ctx.notes.update(stats.as_notes())
    ctx.offer(sol, sol.latency)
