"""`memplace lib list|show|verify|improve|add|score|site`: the benchmark library memplace-lib."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from memplace.model.core.errors import MemplaceError

LIB_OPTION = click.option("--lib", "version", default="memplace-lib/1", show_default=True,
                          help="library version (memplace-lib/N) or folder")


def _read(version: str):
    from memplace.instances.library import read_library
    return read_library(version)


@click.group("lib")
def lib_group() -> None:
    """memplace-lib: instances with best known solutions and certified bounds."""


@lib_group.command("list")
@LIB_OPTION
@click.option("--problem", type=click.Choice(["static", "residency", "packing"]), default=None)
@click.option("--split", type=click.Choice(["train", "test", "all"]), default="all", show_default=True)
def list_command(version: str, problem: str | None, split: str) -> None:
    """Every entry: default, best known, bound, gap and status."""
    from memplace.bench.library.tables import list_rows, markdown
    lib = _read(version)
    rows = [r for r in list_rows(lib) if (problem is None or r["problem"] == problem)
            and (split == "all" or r["split"] == split)]
    click.echo(f"{lib.name}{' (frozen)' if lib.manifest.get('frozen') else ''}: {len(rows)} entries")
    click.echo(markdown(rows), nl=False)
    if lib.dropped and problem is None:
        click.echo(f"\n{len(lib.dropped)} pairs left out (every solver ties): "
                   + ", ".join(d["id"] for d in lib.dropped))


@lib_group.command("show")
@LIB_OPTION
@click.argument("entry")
def show_command(version: str, entry: str) -> None:
    """One entry in full: files, provenance, every bound and its certificate."""
    from memplace.bench.library.tables import show
    lib = _read(version)
    click.echo(show(lib, lib.entry(entry)), nl=False)


@lib_group.command("verify")
@LIB_OPTION
def verify_command(version: str) -> None:
    """Re-check every stored solution and every bound from its certificate (exit 1 if any fails)."""
    from memplace.bench.library.verify import verify
    from memplace.instances.library import FROZEN
    lib = _read(version)
    began = time.perf_counter()
    reports, problems = verify(lib, FROZEN.get(lib.name))
    failed = [r for r in reports if r.errors]
    for r in reports:
        state = "FAIL" if r.errors else "ok"
        click.echo(f"{state:4} {r.entry.id:<50} {r.entry.status:<14} bounds re-checked "
                   f"{r.checked_bounds}, not cheaply checkable {r.unchecked_bounds} ({r.seconds:.2f} s)")
        for e in r.errors:
            click.echo(f"     {e}")
    for p in problems:
        click.echo(f"FAIL {p}")
    click.echo(f"{lib.name}: {len(reports) - len(failed)}/{len(reports)} entries verified in "
               f"{time.perf_counter() - began:.1f} s")
    if failed or problems:
        sys.exit(1)


@lib_group.command("improve")
@LIB_OPTION
@click.option("--time-limit", type=float, default=20.0, show_default=True,
              help="seconds per solver run")
@click.option("--entry", "entries", multiple=True, help="entry id or instance name (repeatable; "
              "default: every entry not yet optimal)")
@click.option("--problem", type=click.Choice(["static", "residency", "packing"]), default=None)
@click.option("--max-ops", type=int, default=None, help="only entries of at most this many ops")
@click.option("--seeds", type=click.IntRange(1, 100), default=1, show_default=True)
@click.option("--scheduler", default=None, help="Dask scheduler address (default: run here)")
def improve_command(version: str, time_limit: float, entries: tuple[str, ...], problem: str | None,
                    max_ops: int | None, seeds: int, scheduler: str | None) -> None:
    """Run the solvers with a budget and record better solutions and bounds with provenance."""
    from memplace.bench.library.improve import improve
    if time_limit <= 0:
        raise MemplaceError(f"--time-limit must be > 0 seconds, got {time_limit}")
    lib = _read(version)
    chosen = [lib.entry(e) for e in entries] if entries else list(lib.entries)
    chosen = [e for e in chosen if (problem is None or e.problem == problem)
              and (max_ops is None or e.ops <= max_ops)]
    found = improve(lib, time_limit, chosen, scheduler, seeds, echo=click.echo)
    click.echo(f"{found} improvements recorded in {lib.folder}")


@lib_group.command("add")
@LIB_OPTION
@click.argument("instances", nargs=-1, required=True)
@click.option("--problem", "problems", multiple=True, type=click.Choice(["static", "residency"]),
              help="problem (repeatable; default: both)")
def add_command(version: str, instances: tuple[str, ...], problems: tuple[str, ...]) -> None:
    """Add instances (catalog names or files) to an unfrozen library version."""
    from memplace.bench.library.improve import add_instance
    lib = _read(version)
    if lib.manifest.get("frozen"):
        raise MemplaceError(f"{lib.name} is frozen: add to a new version")
    for source in instances:
        for e in add_instance(lib, source, problems or ("static", "residency")):
            click.echo(f"added {e.id} ({e.split}): default {e.default['objective']!r}, "
                       f"bound {e.bound!r}")


COMMANDS = [lib_group]
