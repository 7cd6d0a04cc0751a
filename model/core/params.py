"""Parameter specs: what a solver (or any registered item) accepts, checked in one place.

`check_params` overlays given values on the defaults, converts strings (from the
command line or a TOML plan) to the declared type and checks every value, raising
`ParameterError` naming the owner, the parameter and what is allowed. `solve()`,
`memplace solve` and plan loading all go through it, so a bad value fails before
anything runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from memplace.model.core.errors import ParameterError

Bound = float | int | str | None


@dataclass(frozen=True)
class Param:
    """One parameter: `default` (None allowed only when the default is None), `type`
    (bool, int, float or str; from the default when omitted), inclusive bounds
    `low`/`high` (a number, or another parameter's name with an optional offset:
    "population-1"), allowed `choices`, and a one-line `doc`."""

    default: Any
    type: type | None = None
    low: Bound = None
    high: Bound = None
    choices: tuple[Any, ...] | None = None
    doc: str = ""

    @property
    def kind(self) -> type:
        return self.type or (float if self.default is None else type(self.default))

    def describe(self) -> str:
        """What is allowed, e.g. `int in [1, inf] or none`."""
        allowed = (f" one of {', '.join(map(str, self.choices))}" if self.choices is not None
                   else f" in {_interval(self.low, self.high)}"
                   if self.low is not None or self.high is not None else "")
        return self.kind.__name__ + allowed + (" or none" if self.default is None else "")


def as_param(spec: Any) -> Param:
    """A `Param`, or a plain default turned into one (type from the default)."""
    return spec if isinstance(spec, Param) else Param(spec)


def _interval(low: Bound, high: Bound) -> str:
    return f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"


def _resolve(bound: Bound, values: Mapping[str, Any]) -> float | None:
    if not isinstance(bound, str):
        return bound
    name, _, offset = bound.partition("-")
    base = values[name.strip()]
    return None if base is None else base - (int(offset) if offset else 0)


def _convert(owner: str, key: str, value: Any, spec: Param) -> Any:
    kind, where = spec.kind, f"{owner}: parameter {key!r}"
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if spec.default is None and text == "none":
            return None
        if kind is bool and text in ("true", "false", "1", "0", "yes", "no"):
            return text in ("true", "1", "yes")
        try:
            if kind is not bool:
                return kind(value)
        except ValueError:
            pass
        raise ParameterError(f"{where} cannot be {value!r} (expected {kind.__name__})")
    if value is None and spec.default is None:
        return None
    if kind is bool and not isinstance(value, bool):
        raise ParameterError(f"{where} must be true or false, got {value!r}")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"{where} must be a number, got {value!r}")
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ParameterError(f"{where} must be an integer, got {value!r}")
            value = int(value)
        if not math.isfinite(value):
            raise ParameterError(f"{where} must be finite, got {value!r}")
    elif kind is str and not isinstance(value, str):
        raise ParameterError(f"{where} must be a string, got {value!r}")
    return value  # an int for a float parameter stays as given (run keys record it so)


def check_params(owner: str, specs: Mapping[str, Param], given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid by `given`, converted and checked; raises ParameterError naming
    `owner` (e.g. "solver 'sa'"), the parameter and what is allowed."""
    unknown = [key for key in given if key not in specs]
    if unknown:
        raise ParameterError(f"{owner} has no parameter {unknown[0]!r} "
                             f"(parameters: {', '.join(specs) or 'none'})")
    values = {key: _convert(owner, key, given[key], spec) if key in given else spec.default
              for key, spec in specs.items()}
    for key, spec in specs.items():
        value = values[key]
        if value is None:
            continue
        if spec.choices is not None and value not in spec.choices:
            raise ParameterError(f"{owner}: parameter {key!r}={value!r} is not one of "
                                 f"{', '.join(map(str, spec.choices))}")
        low, high = _resolve(spec.low, values), _resolve(spec.high, values)
        if (low is not None and value < low) or (high is not None and value > high):
            named = isinstance(spec.low, str) or isinstance(spec.high, str)
            raise ParameterError(f"{owner}: parameter {key!r}={value!r} is outside "
                                 f"{_interval(spec.low, spec.high)}"
                                 + (f" = {_interval(low, high)}" if named else ""))
    return values
