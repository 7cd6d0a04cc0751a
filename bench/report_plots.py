"""Result plots as PNG and SVG (matplotlib, Agg backend), from `Results`.

- convergence_seconds / convergence_evaluations: COCO/BBOB's runtime ECDF, the fraction
  of (instance, target) pairs each solver has reached against seconds and against
  evaluations, targets 10%, 1%, 0.1% and 0.01% above the instance's best known, one
  curve per solver over all instances (an instance weighs the same whatever its seeds);
- performance_profile: Dolan-More profile over instances of each solver's mean
  latency over seeds, relative to the best solver on that instance, drawn as % above
  the best on a log axis;
Every solver keeps one colour, marker and line style in both plots, and legends list
the solvers best first.
- placement_<instance>: the best placement found for the instance: the load of
  each level with a capacity over the schedule against that capacity, and how
  many bytes each op moves from each level.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from memplace.bench.results import Results, reach
from memplace.bench.store import is_ok
from memplace.model.core.files import atomic_write



def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.hashsalt"] = "memplace"  # same runs, same SVG bytes
    return plt


def _save(fig, folder: Path, stem: str) -> list[Path]:
    """The figure as PNG and SVG (no date or software in either: same runs, same bytes),
    then closed."""
    import matplotlib.pyplot as plt
    paths = []
    for suffix, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
        path = folder / f"{stem}.{suffix}"
        with atomic_write(path, "plot", binary=True) as out:
            fig.savefig(out, format=suffix, dpi=120, bbox_inches="tight", metadata=metadata)
        paths.append(path)
    plt.close(fig)
    return paths


# COCO's targets for the runtime ECDF: fractions above the instance's best known latency.
ECDF_TARGETS = (1e-1, 1e-2, 1e-3, 1e-4)
PROFILE_FLOOR = 1e-5  # the profile's left edge: within 0.001% of the best counts as the best
_MARKERS = "osD^vP*Xh<>p"
_LINESTYLES = ("-", "--", "-.", ":")


def solver_styles(solvers: list[str]) -> dict[str, dict[str, Any]]:
    """One colour, marker and line style per solver, the same in every plot of a report:
    ten colours, then the next line style, each with its own marker."""
    import matplotlib.pyplot as plt
    return {s: {"color": plt.cm.tab10(i % 10), "marker": _MARKERS[i % len(_MARKERS)],
                "linestyle": _LINESTYLES[(i // 10) % len(_LINESTYLES)]}
            for i, s in enumerate(sorted(solvers))}


def _marker_points(curve: np.ndarray, rank: int, every: int = 45) -> list[int]:
    """Where a curve gets its markers: along its rise (spaced, staggered by `rank` so
    curves that run together still show each marker) and where it reaches its final
    value, never along the flat stretches at 0 and 1 that many curves share."""
    final = curve[-1]
    rising = np.flatnonzero((curve > 0) & (curve < final))
    points = rising[(rising + rank * 7) % every == 0].tolist()
    return sorted(set(points + [int(np.argmax(curve >= final))]))


def target_hits(results: Results, axis: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per solver, COCO's runtime-ECDF data: for every (instance, target) pair, the seconds
    (axis 0) or evaluations (axis 1) each run took to get within the target of the
    instance's best known (inf if never), with each run's weight: an instance counts
    once whatever its number of seeds, so weights sum to 1 over the instances."""
    hits: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in results.solvers}
    instances = [i for i in results.instances if results.best_known(i)]
    for instance in instances:
        known = results.best_known(instance)
        for solver in results.solvers:
            runs = results.runs(instance, solver)
            for record in runs:
                for target in ECDF_TARGETS:
                    hits[solver][0].append(reach(record, known * (1 + target))[axis])
                    hits[solver][1].append(1.0 / (len(runs) * len(ECDF_TARGETS) * len(instances)))
    return {s: (np.asarray(x, np.float64), np.asarray(w, np.float64)) for s, (x, w) in hits.items()}


