"""`memplace lib score RUNS`: a benchmark's runs scored against a library, each solver's
best run per entry becoming a submission validated like anyone's solution files."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memplace.bench.library.runs import REFERENCE, best_runs, covered, entry_table, score_runs
from memplace.bench.task import Task
from memplace.bench.worker import result_record
from memplace.instances import load
from memplace.instances.library import read_library
from memplace.solvers import solve

INSTANCE = "vgg16@nnpi"  # the small library's instance (conftest.py)


def _record(entry, solver, seed=0, time_limit=5.0):
    inst = load(INSTANCE, entry.problem)
    result = solve(inst, solver, time_limit=time_limit, seed=seed, problem=entry.problem)
    task = Task(entry.name, INSTANCE, entry.sha256, solver, dict(result.params), seed, time_limit,
                problem=entry.problem)
    return json.loads(json.dumps(result_record(task, inst, result)))


@pytest.fixture(scope="module")
def residency_runs(small_library):
    lib = read_library(small_library)
    entry = lib.entry(f"residency/{INSTANCE}")
    return lib, entry, [_record(entry, "msa"), _record(entry, "all-slowest"),
                        _record(entry, "sa", 0, 0.5), _record(entry, "sa", 1, 0.5)]


def test_each_solver_submits_its_best_run_and_the_default_scores_one(residency_runs, tmp_path):
    lib, entry, records = residency_runs
    best = best_runs(lib, records)
    searched = [r["latency"] for r in records if r["solver"] == "sa"]
    assert best["sa"][entry.id]["latency"] == min(searched)
    named = score_runs(lib, records, tmp_path)
    assert set(named) == {"msa", "all-slowest", "sa", REFERENCE}
    assert [s.entry.id for s in named["msa"]] == [entry.id]  # only what the runs cover
    msa = named["msa"][0]
    assert msa.objective == pytest.approx(entry.default["objective"], rel=1e-9)
    assert msa.speedup == pytest.approx(1.0, rel=1e-9)
    slow = named["all-slowest"][0]
    assert slow.speedup < 1.0 and slow.gap(entry.best["objective"]) > 0
    ref = named[REFERENCE][0]
    assert ref.objective == entry.best["objective"] and ref.gap(entry.best["objective"]) == 0.0
    table = entry_table(named)
    assert f"| {entry.id} | {entry.split} | {entry.ops} | msa |" in table


def test_a_forged_latency_scores_as_the_default_and_another_instance_is_not_the_entry(
        residency_runs, tmp_path):
    lib, entry, records = residency_runs
    forged = dict(records[1], latency=records[1]["latency"] * 0.01, solver="forger")
    elsewhere = dict(records[0], instance_sha256="0" * 64, solver="elsewhere")
    said = []
    named = score_runs(lib, records + [forged, elsewhere], tmp_path, echo=said.append)
    assert named["forger"][0].objective is None and named["forger"][0].speedup == 1.0
    assert any(line.startswith(f"forger on {entry.id}: invalid") for line in said)
    assert "elsewhere" not in named
    assert set(covered(lib, [elsewhere])) == set()


def test_score_command_reads_a_runs_file(residency_runs, small_library, tmp_path):
    lib, entry, records = residency_runs
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "score.md"
    memplace = [sys.executable, "-m", "memplace.cli"]
    done = subprocess.run(memplace + ["lib", "score", "--lib", str(small_library), str(runs),
                                      "--out", str(out), "--submissions", str(tmp_path / "subs")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    # the terminal shows the file's table, then (only when a run beats the best known, which
    # a 0.5-s `sa` may do on a fast machine) the hint how to record it, never in the file
    assert done.stdout.startswith(text)
    rest = done.stdout[len(text):]
    assert rest == "" or rest.startswith("\nbetter than the best known on 1 entry "
                                         f"({entry.id}): `memplace lib submit --lib ")
    assert "better than the best known" not in text
    assert "| best known (reference) | residency | " in text and f"| {entry.id} |" in text
    # the command it was written by reruns: a folder of one's own is named by its path
    assert f"`memplace lib score --lib {small_library} {runs} --out {out}`" in text
    assert (tmp_path / "subs" / "msa" / f"residency-{INSTANCE}.json").is_file()
    none = tmp_path / "none.jsonl"
    none.write_text(json.dumps(dict(records[0], instance="other@nnpi")) + "\n")
    bad = subprocess.run(memplace + ["lib", "score", "--lib", str(small_library), str(none)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "no run is on an entry" in bad.stderr
