"""Commands on the model: evaluate, validate, perf, warmup."""
from __future__ import annotations

import os
import sys
import time

import click

from memplace.cli.values import Seconds, count, microseconds
from memplace.instances import load as load_instance
from memplace.model import validate_solution_file


@click.command("evaluate")
@click.argument("instance")
@click.argument("solution", type=click.Path(dir_okay=False))
def evaluate_command(instance: str, solution: str) -> None:
    """Print a solution's validity and recomputed latency (in µs, as every command prints
    latencies; the file's `latency` is in seconds, as the specification fixes)."""
    report = validate_solution_file(load_instance(instance), solution)  # either format
    click.echo(f"valid: {'yes' if report.valid else 'no'}")
    click.echo(f"latency: {microseconds(report.latency, 6)}")
    for error in report.errors:
        click.echo(f"  {error}")


@click.command("validate")
@click.argument("instance")
@click.argument("solution", type=click.Path(dir_okay=False))
def validate_command(instance: str, solution: str) -> None:
    """Exit 0 when the solution is valid and its claimed latency holds (relative 1e-9), else 1."""
    report = validate_solution_file(load_instance(instance), solution)
    if report.ok:
        click.echo(f"ok: valid, latency {microseconds(report.latency, 6)}")
        return
    for error in report.errors:
        click.echo(f"invalid: {error}")
    sys.exit(1)


@click.command("perf")
@click.argument("instance", required=False)
@click.option("--population", type=count(1 << 16), default=1024, show_default=True,
              help="placements per batch call")
@click.option("--moves", type=count(10**10), default=1_000_000, show_default=True,
              help="moves timed for the delta (with --scaling: sa moves)")
@click.option("--scaling", is_flag=True,
              help="instead of INSTANCE: time loading, each heuristic, sa moves and the MILP "
                   "build on synth-N@nnpi for each of --sizes, as a Markdown table")
@click.option("--sizes", default="1000,10000,100000", show_default=True,
              help="with --scaling: op counts, comma-separated")
@click.option("--folder", type=click.Path(file_okay=False), default=None,
              help="with --scaling: where the synthetic instance files are written once "
                   "(default: a memplace-perf folder in the temporary directory)")
@click.option("--problem", "problem_name", type=click.Choice(["static", "residency"]), default="static",
              show_default=True, help="which cost model: the static latency or the residency simulator")
@click.option("--changes", type=count(10**7), default=2000, show_default=True,
              help="residency: random one-window changes timed (incremental vs full)")
@click.option("--sa-seconds", type=click.FloatRange(0, Seconds.MAX), default=0.0, show_default=True,
              help="also run `sa` this long and print its moves per second (0: no); with "
                   "--problem residency, once with each move loop (python, compiled)")
@click.option("--ga-seconds", type=click.FloatRange(0, Seconds.MAX), default=0.0, show_default=True,
              help="with --problem residency: also run `ga` this long with each decoder (python, "
                   "compiled) and print its evaluations per second (0: no)")
@click.option("--seconds", type=click.FloatRange(0.1, Seconds.MAX), default=30.0, show_default=True,
              help="with --scaling --problem residency: seconds of sa and of the bound per size")
@click.option("--out", type=click.Path(file_okay=False), default="results/residency-scale",
              show_default=True, help="with --scaling --problem residency: where the table goes")
def perf_command(instance: str | None, population: int, moves: int, scaling: bool, sizes: str,
                 folder: str | None, problem_name: str, changes: int, sa_seconds: float,
                 ga_seconds: float, seconds: float, out: str) -> None:
    """Measure the cost model on INSTANCE (the last line is machine-readable), or with
    --scaling how every step grows with the instance size; --problem residency measures
    the residency simulator instead."""
    from memplace.bench.perf import measure
    if scaling and problem_name == "residency":
        _perf_residency_scaling(sizes, folder, seconds, out)
        return
    if scaling:
        _perf_scaling(sizes, moves, folder)
        return
    if instance is None:
        raise click.UsageError("give an INSTANCE, or --scaling")
    if problem_name == "residency":
        _perf_residency(instance, changes, sa_seconds, ga_seconds)
        return
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
    if sa_seconds > 0:
        _sa_speed(inst, sa_seconds)
    click.echo(figures.line())


