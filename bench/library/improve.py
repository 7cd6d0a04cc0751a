"""Filling and improving a library: adding instances with their default and cheap certified
bounds, then running solvers with a budget and recording every better solution or bound
with its provenance (the way MIPLIB records an update).

Work is a list of `Task`s, each run by `run_task` in a worker (a local loop, or Dask
workers when a scheduler address is given); the results come back as plain data and
only this process writes the library.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from memplace.bench.cluster import connect
from memplace.bench.library import store
from memplace.bench.library.check import decode_certificate, load_entry_instance
from memplace.bench.library.tables import by_certified_gap, certified_gap_text, figure, unit
from memplace.instances.library import OPTIMAL_GAP, Entry, Library
from memplace.model.core.errors import ParameterError

DEFAULTS = {"static": "compiler", "residency": "msa", "packing": "best-heuristic"}
# The solvers `improve` runs per problem: the exact models first (they also prove bounds).
IMPROVERS = {"static": ("milp", "sa"), "residency": ("bound", "sa", "multistart"),
             "packing": ("minimize",)}
LP_TIME_LIMIT_S = 30.0
# The capped residency relaxation (solvers/certificate.py) by interior point: xla-train@nnpi
# (211 ops) took 230 s on 2 loaded cores
CAPPED_TIME_LIMIT_S = 400.0
# Solvers whose `lower_bound` is HiGHS's dual bound after branch and bound (the others
# report closed-form bounds, which the library recomputes itself).
BRANCH_AND_BOUND = ("milp", "bound")


@dataclass(frozen=True)
class Task:
    """One solver run on one entry's instance (`source`: a catalog name or a file)."""

    entry: str
    problem: str
    source: str
    solver: str
    time_limit: float | None
    seed: int = 0
    params: dict[str, Any] = field(default_factory=dict)


def run_task(task: Task) -> dict[str, Any]:
    """Run a task; what it found as plain data (solution text, objective, bounds)."""
    began = time.perf_counter()
    if task.problem == "packing":
        return _run_packing(task, began)
    from memplace.instances import load
    from memplace.solvers import solve
    inst = load(task.source, task.problem)
    if task.solver == "lp-dual":
        from memplace.solvers.certificate import TREE_LEAF_LIMITS, closed_form, lp_dual, lp_models
        bounds = ([{"kind": "closed-form", "value": closed_form(inst), "label": ""}]
                  if task.params.get("closed_form", True) else [])
        unproved, full = [], {}
        params, resume = dict(task.params), None
        if params.get("resume"):  # a stored tree to grow on, named by its content in the provenance
            path = Path(params["resume"])
            raw = path.read_bytes()
            params["resume"] = "sha256:" + hashlib.sha256(raw).hexdigest()
            resume = decode_certificate(path, raw)
        for model in params.get("models", lp_models(task.problem)):
            cert = lp_dual(inst, model, task.time_limit, params.get("ceiling"), resume)
            if cert is not None:
                # labelled by the model the certificate is of: a tree that gains nothing
                # over its root returns the root's certificate (`lp_dual`)
                bounds.append({"kind": "lp-dual", "value": cert["bound"],
                               "label": cert.get("model", model), "certificate": cert})
            else:
                unproved.append(model)
            # the tree this run ends with: the one it grew, else the stored one it could not grow
            stored = resume if resume is not None and resume.get("model") == model else None
            tree, limit = (cert if cert is not None else stored), TREE_LEAF_LIMITS.get(model)
            if tree is not None and limit is not None and tree.get("leaves", 0) >= limit:
                full[model] = limit
        return {"task": asdict(task), "bounds": bounds, "unproved": unproved, "params": params,
                "full_trees": full, "wall_s": time.perf_counter() - began}
    from memplace.solvers import load_kernels
    load_kernels([task.solver], task.problem)  # compiled (or loaded) before the solver's clock
    result = solve(inst, task.solver, time_limit=task.time_limit, seed=task.seed,
                   problem=task.problem, **task.params)
    from memplace.model.core.problem import problem as get_problem
    params = dict(result.params)
    if params.get("start"):  # the start is named by its content, not by a local path
        params["start"] = "sha256:" + hashlib.sha256(Path(params["start"]).read_bytes()).hexdigest()
        result.params = params  # (the solution file's solver block too)
    file = get_problem(task.problem).solution_file(result)
    out: dict[str, Any] = {"task": asdict(task), "objective": float(result.latency),
                           "solution": json.dumps(file.to_dict(inst), indent=1) + "\n",
                           "params": params, "wall_s": result.wall_s, "bounds": []}
    if task.solver in BRANCH_AND_BOUND and result.lower_bound is not None and \
            math.isfinite(result.lower_bound):
        out["bounds"].append({"kind": "branch-and-bound", "value": float(result.lower_bound),
                              "label": task.solver})
    return out


