"""`memplace envs baselines`: the Gymnasium environments' leaderboard (extra `[gym]`)."""
from __future__ import annotations

from pathlib import Path

import click

from memplace.model.core.errors import MemplaceError
from memplace.model.core.files import write_atomically

ENVS = ("placement", "residency")


@click.group("envs")
def envs_group() -> None:
    """The Gymnasium environments memplace/Placement-v0 and memplace/Residency-v0."""


@envs_group.command("baselines")
@click.option("--env", "envs", multiple=True, type=click.Choice(ENVS),
              help="environment (repeatable; default: both)")
@click.option("--instances", default=None, metavar="A,B,...",
              help="instance names or files, comma-separated (default: the leaderboard set)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--time-limit", type=float, default=10.0, show_default=True,
              help="seconds per instance for the classical solver (milp)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="also write leaderboard.md and leaderboard.csv into this folder")
@click.option("--solvers/--no-solvers", default=True, show_default=True,
              help="also score memplace's best solvers the action space cannot express (residency: "
                   "sa, hybrid, --time-limit each) and the best known of each instance")
@click.option("--lib", "library", default=None,
              help="library whose best known solutions count for the best known "
                   "[default: the newest version in the package]")
def baselines_command(envs: tuple[str, ...], instances: str | None, seed: int, time_limit: float,
                      out_dir: str | None, solvers: bool, library: str | None) -> None:
    """Run a random agent, the greedy defaults and the best classical method through
    each environment and print the leaderboard (episode return and latency per instance),
    with memplace's best solvers and the best known beside them: the bar to beat."""
    try:
        from memplace.envs import leaderboard, to_csv, to_markdown
    except ModuleNotFoundError as exc:
        if exc.name != "gymnasium":
            raise
        raise MemplaceError("the environments need gymnasium: pip install 'memplace[gym]'") from None
    if time_limit <= 0:
        raise MemplaceError(f"--time-limit must be > 0 seconds, got {time_limit}")
    from memplace.instances.library import is_spec, resolve
    if solvers and (library is None or is_spec(library)):
        library = resolve(library)  # named in the page, so it reruns alike
    names = [n.strip() for n in instances.split(",") if n.strip()] if instances else None
    rows = leaderboard(envs or ENVS, names, seed, time_limit, solvers, library)
    markdown = to_markdown(rows)
    click.echo(markdown)
    if out_dir:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        command = " ".join(["memplace envs baselines"]
                           + [f"--env {e}" for e in envs]
                           + ([f"--instances {instances}"] if instances else [])
                           + [f"--seed {seed}", f"--time-limit {time_limit:g}"]
                           + ([] if solvers else ["--no-solvers"])
                           + ([f"--lib {library}"] if solvers else [])
                           + [f"--out {out_dir}"])
        header = (f"# Leaderboard of the Gymnasium environments\n\nWritten by `{command}`: one "
                  "episode per agent and instance, solutions replayed through the environment as "
                  f"actions; milp{', sa and hybrid' if solvers else ''} run {time_limit:g} s per "
                  "instance, so their figures may vary slightly with the machine.\n\n")
        write_atomically(out / "leaderboard.md", header + markdown, "leaderboard")
        write_atomically(out / "leaderboard.csv", to_csv(rows), "leaderboard")
        click.echo(f"wrote {out / 'leaderboard.md'} and {out / 'leaderboard.csv'}")
