"""Parameter specs: what a solver (or any registered item) accepts, checked in one place.

A spec is a `Param`: default, type, range or choices, and a one-line doc. `check_params`
overlays given values on the defaults, converts strings (from the command line or a
TOML plan) to the declared type and checks every value, raising `ParameterError`
naming the owner, the parameter and the allowed values. `solve()`, `memplace solve`
and plan loading all go through it, so a bad value fails before anything runs.
A bound may name another parameter ("population", "population-1") for the few
ranges that depend on one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from memplace.model.core.errors import ParameterError

Bound = float | int | str | None
_TYPES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Param:
    """One parameter: `default` (None allowed only when the default is None), `type`
    (bool, int, float or str; inferred from the default when omitted), inclusive
    bounds `low`/`high` (numbers, or the name of another parameter with an optional
    integer offset), allowed `choices`, and a one-line `doc`."""

    default: Any
    type: type | None = None
    low: Bound = None
    high: Bound = None
    choices: tuple[Any, ...] | None = None
    doc: str = ""

    @property
    def kind(self) -> type:
        if self.type is not None:
            return self.type
        if self.default is None:
            return float
        return type(self.default)

    @property
    def nullable(self) -> bool:
        return self.default is None

    def describe(self) -> str:
        """`name=default`-style summary of the allowed values: `int in [1, inf]`."""
        kind = self.kind.__name__
        if self.choices is not None:
            allowed = f"one of {', '.join(map(str, self.choices))}"
        elif self.low is not None or self.high is not None:
            allowed = f"in {_interval(self.low, self.high)}"
        else:
            allowed = ""
        none = " or none" if self.nullable else ""
        return " ".join(part for part in (kind, allowed) if part) + none


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
    kind = spec.kind
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if spec.nullable and text == "none":
            return None
        try:
            if kind is bool:
                if text not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return text in ("true", "1", "yes")
            return kind(value)
        except ValueError:
            raise ParameterError(f"{owner}: parameter {key!r} cannot be {value!r} "
                                 f"(expected {kind.__name__})") from None
    if value is None:
        if spec.nullable:
            return None
        raise ParameterError(f"{owner}: parameter {key!r} cannot be none")
    if kind is bool:
        if not isinstance(value, bool):
            raise ParameterError(f"{owner}: parameter {key!r} must be true or false, got {value!r}")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"{owner}: parameter {key!r} must be {_TYPES[kind]}, got {value!r}")
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ParameterError(f"{owner}: parameter {key!r} must be an integer, got {value!r}")
            return int(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ParameterError(f"{owner}: parameter {key!r} must be finite, got {value!r}")
        return value  # an int for a float parameter stays as given (run keys record it so)
    if kind is str and not isinstance(value, str):
        raise ParameterError(f"{owner}: parameter {key!r} must be a string, got {value!r}")
    return value


def check_params(owner: str, specs: Mapping[str, Param], given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid by `given`, converted and checked; raises ParameterError naming
    `owner` (e.g. "solver 'sa'"), the parameter and what is allowed."""
    for key in given:
        if key not in specs:
            known = ", ".join(specs) or "none"
            raise ParameterError(f"{owner} has no parameter {key!r} (parameters: {known})")
    values = {key: (_convert(owner, key, given[key], spec) if key in given else spec.default)
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
            raise ParameterError(f"{owner}: parameter {key!r}={value!r} is outside "
                                 f"{_interval(spec.low, spec.high)}"
                                 + (f" = {_interval(low, high)}" if isinstance(spec.low, str)
                                    or isinstance(spec.high, str) else ""))
    return values
