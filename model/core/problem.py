"""The seam between the problem-neutral core and each problem (static placement, residency).

A problem says what its instances and solutions are; the search context, `solve()`,
the benchmark harness and the CLI only ever hold them as opaque objects and ask the
problem to evaluate, repair, finish, validate and record them. Each problem module
registers one object implementing `Problem` in `PROBLEMS` when it is imported.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from memplace.model.core.registry import Registry


@runtime_checkable
class Problem(Protocol):
    """What the core needs from a problem.

    Solutions are whatever the problem says (a placement with offsets, homes with
    windows...); `make_solution(*parts, **named)` builds one from what a solver
    offers, so `ctx.offer(...)` stays one call for every problem.
    """

    name: str
    # role -> solver name of this problem: "slowest" (the reference everything is
    # valid against) and "compiler" (the default speedups are measured against)
    baselines: Mapping[str, str]

    def load(self, source: Any) -> Any:
        """An instance from a file path or a parsed dict, every rule checked."""

    def fingerprint(self, instance: Any) -> str:
        """sha256 (hex) of the canonical instance file: what makes a run reproducible."""

    def make_solution(self, *parts: Any, **named: Any) -> Any:
        """A solution object from what a solver offers (copies the arrays)."""

    def evaluate(self, instance: Any, solution: Any) -> float:
        """The objective (latency, seconds) of one solution; lower is better."""

    def evaluate_batch(self, instance: Any, solutions: Sequence[Any]) -> Sequence[float]:
        """The objective of many solutions at once."""

    def validate(self, instance: Any, solution: Any) -> list[str]:
        """Every broken rule of a solution (one message each); [] = valid."""

    def repair(self, instance: Any, solution: Any, packer: Any = None) -> Any:
        """A valid solution derived canonically from any solution."""

    def fallback(self, instance: Any) -> Any:
        """A solution that is always valid (returned when a solver found nothing)."""

    def default_packer(self, time_limit: float | None) -> Any:
        """What `repair` uses at the end of a solve (None: the problem's canonical way)."""

    def finish(self, instance: Any, solution: Any, packer: Any,
               notes: dict[str, Any]) -> tuple[Any, list[str]]:
        """The final solution of a solve (made complete, e.g. offsets assigned, if it is
        not), with notes on what was changed, and its remaining errors ([] = valid)."""

    def solution_file(self, result: Any) -> Any:
        """The solution file object of a `Result` (with `.write(path, instance)`)."""

    def to_record(self, instance: Any, solution: Any) -> dict[str, Any]:
        """The JSON-able fields of a solution for a runs file or a solution file."""

    def from_record(self, instance: Any, record: Mapping[str, Any]) -> Any:
        """A solution read back from a record's fields, with its claims (raises SolutionError)."""

    def check_record(self, instance: Any, record: Mapping[str, Any]) -> list[str]:
        """Why a stored result does not hold: unreadable, invalid, or its latency claim
        off (one message each; [] = it holds)."""


def _load_problems() -> None:
    """Import `<package>.problem` of every package beside core (each registers itself)."""
    import importlib
    import importlib.util
    import pkgutil
    import sys
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
