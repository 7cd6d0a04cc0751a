"""`memplace gap`: the certified gap of a residency program (search and bound, one budget)."""
from __future__ import annotations

import click

from memplace.cli.values import SECONDS, SEED


@click.command("gap")
@click.argument("instance")
@click.option("--time-limit", type=SECONDS, default=600.0, show_default=True,
              help="seconds for the search and the bound together")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--problem", "problem_name", type=click.Choice(["residency"]), default="residency",
              show_default=True, help="the problem (residency only)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the best solution file")
def gap_command(instance: str, time_limit: float, seed: int, problem_name: str,
                output: str | None) -> None:
    """Run the search (sa) and the bound (MILP relaxation) on INSTANCE within one time
    limit; print the best valid solution, the best proven lower bound, which solver found
    each, and the certified gap between them."""
    from memplace.bench.certified_gap import certified_gap
    from memplace.instances import load as load_instance
    from memplace.solvers import load_kernels
    inst = load_instance(instance, problem=problem_name)
    load_kernels(["sa", "bound"], problem_name)
    got = certified_gap(inst, time_limit, seed)
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
