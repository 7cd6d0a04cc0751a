"""The residency GA's engine: a DEAP genetic algorithm over a decoder encoding (msa's allocator).

Shared by the `ga` and `hybrid` solvers (ga.py, hybrid.py), which only register it, so
that no solver module imports another.

A chromosome does not hold windows; it holds what memory-space assignment decides them
from, as TelaMalloc's and the genetic schedulers' decoders do:

- `order`: a priority order of the *buffers* (every tensor whose accesses would save
  time in the fastest level, `cost_analysis.buffer_order` over the slowest homes), the
  order in which the allocator gives them windows;
- `leads`: per buffer, the preferred overlap of its prefetches and evictions in copy
  times (msa's picker uses 1.5 for every buffer), kept within the picker's `min` and
  `max` ratios;
- `homes`: which homes the windows are added to: 0 = every tensor in the slowest level
  (XLA's default memory), 1 = the static `compiler` placement, 2 = the static `sa`'s
  placement after `static_moves` moves (`starts.static_homes`; left out when 0).

`decode` runs msa's compiled allocator (`allocation.Allocator`, set up once per homes)
with that order and those leads, so every decoded solution is valid by construction
(the allocator's capacity, best-fit offsets and rules), and its fitness is the simulated latency (section 11). The population starts
with msa's own chromosomes (XLA's order, lead 1.5, every homes) and their mutants; msa's
solution (run through `solve()`) is offered first, so the result is never worse than it.

DEAP provides the framework (`creator` fitness and individual classes, `base.Toolbox`);
the operators draw from the solver's own `numpy.random.Generator`
(DEAP's stock operators use the global `random` module, which threads share): tournament
selection, order crossover (OX) of the priority orders with uniform crossover of the
leads, and mutation by moving a few buffers in the order, log-normal steps of the leads
and a rare flip of the homes. Elites survive unchanged.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np
from deap import base, creator

from memplace.model.instance import Instance
from memplace.model.residency import ResidencySolution, lower_bound, simulate
from memplace.solvers import Param, SearchContext
from memplace.solvers.residency.machinery.allocation import Allocator
from memplace.solvers.residency.machinery.allocation_reference import assign_windows_reference
from memplace.solvers.residency.machinery.cost_analysis import CostAnalysis, buffer_order
from memplace.solvers.residency.machinery.starts import finish_seconds, msa_solution, static_homes

if not hasattr(creator, "ResidencyFitness"):
    creator.create("ResidencyFitness", base.Fitness, weights=(-1.0,))
if not hasattr(creator, "DecoderIndividual"):
    creator.create("DecoderIndividual", list, fitness=creator.ResidencyFitness)

MIN_OVERLAP, PREFERRED, MAX_OVERLAP = 0.8, 1.5, 10.0  # msa's picker ratios (docs/spec.md section 12)
ENGINES = ("compiled", "python")
PARAMS = {
    "population": Param(16, int, 2, doc="chromosomes per generation"),
    "generations": Param(1000, int, 1, doc="generations (the time limit may stop earlier)"),
    "elite": Param(2, int, 0, "population-1", doc="best chromosomes kept unchanged"),
    "tournament": Param(3, int, 1, "population", doc="tournament size of the selection"),
    "cxpb": Param(0.7, float, 0.0, 1.0, doc="probability that two parents are crossed"),
    "moves": Param(3.0, float, 0.0, doc="mean buffers moved in the order by one mutation"),
    "lead_indpb": Param(0.05, float, 0.0, 1.0, doc="probability that a buffer's lead mutates"),
    "lead_sigma": Param(0.4, float, 0.0, doc="sigma of a lead's log-normal mutation step"),
    "static_moves": Param(200_000, int, 0, doc="moves of the static sa whose placement is the "
                                               "third homes (0: slowest and compiler only)"),
    "engine": Param("compiled", str, choices=ENGINES,
                    doc="the decoder: compiled (msa's allocator in Numba, allocation.py) or python "
                        "(its plain-Python reference, allocation_reference.py): the same solutions"),
}


class Decoder:
    """Chromosome -> residency solution through msa's allocator, with both homes at hand."""

    def __init__(self, instance: Instance, static_moves: int = 0, seed: int = 0,
                 deadline: float = math.inf, engine: str = "compiled"):
        i = self.instance = instance
        self.engine = engine
        self.deadline = deadline  # decoding stops allocating here (`assign_windows`)
        self.homes = [static_homes(i, "all-slowest"), static_homes(i, "compiler")]
        if static_moves > 0:
            left = deadline - time.perf_counter()
            self.homes.append(static_homes(i, "sa", None if math.isinf(left) else left / 4,
                                           seed=seed, moves=static_moves))
        self.buffers = np.array(buffer_order(i, self.homes[0][0]), np.int64)
        self.position = {int(t): j for j, t in enumerate(self.buffers)}
        self.allocators: dict[int, Allocator] = {}  # per homes: set up once, run per chromosome

    def msa_chromosome(self, homes: int) -> list:
        """msa's own decisions: XLA's order over these homes (the other buffers after them),
        preferred overlap 1.5 everywhere."""
        order = buffer_order(self.instance, self.homes[homes][0]).tolist()
        first = [self.position[t] for t in order if t in self.position]
        chosen = set(first)
        rest = [j for j in range(self.buffers.size) if j not in chosen]
        return creator.DecoderIndividual([np.array(first + rest, np.int64),
                                          np.full(self.buffers.size, PREFERRED), homes])

    def decode(self, chromosome: Sequence) -> ResidencySolution:
        order, leads, homes = chromosome
        homes = int(homes)
        preferred = np.full(self.instance.n_tensors, PREFERRED)
        preferred[self.buffers] = leads
        if self.engine == "python":
            return assign_windows_reference(self.instance, *self.homes[homes], MIN_OVERLAP,
                                            PREFERRED, MAX_OVERLAP, order=self.buffers[order],
                                            preferred=preferred, deadline=self.deadline)[0]
        if homes not in self.allocators:
            self.allocators[homes] = Allocator(self.instance, *self.homes[homes], MIN_OVERLAP,
                                               MAX_OVERLAP)
        return self.allocators[homes].run(self.buffers[order], preferred, self.deadline)[0]

    def encode(self, solution: ResidencySolution) -> list:
        """An approximate chromosome of any solution (the hybrid's injections): buffers with
        windows first, by their first window's start; each lead the overlap of its first
        prefetch in copy times (op times of the homes); the homes nearer its own."""
        i = self.instance
        near = [int((solution.placement == h[0]).sum()) for h in self.homes]
        homes = int(np.argmax(near))
        elapsed = CostAnalysis(i, self.homes[homes][0]).elapsed
        cum = np.concatenate([[0.0], np.cumsum(elapsed)])
        first_start = {}
        leads = np.full(self.buffers.size, PREFERRED)
        for w in sorted(solution.windows, key=lambda w: w.start):
            j = self.position.get(w.tensor)
            if j is None or j in first_start:
                continue
            first_start[j] = w.start
            if w.start < w.first:
                copy_s = i.size[w.tensor] / i.copy_bandwidth[solution.placement[w.tensor]]
                lead = (cum[w.first] - cum[w.start]) / copy_s if copy_s > 0 else PREFERRED
                leads[j] = float(np.clip(lead, MIN_OVERLAP, MAX_OVERLAP))
        order = sorted(range(self.buffers.size), key=lambda j: (first_start.get(j, i.n_ops), j))
        return creator.DecoderIndividual([np.array(order, np.int64), leads, homes])


