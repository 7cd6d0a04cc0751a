"""`memplace report`: tables and plots agree with the runs they were made from, checked
against numbers worked out by hand from a small runs file."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memplace.cli import main
from memplace.bench.report_plots import ECDF_TARGETS, profile_ratios, target_hits
from memplace.bench.results import Results, reach, shifted_geomean
from memplace.bench.store import FIELDS
from memplace.model import Instance, slowest_latency
from memplace.solvers import solve
from randominst import random_instance_dict

TIME_LIMIT = 10.0


def record(inst: Instance, path, solver: str, seed: int, latency: float | None, trace,
           placement, lower_bound=None, status="feasible") -> dict:
    ok = status in ("optimal", "feasible")
    out = {"instance": inst.name, "instance_source": str(path),
           "instance_sha256": inst.fingerprint(), "solver": solver, "params": {},
           "seed": seed, "time_limit": TIME_LIMIT, "status": status,
           "latency": latency if ok else None, "lower_bound": lower_bound,
           "wall_s": 1.0, "evaluations": trace[-1][1] if ok else None,
           "trace": trace if ok else [],
           "placement": [inst.level_names[l] for l in placement] if ok else None,
           "offsets": None, "notes": {}, "error": None if ok else "worker killed",
           "version": "test", "machine": {}, "problem": "static",
           "code": {"commit": "0" * 40, "dirty": False, "package": "test"}}
    assert set(out) == set(FIELDS)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Solver A (seeds 0-2; seed 1 failed once and was retried; seed 2 timed out),
    the compiler and all-slowest on one random instance. With C the compiler latency:
    A seed 0 reaches 0.95 C at 0.5 s (10 evaluations) and 0.9 C at 2 s (40), proving
    a bound of 0.85 C; seed 1 reaches 0.905 C at 0.2 s (5)."""
    folder = tmp_path_factory.mktemp("report")
    path = folder / "random-11.json"
    path.write_text(json.dumps(random_instance_dict(11, n_ops=8, n_tensors=12)))
    inst = Instance.from_file(path)
    comp = solve(inst, "compiler", time_limit=None)
    c, s = comp.latency, slowest_latency(inst)
    place = comp.placement
    slow = inst.slowest_placement()
    records = [
        record(inst, path, "compiler", 0, c, [[0.001, 1, c]], place),
        record(inst, path, "all-slowest", 0, s, [[0.001, 1, s]], slow),
        record(inst, path, "A", 0, 0.9 * c, [[0.5, 10, 0.95 * c], [2.0, 40, 0.9 * c]], place,
               lower_bound=0.85 * c),
        record(inst, path, "A", 1, None, [], place, status="error"),
        record(inst, path, "A", 2, None, [], place, status="timeout"),
        record(inst, path, "A", 1, 0.905 * c, [[0.2, 5, 0.905 * c]], place),  # the retry
    ]
    file = folder / "runs.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["report", str(file)])
    assert result.exit_code == 0, result.output
    return {"folder": folder, "c": c, "s": s, "records": records, "output": result.output}


