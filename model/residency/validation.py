"""The rules of a residency solution (docs/spec.md section 10, homes by sections 3 and 5).

`validate` collects every broken rule as a `Violation` naming the rule, the window
(its index in the solution), the tensor and the op, then recomputes the latency
(section 11) when the windows are well-formed enough to simulate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from memplace.model.instance import Instance
from memplace.model.residency.solution import NO_OFFSET, ResidencySolution, Window

LATENCY_RTOL = 1e-9  # docs/spec.md sections 7 and 11: a claim beyond this relative error is rejected
NEVER = np.iinfo(np.int64).max  # valid-from op of a home that never holds the data

# Rule names (stable: tests and tools match on them).
RULES = {
    "window-level": "a window's level must be strictly faster than its tensor's home",
    "window-order": "a window needs start <= first <= last",
    "window-live-range": "start, first and last must lie inside the tensor's live range",
    "window-kind": "start must equal first and the producer (defining) or be below first (prefetch)",
    "evict-defining": "only a defining window may be evicted",
    "evict-range": "an eviction [issue, due] needs producer < issue < due <= the live range's end",
    "one-defining": "a tensor has at most one defining window",
    "disjoint-occupancy": "the windows of one tensor occupy pairwise disjoint steps",
    "home-not-valid": "an access served by the home needs the home copy valid at that op",
    "prefetch-not-valid": "a prefetch needs the home copy valid at its start",
    "offsets-missing": "offsets are required when a level is addressed",
    "offset-missing": "a home or window in an addressed level needs an offset",
    "offset-not-addressed": "a home or window off addressed levels must have a null offset",
    "offset-alignment": "an offset must be a multiple of the level's alignment",
    "offset-bounds": "offset + size must not exceed the level's capacity",
    "offset-overlap": "homes and windows of an addressed level sharing a step must not share an address",
    "capacity": "a level's load (homes live plus windows occupying) must fit its capacity",
}
# Rules after which the windows cannot be simulated (who serves an access, or the
# copies' order, would be undefined); the latency is then NaN.
STRUCTURAL = {"window-level", "window-order", "window-live-range", "window-kind",
              "evict-defining", "evict-range", "one-defining", "disjoint-occupancy"}


@dataclass(frozen=True)
class Violation:
    """One broken rule: `window` is its index in the solution (-1 for a home or a level),
    `tensor` and `op` -1 where they do not apply."""

    rule: str
    message: str
    window: int = -1
    tensor: int = -1
    op: int = -1
    level: int = -1

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


@dataclass
class ResidencyValidation:
    valid: bool  # homes and windows obey sections 3, 5 and 10
    latency: float  # recomputed (section 11); NaN when the windows cannot be simulated
    violations: list[Violation]  # why it is invalid
    claim_errors: list[str] = field(default_factory=list)  # claims that do not hold

    @property
    def errors(self) -> list[str]:
        return [str(v) for v in self.violations] + self.claim_errors

    @property
    def ok(self) -> bool:
        return not self.violations and not self.claim_errors

    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}


def producer_of(instance: Instance, t: int) -> int:
    """The tensor's producer op, -1 when it has none."""
    p = instance.tensors[t]["producer"]
    return -1 if p is None else int(p)


def is_defining(instance: Instance, window: Window) -> bool:
    return window.start == window.first == producer_of(instance, window.tensor)


def valid_from(instance: Instance, windows, t: int) -> int:
    """First op at which tensor t's home copy holds the data (section 10); NEVER if none."""
    p = producer_of(instance, t)
    if p < 0:
        return 0
    for win in windows:
        if win.tensor == t and is_defining(instance, win):
            return NEVER if win.evict is None else win.evict[1]
    return p + 1


