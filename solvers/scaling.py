"""Timings of solver internals for `memplace perf --scaling` (the harness reaches no
solver module of a problem directly): sa's annealing kernel alone and the MILP build."""
from __future__ import annotations

import time

from memplace.model import Instance


def anneal_seconds(inst: Instance, moves: int) -> float:
    """Wall seconds of `moves` sa moves in the annealing kernel itself (penalty kernel, as
    `sa` runs by default), from the compiler placement, cooling geometrically from the
    temperature that accepts 10% of sampled uphill moves down to a millionth of it."""
    from memplace.solvers.static.heuristics import ORDERS, COMPILER, greedy_fill
    from memplace.solvers.static.sa import Annealer, byte_value, start_temperature
    start = greedy_fill(inst, ORDERS[COMPILER](inst))[0]
    ann = Annealer(inst, start, penalty=True, lam=byte_value(inst))
    uphill = ann.sample_uphill(1000, 0.3, 1)
    t0 = start_temperature(uphill, 0.1) or 1e-9
    alpha = 1e-6 ** (1.0 / moves)
    ann.kernel_s = 0.0
    ann.run(moves, t0, alpha, 0.3, 0)
    return ann.kernel_s


def milp_build_seconds(inst: Instance) -> float:
    """Seconds to formulate the MILP and hand it to HiGHS as a model (no solve)."""
    from memplace.solvers.static.milp_highs import formulate, highs_model
    began = time.perf_counter()
    highs_model(formulate(inst))
    return time.perf_counter() - began
