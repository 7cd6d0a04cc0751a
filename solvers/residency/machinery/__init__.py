"""What the residency solvers are built on; no module here registers a solver.

- `occupancy.py`: which bytes of each level are in use, the family's one occupancy
  structure (msa's compiled allocator and `sa`'s compiled move loop book into it from
  Numba); `fast_memory.py` is the same behind keys for Python callers (`layout.py`, the
  game, the allocator's reference);
- `layout.py`: `sa`'s solution kept valid under local changes;
- `cost_analysis.py`: XLA's cost analysis over fixed homes and msa's buffer order;
- `interval_picker.py`, `allocation.py`: msa's allocator (XLA's prefetch interval
  picker and the window assignment over given homes), run by one Numba kernel
  (`allocation_kernel.py`) that equals its plain-Python reference (`allocation_reference.py`,
  on `interval_picker.py` and `fast_memory.py`; both place through `occupancy.py`); `msa` and the GA's decoder use it;
- `starts.py`: the starting solutions every residency search shares (msa's, the static
  optimum with windows);
- `home_swaps.py`: swaps of equal-size homes and demotions, judged with msa's windows over
  the new homes (`multistart`);
- `move_loop.py`: `sa`'s move loop compiled (Numba, no Python per move);
- `evolution.py`: the GA's chromosome, decoder and operators (`ga`, `hybrid`);
- `game.py`, `planner.py`: the mallocGame and what the planners (`beam`, `mcts`) share;
- `relaxation.py`: the MILP relaxation of the simulator (`bound`, the certificates);
- `access_bound.py`: the access relaxation, an LP bound that scales (`bound`, `memplace gap`);
- `delivery_bound.py`, `horizon_bound.py`: the delivery relaxation (the access relaxation
  and where prefetched bytes wait in fast memory), solved by blocks of the schedule
  coupled by prices on the fast levels' weight homes (`bound`, `memplace gap`).

The solvers sit one folder up, one module each (`msa`, `sa`, `ga`, `hybrid`, `beam`,
`mcts`, `bound`, `baselines`, `multistart`); a solver that starts from another's solution imports the
function here that computes it.
"""
