"""Commands that run solvers: `solve` and `solvers list`."""
from __future__ import annotations

import click

from memplace.bench.cli.model import load_instance
from memplace.bench.cli.values import SECONDS, SEED
from memplace.model.core.errors import MemplaceError


def parse_params(pairs: tuple[str, ...]) -> dict[str, str]:
    """KEY=VALUE strings to a dict (values converted later, by the solver's defaults)."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise MemplaceError(f"--param {pair!r} is not KEY=VALUE")
        params[key.strip()] = value.strip()
    return params


@click.command("solve")
@click.argument("instance")
@click.option("--solver", "solver_name", default="compiler", show_default=True)
@click.option("--time-limit", type=SECONDS, default=60.0, show_default=True, help="seconds, a hard limit")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="solver parameter (repeatable)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write a memplace-solution/1 file")
def solve_command(instance: str, solver_name: str, time_limit: float, seed: int,
                  params: tuple[str, ...], output: str | None) -> None:
    """Place INSTANCE's tensors with one solver; print latency, speedups, bound and gap."""
    from memplace.model import slowest_latency
    from memplace.solvers import solve
    inst = load_instance(instance)
    result = solve(inst, solver_name, time_limit=time_limit, seed=seed, **parse_params(params))
    slowest = slowest_latency(inst)
    compiler = solve(inst, "compiler", time_limit=None).latency
    click.echo(f"{inst.name}  solver={result.solver}  status={result.status}  "
               f"wall={result.wall_s:.3f} s  evaluations={result.evaluations}")
    click.echo(f"latency            {result.latency * 1e6:.3f} us")
    click.echo(f"speedup vs slowest  {slowest / result.latency:.4f}x   (all in {inst.level_names[-1]}: {slowest * 1e6:.3f} us)")
    click.echo(f"speedup vs compiler {compiler / result.latency:.4f}x   (compiler default: {compiler * 1e6:.3f} us)")
    if result.lower_bound is not None:
        click.echo(f"lower bound        {result.lower_bound * 1e6:.3f} us   gap {100 * (result.gap or 0.0):.4f}%")
    else:
        click.echo("lower bound        none (this method proves no bound)")
    if output:
        result.to_solution().write(output, inst)
        click.echo(f"wrote {output}")


@click.group("solvers")
def solvers_group() -> None:
    """The registered solvers."""


@solvers_group.command("list")
def solvers_list() -> None:
    """Names, one-line descriptions and parameters with defaults."""
    from memplace.solvers import registry
    for info in registry().values():
        click.echo(f"{info.name:<16} {info.description}")
        for key, default in info.params.items():
            click.echo(f"{'':<18}--param {key}={default}")


COMMANDS = [solve_command, solvers_group]
