"""A buffer of the offset-assignment problem, with every field of MiniMalloc's model.

A buffer is alive over the half-open lifespan `[lower, upper)` and needs `size`
bytes at an offset that is a multiple of `alignment`. MiniMalloc's model
(its `minimalloc.h`, `converter.cc` and `validator.cc`) adds three optional
fields, which memplace reads with the same meaning:

- `gaps`: time slots inside the lifespan where the buffer is inactive (it holds
  no memory), or, with a *window* `[wl, wu)`, where it keeps only the bytes
  `[offset + wl, offset + wu)`;
- `offset`: a *pinned* offset the packing must give the buffer;
- `hint`: a suggested offset (MiniMalloc's solver reads and writes it but does
  not use it; memplace tries the hinted offsets first and says whether it kept them).

Two buffers conflict where both are active. MiniMalloc's validator accepts a
pair when one of them lies wholly below the other at every time both are active,
in the bytes each then occupies: with `effective_size(i, j)` the largest
`wu_i(t) - wl_j(t)` over common active times `t` (`size_i` without windows),
`o_i + effective_size(i, j) <= o_j` or `o_j + effective_size(j, i) <= o_i`.
Without gaps this is plain disjointness of `[o, o + size)`.

What MiniMalloc leaves undefined is refused here, naming the buffer: gaps outside
the lifespan, empty or overlapping gaps, and windows outside `[0, size)` or empty.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from memplace.model.core.errors import MemplaceError


@dataclass(frozen=True)
class Gap:
    """A half-open time slot `[lower, upper)` where the buffer is inactive, or, with a
    `window` `(wl, wu)`, occupies only the bytes `[offset + wl, offset + wu)`."""

    lower: int
    upper: int
    window: tuple[int, int] | None = None

    def text(self, inclusive_upper: bool = False) -> str:
        """MiniMalloc's spelling: `lo-hi` or `lo-hi@wl:wu` (hi inclusive under an `end` column)."""
        out = f"{self.lower}-{self.upper - (1 if inclusive_upper else 0)}"
        return out if self.window is None else out + f"@{self.window[0]}:{self.window[1]}"


@dataclass(frozen=True)
class Buffer:
    """A buffer alive over the half-open interval `[lower, upper)` that needs `size` bytes."""

    id: str
    lower: int
    upper: int
    size: int
    alignment: int = 1
    gaps: tuple[Gap, ...] = field(default=())
    offset: int | None = None   # pinned: the packing must put the buffer here
    hint: int | None = None     # suggested: tried first, kept when it packs

    def __post_init__(self) -> None:
        if self.size < 0:
            raise MemplaceError(f"buffer {self.id!r}: size {self.size} is negative")
        if self.upper <= self.lower:
            raise MemplaceError(f"buffer {self.id!r}: lifespan [{self.lower}, {self.upper}) is empty"
                                " (upper must be greater than lower)")
        if self.alignment < 1:
            raise MemplaceError(f"buffer {self.id!r}: alignment {self.alignment} is below 1")
        if self.offset is not None:
            if self.offset < 0:
                raise MemplaceError(f"buffer {self.id!r}: pinned offset {self.offset} is negative")
            if self.offset % self.alignment:
                raise MemplaceError(f"buffer {self.id!r}: pinned offset {self.offset} is not a "
                                    f"multiple of its alignment {self.alignment}")
        if self.hint is not None and self.hint < 0:
            raise MemplaceError(f"buffer {self.id!r}: hint {self.hint} is negative "
                                "(leave it out for no hint)")
        last = self.lower
        for gap in self.gaps:
            where = f"buffer {self.id!r}: gap [{gap.lower}, {gap.upper})"
            if gap.upper <= gap.lower:
                raise MemplaceError(f"{where} is empty")
            if gap.lower < self.lower or gap.upper > self.upper:
                raise MemplaceError(f"{where} is not inside its lifespan [{self.lower}, {self.upper})")
            if gap.lower < last:
                raise MemplaceError(f"{where} overlaps or precedes the gap before it "
                                    "(gaps must be disjoint and in time order)")
            last = gap.upper
            if gap.window is not None:
                wl, wu = gap.window
                if not 0 <= wl < wu <= self.size:
                    raise MemplaceError(f"{where}: window {wl}:{wu} is not a non-empty part "
                                        f"of [0, {self.size})")

    @property
    def pieces(self) -> list[tuple[int, int, int, int]]:
        """The active parts `(t0, t1, wl, wu)`: over `[t0, t1)` the buffer holds
        `[offset + wl, offset + wu)`; in time order, disjoint."""
        out, t = [], self.lower
        for gap in self.gaps:
            if gap.lower > t:
                out.append((t, gap.lower, 0, self.size))
            if gap.window is not None:
                out.append((gap.lower, gap.upper, gap.window[0], gap.window[1]))
            t = gap.upper
        if t < self.upper:
            out.append((t, self.upper, 0, self.size))
        return out

    @property
    def plain(self) -> bool:
        """No gaps and no pin: a rectangle, for the fast packers."""
        return not self.gaps and self.offset is None


def effective_size(a: Buffer, b: Buffer) -> int | None:
    """How far above `a`'s offset `b`'s offset must be for `b` to lie wholly above `a`
    wherever both are active (MiniMalloc's `Buffer::effective_size`); None when they are
    never active at the same time."""
    if a.upper <= b.lower or b.upper <= a.lower:
        return None
    if not a.gaps and not b.gaps:
        return a.size
    best = None
    pa, pb = a.pieces, b.pieces
    i = j = 0
    while i < len(pa) and j < len(pb):
        a0, a1, _, awu = pa[i]
        b0, b1, bwl, _ = pb[j]
        if a0 < b1 and b0 < a1:
            diff = awu - bwl
            if best is None or diff > best:
                best = diff
        if a1 <= b1:
            i += 1
        else:
            j += 1
    return best
