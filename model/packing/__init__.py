"""Offset packing (dynamic storage allocation): heuristics, an exact search, MiniMalloc's CSV."""
from pathlib import Path

# Public packing benchmarks shipped with the package (sources and licences in each folder's
# README and LICENSE): MiniMalloc's instances and idealloc's compiler traces.
BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"