def _run_packing(task: Task, began: float) -> dict[str, Any]:
    import io
    from memplace.model.packing.minimalloc_csv import read_buffers, write_solution
    from memplace.model.packing.packers import PACKERS, minimize, peak_live_size
    packing = read_buffers(task.source)
    buffers = packing.buffers
    peak = peak_live_size(buffers)
    bounds = [{"kind": "peak-live", "value": float(peak), "label": ""}]
    if task.solver == "minimize":
        result, lower = minimize(buffers, task.time_limit, task.params.get("capacity"))
        offsets = result.offsets
        if lower > peak:
            bounds.append({"kind": "exhaustion", "value": float(lower), "label": "minimize"})
    else:
        sizes = np.array([b.size for b in buffers], np.int64)
        lowers = np.array([b.lower for b in buffers], np.int64)
        uppers = np.array([b.upper for b in buffers], np.int64)
        aligns = np.array([b.alignment for b in buffers], np.int64)
        status, offsets, _ = PACKERS[task.solver](sizes, lowers, uppers, aligns,
                                                  int(sizes.sum() + aligns.sum()), None)
    sizes = np.array([b.size for b in buffers], np.int64)
    if (np.asarray(offsets) < 0).any():
        return {"task": asdict(task), "objective": math.inf, "bounds": bounds,
                "wall_s": time.perf_counter() - began}
    height = int((np.asarray(offsets) + sizes).max()) if len(buffers) else 0
    tmp = io.StringIO()
    import csv
    writer = csv.DictWriter(tmp, fieldnames=[f for f in packing.fieldnames if f != "offset"] + ["offset"],
                            lineterminator="\n")
    writer.writeheader()
    for row, off in zip(packing.rows, offsets):
        writer.writerow({**row, "offset": int(off)})
    return {"task": asdict(task), "objective": float(height), "solution": tmp.getvalue(),
            "params": {}, "wall_s": time.perf_counter() - began, "bounds": bounds}


def results(tasks: list[Task], scheduler: str | None = None) -> Iterator[dict[str, Any]]:
    """Each task's outcome as it finishes: on Dask workers when `scheduler` is an address,
    else one after another here. A task that raises yields {"task", "error"}."""
    if scheduler:
        with connect(scheduler, "--scheduler") as client:
            from distributed import as_completed
            futures = client.map(_guarded, tasks, pure=False)
            for future in as_completed(futures):
                yield future.result()
        return
    for task in tasks:
        yield _guarded(task)


def _guarded(task: Task) -> dict[str, Any]:
    try:
        return run_task(task)
    except Exception as exc:  # one failed run must not lose the others' results
        return {"task": asdict(task), "error": f"{type(exc).__name__}: {exc}"}


