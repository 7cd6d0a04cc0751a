"""The timeline of a placement in the model's own words (`memplace explain --plot`).

One row per tensor, named as the instance names it, grouped by home level (fastest
first) and ordered by first use: a thin bar over the ops where the tensor lives in its
home, and a thick bar in the window's level for each residency window, light while
its prefetch is in flight, solid while it serves the ops, hatched while it waits for
its eviction. The x axis is the schedule, labelled with op names.
"""
from __future__ import annotations

from pathlib import Path

from memplace.model.core.files import atomic_write
from memplace.model.explain import Explanation, TensorRow


def chosen_rows(e: Explanation, top: int | None) -> list[TensorRow]:
    """The rows drawn: all, or the `top` tensors by bytes moved (accessed + copied),
    grouped by home level and ordered by first use."""
    rows = list(e.rows)
    if top is not None and len(rows) > top:
        rows = sorted(rows, key=lambda r: -(r.bytes_accessed + r.bytes_copied))[:top]
    return sorted(rows, key=lambda r: (r.home.level, r.home.first, r.index))


def timeline_plot(e: Explanation, path: str | Path, top: int | None = 80) -> Path:
    """Draw the timeline into `path` (PNG or SVG, by its suffix) and return it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    path = Path(path)
    rows = chosen_rows(e, top)
    n_levels = len(e.levels)
    colors = [plt.cm.viridis(l / max(1, n_levels - 1) * 0.85) for l in range(n_levels)]
    height = max(3.0, 0.16 * len(rows) + 2.2)
    fig, ax = plt.subplots(figsize=(12, height))
    for y, r in enumerate(rows):
        h = r.home
        ax.barh(y, h.last - h.first + 1, left=h.first - 0.5, height=0.25, color=colors[h.level],
                alpha=0.6, lw=0)
        for w in r.windows:
            c = colors[w.level]
            if w.first > w.start:
                ax.barh(y, w.first - w.start, left=w.start - 0.5, height=0.7, color=c, alpha=0.3, lw=0)
            ax.barh(y, w.last - w.first + 1, left=w.first - 0.5, height=0.7, color=c, lw=0)
            if w.hold > w.last:
                ax.barh(y, w.hold - w.last, left=w.last + 0.5, height=0.7, color="none",
                        edgecolor=c, hatch="////", lw=0.3)
    for y in range(1, len(rows)):  # a rule between home levels
        if rows[y].home.level != rows[y - 1].home.level:
            ax.axhline(y - 0.5, color="0.3", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{r.name} ({e.levels[r.home.level]})" for r in rows],
                  fontsize=6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    n_ops = len(e.ops)
    every = max(1, -(-n_ops // 40))  # at most about 40 op names on the axis
    ticks = list(range(0, n_ops, every))
    ax.set_xticks(ticks, [e.ops[k] for k in ticks], rotation=90, fontsize=6)
    ax.set_xlim(-0.5, n_ops - 0.5)
    ax.set_xlabel("op, in schedule order" + ("" if every == 1 else f" (one in {every} named)"))
    ax.grid(alpha=0.25, axis="x")
    shown = "" if len(rows) == len(e.rows) else f", the {len(rows)} of {len(e.rows)} tensors moving the most bytes"
    ax.set_title(f"{e.instance}: {e.problem} solution by {e.solver or 'an unnamed solver'}, "
                 f"{e.latency * 1e6:.3f} µs{shown}\nthin: home over the tensor's live range; "
                 f"thick: a window (light: prefetch in flight, solid: serving ops, hatched: "
                 f"waiting for its eviction)", fontsize=8)
    ax.legend(handles=[Patch(color=colors[l], label=name) for l, name in enumerate(e.levels)],
              title="level", fontsize=7, title_fontsize=7, loc="upper right")
    fig.tight_layout()
    fmt = path.suffix.lstrip(".").lower() or "png"
    with atomic_write(path, "plot", binary=True) as out:
        fig.savefig(out, format=fmt, dpi=120, metadata={"Software": None} if fmt == "png" else None)
    plt.close(fig)
    return path