# ---------------------------------------------------------------------- operators
def cx_order(a: list, b: list, rng: np.random.Generator) -> tuple[list, list]:
    """Order crossover of the priority orders, uniform crossover of the leads, homes swapped
    with probability 1/2."""
    n = a[0].size
    children = []
    for p, q in ((a, b), (b, a)):
        lo, hi = sorted(rng.integers(0, n + 1, 2).tolist())
        keep = p[0][lo:hi]
        kept = set(keep.tolist())
        rest = [x for x in q[0].tolist() if x not in kept]
        order = np.array(rest[:lo] + keep.tolist() + rest[lo:], np.int64)
        mask = rng.random(n) < 0.5
        leads = np.where(mask, p[1], q[1])
        homes = p[2] if rng.random() < 0.5 else q[2]
        children.append(creator.DecoderIndividual([order, leads, homes]))
    return children[0], children[1]


def mutate(ind: list, rng: np.random.Generator, moves: float, lead_indpb: float,
           lead_sigma: float, n_homes: int = 2) -> list:
    """Move ~`moves` buffers to other places of the order, step some leads, rarely flip homes."""
    order = ind[0].tolist()
    n = len(order)
    for _ in range(int(rng.poisson(moves)) if n > 1 else 0):
        j = int(rng.integers(n))
        x = order.pop(j)
        order.insert(int(rng.integers(n)), x)
    leads = ind[1].copy()
    hit = rng.random(n) < lead_indpb
    leads[hit] = np.clip(leads[hit] * np.exp(rng.normal(0.0, lead_sigma, int(hit.sum()))),
                         MIN_OVERLAP, MAX_OVERLAP)
    homes = int(rng.integers(n_homes)) if rng.random() < 0.02 else ind[2]
    return creator.DecoderIndividual([np.array(order, np.int64), leads, homes])


def select(pop: list, k: int, size: int, rng: np.random.Generator) -> list:
    """Tournament selection (the lowest latency of `size` drawn with replacement)."""
    out = []
    for _ in range(k):
        picks = rng.integers(len(pop), size=size)
        out.append(min((pop[j] for j in picks), key=lambda c: c.fitness.values[0]))
    return out


