"""Time limits that hold on large programs, pinned by their mechanism, not by the clock:
HiGHS hears a stop in its LP iterations and counts its limit from the caller's deadline,
its presolve (whose set-up reads no clock) is left out when it would not fit the limit,
and a batch of repairs stops between kernel calls."""
from __future__ import annotations

import math
import time

import numpy as np

from memplace.model import Instance, repair_latency_batch
from memplace.model.core.search import SearchContext
from memplace.solvers.highs import column_lp, new_highs, run
from memplace.solvers.static.milp_highs import PRESOLVE_SETUP_NONZEROS, presolve_fits
from memplace.solvers.static.placements import offer_repaired
from randominst import random_instance_dict


def _lp(n: int = 50):
    """max sum x subject to A x <= 1, x >= 0: an LP the simplex needs dozens of iterations for."""
    a = np.random.default_rng(0).random((n, n)) + np.eye(n)
    return column_lp(-np.ones(n), np.zeros(n), np.full(n, np.inf), np.full(n, -np.inf), np.ones(n),
                     np.arange(0, n * n + 1, n), np.tile(np.arange(n), n), a.T.reshape(-1), None,
                     relax=True)


def _highs():
    h = new_highs(1, 0, None)
    h.setOptionValue("presolve", "off")  # the simplex itself, not presolve, solves it
    h.passModel(_lp())
    return h


def test_highs_hears_a_stop_in_the_simplex_not_only_in_the_branch_and_bound():
    h = _highs()
    run(h, lambda: False)
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    assert h.getInfo().simplex_iteration_count > 0
    h = _highs()
    run(h, lambda: True)
    assert h.modelStatusToString(h.getModelStatus()) == "Interrupted by user"


def test_highs_time_limit_is_the_time_left_to_the_deadline_when_it_starts():
    h = _highs()
    run(h, deadline=time.perf_counter() - 1.0)  # already past: the least limit HiGHS takes
    assert h.getOptionValue("time_limit")[1] == 0.01
    h = _highs()
    before = time.perf_counter()
    run(h, deadline=before + 50.0)
    assert 0 < h.getOptionValue("time_limit")[1] <= 50.0


def test_presolve_runs_only_where_its_set_up_fits_a_quarter_of_the_limit():
    assert presolve_fits(10**9, None) and presolve_fits(10**9, math.inf)
    assert not presolve_fits(PRESOLVE_SETUP_NONZEROS, 10.0)  # synth-10000 at 10 s
    assert presolve_fits(PRESOLVE_SETUP_NONZEROS, 60.0)
    assert presolve_fits(15_000, 1.0)  # synth-1000's model: no change
    assert presolve_fits(100_000, 30.0) and not presolve_fits(100_000, 10.0)


def test_a_batch_of_repairs_stops_at_the_limit_after_at_least_one_row():
    inst = Instance.from_dict(random_instance_dict(3, n_ops=12, n_tensors=16))
    rows = np.random.default_rng(1).integers(0, inst.n_levels, (6, inst.n_tensors))
    whole = rows.copy()
    expected = repair_latency_batch(inst, whole)

    ctx = SearchContext(inst, 60.0, 0)
    got = rows.copy()
    lat = offer_repaired(ctx, got)
    assert np.array_equal(lat, expected) and np.array_equal(got, whole)
    assert ctx.evaluations == 6 and ctx.best_latency == expected.min()

    ctx = SearchContext(inst, 60.0, 0)
    ctx.stop()  # the limit has passed: the first row only
    got = rows.copy()
    lat = offer_repaired(ctx, got)
    assert lat[0] == expected[0] and np.isinf(lat[1:]).all()
    assert np.array_equal(got[1:], rows[1:])  # rows not reached keep their genes
    assert ctx.evaluations == 1 and ctx.best_latency == expected[0]
