"""`msa`, XLA's memory-space assignment for the residency problem: its interval picker,
its best-fit chunks, a hand-checked prefetch, validity and the compiler fall-back."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance, latency
from memplace.model.core.errors import ParameterError
from memplace.model.residency import simulate, validate
from memplace.solvers import solver_info
from memplace.solvers.residency.machinery.fast_memory import FastMemory, best_fit_gap
from memplace.solvers.residency.machinery.interval_picker import IntervalPicker
from memplace.solvers.residency.machinery.allocation import assign_windows
from memplace.solvers.residency.machinery.starts import msa_solution
from memplace.solvers.residency.machinery.starts import static_homes
from randominst import random_instance_dict

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ interval picker
@st.composite
def picker_cases(draw):
    n = draw(st.integers(2, 12))
    elapsed = np.array(draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n)))
    lo_ratio = draw(st.floats(0.0, 2.0))
    pref = draw(st.floats(lo_ratio, 4.0))
    hi_ratio = draw(st.floats(pref, 12.0))
    first = draw(st.integers(1, n - 1))
    lo = draw(st.integers(0, first - 1))
    copy_s = draw(st.floats(0.01, 5.0))
    max_el = draw(st.floats(0.0, 40.0))
    reduction = draw(st.floats(0.0, 1.0))
    return IntervalPicker(elapsed, lo_ratio, pref, hi_ratio), lo, first, copy_s, max_el, reduction


@SETTINGS
@given(picker_cases())
def test_picker_starts_respect_min_and_max_and_begin_at_the_preferred_one(case):
    picker, lo, first, copy_s, max_el, reduction = case
    starts = picker.starts(copy_s, lo, first, max_el, reduction)
    assert list(picker.iter_starts(copy_s, lo, first, max_el, reduction)) == starts
    allowed = [s for s in range(lo, first)
               if picker.overlap(s, first) + reduction >= picker.min_ratio * copy_s
               and picker.overlap(s, first) <= max_el]
    assert len(starts) == len(set(starts))
    assert set(starts) <= set(allowed)
    if not starts:
        assert allowed == []
        return
    target = picker.preferred_ratio * copy_s
    closest = min(abs(target - picker.overlap(s, first)) for s in allowed)
    assert abs(target - picker.overlap(starts[0], first)) == pytest.approx(closest, abs=1e-12)
    # every allowed start from the preferred one up to the latest is tried
    assert set(range(starts[0], max(allowed) + 1)) & set(allowed) <= set(starts)


def test_picker_hand_values():
    picker = IntervalPicker(np.ones(6), 0.8, 1.5, 10.0)  # six ops of 1 s
    # copy of 2 s for a use at op 5: min 1.6 s -> latest start 3 (2 s); preferred 3 s -> 2
    assert picker.latest_start(2.0, 0, 5) == 3
    assert picker.preferred_start(2.0, 0, 3, 5) == 2
    assert picker.starts(2.0, 0, 5, max_elapsed=100.0)[:3] == [2, 3, 1]
    # max 4 s of overlap: starts below 1 are out
    assert min(picker.starts(2.0, 0, 5, max_elapsed=4.0)) == 1
    # eviction issued before op 1 of a 2 s copy is due once 3 s have passed
    assert picker.eviction_due(2.0, 1, 5) == 4
    assert picker.eviction_due(2.0, 1, 3) == 3  # capped by the next use
    assert picker.no_copy_ok(0, 3, 3.5) and not picker.no_copy_ok(0, 4, 3.5)


# ------------------------------------------------------------------ fast memory
def test_best_fit_takes_the_smallest_gap_that_holds_the_chunk():
    busy = [(0, 10), (30, 40), (48, 60)]  # gaps: 10..30 (20), 40..48 (8), 60..100 (40)
    assert best_fit_gap(busy, 8, 1, 100) == 40
    assert best_fit_gap(busy, 12, 1, 100) == 10
    assert best_fit_gap(busy, 12, 16, 100) == 16  # aligned inside 10..30
    assert best_fit_gap(busy, 41, 1, 100) == -1


@pytest.mark.parametrize("alignment, size, expected", [(1, 5, 24), (1, 4, 10), (8, 4, 24), (16, 4, 48),
                                                      (1, 61, -1), (1, 60, 40)])
def test_best_fit_sees_only_the_chunks_live_over_the_ops_asked(alignment, size, expected):
    data = random_instance_dict(3, n_ops=10, n_tensors=2, n_levels=2, addressed=True)
    data["hardware"]["levels"][0].update(capacity=100, alignment=alignment)
    fast = FastMemory(Instance.from_dict(data))
    for key, (offset, nbytes, lo, hi) in enumerate([(0, 10, 0, 5), (14, 10, 0, 5), (30, 10, 0, 5),
                                                    (50, 50, 9, 9)]):
        fast.book(key, 0, lo, hi, nbytes, offset)
    # gaps over ops 2..4: [10,14) (4 bytes), [24,30) (6), [40,100) (60); 10 aligned to 8 is 16
    assert fast.best_fit(0, 2, 4, size) == expected


def test_fast_memory_repacks_when_no_gap_fits_although_the_load_leaves_room():
    data = random_instance_dict(3, n_ops=4, n_tensors=2, n_levels=2, addressed=True)
    data["hardware"]["levels"][0].update(capacity=100, alignment=1)
    inst = Instance.from_dict(data)
    fast = FastMemory(inst, max_repacks=1)
    for key, size in (("x1", 20), ("x2", 30), ("x3", 20), ("x4", 30)):  # 0, 20, 50, 70
        assert fast.allocate(key, 0, 0, 1, size)
    assert [fast.offset(k) for k in ("x1", "x2", "x3", "x4")] == [0, 20, 50, 70]
    fast.release("x1")
    fast.release("x3")  # free: 0..20 and 50..70
    # 40 bytes over ops 0..1: the load (60) leaves room, no gap does -> repack
    assert fast.allocate("d", 0, 0, 1, 40)
    assert fast.repacks == 1
    spans = [(fast.offset(k), fast.offset(k) + fast.booked[k][3]) for k in ("x2", "x4", "d")]
    assert all(a[1] <= b[0] or b[1] <= a[0] for i, a in enumerate(spans) for b in spans[i + 1:])
    assert not fast.allocate("e", 0, 0, 1, 1)  # full at op 1


# ------------------------------------------------------------------ a prefetch by hand
def _one_prefetch_instance(busy_channel: bool = False) -> Instance:
    """Five ops of 1 us compute, then op 5 reads weight w (2000 B): 2 us from DRAM, 2 ns
    from SRAM. The SRAM holds w; copies run at 1 GB/s (2 us for w). With `busy_channel`,
    ops 0-4 each read 1000 B of a DRAM weight x (1 us: DRAM's channel is never idle, and x
    gains nothing in SRAM since the ops stay compute-bound)."""
    ops = [{"name": f"op{k}", "type": "x", "flops": 1000.0} for k in range(6)]
    tensors = [{"name": "w", "kind": "weight", "size": 2000, "producer": None,
                "accesses": [[5, 2000]]}]
    if busy_channel:
        tensors.append({"name": "x", "kind": "weight", "size": 1000, "producer": None,
                        "accesses": [[k, 1000] for k in range(5)]})
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "prefetch@test",
        "workload": {"name": "prefetch", "ops": ops, "tensors": tensors},
        "hardware": {"name": "two", "compute_rate": 1e9, "levels": [
            {"name": "SRAM", "capacity": 4000, "bandwidth": 1e12},
            {"name": "DRAM", "capacity": None, "bandwidth": 1e9}]}})


def test_a_needed_prefetch_starts_where_the_picker_prefers():
    inst = _one_prefetch_instance()
    sol, stats = assign_windows(inst, inst.slowest_placement(), None)
    assert stats.prefetches == 1 and len(sol.windows) == 1
    (win,) = sol.windows
    # overlap wanted: 1.5 x 2 us = 3 us -> ops 2, 3, 4 -> start 2; the use is op 5
    assert (win.level, win.start, win.first, win.last) == (0, 2, 5, 5)
    picker = IntervalPicker(np.array([1e-6] * 5 + [2e-6]))
    assert win.start == picker.starts(2e-6, 0, 5, picker.max_elapsed(4000, 1e9), 1e-6)[0]
    # the copy is complete by op 5: 5 us of compute then 1 us for op 5, no wait
    assert math.isclose(simulate(inst, sol), 6e-6, rel_tol=1e-12)
    assert validate(inst, sol).valid


def test_a_prefetch_that_would_not_help_is_dropped_by_the_simulator():
    inst = _one_prefetch_instance(busy_channel=True)
    # the picker still proposes start 2, but the copy only moves in a 2 us wait before op 5:
    # 5 + 2 (wait) + 1 = 8 us against 5 + 2 = 7 us reading w from DRAM
    sol, stats = assign_windows(inst, inst.slowest_placement(), None)
    assert sol.windows == () and stats.rejected == 1


# ------------------------------------------------------------------ the solver
def _check(inst: Instance) -> None:
    sol, stats = msa_solution(inst)
    check = validate(inst, sol)
    assert check.valid, check.errors[:3]
    assert math.isclose(check.latency, sol.latency, rel_tol=1e-9)
    compiler = latency(inst, static_homes(inst, "compiler")[0])
    assert sol.latency <= compiler * (1 + 1e-12)
    assert stats.windows == len(sol.windows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans())
def test_msa_is_valid_and_never_slower_than_compiler_on_random_instances(seed, addressed):
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=int(rng.integers(3, 10)), n_tensors=int(rng.integers(2, 12)),
                                n_levels=int(rng.integers(2, 4)), addressed=addressed)
    for level in data["hardware"]["levels"]:
        if rng.random() < 0.5:
            level["copy_bandwidth"] = level["bandwidth"] * float(rng.choice([0.1, 1.0, 5.0]))
    _check(Instance.from_dict(data))


@pytest.mark.parametrize("name", ["resnet50@nnpi", "mobilenetv2@edge-npu", "gpt2@edge-npu",
                                  "bert-base@tpu", "unet@nnpi", "synth-100@nnpi"])
def test_msa_is_valid_and_never_slower_than_compiler_on_committed_instances(name):
    _check(load(name))


@pytest.mark.parametrize("name", ["efficientnet-b0@gpu", "bert-base@tpu"])
def test_the_msa_solver_returns_a_solution_that_validates_as_it_stands(name):
    """Through solve(): on efficientnet-b0@gpu msa ties the compiler placement it offers
    first, so that first offer is what is returned, and its claimed latency must be set
    (`memplace residency-table` validates the solution object itself)."""
    from memplace.solvers import solve
    inst = load(name)
    result = solve(inst, "msa", time_limit=None, problem="residency")
    check = validate(inst, result.solution)
    assert check.valid, check.errors[:3]
    assert math.isclose(result.solution.latency, result.latency, rel_tol=1e-12)


def test_msa_makes_windows_where_streaming_pays():
    """bert-base@tpu: XLA's homes with prefetched weights beat the compiler's pinned ones."""
    sol, stats = msa_solution(load("bert-base@tpu"))
    assert not stats.fallback and stats.prefetches > 0
    assert sol.latency < latency(load("bert-base@tpu"), static_homes(load("bert-base@tpu"), "compiler")[0])


def test_msa_is_deterministic():
    inst = load("gpt2@edge-npu")
    (a, _), (b, _) = msa_solution(inst, homes="best"), msa_solution(inst, homes="best")
    assert a.windows == b.windows and a.placement.tolist() == b.placement.tolist()
    assert a.offsets.tolist() == b.offsets.tolist() and a.latency == b.latency


def test_msa_overlap_parameters_are_checked_against_each_other():
    info = solver_info("msa", "residency")
    assert info.check({})["min_overlap"] == 0.8
    assert info.check({})["preferred_overlap"] == 1.5 and info.check({})["max_overlap"] == 10.0
    with pytest.raises(ParameterError, match="min_overlap"):
        info.check({"min_overlap": 2.0})  # above preferred_overlap
    with pytest.raises(ParameterError, match="homes"):
        info.check({"homes": "fastest"})
