"""The mallocGame of the residency problem: windows chosen one buffer at a time.

mallocGame (Wang et al., 2023) plays memory allocation as a single-player game:
buffers are presented one after another and each move decides where the next
one lives. Here the game is played on memplace's residency problem (spec
sections 9-11), so every finished game is a valid `ResidencySolution` whose
latency is section 11's simulation:

- *Homes* are fixed before the game: by default the static `compiler` placement
  (a valid static solution, so "stay home" everywhere is exactly the compiler's
  latency); any valid static placement may be given instead.
- *Buffers* are the tensors not homed in the fastest level whose accesses would
  save time there, presented in `msa`'s order (XLA's memory boundedness, spec
  section 12: the latency all accesses would save in level 0, over the square
  root of the size, decreasing; ties to the smaller tensor index).
- *Moves* for a buffer: `STAY` (action 0, no window), or one window in a level
  faster than its home covering every use the window can serve, of one of four
  `KINDS`: `defining` (an activation written by its producer straight into the
  window, start = first = producer, last = its last use), or a prefetch whose
  start `msa`'s interval picker (`interval_picker.IntervalPicker`, XLA's
  cost-analysis picker with min/preferred/max overlaps 0.8/1.5/10 copy times)
  proposes for the first use it serves: its `late`st start (at least the min
  overlap), its `preferred` one, or its `earliest` (at most the max overlap).
  The action of (level l, kind j) is `1 + l * len(KINDS) + j`, the same index on
  every instance.
- A move is *legal* when its window exists for that buffer (a prefetch needs a
  start the picker accepts between the moment the home holds the data and the
  first use it serves), is not a duplicate of a lower action of the same level,
  fits the level's capacity at every step it occupies beside the homes and the
  windows already chosen, and on an addressed level gets an offset by best fit
  (the smallest free gap that holds it over its occupancy, as `msa` places its
  chunks). Illegal moves raise `IllegalMove`; `action_mask()` marks the legal ones.

Every prefix of a game is itself a valid solution (each window is legal given
the earlier ones, and the rest stay home), so `latency()` is defined at every
step; the Gymnasium environment `memplace/Residency-v0` shapes its reward with it.

The estimates (`cost_analysis.CostAnalysis`: op times of the homes alone, no channel
contention) only order buffers and pick candidate starts; what a game is worth
is always the simulated latency. Where the game is simpler than `msa`: one
window per buffer (msa may give each use segment its own), so evictions are
never needed (no access returns to the home), and defining windows are not
bounded by the picker's no-copy limit (the capacity check alone decides).
"""
from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np

from memplace.model.core.errors import MemplaceError
from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, Window, simulate
from memplace.solvers.residency.machinery.cost_analysis import CostAnalysis, buffer_order
from memplace.solvers.residency.machinery.fast_memory import FastMemory
from memplace.solvers.residency.machinery.interval_picker import IntervalPicker
from memplace.solvers.residency.machinery.starts import static_homes

STAY = 0
KINDS = ("defining", "late", "preferred", "earliest")


class IllegalMove(MemplaceError):
    """A move that `legal_actions()` does not list."""


def action_of(level: int, kind: str) -> int:
    """The action index of a window of `kind` in `level`."""
    return 1 + level * len(KINDS) + KINDS.index(kind)


def n_actions(n_levels: int) -> int:
    """Size of the action space of an instance with `n_levels` levels."""
    return 1 + (n_levels - 1) * len(KINDS)


