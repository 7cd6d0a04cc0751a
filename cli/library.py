"""`memplace lib list|show|verify|improve|add|score|submit|site`: the benchmark library memplace-lib."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from memplace.model.core.bound_models import (CEILING_MODELS, LP_MODELS, ON_REQUEST_MODELS,
                                              RESIDENCY_LP_MODELS)
from memplace.model.core.errors import MemplaceError

LIB_OPTION = click.option("--lib", "version", default=None,
                          help="library version (memplace-lib/N) or folder "
                               "[default: the newest version in the package]")


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
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="also write the table (Markdown) to this file")
def list_command(version: str, problem: str | None, split: str, out_file: str | None) -> None:
    """Every entry: default, best known, bound, gap and status."""
    from memplace.bench.library.tables import list_rows, markdown
    lib = _read(version)
    rows = [r for r in list_rows(lib) if (problem is None or r["problem"] == problem)
            and (split == "all" or r["split"] == split)]
    text = markdown(rows)
    if problem in (None, "residency"):
        from memplace.bench.library.tables import target_text
        text += "\n" + target_text(lib)
    if lib.dropped and problem is None:
        text += (f"\n{len(lib.dropped)} pairs left out (every solver ties with the default): "
                 + "; ".join(f"{d['id']} ({d['reason']})" for d in lib.dropped) + "\n")
    click.echo(f"{lib.name}{' (frozen)' if lib.manifest.get('frozen') else ''}: {len(rows)} entries")
    click.echo(text, nl=False)
    if out_file:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(text, encoding="utf-8")


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
    from memplace.bench.library.tables import target_text
    click.echo(target_text(lib), nl=False)
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
@click.option("--solver", "solvers", multiple=True,
              help="solver to run (repeatable; default: each problem's improvers, "
                   "static milp and sa, residency bound, sa and multistart, packing "
                   "minimize)")
@click.option("--min-gap", type=float, default=None,
              help="only entries whose gap to the best bound is above this (percent)")
@click.option("--no-certify", is_flag=True, help="skip refreshing the closed-form and LP-dual bounds")
@click.option("--certify-only", is_flag=True, help="only refresh the closed-form and LP-dual bounds")
@click.option("--lp-model", "lp_models", multiple=True,
              type=click.Choice(LP_MODELS),
              help="LP models the refresh solves (repeatable; default: each problem's; "
                   "residency-delivery-tree, residency-relaxation-tree and "
                   "residency-delivery-cover-tree, branch-and-bound trees over the delivery "
                   "relaxation, over the relaxation with start binaries and over the delivery "
                   "relaxation with capacity cover cuts, and residency-rotation, the rotation "
                   "bound of weights the fast levels cannot all hold, and "
                   "residency-delivery-step-cover, the delivery relaxation with per-step "
                   "covers, and residency-delivery-step-cover-tree, a tree over it, and "
                   "residency-rotation-levels, the rotation bound over every home and "
                   "fastest level of those weights, and residency-delivery-units-tree, a tree "
                   "over the delivery relaxation charging started copies whole, and "
                   "residency-delivery-start-tree, the step-cover LP with start columns for a "
                   "few large tensors and a tree on them, and residency-slot-tree, a tree over "
                   "the DRAM channel's slots (copies need their size free while they move), "
                   "only when named, with --time-limit)")
@click.option("--from-best", is_flag=True,
              help="solvers that take a start solution (residency multistart) start from the "
                   "entry's best known as well; its sha256 is in the provenance")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="solver parameter, as 'memplace solve' takes it (repeatable): every solver "
                   "that runs must accept it (e.g. --solver multistart --param start=FILE)")
@click.option("--resume", is_flag=True,
              help="with --lp-model residency-relaxation-tree: grow the tree the entry's "
                   "certificate stores further (its ceiling and LP kept) instead of a new one, "
                   "so the budgets of several runs add up; an entry with none grows a new tree; "
                   "the stored certificate's sha256 is in the provenance")
@click.option("--until-gap", type=click.FloatRange(0, 100, min_open=True), default=None,
              metavar="PERCENT",
              help="then, on the residency entries whose certified gap is still above PERCENT, "
                   "climb a ladder one rung at a time until each is within: the step-cover "
                   "LP (at least 60 s), then the bound MILP (`bound`), then multistart from "
                   "the best known, then the same with weight streaming, then the relaxation "
                   "tree, then the step-cover tree, then the units tree "
                   "(each of these at least 120 s); entries whose certified gap is within "
                   "PERCENT already are left alone")
def improve_command(version: str, time_limit: float, entries: tuple[str, ...], problem: str | None,
                    max_ops: int | None, seeds: int, scheduler: str | None,
                    solvers: tuple[str, ...], min_gap: float | None, no_certify: bool,
                    certify_only: bool, lp_models: tuple[str, ...], from_best: bool,
                    params: tuple[str, ...], resume: bool, until_gap: float | None) -> None:
    """Run the solvers with a budget and record better solutions and bounds with provenance."""
    from memplace.bench.library.improve import IMPROVERS, climb, climb_text, improve
    from memplace.cli.solve import parse_params
    given = parse_params(params)
    if time_limit <= 0:
        raise MemplaceError(f"--time-limit must be > 0 seconds, got {time_limit}")
    lib = _read(version)
    chosen = [lib.entry(e) for e in entries] if entries else list(lib.entries)
    chosen = [e for e in chosen if (problem is None or e.problem == problem)
              and (max_ops is None or e.ops <= max_ops)
              and (min_gap is None or e.gap is None or 100 * e.gap > min_gap)
              and (until_gap is None or e.certified_gap is None or 100 * e.certified_gap > until_gap)]
    if certify_only and (no_certify or solvers or given):
        raise MemplaceError("--certify-only runs no solver: give none of --solver, --param "
                            "and --no-certify")
    if until_gap is not None and (certify_only or no_certify):
        raise MemplaceError("--until-gap runs solvers and grows certificates: give neither "
                            "--certify-only nor --no-certify")
    per_problem = ({p: () for p in IMPROVERS} if certify_only else
                   {p: tuple(solvers) for p in IMPROVERS} if solvers else None)
    found = improve(lib, time_limit, chosen, scheduler, seeds, echo=click.echo,
                    solvers=per_problem, certify=not no_certify, models=lp_models or None,
                    from_best=from_best, params=given, resume=resume)
    if until_gap is not None:
        found += climb(lib, time_limit, chosen, until_gap / 100, scheduler, echo=click.echo)
        click.echo(climb_text(chosen, until_gap / 100))
    click.echo(f"{found} improvements recorded in {lib.folder}")


@lib_group.command("bounds")
@LIB_OPTION
@click.option("--time-limit", type=float, default=400.0, show_default=True,
              help="seconds per certificate LP task")
@click.option("--entry", "entries", multiple=True, help="entry id or instance name (repeatable)")
@click.option("--max-ops", type=int, default=None, help="only entries of at most this many ops")
@click.option("--min-gap", type=float, default=None,
              help="only entries whose certified gap is above this (percent)")
@click.option("--lp-model", "lp_models", multiple=True,
              type=click.Choice(RESIDENCY_LP_MODELS),
              help="LP models to solve (repeatable; default: those whose ceiling is the best "
                   "known, residency-access, residency-relaxation-capped and residency-delivery)")
@click.option("--certificates", type=click.Path(file_okay=False), default=None,
              help="write the new certificates (gzipped JSON) into this folder")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="also write the table (Markdown) to this file")
def bounds_command(version: str, time_limit: float, entries: tuple[str, ...], max_ops: int | None,
                   min_gap: float | None, lp_models: tuple[str, ...], certificates: str | None,
                   out_file: str | None) -> None:
    """Solve the certificate LPs of residency entries again and print each entry's
    certified bound and gap before and after; the library is not written."""
    from memplace.bench.library.rebound import rebound
    from memplace.bench.library.tables import markdown
    if time_limit <= 0:
        raise MemplaceError(f"--time-limit must be > 0 seconds, got {time_limit}")
    lib = _read(version)
    chosen = [lib.entry(e) for e in entries] if entries else list(lib.entries)
    chosen = [e for e in chosen if e.problem == "residency"
              and (max_ops is None or e.ops <= max_ops)
              and (min_gap is None or e.certified_gap is None or 100 * e.certified_gap > min_gap)]
    chosen.sort(key=lambda e: e.ops)  # the quick ones first: the table is written after each
    command = "memplace lib bounds " + " ".join(sys.argv[3:])

    def write(rows: list) -> None:  # rewritten after each entry, as memplace gap --table is
        if out_file:
            Path(out_file).parent.mkdir(parents=True, exist_ok=True)
            Path(out_file).write_text(f"{lib.name}, '{command}':\n\n" + markdown(rows), encoding="utf-8")

    default = [m for m in CEILING_MODELS if m not in ON_REQUEST_MODELS["residency"]]  # trees: named
    rows = rebound(lib, chosen, time_limit, lp_models or default,
                   Path(certificates) if certificates else None, echo=click.echo, on_row=write)
    click.echo(markdown(rows), nl=False)


@lib_group.command("add")
@LIB_OPTION
@click.argument("instances", nargs=-1, required=True)
@click.option("--problem", "problems", multiple=True, type=click.Choice(["static", "residency"]),
              help="problem (repeatable; default: both)")
def add_command(version: str, instances: tuple[str, ...], problems: tuple[str, ...]) -> None:
    """Add instances (catalog names or files) to an unfrozen library version, or to a
    library of your own: --lib FOLDER starts one there (memplace-lib/0, never one of the
    package's versions) when FOLDER holds none."""
    from memplace.bench.library.improve import add_instance
    from memplace.instances import load
    from memplace.instances.library import MANIFEST, USER_VERSION, names_folder
    starting = names_folder(version) and not (Path(version) / MANIFEST).exists()
    lib = None if starting else _read(version)
    if lib is not None and lib.manifest.get("frozen"):
        raise MemplaceError(f"{lib.name} is frozen: add to a new version")
    for source in instances:  # each loads before anything is written: a bad one adds nothing
        load(source)
    if lib is None:
        from memplace.bench.library.store import create
        create(USER_VERSION, "a library of the user's own, started by 'memplace lib add'", Path(version))
        click.echo(f"started a library of your own at {version} (memplace-lib/{USER_VERSION}, unfrozen)")
        lib = _read(version)
    from memplace.bench.library.tables import added_text
    for source in instances:
        for e in add_instance(lib, source, problems or ("static", "residency")):
            click.echo(added_text(e))


@lib_group.command("score")
@LIB_OPTION
@click.argument("solutions", metavar="SOLUTIONS_DIR|RUNS", type=click.Path())
@click.option("--split", type=click.Choice(["train", "test", "all"]), default="all", show_default=True)
@click.option("--problem", "problems", multiple=True,
              type=click.Choice(["static", "residency", "packing"]),
              help="problem (repeatable; default: those the folder has solutions for)")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="also write the table (Markdown) to this file")