def _window_violations(i: Instance, solution: ResidencySolution, w: int, win: Window) -> list[Violation]:
    t = win.tensor
    label = f"window {w} of {i.tensor_label(t)} in {i.level_names[win.level]!r}"
    out = []

    def bad(rule: str, text: str, op: int = -1) -> None:
        out.append(Violation(rule, f"{label}: {text}", w, t, op, win.level))

    home = int(solution.placement[t])
    if win.level >= home:
        bad("window-level", f"level {win.level} is not faster than the home level {home} "
                            f"{i.level_names[home]!r}")
    if not win.start <= win.first <= win.last:
        bad("window-order", f"start {win.start}, first {win.first}, last {win.last} are not in order",
            win.start)
    lo, hi = int(i.start[t]), int(i.end[t])
    for name, k in (("start", win.start), ("first", win.first), ("last", win.last)):
        if not lo <= k <= hi:
            bad("window-live-range", f"{name} {i.op_label(k)} is outside the live range {lo}..{hi}", k)
    p = producer_of(i, t)
    defining = is_defining(i, win)
    if win.start <= win.first <= win.last and not defining and not win.start < win.first:
        why = ("the tensor has no producer" if p < 0 else f"the producer is op {p}")
        bad("window-kind", f"start == first == {win.start} but {why}: neither defining nor prefetch",
            win.start)
    if win.evict is not None:
        issue, due = win.evict
        if not defining:
            bad("evict-defining", f"evict [{issue}, {due}] on a window that is not defining", issue)
        elif not p < issue < due <= hi:
            bad("evict-range", f"evict [{issue}, {due}] breaks producer {p} < issue < due <= {hi}", issue)
    level = i.levels[win.level]
    if level.addressed:
        if win.offset is None:
            bad("offset-missing", f"addressed level {level.name!r} needs an offset", win.start)
        else:
            if win.offset % level.alignment:
                bad("offset-alignment", f"offset {win.offset} is not a multiple of the alignment "
                                        f"{level.alignment}", win.start)
            if win.offset + int(i.size[t]) > level.capacity:
                bad("offset-bounds", f"offset {win.offset} + size {int(i.size[t])} exceeds the "
                                     f"capacity {level.capacity}", win.start)
    elif win.offset is not None:
        bad("offset-not-addressed", f"offset {win.offset} but level {level.name!r} is not addressed",
            win.start)
    return out


def _tensor_violations(i: Instance, windows: tuple[Window, ...]) -> list[Violation]:
    """One defining window per tensor; disjoint occupancies among a tensor's windows."""
    out = []
    by_tensor: dict[int, list[int]] = {}
    for w, win in enumerate(windows):
        by_tensor.setdefault(win.tensor, []).append(w)
    for t, ws in sorted(by_tensor.items()):
        defining = [w for w in ws if is_defining(i, windows[w])]
        for w in defining[1:]:
            out.append(Violation("one-defining", f"window {w} of {i.tensor_label(t)} is a second "
                                 f"defining window (window {defining[0]} is one)", w, t, windows[w].start))
        spans = sorted((windows[w].start, windows[w].hold, w) for w in ws)
        for (s1, h1, w1), (s2, h2, w2) in zip(spans, spans[1:]):
            if s2 <= h1:
                out.append(Violation("disjoint-occupancy",
                                     f"windows {w1} and {w2} of {i.tensor_label(t)} both occupy "
                                     f"{i.op_label(s2)}", w2, t, s2))
    return out


def _service_violations(i: Instance, solution: ResidencySolution) -> list[Violation]:
    """Every access served by the home, and every prefetch, needs the home valid (section 10)."""
    out = []
    windows = solution.windows
    by_tensor: dict[int, list[int]] = {}
    for w, win in enumerate(windows):
        by_tensor.setdefault(win.tensor, []).append(w)
    for t in range(i.n_tensors):
        ws = by_tensor.get(t, [])
        if not ws:  # without windows the home is valid from the producer's write on
            continue
        v = valid_from(i, [windows[w] for w in ws], t)
        when = "never" if v == NEVER else f"from op {v}"
        p = producer_of(i, t)
        for a in range(i.tensor_ptr[t], i.tensor_ptr[t + 1]):
            k = int(i.access_op[i.tensor_access[a]])
            if any(windows[w].first <= k <= windows[w].last for w in ws):
                continue
            if k != p and k < v:
                out.append(Violation("home-not-valid", f"{i.op_label(k)} reads {i.tensor_label(t)} "
                                     f"from its home, valid {when}", -1, t, k, int(solution.placement[t])))
        for w in ws:
            win = windows[w]
            if win.start < win.first and win.start < v:
                out.append(Violation("prefetch-not-valid", f"window {w} of {i.tensor_label(t)} "
                                     f"prefetches at {i.op_label(win.start)} but the home is valid {when}",
                                     w, t, win.start, win.level))
    return out


def _home_offset_violations(i: Instance, solution: ResidencySolution) -> list[Violation]:
    out = []
    place = solution.placement
    given = solution.offsets_given
    if given is not None:
        for t, l in enumerate(place.tolist()):
            if given[t] and not i.addressed[l]:
                out.append(Violation("offset-not-addressed", f"home of {i.tensor_label(t)} has an offset "
                                     f"but level {i.level_names[l]!r} is not addressed", -1, t, -1, l))
    if not i.has_addressed_levels:
        return out
    if solution.offsets is None:
        if any(i.addressed[l] for l in place.tolist()) or any(i.addressed[w.level] for w in solution.windows):
            out.append(Violation("offsets-missing", "a level is addressed but the solution has no offsets"))
        return out
    for t, l in enumerate(place.tolist()):
        level = i.levels[l]
        if not level.addressed:
            continue
        o = int(solution.offsets[t])
        label = f"home of {i.tensor_label(t)} in {level.name!r}"
        if o == NO_OFFSET:
            out.append(Violation("offset-missing", f"{label} has no offset", -1, t, -1, l))
            continue
        if o % level.alignment:
            out.append(Violation("offset-alignment", f"{label}: offset {o} is not a multiple of the "
                                 f"alignment {level.alignment}", -1, t, -1, l))
        if o + int(i.size[t]) > level.capacity:
            out.append(Violation("offset-bounds", f"{label}: offset {o} + size {int(i.size[t])} exceeds "
                                 f"the capacity {level.capacity}", -1, t, -1, l))
    return out