class ResidencyGame:
    """One game on one instance: `reset`, `legal_actions`, `step`, `is_terminal`, `solution`.

    Parameters
    ----------
    instance
        The instance to play.
    homes, home_offsets
        A valid static placement (level per tensor) and its offsets (-1 off
        addressed levels; None without addressed levels). Default: the static
        `compiler` solution.
    n_levels
        Levels the action layout is sized for (default the instance's); a larger
        value pads the action space so instances of different hierarchies share it.
    """

    def __init__(self, instance: Instance, homes: np.ndarray | None = None,
                 home_offsets: np.ndarray | None = None, n_levels: int | None = None):
        self.instance = instance
        if homes is None:
            homes, home_offsets = static_homes(instance, "compiler")
        self.homes = np.array(homes, np.int64)
        self.home_offsets = None if home_offsets is None else np.array(home_offsets, np.int64)
        self.n_levels = instance.n_levels if n_levels is None else int(n_levels)
        if self.n_levels < instance.n_levels:
            raise ValueError(f"n_levels {self.n_levels} is below the instance's {instance.n_levels}")
        self.n_actions = n_actions(self.n_levels)
        self.order = buffer_order(instance, self.homes)
        costs = CostAnalysis(instance, self.homes)  # seconds per op, homes alone
        self.elapsed, self.memory = costs.elapsed, costs.memory
        self.picker = IntervalPicker(self.elapsed)
        # the homes alone: where every game starts
        self._homes_booked = FastMemory(instance, homes=self.homes, offsets=self.home_offsets)
        self._candidates: dict[int, dict[int, Window]] = {}  # per tensor; shared by copies
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to the first buffer with no window chosen."""
        self.position = 0
        self.windows: list[Window] = []
        self.moves: list[int] = []
        self.fast = self._homes_booked.copy()
        self._legal: dict[int, Window] | None = None

    def copy(self) -> "ResidencyGame":
        """An independent game in the same state (for look-ahead)."""
        twin = copy.copy(self)
        twin.windows, twin.moves = list(self.windows), list(self.moves)
        twin.fast = self.fast.copy()
        return twin

    @property
    def load(self) -> np.ndarray:
        """Bytes in use per level and op: the homes and the windows chosen so far."""
        return self.fast.load

    @property
    def tensor(self) -> int:
        """The buffer to decide now (-1 when the game is over)."""
        return int(self.order[self.position]) if self.position < len(self.order) else -1

    def is_terminal(self) -> bool:
        return self.position >= len(self.order)

    # ------------------------------------------------------------------ moves
    def candidates(self, tensor: int) -> dict[int, Window]:
        """Every window of `KINDS` for `tensor` in a faster level (no legality check but
        existence), by action index, offsets left out. They depend on the homes alone, so
        each tensor's are computed once per game (and its copies)."""
        if tensor not in self._candidates:
            self._candidates[tensor] = self._windows_of(tensor)
        return dict(self._candidates[tensor])

    def _windows_of(self, tensor: int) -> dict[int, Window]:
        i, t = self.instance, tensor
        home = int(self.homes[t])
        accesses = i.access_op[i.tensor_access[i.tensor_ptr[t]:i.tensor_ptr[t + 1]]]
        producer = i.tensors[t]["producer"]
        windows: dict[int, Window] = {}
        last = int(accesses.max())
        if i.is_weight[t]:
            uses, low = accesses, 0
        else:  # the earliest access (the write, or a graph input's first read) stays home
            uses = accesses[accesses > accesses.min()]
            low = int(i.start[t]) if producer is None else int(producer) + 1
        copy_s = float(i.size[t] / i.copy_bandwidth[home])
        first = int(uses.min()) if uses.size else -1
        for level in range(home):
            if producer is not None and not i.is_weight[t]:
                windows[action_of(level, "defining")] = Window(t, level, int(producer),
                                                               int(producer), last)
            seen: set[int] = set()
            for kind, s in zip(("late", "preferred", "earliest"),
                               self._starts(t, level, copy_s, low, first)):
                if s not in seen:
                    seen.add(s)
                    windows[action_of(level, kind)] = Window(t, level, s, first, last)
        return windows

    def _starts(self, t: int, level: int, copy_s: float, low: int, first: int) -> list[int]:
        """The picker's latest, preferred and earliest prefetch starts for a window in
        `level` serving `first` on ([] when no start in `low .. first-1` satisfies its
        min and max overlaps). The use's own saving counts toward the min, as in msa."""
        i, picker = self.instance, self.picker
        if first <= low:
            return []
        accesses = i.tensor_access[i.tensor_ptr[t]:i.tensor_ptr[t + 1]]
        b = float(i.op_bytes[accesses[i.access_op[accesses] == first][0]])
        home = self.homes[t]
        fast = self.memory[first] - b / i.bandwidth[home] + b / i.bandwidth[level]
        reduction = float(self.elapsed[first] - max(i.compute[first], fast))
        max_elapsed = picker.max_elapsed(float(i.capacity[level]), float(i.copy_bandwidth[home]))
        found = picker.interval(copy_s, low, first, max_elapsed, reduction)
        return [] if found is None else [found[2], found[1], found[0]]

    def legal(self) -> dict[int, Window]:
        """The legal windows of the current buffer by action (offsets filled in)."""
        if self._legal is None:
            self._legal = {} if self.is_terminal() else self._fit(self.candidates(self.tensor))
        return self._legal

    def _fit(self, windows: dict[int, Window]) -> dict[int, Window]:
        i = self.instance
        out = {}
        for action, win in windows.items():
            size, l = int(i.size[win.tensor]), win.level
            if not self.fast.fits(l, win.start, win.hold, size):
                continue
            if i.addressed[l]:
                offset = self.fast.best_fit(l, win.start, win.hold, size)
                if offset < 0:
                    continue
                win = Window(win.tensor, l, win.start, win.first, win.last, offset)
            out[action] = win
        return out

    def legal_actions(self) -> list[int]:
        """`STAY` and the legal window actions of the current buffer, increasing
        ([] once the game is over)."""
        return [] if self.is_terminal() else [STAY] + sorted(self.legal())

    def action_mask(self) -> np.ndarray:
        """Boolean mask over the `n_actions` actions: True where legal."""
        mask = np.zeros(self.n_actions, bool)
        mask[self.legal_actions()] = True
        return mask

    def step(self, action: int) -> Window | None:
        """Play `action` for the current buffer; the window placed (None for `STAY`)."""
        action = int(action)
        if self.is_terminal():
            raise IllegalMove("the game is over: no buffer left to decide")
        if action != STAY and action not in self.legal():
            raise IllegalMove(f"action {action} is not legal for {self.instance.tensor_label(self.tensor)}"
                              f"; legal: {self.legal_actions()}")
        win = None if action == STAY else self.legal()[action]
        if win is not None:
            self.fast.book(("w", len(self.windows)), win.level, win.start, win.hold,
                           int(self.instance.size[win.tensor]), win.offset)
            self.windows.append(win)
        self.moves.append(action)
        self.position += 1
        self._legal = None
        return win

    # ------------------------------------------------------------------ outcome
    def solution(self) -> ResidencySolution:
        """The homes with the windows chosen so far (valid at every step), latency simulated."""
        sol = ResidencySolution(self.instance.name, self.homes.copy(),
                                None if self.home_offsets is None else self.home_offsets.copy(),
                                tuple(self.windows), solver={"name": "residency-game"})
        sol.latency = simulate(self.instance, sol)
        return sol

    def latency(self) -> float:
        """Simulated latency of the windows chosen so far (section 11)."""
        return self.solution().latency


def play(game: ResidencyGame, moves: Sequence[int]) -> ResidencySolution:
    """Reset `game`, play `moves` (STAY for buffers past their end) and return the solution."""
    game.reset()
    for action in moves:
        if game.is_terminal():
            break
        game.step(action)
    while not game.is_terminal():
        game.step(STAY)
    return game.solution()


def greedy_lookahead(game: ResidencyGame) -> list[int]:
    """A one-step look-ahead planner on the true simulator: for each buffer, the legal
    move whose game so far simulates fastest (ties to the lower action). Plays `game`
    from its reset state to the end and returns the moves."""
    game.reset()
    while not game.is_terminal():
        best, best_latency = STAY, math.inf
        for action in game.legal_actions():
            trial = game.copy()
            trial.step(action)
            lat = trial.latency()
            if lat < best_latency:
                best, best_latency = action, lat
        game.step(best)
    return list(game.moves)
