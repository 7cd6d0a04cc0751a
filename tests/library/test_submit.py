"""`memplace lib submit`: solution files found elsewhere recorded as best knowns, each
validated and re-measured first, with the file's solver and sha256 as provenance."""
from __future__ import annotations

import hashlib
import json
import shutil

from click.testing import CliRunner

from memplace.bench.library import store
from memplace.bench.library.runs import write_submissions
from memplace.bench.library.verify import verify
from memplace.cli.main import main
from memplace.instances.library import read_library


def _copy(small_library, tmp_path):
    folder = tmp_path / "lib"
    shutil.copytree(small_library, folder)
    return folder


def _worse_best(folder, entry_id, factor=1.5):
    """The manifest as if the entry's best known were `factor` times worse than its file."""
    lib = read_library(folder)
    e = lib.entry(entry_id)
    e.best["objective"] *= factor
    store.save(lib)


def _entry_and_its_file(small_library, tmp_path, problem, name):
    """A copy of the library, its entry of `problem`, and its best known file copied to `name`."""
    folder = _copy(small_library, tmp_path)
    lib = read_library(folder)
    e = next(x for x in lib.entries if x.problem == problem)
    sub = tmp_path / name
    shutil.copyfile(lib.path(e.best["file"]), sub)
    return folder, lib, e, sub


def _run_records(lib, e, solvers):
    """`memplace bench` records of `solvers` (seed 0, 5 s) on the static entry `e`."""
    from memplace.bench.task import Task
    from memplace.bench.worker import result_record
    from memplace.instances import load
    from memplace.solvers import solve
    inst = load(lib.instance_source(e), "static")
    out = []
    for solver in solvers:
        result = solve(inst, solver, time_limit=5.0, seed=0, problem="static")
        task = Task(e.name, lib.instance_source(e), e.sha256, solver, dict(result.params), 0,
                    5.0, problem="static")
        out.append(json.loads(json.dumps(result_record(task, inst, result))))
    return out


def test_a_better_file_is_recorded_with_its_provenance_and_the_library_still_verifies(
        small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    lib = read_library(folder)
    e = next(x for x in lib.entries if x.problem == "residency")
    sub = tmp_path / "mine.json"
    data = json.loads(lib.path(e.best["file"]).read_text(encoding="utf-8"))
    data["solver"] = {"name": "my-policy", "params": {"depth": 3}, "seed": 7}
    sub.write_text(json.dumps(data), encoding="utf-8")
    true_objective = e.best["objective"]
    _worse_best(folder, e.id)

    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(sub)])
    assert result.exit_code == 0, result.output
    assert f"{e.id}: best " in result.output and "(submitted mine.json)" in result.output
    after = read_library(folder).entry(e.id)
    # the objective is the one recomputed here, not a figure the file claims
    assert after.best["objective"] == true_objective
    prov = after.best["provenance"]
    assert (prov["solver"], prov["params"], prov["seed"]) == ("my-policy", {"depth": 3}, 7)
    assert prov["submitted"] == {"file": "mine.json",
                                 "sha256": hashlib.sha256(sub.read_bytes()).hexdigest()}
    assert read_library(folder).path(after.best["file"]).read_bytes() == sub.read_bytes()
    checks, errors = verify(read_library(folder))
    assert not errors and all(not c.errors for c in checks)
    shown = CliRunner().invoke(main, ["lib", "show", "--lib", str(folder), e.id])
    assert "submitted as mine.json" in shown.output and "naming my-policy seed 7" in shown.output
    listed = CliRunner().invoke(main, ["lib", "list", "--lib", str(folder)])
    assert "my-policy (submitted)" in listed.output


def test_a_file_no_better_than_the_best_known_is_valid_and_not_recorded(small_library, tmp_path):
    folder, lib, e, sub = _entry_and_its_file(small_library, tmp_path, "static", "same.json")
    before = (folder / "library.json").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(sub)])
    assert result.exit_code == 0, result.output
    assert f"{e.id}: same.json is valid" in result.output and "not recorded" in result.output
    assert json.loads((folder / "library.json").read_text(encoding="utf-8"))["entries"] == \
        json.loads(before)["entries"]


def test_the_best_of_several_files_per_entry_is_the_one_recorded(small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    lib = read_library(folder)
    e = next(x for x in lib.entries if x.problem == "static")
    best = json.loads(lib.path(e.best["file"]).read_text(encoding="utf-8"))
    subs = tmp_path / "subs"
    subs.mkdir()
    # the slowest placement: valid, and worse than the best known's file
    from memplace.instances import load
    from memplace.solvers import solve
    inst = load(lib.instance_source(e), "static")
    slow = solve(inst, "all-slowest", time_limit=5.0, seed=0, problem="static").to_solution()
    slow = dict(slow.to_dict(inst), solver={"name": "slow", "params": {}, "seed": 0})
    (subs / "a-slow.json").write_text(json.dumps(slow), encoding="utf-8")
    (subs / "b-best.json").write_text(json.dumps(dict(best, solver={"name": "good", "params": {},
                                                                      "seed": 1})), encoding="utf-8")
    _worse_best(folder, e.id, factor=1e3)
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(subs)])
    assert result.exit_code == 0, result.output
    after = read_library(folder).entry(e.id)
    assert after.best["provenance"]["solver"] == "good"
    assert after.best["objective"] == lib.entry(e.id).best["objective"]


