"""HiGHS (through highspy) as the MILPs of both problems use it: the static placement MILP
(`static/milp_highs.py`, its LP relaxation) and the residency bound
(`residency/machinery/relaxation.py`). Not a solver: it registers nothing; it lives beside the
problems' solver packages so that neither imports the other's modules.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from typing import Any, Callable

import numpy as np

_banner = threading.Lock()
_banner_printed = False


def quiet_banner() -> None:
    """HiGHS prints its banner and a third-party notice on stdout when the first `Highs`
    of a process is made, before any option can be set. Make that first one (once per
    process) with the process's stdout pointed at /dev/null, so no memplace command or
    worker shows them; later ones print nothing unless their `output_flag` is on."""
    global _banner_printed
    with _banner:
        if _banner_printed:
            return
        import highspy
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            highspy.Highs()
            _flush_c_stdout()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _banner_printed = True


def _flush_c_stdout() -> None:
    """Flush the C library's stdout buffer (a banner buffered there must reach /dev/null)."""
    try:
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to reach (not on POSIX)
        pass


def new_highs(threads: int, seed: int, time_limit: float | None, log: bool = False) -> Any:
    """A `highspy.Highs` with the options every solve here sets: quiet unless `log`,
    `threads`, a seed HiGHS accepts, and a time limit when one is given."""
    import highspy
    quiet_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(log))
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("random_seed", int(seed) % (2**31 - 1))
    if time_limit is not None and math.isfinite(time_limit):
        h.setOptionValue("time_limit", max(0.01, float(time_limit)))
    return h


def column_lp(cost: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray,
              row_lower: np.ndarray, row_upper: np.ndarray, a_start: np.ndarray,
              a_index: np.ndarray, a_value: np.ndarray, integrality: Any,
              relax: bool = False, offset: float = 0.0) -> Any:
    """A `highspy.HighsLp` of a column-wise sparse model (`a_start` has one entry per
    column and one more); `integrality` marks the integer columns (dropped when `relax`)."""
    import highspy
    n_cols, n_rows = len(cost), len(row_lower)
    lp = highspy.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = n_rows
    lp.col_cost_ = cost
    lp.col_lower_ = col_lower
    lp.col_upper_ = col_upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.offset_ = offset
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a_start.astype(np.int32)
    lp.a_matrix_.index_ = a_index.astype(np.int32)
    lp.a_matrix_.value_ = a_value
    lp.a_matrix_.num_col_ = n_cols
    lp.a_matrix_.num_row_ = n_rows
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in integrality]
    return lp


def run(h: Any, should_stop: Callable[[], bool] | None = None,
        deadline: float | None = None) -> float:
    """Run `h` (its model passed); `should_stop()`, polled by HiGHS in its simplex and
    interior-point iterations and in the branch and bound, interrupts it when true. HiGHS
    counts its `time_limit` from here: with `deadline` (a `time.perf_counter()` value) the
    limit is reset to the time left, so that building and passing the model come out of
    it. Returns the wall seconds of the run.

    (Polled in the branch and bound alone, a stop went unheard while the root LP ran: the
    static MILP at 10^4 ops ran 3-24 s past a 10 s limit.)"""
    if should_stop is not None:
        def interrupt(event):
            if should_stop():
                event.interrupt()
        for callback in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
            callback.subscribe(interrupt)
    if deadline is not None and math.isfinite(deadline):
        h.setOptionValue("time_limit", max(0.01, deadline - time.perf_counter()))
    began = time.perf_counter()
    h.run()
    return time.perf_counter() - began
