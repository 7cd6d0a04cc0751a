"""memplace-lib: certificates, the store, verify catching what is wrong."""
from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from memplace.bench.library import store
from memplace.bench.library.verify import verify
from memplace.instances import load
from memplace.instances.library import read_library, split_of
from memplace.solvers.certificate import check_lp_dual, closed_form, lp_dual

INSTANCE = "vgg16@nnpi"  # the instance of the small_library fixture (conftest.py)


def test_lp_dual_certificate_proves_the_lp_optimum_and_no_more():
    inst = load(INSTANCE)
    cert = lp_dual(inst, "static-milp")
    assert cert is not None and cert["bound"] > closed_form(inst) * 0.5
    assert check_lp_dual(inst, cert) == pytest.approx(cert["bound"], rel=1e-12)
    best = __import__("memplace.solvers", fromlist=["solve"]).solve(inst, "milp", time_limit=5)
    assert cert["bound"] <= best.latency * (1 + 1e-9)
    # any other dual vector proves less (weak duality): perturb every dual
    rng = np.random.default_rng(0)
    for _ in range(5):
        bad = dict(cert, value=(np.array(cert["value"]) * rng.uniform(0.5, 1.5, len(cert["value"]))).tolist())
        assert check_lp_dual(inst, bad) <= cert["bound"] * (1 + 1e-9)
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1)) == -math.inf


def test_split_is_by_workload_and_deterministic():
    assert split_of("resnet50") == split_of("resnet50")
    names = [f"model-{k}" for k in range(200)]
    test = [n for n in names if split_of(n) == "test"]
    assert 20 < len(test) < 80  # about one in four


def test_verify_passes_on_what_improve_recorded(small_library):
    lib = read_library(small_library)
    assert {e.problem for e in lib.entries} == {"static", "residency", "packing"}
    reports, problems = verify(lib)
    assert problems == [] and [r.errors for r in reports] == [[], [], []]
    static = lib.entry("static/" + INSTANCE)
    assert static.best["objective"] <= static.default["objective"]
    assert static.best["provenance"]["solver"] in ("compiler", "milp", "sa")
    assert static.certified_bound is not None and static.certified_bound <= static.best["objective"]
    packing = lib.entry("packing/example-12")
    assert packing.best["objective"] == 12 and packing.status == "optimal"


def _copy(small_library, tmp_path):
    import shutil
    target = tmp_path / "memplace-lib-7"
    shutil.copytree(small_library, target)
    return target


