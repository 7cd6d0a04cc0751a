"""The Numba cost kernels agree with the plain-Python reference that reads like the spec."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.model import (Instance, capacity_ok, latency, latency_batch, load_profile,
                            move_delta, placement_errors, rectify, rectify_capacity)
from memplace.model.static import reference as ref
from memplace.model.warmup import tiny_instance_dict
from randominst import random_instance_dict

instances = st.builds(
    random_instance_dict,
    seed=st.integers(0, 10**6),
    n_ops=st.integers(1, 12),
    n_tensors=st.integers(1, 14),
    n_levels=st.integers(1, 4),
    addressed=st.booleans(),
    tight=st.floats(0.05, 1.2),
)


def _random_placement(inst: Instance, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, inst.n_levels, inst.n_tensors)


@settings(max_examples=300, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_latency_kernel_equals_reference(data, seed):
    inst = Instance.from_dict(data)
    place = _random_placement(inst, seed)
    assert math.isclose(latency(inst, place), ref.latency(data, place.tolist()), rel_tol=1e-12)


@settings(max_examples=150, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_batch_latency_equals_single(data, seed):
    inst = Instance.from_dict(data)
    rng = np.random.default_rng(seed)
    pop = rng.integers(0, inst.n_levels, (7, inst.n_tensors))
    got = latency_batch(inst, pop)
    for row, value in zip(pop, got):
        assert math.isclose(value, ref.latency(data, row.tolist()), rel_tol=1e-12)


@settings(max_examples=300, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_move_delta_equals_difference_of_full_evaluations(data, seed):
    inst = Instance.from_dict(data)
    rng = np.random.default_rng(seed)
    place = _random_placement(inst, seed)
    t = int(rng.integers(inst.n_tensors))
    level = int(rng.integers(inst.n_levels))
    moved = place.copy()
    moved[t] = level
    before, after = ref.latency(data, place.tolist()), ref.latency(data, moved.tolist())
    delta = move_delta(inst, place, t, level)
    assert math.isclose(delta, after - before, rel_tol=1e-9, abs_tol=1e-12 * max(before, after))
    assert place[t] != level or delta == 0.0


@pytest.mark.parametrize("kernel, spec_loop", [(load_profile, ref.load), (rectify_capacity, ref.rectify)],
                         ids=["load_profile", "rectify_capacity"])
@settings(max_examples=300, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_kernel_equals_the_spec_loop(kernel, spec_loop, data, seed):
    inst = Instance.from_dict(data)
    place = _random_placement(inst, seed)
    assert kernel(inst, place).tolist() == spec_loop(data, place.tolist())


@settings(max_examples=300, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_rectify_returns_valid_placement_and_is_idempotent(data, seed):
    inst = Instance.from_dict(data)
    place = _random_placement(inst, seed)
    fixed = rectify(inst, place)
    assert ref.is_capacity_valid(data, fixed.placement.tolist())
    assert placement_errors(inst, fixed.placement, fixed.offsets) == []
    again = rectify(inst, fixed.placement)
    assert again.placement.tolist() == fixed.placement.tolist()
    assert rectify_capacity(inst, fixed.placement).tolist() == fixed.placement.tolist()


@settings(max_examples=200, deadline=None)
@given(data=instances, seed=st.integers(0, 2**31))
def test_rectify_leaves_valid_placements_untouched(data, seed):
    inst = Instance.from_dict(data)
    place = _random_placement(inst, seed)
    if ref.is_capacity_valid(data, place.tolist()):
        assert rectify_capacity(inst, place).tolist() == place.tolist()
        assert capacity_ok(inst, place)
    else:
        assert not capacity_ok(inst, place)


def test_rectify_evicts_smallest_traffic_per_byte_first():
    data = tiny_instance_dict()
    data["hardware"]["levels"][0]["addressed"] = False
    inst = Instance.from_dict(data)
    # SRAM holds 96 bytes; at step 1 the weight (64, traffic/size 1) and both
    # activations (32 each, traffic/size 2) are live: the weight must go.
    assert rectify_capacity(inst, [0, 0, 0]).tolist() == [1, 0, 0]


def test_rectify_tie_goes_to_larger_size_then_larger_index():
    data = tiny_instance_dict()
    data["hardware"]["levels"][0].update(capacity=40, addressed=False)
    tensors = data["workload"]["tensors"]
    tensors[0]["accesses"] = [[0, 128]]  # weight: traffic/size 2, like both activations
    inst = Instance.from_dict(data)
    # Everything in SRAM: at step 0 w(64)+a(32) > 40: equal ratio, larger size -> w goes;
    # at step 1 a(32)+b(32) > 40: equal ratio and size, larger index -> b goes.
    assert rectify_capacity(inst, [0, 0, 0]).tolist() == [1, 0, 1]


def test_rectify_moves_unpackable_tensors_down_on_addressed_levels():
    data = tiny_instance_dict()
    level = data["hardware"]["levels"][0]
    level.update(capacity=70, alignment=64)
    inst = Instance.from_dict(data)
    # Capacity alone lets a and b share SRAM (64 bytes at step 1), but with 64-byte
    # alignment the second one would start at 64 and end at 96 > 70.
    fixed = rectify(inst, [1, 0, 0])
    assert fixed.placement.tolist() in ([1, 0, 1], [1, 1, 0])
    assert placement_errors(inst, fixed.placement, fixed.offsets) == []
    assert fixed.offsets[np.flatnonzero(fixed.placement == 0)].tolist() == [0]