def _overlap_violations(i: Instance, solution: ResidencySolution) -> list[Violation]:
    """Homes and windows of each addressed level: no shared step and address (a sweep)."""
    out = []
    for l, level in enumerate(i.levels):
        if not level.addressed:
            continue
        # items: (first step, last step, offset, size, window index or -1, tensor)
        items = []
        if solution.offsets is not None:
            for t in np.flatnonzero(solution.placement == l).tolist():
                o = int(solution.offsets[t])
                if o != NO_OFFSET:
                    items.append((int(i.start[t]), int(i.end[t]), o, int(i.size[t]), -1, t))
        for w, win in enumerate(solution.windows):
            if win.level == l and win.offset is not None and win.start <= win.hold:
                items.append((win.start, win.hold, win.offset, int(i.size[win.tensor]), w, win.tensor))
        items.sort()
        active: list[tuple] = []
        for item in items:
            active = [a for a in active if a[1] >= item[0]]
            for a in active:
                if item[2] < a[2] + a[3] and a[2] < item[2] + item[3]:
                    names = [f"window {x[4]} of {i.tensor_label(x[5])}" if x[4] >= 0 else
                             f"home of {i.tensor_label(x[5])}" for x in (a, item)]
                    out.append(Violation("offset-overlap", f"{names[0]} and {names[1]} share "
                                         f"{i.op_label(item[0])} and addresses in {level.name!r}",
                                         item[4], item[5], item[0], l))
            active.append(item)
    return out


def load_with_windows(instance: Instance, placement: np.ndarray, windows) -> np.ndarray:
    """load[l, k]: homes placed in l and live at k, plus windows in l occupying k (section 10)."""
    i = instance
    diff = np.zeros((i.n_levels, i.n_ops + 1), np.int64)
    np.add.at(diff, (placement, i.start), i.size)
    np.add.at(diff, (placement, i.end + 1), -i.size)
    for win in windows:  # clipped to the schedule: ops outside it are a rule of their own
        lo, hi = max(win.start, 0), min(win.hold, i.n_ops - 1)
        if lo <= hi:
            diff[win.level, lo] += i.size[win.tensor]
            diff[win.level, hi + 1] -= i.size[win.tensor]
    return np.cumsum(diff[:, :-1], axis=1)


def _capacity_violations(i: Instance, solution: ResidencySolution) -> list[Violation]:
    load = load_with_windows(i, solution.placement, solution.windows)
    return [Violation("capacity", message, -1, -1, k, l)
            for l, k, message in i.capacity_overflows(load)]


def violations(instance: Instance, solution: ResidencySolution) -> list[Violation]:
    """Every broken rule of sections 3, 5 and 10, in a stable order."""
    i = instance
    out: list[Violation] = []
    for w, win in enumerate(solution.windows):
        out += _window_violations(i, solution, w, win)
    out += _tensor_violations(i, solution.windows)
    structural = any(v.rule in STRUCTURAL for v in out)
    if not structural:  # who serves an access is defined only for well-formed windows
        out += _service_violations(i, solution)
    out += _home_offset_violations(i, solution)
    out += _overlap_violations(i, solution)
    out += _capacity_violations(i, solution)
    return out


def validate(instance: Instance, solution: ResidencySolution) -> ResidencyValidation:
    """Check a residency solution against the spec and recompute its latency."""
    from memplace.model.residency.simulation import simulate

    i = instance
    found = violations(i, solution)
    claims = []
    if solution.instance and solution.instance != i.name:
        claims.append(f"solution is for instance {solution.instance!r}, not {i.name!r}")
    if any(v.rule in STRUCTURAL for v in found):
        recomputed = math.nan
    else:
        recomputed = simulate(i, solution)
        if not math.isclose(solution.latency, recomputed, rel_tol=LATENCY_RTOL, abs_tol=0.0):
            claims.append(f"claimed latency {solution.latency!r} s differs from the recomputed "
                          f"{recomputed!r} s by more than relative {LATENCY_RTOL}")
        if solution.lower_bound is not None and solution.lower_bound > recomputed * (1 + LATENCY_RTOL):
            claims.append(f"claimed lower bound {solution.lower_bound!r} s is above the latency "
                          f"{recomputed!r} s")
    return ResidencyValidation(valid=not found, latency=recomputed, violations=found, claim_errors=claims)