def read_csv(path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as fh:
        return {row["solver"]: row for row in csv.DictReader(fh)}


def test_instance_table_numbers_match_the_runs(runs):
    c, s = runs["c"], runs["s"]
    rows = read_csv(runs["folder"] / "table_instances.csv")
    a = rows["A"]
    assert (a["runs"], a["failed"]) == ("3", "1")  # the retried seed counts once
    # the CSV holds 12 significant digits (report_tables.csv_float)
    assert float(a["best_latency_s"]) == pytest.approx(0.9 * c, rel=1e-11)
    assert float(a["mean_latency_s"]) == pytest.approx(0.9025 * c, rel=1e-11)
    assert float(a["speedup_vs_baseline"]) == pytest.approx(1 / 0.9, rel=1e-11)
    assert float(a["speedup_vs_slowest"]) == pytest.approx(s / (0.9 * c), rel=1e-11)
    assert float(a["gap_to_bound"]) == pytest.approx(0.9 / 0.85 - 1, rel=1e-11)
    # within 1% of 0.9 C: seed 0 at 2 s / 40 evaluations, seed 1 at 0.2 s / 5, seed 2 never
    assert float(a["seconds_to_0.01"]) == 2.0 and float(a["evaluations_to_0.01"]) == 40.0
    # within 0.1%: only seed 0 gets there, so not half of the runs
    assert a["seconds_to_0.001"] == "" and a["evaluations_to_0.001"] == ""
    comp = rows["compiler"]
    assert float(comp["speedup_vs_baseline"]) == 1.0
    assert float(comp["speedup_vs_slowest"]) == pytest.approx(s / c, rel=1e-11)
    assert float(comp["gap_to_bound"]) == pytest.approx(1 / 0.85 - 1, rel=1e-11)
    assert comp["seconds_to_0.01"] == ""
    assert float(rows["all-slowest"]["speedup_vs_slowest"]) == 1.0
    markdown = (runs["folder"] / "table_instances.md").read_text()
    assert f"| random-11 | A | 3 | 1 | {0.9 * c * 1e6:.3f} | {0.9025 * c * 1e6:.3f} | 1.111x |" in markdown


def test_solver_summary_uses_the_stated_shifts(runs):
    rows = read_csv(runs["folder"] / "table_solvers.csv")
    a = rows["A"]
    gaps = [0.0, 0.905 / 0.9 - 1]
    assert float(a["sgm_gap_to_best"]) == pytest.approx(
        math.sqrt((gaps[0] + 1e-4) * (gaps[1] + 1e-4)) - 1e-4, rel=1e-11)
    # times to 1%: 2 s, 0.2 s and the timed-out run at its limit, shift 1 s
    assert float(a["sgm_seconds_to_0.01"]) == pytest.approx((3.0 * 1.2 * 11.0) ** (1 / 3) - 1, rel=1e-11)
    assert (a["runs"], a["failed"], a["wins"], a["instances"]) == ("3", "1", "1", "1")
    comp = rows["compiler"]
    assert float(comp["sgm_gap_to_best"]) == pytest.approx(1 / 0.9 - 1, rel=1e-11)
    assert float(comp["sgm_seconds_to_0.01"]) == pytest.approx(TIME_LIMIT, rel=1e-11)
    assert comp["wins"] == "0"
    latex = (runs["folder"] / "table_solvers.tex").read_text()
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
    assert "shift 0.0001 = 0.01\\%" in latex and "shift 1 s" in latex


def test_plots_are_written_as_png_and_svg(runs):
    folder = runs["folder"]
    for stem in ("convergence_seconds", "convergence_evaluations", "performance_profile",
                 "placement_random-11"):
        assert (folder / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (folder / f"{stem}.svg").read_text()[:2000]
        assert f"{stem}.png" in runs["output"]


def test_profile_ratios_and_convergence_curves_follow_the_runs(runs):
    results = Results(runs["records"])
    ratios = profile_ratios(results)
    assert ratios["A"] == [1.0]
    assert ratios["compiler"] == [pytest.approx(1 / 0.9025, rel=1e-12)]
    # runtime ECDF: A's three seeds (0.9 C best known) against 4 targets each
    seconds, weights = target_hits(results, 0)["A"]
    assert weights.sum() == pytest.approx(1.0) and len(seconds) == 3 * len(ECDF_TARGETS)
    by_seed = sorted(seconds.reshape(3, len(ECDF_TARGETS)).tolist())  # 10%, 1%, 0.1%, 0.01%
    assert by_seed == [[0.2, 0.2, math.inf, math.inf],  # the retried seed 1: 0.905 C
                       [0.5, 2.0, 2.0, 2.0],  # seed 0: 0.95 C at 0.5 s, 0.9 C at 2 s
                       [math.inf] * 4]  # seed 2 timed out
    evaluations, _ = target_hits(results, 1)["A"]
    assert [10.0, 40.0, 40.0, 40.0] in evaluations.reshape(3, -1).tolist()
    compiler, _ = target_hits(results, 0)["compiler"]
    assert np.isinf(compiler).all()  # 1/0.9 - 1 = 11% above the best known: no target
    c = runs["c"]
    assert reach(runs["records"][2], 0.9 * c * 1.01) == (2.0, 40.0)
    assert reach(runs["records"][4], math.inf) == (math.inf, math.inf)  # a failed run


@given(st.lists(st.floats(0.0, 1e3), min_size=1, max_size=20), st.floats(1e-6, 10.0))
def test_shifted_geomean_lies_between_min_and_max(values, shift):
    mean = shifted_geomean(values, shift)
    assert min(values) - 1e-9 * (1 + max(values)) <= mean <= max(values) + 1e-9 * (1 + max(values))
    assert shifted_geomean([values[0]] * 3, shift) == pytest.approx(values[0], rel=1e-9, abs=1e-12)


def test_against_compares_each_instances_best_with_the_reference(runs, tmp_path):
    """A rerun whose best is 0.9 C (solver A seed 0) against a reference whose best is the
    compiler's C: the change is -10%, and the caption counts no instance worse; the other
    way round it counts one."""
    c = runs["c"]
    reference = tmp_path / "reference.jsonl"
    reference.write_text(json.dumps(runs["records"][0]) + "\n")  # the compiler's run only
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(runs["folder"] / "runs.jsonl"),
                                       "--out", str(out), "--against", str(reference)])
    assert result.exit_code == 0, result.output
    assert "1 instances in both, 0 worse here" in result.output
    with open(out / "table_against.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["solver"] == "A seed 0" and row["reference_solver"] == "compiler seed 0"
    assert math.isclose(float(row["best_latency_s"]), 0.9 * c)
    assert math.isclose(float(row["change"]), -0.1)
    back = CliRunner().invoke(main, ["report", str(reference), "--out", str(tmp_path / "back"),
                                     "--against", str(runs["folder"] / "runs.jsonl")])
    assert back.exit_code == 0, back.output
    assert "1 worse here" in back.output
