"""msa's compiled allocator (`allocation.py`, `allocation_kernel.py`) against its plain-Python
reference (`allocation_reference.py`), and msa's output against the expectation stored
before the allocator was compiled (tests/residency/data/msa_expected.json).

The stored expectation holds what the plain-Python allocator gave at main c2638c0 (msa over
XLA's homes and over the compiler's, per instance: latency, windows, fall-back and a digest
of homes, offsets and windows); `python tests/residency/test_compiled_allocator.py
--write` rewrites it from the current code (only when msa's output is meant to change)."""
from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance
from memplace.model.residency import simulate, validate
from memplace.solvers import solve
from memplace.solvers.residency.machinery.allocation import Allocator, assign_windows
from memplace.solvers.residency.machinery.allocation_reference import assign_windows_reference
from memplace.solvers.residency.machinery.cost_analysis import buffer_order
from memplace.solvers.residency.machinery.starts import msa_solution, static_homes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from randominst import random_instance_dict  # noqa: E402

EXPECTED = Path(__file__).with_name("data") / "msa_expected.json"
# committed instances of every hardware kind, addressed levels (edge-npu) included
NAMES = ["resnet50@nnpi", "mobilenetv2@edge-npu", "gpt2@edge-npu", "bert-base@tpu", "unet@nnpi",
         "efficientnet-b0@gpu", "vit-b16@edge-tpu", "bert-base@edge-npu", "synth-100@nnpi",
         "synth-1000@nnpi", "synth-1000@edge-npu"]


def _same(a, b) -> bool:
    offsets = (a.offsets is None and b.offsets is None) or (
        a.offsets is not None and b.offsets is not None and a.offsets.tolist() == b.offsets.tolist())
    return a.windows == b.windows and a.placement.tolist() == b.placement.tolist() and offsets


@st.composite
def cases(draw):
    seed = draw(st.integers(0, 10**6))
    addressed = draw(st.booleans())
    rng = np.random.default_rng(seed)
    data = random_instance_dict(seed, n_ops=int(rng.integers(3, 25)), n_tensors=int(rng.integers(2, 25)),
                                n_levels=int(rng.integers(2, 4)), addressed=addressed,
                                tight=float(rng.choice([0.3, 0.5, 0.9])))
    for level in data["hardware"]["levels"]:
        if rng.random() < 0.5:
            level["copy_bandwidth"] = level["bandwidth"] * float(rng.choice([0.1, 1.0, 5.0]))
    return Instance.from_dict(data), rng, draw(st.sampled_from(["compiler", "all-slowest"]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(0, 3))
def test_the_compiled_allocator_makes_the_reference_windows_on_random_instances(case, repacks):
    """The same windows, offsets, homes and counts in XLA's order and in shuffled orders
    with random leads (the GA's decodings), with few repacks allowed or many."""
    inst, rng, homes = case
    place, offsets = static_homes(inst, homes)
    buffers = buffer_order(inst, place)
    leads = np.clip(rng.lognormal(np.log(1.5), 0.6, inst.n_tensors), 0.8, 10.0)
    for order, preferred in ((None, None), (rng.permutation(buffers), leads)):
        a, sa = assign_windows(inst, place, offsets, max_repacks=repacks, order=order,
                               preferred=preferred)
        b, sb = assign_windows_reference(inst, place, offsets, max_repacks=repacks, order=order,
                                         preferred=preferred)
        assert _same(a, b), (a.windows, b.windows)
        assert sa.as_notes() == sb.as_notes()
        check = validate(inst, a)
        assert check.valid, check.errors[:3]


def test_an_allocator_runs_again_from_its_own_set_up():
    """The decoder's reuse: a second run of one `Allocator` gives what a fresh one gives."""
    inst = load("gpt2@edge-npu")
    place, offsets = static_homes(inst, "compiler")
    run = Allocator(inst, place, offsets)
    buffers = buffer_order(inst, place)
    rng = np.random.default_rng(3)
    for _ in range(3):
        order = rng.permutation(buffers)
        leads = np.clip(rng.lognormal(np.log(1.5), 0.6, inst.n_tensors), 0.8, 10.0)
        again = run.run(order, leads)[0]
        fresh = assign_windows(inst, place, offsets, order=order, preferred=leads)[0]
        assert _same(again, fresh)


def test_the_ga_finds_the_same_solutions_with_either_decoder():
    inst = load("mobilenetv2@edge-npu")
    runs = [solve(inst, "ga", time_limit=None, problem="residency", seed=5, generations=3,
                  population=6, static_moves=0, engine=engine) for engine in ("python", "compiled")]
    assert runs[0].latency == runs[1].latency
    assert _same(runs[0].solution, runs[1].solution)
    assert runs[0].notes["decoded"] == runs[1].notes["decoded"] > 6


def test_a_deadline_in_the_past_leaves_every_buffer_home():
    inst = load("bert-base@tpu")
    place, offsets = static_homes(inst, "all-slowest")
    sol, stats = assign_windows(inst, place, offsets, deadline=0.0)
    assert stats.truncated and sol.windows == () and sol.placement.tolist() == place.tolist()


# ------------------------------------------------------------------ the stored expectation
def _digest(sol) -> str:
    text = json.dumps([sol.placement.tolist(), None if sol.offsets is None else sol.offsets.tolist(),
                       [[w.tensor, w.level, w.start, w.first, w.last, w.offset,
                         None if w.evict is None else list(w.evict)] for w in sol.windows]])
    return hashlib.sha256(text.encode()).hexdigest()


def _expectation(name: str) -> dict:
    inst = load(name)
    out = {}
    for homes in ("slowest", "compiler"):
        sol, stats = msa_solution(inst, homes=homes)
        out[homes] = {"latency": sol.latency, "windows": len(sol.windows), "fallback": stats.fallback,
                      "digest": _digest(sol)}
    return out


@pytest.mark.parametrize("name", NAMES)
def test_msa_gives_the_output_stored_before_its_allocator_was_compiled(name):
    want = json.loads(EXPECTED.read_text())[name]
    got = _expectation(name)
    for homes in want:
        assert got[homes]["windows"] == want[homes]["windows"], homes
        assert got[homes]["fallback"] == want[homes]["fallback"], homes
        assert got[homes]["latency"] == want[homes]["latency"], homes
        assert got[homes]["digest"] == want[homes]["digest"], homes
        assert math.isfinite(got[homes]["latency"])


def test_the_stored_latencies_are_what_the_solutions_simulate_to():
    """The expectation is not a figure copied by hand: its latencies are the simulator's."""
    sol, _ = msa_solution(load("synth-100@nnpi"), homes="compiler")
    stored = json.loads(EXPECTED.read_text())["synth-100@nnpi"]["compiler"]["latency"]
    assert simulate(load("synth-100@nnpi"), sol) == stored


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    EXPECTED.parent.mkdir(exist_ok=True)
    EXPECTED.write_text(json.dumps({name: _expectation(name) for name in NAMES}, indent=1) + "\n")
    print(f"wrote {EXPECTED}")
