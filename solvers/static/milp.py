"""`milp`: the exact placement model (docs/spec.md sections 3 and 4) solved by HiGHS.

The model is in `milp_highs.py`'s docstring: a binary per (tensor, level), a time
per op above its compute time and its memory time, capacity rows only on the
maximal sets of simultaneously live tensors. Two back ends build the same model:

- `highspy`: the sparse matrix assembled with NumPy and passed to HiGHS directly;
  improving incumbents are offered as HiGHS finds them (anytime trace) and the
  search polls `ctx.should_stop()`. `auto` runs this one.
- `pyomo`: the model written in Pyomo and solved by `appsi_highs`; the readable
  statement of the model, kept as a cross-check of the matrix (tests compare
  both). It gets no callbacks (HiGHS's own time limit and the wrapper's hard
  limit bound it), captures the process's stdout while HiGHS runs, and highspy's
  keyboard-interrupt handling it switches on allows one Pyomo solve per process
  at a time.

Both start from the best heuristic placement, report HiGHS's proven bound as
`ctx.lower_bound`, and set `ctx.proven_optimal` only when the relative gap
between the offered placement and that bound is within `gap` (plus 1e-12 for
rounding). With `verify` (highspy only), a claimed optimum is re-solved without
the start and the lower of the two bounds is kept (see `_verify`: HiGHS 1.15.1
once ended a started search "Optimal" 0.04% above the optimum). On addressed levels the capacity rows are a relaxation of the offset
constraints (docs/spec.md section 5): the bound stays valid, the solution is packed with
`ctx.packer` (tensors that cannot be packed move down, canonically), and the
gap is measured on the packed placement's latency.
"""
from __future__ import annotations

import math

import numpy as np

from memplace.model import latency
from memplace.solvers import Param, SearchContext, register
from memplace.solvers.highs import quiet_banner
from memplace.solvers.static.milp_highs import formulate, run_highs
from memplace.solvers.static.placements import best_start, offer_valid

BACKENDS = ("auto", "pyomo", "highspy")
HIGHS_MARGIN_S = 0.1  # of the time limit left for extracting and packing the result


@register("milp", "exact MILP (HiGHS): binary per tensor and level, capacity rows on the "
          "maximal live sets; proven bound and gap",
          params={"gap": Param(1e-6, float, 0.0, 1.0, doc="relative gap at which optimal is claimed"),
                  "threads": Param(1, int, 1, 256, doc="HiGHS threads"),
                  "backend": Param("auto", str, choices=BACKENDS, doc="highspy matrix or the Pyomo model"),
                  "pack_rounds": Param(8, int, 0, doc="re-solves with shrunk capacities when packing moved tensors"),
                  "verify": Param(True, doc="re-solve a claimed optimum without the warm start"),
                  "log": Param(False, doc="print HiGHS's log")})
def solve_milp(ctx: SearchContext, gap: float, threads: int, backend: str, pack_rounds: int,
               verify: bool, log: bool) -> None:
    inst = ctx.instance
    packer = ctx.packer
    warm, warm_offsets = best_start(inst)
    ctx.count(1)
    ctx.offer(warm, offsets=warm_offsets)
    form = formulate(inst)
    ctx.notes.update({f"model_{k}": v for k, v in form.stats.items()})
    if form.n_binaries == 0:  # nothing to decide: every tensor is best in the slowest level
        offer_valid(ctx, inst.slowest_placement(), packer=packer)
        ctx.notes["backend"] = "none (no decisions)"
        _report_bound(ctx, latency(inst, inst.slowest_placement()), gap)
        return
    chosen = "highspy" if backend == "auto" else backend
    ctx.notes["backend"] = chosen
    time_limit = None if not math.isfinite(ctx.remaining()) else ctx.remaining() - HIGHS_MARGIN_S
    if time_limit is not None and time_limit <= 0:
        return
    solve_model = _solve_highspy if chosen == "highspy" else _solve_pyomo
    values, bound, status = solve_model(ctx, form, warm, gap, threads, time_limit, log)
    ctx.notes["highs_status"] = status
    moved = False
    if values is not None:
        place = form.placement(values)
        ctx.count(1)
        final = offer_valid(ctx, place, packer=packer)
        moved = final.tolist() != place.tolist()
        if moved:
            ctx.notes["moved_by_rectify"] = int((final != place).sum())
    _report_bound(ctx, bound, gap)
    if verify and ctx.proven_optimal and chosen == "highspy":
        bound = _verify(ctx, form, gap, threads, log, bound)
    if moved and inst.has_addressed_levels and not ctx.proven_optimal:
        _shrink_addressed(ctx, gap, threads, solve_model, pack_rounds, packer, log)
        _report_bound(ctx, bound, gap)