@click.option("--submissions", "submissions_dir", type=click.Path(file_okay=False), default=None,
              help="RUNS: keep each solver's solution files here [default: a temporary folder]")
def score_command(version: str | None, solutions: str, split: str, problems: tuple[str, ...],
                  out_file: str | None, submissions_dir: str | None) -> None:
    """Validate the solution files in SOLUTIONS_DIR against the library and print the score
    table: speedup over the default, gap to the best known and to the bound.

    Given a runs file (RUNS, a `memplace bench` runs.jsonl) instead, each solver's best run
    per library entry becomes a submission scored the same way, with the library's best
    known as the reference line (--split and --problem do not apply: the runs choose)."""
    from memplace.bench.library.runs import better_than_best_known
    lib = _read(version)
    better: list[str] = []
    if Path(solutions).is_file():
        text = _score_runs(lib, version or lib.name, solutions, out_file, submissions_dir, better)
    else:
        from memplace.bench.library.score import score, table
        scores = score(lib, solutions, split, problems or None)
        if not problems:  # only the problems the folder answers
            answered = {s.entry.problem for s in scores if s.file}
            scores = [s for s in scores if s.entry.problem in answered]
        text = table(scores)
        better = better_than_best_known({"submission": scores})
    click.echo(text, nl=False)
    if out_file:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(text, encoding="utf-8")
    if better:  # on the terminal only, not in the table's file
        them = "it" if len(better) == 1 else "them"
        how = (f"{lib.name} is frozen: a new version or a library of your own takes {them}"
               if lib.manifest.get("frozen") else
               f"`memplace lib submit --lib {version or lib.name} {solutions}` records {them}")
        click.echo(f"\nbetter than the best known on {len(better)} "
                   f"entr{'y' if len(better) == 1 else 'ies'} ({', '.join(better)}): {how}")


