"""The library's leaderboard, computed the way anyone's submission is: each of memplace's
solvers writes one solution file per entry (a submission folder), `score` checks and
scores every folder, and the library's best known solutions are the reference line."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from memplace.bench.library.improve import DEFAULTS, Task, run_task
from memplace.bench.library.score import Score, best_known, score, summary_table
from memplace.bench.library.store import file_stem
from memplace.instances.library import Library
from memplace.model.core.errors import MemplaceError

# memplace's solvers on the board, per problem (the default first).
BOARD = {"static": ("compiler", "sa", "milp"), "residency": ("msa", "sa", "bound", "hybrid"),
         "packing": ("best-heuristic", "minimize")}


def write_submission(lib: Library, solver: str, folder: Path, time_limit: float,
                     split: str, problems: Iterable[str], echo: Callable[[str], None]) -> Path:
    """Solve every entry of the split with one solver; a solution file per entry."""
    folder.mkdir(parents=True, exist_ok=True)
    for e in lib.split(split):
        if e.problem not in problems or solver not in BOARD[e.problem]:
            continue
        limit = None if solver == DEFAULTS[e.problem] else time_limit
        params = {"capacity": e.data["capacity"]} if e.problem == "packing" and e.data.get("capacity") else {}
        out = run_task(Task(e.id, e.problem, str(lib.instance_source(e)), solver, limit, 0, params))
        if out.get("solution") is None:
            echo(f"{solver} on {e.id}: no solution")
            continue
        name = f"{file_stem(e.name)}.csv" if e.problem == "packing" else f"{e.problem}-{file_stem(e.name)}.json"
        (folder / name).write_text(out["solution"], encoding="utf-8")
        echo(f"{solver} on {e.id}: {out['objective']:.6g}")
    return folder


def leaderboard(lib: Library, out: Path, time_limit: float, split: str = "test",
                problems: Iterable[str] = ("static", "residency"),
                echo: Callable[[str], None] = print, run: bool = True) -> str:
    """Run, score and tabulate every board solver; the Markdown table (also written).
    `run=False` scores the submissions already in `out` (a newer library version's best
    knowns and bounds, the same solution files) and runs nothing."""
    problems = tuple(problems)
    named: dict[str, list[Score]] = {}
    for solver in dict.fromkeys(s for p in problems for s in BOARD[p]):
        folder = out / "submissions" / solver
        if run:
            write_submission(lib, solver, folder, time_limit, split, problems, echo)
        elif not folder.is_dir():
            raise MemplaceError(f"no submission of {solver} to score again in {folder}: "
                                "run the leaderboard without --rescore first")
        mine = [s for s in score(lib, folder, split, problems)
                if solver in BOARD[s.entry.problem]]
        named[solver] = mine
    named["best known (reference)"] = best_known(lib, split, problems)
    text = summary_table(named)
    return text
