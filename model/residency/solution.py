"""`memplace-solution/2` files (docs/spec.md section 10): homes, windows, copies.

A residency solution is a static placement (the *homes*, with their offsets) plus
a tuple of `Window`s. A `memplace-solution/1` file is read as a residency
solution without windows. Reading checks only the shape of the file (types,
known levels, tensor indices); the rules of section 10 are `validate`'s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memplace.model.core import reading
from memplace.model.core.errors import SolutionError
from memplace.model.core.solution_file import (read_claims, read_placement, solution_dict,
                                               write_solution)
from memplace.model.instance import Instance

FORMAT = "memplace-solution/2"
STATIC_FORMAT = "memplace-solution/1"
NO_OFFSET = -1  # offsets array entry of a tensor (or window) off addressed levels


@dataclass(frozen=True)
class Window:
    """A copy of a whole tensor in a level faster than its home (docs/spec.md section 10).

    `tensor` and `level` are indices; `start <= first <= last` are op indices;
    `offset` is None off addressed levels; `evict` is None or `(issue, due)`.
    A window with `start == first ==` the tensor's producer is *defining* (the
    producer writes it, no copy); one with `start < first` is a *prefetch*.
    """

    tensor: int
    level: int
    start: int
    first: int
    last: int
    offset: int | None = None
    evict: tuple[int, int] | None = None

    @property
    def hold(self) -> int:
        """Last op the window occupies: `last`, or `max(last, due - 1)` with an eviction."""
        return self.last if self.evict is None else max(self.last, self.evict[1] - 1)

    @property
    def is_prefetch(self) -> bool:
        return self.start < self.first

    def to_dict(self, instance: Instance) -> dict[str, Any]:
        return {"tensor": self.tensor, "level": instance.level_names[self.level],
                "start": self.start, "first": self.first, "last": self.last,
                "offset": self.offset,
                "evict": None if self.evict is None else [self.evict[0], self.evict[1]]}


@dataclass
class ResidencySolution:
    """Homes by level index, home offsets (-1 off addressed levels; None when the
    file had none), windows, and the solver's claims (as the static `Solution`)."""

    instance: str
    placement: np.ndarray
    offsets: np.ndarray | None
    windows: tuple[Window, ...] = ()
    latency: float = math.nan
    lower_bound: float | None = None
    status: str = "feasible"
    solver: dict[str, Any] = field(default_factory=dict)
    # As read from a file: which tensors had an integer home offset (None when built in code).
    offsets_given: list[bool] | None = field(default=None, repr=False, compare=False)

    def with_windows(self, windows) -> "ResidencySolution":
        """The same homes with other windows (claims reset: they belong to the old windows)."""
        return replace(self, windows=tuple(windows), latency=math.nan, lower_bound=None)

    # ------------------------------------------------------------------ JSON
    def to_dict(self, instance: Instance) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if self.offsets is not None or instance.has_addressed_levels:
            offsets = self.offsets if self.offsets is not None else np.full(instance.n_tensors, NO_OFFSET)
            fields["offsets"] = [o if (instance.addressed[l] and o >= 0) else None
                                 for o, l in zip(offsets.tolist(), self.placement.tolist())]
        fields["windows"] = [w.to_dict(instance) for w in self.windows]
        return solution_dict(FORMAT, self, instance.level_names, fields)

    def write(self, path: str | Path, instance: Instance) -> None:
        """Write atomically: a crash never leaves a half-written solution behind."""
        write_solution(path, self.to_dict(instance))

    @classmethod
    def from_dict(cls, data: Any, instance: Instance) -> "ResidencySolution":
        """Parse format 2, or format 1 as a solution without windows."""
        if not isinstance(data, dict) or data.get("format") not in (FORMAT, STATIC_FORMAT):
            got = data.get("format") if isinstance(data, dict) else None
            raise SolutionError(f"solution format must be {FORMAT!r} or {STATIC_FORMAT!r}, got {got!r}")
        placement, offsets, given = read_placement(data, instance)
        if data["format"] == STATIC_FORMAT:
            windows: tuple[Window, ...] = ()
        else:
            raw = data.get("windows")
            if not isinstance(raw, list):
                raise SolutionError("'windows' is required in a memplace-solution/2 file "
                                    "(a list, possibly empty)")
            windows = tuple(_window(w, raw_w, instance) for w, raw_w in enumerate(raw))
        c = read_claims(data)  # as in a format-1 file (docs/spec.md section 10)
        return cls(c.instance, placement, offsets, windows, c.latency, c.lower_bound, c.status,
                   c.solver, given)

    @classmethod
    def read(cls, path: str | Path, instance: Instance) -> "ResidencySolution":
        return cls.from_dict(read_json(path), instance)


def read_json(path: str | Path) -> Any:
    """A solution file's JSON, with the errors a user can cause turned into SolutionError
    (the checks every reader shares: missing, folder, huge, not UTF-8, NaN, deep)."""
    return reading.read_json(path, "solution file", SolutionError)


# ---------------------------------------------------------------------- parsing
_is_int = reading.is_int  # a bool is not an integer here


def _window(w: int, raw: Any, instance: Instance) -> Window:
    label = f"window {w}"
    if not isinstance(raw, dict):
        raise SolutionError(f"{label}: must be an object")
    t = raw.get("tensor")
    if not _is_int(t) or not 0 <= t < instance.n_tensors:
        raise SolutionError(f"{label}: tensor {t!r} is not a tensor index (0..{instance.n_tensors - 1})")
    level = raw.get("level")
    if not isinstance(level, str) or level not in instance.level_names:
        raise SolutionError(f"{label} of {instance.tensor_label(t)}: unknown level {level!r}; "
                            f"levels are {instance.level_names}")
    steps = []
    for key in ("start", "first", "last"):
        k = raw.get(key)
        if not _is_int(k) or not 0 <= k < instance.n_ops:
            raise SolutionError(f"{label} of {instance.tensor_label(t)}: {key} {k!r} is not an op "
                                f"index (0..{instance.n_ops - 1})")
        steps.append(k)
    offset = raw.get("offset")
    if offset is not None and (not _is_int(offset) or not 0 <= offset <= reading.MAX_BYTES):
        raise SolutionError(f"{label} of {instance.tensor_label(t)}: offset {reading.shown(offset)} "
                            "is not an integer in 0..2**53 or null")
    evict = raw.get("evict")
    if evict is not None:
        if (not isinstance(evict, list) or len(evict) != 2
                or not all(_is_int(k) and 0 <= k < instance.n_ops for k in evict)):
            raise SolutionError(f"{label} of {instance.tensor_label(t)}: evict {evict!r} is not null "
                                f"or an [issue, due] pair of op indices (0..{instance.n_ops - 1})")
        evict = (evict[0], evict[1])
    return Window(t, instance.level_names.index(level), *steps, offset, evict)
