"""Lower bounds with certificates that are cheap to re-check (memplace-lib's bounds).

- `closed_form`: the residency model's closed-form bound (`model/residency/bounds.py`).
  It bounds the static optimum too: every static solution is a residency solution with
  the same latency (spec section 9), so the residency optimum is at most the static one.
  Its certificate is its name: checking it is recomputing it.
- `lp_dual`: the LP relaxation of a problem's MILP (static: `static/milp_highs.py`;
  residency: `residency/machinery/relaxation.py` without its start and hold binaries), solved by
  HiGHS, and its row duals `y`. Checking needs no solver: rebuild the LP `min c'x + c0,
  rl <= Ax <= ru, cl <= x <= cu` from the instance, take the reduced costs `d = c - A'y`,
  and the dual objective `c0 + sum_i y_i (rl_i if y_i > 0 else ru_i) + sum_j d_j (cl_j if
  d_j > 0 else cu_j)` is a lower bound on the LP (weak duality), so on the MILP, so on the
  problem. A term that needs an infinite bound makes the certificate worthless, except
  that reduced costs within `DUAL_TOLERANCE` of zero (HiGHS's own dual feasibility
  tolerance, in model units where an op takes about 1) are taken as zero: the one
  tolerance a check accepts (the certificates' reduced costs are stored nowhere; they are
  recomputed). The residency
  LP bounds both problems (as the closed form does); the static LP bounds the static one.

- The access relaxation (`residency/machinery/access_bound.py`, model `residency-access`): an LP
  over which level serves each access that scales to large programs. Its interval
  columns are capped by `ceiling`, the latency of a valid solution, so its certificate
  stores the ceiling beside the duals, and the check accepts it only when the ceiling is
  at least a latency the library has verified (the entry's best known): then every
  solution at least as good as that one, the optimum among them, is a feasible point of
  the capped LP, and weak duality (`access_bound.dual_bound`, recomputed) bounds it.

- The capped relaxation (model `residency-relaxation-capped`): the LP of
  `residency-relaxation` with every interval column E[k] capped by `ceiling`, a valid
  latency (as the access relaxation's are; the one other column without a finite upper
  bound, each level's weight load, is capped by `relaxation.py` itself at the sum of
  its terms, which its row implies). Every column then has finite bounds, so *any* dual
  vector proves a bound by weak duality, with no tolerance at all: HiGHS's interior
  point method without crossover (the only way this LP solves in minutes at 200-340 ops;
  its duals are approximate) gives a certificate as good as an exact one, less only
  what its inexactness costs. The check is the access relaxation's: the ceiling must be
  at least a latency the library has verified.

- The delivery relaxation (`residency/machinery/delivery_bound.py`, model
  `residency-delivery`): the access relaxation plus, per channel and fast level, the
  bytes delivered so far, which must be there by their due op and occupy the fast level
  until then (the argument is in its docstring). Its interval columns are capped by a
  valid latency and its delivery columns by the total channel time of all copies, so
  every column is bounded and any dual vector proves a bound; the check is the access
  relaxation's (the ceiling must be at least a latency the library has verified). It
  solves in seconds where the capped relaxation takes minutes, and proves about as much.

- Op rows (`delivery_bound.py`'s docstring, "Op rows"): per compute-bound op, the convex
  hull of max(compute, memory) over which level serves each access. The delivery and
  capped relaxations, the delivery tree, the tree with start binaries and the step-cover
  LP and tree are built with them, and their certificates say so (`"op_rows": true`);
  a check rebuilds the LP with them only where the certificate says so (`_op_rows`), so
  the certificates of the library versions built before them re-check as they did.

- A branch-and-bound tree over the delivery relaxation (model `residency-delivery-tree`,
  `solvers/lp_tree.py`): the homes are 0 or 1 at every point a valid solution maps to,
  so a disjunction on them (one home fixed to 0 or 1, or a count of equal-size weights
  in one level at most k or at least k + 1) splits the solutions between two children;
  the certificate is the tree, VIPR-style: its disjunctions and one dual vector per leaf,
  each proving its leaf's bound by weak duality. The check rebuilds the LP with the
  stored ceiling (at least a latency the library has verified), walks the tree and
  takes the least leaf bound, at most the ceiling. Not among a problem's default models
  (`lp_models`): it takes minutes and its certificate is large; `improve --lp-model`
  asks for it.

- A branch-and-bound tree over the capped relaxation with its start and hold binaries
  (model `residency-relaxation-tree`, `residency/machinery/start_tree.py`, where the
  argument is): the same certificate and check as the delivery tree's, on the LP of
  `relaxation.formulate(binary_starts=True, binary_holds=True)` capped by the ceiling,
  every disjunction on columns that model declares integer (homes, serving levels, the
  start indicators of prefetch windows, the defining windows' holds). A start decided by
  a branch makes a window hold its whole size from then on, which the LP spreads.
  On request only, as the delivery tree.

- The delivery relaxation with capacity cover cuts, and a tree over its homes (model
  `residency-delivery-cover-tree`, `residency/machinery/cover_cuts.py`, where the argument
  is): rows saying that at every step at most r of a set S of tensors (and of S and any
  one tensor of a list U) occupy the levels other than the last, where no r + 1 of them
  can be placed in those levels' capacities at once. The certificate stores the families
  (S, r, U) beside the tree; the check re-derives each family's validity from the
  instance's sizes and capacities (`cover_cuts.family_holds`: a placement arithmetic, no
  solver), rebuilds the delivery relaxation with their rows and walks the tree as for
  `residency-delivery-tree`. On request only.

- The rotation bound (model `residency-rotation`, `residency/machinery/rotation_bound.py`,
  where the argument is): not an LP. A cover family of weights of which at most |S| - 1
  fit the fast levels at once forces one of them out at every step, and each change of
  the one left out is a copy that must arrive before the weight's next read; a dynamic
  program over the steps takes the least time any such sequence of turns costs. It is
  recorded as an `lp-dual` bound under this model name (the library's path for
  certificate models); the certificate is the family, and the check re-derives it
  (`cover_cuts.family_holds`) and runs the dynamic program again. On request only.

- The rotation over levels (model `residency-rotation-levels`,
  `residency/machinery/rotation_bound.py`, where the argument is): not an LP. For a set of
  weights, every way of homing them and, step by step, the fastest level each occupies
  (so the capacity their homes and windows take in every level), each move to a faster
  level a copy from its home; the least time over all of that, by a dynamic program per
  home assignment. The certificate is the set and the cap it proves; the check runs the
  program again below the cap. On request only.
- A branch-and-bound tree over that LP (model `residency-delivery-step-cover-tree`):
  the covers, then a tree whose disjunctions are on its home, window and kept-window
  columns (0 or 1 at every valid solution's point), VIPR-style as the delivery tree's;
  the check rebuilds the LP with the covers and walks the tree. On request only.
- A branch-and-bound tree over the delivery relaxation with whole copies (model
  `residency-delivery-units-tree`, `residency/machinery/copy_units.py`, where the argument
  is): copy rows, and per (home, window level) pair a unit u of copy size, the copies
  whose sizes are multiples of u charged by a column C that a `delivered` disjunction
  ("at most q units of them moved by the end of interval j, or at least q + 1 units
  charged at j counting the due ones") lifts to their whole started sizes; other nodes
  are integer sums (integer coefficients allowed) of home, window and kept-window columns.
  The certificate stores the units beside the tree; the check rebuilds the LP with them
  and re-derives every node's rows from the rebuilt model. On request only.
- The delivery relaxation with step covers (model `residency-delivery-step-cover`,
  `residency/machinery/step_covers.py`, where the argument is): one row per copy that its
  channel's idle time in the intervals it can move in covers it, and, per level and
  step, rows stating that tensors whose sizes add up to more than the level's capacity
  do not all occupy it at that step, found round by round against the LP's point. The
  certificate stores those covers beside the duals and the ceiling; the check verifies
  each cover (sizes above the capacity), rebuilds the LP with the rows in order and
  recomputes weak duality. On request only.
- Start columns for a few large tensors inside that LP, and a tree on them (model
  `residency-delivery-start-tree`, `residency/machinery/start_columns.py`, where the
  argument is): the prefetches of a stored set of tensors leave the fluid delivery
  columns and get start columns instead (a window holds its whole size from its copy's
  start), the rest stays fluid; a tree branches on those starts (and the step-cover
  tree's columns). The certificate stores the tensors, the covers and the tree; the
  check rebuilds the LP and walks the tree. On request only.

- A branch-and-bound tree over the slot relaxation (model `residency-slot-tree`,
  `residency/machinery/slot_bound.py`, where the argument is): the last level's channel,
  fast memory pooled, and per interval and copy size a binary "a copy of that size moves"
  that needs its size free; splits on the units of fast memory the large weights take,
  and covers valid on their upper sides, separated at the tree's nodes. The certificate
  stores the unit, the splits, the covers and the tree; the check rebuilds the LP,
  re-derives every cover and walks the tree. On request only.

All are sums in float64 in another order than the simulator's; the value is lowered by
`MARGIN` (relative) so rounding never lifts it above a true latency.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from memplace.model import Instance
from memplace.model.core.bound_models import (  # noqa: F401  (names re-exported)
    ACCESS_MODEL, CAPPED_MODEL, CEILING_MODELS, COVER_TREE_MODEL, DELIVERY_MODEL, LP_MODELS,
    ON_REQUEST_MODELS, ROTATION_LEVELS_MODEL, ROTATION_MODEL, SLOT_TREE_MODEL, START_COLUMN_MODEL,
    START_TREE_MODEL, STEP_COVER_MODEL, STEP_COVER_TREE_MODEL, TREE_MODEL, UNITS_TREE_MODEL)
from memplace.model.residency.bounds import lower_bound
from memplace.solvers.highs import new_highs
from memplace.solvers.residency.machinery import relaxation
from memplace.solvers.static import milp_highs

MARGIN = 1e-9
DUAL_TOLERANCE = 1e-7  # HiGHS's default dual feasibility tolerance
# a tree is kept only when it proves this much (relative) above its root LP
TREE_MIN_GAIN = 0.002
# the rotation over levels searches only below this share of the best known, and its
# check below what it proved: on albert-base@nnpi it proved 888.18 us (best known 900.35)
# in 197 s at load 7, where capped at 96% (864.3 us, a 4.2% gap) it takes about 20 s
LEVEL_CAP = 0.96
TREE_MAX_LEAVES = 400
# a tree over the relaxation with start binaries: squeezenet1-1's proved 11.70 µs (its root
# 10.86) with 340 leaves in 90 s, 190 KB of gzipped certificate
START_TREE_MAX_LEAVES = 1500
# The tree models whose stored certificate `lib improve --resume` grows on (`lp_dual`'s
# `resume`), so the budgets of several runs add up
RESUMABLE_MODELS = (START_TREE_MODEL,)
# a tree over the step-cover LP: mobilevit-s@nnpi's 400 leaves took 76 s (105.21 -> 106.51 us, a certificate of
# about 4 MB gzipped; 1000 leaves proved 106.56 in 227 s with 9.8 MB)
STEP_COVER_TREE_MAX_LEAVES = 400
# rounds of covers separated again at each node of that tree (cut and branch,
# `step_covers.grow_tree`): on densenet121@nnpi 165.333 us against 165.125 without (840 s);
# on electra-small@nnpi the same 142.292 (docs/library.md, memplace-lib/8)
STEP_COVER_TREE_LEAF_ROUNDS = 3
# a tree over the unit LP (whole copies): each node is an LP of the whole program
UNITS_TREE_MAX_LEAVES = 400
# a tree over the step-cover LP with start columns (start_columns.py): as the step-cover tree's
START_COLUMN_MAX_LEAVES = 400
# the slot tree aims at this share of the ceiling (its leaves close there) and stops at
# this many leaves: electra-small@nnpi (ceiling 152.073 us) needs 144.83 for a 5% gap
SLOT_TREE_TARGET = 1 / 1.045
SLOT_TREE_MAX_LEAVES = 6000
# each tree model's leaf limit, which its grow call reads: a tree that reaches it stops
# whatever time is left, and `--resume` grows a stored tree that has reached it no further
TREE_LEAF_LIMITS = {TREE_MODEL: TREE_MAX_LEAVES, COVER_TREE_MODEL: TREE_MAX_LEAVES,
                    START_TREE_MODEL: START_TREE_MAX_LEAVES,
                    STEP_COVER_TREE_MODEL: STEP_COVER_TREE_MAX_LEAVES,
                    UNITS_TREE_MODEL: UNITS_TREE_MAX_LEAVES,
                    START_COLUMN_MODEL: START_COLUMN_MAX_LEAVES, SLOT_TREE_MODEL: SLOT_TREE_MAX_LEAVES}


def closed_form(instance: Instance) -> float:
    """The residency model's closed-form bound: bounds the static and residency optima."""
    return float(lower_bound(instance))


