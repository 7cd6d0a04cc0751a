"""The DP: exact on chains at one-byte buckets (equal to the MILP), valid everywhere."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplace.model import Instance, capacity_ok, latency, placement_errors
from memplace.solvers import solve
from memplace.solvers.static.dp import dp_placement
from randominst import random_instance_dict


def chain_instance_dict(seed: int, n_ops: int = 8, n_levels: int = 3, tight: float = 0.4) -> dict:
    """A chain: op k writes activation k, op k+1 reads it; some ops read one weight."""
    rng = np.random.default_rng(seed)
    tensors = []
    for k in range(n_ops):
        size = int(rng.integers(1, 60))
        accesses = [[k, size]] + ([[k + 1, int(size * rng.choice([1, 2]))]] if k + 1 < n_ops else [])
        tensors.append({"name": f"a{k}", "kind": "activation", "size": size, "producer": k,
                        "accesses": accesses})
        if rng.random() < 0.6:
            w = int(rng.integers(1, 60))
            tensors.append({"name": f"w{k}", "kind": "weight", "size": w, "producer": None,
                            "accesses": [[k, int(w * rng.choice([1, 1, 3]))]]})
    weights = sum(t["size"] for t in tensors if t["kind"] == "weight")
    peak = weights + 2 * 60
    levels, bw = [], 1e9
    for l in range(n_levels):
        cap = None if l == n_levels - 1 else max(1, int(peak * tight * rng.uniform(0.3, 1.0)))
        levels.append({"name": f"L{l}", "capacity": cap, "bandwidth": bw})
        bw /= float(rng.uniform(2, 10))
    ops = [{"name": f"op{k}", "flops": float(rng.choice([0.0, rng.uniform(0, 300)]))}
           for k in range(n_ops)]
    return {"format": "memplace-instance/1", "name": f"chain-{seed}",
            "workload": {"name": "chain", "ops": ops, "tensors": tensors},
            "hardware": {"name": "chain", "compute_rate": 1e9, "levels": levels}}


FINE = 10**4  # buckets: one-byte units on these capacities


@pytest.mark.parametrize("seed", range(10))
def test_dp_equals_milp_on_chains_at_fine_discretisation(seed):
    inst = Instance.from_dict(chain_instance_dict(seed, n_ops=8 + seed % 5, n_levels=2 + seed % 2))
    exact = solve(inst, "milp", time_limit=30)
    assert exact.status == "optimal"
    dp = solve(inst, "dp", time_limit=30, buckets=FINE, max_keys=10**4, max_labels=10**4)
    assert dp.notes["exact"] and dp.status == "optimal"
    assert dp.latency == pytest.approx(exact.latency, rel=1e-9)
    assert dp.notes["dp_latency"] == pytest.approx(dp.latency, rel=1e-9)


CHAIN_OPTIMUM = 5.030990703998506e-06  # of chain_instance_dict(2025, n_ops=8, tight=0.30078125)


def _early_stop_chain() -> Instance:
    return Instance.from_dict(chain_instance_dict(2025, n_ops=8, tight=0.30078125))


def test_milp_optimum_on_a_chain_where_highs_alone_stopped_early():
    # HiGHS 1.15.1 from the heuristic start reported "Optimal" at 5.03287e-06 here (1.16
    # does not); with the verification milp returns the optimum on every version.
    inst = _early_stop_chain()
    dp = solve(inst, "dp", time_limit=30, buckets=FINE, max_keys=10**4, max_labels=10**4)
    exact = solve(inst, "milp", time_limit=30)
    assert dp.notes["exact"]
    assert dp.latency == pytest.approx(CHAIN_OPTIMUM, rel=1e-12)
    assert exact.latency == pytest.approx(dp.latency, rel=1e-9)
    assert exact.lower_bound <= dp.latency * (1 + 1e-9)
    assert exact.status == "optimal"


def test_milp_verification_catches_a_claimed_optimum_above_the_optimum(monkeypatch):
    """HiGHS 1.15.1's early stop made deterministic on every version: the first solve
    claims its warm start optimal (bound = its latency, as 1.15.1 did at 5.03287e-06);
    the re-solve without the start must disagree and the optimum must be returned."""
    from memplace.model import latency
    from memplace.solvers.static import milp
    inst = _early_stop_chain()

    def claims_its_start_optimal(ctx, form, warm, gap, threads, time_limit, log):
        return None, latency(ctx.instance, warm), "Optimal"
    monkeypatch.setattr(milp, "_solve_highspy", claims_its_start_optimal)
    warm, _ = milp.best_start(inst)
    assert latency(inst, warm) > CHAIN_OPTIMUM * (1 + 1e-6)  # the claim is wrong
    exact = solve(inst, "milp", time_limit=30)
    assert exact.notes["verify_disagrees"] and exact.notes["highs_status"] == "Optimal"
    assert exact.latency == pytest.approx(CHAIN_OPTIMUM, rel=1e-9)
    assert exact.lower_bound <= exact.latency * (1 + 1e-9) and exact.status == "optimal"
    unverified = solve(inst, "milp", time_limit=30, verify=False)
    assert unverified.latency == pytest.approx(latency(inst, warm), rel=1e-12)  # what it would return


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_ops=st.integers(2, 10), tight=st.floats(0.05, 1.0))
def test_dp_equals_milp_on_chains_property(seed, n_ops, tight):
    inst = Instance.from_dict(chain_instance_dict(seed, n_ops=n_ops, tight=tight))
    exact = solve(inst, "milp", time_limit=30)
    dp = solve(inst, "dp", time_limit=30, buckets=FINE, max_keys=10**4, max_labels=10**4)
    assert dp.notes["exact"]
    assert dp.latency == pytest.approx(exact.latency, rel=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_dp_on_random_dags_is_valid_and_never_below_the_optimum(seed):
    inst = Instance.from_dict(random_instance_dict(seed, n_ops=8, n_tensors=12,
                                                   addressed=seed % 3 == 0, tight=0.4))
    exact = solve(inst, "milp", time_limit=30)
    for buckets, beam in [(FINE, 10**4), (8, 4)]:
        dp = solve(inst, "dp", time_limit=30, buckets=buckets, max_keys=beam, max_labels=beam)
        assert placement_errors(inst, dp.placement, dp.offsets) == []
        assert dp.latency >= exact.lower_bound * (1 - 1e-12)
        if dp.notes["exact"]:  # nothing rounded or cut: the DP is exact on any DAG
            assert dp.status == "optimal"
            assert dp.latency == pytest.approx(exact.latency, rel=1e-6)
        if dp.notes.get("none_below_upper"):  # nothing it can represent beats the warm start
            assert dp.latency == dp.trace[0][2]
        elif not inst.has_addressed_levels:
            assert dp.notes["dp_latency"] == pytest.approx(dp.latency, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_dp_placement_is_capacity_valid_before_any_repair(seed):
    inst = Instance.from_dict(random_instance_dict(50 + seed, n_ops=10, n_tensors=12, tight=0.3))
    for buckets in (1, 3, 16, FINE):
        place, facts = dp_placement(inst, buckets=buckets, max_keys=6, max_labels=3)
        assert place is not None and capacity_ok(inst, place)  # rounding up keeps every label truly valid


def test_coarse_buckets_are_reported_as_rounding():
    inst = Instance.from_dict(chain_instance_dict(3))
    dp = solve(inst, "dp", time_limit=30, buckets=2)
    assert dp.notes["rounded_levels"] >= 1 and not dp.notes["exact"]
    assert dp.status == "feasible" and dp.lower_bound is None


def _weights_read_by_every_op(n_ops: int, n_weights: int) -> Instance:
    """Weights of 8 bytes, each read by every op, on a fast level holding all but one of
    them over a slow one: the keys multiply by 2 with each weight an op branches (less the
    one key of all of them fast)."""
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "fan@test",
        "workload": {"name": "fan", "ops": [{"name": f"op{k}", "type": "add", "flops": 1.0}
                                            for k in range(n_ops)],
                     "tensors": [{"name": f"w{t}", "kind": "weight", "size": 8, "producer": None,
                                  "accesses": [[k, 8] for k in range(n_ops)]}
                                 for t in range(n_weights)]},
        "hardware": {"name": "two", "compute_rate": 1e9,
                     "levels": [{"name": "fast", "capacity": 8 * n_weights - 1, "bandwidth": 1e9},
                                {"name": "slow", "capacity": None, "bandwidth": 1e8}]}})


def test_a_stop_is_noticed_inside_one_op_while_its_tensors_branch():
    """The keys multiply by the levels with each tensor an op branches (64 x 3^m before the
    op closes), so one op's work is not bounded: a stop must be seen inside it. Round 5 of
    unseen programs (docs/zoo.md): ConvBERT's dp ran 0.5 s past a 2 s limit, stopped by
    solve()'s grace, while checking once per op."""
    inst = _weights_read_by_every_op(n_ops=1, n_weights=4)
    assert dp_placement(inst)[0] is not None  # unstopped, its one op closes
    calls = []

    def stop_from_the_third_check() -> bool:
        calls.append(1)
        return len(calls) >= 3

    place, _ = dp_placement(inst, should_stop=stop_from_the_third_check)
    assert place is None and len(calls) == 3  # the op's first check, then its keys'


