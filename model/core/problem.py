"""The seam between the problem-neutral core and each problem (static placement, residency).

A problem says what its instances and solutions are; the search context, `solve()`,
the benchmark harness and the CLI hold them as opaque objects and ask the problem
to evaluate, repair, finish, validate and record them. Each problem registers one
object implementing `Problem` in `PROBLEMS` from its module `<package>/problem.py`
(the registry imports those of every package beside core on first lookup).
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from memplace.model.core.registry import Registry


@runtime_checkable
class Problem(Protocol):
    """What the core needs from a problem. Latency (seconds, lower is better) is every
    problem's objective."""

    name: str
    # Roles -> a solver of this problem: "slowest", the reference of spec section 4, and
    # "baseline", the default a user would otherwise get (static: the compiler-style
    # placement `compiler`; residency: XLA's memory-space assignment `msa`). Speedups
    # in tables and `memplace solve` are given against both, naming the solver.
    baselines: Mapping[str, str]

    def load(self, source: Any) -> Any:
        """An instance from a file path or a parsed dict, every rule checked."""

    def fingerprint(self, instance: Any) -> str:
        """sha256 (hex) of the canonical instance file: what makes a run reproducible."""

    def make_solution(self, *parts: Any, **named: Any) -> Any:
        """A solution from what a solver offers (`ctx.offer(*parts, **named)`), copied."""

    def evaluate(self, instance: Any, solution: Any) -> float:
        """The latency of one solution."""

    def evaluate_batch(self, instance: Any, solutions: Sequence[Any]) -> Sequence[float]:
        """The latency of many solutions at once."""

    def validate(self, instance: Any, solution: Any) -> list[str]:
        """Every broken rule of a solution, one message each; [] = valid."""

    def repair(self, instance: Any, solution: Any, packer: Any = None) -> Any:
        """A valid solution derived canonically from any solution."""

    def fallback(self, instance: Any) -> Any:
        """A solution that is always valid (what solve() returns when nothing was found)."""

    def default_packer(self, time_limit: float | None) -> Any:
        """The repair option solve() passes to solvers and `finish` (None: canonical)."""

    def finish(self, instance: Any, solution: Any, packer: Any,
               notes: dict[str, Any]) -> tuple[Any, list[str], bool]:
        """The final solution of a solve (completed where it is not, e.g. offsets), its
        remaining errors, and whether it had to change (an optimal claim is dropped)."""

    def solution_file(self, result: Any) -> Any:
        """The solution file object of a `Result` (with `.write(path, instance)`)."""

    def to_record(self, instance: Any, solution: Any) -> dict[str, Any]:
        """The JSON fields of a solution in a runs-file record."""

    def from_record(self, instance: Any, record: Mapping[str, Any]) -> Any:
        """The solution of a record, with its claims (raises SolutionError)."""

    def check_record(self, instance: Any, record: Mapping[str, Any]) -> list[str]:
        """Why a stored result does not hold (unreadable, invalid, latency claim off)."""


def _load_problems() -> None:
    model = sys.modules[__name__.rsplit(".", 2)[0]]  # the package holding core
    for info in pkgutil.iter_modules(model.__path__):
        if info.ispkg and info.name != "core":
            spec = importlib.util.find_spec(f"{model.__name__}.{info.name}.problem")
            if spec is not None:
                importlib.import_module(spec.name)


PROBLEMS: Registry[Problem] = Registry("problem", loader=_load_problems)


def problem(name: str | Problem) -> Problem:
    """The registered problem of a name (a Problem object is returned as it is)."""
    return name if not isinstance(name, str) else PROBLEMS.get(name)
