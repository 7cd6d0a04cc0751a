"""Every solver returns a valid placement, no worse than all-slowest, on every committed
instance; milp never loses to the heuristics it is warm-started from."""
from __future__ import annotations

import pytest

from memplace.instances import builtin_names, load
from memplace.model import latency, placement_errors, slowest_latency
from memplace.solvers import registry, solve
from memplace.solvers.static.heuristics import heuristic_placements

# The 10,000-op synthetic instance is for scaling studies; searching it even briefly
# would dominate the suite, so it is covered by the heuristics alone.
SEARCHED = [name for name in builtin_names() if not name.startswith("synth-10000")]
HEURISTICS = ["all-slowest", "greedy-size", "xla-msa", "topo-first-fit", "benefit-density", "compiler"]


def _check(inst, result):
    assert placement_errors(inst, result.placement, result.offsets) == []
    assert result.latency == latency(inst, result.placement)
    assert result.latency <= slowest_latency(inst) * (1 + 1e-12)
    if result.lower_bound is not None:
        assert result.lower_bound <= result.latency * (1 + 1e-9)


@pytest.mark.parametrize("name", builtin_names())
def test_heuristics_on_every_committed_instance(name):
    inst = load(name)
    for solver in HEURISTICS:
        _check(inst, solve(inst, solver, time_limit=None))


@pytest.mark.parametrize("name", SEARCHED)
def test_every_search_solver_on_every_committed_instance(name):
    """Short runs, stopped at the first incumbent (or the limit): what they report is valid."""
    inst = load(name)
    for solver in sorted(set(registry()) - set(HEURISTICS)):
        result = solve(inst, solver, time_limit=1.0, seed=0, callback=lambda *_: True)
        _check(inst, result)


@pytest.mark.parametrize("name", ["resnet50@nnpi", "mobilenetv2@tpu", "vgg16@gpu", "unet@edge-npu"])
def test_milp_is_never_worse_than_its_warm_starts(name):
    inst = load(name)
    result = solve(inst, "milp", time_limit=20.0)
    _check(inst, result)
    best_heuristic = min(latency(inst, p) for p in heuristic_placements(inst).values())
    assert result.latency <= best_heuristic * (1 + 1e-12)
