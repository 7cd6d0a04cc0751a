"""`memplace residency-bound`: the relaxation's bound against the best residency solutions known.

Issue 11's figures for the bound: on the small residency instances (20-40 ops, built by
`memplace.instances.small_residency`) the bound, the incumbent, the gap and the time,
where the exact model should prove optima; on every committed instance of up to
`--max-ops` ops the bound against the static compiler placement, msa, the static
optimum (milp, read from the residency table's cache, never recomputed here) and the
relaxation's own incumbent. Every solution in the table is validated.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import click

from memplace.model.core.errors import MemplaceError

DEFAULT_CACHE = Path("results") / "residency-msa"


def _us(value: float) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value * 1e6:.3f}"


@click.command("residency-bound")
@click.option("--time-limit", type=float, default=30.0, show_default=True,
              help="seconds of HiGHS per instance")
@click.option("--max-ops", type=int, default=120, show_default=True,
              help="committed instances of at most this many ops")
@click.option("--small/--no-small", default=True, show_default=True, help="the small residency set")
@click.option("--committed/--no-committed", default=True, show_default=True,
              help="the committed instances of up to --max-ops ops")
@click.option("--gap", type=float, default=1e-4, show_default=True,
              help="relative gap within which an incumbent counts as optimal")
@click.option("--static-cache", type=click.Path(file_okay=False), default=str(DEFAULT_CACHE),
              show_default=True, help="folder of the static optimum cache (static_optimum.json)")
def residency_bound_command(time_limit: float, max_ops: int, small: bool, committed: bool,
                            gap: float, static_cache: str) -> None:
    """Print, per instance, the relaxation's lower bound, the incumbents (relaxation's own
    windows, compiler, msa, static optimum) and the gap of the best one to the bound."""
    from memplace.bench.results import read_static_optima
    from memplace.instances import builtin_names, load
    from memplace.instances.small_residency import small_residency_instances
    from memplace.solvers import solve

    if time_limit <= 0 or max_ops < 1 or not 0 <= gap < 1:
        raise MemplaceError("--time-limit must be > 0, --max-ops >= 1 and --gap in [0, 1)")
    cache = read_static_optima(Path(static_cache))
    groups = []
    if small:
        groups.append(("small", small_residency_instances()))
    if committed:
        chosen = [load(n) for n in builtin_names()]
        groups.append(("committed", [i for i in chosen if i.n_ops <= max_ops]))
    head = (f"{'instance':<40} {'ops':>4} {'bound us':>12} {'relax. inc.':>12} {'compiler':>12} "
            f"{'msa':>12} {'static opt.':>12} {'best':>12} {'gap':>8} {'status':>9} {'s':>6}")
    missed = []
    for title, instances in groups:
        click.echo(f"\n{title} instances (bound: `bound` relaxation, HiGHS {time_limit:g} s)")
        click.echo(head)
        for inst in instances:
            began = time.perf_counter()
            res = solve(inst, "bound", time_limit=time_limit, problem="residency", gap=gap,
                        seeds=False)  # validated by solve()
            seconds = time.perf_counter() - began
            msa = solve(inst, "msa", time_limit=None, problem="residency").latency
            entry = cache.get(inst.name)
            if entry is not None and entry.get("sha256") == inst.fingerprint():
                static = float(entry["latency"])
            else:  # small instances: the static optimum within the same limit
                static = solve(inst, "milp", time_limit=time_limit, problem="static").latency
            compiler = solve(inst, "compiler", time_limit=None, problem="static").latency
            own = res.notes.get("relaxation_incumbent", math.inf)
            best = min(own, res.latency, compiler, msa, static)
            bound = res.lower_bound if res.lower_bound is not None else math.nan  # none in time
            rel = best / bound - 1
            status = "optimal" if best <= bound * (1 + gap) / (1 - 1e-6) else "open"
            if not rel <= 0.10:
                missed.append(inst.name)
            click.echo(f"{inst.name:<40} {inst.n_ops:>4} {_us(bound):>12} {_us(own):>12} "
                       f"{_us(compiler):>12} {_us(msa):>12} {_us(static):>12} {_us(best):>12} "
                       f"{rel:>8.2%} {status:>9} {seconds:>6.1f}")
    click.echo(f"\nbound within 10% of the best known: missed on {len(missed)}"
               + (f" ({', '.join(missed)})" if missed else ""))