def _lp(instance: Instance, model: str) -> tuple[Any, float, float]:
    """The highspy LP (integrality dropped) of `model` on `instance`, with the factor
    turning its objective into seconds and its constant offset (model units)."""
    if model == "static-milp":
        form = milp_highs.formulate(instance)
        lp = milp_highs.highs_model(form, relax=True)
        return lp, 1.0 / form.scale, form.offset * form.scale
    if model == "residency-relaxation":
        rel = relaxation.formulate(instance, binary_starts=False, binary_holds=False)
        return rel.builder.arrays().highs_lp(), rel.scale, 0.0
    raise ValueError(f"unknown LP model {model!r}; known: {', '.join(LP_MODELS)}")


def lp_models(problem: str) -> tuple[str, ...]:
    """The LP models whose bounds `memplace-lib` records for `problem` (the residency
    ones bound the static optimum too; the static LP is the stronger one there)."""
    return (("static-milp", "residency-relaxation") if problem == "static"
            else ("residency-relaxation", ACCESS_MODEL, DELIVERY_MODEL, CAPPED_MODEL))


def _usable(ceiling: float | None) -> bool:
    """Whether `ceiling` (a valid latency, the models' cap) can build a capped model."""
    return ceiling is not None and math.isfinite(ceiling) and ceiling > 0


