"""Residency metaheuristics (`sa`, `ga`, `hybrid`): valid output, a search that improves on
its msa start where msa is beatable, deterministic under a seed, and the annealer's
incremental latency equal to a full simulation after every kept move."""
from __future__ import annotations

import numpy as np
import pytest

from memplace.instances import load
from memplace.model import Instance
from memplace.model.core.errors import ParameterError
from memplace.model.residency import simulate, validate
from memplace.solvers import solve
from memplace.solvers.residency.machinery.allocation import assign_windows
from memplace.solvers.residency.machinery.evolution import Decoder
from memplace.solvers.residency.sa import anneal
from memplace.solvers.residency.machinery.starts import msa_solution
from randominst import random_instance_dict

BUDGET = {  # small, iteration-bounded budgets: each run ends long before its time limit
    "sa": {"iterations": 3000, "static_moves": 20000},
    "ga": {"population": 4, "generations": 3, "static_moves": 20000},
    "hybrid": {"population": 4, "generations": 2, "sa_iterations": 300, "planner": "none",
               "static_moves": 20000},
}
COMMITTED = ["unet@nnpi", "mobilenetv2@edge-npu", "vgg16@tpu"]


def msa_latency(inst: Instance) -> float:
    return solve(inst, "msa", time_limit=None, problem="residency", homes="best").latency


def check_run(inst: Instance, solver: str, seed: int = 0, **params):
    result = solve(inst, solver, time_limit=None, seed=seed, problem="residency",
                   **{**BUDGET[solver], **params})
    assert "windows_dropped" not in result.notes  # valid as offered, not repaired by solve()
    check = validate(inst, result.solution)
    assert check.valid, check.errors[:3]
    assert result.latency == pytest.approx(simulate(inst, result.solution), rel=1e-12)
    return result


@pytest.mark.parametrize("solver", sorted(BUDGET))
@pytest.mark.parametrize("name", COMMITTED)
def test_output_validates_on_committed_instances(solver, name):
    check_run(load(name), solver)


@pytest.mark.parametrize("solver", sorted(BUDGET))
@pytest.mark.parametrize("seed,addressed", [(1, False), (2, True), (5, True), (8, False)])
def test_output_validates_on_random_instances(solver, seed, addressed):
    data = random_instance_dict(seed, n_ops=9, n_tensors=12, addressed=addressed, tight=0.4)
    check_run(Instance.from_dict(data), solver, seed)


@pytest.mark.parametrize("solver, at_most", [("sa", 0.97), ("hybrid", 0.99)])
def test_the_search_improves_on_its_msa_start_where_msa_is_beatable(solver, at_most):
    # Every solver offers msa's solution first, so "never worse than msa" holds whatever the
    # search does. Here msa's solution is the only start (no static start: static_moves=0)
    # and mobilenetv2@edge-npu is an instance where msa is beatable (sa 0.9595 x msa,
    # hybrid 0.9806 x msa with these budgets, seed 0): only the search can get below msa.
    inst = load("mobilenetv2@edge-npu")
    result = check_run(inst, solver, static_moves=0)
    assert result.latency < at_most * msa_latency(inst)


@pytest.mark.parametrize("solver", ["sa", "ga"])
def test_same_seed_same_result(solver):
    inst = load("unet@nnpi")
    a = check_run(inst, solver, seed=3)
    b = check_run(inst, solver, seed=3)
    assert a.latency == b.latency
    assert a.solution.windows == b.solution.windows
    assert (a.solution.placement == b.solution.placement).all()


@pytest.mark.parametrize("name,seed", [("unet@nnpi", 0), ("mobilenetv2@edge-npu", 1)])
def test_incremental_latency_equals_a_full_simulation_after_every_kept_move(name, seed):
    inst = load(name)
    kept = []

    def on_accept(run) -> None:
        sol = run.solution()
        check = validate(inst, sol)
        assert check.valid, check.errors[:3]
        assert run.latency == pytest.approx(simulate(inst, sol), rel=1e-9)
        # the layout's booked load is the solution's load
        assert (run.layout.load == _load(inst, sol)).all()
        kept.append(run.latency)

    anneal(inst, msa_solution(inst)[0], np.random.default_rng(seed), 1500, 3e-3, 1e-6, home_rate=0.2,
           on_accept=on_accept)
    assert len(kept) > 20  # the check ran on many kept moves of every kind


def _load(inst: Instance, sol) -> np.ndarray:
    from memplace.model.residency import load_with_windows
    return load_with_windows(inst, sol.placement, sol.windows)


def test_sa_streams_weights_out_of_a_fast_home_when_that_pays():
    inst = load("mobilenetv2@edge-npu")
    start = msa_solution(inst)[0]
    best, _ = anneal(inst, start, np.random.default_rng(0), 6000, 3e-3, 1e-6)
    assert simulate(inst, best) < simulate(inst, start)
    streamed = {w.tensor for w in best.windows if w.is_prefetch and inst.is_weight[w.tensor]}
    assert streamed  # weights are homed below and prefetched back


def test_ga_decoder_reproduces_msa_from_msas_chromosome():
    inst = load("unet@nnpi")
    dec = Decoder(inst)
    for homes in (0, 1):
        place, offsets = dec.homes[homes]
        expected, _ = assign_windows(inst, place, offsets)
        got = dec.decode(dec.msa_chromosome(homes))
        assert got.windows == expected.windows
        assert (got.placement == expected.placement).all()


def test_ga_encoding_of_a_solution_decodes_to_a_valid_one():
    inst = load("mobilenetv2@edge-npu")
    dec = Decoder(inst)
    sol = msa_solution(inst)[0]
    chrom = dec.encode(sol)
    assert sorted(chrom[0].tolist()) == list(range(dec.buffers.size))
    assert validate(inst, dec.decode(chrom)).valid


def test_hybrid_refuses_an_unknown_planner():
    with pytest.raises(ParameterError, match="no-such-planner"):
        solve(load("unet@nnpi"), "hybrid", time_limit=10, problem="residency",
              planner="no-such-planner", generations=1)


def test_sa_needs_a_move_budget_without_a_time_limit():
    with pytest.raises(ParameterError, match="iterations"):
        solve(load("unet@nnpi"), "sa", time_limit=None, problem="residency", static_moves=0)
