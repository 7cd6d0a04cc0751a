"""Commands that run solvers: `solve` and `solvers list`."""
from __future__ import annotations

import time

import click

from memplace.cli.values import SECONDS, SEED, microseconds
from memplace.instances import load as load_instance
from memplace.model.core.errors import MemplaceError
from memplace.model.core.search import DEFAULT_PROBLEM

LOAD_REPORT_S = 1.0  # a load (or a synthetic instance's generation) slower than this is reported


def parse_params(pairs: tuple[str, ...]) -> dict[str, str]:
    """KEY=VALUE strings to a dict (values converted and checked by the solver's specs)."""
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
@click.option("--problem", "problem_name", default=DEFAULT_PROBLEM, show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the problem's solution file")
def solve_command(instance: str, solver_name: str, time_limit: float, seed: int,
                  params: tuple[str, ...], problem_name: str, output: str | None) -> None:
    """Place INSTANCE's tensors with one solver; print latency, speedups, bound and gap."""
    from memplace.model.core.problem import problem
    from memplace.solvers import load_kernels, solve, solver_info
    prob = problem(problem_name)
    checked = solver_info(solver_name, prob.name).check(parse_params(params))  # before loading
    began = time.perf_counter()
    inst = load_instance(instance)
    if time.perf_counter() - began > LOAD_REPORT_S:  # e.g. synth-100000@nnpi, built by name
        click.echo(f"{inst.name}: loaded in {time.perf_counter() - began:.1f} s", err=True)
    load_kernels([solver_name], prob.name,  # compiled (or loaded) before the clock starts
                 announce=lambda line: click.echo(line, err=True))
    result = solve(inst, solver_name, time_limit=time_limit, seed=seed, problem=prob, **checked)
    slowest, baseline = (solve(inst, prob.baselines[role], time_limit=None, problem=prob).latency
                         for role in ("slowest", "baseline"))
    click.echo(f"{inst.name}  solver={result.solver}  status={result.status}  "
               f"wall={result.wall_s:.3f} s  evaluations={result.evaluations}")
    click.echo(f"latency             {microseconds(result.latency)}")
    click.echo(f"speedup vs slowest  {slowest / result.latency:.4f}x   "
               f"({prob.baselines['slowest']}, all in {inst.level_names[-1]}: {microseconds(slowest)})")
    click.echo(f"speedup vs baseline {baseline / result.latency:.4f}x   "
               f"({prob.baselines['baseline']}, the {prob.name} baseline: {microseconds(baseline)})")
    if result.lower_bound is not None:
        click.echo(f"lower bound         {microseconds(result.lower_bound)}   gap {100 * (result.gap or 0.0):.4f}%")
    else:
        click.echo("lower bound         none (this method proves no bound)")
    if output:
        result.to_solution().write(output, inst)
        click.echo(f"wrote {output}")


@click.group("solvers")
def solvers_group() -> None:
    """The registered solvers."""


@solvers_group.command("list")
@click.option("--problem", "problem_name", default=None,
              help="only this problem's solvers [default: every problem's]")
def solvers_list(problem_name: str | None) -> None:
    """Names, one-line descriptions and parameters: default, type and range, doc."""
    from memplace.model.core.problem import PROBLEMS, problem
    from memplace.solvers import registry
    names = PROBLEMS.names() if problem_name is None else [problem(problem_name).name]
    for prob in names:
        for info in registry(prob).values():
            where = "" if prob == DEFAULT_PROBLEM else f"[{prob}] "
            click.echo(f"{info.name:<16} {where}{info.description}")
            for key, spec in info.params.items():
                default = "none" if spec.default is None else spec.default
                click.echo(f"{'':<18}--param {key}={default}  ({spec.describe()}) {spec.doc}".rstrip())
    if problem_name is None:
        from memplace.solvers.families import FAMILIES
        click.echo("\nnames in both problems, one method family each:")
        for name, meaning in FAMILIES.items():
            click.echo(f"{name:<16} {meaning}")
        click.echo("baselines (speedups are measured against them): "
                   + "; ".join(f"{p}: {problem(p).baselines['baseline']}" for p in names))
