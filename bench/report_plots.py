"""Result plots as PNG and SVG (matplotlib, Agg backend), from `Results`.

- convergence_seconds / convergence_evaluations: best latency found so far (as %
  above the instance's best known) against seconds and against evaluations, one
  panel per instance; per solver the median over its seeds (line, from the moment
  every seed has a result) and the range from best to worst seed (band);
- performance_profile: Dolan-More profile over instances of each solver's mean
  latency over seeds, as a ratio to the best solver on that instance;
- placement_<instance>: the best placement found for the instance: the load of
  each level with a capacity over the schedule against that capacity, and how
  many bytes each op moves from each level.
"""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from memplace.bench.results import Results
from memplace.bench.store import is_ok

GRID_POINTS = 200


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
        fig.savefig(path, dpi=120, bbox_inches="tight", metadata=metadata)
        paths.append(path)
    plt.close(fig)
    return paths


def best_so_far(trace: list[list[float]], axis: int, grid: np.ndarray) -> np.ndarray:
    """The trace's best latency at each grid value of `axis` (0 seconds, 1 evaluations);
    nan before its first point."""
    points = np.asarray(trace, np.float64).reshape(-1, 3)
    out = np.full(grid.shape, np.nan)
    if points.size:
        index = np.searchsorted(points[:, axis], grid, side="right") - 1
        has = index >= 0
        out[has] = points[index[has], 2]
    return out


def _grid(results: Results, axis: int) -> np.ndarray:
    values = [p[axis] for r in results.records if is_ok(r) for p in r["trace"]]
    low = min((v for v in values if v > 0), default=1e-3)
    high = max(values + [low * 10])
    return np.concatenate([[0.0], np.geomspace(low, high, GRID_POINTS)])


def _panels(plt, count: int):
    cols = min(3, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def convergence(results: Results, folder: Path, axis: int) -> list[Path]:
    """Best latency so far, as % above the instance's best known, against seconds
    (axis 0) or evaluations (axis 1)."""
    plt = _pyplot()
    label = ("seconds", "evaluations")[axis]
    grid = _grid(results, axis)
    fig, axes = _panels(plt, len(results.instances))
    colors = {s: plt.cm.tab20(i % 20) for i, s in enumerate(results.solvers)}
    lines = {}
    for ax, instance in zip(axes, results.instances):
        known = results.best_known(instance)
        for solver in results.solvers:
            runs = results.ok_runs(instance, solver)
            if not runs or not known:
                continue
            curves = np.array([best_so_far(r["trace"], axis, grid) for r in runs])
            curves = 100.0 * (curves / known - 1.0)
            median = np.median(curves, axis=0)  # drawn once every seed has a result
            lines[solver], = ax.step(grid, median, where="post", color=colors[solver], lw=1.4)
            if len(runs) > 1:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # all-nan before any result
                    low, high = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
                ax.fill_between(grid, low, high, step="post", color=colors[solver], alpha=0.2, lw=0)
        ax.set_xscale("symlog", linthresh=grid[1])
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{instance} (best known {known * 1e6:.4g} µs)" if known else instance,
                     fontsize=10)
        ax.set_xlabel(label)
        ax.set_ylabel("% above best known")
        ax.grid(alpha=0.3)
    fig.suptitle(f"Best latency so far against {label}: median over seeds (line), "
                 "best to worst seed (band)")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.legend(list(lines.values()), list(lines), loc="lower center",
               ncol=min(6, max(1, len(lines))), fontsize=8, frameon=False)
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
    plt = _pyplot()
    ratios = profile_ratios(results)
    finite = [r for rs in ratios.values() for r in rs if math.isfinite(r)]
    top = max(finite + [1.0]) * 1.05 + 1e-9
    taus = np.geomspace(1.0, top, 400)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, solver in enumerate(results.solvers):
        rs = np.asarray(ratios[solver])
        fraction = [(rs <= tau * (1 + 1e-12)).sum() / len(rs) for tau in taus]
        ax.step(taus, fraction, where="post", label=solver, color=plt.cm.tab20(i % 20))
    ax.set_xscale("log", base=2)  # as Dolan and More draw it
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("latency / best solver's latency on the instance (mean over seeds)")
    ax.set_ylabel("fraction of instances")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Performance profile over {len(results.instances)} instances")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
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
