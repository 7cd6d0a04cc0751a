"""The packing benchmark table (`memplace pack-bench`): every instance, memplace's result
and time, MiniMalloc's published time, the height against the proven bound, the status.

Sets:
- `minimalloc`: MiniMalloc's challenging instances A-F at capacity 1 MiB (the set
  memplace's search was first tuned on);
- `heldout`: the generated instances of `memplace.model.packing.generate.HELDOUT`,
  committed before the search was tuned on them;
- `families`: the held-out families of `memplace.model.packing.families` (KV caches,
  pipeline stages, tiny among huge buffers, 99.9%-tight), committed as files before the
  search was tuned on them;
- `traces`: idealloc's compiler traces and a generated one of 10^5 buffers shaped like
  them (`generate.compiler_trace`); no capacity: minimise the height; the bound is the
  peak live size, raised by every height the search proves infeasible.

Every packing is re-checked by `check_packing`, independently of the packer; a wrong
one shows as INVALID.
"""
from __future__ import annotations

import csv
import io
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Sequence

from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import atomic_write
from memplace.model.packing import BENCHMARKS
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.exact import search_workers
from memplace.model.packing.generate import compiler_trace, heldout_set
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing, minimize, pack, peak_live_size

# MiniMalloc's published C++ solve times in seconds (ASPLOS 2023 talk and artifact) for
# the challenging suite at capacity 1 MiB.
MINIMALLOC_SECONDS = {"A": 4.910, "B": 3.661, "C": 0.637, "D": 2.674, "E": 3.717, "F": 5.358}
CHALLENGING = BENCHMARKS / "minimalloc" / "challenging"
FAMILIES = BENCHMARKS / "families"
TRACES = BENCHMARKS / "idealloc"
SETS = ("minimalloc", "heldout", "families", "traces")
# generated compiler-shaped traces minimised beside idealloc's (buffers, seed)
GENERATED_TRACES = ((100_000, 1),)


@dataclass(frozen=True)
class Instance:
    set: str
    name: str
    buffers: Sequence[Buffer]
    capacity: int | None  # None: minimise the height


@dataclass(frozen=True)
class Row:
    set: str
    instance: str
    buffers: int
    capacity: str
    status: str        # packed / infeasible / timeout / failed / optimal / gap / INVALID
    height: int
    bound: int
    gap_pct: float     # (height - bound) / bound, in percent; 0 at the bound
    seconds: float
    minimalloc_s: str  # MiniMalloc's published time, where the paper gives one
    minimalloc_here_s: str = ""  # MiniMalloc run beside memplace (--minimalloc), seconds
    minimalloc_here: str = ""    # and its status


def minimalloc_instances(folder: Path = CHALLENGING, which: str = "minimalloc"
                         ) -> list[Instance]:
    """The files NAME.CAPACITY.csv of `folder`, to be packed at CAPACITY."""
    files = sorted(Path(folder).glob("*.csv"))
    if not files:
        raise MemplaceError(f"no .csv files in {folder}")
    out = []
    for path in files:
        name, _, cap = path.stem.rpartition(".")
        try:
            capacity = int(cap)
        except ValueError:
            raise MemplaceError(f"{path.name}: expected NAME.CAPACITY.csv") from None
        out.append(Instance(which, name, read_buffers(path).buffers, capacity))
    return out


def instances(which: str, folder: Path = CHALLENGING) -> list[Instance]:
    """The instances of set `which` (one of SETS, or "all")."""
    out = []
    if which in ("minimalloc", "all"):
        out += minimalloc_instances(folder)
    if which in ("heldout", "all"):
        out += [Instance("heldout", g.name, g.buffers, g.capacity) for g in heldout_set()]
    if which in ("families", "all"):
        out += minimalloc_instances(FAMILIES, "families")
    if which in ("traces", "all"):
        out += [Instance("traces", p.stem, read_buffers(p).buffers, None)
                for p in sorted(TRACES.glob("*.csv"))]
        for size, seed in GENERATED_TRACES:
            got = compiler_trace(size, seed)
            out.append(Instance("traces", got.name, got.buffers, None))
    return out


def run(instance: Instance, time_limit: float, method: str = "exact",
        workers: int | None = None, minimalloc: str | None = None) -> Row:
    """Pack one instance (minimise its height when it has no capacity) and check the result;
    with `minimalloc` (a MiniMalloc binary), also run it on fixed-capacity instances."""
    start = time.perf_counter()
    if instance.capacity is None:
        with search_workers(workers):
            result, bound = minimize(instance.buffers, time_limit=time_limit)
        limit = result.height
    else:
        result = pack(instance.buffers, instance.capacity, method=method, time_limit=time_limit,
                      workers=workers)
        bound = peak_live_size(instance.buffers)
        limit = instance.capacity
    seconds = time.perf_counter() - start
    status = result.status
    if status == "packed":
        if check_packing(instance.buffers, result.offsets, limit):
            status = "INVALID"
        elif instance.capacity is None:
            status = "optimal" if result.height == bound else "gap"
    gap = 100.0 * (result.height - bound) / bound if status in ("optimal", "gap") and bound else 0.0
    here_s = here = ""
    if minimalloc is not None and instance.capacity is not None:
        from memplace.bench.minimalloc_side import run_minimalloc
        here, took = run_minimalloc(minimalloc, instance.buffers, instance.capacity, time_limit)
        here_s = f"{took:.3f}"
    return Row(instance.set, instance.name, len(instance.buffers),
               "" if instance.capacity is None else str(instance.capacity), status,
               int(result.height), int(bound), round(gap, 4), round(seconds, 3),
               "" if instance.set != "minimalloc" else
               str(MINIMALLOC_SECONDS.get(instance.name, "")), here_s, here)


def rows(which: str, time_limit: float, method: str = "exact", workers: int | None = None,
         folder: Path = CHALLENGING, minimalloc: str | None = None) -> Iterator[Row]:
    for instance in instances(which, folder):
        yield run(instance, time_limit, method, workers, minimalloc)


COLUMNS = ("set", "instance", "buffers", "capacity", "status", "height", "bound", "gap_pct",
           "seconds", "minimalloc_s", "minimalloc_here_s", "minimalloc_here")


def text_line(row: Row | None) -> str:
    """One aligned line of the printed table (the header for None)."""
    values = COLUMNS if row is None else [str(v) for v in asdict(row).values()]
    widths = (10, 22, 7, 9, 10, 11, 11, 8, 8, 12, 17, 15)
    return " ".join(v.ljust(w) if k < 2 or k == 4 else v.rjust(w)
                    for k, (v, w) in enumerate(zip(values, widths)))


def write_results(folder: Path, table: Sequence[Row], command: str, time_limit: float) -> None:
    """`pack-bench.csv` (the rows) and `pack-bench.md` (the same as a Markdown table, with
    the command and the machine it ran on) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow(asdict(row))
    with atomic_write(folder / "pack-bench.csv", "results file", newline="") as out:
        out.write(buf.getvalue())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{os.cpu_count()} cores, load average {load:.1f} when it ended; time limit "
             f"{time_limit:g} s per instance. `seconds` is memplace's wall time in the process "
             "(reading the file excluded); `minimalloc_s` is MiniMalloc's published time; "
             "`minimalloc_here_s` and `minimalloc_here` are MiniMalloc run beside it on this "
             "machine (`--minimalloc BINARY`; its own solve time, its packing re-checked by "
             "memplace), blank when not run.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in table:
        lines.append("| " + " | ".join(str(v) for v in asdict(row).values()) + " |")
    with atomic_write(folder / "pack-bench.md", "results file") as out:
        out.write("\n".join(lines) + "\n")