def _sa_speed(inst, seconds: float) -> None:
    """`sa`'s moves per second (kernel wall clock and per CPU second) and the latency it
    reaches against `compiler` in `seconds` (after compiling its kernels)."""
    from memplace.solvers import solve
    solve(inst, "sa", time_limit=300.0, moves=1000, restarts=1)  # compile / load the kernels
    compiler = solve(inst, "compiler", time_limit=None).latency
    res = solve(inst, "sa", time_limit=seconds)
    notes = res.notes
    click.echo(f"sa, {seconds:g} s            {notes.get('sa_moves', 0)} moves, "
               f"{notes.get('moves_per_s', 0.0) / 1e6:.2f} M moves/s "
               f"({notes.get('moves_per_cpu_s', 0.0) / 1e6:.2f} M per CPU second), "
               f"speedup over compiler {compiler / res.latency:.4f}")


def _sizes_and_folder(sizes: str, folder: str | None):
    import tempfile
    from pathlib import Path
    try:
        ops = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"--sizes must be comma-separated integers, got {sizes!r}") from None
    if not ops or min(ops) < 2:
        raise click.BadParameter(f"--sizes must list op counts >= 2, got {sizes!r}")
    where = Path(folder) if folder else Path(tempfile.gettempdir()) / "memplace-perf"
    where.mkdir(parents=True, exist_ok=True)
    return ops, where


def _perf_residency_scaling(sizes: str, folder: str | None, seconds: float, out: str) -> None:
    from pathlib import Path

    from memplace.bench.residency_scale import rows, table, write
    ops, where = _sizes_and_folder(sizes, folder)
    got = rows(ops, where, seconds, lambda n: click.echo(f"synth-{n}@nnpi ...", err=True))
    click.echo(table(got, seconds))
    paths = write(got, seconds, Path(out))
    click.echo(f"wrote {', '.join(str(p) for p in paths)}")


def _perf_scaling(sizes: str, moves: int, folder: str | None) -> None:
    from memplace.bench.perf import scaling_row, scaling_table
    ops, where = _sizes_and_folder(sizes, folder)
    click.echo("warming up (every kernel compiled or loaded from cache once; not timed) ...",
               err=True)
    scaling_row(100, where, sa_moves=1000)  # every kernel the table times, so the figures are warm
    rows = []
    for n in ops:
        click.echo(f"synth-{n}@nnpi ...", err=True)
        rows.append(scaling_row(n, where, sa_moves=moves))
    click.echo(scaling_table(rows, sa_moves=moves))
    click.echo(f"\nSeconds, warm Numba (compile time excluded). Instances synth-N@nnpi from the "
               f"synthetic generator, files in {where}. Heuristics through solve() (validation "
               f"included); sa: {moves} moves of the annealing kernel alone; MILP build: "
               f"formulate + HiGHS model, no solve.")


def _perf_residency(instance: str, changes: int, sa_seconds: float, ga_seconds: float) -> None:
    from memplace.bench.perf_residency import measure
    inst = load_instance(instance)
    f = measure(inst, changes=changes)
    click.echo(f"{inst.name}: {inst.n_ops} ops, {inst.n_tensors} tensors, {int(inst.op_ptr[-1])} accesses; "
               f"homes in the slowest level, {f.windows} windows (one per access that can have one), "
               f"{f.copies} copies")
    click.echo(f"simulation (kernel)   {f.kernel_ns / 1e3:10.2f} us per solution (CPU time, in a compiled loop)")
    if f.c_ns is not None:
        click.echo(f"C loop, same arrays   {f.c_ns / 1e3:10.2f} us per solution (kernel/C = {f.kernel_ns / f.c_ns:.2f}x)")
    click.echo(f"Python reference      {f.python_ref_ns / 1e3:10.1f} us per solution "
               f"({f.python_ref_ns / f.kernel_ns:.0f}x the kernel)")
    click.echo(f"encode windows        {f.encode_ns / 1e3:10.2f} us per solution (from Python Window objects)")
    click.echo(f"batch of 32           {f.batch_ns / 1e3:10.2f} us per solution (encoding included)")
    click.echo(f"one-window change     {f.full_ns / 1e3:10.2f} us full re-simulation, "
               f"{f.incremental_ns / 1e3:.2f} us incremental ({f.full_ns / f.incremental_ns:.1f}x; "
               f"{f.early_stops:.0%} met the old run early), mean of {changes} random changes")
    click.echo(f"Simulation.try_change {f.api_ns / 1e3:10.2f} us per call from Python (reject included)")
    if sa_seconds > 0:
        from memplace.bench.perf_residency import sa_speed
        runs = sa_speed(inst, sa_seconds)
        for r in runs:
            click.echo(f"sa, {r.engine:<8} {sa_seconds:g} s {r.per_s:12,.0f} evaluations/s ({r.moves} moves in "
                       f"{r.anneal_s:.2f} s of annealing), latency {r.latency / r.msa_latency:.4f}x msa's")
        if len(runs) == 2 and runs[0].per_s > 0:
            click.echo(f"sa, compiled/python  {runs[1].per_s / runs[0].per_s:10.1f}x the evaluations per second")
    if ga_seconds > 0:
        from memplace.bench.perf_residency import ga_speed
        runs = ga_speed(inst, ga_seconds)
        for r in runs:
            click.echo(f"ga, {r.engine:<8} {ga_seconds:g} s {r.per_s:12,.0f} evaluations/s ({r.evaluations} "
                       f"chromosomes decoded and simulated in {r.decode_s:.2f} s), latency "
                       f"{r.latency / r.msa_latency:.4f}x msa's")
        if len(runs) == 2 and runs[0].per_s > 0:
            click.echo(f"ga, compiled/python  {runs[1].per_s / runs[0].per_s:10.1f}x the evaluations per second")
    click.echo(f.line())