def record(lib: Library, outcome: dict[str, Any], notes: list[str] | None = None) -> list[str]:
    """Record what a task found in the library; one line per improvement (and in `notes`,
    if given, one per bound proved that was not better than the one recorded and one per
    certificate model that gave none, so a long certifying run says what it proved)."""
    task = outcome["task"]
    entry = lib.entry(task["entry"])
    lines = []
    if "error" in outcome:
        return [f"{entry.id}: {task['solver']} failed: {outcome['error']}"]
    prov = store.provenance(task["solver"], outcome.get("params", task["params"]), task["seed"],
                            task["time_limit"], outcome.get("wall_s"))
    text = outcome.get("solution")
    if text is not None and math.isfinite(outcome["objective"]):
        suffix = ".csv" if entry.problem == "packing" else ".json"
        before = entry.best["objective"]
        if store.record_solution(lib, entry, outcome["objective"],
                                 lambda path: path.write_text(text, encoding="utf-8"), prov, suffix):
            lines.append(f"{entry.id}: best {figure(entry, before)} -> {figure(entry, outcome['objective'])} "
                         f"{unit(entry)} ({task['solver']})")
    full = outcome.get("full_trees", {})
    for bound in outcome.get("bounds", []):
        named = f"{entry.id}: {bound['kind']} bound {figure(entry, bound['value'])} {unit(entry)}" + \
            (f" ({bound['label']}{_full_text(full.get(bound['label']))})" if bound.get("label") else "")
        if store.record_bound(lib, entry, bound["value"], bound["kind"], prov,
                              bound.get("certificate"), bound.get("label", "")):
            lines.append(named)
        elif notes is not None and bound["kind"] != "closed-form":
            notes.append(f"{named}: not recorded (one of its kind at least as high is)")
    if notes is not None:
        for model in outcome.get("unproved", []):
            if model in full and task["params"].get("resume"):
                notes.append(f"{entry.id}: {model}: the stored tree has {full[model]} leaves, its "
                             f"limit: --resume grows it no further")
                continue
            notes.append(f"{entry.id}: {model}: no certificate in {task['time_limit']:g} s (its LP "
                         f"not solved in time, or a tree proving no more than its root or the tree "
                         f"it grew on)")
    store.prune_dominated(lib, entry)
    return lines


def _full_text(limit: int | None) -> str:
    """What a bound's line adds when its tree stopped at its leaf limit, not its time."""
    return "" if limit is None else f"; the tree reached its {limit}-leaf limit"


def certify_task(lib: Library, e: Entry, budget: float,
                 models: Iterable[str] | None = None, resume: bool = False) -> list[Task]:
    """The cheap-certificate bounds of a program entry, refreshed: the closed form
    (recomputed, so a stronger formula in the model is picked up), the LP duals of the
    models the entry has no `lp-dual` bound of yet (one that did not solve in time
    before gets `budget` seconds, at least LP_TIME_LIMIT_S) and the access relaxation's
    with the best known as its ceiling (`models`: only these LP models); and, in a task
    of its own with at least CAPPED_TIME_LIMIT_S, the capped relaxation's where the
    certified gap is above the library's target (it takes minutes at 200-340 ops).
    With `resume`, an asked tree model of RESUMABLE_MODELS whose certificate the entry
    stores grows that tree on instead of a new one. No tasks for packing."""
    if e.problem == "packing":
        return []
    from memplace.bench.library.tables import TARGET_GAP
    from memplace.solvers.certificate import (CAPPED_MODEL, CEILING_MODELS, ON_REQUEST_MODELS,
                                              RESUMABLE_MODELS, lp_models)
    have = {b.get("label") for b in e.bounds if b["kind"] == "lp-dual"} | set(
        e.data.get("lp_dominated", []))
    # a tree over the delivery relaxation only when asked for: minutes, and a large certificate
    asked = [m for m in ON_REQUEST_MODELS.get(e.problem, ()) if models is not None and m in models]
    # the ceiling models are solved again each time: their ceiling, the best known, falls
    # as the best known improves (the access relaxation is quick; the capped one is run
    # only where the gap is still above the target)
    missing = [m for m in lp_models(e.problem) if (m not in have or m in CEILING_MODELS)
               and (models is None or m in models)]
    gap = e.certified_gap
    capped = CAPPED_MODEL in missing and (models is not None or gap is None or gap > TARGET_GAP)
    missing = [m for m in missing if m != CAPPED_MODEL]
    source = str(lib.instance_source(e))
    ceiling = e.best["objective"]
    tasks = [Task(e.id, e.problem, source, "lp-dual", max(budget, LP_TIME_LIMIT_S), 0,
                  {"models": missing, "ceiling": ceiling})]
    if capped:
        tasks.append(Task(e.id, e.problem, source, "lp-dual", max(budget, CAPPED_TIME_LIMIT_S), 0,
                          {"models": [CAPPED_MODEL], "ceiling": ceiling, "closed_form": False}))
    stored = {b.get("label"): b.get("certificate") for b in e.bounds
              if b["kind"] == "lp-dual" and b.get("certificate")}
    for m in asked:
        params: dict[str, Any] = {"models": [m], "ceiling": ceiling, "closed_form": False}
        if resume and m in RESUMABLE_MODELS and stored.get(m):
            params["resume"] = str(lib.path(stored[m]))
        tasks.append(Task(e.id, e.problem, source, "lp-dual", budget, 0, params))
    return tasks


