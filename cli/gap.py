"""`memplace gap`: the certified gap of a residency program (search and bound, one budget)."""
from __future__ import annotations

import os
import sys
import time

import click

from memplace.cli.values import SECONDS, SEED


def _process_age() -> float:
    """Seconds since this process started (Python's start-up and imports: about a second on
    a loaded machine), when it was started to run `memplace gap` (not when the command is
    invoked inside another program, such as a test), from /proc on Linux; else 0."""
    if sys.argv[1:2] != ["gap"]:
        return 0.0
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", encoding="ascii") as f:
            return max(0.0, float(f.read().split()[0]) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


@click.command("gap")
@click.argument("instances", nargs=-1, required=True)
@click.option("--time-limit", type=SECONDS, default=600.0, show_default=True,
              help="seconds for the search and the bound together, per program")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--problem", "problem_name", type=click.Choice(["residency"]), default="residency",
              show_default=True, help="the problem (residency only)")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="write the best solution file (one program only)")
@click.option("--table", type=click.Path(dir_okay=False),
              help="also write a markdown table, one row per program, rewritten after each")
def gap_command(instances: tuple[str, ...], time_limit: float, seed: int, problem_name: str,
                output: str | None, table: str | None) -> None:
    """Run the search (sa) beside the bound (the static milp, then the closed-form bounds and
    the LP and MILP relaxations) on each of INSTANCES, both for the whole time limit; print
    the best valid solution, the best proven lower bound, which solver found each, and the
    certified gap between them. The clock starts with the command: loading each program is
    taken from its own time limit, loading the kernels from the first's. Compiling them (a
    first run on an empty cache, which says so on stderr) is not taken from any."""
    age = _process_age()
    began = time.perf_counter() - age
    cpu_began = 0.0 if age > 0 else time.process_time()  # (the process's, or the command's)
    from memplace.bench.certified_gap import TABLE_HEAD, certified_gap, table_row
    from memplace.instances import load as load_instance
    from memplace.model.core.errors import MemplaceError
    from memplace.solvers import load_kernels
    if output and len(instances) > 1:
        raise MemplaceError("-o/--output writes one solution: give one instance")
    loaded, load_s = [], []  # every name checked before the first long run
    for name in instances:
        start = time.perf_counter()
        loaded.append(load_instance(name, problem=problem_name))
        load_s.append(time.perf_counter() - start)
    compiling: list[str] = []

    def announce(line: str) -> None:
        compiling.append(line)
        click.echo(line, err=True)

    cpu_kernels = time.process_time()
    kernel_s = load_kernels(["sa", "bound"], problem_name, announce=announce)
    if compiling:  # once per install: not the search's time (docs/residency-scale.md)
        began += kernel_s
        cpu_began += time.process_time() - cpu_kernels
    first = began + sum(load_s[1:])  # the others' loads are on their own clocks
    # the share of a core had so far: what runs after the lanes is budgeted at this pace
    pace = (time.process_time() - cpu_began) / max(1e-3, time.perf_counter() - began)
    rows = ""
    for i, inst in enumerate(loaded):
        got = certified_gap(inst, time_limit, seed, began=first if i == 0 else time.perf_counter() - load_s[i],
                            pace=pace)
        click.echo(f"{got.instance}: {inst.n_ops} ops, {inst.n_tensors} tensors")
        for name, run in got.runs.items():
            lb = "-" if run["lower_bound"] is None else f"{run['lower_bound'] * 1e6:.3f} us"
            click.echo(f"  {name:<6} latency {run['latency'] * 1e6:.3f} us  bound {lb}  {run['wall_s']} s")
        click.echo(f"best valid    {got.latency * 1e6:.3f} us  found by {got.found_by}")
        click.echo(f"best bound    {got.bound * 1e6:.3f} us  proven by {got.bound_by}")
        click.echo(f"certified gap {got.gap:.2%}  ({got.seconds:.1f} s in all, limit {time_limit:g} s)")
        if output:
            got.solution.write(output, inst)
            click.echo(f"wrote {output}")
        if table:
            rows += table_row(got, inst.n_ops, time_limit)
            os.makedirs(os.path.dirname(os.path.abspath(table)), exist_ok=True)
            with open(table, "w", encoding="utf-8") as f:
                f.write(TABLE_HEAD + rows)
