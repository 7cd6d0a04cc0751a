"""The Numba residency kernels against the plain-Python reference (docs/spec.md section 11), on
random instances and random valid window sets (tests/residency_windows.py)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import Instance, latency
from memplace.model.residency import (ResidencySolution, Simulation, Window, details, reference,
                                      simulate, simulate_batch, violations)
from randominst import random_instance_dict
from residency_windows import every_access_windows, random_homes, random_windows

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _case(seed: int, n_ops: int = 8, n_tensors: int = 10, density: float = 0.7):
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=n_ops, n_tensors=n_tensors, n_levels=int(rng.integers(2, 4)))
    for level in data["hardware"]["levels"]:
        if rng.random() < 0.5:  # copies sometimes slower than accesses, sometimes faster
            level["copy_bandwidth"] = level["bandwidth"] * float(rng.choice([0.05, 0.3, 1.0, 3.0]))
    inst = Instance.from_dict(data)
    place = random_homes(inst, rng)
    return inst, place, random_windows(inst, place, rng, density), rng


def _sol(inst, place, windows):
    return ResidencySolution(inst.name, place, None, tuple(windows))


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


@SETTINGS
@given(st.integers(0, 10**6))
def test_generated_windows_are_valid_except_capacity(seed):
    inst, place, windows, _ = _case(seed)
    assert {v.rule for v in violations(inst, _sol(inst, place, windows))} <= {"capacity"}


@SETTINGS
@given(st.integers(0, 10**6))
def test_kernel_equals_the_reference(seed):
    inst, place, windows, _ = _case(seed)
    ref = reference.timeline(inst.data, place.tolist(), windows)
    got = details(inst, _sol(inst, place, windows))
    assert close(got.latency, ref.latency)
    assert all(close(a, b) or a == b for a, b in zip(got.wait.tolist(), ref.wait))
    assert got.elapsed.tolist() == ref.elapsed  # same serving levels, same sums
    done = {(c.window, c.evict): c.done_op for c in ref.copies}
    for w in range(len(windows)):
        assert done.get((w, False), -1) == got.prefetch_done[w]
        assert done.get((w, True), -1) == got.evict_done[w]


@SETTINGS
@given(st.integers(0, 10**6))
def test_without_windows_the_latency_is_the_static_one_exactly(seed):
    inst, place, _, _ = _case(seed)
    static = latency(inst, place)
    assert simulate(inst, _sol(inst, place, [])) == static
    assert reference.simulate(inst.data, place.tolist(), []) == static


@SETTINGS
@given(st.integers(0, 10**6))
def test_adding_a_window_never_changes_ops_before_its_start(seed):
    inst, place, windows, rng = _case(seed)
    if not windows:
        return
    j = int(rng.integers(0, len(windows)))
    without = windows[:j] + windows[j + 1:]
    a = reference.timeline(inst.data, place.tolist(), without)
    b = reference.timeline(inst.data, place.tolist(), windows)
    s = windows[j].start
    assert a.begin[:s + 1] == b.begin[:s + 1] and a.wait[:s + 1] == b.wait[:s + 1]
    assert a.elapsed[:s] == b.elapsed[:s]
    ka, kb = details(inst, _sol(inst, place, without)), details(inst, _sol(inst, place, windows))
    assert ka.begin[:s + 1].tolist() == kb.begin[:s + 1].tolist()
    assert ka.elapsed[:s].tolist() == kb.elapsed[:s].tolist()


@SETTINGS
@given(st.integers(0, 10**6))
def test_simulation_is_deterministic_and_ignores_window_order(seed):
    inst, place, windows, rng = _case(seed)
    first = simulate(inst, _sol(inst, place, windows))
    assert simulate(inst, _sol(inst, place, windows)) == first
    shuffled = [windows[j] for j in rng.permutation(len(windows))]
    assert simulate(inst, _sol(inst, place, shuffled)) == first
    assert reference.simulate(inst.data, place.tolist(), shuffled) == \
        reference.simulate(inst.data, place.tolist(), windows)


@SETTINGS
@given(st.integers(0, 10**6))
def test_batch_equals_one_by_one(seed):
    inst, place, _, rng = _case(seed)
    sets = [random_windows(inst, place, rng) for _ in range(5)] + [[]]
    got = simulate_batch(inst, place, sets)
    assert got.tolist() == [simulate(inst, _sol(inst, place, ws)) for ws in sets]


def _valid(inst, place, windows) -> bool:
    return {v.rule for v in violations(inst, _sol(inst, place, windows))} <= {"capacity"}


def _perturbed(inst, place, windows, rng):
    """An existing window with one field moved (its start, its eviction's issue or due, its
    last op or its level), kept only if the set stays valid: the small changes a search
    makes, where a re-simulation may meet the old run before the window's first use."""
    live = [(s, w) for s, w in enumerate(windows) if w is not None]
    if not live:
        return None
    for _ in range(20):
        slot, w = live[int(rng.integers(0, len(live)))]
        d = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        field = int(rng.integers(0, 4))
        if field == 0 and w.is_prefetch:
            cand = dataclasses.replace(w, start=w.start + d)
        elif field == 1 and w.evict is not None:
            issue, due = w.evict
            cand = dataclasses.replace(w, evict=(issue + d, due) if rng.random() < 0.5 else (issue, due + d))
        elif field == 2:
            cand = dataclasses.replace(w, last=w.last + d)
        elif field == 3 and place[w.tensor] > 1:
            cand = dataclasses.replace(w, level=int(rng.integers(0, place[w.tensor])))
        else:
            continue
        trial = [u for s, u in enumerate(windows) if u is not None and s != slot] + [cand]
        if cand != w and _valid(inst, place, trial):
            return slot, cand
    return None