def solver_params(problems: Iterable[str], solvers: dict[str, tuple[str, ...]] | None,
                  given: Mapping[str, Any] | None, from_best: bool = False
                  ) -> dict[tuple[str, str], dict[str, Any]]:
    """The parameters `given` (KEY=VALUE strings from the command line, as `memplace solve
    --param` takes them) converted for every solver that will run on `problems`, keyed by
    (problem, solver). Every one of those solvers must accept every key: a ParameterError
    names the solver and the key or value it refuses, before anything runs."""
    from memplace.solvers import solver_info
    given = dict(given or {})
    if not given:
        return {}
    if from_best and "start" in given:
        raise ParameterError("--from-best starts from the best known: give it or --param start=, "
                             "not both")
    out = {}
    for problem in problems:
        for solver in (solvers or IMPROVERS).get(problem, ()):
            if problem == "packing":
                raise ParameterError(f"packing's {solver!r} takes no parameter "
                                     f"(given: {', '.join(given)})")
            checked = solver_info(solver, problem).check(given)
            out[problem, solver] = {key: checked[key] for key in given}
    if not out:
        raise ParameterError(f"--param {next(iter(given))!r} given, but no solver runs")
    return out


def improve_tasks(lib: Library, entries: Iterable[Entry], budget: float, seeds: int = 1,
                  solvers: dict[str, tuple[str, ...]] | None = None,
                  certify: bool = True, models: Iterable[str] | None = None,
                  from_best: bool = False,
                  params: Mapping[str, Any] | None = None, resume: bool = False) -> list[Task]:
    """A run of every improver of each entry's problem, `budget` seconds each, after the
    entry's certificate bounds are refreshed (`certify_task`, growing stored trees on given
    `resume`); entries already optimal are skipped. With `from_best`, a solver that takes
    a `start` solution file (residency `multistart`) starts from the entry's best known as
    well. `params` (checked by `solver_params`) are given to every solver run."""
    from memplace.solvers import solver_info
    entries = list(entries)
    given = solver_params({e.problem for e in entries}, solvers, params, from_best)
    tasks = []
    for e in entries:
        if e.gap is not None and e.gap <= OPTIMAL_GAP:
            continue
        if certify:
            tasks += certify_task(lib, e, budget, models, resume)
        for solver in (solvers or IMPROVERS).get(e.problem, ()):
            for seed in range(seeds):
                run_params = {"capacity": e.data["capacity"]} if e.data.get("capacity") else {}
                if from_best and e.problem != "packing" and e.best.get("file") and \
                        "start" in solver_info(solver, e.problem).params:
                    run_params["start"] = str(lib.path(e.best["file"]))
                run_params.update(given.get((e.problem, solver), {}))
                tasks.append(Task(e.id, e.problem, str(lib.instance_source(e)), solver, budget,
                                  seed, run_params))
    return tasks


