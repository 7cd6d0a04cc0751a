"""The slot relaxation (`slot_bound.py`) is a lower bound: its MILP (every column that is 0
or 1 at a valid solution's point made integer) is never above the exhaustive optimum of
random tiny instances, at every split; its tree's certificate is re-checked from the
instance, and a cover that is not one, or a tree for another LP, proves nothing."""
from __future__ import annotations

import math

import highspy
import numpy as np
import pytest

from memplace.instances.library import read_library
from memplace.model import Instance
from memplace.solvers.certificate import SLOT_TREE_MODEL, check_lp_dual, lp_dual
from memplace.solvers.highs import new_highs
from memplace.solvers.residency.machinery import slot_bound
from residency_exhaustive import tiny_case


def _milp(model: slot_bound.SlotModel, lp=None) -> float:
    lp = model.lp if lp is None else lp
    h = new_highs(1, 0, 60.0)
    h.passModel(lp.highs_lp())
    for j in np.flatnonzero(model.binary):
        h.changeColIntegrality(int(j), highspy.HighsVarType.kInteger)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return h.getInfo().objective_function_value * lp.scale


@pytest.mark.parametrize("slow", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_the_milp_is_at_most_the_exhaustive_optimum_at_every_split(seed, slow):
    inst, best = tiny_case(seed, slow)
    cap = slot_bound._capacity(inst)
    weights = sorted({int(t["size"]) for t in inst.tensors if t["kind"] == "weight" and t["accesses"]
                      and int(t["size"]) <= cap})
    for unit in weights[:2] or [slot_bound.default_unit(inst)]:
        total = sum(int(inst.tensors[i]["size"]) // unit for i in slot_bound.unit_weights(inst, unit))
        for splits in [()] + [(d,) for d in range(1, total + 2)] + [(d, d + 1) for d in range(1, total)]:
            model = slot_bound.formulate(inst, best * 2, unit, splits)
            got = _milp(model)
            assert got <= best * (1 + 1e-7), (seed, slow, unit, splits, got, best)
            # every cover of every space row at once (the separation's candidates and more)
            covers = []
            for ks in model.knapsacks.values():
                items = tuple(c for c, _ in ks.items)
                for d in model.deltas:
                    if items and slot_bound.cover_row(model, (ks.step, ks.size, d, items)) is not None:
                        covers.append((ks.step, ks.size, d, items))
            lp = slot_bound.with_covers(model, covers)
            assert _milp(model, lp) <= best * (1 + 1e-7)


def test_electra_small_tree_certificate_round_trip_and_tampering():
    lib = read_library(8)
    entry = next(e for e in lib.split("all", "residency") if "electra-small" in e.name)
    inst = Instance.load(lib.instance_source(entry))
    ceiling = entry.best["objective"]
    # the covers, the split and a short tree, checked from the instance
    got = slot_bound.grow_tree(inst, ceiling, ceiling / 1.01, 30.0, 2)  # two leaves: 20 s, six: 33
    assert got.tree is not None and got.splits and got.covers and got.leaves >= 2
    covers = slot_bound.covers_json(got.covers)
    bound = slot_bound.check_tree(inst, ceiling, got.unit, list(got.splits), covers, got.rows, got.tree)
    assert math.isfinite(bound) and got.root_bound * (1 - 1e-6) <= bound <= ceiling
    assert bound == pytest.approx(got.bound, rel=1e-6)
    # a cover less its last item stays within the room the split leaves: refused
    step, size, split, cols = got.covers[0]
    bad = slot_bound.covers_json([(step, size, split, cols[:-1])] + got.covers[1:])
    assert slot_bound.check_tree(inst, ceiling, got.unit, list(got.splits), bad, got.rows, got.tree) == -math.inf
    # a row count that is not the rebuilt LP's, or a malformed cover list, proves nothing
    for rows, raw in ((got.rows + 1, covers), (got.rows, [[0, 1, 2]])):
        assert slot_bound.check_tree(inst, ceiling, got.unit, list(got.splits), raw, rows, got.tree) == -math.inf


@pytest.mark.parametrize("seed", [0, 1, 3, 7, 8])
def test_the_library_path_grows_a_certificate_its_check_recomputes(seed):
    # through `memplace lib improve --lp-model residency-slot-tree` and `verify`
    inst, best = tiny_case(seed, True)
    cert = lp_dual(inst, SLOT_TREE_MODEL, 30, ceiling=best * 1.5)  # 1, 3 split; 0, 8 do not; 7 has no unit
    assert cert is not None and cert["model"] == SLOT_TREE_MODEL
    assert 0 < cert["bound"] <= best * (1 + 1e-9)
    assert check_lp_dual(inst, cert, valid_latency=best) == pytest.approx(cert["bound"], rel=1e-12)
    # a ceiling below a latency known valid, or none known, proves nothing; nor do bad fields
    assert check_lp_dual(inst, cert, valid_latency=best * 1.6) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    for bad in ({"unit": -1}, {"unit": True}, {"splits": "x"}, {"splits": [True]}, {"covers": {}},
                {"rows": cert["rows"] + 1}):
        assert check_lp_dual(inst, dict(cert, **bad), valid_latency=best) == -math.inf
