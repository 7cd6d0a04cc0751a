"""Does branching on the homes of electra-small's FFN weights lift the delivery LP? (issue 22)

Rerun from the repository's root, with memplace installed (`pip install -e .`):

    nice -n 10 python results/library/memplace-lib-8/electra-homes/probe.py > results/library/memplace-lib-8/electra-homes/probe.txt

The LP is the one the units tree (`copy_units.py`) starts from, without its unit columns:
the delivery relaxation of residency/zoo/electra-small@nnpi (memplace-lib/7's instance)
with its copy rows (`step_covers.with_copy_rows`), capped at the best known, 152.0734 us.
It prints, in us:

1. the root, and for each 1 MiB FFN weight w the LP with y[w, DRAM] fixed to 0 and to 1
   (the two children of a branch on it), and their minimum;
2. the number of FFN weights homed in DRAM fixed to k (a count is an integer at every
   valid solution), and each layer's FFN pair's DRAM sum branched both ways;
3. the FFN homes made whole: the k FFN weights the root homes most in DRAM wholly there,
   the others wholly in the fast level the LP then holds most of;
4. the weight homes of `homes.json` (every weight wholly in one level) fixed: any tree
   whose disjunctions are on home columns has a leaf holding that point, so it proves at
   most this value. `--search S` first looks for such homes with HiGHS's MIP (every
   weight home column integer, S seconds; its primal value and dual bound printed) and
   writes them to `homes.json`; the MIP's path depends on the machine's speed, so the
   committed `homes.json` is what makes step 4 rerunnable to the digit;
5. with `--mip S`: HiGHS's MIP over every home, window and kept-window column (those the
   step-cover and units trees branch on) for S seconds: its primal value bounds what any
   tree on those columns can prove, its dual bound is what HiGHS's own tree reached.

With `--stronger` it prints only step 4 and the same homes fixed in the stronger LPs the
trees use: the units LP (`copy_units.formulate`, its default units) and the delivery LP
with step covers separated round by round (`step_covers.separate`, as `cover_bound`):

    nice -n 10 python results/library/memplace-lib-8/electra-homes/probe.py --stronger > results/library/memplace-lib-8/electra-homes/stronger.txt
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import highspy
import numpy as np

from memplace.model import Instance
from memplace.solvers.highs import new_highs
from memplace.solvers.residency.machinery import copy_units, delivery_bound, step_covers

HERE = Path(__file__).parent
ROOT = HERE.parents[3]
INSTANCE = ROOT / "instances/library/memplace-lib-7/instances/zoo_electra-small@nnpi.json"
CEILING = 152.0734e-6  # the best known (152.07339 us), rounded up
FFN = 1 << 20  # bytes of each FFN weight
UNIT = 262_144


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--search", type=float, default=0.0, help="seconds of MIP search for integral weight homes")
    ap.add_argument("--mip", type=float, default=0.0, help="seconds of MIP over every branchable column")
    ap.add_argument("--stronger", action="store_true", help="only homes.json fixed, in the stronger LPs")
    args = ap.parse_args()
    inst = Instance.load(INSTANCE)
    if args.stronger:
        stronger(inst)
        return
    model = step_covers.with_copy_rows(delivery_bound.formulate(inst, CEILING))
    lp, H, L, us = model.lp, model.homes, inst.n_levels, model.scale * 1e6
    names = [level.name for level in inst.levels]
    weights = [t for t in range(inst.n_tensors) if inst.is_weight[t]]
    ffn = [t for t in weights if inst.size[t] == FFN]

    h = new_highs(1, 0, 1e9)
    h.setOptionValue("solver", "simplex")
    h.passModel(lp.highs_lp())

    def run() -> float:
        h.run()
        ok = h.modelStatusToString(h.getModelStatus()) == "Optimal"
        return h.getInfo().objective_function_value * us if ok else math.inf

    def fix(col: int, v: float) -> None:
        h.changeColBounds(int(col), v, v)

    def free(ts: list[int]) -> None:
        for t in ts:
            for l in range(L):
                if H[t, l] >= 0:
                    h.changeColBounds(int(H[t, l]), float(lp.lo[H[t, l]]), float(lp.hi[H[t, l]]))

    def with_row(cols: list[int], lo: float, hi: float) -> float:
        n = lp.rlo.size
        h.addRow(lo, hi, len(cols), np.asarray(cols, np.int32), np.ones(len(cols)))
        value = run()
        h.deleteRows(1, np.asarray([n], np.int32))
        return value

    print(f"LP: {lp.cost.size} columns, {lp.rlo.size} rows, ceiling {CEILING * 1e6:.4f} us")
    root = run()
    x = np.asarray(h.getSolution().col_value)
    print(f"1. root {root:.3f}")
    print("   FFN weight, root homes (SRAM/LLC/DRAM), y[w,DRAM]=0, =1, min, min - root")
    for t in ffn:
        col = int(H[t, L - 1])
        sides = []
        for v in (0.0, 1.0):
            fix(col, v)
            sides.append(run())
            free([t])
        frac = "/".join(f"{x[H[t, l]]:.3f}" for l in range(L))
        print(f"   {inst.tensors[t]['name']:>8} {frac}  {sides[0]:.3f} {sides[1]:.3f}  {min(sides):.3f}  {min(sides) - root:+.3f}")

    dram = [int(H[t, L - 1]) for t in ffn]
    print(f"2. FFN weights in DRAM at the root: {x[dram].sum():.3f}")
    for k in range(len(ffn) // 2 + 1):
        print(f"   exactly {k:2d} in DRAM: {with_row(dram, k, k):.3f}")
    for i in range(0, len(ffn), 2):
        pair = [int(H[t, L - 1]) for t in ffn[i:i + 2]]
        v = float(x[pair].sum())
        down, up = with_row(pair, -math.inf, math.floor(v)), with_row(pair, math.ceil(v), math.inf)
        print(f"   pair {inst.tensors[ffn[i]]['name']}+{inst.tensors[ffn[i + 1]]['name']}: DRAM sum {v:.3f}, "
              f"<= {math.floor(v)} {down:.3f}, >= {math.ceil(v)} {up:.3f}, min - root {min(down, up) - root:+.3f}")

    order = sorted(ffn, key=lambda t: -x[H[t, L - 1]])
    print("3. FFN homes whole: k most-DRAM weights in DRAM, the others not / the others whole")
    for k in (6, 7, 8):
        chosen = set(order[:k])
        for t in ffn:
            fix(H[t, L - 1], 1.0 if t in chosen else 0.0)
        apart = run()
        xx = np.asarray(h.getSolution().col_value)
        where = {}
        for t in ffn:
            if t not in chosen:
                best = max((l for l in range(L - 1) if H[t, l] >= 0), key=lambda l: xx[H[t, l]])
                where[names[best]] = where.get(names[best], 0) + 1
                for l in range(L - 1):
                    if H[t, l] >= 0:
                        fix(H[t, l], 1.0 if l == best else 0.0)
        whole = run()
        free(ffn)
        print(f"   {k} in DRAM: others not in DRAM {apart:.3f}; others whole {where}: {whole:.3f}")

    home_cols = [int(H[t, l]) for t in weights for l in range(L) if H[t, l] >= 0]
    path = HERE / "homes.json"
    if args.search > 0:
        xs = _mip(lp, home_cols, args.search, us, "every weight home column")
        homes = {inst.tensors[t]["name"]: names[max((l for l in range(L) if H[t, l] >= 0), key=lambda l: xs[H[t, l]])]
                 for t in weights}
        path.write_text(json.dumps(homes, indent=0) + "\n")
    homes = json.loads(path.read_text())
    index = {inst.tensors[t]["name"]: t for t in weights}
    for name, level in homes.items():
        t, home = index[name], names.index(level)
        for l in range(L):
            if H[t, l] >= 0:
                fix(H[t, l], 1.0 if l == home else 0.0)
    fixed = run()
    free(weights)
    units = {level: sum(int(inst.size[index[n]]) // UNIT for n, lv in homes.items()
                        if lv == level and inst.size[index[n]] % UNIT == 0) for level in names}
    in_dram = [n for n in homes if homes[n] == names[-1] and inst.size[index[n]] == FFN]
    print(f"4. {path.name}: every weight home fixed: {fixed:.3f} (units of {UNIT:,} B homed {units}, "
          f"{len(in_dram)} FFN weights in DRAM)")

    if args.mip > 0:
        branchable, _ = step_covers.branching(model)
        _mip(lp, np.flatnonzero(branchable).tolist(), args.mip, us, "every home, window and kept-window column")


def _homes(inst: Instance) -> dict[int, int]:
    names = [level.name for level in inst.levels]
    index = {t["name"]: i for i, t in enumerate(inst.tensors)}
    return {index[n]: names.index(lv) for n, lv in json.loads((HERE / "homes.json").read_text()).items()}


def _fixed(lp, H: np.ndarray, homes: dict[int, int]):
    """The LP with every home column of the tensors in `homes` fixed to 0 or 1."""
    lo, hi = lp.lo.copy(), lp.hi.copy()
    for t, home in homes.items():
        for l in range(H.shape[1]):
            if H[t, l] >= 0:
                lo[H[t, l]] = hi[H[t, l]] = 1.0 if l == home else 0.0
    return replace(lp, lo=lo, hi=hi)


def _value(lp, us: float) -> str:
    began = time.perf_counter()
    status, x, _ = step_covers.solve(lp, 3600.0)
    if x is None:
        return status
    return f"{float(lp.cost @ x) * us:.3f} ({time.perf_counter() - began:.0f} s)"


def stronger(inst: Instance) -> None:
    homes = _homes(inst)
    base = step_covers.with_copy_rows(delivery_bound.formulate(inst, CEILING))
    us = base.scale * 1e6
    print(f"4. homes.json fixed, the delivery LP with copy rows: {_value(_fixed(base.lp, base.homes, homes), us)}")
    um = copy_units.formulate(inst, CEILING)
    units = {f"{h}->{l}": p.unit for (h, l), p in um.pairs.items()}
    print(f"   the units LP (units {units}): {_value(_fixed(um.model.lp, um.model.homes, homes), us)}")
    occ = step_covers.occupancy(base)
    covers: list = []
    for rounds in range(1, 21):
        model = step_covers.with_covers(base, covers, occ)
        lp = _fixed(model.lp, model.homes, homes)
        status, x, _ = step_covers.solve(lp, 3600.0)
        if x is None:
            print(f"   step covers, round {rounds}: {status}")
            break
        new = [c for c in step_covers.separate(model, x, occ) if c not in set(covers)]
        print(f"   step covers, round {rounds}: {len(covers)} covers, {float(lp.cost @ x) * us:.3f}, {len(new)} new")
        if not new:
            break
        covers += new


def _mip(lp, cols: list[int], seconds: float, us: float, label: str) -> np.ndarray:
    m = new_highs(1, 0, seconds)
    m.passModel(lp.highs_lp())
    m.changeColsIntegrality(len(cols), np.asarray(cols, np.int32),
                            np.asarray([highspy.HighsVarType.kInteger] * len(cols)))
    began = time.perf_counter()
    m.run()
    info = m.getInfo()
    print(f"   MIP, {label} integer ({len(cols)} columns), {time.perf_counter() - began:.0f} s: "
          f"{m.modelStatusToString(m.getModelStatus())}, primal {info.objective_function_value * us:.3f}, "
          f"dual bound {info.mip_dual_bound * us:.3f}, {info.mip_node_count} nodes")
    return np.asarray(m.getSolution().col_value)


if __name__ == "__main__":
    main()
