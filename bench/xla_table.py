"""The XLA programs' table (issue 20): per committed program, its size, XLA's heap against
memplace's packing of the same buffers, and the residency solvers against msa and the bound.

Inputs: the committed programs (`instances/data/xla/`), the runs of the `xla` and
`xla-residency` plans (`memplace bench xla --out results/xla/static`, `memplace bench
xla-residency --out results/xla/residency`), and a packing of each program's heap CSV
made here (memplace's `minimize`, no higher than XLA's heap, both packings checked).
Every solver run is also listed (`solvers.md`): status, latency, wall time against its
limit, and whether it fell back to a simpler answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memplace.bench.store import read_runs
from memplace.model.core.errors import MemplaceError


@dataclass
class XlaRow:
    program: str
    instructions: int
    ops: int
    tensors: int
    flops_ratio: float
    bytes_ratio: float
    heap_buffers: int
    xla_heap: int
    packed: int
    pack_bound: int
    pack_s: float
    checked: bool
    static_best: tuple[str, float] | None
    msa: float | None
    residency_best: tuple[str, float] | None
    bound: float | None
    failed: list[str]


def _runs(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.is_file():
        return []
    return read_runs(path)


def _best(records: list[dict[str, Any]]) -> tuple[str, float] | None:
    done = [r for r in records if r.get("latency") is not None and r.get("error") is None]
    if not done:
        return None
    best = min(done, key=lambda r: (r["latency"], r["solver"]))
    ties = sorted({r["solver"] for r in done if r["latency"] <= best["latency"] * (1 + 1e-9)})
    label = best["solver"] if len(ties) == 1 else f"{len(ties)} solvers tie: {', '.join(ties)}"
    return label, best["latency"]


def xla_rows(static_runs: Path | None, residency_runs: Path | None, pack_time_limit: float = 10.0,
             progress: Callable[[XlaRow], None] | None = None) -> list[XlaRow]:
    from memplace.instances import load
    from memplace.instances.catalog import XLA_DIR, xla_names
    from memplace.instances.xla import cost_comparison
    from memplace.instances.xla.heap import compare_heap
    names = xla_names()
    if not names:
        raise MemplaceError(f"no committed XLA programs in {XLA_DIR} (run memplace xla-programs)")
    static, residency = _runs(static_runs), _runs(residency_runs)
    rows = []
    for name in names:
        inst = load(name)
        program = inst.workload_name.removeprefix("xla-")
        ratios = cost_comparison(inst.data)
        heap = compare_heap(XLA_DIR / f"xla-{program}.heap.csv", pack_time_limit)
        mine_s = [r for r in static if r["instance"] == name]
        mine_r = [r for r in residency if r["instance"] == name]
        msa = next((r["latency"] for r in mine_r if r["solver"] == "msa" and r.get("latency")), None)
        bounds = [r["lower_bound"] for r in mine_r if r.get("lower_bound") is not None]
        failed = [f"{r['problem']}:{r['solver']}" for r in mine_s + mine_r
                  if r.get("error") is not None or r.get("latency") is None]
        row = XlaRow(program, inst.data["import"]["instructions"], inst.n_ops, inst.n_tensors,
                     ratios["flops"]["ratio"], ratios["bytes accessed"]["ratio"], heap.buffers,
                     heap.xla_height, heap.height, heap.lower_bound, heap.seconds,
                     not heap.check and not heap.xla_valid, _best(mine_s), msa, _best(mine_r),
                     max(bounds) if bounds else None, failed)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def _us(value: float | None) -> str:
    return "–" if value is None else f"{value * 1e6:.3f}"


def xla_table_markdown(rows: list[XlaRow]) -> str:
    lines = ["| program | HLO instructions | ops | tensors | flops / XLA | bytes / XLA | heap buffers "
             "| XLA heap (B) | memplace packed (B) | smaller by | packing bound (B) | checked "
             "| best static (µs) | msa (µs) | best residency (µs) | residency bound (µs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|---:|"]
    for r in rows:
        smaller = 100.0 * (1 - r.packed / r.xla_heap) if r.xla_heap else 0.0
        static = "–" if r.static_best is None else f"{_us(r.static_best[1])} ({r.static_best[0]})"
        best = "–" if r.residency_best is None else f"{_us(r.residency_best[1])} ({r.residency_best[0]})"
        lines.append(f"| {r.program} | {r.instructions} | {r.ops} | {r.tensors} | "
                     f"{r.flops_ratio:.4f} | {r.bytes_ratio:.4f} | {r.heap_buffers} | {r.xla_heap} | "
                     f"{r.packed} | {smaller:.2f}% ({r.xla_heap - r.packed} B) | {r.pack_bound} | "
                     f"{'yes' if r.checked else 'NO'} | {static} | {_us(r.msa)} | {best} | "
                     f"{_us(r.bound)} |")
    return "\n".join(lines) + "\n"


def solver_check_markdown(static_runs: Path | None, residency_runs: Path | None) -> str:
    """Every run of the two plans: status, latency, wall time against the limit, fallback."""
    lines = ["| program | problem | solver | status | latency (µs) | wall (s) | limit (s) "
             "| within limit | notes |", "|---|---|---|---|---:|---:|---:|---|---|"]
    for record in _runs(static_runs) + _runs(residency_runs):
        wall, limit = record.get("wall_s"), record.get("time_limit")
        within = "–" if wall is None or limit is None else ("yes" if wall <= limit + 1.0 else "NO")
        notes = record.get("notes") or {}
        said = [k for k, v in notes.items() if "fallback" in k and v] + (
            [f"error: {str(record['error'])[:60]}"] if record.get("error") else [])
        lines.append(f"| {record['instance']} | {record['problem']} | {record['solver']} | "
                     f"{record.get('status')} | {_us(record.get('latency'))} | "
                     f"{'–' if wall is None else f'{wall:.2f}'} | {limit} | {within} | "
                     f"{', '.join(said)} |")
    return "\n".join(lines) + "\n"