def improve(lib: Library, budget: float, entries: Iterable[Entry] | None = None,
            scheduler: str | None = None, seeds: int = 1,
            echo: Callable[[str], None] = print,
            solvers: dict[str, tuple[str, ...]] | None = None, certify: bool = True,
            models: Iterable[str] | None = None, from_best: bool = False,
            params: Mapping[str, Any] | None = None, resume: bool = False) -> int:
    """Run the improvers (`solvers` per problem, default IMPROVERS) on `entries` (default:
    every entry not yet optimal), each with `params` (`solver_params`), and record what is
    better, saving the library after each result (`resume`: `improve_tasks`). Returns the
    improvements."""
    chosen = list(lib.entries if entries is None else entries)
    solver_params({e.problem for e in chosen}, solvers, params, from_best)  # before anything
    if resume:
        from memplace.solvers.certificate import RESUMABLE_MODELS
        if not certify or not set(models or ()) & set(RESUMABLE_MODELS):
            raise ParameterError(f"--resume grows stored trees of {', '.join(RESUMABLE_MODELS)}: "
                                 f"name one with --lp-model (and certify)")
    for e in chosen:
        load_entry_instance(lib, e)  # an instance that changed is refused before any run
        store.prune_dominated(lib, e)
    count = 0
    tasks = improve_tasks(lib, chosen, budget, seeds, solvers, certify, models, from_best, params,
                          resume)
    for outcome in results(tasks, scheduler):
        notes: list[str] = []
        lines = record(lib, outcome, notes)
        count += sum(1 for line in lines if "failed" not in line)
        for line in lines + notes:
            echo(line)
        store.save(lib)
    if any(e.problem != "packing" for e in chosen):
        count += offer_static(lib, echo=echo)  # what the static runs found, as residency
    return count


@dataclass(frozen=True)
class Rung:
    """One step of the ladder `improve --until-gap` climbs: solvers to run (from the best
    known when `from_best`) or, with none, LP models whose certificates to grow."""

    name: str
    solvers: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    from_best: bool = False
    min_time: float = 0.0
    params: tuple[tuple[str, str], ...] = ()  # KEY=VALUE for the solvers, as --param gives them


# Residency entries whose certified gap is still above the target after the usual runs
# climb these rungs in order, each entry leaving as soon as it is within. Chosen on the
# third round of unseen architectures (docs/zoo.md): multistart from the best known
# closed nothing alone, the relaxation tree took T5 to 3.66% and XLNet to 5.56%, the
# step-cover tree HRNet to 0.05% (the start tree and the rotation over levels added no
# entry). A tree proves little in less than TREE_TIME_LIMIT_S at 100-200 ops. The eighth
# round added weight streaming (multistart's `stream_share`) before the trees: on small
# transformers whose weights outgrow the SRAM the gap was the best known's as much as the
# bound's (BigBird 11.540 -> 9.891 µs).
TREE_TIME_LIMIT_S = 120.0
# The two search rungs run at least this long: on the eighth round's folder the 20-s rungs
# and a 60-s streaming run left nine entries above 5%; the two rungs at 120 s then took
# RegNetZ from 7.08% to 3.49% and ESM from 9.94% to 7.28% (docs/zoo.md).
SEARCH_TIME_LIMIT_S = 120.0
# The tenth round put the bound MILP (`bound`: the relaxation on HiGHS, its incumbents
# decoded into windows and repaired) first: at 120 s it found MPNet's 8.297 µs where
# multistart from the best known found nothing better than 8.412 in 300 s, and
# multistart from it then 8.263 (docs/zoo.md, "A tenth round"). Its dual bound is
# recorded, not certified: on MobileViTv2-0.5 (round 9) HiGHS proves the best known
# optimal in 40 s, which the trees, at 93,570 rows a node, do not certify.
# The step-cover LP (`residency-delivery-step-cover`) goes first: one LP with covers
# separated round by round, seconds where it closes an entry. The fourteenth round found
# it missing: on the thirteenth's GLPN@nnpi (241 ops) every other rung left 66.26%, the
# two 12-MB activations of its last convolution not fitting the LLC together, which the
# covers state and the other models' fractions do not; it proves 451.5 µs against a best
# known of 453.9 in 19 s (docs/zoo.md, "A fourteenth round").
STEP_COVER_TIME_LIMIT_S = 60.0
LADDER = (Rung("step covers", models=("residency-delivery-step-cover",),
               min_time=STEP_COVER_TIME_LIMIT_S),
          Rung("the bound MILP", solvers=("bound",), min_time=SEARCH_TIME_LIMIT_S),
          Rung("multistart from the best known", solvers=("multistart",), from_best=True,
               min_time=SEARCH_TIME_LIMIT_S),
          Rung("weight streaming from the best known", solvers=("multistart",), from_best=True,
               min_time=SEARCH_TIME_LIMIT_S, params=(("stream_share", "0.5"),)),
          Rung("relaxation tree", models=("residency-relaxation-tree",), min_time=TREE_TIME_LIMIT_S),
          Rung("step-cover tree", models=("residency-delivery-step-cover-tree",),
               min_time=TREE_TIME_LIMIT_S),
          # the twelfth round's R(2+1)D-18 (39 ops): the rungs above left it at 7.16% (HiGHS
          # proves 0.02%, uncertified); the units tree certified 2217.776 µs, 4.46%, in 120 s
          Rung("units tree", models=("residency-delivery-units-tree",), min_time=TREE_TIME_LIMIT_S))


