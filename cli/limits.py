"""`memplace limits`: does every solver stop at its time limit? Wall time against the limit."""
from __future__ import annotations

import json
from pathlib import Path

import click

from memplace.cli.values import SECONDS

PROGRAMS = "synth-1000@nnpi,synth-10000@nnpi,zoo/tinyllama-prefill@nnpi"


@click.command("limits")
@click.option("--programs", default=PROGRAMS, show_default=True,
              help="instance names or files, comma-separated")
@click.option("--time-limit", type=SECONDS, default=10.0, show_default=True,
              help="seconds, every run's limit")
@click.option("--problem", "problems", type=click.Choice(["static", "residency"]), multiple=True,
              help="only this problem's solvers (repeatable) [default: both]")
@click.option("--solver", "solvers", multiple=True, help="only this solver (repeatable) [default: all]")
@click.option("--gap-time-limit", type=SECONDS, default=30.0, show_default=True,
              help="seconds of each `memplace gap` run (a command: start-up, loading the "
                   "program and the kernels count, 5-15 s on a loaded machine)")
@click.option("--gap/--no-gap", default=True, show_default=True,
              help="also run `memplace gap` on each program, as a command")
@click.option("--runs", "runs_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="check a runs file instead (a plan run by `memplace bench`): each run's "
                   "recorded wall time against its time limit; nothing is run")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="write table.md and rows.json into this folder")
def limits_command(programs: str, time_limit: float, problems: tuple[str, ...],
                   solvers: tuple[str, ...], gap_time_limit: float, gap: bool,
                   runs_file: str | None, out: str | None) -> None:
    """Run every built-in solver on each program at --time-limit (and `memplace gap` at
    --gap-time-limit) and print each run's wall time against its limit: until solve()
    returned and until the solver's thread ended. With --runs, the runs of a plan instead.
    Exit status 1 if a run overran its limit by more than 5 s."""
    import os

    from memplace.bench.limits import as_dicts, record_rows, sweep, table
    names = [n.strip() for n in programs.split(",") if n.strip()]
    if not names and not runs_file:
        raise click.BadParameter("give at least one program", param_hint="--programs")

    def progress(row) -> None:
        click.echo(f"{row.problem:<9} {row.solver:<16} {row.instance:<28} "
                   f"{row.returned_s:7.2f} s / {row.ended_s:7.2f} s (limit {row.limit:g})"
                   + ("" if row.holds else f"  OVER {row.error}"), err=True)

    if runs_file:
        from memplace.bench.store import read_runs
        rows = record_rows(read_runs(runs_file))
    else:
        rows = sweep(names, time_limit, problems or ("static", "residency"), list(solvers) or None,
                     gap_time_limit if gap else None, progress)
    text = table(rows)
    click.echo(text)
    if out:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()[0]
        command = (f"memplace limits --programs {','.join(names)} --time-limit {time_limit:g}"
                   + "".join(f" --problem {p}" for p in problems)
                   + "".join(f" --solver {s}" for s in solvers)
                   + (f" --gap-time-limit {gap_time_limit:g}" if gap else " --no-gap")
                   + f" --out {out}")
        if runs_file:
            command = f"memplace limits --runs {runs_file} --out {out}"
        (folder / "table.md").write_text(f"Written by `{command}`, load average {load:.1f} at the end.\n\n"
                                         + text)
        (folder / "rows.json").write_text(json.dumps({"command": command, "load": load,
                                                      "rows": as_dicts(rows)}, indent=1) + "\n")
        click.echo(f"wrote {folder / 'table.md'}, {folder / 'rows.json'}")
    if not all(r.holds for r in rows):
        raise SystemExit(1)
