"""The library as text: the list of entries, one entry in full, figures in each problem's unit."""
from __future__ import annotations

import math
from typing import Any

from memplace.instances.library import BOUND_KINDS, Entry, Library


def figure(entry: Entry, value: float | None) -> str:
    """Microseconds for latencies, bytes for packing heights."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.0f}" if entry.problem == "packing" else f"{value * 1e6:.3f}"


def percent(gap: float | None) -> str:
    """A relative gap in % with two decimals; one that rounds to zero prints 0.00, never
    -0.00 (a tie whose last bits differ)."""
    return "-" if gap is None else two_decimals(100 * gap)


def two_decimals(value: float) -> str:
    """A figure with two decimals, 0.00 rather than -0.00 when it rounds to zero; '-' for
    none (NaN: the mean gap of a submission with no valid solution)."""
    if math.isnan(value):
        return "-"
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def list_rows(lib: Library) -> list[dict[str, Any]]:
    rows = []
    for e in lib.entries:
        rows.append({"entry": e.id, "problem": e.problem, "instance": e.name, "split": e.split,
                     "ops": e.ops, "unit": "bytes" if e.problem == "packing" else "us",
                     "default": figure(e, e.default["objective"]),
                     "best known": figure(e, e.best["objective"]),
                     "bound": figure(e, e.bound), "certified bound": figure(e, e.certified_bound),
                     "gap %": percent(e.gap), "certified gap %": percent(e.certified_gap),
                     "status": e.status,
                     "found by": _finder(e.best.get("provenance") or {})})
    return rows


# The residency target of memplace-lib (issue 22): on the entries of at most TARGET_OPS
# ops, every best known within TARGET_GAP of a bound `verify` re-checks from its
# certificate (the certified gap; a branch-and-bound bound is not re-checkable).
TARGET_PROBLEM, TARGET_OPS, TARGET_GAP = "residency", 400, 0.05


def by_certified_gap(entries: list[Entry], gap: float) -> tuple[list[Entry], list[Entry]]:
    """`entries` split, in their order: (certified within `gap`, a fraction; above it or
    without a certified bound)."""
    within = [e for e in entries if e.certified_gap is not None and e.certified_gap <= gap]
    return within, [e for e in entries if e not in within]


def target_report(lib: Library) -> tuple[list[Entry], list[Entry]]:
    """The entries the residency target covers: (within it, above it or without a
    certified bound), each sorted by id."""
    covered = sorted((e for e in lib.entries if e.problem == TARGET_PROBLEM and e.ops <= TARGET_OPS),
                     key=lambda e: e.id)
    return by_certified_gap(covered, TARGET_GAP)


def target_text(lib: Library) -> str:
    within, above = target_report(lib)
    text = (f"{TARGET_PROBLEM} entries of at most {TARGET_OPS} ops: {len(within)} of "
            f"{len(within) + len(above)} within {100 * TARGET_GAP:g}% of a certified bound")
    if above:
        text += "; above: " + ", ".join(f"{e.id} {certified_gap_text(e)}" for e in above)
    return text + "\n"


def certified_gap_text(e: Entry) -> str:
    """An entry's certified gap as a list names it: "5.63%", or "no certified bound"."""
    return "no certified bound" if e.certified_gap is None else f"{percent(e.certified_gap)}%"


def markdown(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(none)\n"
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---" for _ in keys) + "|"]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _finder(prov: dict) -> str:
    """The list's "found by": the solver, marked when a file naming it was submitted."""
    solver = str(prov.get("solver", "-"))
    return f"{solver} (submitted)" if "submitted" in prov else solver


def found_by(prov: dict) -> str:
    """Who found a best known: a solver run of `improve`, or a file `submit` recorded."""
    if "submitted" in prov:
        sub = prov["submitted"]
        return (f"submitted as {sub.get('file')} (sha256 {str(sub.get('sha256'))[:16]}...), "
                f"naming {prov.get('solver')} seed {prov.get('seed')}; validated at commit "
                f"{str(prov.get('commit'))[:10]} on {prov.get('date')}")
    return (f"found by {prov.get('solver')} seed {prov.get('seed')} in {prov.get('wall_s')} s "
            f"(limit {prov.get('time_limit')}) at commit {str(prov.get('commit'))[:10]} on "
            f"{prov.get('date')}")


def show(lib: Library, e: Entry) -> str:
    prov = e.best.get("provenance") or {}
    out = [f"{e.id} ({lib.name}, {e.split} split)",
           f"  instance   {e.instance} (sha256 {e.sha256[:16]}...), {e.ops} "
           f"{'buffers' if e.problem == 'packing' else 'ops'}",
           f"  default    {e.default['solver']}: {figure(e, e.default['objective'])} {unit(e)}",
           f"  best known {figure(e, e.best['objective'])} {unit(e)} in {e.best.get('file')}",
           f"             {found_by(prov)}",
           f"  status     {e.status} (certified gap {percent(e.certified_gap)}%)",
           "  bounds"]
    for b in sorted(e.bounds, key=lambda b: -b["value"]):
        p = b.get("provenance") or {}
        check = "checkable" if BOUND_KINDS[b["kind"]][0] else "not cheaply checkable"
        out.append(f"    {figure(e, b['value']):>14} {unit(e)}  {b['kind']}"
                   f"{' (' + b['label'] + ')' if b.get('label') else ''}, {check}; certificate "
                   f"{b.get('certificate') or '(recomputed from the instance)'}; by {p.get('solver')} "
                   f"at {str(p.get('commit'))[:10]}")
    return "\n".join(out) + "\n"


def added_text(e: Entry) -> str:
    """The line `lib add` and `lib build` print for an entry they added."""
    return (f"added {e.id} ({e.split}, {e.ops} {'buffers' if e.problem == 'packing' else 'ops'}): "
            f"default {figure(e, e.default['objective'])} {unit(e)}, bound {figure(e, e.bound)} {unit(e)}")


def unit(e: Entry) -> str:
    """The unit `figure` prints `e`'s figures in."""
    return "bytes" if e.problem == "packing" else "us"