# ---------------------------------------------------------------------- the search
class _Fitness:
    """Evaluates chromosomes: decodes and simulates each new one, offers its solution, and
    keeps what `ctx.notes` report (chromosomes decoded, seconds spent decoding and simulating)."""

    def __init__(self, ctx: SearchContext, dec: Decoder):
        self.ctx, self.dec = ctx, dec
        self.notes = {"decoded": 0, "decode_s": 0.0}

    def __call__(self, pop: list) -> None:
        ctx = self.ctx
        fresh = [c for c in pop if not c.fitness.valid]
        began = time.perf_counter()
        for c in fresh:
            if ctx.should_stop():  # (msa's solution was offered first: never nothing)
                c.fitness.values = (float("inf"),)
                continue
            sol = self.dec.decode(c)
            lat = simulate(ctx.instance, sol)
            c.fitness.values = (lat,)
            ctx.offer(sol, lat)
            self.notes["decoded"] += 1
        self.notes["decode_s"] += time.perf_counter() - began
        ctx.count(len(fresh))


def _toolbox(rng: np.random.Generator, moves: float, lead_indpb: float, lead_sigma: float,
             n_homes: int, tournament: int) -> base.Toolbox:
    """The GA's operators, drawing from the solver's generator."""
    tb = base.Toolbox()
    tb.register("mate", cx_order, rng=rng)
    tb.register("mutate", mutate, rng=rng, moves=moves, lead_indpb=lead_indpb, lead_sigma=lead_sigma,
                n_homes=n_homes)
    tb.register("select", select, size=tournament, rng=rng)
    return tb


def _first_population(dec: Decoder, tb: base.Toolbox, population: int) -> list:
    """msa's chromosomes (one per homes), then their mutants in turn up to `population`."""
    pop = [dec.msa_chromosome(h) for h in range(len(dec.homes))][:population]
    n_seeds = len(pop)
    while len(pop) < population:
        pop.append(tb.mutate(pop[len(pop) % n_seeds]))
    return pop


def _replace_weakest(pop: list, seeds: list, evaluate: _Fitness) -> None:
    """Evaluate the injected `seeds` and put them in place of the weakest of `pop`."""
    evaluate(seeds)
    pop.sort(key=lambda c: c.fitness.values[0])
    pop[len(pop) - len(seeds):] = seeds[:len(pop)]


def _next_generation(pop: list, tb: base.Toolbox, rng: np.random.Generator, population: int,
                     elite: int, cxpb: float) -> list:
    """The elites of `pop` (sorted, best first) and the mutated children of selected parents,
    crossed in pairs with probability `cxpb`."""
    parents = tb.select(pop, population - elite)
    children = []
    for a, b in zip(parents[::2], parents[1::2]):
        if rng.random() < cxpb:
            a, b = tb.mate(a, b)
        children += [tb.mutate(a), tb.mutate(b)]
    if len(parents) % 2:
        children.append(tb.mutate(parents[-1]))
    return pop[:elite] + children[:population - elite]


def evolve(ctx: SearchContext, population: int, generations: int, elite: int, tournament: int,
           cxpb: float, moves: float, lead_indpb: float, lead_sigma: float, static_moves: int,
           engine: str, inject: Callable[[int], list[ResidencySolution]] | None = None) -> int:
    """Run the GA; `inject(gen)` (the hybrid) returns solutions whose chromosomes replace the
    weakest of each generation. Returns the generations run; `ctx.notes` get the chromosomes
    evaluated and the seconds spent evaluating them (decoding and simulating)."""
    inst, rng = ctx.instance, ctx.rng
    dec = Decoder(inst, static_moves, int(rng.integers(2**31)), ctx.deadline - finish_seconds(inst),
                  engine)
    tb = _toolbox(rng, moves, lead_indpb, lead_sigma, len(dec.homes), tournament)
    evaluate = _Fitness(ctx, dec)
    pop = _first_population(dec, tb, population)
    evaluate(pop)
    gen = 0
    while gen < generations and not ctx.should_stop():
        if inject is not None:
            seeds = [dec.encode(s) for s in inject(gen)]
            if seeds:
                _replace_weakest(pop, seeds, evaluate)
        pop.sort(key=lambda c: c.fitness.values[0])
        pop = _next_generation(pop, tb, rng, population, elite, cxpb)
        evaluate(pop)
        gen += 1
    ctx.notes.update(evaluate.notes)
    return gen


def offer_msa(ctx: SearchContext) -> None:
    """Offer msa's solution (both homes) first: the search never returns anything worse."""
    seed = msa_solution(ctx.instance, deadline=time.perf_counter() + ctx.remaining() / 3)[0]
    ctx.offer(seed, seed.latency)
    ctx.lower_bound = lower_bound(ctx.instance)
