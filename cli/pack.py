"""`memplace pack` and `memplace pack-bench`: offset assignment on MiniMalloc CSV files.

Exit status of `pack`: 0 packed, 1 proven infeasible, 2 bad input (malformed
CSV or parameters), 3 time limit reached, 4 a heuristic method could not place
every buffer (which proves nothing).
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from memplace.cli.values import BYTES, SECONDS, count
from memplace.model.core.errors import MemplaceError
from memplace.model.packing.minimalloc_csv import read_buffers, write_solution
from memplace.model.packing.exact import search_workers
from memplace.model.packing.packers import PACKERS, check_packing, minimize, pack, peak_live_size

EXIT_INFEASIBLE = 1
EXIT_TIMEOUT = 3
EXIT_HEURISTIC_FAILED = 4



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


@click.command("pack-bench")
@click.option("--set", "which",
              type=click.Choice(["minimalloc", "heldout", "families", "traces", "all"]),
              default="minimalloc", show_default=True,
              help="minimalloc: MiniMalloc's challenging A-F (or the files in --dir); heldout: "
                   "the generated held-out instances; families: the held-out KV-cache, pipeline, "
                   "tiny-among-huge and 99.9%-tight instances; traces: idealloc's compiler traces, "
                   "minimised (no capacity).")
@click.option("--dir", "bench_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of MiniMalloc files named NAME.CAPACITY.csv [default: the packaged "
                   "challenging set].")
@click.option("--method", type=click.Choice(sorted(PACKERS)), default="exact", show_default=True)
@click.option("--time-limit", type=SECONDS, default=60.0, show_default=True,
              help="Seconds per instance.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Threads of the exact search [default: 1].")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Also write pack-bench.csv and pack-bench.md into this folder "
                   "(the committed table: results/packing); with --startup, startup.md.")
@click.option("--startup", is_flag=True,
              help="Instead: time whole `memplace` processes (warm --help, a cold first "
                   "`memplace pack` on A, warm on each of A-F) beside their goals; print wall "
                   "and CPU seconds, peak memory and the load average.")
@click.option("--runs", type=count(100), default=5, show_default=True,
              help="Processes per --startup figure.")
@click.option("--minimalloc", "minimalloc", type=click.Path(dir_okay=False), default=None,
              help="A MiniMalloc binary (github.com/google/minimalloc, built by you): run it "
                   "beside memplace on every fixed-capacity instance, same time limit, its "
                   "packing re-checked.")
def pack_bench_command(which: str, bench_dir: str | None, method: str, time_limit: float,
                       workers: int | None, out: str | None, startup: bool, runs: int,
                       minimalloc: str | None) -> None:
    """Pack benchmark instances and print memplace's result and time beside MiniMalloc's
    published time; every packing is re-checked independently (INVALID if wrong)."""
    from memplace.bench import pack_table
    if startup:
        from memplace.bench import pack_startup
        lines = [f"{pack_startup.load_average()} at the start; seconds are min and median "
                 f"of the runs", pack_startup.HEADER]
        click.echo("\n".join(lines))
        for fig in pack_startup.startup_figures(runs):
            lines.append(pack_startup.text_line(fig))
            click.echo(lines[-1])
        lines.append(f"{pack_startup.load_average()} at the end")
        click.echo(lines[-1])
        if out is not None:
            written = pack_startup.write_results(Path(out), lines,
                                                 "memplace pack-bench " + " ".join(sys.argv[2:]))
            click.echo(f"wrote {written}")
        return
    folder = Path(bench_dir) if bench_dir is not None else pack_table.CHALLENGING
    table = []
    click.echo(pack_table.text_line(None))
    for row in pack_table.rows(which, time_limit, method, workers, folder, minimalloc):
        table.append(row)
        click.echo(pack_table.text_line(row))
    if out is not None:
        command = "memplace pack-bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else \
            "memplace pack-bench"
        pack_table.write_results(Path(out), table, command, time_limit)
        click.echo(f"wrote {out}/pack-bench.csv and pack-bench.md")


@click.command("pack-generate")
@click.argument("kind", type=click.Choice(["cut", "cutpw", "act", "kv", "pipe", "tiny", "tight",
                                         "trace"]))
@click.argument("size", type=click.IntRange(1, 10**6))
@click.argument("seed", type=click.IntRange(0, 2**63 - 1))
@click.option("-o", "--output", type=click.Path(), required=True,
              help="The MiniMalloc CSV to write; its capacity is printed. An existing folder: "
                   "write NAME.CAPACITY.csv into it (the naming pack-bench --dir reads).")
@click.option("--certificate", type=click.Path(dir_okay=False), default=None,
              help="For cut kinds: also write the packing at capacity the cuts give.")
def pack_generate_command(kind: str, size: int, seed: int, output: str,
                          certificate: str | None) -> None:
    """Write a generated instance: KIND cut/cutpw (SIZE buffers tiling capacity x horizon, so
    the optimum is the capacity), act (SIZE operators of activation lifetimes), or a family
    of memplace.model.packing.families: kv (SIZE decode steps), pipe (SIZE micro-batches),
    tiny (SIZE buffers), tight (SIZE operators, capacity with 0.1% slack); or trace (SIZE
    buffers of a training step shaped like the compiler traces; minimise it)."""
    from memplace.model.packing.generate import generate, write_csv
    got = generate(kind, size, seed)
    if Path(output).is_dir():
        output = str(Path(output) / f"{got.name}.{got.capacity}.csv")
    write_csv(output, got.buffers)
    if certificate is not None:
        if got.certificate is None:
            raise MemplaceError(f"--certificate: kind {kind!r} has no known packing")
        write_csv(certificate, got.buffers, got.certificate)
    click.echo(f"wrote {output}: {got.name}, {len(got.buffers)} buffers, capacity {got.capacity}, "
               f"peak live size {peak_live_size(got.buffers)}")