def test_a_stop_is_noticed_between_the_keys_pareto_filters(monkeypatch):
    """After an op closes, each key's labels are filtered to the Pareto front (quadratic
    in them): a stop is seen between two keys. Round 6 of unseen programs (docs/zoo.md):
    CaiT-XXS-24's dp ran 0.32 s past a 2 s limit, in this stage, stopped by solve()'s grace."""
    from memplace.solvers.static import dp
    inst = _weights_read_by_every_op(n_ops=2, n_weights=3)
    filtered = []
    real = dp._pareto
    monkeypatch.setattr(dp, "_pareto", lambda *a: filtered.append(1) or real(*a))
    assert dp_placement(inst)[0] is not None
    assert len(filtered) >= 7  # the three tensors' 2^3 - 1 keys, each filtered after op 0
    filtered.clear()
    place, _ = dp_placement(inst, should_stop=lambda: len(filtered) >= 1)
    assert place is None and len(filtered) == 1


def _weights_on_three_levels(middle_capacity: int) -> Instance:
    """Six weights of 8 bytes read by both of two ops: a fast level of 24 bytes, a middle
    level of `middle_capacity`, an unbounded slow one."""
    return Instance.from_dict({
        "format": "memplace-instance/1", "name": "three@test",
        "workload": {"name": "three", "ops": [{"name": f"op{k}", "type": "add", "flops": 1.0}
                                              for k in range(2)],
                     "tensors": [{"name": f"w{t}", "kind": "weight", "size": 8, "producer": None,
                                  "accesses": [[0, 8 * (t + 1)], [1, 8]]} for t in range(6)]},
        "hardware": {"name": "three", "compute_rate": 1e9,
                     "levels": [{"name": "fast", "capacity": 24, "bandwidth": 1e10},
                                {"name": "middle", "capacity": middle_capacity, "bandwidth": 1e9},
                                {"name": "slow", "capacity": None, "bandwidth": 1e8}]}})


