"""The value types of command-line options: each checks its range at the edge, so a
bad value is one `error:` line (exit status 2) naming the option, never a traceback
or a run with a NaN, infinite or overflowing value."""
from __future__ import annotations

import math
from typing import Any

import click

from memplace.model.core.reading import MAX_BYTES


class Seconds(click.ParamType):
    """A finite number of seconds in (0, MAX]."""

    name = "seconds"
    MAX = 1e7  # about four months: finite, and a valid interval timer

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not (math.isfinite(seconds) and 0 < seconds <= self.MAX):
            self.fail(f"{value!r} is not a number of seconds in (0, {self.MAX:g}]", param, ctx)
        return seconds


SECONDS = Seconds()
SEED = click.IntRange(0, (1 << 63) - 1)  # NumPy and the kernels take 64-bit seeds
BYTES = click.IntRange(1, MAX_BYTES)  # a capacity: exact in float64, sums fit in int64
JOBS = click.IntRange(1, 1024)


def count(high: int) -> click.IntRange:
    """A positive count up to `high` (what fits in memory and in time)."""
    return click.IntRange(1, high)


def microseconds(seconds: float, decimals: int = 3) -> str:
    """A latency as a person reads it: every command prints latencies in µs (files keep
    the specification's seconds)."""
    return f"{seconds * 1e6:.{decimals}f} µs"