def above_target(entries: Iterable[Entry], target: float) -> list[Entry]:
    """The residency entries whose certified gap is above `target` (a fraction) or that
    have no certified bound."""
    return by_certified_gap([e for e in entries if e.problem == "residency"], target)[1]


def climb(lib: Library, budget: float, entries: Iterable[Entry], target: float,
          scheduler: str | None = None, echo: Callable[[str], None] = print,
          ladder: Iterable[Rung] = LADDER) -> int:
    """Climb `ladder` on the residency `entries` above `target` (a fraction): each rung runs
    (`budget` seconds, at least its `min_time`) on those still above it, and the climb
    stops when none is. Returns the improvements recorded."""
    entries = list(entries)
    count = 0
    for rung in ladder:
        open_ = above_target(entries, target)
        if not open_:
            break
        echo(f"until-gap {100 * target:g}%: {rung.name} on {len(open_)} "
             f"entr{'y' if len(open_) == 1 else 'ies'} above it")
        count += improve(lib, max(budget, rung.min_time), open_, scheduler, echo=echo,
                         solvers={"residency": rung.solvers}, certify=not rung.solvers,
                         models=rung.models or None, from_best=rung.from_best,
                         params=dict(rung.params) or None)
    return count


def climb_text(entries: Iterable[Entry], target: float) -> str:
    """What a climb left: how many of the residency `entries` are within `target` (a
    fraction) and the certified gap of each still above it."""
    residency = [e for e in entries if e.problem == "residency"]
    still = above_target(residency, target)
    within, total = len(residency) - len(still), len(residency)
    text = (f"until-gap {100 * target:g}%: {within} of the {total} residency "
            f"entr{'y' if total == 1 else 'ies'} above it {'is' if within == 1 else 'are'} "
            "within now")
    if still:
        text += "; above: " + ", ".join(f"{e.id} {certified_gap_text(e)}" for e in still)
    return text


def offer_static(lib: Library, entries: Iterable[Entry] | None = None,
                 echo: Callable[[str], None] = print) -> int:
    """Offer each residency entry the best known of the static entry of the same instance:
    a static placement is a residency solution without windows, of the same latency
    (docs/spec.md section 9), so the static optimum bounds the residency best from above.
    It is validated and simulated here, and kept with the static finder's provenance if it
    beats the residency best known. Returns how many were kept."""
    from memplace.model.residency import ResidencySolution, simulate, violations
    from memplace.model.static.solution import Solution
    static = {e.name: e for e in lib.entries if e.problem == "static" and e.best.get("file")}
    kept = 0
    for e in list(lib.entries if entries is None else entries):
        s = static.get(e.name)
        if e.problem != "residency" or s is None or \
                not store.beats_best(e, s.best["objective"]):
            continue
        inst = load_entry_instance(lib, e)
        placed = Solution.read(lib.path(s.best["file"]), inst)
        sol = ResidencySolution(inst.name, placed.placement,
                                placed.offsets if inst.has_addressed_levels else None)
        if violations(inst, sol):
            continue
        sol.latency = simulate(inst, sol)
        prov = dict(s.best["provenance"] or {}, offered_as="the static entry's best known, no windows")
        before = e.best["objective"]
        if store.record_solution(lib, e, float(sol.latency),
                                 lambda path: sol.write(path, inst), prov):
            kept += 1
            echo(f"{e.id}: best {figure(e, before)} -> {figure(e, sol.latency)} {unit(e)} (static best known, "
                 f"{prov.get('solver')})")
    store.save(lib)
    return kept