def _score_runs(lib, named: str, runs: str, out_file: str | None,
                submissions_dir: str | None, better: list[str]) -> str:
    """`named`: the library as the user named it (a folder of their own is its path, its
    name inside being memplace-lib/0), so that the file's command reruns."""
    import tempfile
    from memplace.bench.library.runs import report
    from memplace.bench.store import read_runs
    command = (f"memplace lib score --lib {named} {runs}"
               + (f" --out {out_file}" if out_file else ""))
    records = read_runs(runs)
    if submissions_dir:
        return report(lib, records, Path(submissions_dir), command, echo=click.echo, better=better)
    with tempfile.TemporaryDirectory() as tmp:
        return report(lib, records, Path(tmp), command, echo=click.echo, better=better)


@lib_group.command("submit")
@LIB_OPTION
@click.argument("solutions", nargs=-1, required=True, metavar="FILE|FOLDER...|RUNS")
def submit_command(version: str | None, solutions: tuple[str, ...]) -> None:
    """Record solution files found elsewhere as best knowns, like a MIPLIB update: each is
    matched to its entry as `score` matches it, validated and re-measured here, and the best
    per entry is kept if it beats the best known, with the solver and seed the file names and
    its sha256 as provenance. An invalid file records nothing (exit status 2, naming it);
    a frozen version takes no submission (submit to a library of your own).

    Given a runs file (RUNS, a `memplace bench` runs.jsonl) instead, every solver's best
    valid run per entry is submitted the same way."""
    from memplace.bench.library.submit import submit, submit_runs
    lib = _read(version)
    if len(solutions) == 1 and solutions[0].endswith(".jsonl") and Path(solutions[0]).is_file():
        lines = submit_runs(lib, solutions[0])
    else:
        lines = submit(lib, solutions)
    for line in lines:
        click.echo(line)


