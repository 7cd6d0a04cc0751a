"""The O(n log n) greedy fill equals the plain per-step fill it replaced, bit for bit.

The reference below is the old algorithm written plainly: a load profile per level
scanned over each tensor's whole live range, and on addressed levels every placed
tensor of the level scanned for a shared live step, sorted by offset and swept
first-fit. The fill (segment trees, offset index) must give the same placements
and offsets on random instances and on every committed one, for every order.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.model import Instance, latency
from memplace.model.static import kernels
from memplace.model.static.load_tree import empty_trees, tree_range_add, tree_range_max
from memplace.solvers import solve
from memplace.solvers.static.heuristics import ORDERS, greedy_fill
from randominst import random_instance_dict

DATA = Path(__file__).resolve().parents[1] / "instances" / "data"


def reference_fill(inst: Instance, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fill as it was: O(live range) room check, O(placed tensors) offset search."""
    place = inst.slowest_placement()
    offsets = np.full(inst.n_tensors, -1, np.int64)
    load = np.zeros((inst.n_levels, inst.n_ops), np.int64)
    members: list[list[int]] = [[] for _ in range(inst.n_levels)]
    for t in order.tolist():
        s, e, sz = int(inst.start[t]), int(inst.end[t]), int(inst.size[t])
        for l in range(inst.n_levels):
            if int(load[l, s:e + 1].max()) + sz > int(inst.capacity[l]):
                continue
            offset = -1
            if inst.addressed[l]:
                m = np.array(members[l], np.int64)
                shared = m[(inst.start[m] <= e) & (s <= inst.end[m])] if m.size else m
                blocks = sorted(zip(offsets[shared].tolist(),
                                    (offsets[shared] + inst.size[shared]).tolist()))
                align = int(inst.alignment[l])
                candidate = 0
                for lo, hi in blocks:
                    if lo >= candidate + sz:
                        break
                    if hi > candidate:
                        candidate = (hi + align - 1) // align * align
                if candidate + sz > int(inst.capacity[l]):
                    continue
                offset = candidate
                members[l].append(t)
            place[t] = l
            offsets[t] = offset
            load[l, s:e + 1] += sz
            break
    return place, offsets


def _assert_same_fill(inst: Instance, order: np.ndarray) -> None:
    place, offsets = greedy_fill(inst, order)
    want_place, want_offsets = reference_fill(inst, order)
    np.testing.assert_array_equal(place, want_place)
    np.testing.assert_array_equal(offsets, want_offsets)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), n_ops=st.integers(1, 40), n_tensors=st.integers(1, 60),
       n_levels=st.integers(2, 4), addressed=st.booleans(),
       tight=st.sampled_from([0.1, 0.3, 0.6, 1.0]), order_seed=st.integers(0, 10**6))
def test_fill_equals_the_per_step_reference_on_random_instances(seed, n_ops, n_tensors, n_levels,
                                                                 addressed, tight, order_seed):
    inst = Instance(random_instance_dict(seed, n_ops, n_tensors, n_levels, addressed, tight))
    order = np.random.default_rng(order_seed).permutation(inst.n_tensors)
    _assert_same_fill(inst, order)
    for make_order in ORDERS.values():
        _assert_same_fill(inst, make_order(inst))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n_ops=st.integers(1, 70), alignment=st.sampled_from([1, 3, 64]))
def test_fill_equals_the_reference_when_the_addressed_level_fragments(seed, n_ops, alignment):
    """Many small tensors and a roomy addressed level: long first-fit sweeps over
    gaps left by tensors of every kind of live range."""
    data = random_instance_dict(seed, n_ops, 3 * n_ops + 5, 2, True, 1.0)
    data["hardware"]["levels"][0]["alignment"] = alignment
    inst = Instance(data)
    order = np.random.default_rng(seed).permutation(inst.n_tensors)
    _assert_same_fill(inst, order)


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.stem)
def test_fill_equals_the_reference_on_committed_instances(path):
    inst = Instance.from_file(path)
    for make_order in ORDERS.values():
        _assert_same_fill(inst, make_order(inst))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 70), ops=st.lists(
    st.tuples(st.sampled_from(["add", "remove", "max"]), st.integers(0, 1), st.floats(0, 1),
              st.floats(0, 1), st.integers(1, 100)), min_size=1, max_size=60))
