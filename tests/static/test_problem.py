"""The static problem behind the core's Problem seam: batch and single evaluation agree,
records round-trip, a stored claim that does not hold is caught, finish assigns offsets."""
from __future__ import annotations

import numpy as np

from memplace.model import STATIC, Instance, latency
from memplace.model.core.problem import problem
from randominst import random_instance_dict


def test_batch_evaluation_equals_single_evaluation():
    inst = STATIC.load(random_instance_dict(5, n_ops=8, n_tensors=12))
    rng = np.random.default_rng(0)
    solutions = [STATIC.make_solution(rng.integers(0, inst.n_levels, inst.n_tensors))
                 for _ in range(6)]
    batch = STATIC.evaluate_batch(inst, solutions)
    assert batch.tolist() == [STATIC.evaluate(inst, s) for s in solutions]
    assert problem("static") is STATIC


def test_records_round_trip_and_a_false_latency_claim_is_caught():
    inst = Instance.from_dict(random_instance_dict(7, n_ops=8, n_tensors=12, addressed=True))
    notes: dict = {}
    sol, errors, _ = STATIC.finish(inst, STATIC.fallback(inst), None, notes)
    assert errors == [] and sol.offsets is not None  # offsets assigned on the addressed level
    record = {"instance": inst.name, "latency": latency(inst, sol.placement), "status": "feasible",
              "lower_bound": None, **STATIC.to_record(inst, sol)}
    back = STATIC.from_record(inst, record)
    assert back.placement.tolist() == sol.placement.tolist()
    assert STATIC.check_record(inst, record) == []
    assert any("differs from the recomputed" in e
               for e in STATIC.check_record(inst, record | {"latency": record["latency"] * 1.01}))