def _neighbour(inst, place, windows, rng):
    """A random one-window change that keeps the set valid: (slot, new window or None)."""
    if rng.random() < 0.4:
        change = _perturbed(inst, place, windows, rng)
        if change is not None:
            return change
    for _ in range(20):
        fresh = random_windows(inst, place, rng, density=0.9)
        slot = int(rng.integers(0, len(windows) + 1))
        live = [w for w in windows if w is not None]
        if slot < len(windows) and windows[slot] is not None and rng.random() < 0.3:
            return slot, None
        pool = [w for w in fresh if w not in live]
        if not pool:
            continue
        cand = pool[int(rng.integers(0, len(pool)))]
        trial = [w for s, w in enumerate(windows) if w is not None and s != slot] + [cand]
        if _valid(inst, place, trial):
            return slot, cand
    return None


def _walk(sim, inst, place, current, rng, steps=12):
    """Up to `steps` random one-window changes tried on `sim`: yields the latency it gives
    and the window slots with the change (the caller accepts or rejects it and keeps
    `current`, the slots as they stand, up to date)."""
    for _ in range(steps):
        change = _neighbour(inst, place, current, rng)
        if change is None:
            return
        slot, new = change
        got = sim.try_change(slot, new)
        trial = list(current) + [None] * (slot == len(current))
        trial[slot] = new
        yield got, trial


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([1, 2, 3, 8]))
def test_incremental_resimulation_equals_a_full_one(seed, K):
    inst, place, windows, rng = _case(seed, n_ops=12, n_tensors=12)
    sim = Simulation(inst, place, windows, K=K, spare=1)  # spare=1: the queues must grow too
    assert sim.latency == simulate(inst, _sol(inst, place, windows))
    current = list(windows)
    for got, trial in _walk(sim, inst, place, current, rng):
        full = reference.simulate(inst.data, place.tolist(), [w for w in trial if w is not None])
        assert close(got, full)
        if rng.random() < 0.5:
            sim.accept()
            current[:] = trial
        else:
            sim.reject()
        live = [w for w in current if w is not None]
        assert close(sim.full_latency(), reference.simulate(inst.data, place.tolist(), live))
    sim.accept()
    assert close(sim.latency, simulate(inst, _sol(inst, place, sim.solution_windows())))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_changed_queues_equal_a_fresh_encoding(seed):
    """Copies removed, inserted or re-keyed in place (accepted or undone) leave every queue in
    exactly the order a fresh encoding of the same window slots gives."""
    from memplace.model.residency.encoding import encode
    inst, place, windows, rng = _case(seed, n_ops=12, n_tensors=12)
    sim = Simulation(inst, place, windows, K=2, spare=1)
    current = list(windows)
    for _, trial in _walk(sim, inst, place, current, rng):
        if rng.random() < 0.5:
            sim.accept()
            current[:] = trial
        else:
            sim.reject()
        fresh = encode(inst, sim.placement, sim.windows)
        got = sim.enc
        assert got.q_len.tolist() == fresh.q_len.tolist()
        for q in range(got.q_len.shape[0]):
            m = int(got.q_len[q])
            assert got.q_copy[q, :m].tolist() == fresh.q_copy[q, :m].tolist()
        assert got.serve.tolist() == fresh.serve.tolist()
        assert got.due_q.tolist() == fresh.due_q.tolist()
        assert got.due_count.tolist() == fresh.due_count.tolist()