def _proving(instance: Instance, cert: dict[str, Any],
             ceiling: float | None = None) -> dict[str, Any] | None:
    """`cert` with the bound its check proves (as `verify` will recompute it), or None when
    that bound is not finite and positive."""
    cert["bound"] = check_lp_dual(instance, cert, valid_latency=ceiling)
    return cert if math.isfinite(cert["bound"]) and cert["bound"] > 0 else None


def _op_rows(certificate: dict[str, Any]) -> bool:
    """Whether a certificate's LP has the op rows (`delivery_bound.op_rows`,
    `relaxation._Formulation.op_rows`): the certificates built with them say so
    (`"op_rows": true`); the older ones (every library version to memplace-lib/10) had none."""
    return certificate.get("op_rows") is True


def _sparse(y: np.ndarray, model: str, **extra: Any) -> dict[str, Any]:
    nonzero = np.flatnonzero(y)
    return {"kind": "lp-dual", "model": model, **extra, "rows": int(y.size),
            "index": nonzero.tolist(), "value": y[nonzero].tolist()}


def _access_dual(instance: Instance, time_limit: float | None,
                 ceiling: float | None) -> dict[str, Any] | None:
    """The access relaxation's certificate: its row duals and the ceiling it was built with."""
    import time
    from memplace.solvers.residency.machinery import access_bound
    if not _usable(ceiling):
        return None
    began = time.perf_counter()
    try:
        model = access_bound.formulate(instance, ceiling, math.inf if time_limit is None
                                       else began + time_limit)
    except TimeoutError:
        return None
    lp = model.rows.arrays(model.scale).highs_lp()
    left = None if time_limit is None else max(0.05, began + time_limit - time.perf_counter())
    h = new_highs(1, 0, left)
    h.passModel(lp)
    h.run()
    solution = h.getSolution()
    if not solution.dual_valid:
        return None
    cert = _sparse(np.asarray(solution.row_dual, np.float64), ACCESS_MODEL, ceiling=float(ceiling))
    return _proving(instance, cert, ceiling)