def convergence(results: Results, folder: Path, axis: int) -> list[Path]:
    """COCO's runtime ECDF: the fraction of (instance, target) pairs a solver has reached,
    against seconds (axis 0) or placements evaluated (axis 1), targets 10%, 1%, 0.1% and
    0.01% above each instance's best known latency, seeds averaged per instance."""
    plt = _pyplot()
    label = ("seconds", "evaluations")[axis]
    hits = target_hits(results, axis)
    finite = np.concatenate([x[np.isfinite(x)] for x, _ in hits.values()] + [np.zeros(0)])
    low = max(float(finite[finite > 0].min()) if (finite > 0).any() else 1e-3, 1e-6)
    high = max(float(finite.max()) if finite.size else 1.0, low * 10)
    grid = np.geomspace(low / 2, high * 1.5, 400)
    curves = {s: np.array([w[x <= t].sum() for t in grid]) for s, (x, w) in hits.items()}
    # legend by result: most pairs reached, then earliest (area under the curve)
    order = sorted(curves, key=lambda s: (-round(curves[s][-1], 9), -curves[s].mean(), s))
    styles = solver_styles(results.solvers)
    fig, ax = plt.subplots(figsize=(8, 5))
    for rank, solver in enumerate(order):
        ax.step(grid, curves[solver], where="post", lw=1.6, markersize=5,
                markevery=_marker_points(curves[solver], rank), label=f"{solver} ({curves[solver][-1]:.0%})",
                **styles[solver])
    ax.set_xscale("log")
    ax.set_xlim(grid[0], grid[-1])
    ax.set_ylim(-0.02, 1.02)
    words = "seconds since the run started" if axis == 0 else "placements evaluated"
    ax.set_xlabel(f"{words} (log scale)")
    ax.set_ylabel("fraction of (instance, target) pairs reached")
    targets = ", ".join(f"{100 * t:g}%" for t in ECDF_TARGETS)
    ax.set_title(f"Runtime ECDF over {len(results.instances)} instances: targets {targets} "
                 "above the best known\n(seeds averaged per instance; legend: pairs reached "
                 "at the end)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
              title="solver (best first)", title_fontsize=8)
    fig.tight_layout()
    return _save(fig, folder, f"convergence_{label}")


def profile_ratios(results: Results) -> dict[str, list[float]]:
    """Per solver, over the instances it ran on: its mean latency over seeds divided by
    the best solver's on that instance (inf where it has no result)."""
    ratios: dict[str, list[float]] = {s: [] for s in results.solvers}
    for instance in results.instances:
        means = {}
        for s in results.solvers:
            if results.runs(instance, s):
                lats = [r["latency"] for r in results.ok_runs(instance, s)]
                means[s] = float(np.mean(lats)) if lats else math.inf
        best = min(means.values())
        for s, mean in means.items():
            ratios[s].append(mean / best if math.isfinite(best) else math.inf)
    return ratios


def performance_profile(results: Results, folder: Path) -> list[Path]:
    """Dolan-More performance profile of each solver's mean latency over seeds, with the
    ratio to the best solver drawn as % above it on a log axis, so solvers that differ by
    0.01% do not hide under one vertical line at 1.0; within 0.001% counts as the best."""
    plt = _pyplot()
    ratios = profile_ratios(results)
    excess = {s: np.maximum(np.asarray(r, np.float64) - 1.0, PROFILE_FLOOR)
              for s, r in ratios.items()}
    finite = [e for es in excess.values() for e in es if math.isfinite(e)]
    top = max(finite + [PROFILE_FLOOR * 10]) * 1.5
    taus = np.geomspace(PROFILE_FLOOR, top, 500)
    curves = {s: np.array([(e <= t * (1 + 1e-12)).mean() if e.size else 0.0 for t in taus])
              for s, e in excess.items()}
    order = sorted(curves, key=lambda s: (-curves[s][0], -curves[s].mean(), s))
    styles = solver_styles(results.solvers)
    n = len(results.instances)
    fig, ax = plt.subplots(figsize=(8, 5))
    for rank, solver in enumerate(order):
        best = int(round(curves[solver][0] * len(excess[solver])))
        ax.step(taus, curves[solver], where="post", lw=1.6, markersize=5,
                markevery=_marker_points(curves[solver], rank),
                label=f"{solver} (best on {best}/{len(excess[solver])})", **styles[solver])
    ax.set_xscale("log")
    ax.set_xlim(PROFILE_FLOOR, top)
    from matplotlib.ticker import FuncFormatter
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: "best" if v <= PROFILE_FLOOR * 1.0001 else f"{100 * v:g}%"))
    ax.set_xlabel("latency above the best solver's on the instance (log scale; "
                  "mean over seeds)")
    ax.set_ylabel("fraction of instances within that")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"Performance profile (Dolan-More) over {n} instances", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
              title="solver (best first)", title_fontsize=8)
    fig.tight_layout()
    return _save(fig, folder, "performance_profile")