@pytest.mark.parametrize("middle, branched", [(47, (0, 1, 2)), (48, (0, 1)), (400, (0, 1))])
def test_a_level_holding_every_tensor_leaves_the_slower_ones_out_of_the_keys(middle, branched):
    """Round 7 of unseen programs (docs/zoo.md): FNet's 23 ops needed 11 s, the keys of
    tracked weights multiplying by three levels where everything fits in the LLC. A level
    that holds every tensor at once (48 bytes here) makes the slower ones dominated, so the
    DP branches over the levels down to it only, and its optimum is the MILP's still."""
    inst = _weights_on_three_levels(middle)
    place, facts = dp_placement(inst, buckets=10**4, max_keys=10**4, max_labels=10**4)
    within = [key for key in itertools.product(branched, repeat=6)
              if 8 * key.count(0) <= 24 and 8 * key.count(1) <= middle]
    assert facts["max_keys_seen"] == len(within)  # after op 0: every key within capacity
    exact = solve(inst, "milp", time_limit=30)
    dp = solve(inst, "dp", time_limit=30, buckets=10**4, max_keys=10**4, max_labels=10**4)
    assert dp.status == "optimal" and dp.latency == pytest.approx(exact.latency, rel=1e-9)


def test_an_op_first_reading_many_tensors_keeps_a_bounded_beam_while_they_branch(monkeypatch):
    """XLA programs' entries read dozens of parameters at one op (xla-cnn: the DP never
    closed its first op in 10 s, hard-stopped): while an op's tensors branch, the keys are
    cut to BRANCHING_KEYS x max_keys, the cheapest by label and the op's access time so
    far, and the cut is reported."""
    from memplace.solvers.static import dp
    inst = _weights_read_by_every_op(n_ops=2, n_weights=14)  # 2^14 - 1 keys uncut
    filtered = []
    real = dp._pareto
    monkeypatch.setattr(dp, "_pareto", lambda *a: filtered.append(1) or real(*a))
    place, facts = dp_placement(inst, max_keys=2)
    assert len(filtered) <= 2 * dp.BRANCHING_KEYS * 2  # each op closes at most the cut
    assert facts["truncated_keys"] >= 1 and capacity_ok(inst, place)
    exact = solve(inst, "milp", time_limit=30)
    assert latency(inst, place) == pytest.approx(exact.latency, rel=1e-9)  # 13 of 14 fast


@pytest.mark.parametrize("seed", range(8))
def test_dp_equals_milp_on_chains_whose_middle_level_holds_everything(seed):
    """The dominance of a level holding every tensor (above) on random chains: the DP,
    branching only down to that level, still finds the MILP's optimum over all three."""
    data = chain_instance_dict(seed, n_ops=8 + seed % 4, n_levels=3, tight=0.4)
    sizes = sum(t["size"] for t in data["workload"]["tensors"])
    data["hardware"]["levels"][1]["capacity"] = sizes + seed % 3  # exactly enough, or more
    inst = Instance.from_dict(data)
    exact = solve(inst, "milp", time_limit=30)
    dp = solve(inst, "dp", time_limit=30, buckets=FINE, max_keys=10**4, max_labels=10**4)
    assert exact.status == "optimal" and dp.status == "optimal"
    assert dp.latency == pytest.approx(exact.latency, rel=1e-9)
