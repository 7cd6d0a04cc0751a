"""The delivery relaxation as a library certificate (`certificate.py`, model
residency-delivery): what its stored duals prove, recomputed, is never above the optimum
found by exhaustive search on random tiny instances (ceiling at that optimum, the tightest
a check accepts); it needs a ceiling at least a valid latency; and a tampered certificate
proves less than the bound stored beside it, so `verify` rejects it."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.bench.library.check import holds
from memplace.instances import load
from memplace.solvers import solve
from memplace.solvers.certificate import DELIVERY_MODEL, check_lp_dual, lp_dual, lp_models
from residency_exhaustive import tiny_case


def test_the_library_solves_the_delivery_relaxation_for_residency_only():
    assert DELIVERY_MODEL in lp_models("residency")
    assert DELIVERY_MODEL not in lp_models("static")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_delivery_certificate_is_at_most_the_exhaustive_optimum(seed):
    inst, best = tiny_case(seed, slow_copies=True)
    cert = lp_dual(inst, DELIVERY_MODEL, 60, ceiling=best)
    assert cert is not None and cert["ceiling"] == best
    assert 0 < cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)


def test_delivery_certificate_needs_a_valid_ceiling_and_a_tampered_one_fails():
    inst = load("resnet50@nnpi", "residency")
    valid = solve(inst, "compiler", time_limit=None, problem="residency").latency
    cert = lp_dual(inst, DELIVERY_MODEL, 120, ceiling=valid)
    assert cert is not None and 0 < cert["bound"] <= valid
    assert check_lp_dual(inst, cert, valid_latency=valid) == pytest.approx(cert["bound"], rel=1e-12)
    # a ceiling below a latency known valid, or none known, proves nothing
    assert check_lp_dual(inst, cert, valid_latency=valid * 1.01) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=valid) == -math.inf
    # duals changed after the fact prove less than the bound stored beside them
    value = np.array(cert["value"])
    big = int(np.argmax(np.abs(value)))
    for tampered in (value * 0.0, np.where(np.arange(value.size) == big, value * 3.0, value)):
        proved = check_lp_dual(inst, dict(cert, value=tampered.tolist()), valid_latency=valid)
        assert not holds(cert["bound"], proved)
