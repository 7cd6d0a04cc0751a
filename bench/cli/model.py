"""Commands on the model: evaluate, validate, perf, warmup."""
from __future__ import annotations

import sys

import click

from memplace.bench.cli.values import count
from memplace.instances import load as load_instance
from memplace.model import Solution, validate, warmup


def _validate(instance: str, solution: str):
    inst = load_instance(instance)
    return validate(inst, Solution.read(solution, inst))


@click.command("evaluate")
@click.argument("instance")
@click.argument("solution", type=click.Path(dir_okay=False))
def evaluate_command(instance: str, solution: str) -> None:
    """Print a solution's validity and recomputed latency."""
    report = _validate(instance, solution)
    click.echo(f"valid: {'yes' if report.valid else 'no'}")
    click.echo(f"latency: {report.latency:.9g} s")
    for error in report.errors:
        click.echo(f"  {error}")


@click.command("validate")
@click.argument("instance")
@click.argument("solution", type=click.Path(dir_okay=False))
def validate_command(instance: str, solution: str) -> None:
    """Exit 0 when the solution is valid and its claimed latency holds (relative 1e-9), else 1."""
    report = _validate(instance, solution)
    if report.ok:
        click.echo(f"ok: valid, latency {report.latency:.9g} s")
        return
    for error in report.errors:
        click.echo(f"invalid: {error}")
    sys.exit(1)


@click.command("perf")
@click.argument("instance")
@click.option("--population", type=count(1 << 16), default=1024, show_default=True,
              help="placements per batch call")
@click.option("--moves", type=count(10**10), default=1_000_000, show_default=True,
              help="moves timed for the delta")
def perf_command(instance: str, population: int, moves: int) -> None:
    """Measure the cost model; the last line is machine-readable."""
    from memplace.bench.perf import measure
    inst = load_instance(instance)
    figures = measure(inst, population=population, moves=moves)
    click.echo(f"{inst.name}: {inst.n_ops} ops, {inst.n_tensors} tensors, "
               f"{int(inst.op_ptr[-1])} accesses, {inst.n_levels} levels")
    click.echo(f"single placement      {figures.single_ns / 1e3:10.3f} us per call (Python dispatch included)")
    click.echo(f"batch of {population:<5}        {figures.batch_ns / 1e3:10.3f} us per placement")
    if figures.c_batch_ns is not None:
        click.echo(f"C loop, same arrays   {figures.c_batch_ns / 1e3:10.3f} us per placement "
                   f"(Numba/C = {figures.batch_ns / figures.c_batch_ns:.2f}x)")
    click.echo(f"delta of one move     {figures.delta_ns:10.1f} ns ({1e9 / figures.delta_ns / 1e6:.1f} M moves/s)")
    click.echo(f"Python reference      {figures.python_ref_ns / 1e3:10.1f} us per placement "
               f"({figures.python_ref_ns / figures.batch_ns:.0f}x the batch kernel)")
    click.echo(figures.line())


@click.command("warmup")
def warmup_command() -> None:
    """Compile every Numba kernel once (cached on disk for later commands)."""
    from memplace.model.core.numba_cache import cache_dir
    seconds = warmup()
    from memplace.solvers import registry
    from memplace.solvers.static.warm import warm_solvers
    solvers = warm_solvers()
    click.echo(f"kernels ready in {seconds:.2f} s; solvers warmed: {', '.join(solvers) or 'none'} "
               f"(of {len(registry())}); Numba cache: {cache_dir()}")


COMMANDS = [evaluate_command, validate_command, perf_command, warmup_command]