# ------------------------------------------------------------------ adding instances
def add_instance(lib: Library, source: str | Path, problems: Iterable[str] = ("static", "residency"),
                 workload: str | None = None, copy: bool = True) -> list[Entry]:
    """Add an instance (a catalog name, or an instance file copied into the library) for
    each problem, with its default solution and closed-form and LP-dual bounds."""
    from memplace.instances import builtin_names, load
    inst = load(source)
    name = inst.name
    if str(source) in builtin_names():  # generated by the catalog's code, pinned by its tests
        ref = str(source)
    else:
        from memplace.instances import builtin_path  # a zoo or XLA name: its committed file
        ref = (store.copy_instance(lib, builtin_path(str(source)), name, ".json") if copy
               else str(source))
    workload = workload or name.split("@")[0].split("[")[0]
    added = []
    certified: dict[str, Any] = {}  # LP model -> its bound, solved once for both problems
    for problem in problems:
        solver = DEFAULTS[problem]
        entry = store.add_entry(lib, problem=problem, instance_ref=ref, name=name,
                                sha256=inst.fingerprint(), workload=workload, ops=inst.n_ops,
                                default={"solver": solver, "objective": math.nan})
        src = str(lib.instance_source(entry))
        outcome = run_task(Task(entry.id, problem, src, solver, None))
        entry.default["objective"] = outcome["objective"]
        record(lib, outcome)
        from memplace.solvers.certificate import CAPPED_MODEL, lp_models
        # the capped relaxation takes minutes: improve runs it where the gap stays above target
        models = [m for m in lp_models(problem) if m != CAPPED_MODEL]
        todo = [m for m in models if m not in certified]
        bounds = run_task(Task(entry.id, problem, src, "lp-dual", LP_TIME_LIMIT_S,
                               params={"models": todo, "ceiling": outcome["objective"]}))
        certified.update(dict.fromkeys(todo))  # None: not solved in time
        for b in bounds["bounds"]:
            if b["kind"] == "lp-dual":
                certified[b["label"]] = b
        bounds["bounds"] = [b for b in bounds["bounds"] if b["kind"] != "lp-dual"] + [
            certified[m] for m in models if certified[m] is not None]
        record(lib, bounds)
        added.append(entry)
    store.save(lib)
    return added


def add_packing(lib: Library, csv_path: Path, name: str, workload: str,
                capacity: int | None = None) -> Entry:
    """Add a packing instance (MiniMalloc CSV, copied) with the best heuristic's height and
    the peak live size; `capacity` is the height its source asks to fit in, if any."""
    import hashlib
    ref = store.copy_instance(lib, csv_path, name, ".csv")
    digest = hashlib.sha256(lib.path(ref).read_bytes()).hexdigest()
    from memplace.model.packing.minimalloc_csv import read_buffers
    n = len(read_buffers(lib.path(ref)).buffers)
    entry = store.add_entry(lib, problem="packing", instance_ref=ref, name=name, sha256=digest,
                            workload=workload, ops=n, default={"solver": DEFAULTS["packing"],
                                                               "objective": math.nan})
    if capacity:
        entry.data["capacity"] = int(capacity)
    outcome = run_task(Task(entry.id, "packing", str(lib.path(ref)), DEFAULTS["packing"], None))
    entry.default["objective"] = outcome["objective"]
    record(lib, outcome)
    store.save(lib)
    return entry


def drop_ties(lib: Library) -> list[str]:
    """Drop the entries whose default is already proven optimal (every method ties with
    it: nothing to find), saying so in the manifest."""
    lines = []
    for e in list(lib.entries):
        bound = e.bound
        if e.problem != "packing" and bound and e.default["objective"] <= bound * (1 + OPTIMAL_GAP):
            store.drop(lib, e, f"the default ({e.default['solver']}, {e.default['objective']:.6g} s) "
                               f"is within {OPTIMAL_GAP:g} of the bound {bound:.6g} s: every "
                               "solver ties with it")
            lines.append(f"dropped {e.id}: the default is optimal")
    store.save(lib)
    return lines