def _capped_dual(instance: Instance, time_limit: float | None,
                 ceiling: float | None) -> dict[str, Any] | None:
    """The capped relaxation's certificate: the row duals of HiGHS's interior point method
    (`relaxation.solve_capped`) and the ceiling the model was built with."""
    if not _usable(ceiling):
        return None
    got = relaxation.solve_capped(instance, ceiling, time_limit, op_rows=True)
    if got.duals is None:
        return None
    cert = _sparse(got.duals, CAPPED_MODEL, ceiling=float(ceiling), op_rows=True)
    return _proving(instance, cert, ceiling)


def _delivery_dual(instance: Instance, time_limit: float | None,
                   ceiling: float | None) -> dict[str, Any] | None:
    """The delivery relaxation's certificate: its row duals and the ceiling it was built with."""
    import time
    from memplace.solvers.residency.machinery import delivery_bound
    if not _usable(ceiling):
        return None
    began = time.perf_counter()
    try:
        model = delivery_bound.formulate(instance, ceiling, math.inf if time_limit is None
                                         else began + time_limit, op_rows=True)
    except TimeoutError:
        return None
    left = None if time_limit is None else max(0.05, began + time_limit - time.perf_counter())
    _, duals = delivery_bound.solve_lp(model, left)
    if duals is None:
        return None
    cert = _sparse(np.asarray(duals, np.float64), DELIVERY_MODEL, ceiling=float(ceiling), op_rows=True)
    return _proving(instance, cert, ceiling)


def _home_branching(instance: Instance, model: Any) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """The delivery relaxation's branchable columns (every home column: 0 or 1 at every
    valid solution's point), the groups a tree branches on first (per fast level, the
    homes there of three or more weights of one size, together at least a tenth of the
    fastest level), and a priority per column (larger tensors first, weights before
    activations)."""
    n_cols = model.lp.cost.size
    branchable = np.zeros(n_cols, bool)
    priority = np.zeros(n_cols)
    homes = model.homes
    for t in range(instance.n_tensors):
        cols = homes[t][homes[t] >= 0]
        branchable[cols] = True
        priority[cols] = float(instance.size[t]) * (1.0 if instance.is_weight[t] else 0.5)
    groups = []
    weights = np.flatnonzero(instance.is_weight == 1)
    sizes, counts = np.unique(instance.size[weights], return_counts=True)
    for size, count in zip(sizes.tolist(), counts.tolist()):
        if count < 3 or size * count < 0.1 * float(instance.capacity[0]):
            continue
        same = weights[instance.size[weights] == size]
        for level in range(instance.n_levels - 1):
            cols = homes[same, level]
            if (cols >= 0).sum() >= 2:
                groups.append(cols[cols >= 0])
    return branchable, groups, priority


def _tree_certificate(instance: Instance, model: str, ceiling: float, rows: int, grown: Any,
                      root_bound: float | None, **fields: Any) -> dict[str, Any] | None:
    """The certificate of a grown tree (`grown.leaves`, `grown.tree`): its model's name, the
    ceiling, the LP's row count and `fields` (what its check rebuilds the LP from), with the
    bound `verify` will recompute from it. None when that bound is not finite and positive,
    or, given the tree's `root_bound`, not TREE_MIN_GAIN above it (the root's own
    certificate proves as much)."""
    cert = {"kind": "lp-dual", "model": model, "ceiling": float(ceiling), "rows": rows, **fields,
            "leaves": grown.leaves, "tree": grown.tree}
    proved = _proving(instance, cert, ceiling)
    if proved is None or (root_bound is not None
                          and proved["bound"] <= root_bound * (1 + TREE_MIN_GAIN)):
        return None
    return proved