def _verify(ctx: SearchContext, form, gap: float, threads: int, log: bool,
            bound: float) -> float:
    """Solve again on another path (no start, another seed) and keep the lower of the
    two bounds: HiGHS 1.15.1 has been seen to end a search from a start as "Optimal"
    at a placement 0.04% above the optimum (a 15-tensor chain; without the start, or
    without presolve, it found the optimum). Optimality stands only if the lower
    bound still closes the gap."""
    ctx.proven_optimal = False  # until verified (the wrapper may stop us first)
    time_limit = ctx.remaining() - HIGHS_MARGIN_S
    if time_limit <= 0:
        return bound
    out = run_highs(form, gap=gap, threads=threads, seed=ctx.seed + 1, time_limit=time_limit,
                    should_stop=ctx.should_stop, on_solution=lambda v: _offer_values(ctx, form, v),
                    log=log)
    ctx.notes.update(verify_status=out.status, verify_s=round(out.seconds, 3))
    if out.values is not None:
        _offer_values(ctx, form, out.values)
    if out.status != "Optimal" or not abs(out.bound - bound) <= gap * abs(bound) + 1e-12 * abs(bound):
        ctx.notes["verify_disagrees"] = True
    new_bound = min(bound, out.bound)
    _report_bound(ctx, new_bound, gap)
    return new_bound


def _offer_values(ctx: SearchContext, form, values: np.ndarray) -> None:
    """Offer an incumbent HiGHS found, packed with the model's first-fit (cheap); the
    final one is packed with the strongest packer."""
    if ctx.frozen:
        return
    ctx.count(1)
    offer_valid(ctx, form.placement(values))


def _shrink_addressed(ctx: SearchContext, gap: float, threads: int, solve_model,
                      pack_rounds: int, packer, log: bool) -> None:
    """The capacity-optimal placement could not be packed as it is: solve again with
    the addressed levels' capacities shrunk (by 3% a round) and offer each packed
    result, until one packs unchanged. The bound stays the first solve's."""
    inst = ctx.instance
    factor = 1.0
    for r in range(pack_rounds):
        time_limit = ctx.remaining() - HIGHS_MARGIN_S
        if ctx.should_stop() or time_limit <= 0:
            return
        factor *= 0.97
        capacity = inst.capacity.copy()
        capacity[inst.addressed] = np.floor(capacity[inst.addressed] * factor).astype(np.int64)
        form = formulate(inst, capacity)
        values, _, _ = solve_model(ctx, form, ctx.best.placement, gap, threads, time_limit, log)
        ctx.notes["shrink_rounds"] = r + 1
        if values is None:
            continue
        place = form.placement(values)
        ctx.count(1)
        if offer_valid(ctx, place, packer=packer).tolist() == place.tolist():
            return


def _report_bound(ctx: SearchContext, bound: float, gap: float) -> None:
    """Set the proven lower bound and, within `gap`, optimality."""
    inst = ctx.instance
    if not math.isfinite(bound):
        return
    bound = max(bound, inst.compute_floor())
    best = ctx.best_latency
    # HiGHS works within tolerances of 1e-9..1e-7: a bound a hair above the incumbent
    # proves the incumbent optimal; it is reported as the incumbent's latency.
    bound = min(bound, best)
    ctx.lower_bound = bound
    achieved = (best - bound) / best if best > 0 else 0.0
    ctx.notes["gap"] = achieved
    if achieved <= gap + 1e-12:
        ctx.proven_optimal = True


def _solve_highspy(ctx, form, warm, gap, threads, time_limit, log):
    out = run_highs(form, gap=gap, threads=threads, seed=ctx.seed, time_limit=time_limit,
                    warm=form.columns(warm), should_stop=ctx.should_stop,
                    on_solution=lambda v: _offer_values(ctx, form, v), log=log)
    ctx.notes.update(nodes=out.nodes, highs_s=round(out.seconds, 3))
    if not out.presolve:
        ctx.notes["presolve"] = "off (its set-up would not fit the time limit)"
    return out.values, out.bound, out.status


