"""The capped relaxation (`solvers/certificate.py`, model residency-relaxation-capped) is a
lower bound: its weak-duality figure, from HiGHS's interior-point duals or from any other
dual vector, is never above the optimum found by exhaustive search on random tiny
instances (with the ceiling at that optimum, the tightest a check accepts); never above
a valid latency on committed programs; and it needs a ceiling at least a valid latency."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memplace.instances import load
from memplace.model import Instance
from memplace.model.residency import lower_bound
from memplace.solvers import solve
from memplace.solvers.certificate import CAPPED_MODEL, check_lp_dual, lp_dual
from memplace.solvers.residency.machinery.relaxation import (capped_lp, formulate, model_columns,
                                                             weak_duality)
from randominst import random_instance_dict
from residency_exhaustive import tiny_case


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
@example(6275)  # drew no flops and no bytes: an optimum of 0, before tiny_instance gave it some
def test_capped_bound_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed)
    cert = lp_dual(inst, CAPPED_MODEL, 60, ceiling=best)
    assert cert is not None
    assert cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    # any dual vector proves a bound, and none proves more than the optimum
    lp = capped_lp(inst, best)
    rng = np.random.default_rng(seed)
    for spread in (0.1, 1.0, 10.0):
        y = rng.normal(0.0, spread, lp.rlo.size)
        assert weak_duality(lp, y) <= best * (1 + 1e-9)


@pytest.mark.parametrize("name", ["resnet50@nnpi", "zoo/mobilenet-v3-small@nnpi"])
def test_committed_programs_capped_bound_is_below_valid_latencies(name):
    inst = load(name, problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    cert = lp_dual(inst, CAPPED_MODEL, 120, ceiling=valid)
    assert cert is not None and cert["bound"] <= valid
    if name == "zoo/mobilenet-v3-small@nnpi":  # where copies and capacity over time decide it
        assert cert["bound"] > 2 * lower_bound(inst)


def test_capped_certificate_needs_a_valid_ceiling_and_proves_no_more():
    inst = load("resnet50@edge-tpu", "residency")
    valid = solve(inst, "msa", problem="residency").latency
    cert = lp_dual(inst, CAPPED_MODEL, 60, ceiling=valid)
    assert cert is not None and cert["ceiling"] == valid and 0 < cert["bound"] <= valid
    assert check_lp_dual(inst, cert, valid_latency=valid * 1.01) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    rng = np.random.default_rng(1)
    bad = dict(cert, value=(np.array(cert["value"]) * rng.uniform(0.5, 1.5, len(cert["value"]))).tolist())
    assert check_lp_dual(inst, bad, valid_latency=valid) <= cert["bound"] * (1 + 1e-9)
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=valid) == -math.inf


def test_bound_runs_the_capped_lp_where_the_milp_is_large(monkeypatch):
    from memplace.solvers.residency import bound as bound_module
    # every MILP counts as large, so a small program shows it (resnet50@nnpi took 55 s of
    # processor time here for the same checks, vgg16@nnpi 3 s)
    monkeypatch.setattr(bound_module, "CAPPED_COLUMNS", 0)
    inst = load("vgg16@nnpi", problem="residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    res = bound_module.bound_and_incumbent(inst, time_limit=60, seeds=False)
    capped = res.notes["capped"]
    assert math.isfinite(capped["bound"]) and capped["bound"] <= valid
    assert res.bound >= capped["bound"] and res.bound <= res.solution.latency


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(2, 20), st.integers(2, 25), st.integers(2, 4),
       st.sampled_from([0.3, 1.0, 3.0]), st.booleans())
def test_model_columns_counts_the_built_model(seed, n_ops, n_tensors, n_levels, tight, starts):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=n_ops, n_tensors=n_tensors,
                                                   n_levels=n_levels, tight=tight))
    built = formulate(inst, binary_starts=starts, binary_holds=starts)
    assert model_columns(inst, starts) == built.stats["columns"]


@pytest.mark.parametrize("name", ["bert-base[seq_len=256]@edge-npu", "resnet50@nnpi", "vgg16@tpu"])
def test_model_columns_counts_committed_programs(name):
    inst = load(name, problem="residency")
    for starts in (False, True):
        assert model_columns(inst, starts) == formulate(inst, binary_starts=starts).stats["columns"]


@pytest.mark.parametrize("above", [False, True])
def test_bound_decides_the_capped_lp_on_the_built_model(monkeypatch, above):
    from memplace.solvers.residency import bound as bound_module
    # the threshold at the model's real size (980 columns on vgg16@nnpi, where a count of
    # every tensor's live range as hold columns said 1,443): the capped LP runs only above it
    inst = load("vgg16@nnpi", problem="residency")
    columns = formulate(inst, binary_starts=False).stats["columns"]
    monkeypatch.setattr(bound_module, "CAPPED_COLUMNS", columns - 1 if above else columns)
    res = bound_module.bound_and_incumbent(inst, time_limit=None, seeds=False)
    assert ("capped" in res.notes) == above
    assert "phase0" in res.notes