def test_verify_rejects_a_solution_whose_objective_differs(small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    manifest = json.loads((folder / "library.json").read_text())
    entry = next(e for e in manifest["entries"] if e["problem"] == "static")
    entry["best"]["objective"] *= 0.99
    (folder / "library.json").write_text(json.dumps(manifest))
    reports, _ = verify(read_library(folder))
    errors = [e for r in reports for e in r.errors]
    assert any("the library records" in e for e in errors)


def test_verify_rejects_a_bound_its_certificate_does_not_prove(small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    manifest = json.loads((folder / "library.json").read_text())
    entry = next(e for e in manifest["entries"] if e["problem"] == "static")
    bound = next(b for b in entry["bounds"] if b["kind"] == "lp-dual")
    path = folder / bound["certificate"]
    cert = json.loads(gzip.decompress(path.read_bytes()))
    cert["value"] = [v * 3 for v in cert["value"]]
    path.write_bytes(gzip.compress(json.dumps(cert).encode()))
    reports, _ = verify(read_library(folder))
    errors = [e for r in reports for e in r.errors]
    assert any("certificate proves only" in e for e in errors)


def test_verify_rejects_an_instance_that_changed(small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    csv = folder / "instances" / "example-12.csv"
    csv.write_text(csv.read_text().replace("\n", "\n", 1) + "")
    text = csv.read_text().splitlines()
    text[1] = text[1].rsplit(",", 1)[0] + ",1"
    csv.write_text("\n".join(text) + "\n")
    reports, _ = verify(read_library(folder))
    errors = [e for r in reports for e in r.errors]
    assert any("has changed" in e for e in errors)


def test_what_is_recorded_in_a_library_read_from_files_is_saved(small_library, tmp_path):
    folder = _copy(small_library, tmp_path)
    lib = read_library(folder)
    entry = lib.entry("static/" + INSTANCE)
    prov = store.provenance("milp", {}, 0, 1.0, 0.5)
    assert store.record_bound(lib, entry, entry.best["objective"] * 0.999, "branch-and-bound", prov,
                              label="test")
    store.save(lib)
    again = read_library(folder).entry("static/" + INSTANCE)
    assert "test" in [b["label"] for b in again.bounds if b["kind"] == "branch-and-bound"]


def test_access_relaxation_certificate_needs_a_valid_ceiling_and_proves_no_more():
    from memplace.solvers import solve
    from memplace.solvers.certificate import ACCESS_MODEL
    inst = load("resnet50@edge-tpu", "residency")
    valid = solve(inst, "msa", problem="residency").latency
    cert = lp_dual(inst, ACCESS_MODEL, 60, ceiling=valid)
    assert cert is not None and cert["ceiling"] == valid
    assert 0 < cert["bound"] <= valid
    assert check_lp_dual(inst, cert, valid_latency=valid) == pytest.approx(cert["bound"], rel=1e-12)
    # a ceiling below a known valid latency, or none known, proves nothing
    assert check_lp_dual(inst, cert, valid_latency=valid * 1.01) == -math.inf
    assert check_lp_dual(inst, cert) == -math.inf
    # weak duality: other duals prove less
    rng = np.random.default_rng(1)
    bad = dict(cert, value=(np.array(cert["value"]) * rng.uniform(0.5, 1.5, len(cert["value"]))).tolist())
    assert check_lp_dual(inst, bad, valid_latency=valid) <= cert["bound"] * (1 + 1e-9)
    assert check_lp_dual(inst, dict(cert, rows=cert["rows"] + 1), valid_latency=valid) == -math.inf


def test_static_best_known_is_offered_to_the_residency_entry(small_library, tmp_path):
    from memplace.bench.library.improve import offer_static
    lib = read_library(_copy(small_library, tmp_path))
    offer_static(lib, echo=lambda line: None)
    lib = read_library(lib.folder)
    static, residency = lib.entry("static/" + INSTANCE), lib.entry("residency/" + INSTANCE)
    # a static placement is a residency solution of the same latency (spec section 9)
    assert residency.best["objective"] <= static.best["objective"] * (1 + 1e-9)
    reports, problems = verify(lib)
    assert problems == [] and [r.errors for r in reports] == [[], [], []]


def test_bounds_command_solves_the_certificates_again_and_writes_no_library(small_library, tmp_path):
    import subprocess
    import sys
    from memplace.instances.library import content_hash
    before = content_hash(small_library)
    entry = read_library(small_library).entry("residency/" + INSTANCE)
    out, certs = tmp_path / "bounds.md", tmp_path / "certs"
    done = subprocess.run([sys.executable, "-m", "memplace.cli", "lib", "bounds", "--lib", str(small_library),
                           "--entry", entry.id, "--time-limit", "30", "--certificates", str(certs),
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    row = next(line for line in out.read_text().splitlines() if line.startswith(f"| {entry.id} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[4]) >= float(cells[3]) * (1 - 1e-6)  # bound after >= bound before (us)
    assert content_hash(small_library) == before  # the library is not written
    inst = load(INSTANCE, "residency")
    for path in certs.glob("*.json.gz"):  # every certificate written proves what it says
        cert = json.loads(gzip.decompress(path.read_bytes()))
        assert check_lp_dual(inst, cert, valid_latency=entry.best["objective"]) == \
            pytest.approx(cert["bound"], rel=1e-9)
        assert cert["bound"] <= entry.best["objective"]


def test_improve_from_best_starts_multistart_from_the_best_known_and_names_it(small_library,
                                                                              tmp_path):
    import hashlib
    from memplace.bench.library.improve import improve_tasks, run_task
    lib = read_library(_copy(small_library, tmp_path))
    entry = lib.entry("residency/" + INSTANCE)
    tasks = improve_tasks(lib, [entry], 2.0, solvers={"residency": ("multistart", "sa")},
                          certify=False, from_best=True)
    given = {t.solver: t.params.get("start") for t in tasks}
    assert given == {"multistart": str(lib.path(entry.best["file"])), "sa": None}
    outcome = run_task(next(t for t in tasks if t.solver == "multistart"))
    digest = hashlib.sha256(lib.path(entry.best["file"]).read_bytes()).hexdigest()
    assert outcome["params"]["start"] == f"sha256:{digest}"  # not the local path
    assert json.loads(outcome["solution"])["solver"]["params"]["start"] == f"sha256:{digest}"
    assert outcome["objective"] <= entry.best["objective"] * (1 + 1e-9)


def test_improve_param_reaches_every_run_converted_and_is_in_the_provenance(small_library,
                                                                           tmp_path):
    from memplace.bench.library.improve import improve_tasks, run_task
    lib = read_library(_copy(small_library, tmp_path))
    entry = lib.entry("residency/" + INSTANCE)
    tasks = improve_tasks(lib, [entry], 2.0, seeds=2, solvers={"residency": ("sa",)},
                          certify=False, params={"iterations": "300", "restarts": "1"})
    assert [(t.seed, t.params) for t in tasks] == [(0, {"iterations": 300, "restarts": 1}),
                                                    (1, {"iterations": 300, "restarts": 1})]
    outcome = run_task(tasks[0])
    assert outcome["params"]["iterations"] == 300 and outcome["params"]["restarts"] == 1
    assert json.loads(outcome["solution"])["solver"]["params"]["iterations"] == 300


@pytest.mark.parametrize("args, words", [
    (["--solver", "sa", "--param", "no_such=1"], ["'sa'", "'no_such'"]),
    (["--solver", "sa", "--param", "iterations=many"], ["'sa'", "'iterations'", "'many'"]),
    (["--solver", "sa", "--param", "restarts=0"], ["'sa'", "'restarts'"]),
    (["--solver", "sa", "--param", "iterations"], ["'iterations'", "KEY=VALUE"]),
    (["--param", "start=x.json"], ["'bound'", "'start'"]),  # the default improvers: bound has none
    (["--solver", "multistart", "--from-best", "--param", "start=x.json"], ["--from-best", "start"]),
    (["--certify-only", "--param", "iterations=1"], ["--certify-only", "--param"]),
    (["--until-gap", "0"], ["'--until-gap'", "0<x<=100"]),
    (["--until-gap", "5", "--no-certify"], ["--until-gap", "--no-certify"]),
], ids=["unknown key", "not a number", "out of range", "no value", "a solver without it",
        "start twice", "no solver runs", "no target", "a ladder without certificates"])
def test_improve_refuses_a_bad_param_with_one_line_naming_it_before_running(small_library, args,
                                                                             words):
    import subprocess
    import sys
    from memplace.instances.library import content_hash
    before = content_hash(small_library)
    done = subprocess.run([sys.executable, "-m", "memplace.cli", "lib", "improve", "--lib",
                           str(small_library), "--entry", "residency/" + INSTANCE,
                           "--time-limit", "1", *args], capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert content_hash(small_library) == before  # nothing ran, nothing was written


def test_two_runs_recording_into_one_version_at_once_keep_each_others_records(small_library, tmp_path):
    """Two `improve` runs read the version, each records a bound on its own entry and saves:
    the second save keeps the first's record (it once wrote its stale copy over it)."""
    from memplace.bench.library import store
    folder = _copy(small_library, tmp_path)
    first, second = read_library(folder), read_library(folder)
    static, packing = first.entry("static/" + INSTANCE), second.entry("packing/example-12")
    prov = store.provenance("test")
    assert store.record_bound(first, static, static.best["objective"] * 0.5, "branch-and-bound", prov,
                              label="one")
    store.save(first)
    assert store.record_bound(second, packing, 5.0, "branch-and-bound", prov, label="two")
    store.save(second)
    again = read_library(folder)
    assert any(b.get("label") == "one" for b in again.entry("static/" + INSTANCE).bounds)
    assert any(b.get("label") == "two" for b in again.entry("packing/example-12").bounds)
    # the second run sees the first's record in memory too, and a third save loses nothing
    assert any(b.get("label") == "one" for b in second.entry("static/" + INSTANCE).bounds)
    store.save(second)
    assert any(b.get("label") == "one" for b in read_library(folder).entry("static/" + INSTANCE).bounds)


def test_a_bound_proved_but_not_above_the_recorded_one_is_said(small_library, tmp_path):
    from memplace.bench.library.improve import record
    lib = read_library(_copy(small_library, tmp_path))
    entry = lib.entry("static/" + INSTANCE)
    task = {"entry": entry.id, "solver": "lp-dual", "seed": 0, "time_limit": 1.0, "params": {}}
    low = {"kind": "branch-and-bound", "value": entry.best["objective"] * 0.5, "label": "x"}
    assert record(lib, {"task": task, "bounds": [low]}) == [f"{entry.id}: branch-and-bound bound "
                                                            f"{low['value'] * 1e6:.3f} us (x)"]
    notes: list[str] = []
    assert record(lib, {"task": task, "bounds": [dict(low, value=low["value"] * 0.9)]}, notes) == []
    assert len(notes) == 1 and notes[0].endswith("not recorded (one of its kind at least as high is)")
    # a certificate model that gave none (a tree no better than its root, an LP not solved
    # in time) is said too, so a 30-minute run does not end in silence
    notes = []
    assert record(lib, {"task": task, "bounds": [], "unproved": ["residency-relaxation-tree"]},
                  notes) == []
    assert notes == [f"{entry.id}: residency-relaxation-tree: no certificate in 1 s (its LP not "
                     "solved in time, or a tree proving no more than its root or the tree it "
                     "grew on)"]


def test_until_gap_climbs_the_ladder_only_while_an_entry_is_above_the_target(small_library, tmp_path,
                                                                             monkeypatch):
    """`improve --until-gap`: each rung runs on the residency entries still above the target
    (its solvers from the best known, or its tree), and an entry within runs none."""
    from memplace.bench.library import improve as improving
    from memplace.bench.library.improve import LADDER, Rung, above_target, climb
    assert [r.name for r in LADDER] == ["step covers", "the bound MILP",
                                        "multistart from the best known",
                                        "weight streaming from the best known", "relaxation tree",
                                        "step-cover tree", "units tree"]
    assert [r.solvers for r in LADDER][:4] == [(), ("bound",), ("multistart",), ("multistart",)]
    assert [r.from_best for r in LADDER][:4] == [False, False, True, True]
    assert [dict(r.params) for r in LADDER][:4] == [{}, {}, {}, {"stream_share": "0.5"}]
    from memplace.bench.library.improve import (SEARCH_TIME_LIMIT_S, STEP_COVER_TIME_LIMIT_S,
                                                TREE_TIME_LIMIT_S)
    assert [r.min_time for r in LADDER] == [STEP_COVER_TIME_LIMIT_S] + [SEARCH_TIME_LIMIT_S] * 3 + \
        [TREE_TIME_LIMIT_S] * 3
    assert [r.models for r in LADDER][:1] + [r.models for r in LADDER][4:] == [
        ("residency-delivery-step-cover",), ("residency-relaxation-tree",),
        ("residency-delivery-step-cover-tree",), ("residency-delivery-units-tree",)]
    lib = read_library(_copy(small_library, tmp_path))
    entry = lib.entry("residency/" + INSTANCE)
    static = lib.entry("static/" + INSTANCE)
    gap = entry.certified_gap
    assert gap is not None and gap > 1e-6  # the fixture's 1 s runs leave it open
    ran: list = []
    real = improving.results
    monkeypatch.setattr(improving, "results", lambda tasks, scheduler=None: ran.append(tasks) or
                        real(tasks, scheduler))
    quick = (Rung("multistart", solvers=("multistart",), from_best=True,
                  params=(("stream_share", "0.5"),)),
             Rung("tree", models=("residency-relaxation-tree",), min_time=2.0))
    lines: list[str] = []
    # within the target: nothing runs, nothing is said
    assert climb(lib, 1.0, [entry, static], 2 * gap, echo=lines.append, ladder=quick) == 0
    assert lines == [] and ran == [] and above_target([entry, static], 2 * gap) == []
    # above it: every rung runs on the residency entry only (static is not the ladder's)
    climb(lib, 1.0, [entry, static], gap / 1e6, echo=lines.append, ladder=quick)
    said = [line for line in lines if line.startswith("until-gap")]
    assert said == [f"until-gap {100 * gap / 1e6:g}%: multistart on 1 entry above it",
                    f"until-gap {100 * gap / 1e6:g}%: tree on 1 entry above it"], lines
    first, second = ran
    assert [(t.entry, t.solver, t.time_limit, t.params.get("start"), t.params.get("stream_share"))
            for t in first] == [(entry.id, "multistart", 1.0, str(lib.path(entry.best["file"])), 0.5)]
    trees = [t for t in second if t.params.get("models") == ["residency-relaxation-tree"]]
    assert {t.entry for t in second} == {entry.id} and [t.time_limit for t in trees] == [2.0]
    assert all(t.solver == "lp-dual" for t in second)
    from memplace.bench.library.improve import climb_text
    from memplace.bench.library.tables import percent
    assert climb_text([entry, static], gap / 1e6) == (
        f"until-gap {100 * gap / 1e6:g}%: 0 of the 1 residency entry above it are within now; "
        f"above: {entry.id} {percent(entry.certified_gap)}%")
    assert climb_text([entry, static], 2 * gap).endswith(": 1 of the 1 residency entry above "
                                                          "it is within now")
    reports, problems = verify(read_library(lib.folder))
    assert problems == [] and all(r.errors == [] for r in reports)


def _three_leaf_tree(small_library, tmp_path):
    """A copy of the library, its residency entry, the instance and a relaxation tree of 3
    leaves grown at the best known (its certificate, with the bound its check proves)."""
    from memplace.solvers.certificate import START_TREE_MODEL
    from memplace.solvers.residency.machinery import start_tree
    folder = _copy(small_library, tmp_path)
    lib = read_library(folder)
    entry = lib.entry("residency/" + INSTANCE)
    inst = load(INSTANCE, "residency")
    ceiling = entry.best["objective"]
    part, rows = start_tree.grow(inst, ceiling, 30.0, 3, op_rows=True)
    cert = {"kind": "lp-dual", "model": START_TREE_MODEL, "ceiling": ceiling, "rows": rows,
            "op_rows": True, "leaves": part.leaves, "tree": part.tree}
    cert["bound"] = check_lp_dual(inst, cert, valid_latency=ceiling)
    assert part.leaves == 3 and cert["bound"] > 0
    return folder, lib, entry, inst, cert


def test_a_tree_at_its_leaf_limit_says_so_and_resume_says_it_grows_no_further(small_library, tmp_path,
                                                                              monkeypatch):
    """A tree stopped by its leaf limit, not its time: the bound's line says so, and a
    `--resume` of a stored tree that has its limit's leaves says it grows no further
    (instead of "no certificate in N s"), so a user does not buy more time for nothing."""
    from memplace.bench.library import store
    from memplace.bench.library.improve import improve_tasks, record, run_task
    from memplace.solvers import certificate
    from memplace.solvers.certificate import START_TREE_MODEL
    folder, lib, entry, _, cert = _three_leaf_tree(small_library, tmp_path)
    # the line of a bound whose tree reached the limit
    task = {"entry": entry.id, "solver": "lp-dual", "seed": 0, "time_limit": 9.0, "params": {}}
    bound = {"kind": "lp-dual", "value": cert["bound"], "label": START_TREE_MODEL, "certificate": cert}
    assert record(lib, {"task": task, "bounds": [bound], "full_trees": {START_TREE_MODEL: 3}}) == [
        f"{entry.id}: lp-dual bound {cert['bound'] * 1e6:.3f} us ({START_TREE_MODEL}; the tree "
        f"reached its 3-leaf limit)"]
    store.save(lib)
    lib = read_library(folder)
    entry = lib.entry("residency/" + INSTANCE)
    # grown on with a limit of the 3 leaves it has: nothing grows, and that is what is said
    monkeypatch.setitem(certificate.TREE_LEAF_LIMITS, START_TREE_MODEL, 3)
    tasks = improve_tasks(lib, [entry], 5.0, solvers={"residency": ()}, models=[START_TREE_MODEL],
                          resume=True)
    tree = next(t for t in tasks if t.params.get("models") == [START_TREE_MODEL])
    out = run_task(tree)
    assert out["unproved"] == [START_TREE_MODEL] and out["full_trees"] == {START_TREE_MODEL: 3}
    notes: list[str] = []
    assert record(lib, out, notes) == []
    assert notes == [f"{entry.id}: {START_TREE_MODEL}: the stored tree has 3 leaves, its limit: "
                     "--resume grows it no further"]
    # below the limit nothing is said of it (no tree reaches 10^6 leaves in the task's 5 s)
    monkeypatch.setitem(certificate.TREE_LEAF_LIMITS, START_TREE_MODEL, 10**6)
    out = run_task(tree)
    assert out["full_trees"] == {}


def test_an_entry_without_a_certified_bound_is_named_so_not_as_a_dash_percent():
    from memplace.bench.library.tables import certified_gap_text
    from memplace.instances.library import Entry
    best = {"objective": 2.0e-6, "file": "solutions/x.json", "provenance": {}}
    entry = Entry("residency/x", "residency", "x", "x", "0" * 64, "test", 10,
                  {"solver": "msa", "objective": 3.0e-6}, best, [])
    assert certified_gap_text(entry) == "no certified bound"
    entry.bounds.append({"value": 1.0e-6, "kind": "lp-dual", "certificate": None, "provenance": {}})
    assert certified_gap_text(entry) == "100.00%"


def test_resume_grows_the_stored_tree_and_names_it_by_its_content(small_library, tmp_path):
    """`lib improve --lp-model residency-relaxation-tree --resume`: the entry's stored tree
    certificate is handed to the run (by path) and named in the provenance by its sha256;
    without --resume, or without such a model, a new tree or a one-line refusal."""
    import hashlib
    from click.testing import CliRunner
    from memplace.bench.library import store
    from memplace.bench.library.improve import improve, improve_tasks, run_task
    from memplace.cli.main import main
    from memplace.model.core.errors import ParameterError
    from memplace.solvers.certificate import START_TREE_MODEL
    folder, lib, entry, inst, cert = _three_leaf_tree(small_library, tmp_path)
    ceiling = cert["ceiling"]
    assert store.record_bound(lib, entry, cert["bound"], "lp-dual", store.provenance("lp-dual"),
                              cert, START_TREE_MODEL)
    store.save(lib)
    lib = read_library(folder)
    entry = lib.entry("residency/" + INSTANCE)
    path = next(lib.path(b["certificate"]) for b in entry.bounds if b.get("label") == START_TREE_MODEL)
    models = [START_TREE_MODEL]
    tasks = improve_tasks(lib, [entry], 2.0, solvers={"residency": ()}, models=models, resume=True)
    trees = [t for t in tasks if t.params.get("models") == models]
    assert [t.params.get("resume") for t in trees] == [str(path)]
    fresh = improve_tasks(lib, [entry], 2.0, solvers={"residency": ()}, models=models)
    assert [t.params.get("resume") for t in fresh if t.params.get("models") == models] == [None]
    out = run_task(trees[0])
    assert out["params"]["resume"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    # what it recorded (if its tree proved more) re-checks, and stores the ceiling it grew on
    for b in out["bounds"]:
        assert b["certificate"]["ceiling"] == ceiling and b["value"] > cert["bound"]
        assert check_lp_dual(inst, b["certificate"], valid_latency=ceiling) == pytest.approx(b["value"])
    with pytest.raises(ParameterError, match="--resume grows stored trees"):
        improve(lib, 1.0, [entry], solvers={"residency": ()}, resume=True)
    result = CliRunner().invoke(main, ["lib", "improve", "--lib", str(folder), "--entry", entry.id,
                                       "--certify-only", "--resume"])
    assert result.exit_code == 2 and "--resume grows stored trees" in result.output, result.output