def pyomo_model(form):
    """The formulation written in Pyomo, in the problem's terms (x[t, l], time[k])."""
    import pyomo.environ as pyo
    inst = form.instance
    L = inst.n_levels
    last = L - 1
    scale = form.scale
    at = inst.access_time
    m = pyo.ConcreteModel(name=inst.name)
    pairs = list(zip(form.var_tensor.tolist(), form.var_level.tolist()))
    m.x = pyo.Var(pairs, domain=pyo.Binary)
    mixed = form.mixed_ops.tolist()
    m.time = pyo.Var(mixed, domain=pyo.Reals,
                     bounds=lambda _, k: (float(inst.compute[k] * scale), None))
    levels_of: dict[int, list[int]] = {}
    for t, l in pairs:
        levels_of.setdefault(t, []).append(l)

    def saving(k: int):
        """memory_k - base_k (scaled): what faster levels save on op k's accesses."""
        terms = []
        for a in range(inst.op_ptr[k], inst.op_ptr[k + 1]):
            t = int(inst.op_tensor[a])
            for l in levels_of.get(t, ()):
                c = float((at[a, l] - at[a, last]) * scale)
                if c != 0.0:
                    terms.append(c * m.x[t, l])
        return pyo.quicksum(terms) if terms else 0.0

    m.assign = pyo.Constraint([t for t, ls in levels_of.items() if len(ls) > 1],
                              rule=lambda _, t: pyo.quicksum(m.x[t, l] for l in levels_of[t]) <= 1)
    m.memory = pyo.Constraint(mixed, rule=lambda _, k: m.time[k] >= float(form.base[k] * scale)
                              + saving(k))
    # Weights are live at every step: their share of each level enters every row once.
    loads = form.load_levels.tolist()
    m.weight_load = pyo.Var(loads, bounds=(0.0, 1.0))
    m.weights = pyo.Constraint(loads, rule=lambda _, l: m.weight_load[l] >= pyo.quicksum(
        float(inst.size[w] / form.capacity[l]) * m.x[w, l] for w in form.weights.tolist()
        if l in levels_of[w]))
    rows = []
    for l in range(last):
        weight_bytes = sum(int(inst.size[w]) for w in form.weights.tolist() if l in levels_of[w])
        for members in form.cliques:
            inside = [int(t) for t in members if l in levels_of.get(int(t), ())]
            if inside and int(inst.size[inside].sum()) + weight_bytes > int(form.capacity[l]):
                rows.append((l, inside))

    def capacity_row(_, r):
        l, inside = rows[r]
        used = pyo.quicksum(float(inst.size[t] / form.capacity[l]) * m.x[t, l] for t in inside)
        return used + (m.weight_load[l] if l in loads else 0.0) <= 1
    m.capacity = pyo.Constraint(range(len(rows)), rule=capacity_row)
    objective = pyo.quicksum(m.time[k] for k in mixed)
    objective += pyo.quicksum(saving(int(k)) for k in form.memory_ops)
    m.latency = pyo.Objective(expr=objective + form.offset * scale, sense=pyo.minimize)
    return m


def _solve_pyomo(ctx, form, warm, gap, threads, time_limit, log):
    from pyomo.contrib.appsi.solvers import Highs
    m = pyomo_model(form)
    start = form.columns(warm)
    for j, (t, l) in enumerate(zip(form.var_tensor.tolist(), form.var_level.tolist())):
        m.x[t, l].set_value(float(round(start[j])))
    for j, k in enumerate(form.mixed_ops.tolist()):
        m.time[k].set_value(float(start[form.n_binaries + j]))
    for j, l in enumerate(form.load_levels.tolist()):
        m.weight_load[l].set_value(float(start[form.n_binaries + form.mixed_ops.size + j]))
    quiet_banner()  # appsi makes its own highspy.Highs
    opt = Highs()
    opt.config.load_solution = False
    opt.config.warmstart = True
    opt.config.stream_solver = bool(log)
    opt.config.mip_gap = float(gap)
    if time_limit is not None:
        opt.config.time_limit = max(0.01, float(time_limit))
    opt.highs_options = {"threads": int(threads), "mip_abs_gap": 0.0,
                         "mip_feasibility_tolerance": 1e-9, "primal_feasibility_tolerance": 1e-9,
                         "random_seed": int(ctx.seed) % (2**31 - 1)}
    res = opt.solve(m)
    status = str(res.termination_condition.name)
    values = None
    if res.best_feasible_objective is not None:
        res.solution_loader.load_vars()
        values = np.zeros(form.n_cols)
        for j, (t, l) in enumerate(zip(form.var_tensor.tolist(), form.var_level.tolist())):
            values[j] = m.x[t, l].value or 0.0
    bound = res.best_objective_bound
    bound = -math.inf if bound is None or not math.isfinite(bound) else bound / form.scale
    return values, bound, status
