"""`memplace pack` and `memplace pack-bench`: offset assignment on MiniMalloc CSV files.

Exit status of `pack`: 0 packed, 1 proven infeasible, 2 bad input (malformed
CSV or parameters), 3 time limit reached, 4 a heuristic method could not place
every buffer (which proves nothing).
"""
from __future__ import annotations

import os

import sys
import time
from pathlib import Path

import click

from memplace.bench.cli.values import BYTES, SECONDS, count
from memplace.model.core.errors import MemplaceError
from memplace.model.packing.minimalloc_csv import read_buffers, write_solution
from memplace.model.packing.exact import search_workers
from memplace.model.packing.packers import PACKERS, check_packing, minimize, pack, peak_live_size

EXIT_INFEASIBLE = 1
EXIT_TIMEOUT = 3
EXIT_HEURISTIC_FAILED = 4

# MiniMalloc's published C++ solve times (ASPLOS 2023 talk) for the challenging suite.
MINIMALLOC_SECONDS = {"A": 4.910, "B": 3.661, "C": 0.637, "D": 2.674, "E": 3.717, "F": 5.358}
# The project's shared folder sits beside the repository; MEMPLACE_SHARED overrides it.
DEFAULT_BENCH_DIR = Path(os.environ.get(
    "MEMPLACE_SHARED", Path(__file__).resolve().parent.parent.parent / "shared")) \
    / "benchmarks" / "minimalloc" / "challenging"


@click.command("pack")
@click.argument("input_csv", metavar="INPUT.csv", type=click.Path(dir_okay=False))
@click.option("--capacity", type=BYTES, default=None,
              help="Bytes of the address space (an upper limit with --minimize).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the rows with an offset column here (only when packed).")
@click.option("--time-limit", type=SECONDS, default=None, help="Seconds; exit 3 when reached.")
@click.option("--method", type=click.Choice(sorted(PACKERS)), default="exact", show_default=True)
@click.option("--minimize", "minimize_", is_flag=True,
              help="Find the lowest height that packs (exact search downward from heuristics).")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Threads of the exact search [default: 1, reproducible]; 2 helps on idle cores.")
def pack_command(input_csv: str, capacity: int | None, output: str | None,
                 time_limit: float | None, method: str, minimize_: bool,
                 workers: int | None) -> None:
    """Give every buffer of INPUT.csv (MiniMalloc CSV) an offset within --capacity."""
    if capacity is None and not minimize_:
        raise MemplaceError("--capacity is required (or use --minimize)")
    data = read_buffers(input_csv)
    n = len(data.buffers)
    if minimize_:
        with search_workers(workers):
            result, lower = minimize(data.buffers, time_limit=time_limit, capacity=capacity)
        bound = f"lower bound {lower} (peak live size {peak_live_size(data.buffers)})"
    else:
        result = pack(data.buffers, capacity, method=method, time_limit=time_limit,
                      workers=workers)
        bound = f"peak live size {peak_live_size(data.buffers)}"
    where = f"{n} buffers" + (f" at capacity {capacity}" if capacity is not None else "")
    timing = f"{result.wall_s:.3f} s ({result.method}, {result.nodes} nodes)"
    if result.status == "packed":
        problems = check_packing(data.buffers, result.offsets,
                                 capacity if capacity is not None else result.height)
        if problems:  # never expected: the checker is independent of the packers
            raise click.ClickException("internal error, invalid packing: " + problems[0])
        if output is not None:
            write_solution(output, data, result.offsets)
        click.echo(f"packed {where}: height {result.height}, {bound}, in {timing}"
                   + (f"; wrote {output}" if output else ""))
        return
    if result.status == "infeasible":
        click.echo(f"infeasible: no packing of {where} exists (proven; {bound}), "
                   f"in {timing}")
        sys.exit(EXIT_INFEASIBLE)
    if result.status == "timeout":
        click.echo(f"timeout: no packing of {where} found within {time_limit} s, in {timing}")
        sys.exit(EXIT_TIMEOUT)
    click.echo(f"failed: heuristic {method} could not place all {where} "
               f"({int((result.offsets < 0).sum())} left out; proves nothing), in {timing}")
    sys.exit(EXIT_HEURISTIC_FAILED)


@click.command("pack-bench")
@click.option("--dir", "bench_dir", type=click.Path(file_okay=False), default=str(DEFAULT_BENCH_DIR),
              show_default=True, help="Folder of MiniMalloc files named NAME.CAPACITY.csv.")
@click.option("--method", type=click.Choice(sorted(PACKERS)), default="exact", show_default=True)
@click.option("--time-limit", type=SECONDS, default=60.0, show_default=True,
              help="Seconds per instance.")
@click.option("--repeat", type=count(1000), default=1, show_default=True,
              help="Runs per instance; the table shows the first and the fastest.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Threads of the exact search [default: 1].")
def pack_bench_command(bench_dir: str, method: str, time_limit: float, repeat: int,
                       workers: int | None) -> None:
    """Pack MiniMalloc's challenging instances at their capacity and print a table of times."""
    files = sorted(Path(bench_dir).glob("*.csv"))
    if not files:
        raise MemplaceError(f"no .csv files in {bench_dir}")
    # the first call pays for loading (or compiling) the numba kernels; time it apart
    start = time.perf_counter()
    from memplace.model.packing.packers import Buffer
    pack([Buffer("a", 0, 2, 1), Buffer("b", 1, 3, 1), Buffer("c", 0, 3, 1, 2)], 3, method="exact-search")
    pack([Buffer("a", 0, 2, 1)], 1, method=method)
    click.echo(f"kernel load/compile: {time.perf_counter() - start:.2f} s")
    click.echo(f"{'instance':<10} {'buffers':>7} {'capacity':>9} {'status':<10} {'height':>9} "
               f"{'first s':>8} {'best s':>8} {'nodes':>10} {'MiniMalloc s':>12}")
    for path in files:
        name, _, cap = path.stem.rpartition(".")
        try:
            capacity = int(cap)
        except ValueError:
            raise MemplaceError(f"{path.name}: expected NAME.CAPACITY.csv") from None
        data = read_buffers(path)
        times, result = [], None
        for _ in range(max(1, repeat)):
            result = pack(data.buffers, capacity, method=method, time_limit=time_limit,
                          workers=workers)
            times.append(result.wall_s)
        status = result.status
        if status == "packed" and check_packing(data.buffers, result.offsets, capacity):
            status = "INVALID"
        ref = MINIMALLOC_SECONDS.get(name)
        click.echo(f"{name:<10} {len(data.buffers):>7} {capacity:>9} {status:<10} "
                   f"{result.height:>9} {times[0]:>8.3f} {min(times):>8.3f} {result.nodes:>10} "
                   f"{ref if ref is not None else '':>12}")


COMMANDS = [pack_command, pack_bench_command]