def test_load_tree_range_max_equals_a_brute_force_profile(n, ops):
    """Tensors come and go (loads stay >= 0, as in a level); every range max and the
    root (the level's peak) equal a plain per-step profile."""
    tree_max, tree_add, leaves = empty_trees(2, n)
    load = np.zeros((2, n), np.int64)
    held: list[tuple[int, int, int, int]] = []
    for what, l, a, b, v in ops:
        lo, hi = sorted((int(a * (n - 1)), int(b * (n - 1))))
        if what == "remove" and held:
            l, lo, hi, v = held.pop(int(a * (len(held) - 1)))
            tree_range_add(tree_max, tree_add, leaves, l, lo, hi, -v)
            load[l, lo:hi + 1] -= v
        elif what in ("add", "remove"):
            held.append((l, lo, hi, v))
            tree_range_add(tree_max, tree_add, leaves, l, lo, hi, v)
            load[l, lo:hi + 1] += v
        else:
            assert tree_range_max(tree_max, tree_add, leaves, l, lo, hi) == load[l, lo:hi + 1].max()
        assert tree_max[l, 1] == load[l].max()


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 80), alignment=st.sampled_from([1, 4, 64]),
       capacity=st.integers(1, 2000))
def test_first_fit_offsets_kernel_equals_a_plain_first_fit(seed, n, alignment, capacity):
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 300, n).astype(np.int64)
    start = rng.integers(0, 30, n).astype(np.int64)
    end = start + rng.integers(0, 12, n) * (rng.random(n) < 0.8) + 40 * (rng.random(n) < 0.1)
    end = end.astype(np.int64)
    order = rng.permutation(n).astype(np.int64)
    got = np.full(n, -1, np.int64)
    kernels.first_fit_offsets_kernel(order, size, start, end, alignment, capacity, got)
    want = np.full(n, -1, np.int64)
    for t in order.tolist():
        blocks = sorted((int(want[u]), int(want[u] + size[u])) for u in range(n)
                        if want[u] >= 0 and start[u] <= end[t] and start[t] <= end[u])
        candidate = 0
        for lo, hi in blocks:
            if lo >= candidate + size[t]:
                break
            if hi > candidate:
                candidate = (hi + alignment - 1) // alignment * alignment
        if candidate + size[t] <= capacity:
            want[t] = candidate
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["synth-1000@edge-npu", "bert-base@edge-npu", "resnet50@nnpi"])
def test_heuristics_through_solve_keep_their_latencies(name):
    """solve() returns the fill's own placement and offsets (nothing re-packed)."""
    inst = Instance.from_file(DATA / f"{name}.json")
    for solver in ORDERS:
        result = solve(inst, solver, time_limit=60)
        place, offsets = reference_fill(inst, ORDERS[solver](inst))
        np.testing.assert_array_equal(result.placement, place)
        assert result.latency == latency(inst, place)
        if inst.has_addressed_levels:
            np.testing.assert_array_equal(result.offsets, offsets)


def reference_place_in_order(order, sizes, lowers, uppers, alignments, capacity, best_fit):
    """The packing heuristics' gap rule as it was: scan every placed buffer."""
    offsets = [-1] * len(sizes)
    placed: list[int] = []
    for b in order:
        busy = sorted((offsets[p], offsets[p] + sizes[p]) for p in placed
                      if lowers[p] < uppers[b] and lowers[b] < uppers[p])
        best, best_gap, cursor = -1, -1, 0
        for j in range(len(busy) + 1):
            gap_end = capacity if j == len(busy) else busy[j][0]
            start = (cursor + alignments[b] - 1) // alignments[b] * alignments[b]
            if start + sizes[b] <= gap_end:
                if not best_fit:
                    best = start
                    break
                if best < 0 or gap_end - cursor < best_gap:
                    best, best_gap = start, gap_end - cursor
            if j < len(busy) and busy[j][1] > cursor:
                cursor = busy[j][1]
        if best >= 0:
            offsets[b] = best
            placed.append(b)
    return offsets


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 70), capacity=st.integers(1, 3000),
       spread=st.sampled_from([5, 50, 10**12]))