def _tree_dual(instance: Instance, time_limit: float | None,
               ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the delivery relaxation (`lp_tree.grow`), kept only when it proves
    TREE_MIN_GAIN above its root."""
    import time
    from memplace.solvers import lp_tree
    from memplace.solvers.residency.machinery import delivery_bound
    if not _usable(ceiling):
        return None
    began = time.perf_counter()
    limit = 600.0 if time_limit is None else time_limit
    try:
        model = delivery_bound.formulate(instance, ceiling, began + limit, op_rows=True)
    except TimeoutError:
        return None
    branchable, groups, priority = _home_branching(instance, model)
    left = max(1.0, began + limit - time.perf_counter())
    grown = lp_tree.grow(model.lp, branchable, ceiling / model.scale, left,
                         TREE_LEAF_LIMITS[TREE_MODEL], groups, priority, model.scale)
    if grown.leaves < 2:
        return None
    return _tree_certificate(instance, TREE_MODEL, ceiling, int(model.lp.rlo.size), grown,
                             grown.root_bound, op_rows=True)


def _start_tree_dual(instance: Instance, time_limit: float | None,
                     ceiling: float | None, resume: dict[str, Any] | None = None
                     ) -> dict[str, Any] | None:
    """A tree over the relaxation with its start and hold binaries (`start_tree.py`),
    kept only when it proves TREE_MIN_GAIN above its root. Given `resume`, a certificate
    of this model whose check proves a bound with `ceiling` as the valid latency, that
    tree is grown on (on its own LP: its ceiling, its op rows) and kept when it proves
    more than the stored tree; a stored tree that proves nothing is refused (ValueError)."""
    from memplace.solvers.residency.machinery import start_tree
    if not _usable(ceiling):
        return None
    op_rows, start, floor = True, None, None
    if resume is not None:
        floor = (check_lp_dual(instance, resume, valid_latency=ceiling)
                 if resume.get("model") == START_TREE_MODEL else -math.inf)
        if not math.isfinite(floor):
            raise ValueError(f"the certificate to grow on is not a {START_TREE_MODEL} tree that "
                             f"proves a bound on this instance")
        ceiling, op_rows, start = float(resume["ceiling"]), _op_rows(resume), resume["tree"]
    try:
        grown, rows = start_tree.grow(instance, ceiling, 600.0 if time_limit is None else time_limit,
                                      TREE_LEAF_LIMITS[START_TREE_MODEL], op_rows=op_rows, start=start)
    except relaxation.BuildTimeout:
        return None
    cert = _tree_certificate(instance, START_TREE_MODEL, ceiling, rows, grown,
                             grown.root_bound if floor is None else None, op_rows=op_rows)
    return cert if cert is None or floor is None or cert["bound"] > floor else None


def _cover_branching(instance: Instance, model: Any, fams: list[Any]
                     ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """`_home_branching`, with first, per cover family, the homes of its tensors in the
    levels other than the last (their sum is an integer at every valid solution's point)."""
    branchable, groups, priority = _home_branching(instance, model)
    first = []
    for fam in fams:
        cols = model.homes[list(fam.tensors), :instance.n_levels - 1].ravel()
        if (cols >= 0).sum() >= 2:
            first.append(cols[cols >= 0])
    return branchable, first + groups, priority


def _cover_tree_dual(instance: Instance, time_limit: float | None,
                     ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the delivery relaxation with the cover families of `cover_cuts.families`
    (a root alone when it closes or time runs out)."""
    import time
    from memplace.solvers import lp_tree
    from memplace.solvers.residency.machinery import cover_cuts
    if not _usable(ceiling):
        return None
    began = time.perf_counter()
    limit = 600.0 if time_limit is None else time_limit
    fams = cover_cuts.families(instance)
    if not fams:
        return None
    try:
        model = cover_cuts.cover_lp(instance, ceiling, fams, began + limit)
    except TimeoutError:
        return None
    branchable, groups, priority = _cover_branching(instance, model, fams)
    left = max(1.0, began + limit - time.perf_counter())
    grown = lp_tree.grow(model.lp, branchable, ceiling / model.scale, left,
                         TREE_LEAF_LIMITS[COVER_TREE_MODEL], groups, priority, model.scale)
    cert = {"kind": "lp-dual", "model": COVER_TREE_MODEL, "ceiling": float(ceiling),
            "rows": int(model.lp.rlo.size), "families": [f.to_json() for f in fams],
            "leaves": grown.leaves, "tree": grown.tree}
    return _proving(instance, cert, ceiling)


def _rotation(instance: Instance) -> dict[str, Any] | None:
    """The rotation bound's certificate: its family (the best of `rotation_bound.families`)."""
    from memplace.solvers.residency.machinery import rotation_bound
    value, family = rotation_bound.best(instance)
    if family is None:
        return None
    cert = {"kind": "lp-dual", "model": ROTATION_MODEL, "families": [family.to_json()]}
    return _proving(instance, cert)


def _rotation_levels(instance: Instance, ceiling: float | None) -> dict[str, Any] | None:
    """The rotation over levels' certificate: its members and the cap it proves (the least
    over home assignments, or LEVEL_CAP times the best known when that is less)."""
    from memplace.solvers.residency.machinery import rotation_bound
    members = rotation_bound.level_members(instance)
    if members is None:
        return None
    cap = LEVEL_CAP * ceiling if ceiling is not None and math.isfinite(ceiling) else math.inf
    value = rotation_bound.level_bound(instance, members, cap)
    if not math.isfinite(value) or value <= 0:
        return None
    cert = {"kind": "lp-dual", "model": ROTATION_LEVELS_MODEL, "members": list(members), "cap": value}
    return _proving(instance, cert)


def _step_cover_dual(instance: Instance, time_limit: float | None,
                     ceiling: float | None) -> dict[str, Any] | None:
    """The delivery relaxation with copy and step-cover rows (`step_covers.cover_bound`):
    its covers, its row duals and the ceiling it was built with."""
    from memplace.solvers.residency.machinery import step_covers
    if not _usable(ceiling):
        return None
    got = step_covers.cover_bound(instance, ceiling, 600.0 if time_limit is None else time_limit,
                                  op_rows=True)
    return _step_cover_certificate(instance, got, ceiling)


def _step_cover_certificate(instance: Instance, got: Any, ceiling: float) -> dict[str, Any] | None:
    """The certificate of cover rounds (`step_covers.CoverBound`): their covers, row duals
    and ceiling; None without duals."""
    if got.row_dual is None:
        return None
    cert = _sparse(got.row_dual, STEP_COVER_MODEL, ceiling=float(ceiling), op_rows=True,
                   covers=[cover.to_json() for cover in got.covers])
    return _proving(instance, cert, ceiling)


def lp_dual(instance: Instance, model: str, time_limit: float | None = None,
            ceiling: float | None = None, resume: dict[str, Any] | None = None
            ) -> dict[str, Any] | None:
    """Solve the LP relaxation and return its certificate (sparse row duals) with the bound
    it proves, or None when HiGHS did not reach the LP optimum in time. The access
    relaxation needs `ceiling`, the latency of a valid solution (None without one).
    `resume`: a stored certificate of a tree model in RESUMABLE_MODELS, grown on rather
    than a new tree (None when the tree grown on proves no more than it). The certificate's
    `model` is the one it is of: the step-cover tree's is its root's where the tree gains
    nothing (`_step_cover_tree`)."""
    if resume is not None:
        if model not in RESUMABLE_MODELS:
            raise ValueError(f"{model} cannot grow on a stored certificate: only "
                             f"{', '.join(RESUMABLE_MODELS)}")
        return _start_tree_dual(instance, time_limit, ceiling, resume)
    own = _OWN_MODELS.get(model)
    if own is not None:
        return own[0](instance, time_limit, ceiling)
    lp, to_seconds, _ = _lp(instance, model)
    h = new_highs(1, 0, time_limit)
    h.passModel(lp)
    h.run()
    if h.modelStatusToString(h.getModelStatus()) != "Optimal":
        return None
    y = np.asarray(h.getSolution().row_dual, np.float64)
    # duals of the wrong sign within HiGHS's tolerance on one-sided rows would need an
    # infinite bound: zero is as valid a dual there, and costs nothing
    y[((y > 0) & ~np.isfinite(np.asarray(lp.row_lower_))) |
      ((y < 0) & ~np.isfinite(np.asarray(lp.row_upper_)))] = 0.0
    nonzero = np.flatnonzero(y)
    cert = {"kind": "lp-dual", "model": model, "rows": int(y.size),
            "index": nonzero.tolist(), "value": y[nonzero].tolist()}
    cert["bound"] = check_lp_dual(instance, cert)
    return cert


def _dual_vector(certificate: dict[str, Any], n_rows: int) -> np.ndarray | None:
    """The certificate's sparse dual vector as a dense one over `n_rows` rows; None when
    it does not fit the model (another row count, an index out of range, a non-finite
    value)."""
    if int(certificate.get("rows", -1)) != n_rows:
        return None
    index = np.asarray(certificate["index"], np.int64)
    if index.size and (index.min() < 0 or index.max() >= n_rows):
        return None
    y = np.zeros(n_rows, np.float64)
    y[index] = np.asarray(certificate["value"], np.float64)
    return y if np.isfinite(y).all() else None


def check_lp_dual(instance: Instance, certificate: dict[str, Any],
                  valid_latency: float | None = None) -> float:
    """The bound (seconds) a dual vector proves, recomputed from the instance; -inf when it
    proves nothing (wrong shape, or a term that needs an infinite bound, or an access
    relaxation whose ceiling is below `valid_latency`, a latency known valid, or with
    no such latency given)."""
    model = certificate.get("model")
    own = _OWN_MODELS.get(model) if isinstance(model, str) else None
    if own is not None:
        return own[1](instance, certificate, valid_latency)
    lp, to_seconds, offset = _lp(instance, certificate["model"])
    n_rows, n_cols = int(lp.num_row_), int(lp.num_col_)
    y = _dual_vector(certificate, n_rows)
    if y is None:
        return -math.inf
    start = np.asarray(lp.a_matrix_.start_, np.int64)
    rows = np.asarray(lp.a_matrix_.index_, np.int64)
    values = np.asarray(lp.a_matrix_.value_, np.float64)
    col_of = np.repeat(np.arange(n_cols), np.diff(start))
    reduced = np.asarray(lp.col_cost_, np.float64).copy()
    np.subtract.at(reduced, col_of, values * y[rows])
    reduced[np.abs(reduced) <= DUAL_TOLERANCE] = 0.0
    row_lo, row_hi = np.asarray(lp.row_lower_, np.float64), np.asarray(lp.row_upper_, np.float64)
    col_lo, col_hi = np.asarray(lp.col_lower_, np.float64), np.asarray(lp.col_upper_, np.float64)
    row_bound = np.where(y > 0, row_lo, np.where(y < 0, row_hi, 0.0))
    col_bound = np.where(reduced > 0, col_lo, np.where(reduced < 0, col_hi, 0.0))
    if not (np.isfinite(row_bound).all() and np.isfinite(col_bound).all()):
        return -math.inf
    total = offset + float(np.dot(y, row_bound)) + float(np.dot(reduced, col_bound))
    return _margined(total * to_seconds)


def _ceiling(certificate: dict[str, Any], valid_latency: float | None) -> float | None:
    """The certificate's ceiling (the cap on its LP's latency columns) when it is usable:
    finite and at least a valid latency, so capping cuts off no optimum; else None."""
    ceiling = float(certificate.get("ceiling", math.nan))
    if valid_latency is None or not math.isfinite(ceiling) or not ceiling >= valid_latency:
        return None
    return ceiling


def _margined(bound: float) -> float:
    """A checked bound lowered by `MARGIN` so rounding never lifts it above a true
    latency; a bound that is not finite proves nothing."""
    if not math.isfinite(bound):
        return -math.inf
    return bound * (1 - MARGIN) if bound > 0 else bound


def _check_access(instance: Instance, certificate: dict[str, Any],
                  valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import access_bound
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    model = access_bound.formulate(instance, ceiling)
    n_rows = len(model.rows.rlo)
    y = _dual_vector(certificate, n_rows)
    if y is None:
        return -math.inf
    bound = access_bound.dual_bound(model, y)
    return _margined(bound)


def _check_capped(instance: Instance, certificate: dict[str, Any],
                  valid_latency: float | None) -> float:
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    lp = relaxation.capped_lp(instance, ceiling, op_rows=_op_rows(certificate))
    y = _dual_vector(certificate, lp.rlo.size)
    if y is None:
        return -math.inf
    bound = relaxation.weak_duality(lp, y)
    return _margined(bound)


def _check_delivery(instance: Instance, certificate: dict[str, Any],
                    valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import delivery_bound
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    model = delivery_bound.formulate(instance, ceiling, op_rows=_op_rows(certificate))
    y = _dual_vector(certificate, model.lp.rlo.size)
    if y is None:
        return -math.inf
    bound = delivery_bound.dual_bound(model, y)
    return _margined(bound)


def _check_tree(instance: Instance, certificate: dict[str, Any],
                valid_latency: float | None) -> float:
    from memplace.solvers import lp_tree
    from memplace.solvers.residency.machinery import delivery_bound
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    model = delivery_bound.formulate(instance, ceiling, op_rows=_op_rows(certificate))
    if int(certificate.get("rows", -1)) != model.lp.rlo.size or not isinstance(certificate.get("tree"), dict):
        return -math.inf
    branchable, _, _ = _home_branching(instance, model)
    bound = min(lp_tree.check_tree(model.lp, certificate["tree"], branchable) * model.scale, ceiling)
    return _margined(bound)


def _check_start_tree(instance: Instance, certificate: dict[str, Any],
                      valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import start_tree
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(start_tree.check(instance, ceiling, int(certificate.get("rows", -1)),
                                      certificate.get("tree"), _op_rows(certificate)))


def _check_cover_tree(instance: Instance, certificate: dict[str, Any],
                      valid_latency: float | None) -> float:
    from memplace.solvers import lp_tree
    from memplace.solvers.residency.machinery import cover_cuts
    ceiling = _ceiling(certificate, valid_latency)
    stored = certificate.get("families")
    if ceiling is None or not isinstance(stored, list) or not stored:
        return -math.inf
    fams = [cover_cuts.family_holds(instance, f) for f in stored]
    if any(f is None for f in fams):
        return -math.inf
    model = cover_cuts.cover_lp(instance, ceiling, fams)
    if int(certificate.get("rows", -1)) != model.lp.rlo.size or not isinstance(certificate.get("tree"), dict):
        return -math.inf
    branchable, _, _ = _home_branching(instance, model)
    bound = min(lp_tree.check_tree(model.lp, certificate["tree"], branchable) * model.scale, ceiling)
    return _margined(bound)


def _check_rotation(instance: Instance, certificate: dict[str, Any]) -> float:
    from memplace.solvers.residency.machinery import cover_cuts, rotation_bound
    stored = certificate.get("families")
    if not isinstance(stored, list) or len(stored) != 1:
        return -math.inf
    family = cover_cuts.family_holds(instance, stored[0])
    if family is None or family.others or not rotation_bound.eligible(instance, family):
        return -math.inf
    return _margined(rotation_bound.bound(instance, family))


def _check_rotation_levels(instance: Instance, certificate: dict[str, Any]) -> float:
    """The least of the stored cap and the rotation over levels of the stored members
    (any cap is sound: the program's value is a bound, and so is anything below it)."""
    from memplace.solvers.residency.machinery import rotation_bound
    members, cap = certificate.get("members"), certificate.get("cap")
    if not (isinstance(members, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in members)):
        return -math.inf
    if not isinstance(cap, (int, float)) or isinstance(cap, bool) or not math.isfinite(cap) or cap <= 0:
        return -math.inf
    if not rotation_bound.level_eligible(instance, tuple(members)):
        return -math.inf
    return _margined(rotation_bound.level_bound(instance, tuple(members), float(cap)))


def _check_step_cover(instance: Instance, certificate: dict[str, Any],
                      valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import step_covers
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(step_covers.check(instance, ceiling, certificate.get("covers"),
                                       int(certificate.get("rows", -1)), certificate.get("index"),
                                       certificate.get("value"), _op_rows(certificate)))


def _step_cover_tree(instance: Instance, time_limit: float | None,
                     ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the step-cover LP (`step_covers.grow_tree`), kept only when it proves
    TREE_MIN_GAIN above its root; else the certificate of the cover rounds it grew from
    (model STEP_COVER_MODEL), which proves the root's bound. The root's own model is solved
    only on request, so without it a tree that gains nothing would leave that bound
    unrecorded: on round 13's GLPN@nnpi the cover rounds prove 451.5 µs (best known 453.9)
    in 19 s, where every model the library solves by default proves at most 273."""
    from memplace.solvers.residency.machinery import step_covers
    if not _usable(ceiling):
        return None
    got = step_covers.grow_tree(instance, ceiling, 600.0 if time_limit is None else time_limit,
                                TREE_LEAF_LIMITS[STEP_COVER_TREE_MODEL], STEP_COVER_TREE_LEAF_ROUNDS,
                                op_rows=True)
    tree = None
    if got.tree is not None and got.leaves >= 2:
        tree = _tree_certificate(instance, STEP_COVER_TREE_MODEL, ceiling, got.rows, got,
                                 got.root_bound, op_rows=True,
                                 covers=[cover.to_json() for cover in got.covers])
    return tree or _step_cover_certificate(instance, got.root, ceiling)


def _check_step_cover_tree(instance: Instance, certificate: dict[str, Any],
                           valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import step_covers
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(step_covers.check_tree(instance, ceiling, certificate.get("covers"),
                                            int(certificate.get("rows", -1)), certificate.get("tree"),
                                            _op_rows(certificate)))


def _units_tree(instance: Instance, time_limit: float | None,
                ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the unit LP (`copy_units.grow_tree`), kept only when it proves
    TREE_MIN_GAIN above its root."""
    from memplace.solvers.residency.machinery import copy_units
    if not _usable(ceiling):
        return None
    try:
        got = copy_units.grow_tree(instance, ceiling, 600.0 if time_limit is None else time_limit,
                                   TREE_LEAF_LIMITS[UNITS_TREE_MODEL])
    except TimeoutError:
        return None
    if got.tree is None or got.leaves < 2:
        return None
    return _tree_certificate(instance, UNITS_TREE_MODEL, ceiling, got.rows, got, got.root_bound,
                             units=copy_units.units_json(got.units))


def _check_units_tree(instance: Instance, certificate: dict[str, Any],
                      valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import copy_units
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(copy_units.check_tree(instance, ceiling, certificate.get("units"),
                                           int(certificate.get("rows", -1)), certificate.get("tree")))


def _start_column_tree(instance: Instance, time_limit: float | None,
                       ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the step-cover LP with start columns for a few large tensors
    (`start_columns.bound`): the tensors, covers and tree with the ceiling."""
    from memplace.solvers.residency.machinery import start_columns
    if not _usable(ceiling):
        return None
    got = start_columns.bound(instance, ceiling, 600.0 if time_limit is None else time_limit,
                              TREE_LEAF_LIMITS[START_COLUMN_MODEL])
    if got.tree is None or not got.tensors:
        return None
    return _tree_certificate(instance, START_COLUMN_MODEL, ceiling, got.rows, got, None,
                             tensors=list(got.tensors), covers=[cover.to_json() for cover in got.covers])


def _check_start_column_tree(instance: Instance, certificate: dict[str, Any],
                             valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import start_columns
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(start_columns.check(instance, ceiling, certificate.get("tensors"),
                                         certificate.get("covers"), int(certificate.get("rows", -1)),
                                         certificate.get("tree")))


def _slot_tree(instance: Instance, time_limit: float | None,
               ceiling: float | None) -> dict[str, Any] | None:
    """A tree over the slot relaxation (`slot_bound.grow_tree`) aiming at SLOT_TREE_TARGET
    of the ceiling: its unit, splits, covers and tree with the ceiling."""
    from memplace.solvers.residency.machinery import slot_bound
    if not _usable(ceiling) or instance.n_levels < 2:
        return None
    got = slot_bound.grow_tree(instance, ceiling, ceiling * SLOT_TREE_TARGET,
                               600.0 if time_limit is None else time_limit,
                               TREE_LEAF_LIMITS[SLOT_TREE_MODEL])
    if got.tree is None:
        return None
    return _tree_certificate(instance, SLOT_TREE_MODEL, ceiling, got.rows, got, None, unit=got.unit,
                             splits=list(got.splits), covers=slot_bound.covers_json(got.covers))


def _check_slot_tree(instance: Instance, certificate: dict[str, Any],
                     valid_latency: float | None) -> float:
    from memplace.solvers.residency.machinery import slot_bound
    ceiling = _ceiling(certificate, valid_latency)
    if ceiling is None:
        return -math.inf
    return _margined(slot_bound.check_tree(instance, ceiling, certificate.get("unit"),
                                           certificate.get("splits"), certificate.get("covers"),
                                           int(certificate.get("rows", -1)), certificate.get("tree")))


Grow = Callable[[Instance, "float | None", "float | None"], "dict[str, Any] | None"]
Check = Callable[[Instance, dict[str, Any], "float | None"], float]
# the models with their own certificate (the others are `_lp`'s LPs and a dual vector):
# name -> (grow: instance, time limit, ceiling -> certificate or None;
#          check: instance, certificate, a latency known valid -> the bound it proves)
_OWN_MODELS: dict[str, tuple[Grow, Check]] = {
    ACCESS_MODEL: (_access_dual, _check_access),
    CAPPED_MODEL: (_capped_dual, _check_capped),
    DELIVERY_MODEL: (_delivery_dual, _check_delivery),
    TREE_MODEL: (_tree_dual, _check_tree),
    START_TREE_MODEL: (_start_tree_dual, _check_start_tree),
    COVER_TREE_MODEL: (_cover_tree_dual, _check_cover_tree),
    ROTATION_MODEL: (lambda inst, _limit, _ceiling: _rotation(inst),
                     lambda inst, cert, _valid: _check_rotation(inst, cert)),
    ROTATION_LEVELS_MODEL: (lambda inst, _limit, ceiling: _rotation_levels(inst, ceiling),
                            lambda inst, cert, _valid: _check_rotation_levels(inst, cert)),
    STEP_COVER_MODEL: (_step_cover_dual, _check_step_cover),
    STEP_COVER_TREE_MODEL: (_step_cover_tree, _check_step_cover_tree),
    UNITS_TREE_MODEL: (_units_tree, _check_units_tree),
    START_COLUMN_MODEL: (_start_column_tree, _check_start_column_tree),
    SLOT_TREE_MODEL: (_slot_tree, _check_slot_tree),
}