def test_an_invalid_file_records_nothing_and_names_itself(small_library, tmp_path):
    folder, lib, e, good = _entry_and_its_file(small_library, tmp_path, "residency", "good.json")
    _worse_best(folder, e.id)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "memplace-solution/2", "instance": e.name,
                               "placement": ["SRAM"]}), encoding="utf-8")
    before = (folder / "library.json").read_bytes()
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(good), str(bad)])
    assert result.exit_code == 2 and "bad.json" in result.output and e.id in result.output
    assert (folder / "library.json").read_bytes() == before
    for args, words in (([str(tmp_path / "absent.json")], "no such solution file"),
                        ([str(tmp_path / "empty")], "no solution files")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        missing = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), *args])
        assert missing.exit_code == 2 and words in missing.output, missing.output


def test_a_frozen_version_takes_no_submission(small_library, tmp_path):
    folder, lib, e, sub = _entry_and_its_file(small_library, tmp_path, "static", "s.json")
    store.freeze(lib)
    before = (folder / "library.json").read_bytes()
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(sub)])
    assert result.exit_code == 2 and "frozen" in result.output
    assert (folder / "library.json").read_bytes() == before


def test_the_files_score_writes_from_runs_name_the_solver_that_ran(small_library, tmp_path):
    """`lib score RUNS --submissions DIR` keeps each solver's files; they name their run,
    so submitting one records who found it."""
    lib = read_library(small_library)
    e = next(x for x in lib.entries if x.problem == "static")
    (record,) = _run_records(lib, e, ["greedy-size"])
    folders = write_submissions(lib, [record], tmp_path / "subs")
    written = json.loads((folders["greedy-size"] / f"static-{e.name}.json").read_text(encoding="utf-8"))
    assert written["solver"] == {"name": "greedy-size", "params": record["params"], "seed": 0}
    _worse_best(folder := _copy(small_library, tmp_path), e.id, factor=1e3)
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(folders["greedy-size"])])
    assert result.exit_code == 0, result.output
    assert read_library(folder).entry(e.id).best["provenance"]["solver"] == "greedy-size"


def test_a_packing_csv_is_matched_by_its_name_and_recorded_when_lower(small_library, tmp_path):
    lib = read_library(small_library)
    name = next(x for x in lib.entries if x.problem == "packing").name
    folder, lib, e, sub = _entry_and_its_file(small_library, tmp_path, "packing", f"{name}.csv")
    height = e.best["objective"]
    _worse_best(folder, e.id, factor=2)
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(sub)])
    assert result.exit_code == 0 and f"(submitted {sub.name})" in result.output, result.output
    after = read_library(folder).entry(e.id)
    assert after.best["objective"] == height and after.best["file"].endswith(".csv")
    assert after.best["provenance"]["solver"] == "submitted"  # a CSV names no solver
    checks, errors = verify(read_library(folder))
    assert not errors and all(not c.errors for c in checks)


def test_a_runs_file_submits_the_best_valid_run_per_entry_over_every_solver(small_library, tmp_path):
    lib = read_library(small_library)
    e = next(x for x in lib.entries if x.problem == "static")
    records = _run_records(lib, e, ["all-slowest", "greedy-size"])
    forged = dict(records[0], latency=records[0]["latency"] * 1e-3, solver="forger")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in records + [forged]), encoding="utf-8")
    folder = _copy(small_library, tmp_path)
    _worse_best(folder, e.id, factor=1e3)
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(runs)])
    # the forged claim is a file that does not hold: the whole submission is refused
    assert result.exit_code == 2 and "claimed latency" in result.output, result.output
    assert f"{runs}: forger's best run on {e.name}: not a valid solution of {e.id}" in result.output
    runs.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(runs)])
    assert result.exit_code == 0 and f"{e.id}: best " in result.output, result.output
    prov = read_library(folder).entry(e.id).best["provenance"]
    assert prov["solver"] == "greedy-size" and prov["submitted"]["runs"] == str(runs)


def test_score_says_which_entries_a_submission_beats_and_how_to_record_them(small_library, tmp_path):
    folder, lib, e, sub = _entry_and_its_file(small_library, tmp_path, "static", "x.json")
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.move(sub, subs / sub.name)
    out = tmp_path / "score.md"
    plain = CliRunner().invoke(main, ["lib", "score", "--lib", str(folder), str(subs)])
    assert plain.exit_code == 0 and "better than the best known" not in plain.output
    _worse_best(folder, e.id)
    result = CliRunner().invoke(main, ["lib", "score", "--lib", str(folder), str(subs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    hint = (f"better than the best known on 1 entry ({e.id}): `memplace lib submit --lib {folder} "
            f"{subs}` records it")
    assert hint in result.output and "better than" not in out.read_text(encoding="utf-8")
    assert CliRunner().invoke(main, ["lib", "submit", "--lib", str(folder), str(subs)]).exit_code == 0
    again = CliRunner().invoke(main, ["lib", "score", "--lib", str(folder), str(subs)])
    assert "better than the best known" not in again.output
    # a frozen version takes no submission: the hint does not offer the command
    _worse_best(folder, e.id)
    store.freeze(read_library(folder))
    frozen = CliRunner().invoke(main, ["lib", "score", "--lib", str(folder), str(subs)])
    assert frozen.exit_code == 0 and "is frozen: a new version or a library of your own takes it" \
        in frozen.output and "lib submit" not in frozen.output
