"""A boxed LP and the builder the residency relaxations fill.

`BoxLP` is `min cost'x` over `rlo <= A x <= rhi`, `lo <= x <= hi`, A as row, column, value
triplets: the form `lp_tree` branches on and weak duality checks, handed to HiGHS by
`highs_lp`. `Rows` builds one a column and a row at a time (the capped relaxation, the
delivery LP, the access LP).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memplace.solvers.highs import column_lp

INF = math.inf
# a row to append: its columns, their values, its lower and upper sides
AddedRow = tuple[list[int], list[float], float, float]


@dataclass
class BoxLP:
    """min cost'x over rlo <= A x <= rhi, lo <= x <= hi, A as row, column, value triplets.
    `scale` turns its objective into seconds; `integer` marks the columns its model made
    binary (None: not recorded)."""

    cost: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    rlo: np.ndarray
    rhi: np.ndarray
    r: np.ndarray
    c: np.ndarray
    v: np.ndarray
    scale: float = 1.0
    integer: np.ndarray | None = None

    def with_rows(self, rows: "list[AddedRow]") -> "BoxLP":
        """The LP with `rows` (columns, values, lower, upper) appended in order."""
        n_rows = self.rlo.size
        r = [self.r] + [np.full(len(cols), n_rows + q, np.int64) for q, (cols, _, _, _) in enumerate(rows)]
        c = [self.c] + [np.asarray(cols, np.int64) for cols, _, _, _ in rows]
        v = [self.v] + [np.asarray(vals, np.float64) for _, vals, _, _ in rows]
        rlo = np.concatenate([self.rlo, np.asarray([lo for _, _, lo, _ in rows], np.float64)])
        rhi = np.concatenate([self.rhi, np.asarray([hi for _, _, _, hi in rows], np.float64)])
        return replace(self, rlo=rlo, rhi=rhi, r=np.concatenate(r), c=np.concatenate(c),
                       v=np.concatenate(v))

    def highs_lp(self, integral: bool = False) -> Any:
        """The LP as a `highspy.HighsLp` (column-wise, the entries of a column by row;
        integrality dropped unless `integral`, which keeps `integer`'s columns integer)."""
        order = np.lexsort((self.r, self.c))
        start = np.zeros(self.cost.size + 1, np.int64)
        np.cumsum(np.bincount(self.c, minlength=self.cost.size), out=start[1:])
        return column_lp(self.cost, self.lo, self.hi, self.rlo, self.rhi, start, self.r[order],
                         self.v[order], self.integer, relax=not integral)


class Rows:
    """A sparse LP built column by column and row by row (coordinate lists)."""

    def __init__(self) -> None:
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []
        self.rlo: list[float] = []
        self.rhi: list[float] = []

    def col(self, lo: float = 0.0, hi: float = 1.0, cost: float = 0.0, integer: bool = False) -> int:
        """A new column; its index."""
        self.lo.append(lo)
        self.hi.append(hi)
        self.cost.append(cost)
        self.integer.append(integer)
        return len(self.lo) - 1

    def row(self, terms: list[tuple[int, float]], lo: float = -INF, hi: float = INF) -> int:
        """A new row `lo <= sum(value * x[column] for column, value in terms) <= hi`; its index."""
        n = len(self.rlo)
        self.r += [n] * len(terms)
        self.c += [col for col, _ in terms]
        self.v += [val for _, val in terms]
        self.rlo.append(lo)
        self.rhi.append(hi)
        return n

    def arrays(self, scale: float = 1.0) -> BoxLP:
        """The LP as arrays, its objective in units of `scale` seconds."""
        return BoxLP(np.asarray(self.cost, np.float64), np.asarray(self.lo, np.float64),
                     np.asarray(self.hi, np.float64), np.asarray(self.rlo, np.float64),
                     np.asarray(self.rhi, np.float64), np.asarray(self.r, np.int64),
                     np.asarray(self.c, np.int64), np.asarray(self.v, np.float64), scale,
                     np.asarray(self.integer, bool))
