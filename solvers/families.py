"""Solver names registered in more than one problem: each is one method family, and
this says what the name means in every problem. A name shared without an entry here is
an error the tests catch, so one word never quietly means two things.

Roles are not names: the solver a problem's speedups are measured against is its
*baseline* (`Problem.baselines["baseline"]`: `compiler` for static placement, `msa`
for residency), named as such in tables and in `memplace solve`.
"""
from __future__ import annotations

from memplace.model.core.problem import PROBLEMS
from memplace.model.core.search import registry

FAMILIES: dict[str, str] = {
    "all-slowest": "every tensor in the slowest level, the reference every speedup is valid "
                   "against (residency: those homes, no windows)",
    "compiler": "the compiler-style default static placement, xla-msa's (static: the problem's "
                "baseline; residency: that placement as homes, no windows, which msa never "
                "does worse than)",
    "sa": "simulated annealing on the problem's exact incremental cost (static: level moves "
          "and swaps; residency: homes and windows together, from msa's solution)",
    "ga": "DEAP genetic algorithm (static: levels with rectify as repair; residency: a "
          "decoder encoding decoded by msa's allocator)",
    "hybrid": "EGRL-style hybrid: the problem's evolutionary search with cheap policies' "
              "solutions injected every generation",
}


def shared_names() -> dict[str, list[str]]:
    """Every solver name registered in more than one problem -> those problems."""
    where: dict[str, list[str]] = {}
    for prob in PROBLEMS.names():
        for name in registry(prob):
            where.setdefault(name, []).append(prob)
    return {name: probs for name, probs in sorted(where.items()) if len(probs) > 1}