def test_every_access_windows_of_bert_match_the_reference():
    from memplace.instances import load
    inst = load("bert-base@nnpi")
    place = inst.slowest_placement()
    windows = every_access_windows(inst, place)
    assert len(windows) == 677
    assert violations(inst, _sol(inst, place, windows)) == []
    got = simulate(inst, _sol(inst, place, windows))
    assert close(got, reference.simulate(inst.data, place.tolist(), windows))
    assert got < latency(inst, place)  # reads at SRAM speed, copies overlapping compute


def test_window_changes_of_a_tensor_slot_keep_other_slots():
    inst, place, windows, rng = _case(7)
    sim = Simulation(inst, place, windows, K=2)
    if windows:
        sim.try_change(0, None)
        sim.accept()
        assert sim.windows[0] is None and sim.solution_windows() == tuple(windows[1:])
        assert isinstance(windows[0], Window)


def test_a_moved_prefetch_start_meets_the_old_run_before_its_first_use():
    """Only the issue op of a prefetch moves: the re-simulation may stop once the copy is
    done in both runs, before the window's first use, and still equal a full one."""
    early = 0
    for seed in range(40):
        inst, place, windows, _ = _case(seed, n_ops=24, n_tensors=16)
        sim = Simulation(inst, place, windows, K=2)
        for slot, w in enumerate(windows):
            moved = dataclasses.replace(w, start=w.start + 1)
            trial = windows[:slot] + [moved] + windows[slot + 1:]
            if not w.is_prefetch or moved.start >= w.first or not _valid(inst, place, trial):
                continue
            got = sim.try_change(slot, moved)
            stop = sim._pending[4]
            assert close(got, simulate(inst, _sol(inst, place, trial)))
            early += 0 <= stop and 2 * stop < w.first
            if seed % 2:
                sim.accept()
                windows = trial
            else:
                sim.reject()
        assert close(sim.latency, simulate(inst, _sol(inst, place, windows)))
    assert early > 0


def test_the_warmups_windows_are_valid_solutions():
    """The warmup runs the kernels in every process that loads them; an invalid window
    there (an eviction due one op past the last) once wrote past the end of an array."""
    from memplace.model.residency import validate
    from memplace.model.warmup import residency_case
    inst, place, window, evicted = residency_case()
    assert evicted.evict is not None
    offsets = np.full(inst.n_tensors, -1)  # homes in DRAM, not addressed
    for windows in ([window], [window, evicted]):
        assert validate(inst, ResidencySolution(inst.name, place, offsets, tuple(windows))).valid, windows


def test_a_window_outside_the_instance_is_refused_before_any_kernel_sees_it():
    from memplace.model.warmup import residency_case
    inst, place, window, _ = residency_case()
    n = inst.n_ops
    outside = [Window(tensor=1, level=0, start=0, first=0, last=1, evict=(1, n)),  # due past the end
               Window(tensor=2, level=0, start=1, first=1, last=n),
               Window(tensor=inst.n_tensors, level=0, start=1, first=1, last=1),
               Window(tensor=2, level=inst.n_levels, start=1, first=1, last=1),
               Window(tensor=2, level=0, start=-1, first=1, last=1)]
    sim = Simulation(inst, place, [window])
    before = sim.latency
    for bad in outside:
        for attempt in (lambda: sim.try_change(1, bad), lambda: simulate_batch(inst, place, [[window, bad]]),
                        lambda: Simulation(inst, place, [bad])):
            try:
                attempt()
            except ValueError as exc:
                assert "window" in str(exc) and "outside the instance" in str(exc)
            else:
                raise AssertionError(f"{bad} was simulated")
    assert sim.windows == [window] and sim.latency == before  # nothing was changed
    assert close(sim.try_change(0, None), simulate(inst, _sol(inst, place, [])))