@click.command("warmup")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True,
              help="processes compiling at a time (1: in this process; more: spawned workers, "
                   "faster on idle cores, but a worker was seen to crash: docs/residency-scale.md)")
@click.option("--profile", "top", type=click.IntRange(0, 1000), default=0, metavar="N",
              help="also print each part's seconds and the N kernels that took longest to compile")
def warmup_command(jobs: int, top: int) -> None:
    """Compile every Numba kernel once, into the cache folder later commands load them from
    (a run that finds its kernels missing compiles them before its clock starts)."""
    from memplace.model.core.numba_cache import cache_dir, record_compile_seconds
    from memplace.solvers.warm import PARTS, compile_estimate, missing_parts, warm_parts, with_callees
    folder = cache_dir()
    missing = missing_parts()
    if not missing and not top:
        click.echo(f"kernels: all {len(PARTS)} parts compiled already, in {folder}")
        return
    names = with_callees(missing or None)
    jobs = min(jobs, len(names))
    click.echo(f"kernels: compiling memplace's Numba kernels into {folder} ({len(names)} parts, "
               f"{jobs} processes), once: ~{compile_estimate(names, jobs):.0f} s on {jobs} idle "
               f"cores; later commands load them in seconds", err=True)
    load = os.getloadavg()
    began = time.perf_counter()
    bar = _PartsBar(len(names))
    reports = warm_parts(names, jobs=jobs, on_start=bar.started, on_done=bar.done)
    bar.close()
    wall = time.perf_counter() - began
    cpu = sum(r.cpu_s for r in reports)
    if missing:
        record_compile_seconds(wall)
    click.echo(f"kernels ready in {wall:.1f} s ({cpu:.1f} CPU s in {jobs} processes; load average "
               f"{load[0]:.1f} -> {os.getloadavg()[0]:.1f}); Numba cache: {folder}")
    if top:
        _print_profile(reports, top)
        from memplace.solvers.warm import compiled_twice
        for kernel, parts in compiled_twice(reports).items():
            click.echo(f"compiled by two parts at once: {kernel} ({', '.join(parts)})")


class _PartsBar:
    """A tqdm bar over the parts on a terminal; otherwise one line per part."""

    def __init__(self, total: int):
        self.running: list[str] = []
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="part", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{desc}: {n_fmt}/{total_fmt} parts |{bar}| [{elapsed}{postfix}]")
            self.bar.set_description_str("compiling")

    def started(self, name: str) -> None:
        self.running.append(name)
        self._show()

    def done(self, report) -> None:
        self.running.remove(report.name)
        if self.bar is None:
            click.echo(f"  {report.name}: {report.wall_s:.1f} s ({report.cpu_s:.1f} CPU s)", err=True)
            return
        self.bar.update(1)
        self._show()

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(", ".join(self.running), refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _print_profile(reports, top: int) -> None:
    """Each part's wall and CPU seconds, then the kernels that took longest (CPU seconds of
    their own compile, the kernels they call excluded)."""
    click.echo("part                  wall s   CPU s")
    for r in reports:
        click.echo(f"{r.name:<20} {r.wall_s:7.1f} {r.cpu_s:7.1f}")
    kernels = sorted(((s, name, r.name) for r in reports for name, s in r.kernels.items()),
                     reverse=True)
    click.echo(f"kernel (the {min(top, len(kernels))} slowest of {len(kernels)} compiled)"
               "                      CPU s  part")
    for s, name, part in kernels[:top]:
        click.echo(f"{name.removeprefix('memplace.'):<60} {s:6.1f}  {part}")