@lib_group.command("leaderboard")
@LIB_OPTION
@click.option("--time-limit", type=float, default=10.0, show_default=True,
              help="seconds per solver run")
@click.option("--split", type=click.Choice(["train", "test", "all"]), default="test", show_default=True)
@click.option("--problem", "problems", multiple=True, type=click.Choice(["static", "residency", "packing"]),
              help="problem (repeatable; default: static and residency)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/library",
              show_default=True)
@click.option("--rescore", is_flag=True,
              help="run nothing: score the submissions already in --out again (against a "
                   "newer library version's best knowns and bounds); --time-limit then says "
                   "what limit they were run with")
def leaderboard_command(version: str, time_limit: float, split: str, problems: tuple[str, ...],
                        out_dir: str, rescore: bool) -> None:
    """memplace's solvers as submissions (one folder of solution files each), scored by
    'memplace lib score', with the library's best known as the reference line."""
    from memplace.bench.library.leaderboard import leaderboard
    if time_limit <= 0:
        raise MemplaceError(f"--time-limit must be > 0 seconds, got {time_limit}")
    lib = _read(version)
    out = Path(out_dir)
    text = leaderboard(lib, out, time_limit, split, problems or ("static", "residency"),
                       echo=click.echo, run=not rescore)
    command = (f"memplace lib leaderboard --lib {version or lib.name} --time-limit {time_limit:g} --split {split}"
               + "".join(f" --problem {p}" for p in problems) + f" --out {out_dir}")
    made = "solution files are in `submissions/SOLVER/`"
    if rescore:
        previous = out / "leaderboard.md"
        runs = re.findall(r"`(memplace lib leaderboard [^`]*)`",
                          previous.read_text(encoding="utf-8") if previous.is_file() else "")
        first = next((c for c in runs if not c.endswith("--rescore")), "an earlier run")
        command += " --rescore"
        made = f"solution files, written by `{first}`, are in `submissions/SOLVER/`"
    (out / "leaderboard.md").write_text(
        f"# {lib.name} leaderboard ({split} split)\n\nWritten by `{command}`: every solver's "
        f"{made}, scored by `memplace lib score`; "
        f"{time_limit:g} s per run on a shared 2-core machine.\n\n" + text, encoding="utf-8")
    click.echo(text, nl=False)
    click.echo(f"wrote {out / 'leaderboard.md'}")


@lib_group.command("site")
@LIB_OPTION
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), required=True)
def site_command(version: str, out_dir: str) -> None:
    """Write the library as a static HTML site (offline): a sortable table of every entry,
    a page per entry with its memory over time, links to every file."""
    from memplace.bench.library.site import write_site
    index = write_site(_read(version), out_dir)
    click.echo(f"wrote {index}")


@lib_group.command("drop-ties")
@LIB_OPTION
def drop_ties_command(version: str) -> None:
    """Leave out the entries whose default is proven optimal (every solver ties with it),
    recording the reason in the manifest."""
    from memplace.bench.library.improve import drop_ties
    for line in drop_ties(_read(version)):
        click.echo(line)


@lib_group.command("freeze")
@LIB_OPTION
def freeze_command(version: str) -> None:
    """Mark a version frozen and print its content hash (pin it in
    memplace.instances.library.FROZEN: a test then fails if any file changes)."""
    from memplace.bench.library.store import freeze
    from memplace.instances.library import content_hash
    lib = _read(version)
    freeze(lib)
    click.echo(f"{lib.name} frozen; content hash {content_hash(lib.folder)}")


@lib_group.command("build")
@click.argument("version", type=int)
def build_command(version: int) -> None:
    """Create library VERSION with its instances, defaults and cheap bounds (or add what is
    missing to an unfrozen one); `improve` then searches."""
    from memplace.bench.library import contents, store
    from memplace.instances.library import MANIFEST, folder_of, read_library
    if version not in contents.BUILDERS:
        raise MemplaceError(f"no contents defined for version {version} (bench/library/contents.py "
                            f"defines {', '.join(map(str, contents.BUILDERS))})")
    lib = (read_library(version) if (folder_of(version) / MANIFEST).is_file()
           else store.create(version, contents.DESCRIPTIONS[version]))
    if lib.manifest.get("frozen"):
        raise MemplaceError(f"{lib.name} is frozen")
    contents.BUILDERS[version](lib, click.echo)