def test_packing_heuristics_equal_the_plain_gap_scan(seed, n, capacity, spread):
    from memplace.model.packing.heuristics import (BEST_FIT, FIRST_FIT, HEURISTICS,
                                                   conflict_counts, heuristic_offsets,
                                                   place_in_order)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 400, n).astype(np.int64)
    lowers = rng.integers(-3, spread, n).astype(np.int64)
    uppers = lowers + 1 + rng.integers(0, spread, n) * (rng.random(n) < 0.9)
    alignments = rng.choice([1, 2, 16], n).astype(np.int64)
    order = rng.permutation(n).astype(np.int64)
    plain = [sizes.tolist(), lowers.tolist(), uppers.tolist(), alignments.tolist()]
    for rule in (FIRST_FIT, BEST_FIT):
        got = place_in_order(order, sizes, lowers, uppers, alignments, np.int64(capacity), rule)
        want = reference_place_in_order(order.tolist(), *plain, capacity, rule == BEST_FIT)
        assert got.tolist() == want
    want_counts = [sum(1 for j in range(n) if j != i and lowers[i] < uppers[j]
                       and lowers[j] < uppers[i]) for i in range(n)]
    assert conflict_counts(lowers, uppers).tolist() == want_counts
    for which in HEURISTICS.values():  # every named heuristic still places within capacity
        offsets = heuristic_offsets(sizes, lowers, uppers, alignments, np.int64(capacity), which)
        assert all(o < 0 or o + s <= capacity for o, s in zip(offsets.tolist(), sizes.tolist()))


@given(st.lists(st.sampled_from([0.0, -0.0, 1.5, 2.0, -3.0, 1e-300]), max_size=40))
def test_descending_order_breaks_ties_by_tensor_index(scores):
    from memplace.solvers.static.heuristics import _descending
    score = np.array(scores, np.float64)
    want = np.lexsort((np.arange(score.size), -score))
    np.testing.assert_array_equal(_descending(score), want)


@pytest.mark.parametrize("name", ["synth-1000@edge-npu", "bert-base@nnpi"])
def test_benefit_density_order_uses_the_delta_of_each_tensor_alone(name):
    from memplace.solvers.static.heuristics import order_benefit_density
    inst = Instance.from_file(DATA / f"{name}.json")
    slow = inst.slowest_placement()
    gain = np.array([-kernels.move_delta_kernel(slow, t, 0, inst.compute, inst.op_ptr,
                                                inst.op_tensor, inst.access_time, inst.tensor_ptr,
                                                inst.tensor_access, inst.access_op)
                     for t in range(inst.n_tensors)])
    density = gain / inst.size
    want = np.lexsort((np.arange(density.size), -density))
    np.testing.assert_array_equal(order_benefit_density(inst), want)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 40), count=st.integers(0, 30))
def test_milp_clique_members_equal_testing_every_tensor_at_every_step(seed, n, count):
    from memplace.solvers.static.milp_highs import clique_members, clique_steps
    rng = np.random.default_rng(seed)
    start = rng.integers(0, n, count)
    end = np.minimum(n - 1, start + rng.integers(0, 10, count))
    tensors = rng.permutation(200)[:count]
    steps = clique_steps(start, end, n)
    got = clique_members(tensors, start, end, steps)
    want = [tensors[(start <= k) & (end >= k)] for k in steps]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n_ops=st.integers(2, 12), n_tensors=st.integers(2, 30),
       place_seed=st.integers(0, 10**6))
def test_rectify_with_a_spent_packer_equals_canonical_first_fit(seed, n_ops, n_tensors,
                                                                place_seed):
    """A placement packer whose budgets are spent is first-fit alone and says so; rectify
    then moves every unplaced tensor at once, which must give the canonical result."""
    from memplace.model import rectify
    from memplace.model.static.offsets import placement_packer
    inst = Instance(random_instance_dict(seed, n_ops, n_tensors, 2, True, 0.6))
    place = np.random.default_rng(place_seed).integers(0, inst.n_levels, inst.n_tensors)
    spent = placement_packer(exact_budget_s=0.0, heuristic_budget_s=0.0)
    got = rectify(inst, place, packer=spent)
    want = rectify(inst, place)
    np.testing.assert_array_equal(got.placement, want.placement)
    np.testing.assert_array_equal(got.offsets, want.offsets)
