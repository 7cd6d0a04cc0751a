"""`memplace pack` and `memplace pack-bench`: offset assignment on MiniMalloc CSV files.

Exit status of `pack`: 0 packed, 1 proven infeasible, 2 bad input (malformed
CSV or parameters), 3 time limit reached, 4 a heuristic method could not place
every buffer (which proves nothing).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from memplace.cli.values import BYTES, SECONDS, count
from memplace.model.core.errors import MemplaceError
from memplace.model.packing import BENCHMARKS
from memplace.model.packing.minimalloc_csv import read_buffers, write_solution
from memplace.model.packing.exact import search_workers
from memplace.model.packing.generate import generate, heldout_set, write_csv
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.packers import PACKERS, check_packing, minimize, pack, peak_live_size

EXIT_INFEASIBLE = 1
EXIT_TIMEOUT = 3
EXIT_HEURISTIC_FAILED = 4

# MiniMalloc's published C++ solve times (ASPLOS 2023 talk) for the challenging suite.
MINIMALLOC_SECONDS = {"A": 4.910, "B": 3.661, "C": 0.637, "D": 2.674, "E": 3.717, "F": 5.358}
DEFAULT_BENCH_DIR = BENCHMARKS / "minimalloc" / "challenging"


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
    if minimize_:
        with search_workers(workers):
            result, lower = minimize(data.buffers, time_limit=time_limit, capacity=capacity)
        bound = f"lower bound {lower} (peak live size {peak_live_size(data.buffers)})"
    else:
        result = pack(data.buffers, capacity, method=method, time_limit=time_limit,
                      workers=workers)
        bound = f"peak live size {peak_live_size(data.buffers)}"
    if minimize_ and any(b.hint is not None for b in data.buffers):
        result.notes.append("hints: not used by --minimize")
    for note in result.notes:
        click.echo(note)
    where = f"{len(data.buffers)} buffers" + (f" at capacity {capacity}" if capacity is not None else "")
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


def _minimalloc_set(bench_dir: str) -> list[tuple[str, str, list, int, float | None]]:
    files = sorted(Path(bench_dir).glob("*.csv"))
    if not files:
        raise MemplaceError(f"no .csv files in {bench_dir}")
    out = []
    for path in files:
        name, _, cap = path.stem.rpartition(".")
        try:
            capacity = int(cap)
        except ValueError:
            raise MemplaceError(f"{path.name}: expected NAME.CAPACITY.csv") from None
        out.append(("minimalloc", name, read_buffers(path).buffers, capacity,
                    MINIMALLOC_SECONDS.get(name)))
    return out


@click.command("pack-bench")
@click.option("--set", "which", type=click.Choice(["minimalloc", "heldout", "all"]),
              default="minimalloc", show_default=True,
              help="minimalloc: the files in --dir (the set the search was first tuned on); "
                   "heldout: the generated instances of memplace.model.packing.generate.HELDOUT.")
@click.option("--dir", "bench_dir", type=click.Path(file_okay=False), default=str(DEFAULT_BENCH_DIR),
              show_default=True, help="Folder of MiniMalloc files named NAME.CAPACITY.csv.")
@click.option("--method", type=click.Choice(sorted(PACKERS)), default="exact", show_default=True)
@click.option("--time-limit", type=SECONDS, default=60.0, show_default=True,
              help="Seconds per instance.")
@click.option("--repeat", type=count(1000), default=1, show_default=True,
              help="Runs per instance; the table shows the first and the fastest.")
@click.option("--minimize", "minimize_", is_flag=True,
              help="Find the lowest height instead (ignores --method); the table adds the "
                   "proven lower bound.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Threads of the exact search [default: 1].")
def pack_bench_command(which: str, bench_dir: str, method: str, time_limit: float, repeat: int,
                       minimize_: bool, workers: int | None) -> None:
    """Pack benchmark instances at their capacity and print a table of times.

    Each packing is re-checked by `check_packing`; a wrong one shows as INVALID.
    """
    rows = []
    if which in ("minimalloc", "all"):
        rows += _minimalloc_set(bench_dir)
    if which in ("heldout", "all"):
        rows += [("heldout", g.name, g.buffers, g.capacity, None) for g in heldout_set()]
    # the first call pays for loading (or compiling) the numba kernels; time it apart
    start = time.perf_counter()
    pack([Buffer("a", 0, 2, 1), Buffer("b", 1, 3, 1), Buffer("c", 0, 3, 1, 2)], 3, method="exact-search")
    pack([Buffer("a", 0, 2, 1)], 1, method=method)
    click.echo(f"kernel load/compile: {time.perf_counter() - start:.2f} s")
    extra = f"{'bound':>9} " if minimize_ else ""
    click.echo(f"{'set':<10} {'instance':<15} {'buffers':>7} {'capacity':>9} {'status':<10} "
               f"{'height':>9} {extra}{'first s':>8} {'best s':>8} {'nodes':>10} "
               f"{'MiniMalloc s':>12}")
    for set_name, name, buffers, capacity, ref in rows:
        times, result, bound = [], None, None
        for _ in range(repeat):
            if minimize_:
                with search_workers(workers):
                    result, bound = minimize(buffers, time_limit=time_limit, capacity=capacity)
            else:
                result = pack(buffers, capacity, method=method, time_limit=time_limit,
                              workers=workers)
            times.append(result.wall_s)
        status = result.status
        if status == "packed" and check_packing(buffers, result.offsets, capacity):
            status = "INVALID"
        if minimize_ and status == "packed":
            status = "optimal" if result.height == bound else "packed"
        extra = f"{bound:>9} " if minimize_ else ""
        click.echo(f"{set_name:<10} {name:<15} {len(buffers):>7} {capacity:>9} {status:<10} "
                   f"{result.height:>9} {extra}{times[0]:>8.3f} {min(times):>8.3f} "
                   f"{result.nodes:>10} {ref if ref is not None else '':>12}")


@click.command("pack-generate")
@click.argument("kind", type=click.Choice(["cut", "cutpw", "act"]))
@click.argument("size", type=click.IntRange(1, 10**6))
@click.argument("seed", type=click.IntRange(0, 2**63 - 1))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The MiniMalloc CSV to write; its capacity is printed.")
@click.option("--certificate", type=click.Path(dir_okay=False), default=None,
              help="For cut kinds: also write the packing at capacity the cuts give.")
def pack_generate_command(kind: str, size: int, seed: int, output: str,
                          certificate: str | None) -> None:
    """Write a generated instance: KIND cut/cutpw (SIZE buffers tiling capacity x horizon, so
    the optimum is the capacity) or act (SIZE operators of activation lifetimes)."""
    got = generate(kind, size, seed)
    write_csv(output, got.buffers)
    if certificate is not None:
        if got.certificate is None:
            raise MemplaceError(f"--certificate: kind {kind!r} has no known packing")
        write_csv(certificate, got.buffers, got.certificate)
    click.echo(f"wrote {output}: {got.name}, {len(got.buffers)} buffers, capacity {got.capacity}, "
               f"peak live size {peak_live_size(got.buffers)}")


COMMANDS = [pack_command, pack_bench_command, pack_generate_command]
