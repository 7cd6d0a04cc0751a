"""`memplace explain INSTANCE SOLUTION`: a placement in the model's own words."""
from __future__ import annotations

import click

from memplace.cli.values import count
from memplace.instances import load as load_instance


@click.command("explain")
@click.argument("instance")
@click.argument("solution", type=click.Path(dir_okay=False))
@click.option("--csv", "as_csv", is_flag=True,
              help="one CSV row per home and window instead of the table")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="also draw the timeline of the tensors per level into this PNG (or .svg)")
@click.option("--top", type=count(10**6), default=80, show_default=True,
              help="with --plot: draw the tensors moving the most bytes, this many")
def explain_command(instance: str, solution: str, as_csv: bool, plot: str | None, top: int) -> None:
    """Which tensor went where, and when it moves: for each tensor of INSTANCE, by its own
    name, the level and offset of its home, its live range, its residency windows
    (prefetch at op X, serves ops Y..Z, evict at op U) by op names, and the bytes its ops
    access and its copies move. SOLUTION is a solution file of either problem."""
    from memplace.model.explain import csv_text, explain, text_table
    explanation = explain(load_instance(instance), solution)
    click.echo(csv_text(explanation) if as_csv else text_table(explanation), nl=False)
    if plot:
        from memplace.bench.explain_plot import timeline_plot
        click.echo(f"wrote {timeline_plot(explanation, plot, top)}", err=as_csv)