def placement_plot(results: Results, folder: Path, instance: str) -> list[Path]:
    record = results.best_record(instance)
    inst = results.instance(instance)
    if record is None or inst is None:
        return []
    from memplace.model import load_profile
    plt = _pyplot()
    placement = np.array([inst.level_index(name) for name in record["placement"]], np.int64)
    windows: tuple = ()
    if results.is_residency:  # homes and windows occupy the levels together
        from memplace.model.residency import load_with_windows
        windows = results.problem.from_record(inst, record).windows
        load = load_with_windows(inst, placement, windows)
    else:
        load = load_profile(inst, placement)
    steps = np.arange(inst.n_ops)
    traffic = _traffic_by_level(inst, placement)
    colors = [plt.cm.viridis(l / max(1, inst.n_levels - 1)) for l in range(inst.n_levels)]
    if windows:
        fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(10, 9.5), sharex=True,
                                                  gridspec_kw={"height_ratios": [3, 3, 2]})
        _window_bars(middle, inst, windows, colors)
    else:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for l, level in enumerate(inst.levels):
        if level.capacity is None:
            continue
        top.step(steps, load[l] / 2**20, where="mid", color=colors[l], label=f"{level.name} load")
        top.axhline(level.capacity / 2**20, color=colors[l], ls="--", lw=1,
                    label=f"{level.name} capacity")
    top.set_ylabel("MiB live")
    top.legend(fontsize=7, loc="upper right")
    top.grid(alpha=0.3)
    top.set_title(f"{instance}: best placement ({record['solver']}, seed {record['seed']}, "
                  f"{record['latency'] * 1e6:.3f} µs)")
    bottom.stackplot(steps, traffic / 2**20, labels=inst.level_names, colors=colors, step="mid")
    bottom.set_ylabel("MiB moved by the op")
    bottom.set_xlabel("op (schedule order)")
    bottom.legend(fontsize=7, loc="upper right", title="tensors in", title_fontsize=7)
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    stem = re.sub(r"[^A-Za-z0-9@._-]+", "_", instance)  # a safe file name
    return _save(fig, folder, f"placement_{stem}")


def _window_bars(ax, inst: Any, windows, colors) -> None:
    """Each residency window as a bar over its occupancy (start .. hold), one lane per bar
    (lanes reused greedily, grouped by level): light while its copy is in flight (start ..
    first - 1), solid while it serves accesses (first .. last), hatched while it waits for
    its eviction (last + 1 .. hold)."""
    ticks, labels, base = [], [], 0
    for l in range(inst.n_levels):
        mine = sorted((w for w in windows if w.level == l), key=lambda w: (w.start, w.hold))
        if not mine:
            continue
        lane_end: list[int] = []  # last op held by each lane's latest bar
        for w in mine:
            lane = next((j for j, end in enumerate(lane_end) if end < w.start), len(lane_end))
            if lane == len(lane_end):
                lane_end.append(w.hold)
            lane_end[lane] = w.hold
            y = base + lane
            if w.first > w.start:
                ax.barh(y, w.first - w.start, left=w.start - 0.5, height=0.8, color=colors[l],
                        alpha=0.35, lw=0)
            ax.barh(y, w.last - w.first + 1, left=w.first - 0.5, height=0.8, color=colors[l], lw=0)
            if w.hold > w.last:
                ax.barh(y, w.hold - w.last, left=w.last + 0.5, height=0.8, color="none",
                        edgecolor=colors[l], hatch="////", lw=0.3)
        ticks.append(base + (len(lane_end) - 1) / 2)
        labels.append(f"{inst.levels[l].name}\n{len(mine)} windows")
        base += len(lane_end) + 1
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.set_ylim(-1, max(base - 1, 1))
    ax.invert_yaxis()
    ax.set_ylabel("windows")
    ax.set_title("windows over their occupancy: light = copy in flight, solid = serving, "
                 "hatched = waiting for its eviction", fontsize=8)
    ax.grid(alpha=0.3, axis="x")


def _traffic_by_level(inst: Any, placement: np.ndarray) -> np.ndarray:
    """bytes[l, k]: traffic op k moves to or from tensors placed in level l."""
    out = np.zeros((inst.n_levels, inst.n_ops))
    ops = np.repeat(np.arange(inst.n_ops), np.diff(inst.op_ptr))
    np.add.at(out, (placement[inst.op_tensor], ops), inst.op_bytes)
    return out


def write_plots(results: Results, folder: Path) -> list[Path]:
    if not any(is_ok(r) for r in results.records):
        return []
    paths = convergence(results, folder, 0) + convergence(results, folder, 1)
    paths += performance_profile(results, folder)
    for instance in results.instances:
        paths += placement_plot(results, folder, instance)
    return paths
