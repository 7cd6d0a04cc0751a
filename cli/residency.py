"""`memplace residency-table`: msa on instances against the static baselines (issue 10's figures)."""
from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import click

from memplace.cli.solve import parse_params
from memplace.model.core.errors import MemplaceError

DEFAULT_OUT = Path("results") / "residency-msa"


@click.command("residency-table")
@click.argument("patterns", nargs=-1)
@click.option("--out", type=click.Path(file_okay=False), default=str(DEFAULT_OUT), show_default=True,
              help="folder of the table and of the static optimum cache")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="msa parameter (repeatable)")
def residency_table_command(patterns: tuple[str, ...], out: str, params: tuple[str, ...]) -> None:
    """Run msa on every committed instance (or those matching PATTERNS) and write the
    table (Markdown, LaTeX, CSV) to --out; exit 1 if an msa solution is invalid or slower
    than the static compiler placement."""
    from memplace.bench.residency_table import residency_rows, residency_table
    from memplace.instances import builtin_names, load
    from memplace.solvers import solver_info
    checked = solver_info("msa", "residency").check(parse_params(params))
    names = builtin_names()
    if patterns:
        chosen = [n for n in names if any(n == p or fnmatch.fnmatchcase(n, p) for p in patterns)]
        if not chosen:
            raise MemplaceError(f"no committed instance matches {' '.join(patterns)}")
        names = chosen
    folder = Path(out)

    def progress(row) -> None:
        click.echo(f"{row.instance:<34} msa {row.msa * 1e6:12.3f} us  compiler "
                   f"{row.compiler * 1e6:12.3f} us  static optimum {row.static_optimum * 1e6:12.3f} us "
                   f"({row.static_status})  windows {row.windows}  {row.msa_s:.2f} s")

    rows = residency_rows([load(n) for n in names], folder, progress, **checked)
    folder.mkdir(parents=True, exist_ok=True)
    table_paths = residency_table(rows).write(folder)
    click.echo(f"wrote {', '.join(str(p) for p in table_paths)}")
    problems = [p for row in rows for p in row.problems()]
    for problem in problems:
        click.echo(f"does not hold: {problem}")
    click.echo(f"{len(rows)} instances: {len(problems)} problems; msa valid and never slower than "
               "compiler" if not problems else f"{len(rows)} instances: {len(problems)} problems")
    if problems:
        sys.exit(1)
