"""The benchmark harness: plans, worker processes under hard limits, runs.jsonl, resume,
the Dask executor and validate-results, driven by the test-only solvers of bench_solvers.py."""
from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplace.cli import main
from memplace.bench.plan import (EXTRA_MODULES_ENV, PlanError, import_solver_modules,
                                 load_plan)
from memplace.bench.results import Results
from memplace.bench.store import FIELDS, RunsFileError, read_runs, record_key
from memplace.instances import builtin_path
from memplace.model import Instance
from memplace.solvers import registry, solve, solvers_of
from randominst import random_instance_dict

HELPERS = Path(__file__).resolve().parents[1] / "bench_solvers.py"


@pytest.fixture(scope="module", autouse=True)
def test_solvers():
    """Register the test-only solvers for this module only (other tests that walk the
    registry must not meet a solver that hangs on purpose)."""
    builtin = set(registry())  # loads the built-in solver modules first
    import_solver_modules([str(HELPERS)])
    yield
    for name in set(registry()) - builtin:
        solvers_of().remove(name)
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == HELPERS:
            del sys.modules[name]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def write_plan(folder: Path, name: str = "plan", params: dict | None = None, **keys) -> Path:
    lines = [f"{key} = {toml_value(value)}" for key, value in keys.items()]
    for solver, values in (params or {}).items():
        lines.append(f'[params."{solver}"]')
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items()]
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_instances(folder: Path, seeds: list[int]) -> list[Path]:
    paths = []
    for seed in seeds:
        path = folder / f"random-{seed}.json"
        path.write_text(json.dumps(random_instance_dict(seed, n_ops=8, n_tensors=12,
                                                        addressed=seed % 2 == 1), indent=1))
        paths.append(path)
    return paths


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def stable(record: dict) -> dict:
    """A record less what differs between two runs of it: timings and the machine."""
    out = {k: v for k, v in record.items() if k not in ("wall_s", "machine")}
    out["trace"] = [[evals, lat] for _, evals, lat in record["trace"]]
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The end-to-end plan, run once: two random instances (one with an addressed level),
    two heuristics and the test search solver, two seeds, two workers."""
    folder = tmp_path_factory.mktemp("batch")
    instances = write_instances(folder, [3, 4])
    plan = write_plan(folder, instances=[p.name for p in instances],
                      solvers=["compiler", "all-slowest", "test-steps"], seeds=[0, 1],
                      time_limit=20.0, solver_modules=[str(HELPERS)],
                      params={"test-steps": {"steps": 3}})
    out = folder / "out"
    result = cli("bench", plan, "--out", out, "--jobs", 2)
    assert result.exit_code == 0, result.output
    return {"folder": folder, "plan": plan, "out": out, "instances": instances,
            "output": result.output, "records": read_runs(out / "runs.jsonl")}


def test_plan_runs_end_to_end_with_deterministic_solvers_once(batch):
    records = batch["records"]
    runs = sorted((r["instance"], r["solver"], r["seed"]) for r in records)
    expected = sorted([(f"random-{i}", "compiler", 0) for i in (3, 4)]
                      + [(f"random-{i}", "all-slowest", 0) for i in (3, 4)]
                      + [(f"random-{i}", "test-steps", s) for i in (3, 4) for s in (0, 1)])
    assert runs == expected
    assert "[8/8" in batch["output"]
    assert (batch["out"] / "plan.toml").read_text() == batch["plan"].read_text()
    for record in records:
        assert set(record) == set(FIELDS)
        assert record["code"]["package"]  # which code made it (commit in a checkout)
        assert record["status"] == "feasible" and record["error"] is None
        if record["solver"] == "test-steps":  # one Numba thread per worker
            assert record["notes"] == {"numba_threads": 1}
        inst = Instance.from_file(record["instance_source"])
        assert record["instance_sha256"] == inst.fingerprint()
        assert len(record["placement"]) == inst.n_tensors
        assert set(record["placement"]) <= set(inst.level_names)
        assert (record["offsets"] is not None) == inst.has_addressed_levels
        params = {"steps": 3, "pause": 0.0} if record["solver"] == "test-steps" else {}
        assert record["params"] == params
        # the worker ran exactly what an in-process solve with the same seed gives
        alone = solve(inst, record["solver"], time_limit=20.0, seed=record["seed"], **params)
        assert record["latency"] == alone.latency
        assert record["evaluations"] == alone.evaluations
        assert [p[1:] for p in record["trace"]] == [[e, lat] for _, e, lat in alone.trace]


def test_validate_results_accepts_the_batch_and_catches_a_false_latency(batch, tmp_path):
    result = cli("validate-results", batch["out"] / "runs.jsonl")
    assert result.exit_code == 0, result.output
    assert "8 placements re-checked" in result.output and "0 do not hold" in result.output
    records = [dict(r) for r in batch["records"]]
    records[2]["latency"] *= 1.001
    records[5]["placement"] = [Instance.from_file(records[5]["instance_source"]).level_names[0]] \
        * len(records[5]["placement"])  # everything in the smallest level: over capacity
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = cli("validate-results", runs)
    assert result.exit_code == 1
    assert "line 3:" in result.output and "differs from the recomputed" in result.output
    assert "line 6:" in result.output and "over its capacity" in result.output
    assert "2 do not hold" in result.output


def test_a_second_bench_into_the_same_folder_needs_resume_and_then_runs_nothing(batch):
    before = (batch["out"] / "runs.jsonl").read_bytes()
    refused = cli("bench", batch["plan"], "--out", batch["out"])
    assert refused.exit_code == 2 and "--resume" in refused.output
    resumed = cli("bench", batch["plan"], "--out", batch["out"], "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "to run now: 0 (recorded: 8" in resumed.output
    assert (batch["out"] / "runs.jsonl").read_bytes() == before


def test_dask_executor_gives_the_same_records_as_the_local_pool(batch):
    """The batch's runs on the instance with an addressed level, again on a Dask LocalCluster."""
    plan = batch["plan"].read_text().replace(', "random-4.json"', "")
    assert plan != batch["plan"].read_text()
    (batch["folder"] / "dask.toml").write_text(plan)
    out = batch["folder"] / "dask"
    result = cli("bench", batch["folder"] / "dask.toml", "--out", out, "--jobs", 2, "--dask", "local")
    assert result.exit_code == 0, result.output
    local = sorted((stable(r) for r in batch["records"] if r["instance"] == "random-3"),
                   key=lambda r: str(record_key(r)))
    dask = sorted((stable(r) for r in read_runs(out / "runs.jsonl")), key=lambda r: str(record_key(r)))
    assert len(dask) == 4 and dask[0]["offsets"] is not None
    assert dask == local


def free_port() -> int:
    """A port no one listens on (just released by the OS)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_malformed_or_unanswered_scheduler_address_is_one_error_and_runs_nothing(batch, tmp_path):
    import dask
    import distributed  # noqa: F401  (its config defaults are in before dask.config.set saves
    # what to restore: set then removes only its own key, not the whole "distributed" tree)
    out = tmp_path / "out"
    silent = f"tcp://127.0.0.1:{free_port()}"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        for address, says in (("nonsense", "not a Dask scheduler address"),
                              (silent, "no Dask scheduler answers there")):
            result = cli("bench", batch["plan"], "--out", out, "--dask", address)
            assert result.exit_code == 2, result.output
            assert f"--dask {address}: {says}" in result.output
            assert "Traceback" not in result.output
            assert not (out / "runs.jsonl").exists()


def test_a_local_cluster_whose_client_does_not_connect_is_closed(monkeypatch):
    from memplace.bench import runner
    from memplace.model.core.errors import MemplaceError
    closed = []

    class Cluster:
        def close(self):
            closed.append(True)

    def refuse(address, option):
        raise MemplaceError(f"{option}: refused")

    monkeypatch.setattr(runner, "local_cluster", lambda workers, option: Cluster())
    monkeypatch.setattr(runner, "connect", refuse)
    with pytest.raises(MemplaceError, match="--dask: refused"):
        next(runner.dask_results([], "local", 2))
    assert closed == [True]


def test_corrupted_line_is_reported_with_its_number_by_every_command(batch, tmp_path):
    lines = (batch["out"] / "runs.jsonl").read_text().splitlines(keepends=True)
    out = tmp_path / "out"
    out.mkdir()
    runs = out / "runs.jsonl"
    runs.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2] + "\n" + "".join(lines[3:]))
    for args in (["bench", batch["plan"], "--out", out, "--resume"], ["report", runs],
                 ["validate-results", runs]):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{runs}:3: corrupted run record" in result.output
        assert "sed -i '3d'" in result.output
    # a write cut short at the end of the file (a batch killed mid-write)
    runs.write_text("".join(lines[:4]) + lines[4][:40])
    with pytest.raises(RunsFileError, match=r"runs.jsonl:5: .*not terminated"):
        read_runs(runs)
    # the way out the message offers: drop the line, resume; nothing lost, nothing twice
    runs.write_text("".join(lines[:4]))
    result = cli("bench", batch["plan"], "--out", out, "--resume")
    assert result.exit_code == 0, result.output
    assert "to run now: 4 (recorded: 4" in result.output
    assert sorted(map(record_key, read_runs(runs))) == sorted(map(record_key, batch["records"]))


def test_killed_batch_resumes_without_losing_or_duplicating_a_run(tmp_path):
    [instance] = write_instances(tmp_path, [5])
    plan = write_plan(tmp_path, instances=[instance.name], solvers=["test-steps"],
                      seeds=[0, 1, 2, 3], time_limit=20.0, solver_modules=[str(HELPERS)],
                      params={"test-steps": {"pause": 0.5}})
    out = tmp_path / "out"
    runs = out / "runs.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "memplace.cli", "bench", str(plan),
                             "--out", str(out), "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (runs.exists() and runs.read_bytes().count(b"\n") >= 1):
            assert proc.poll() is None, "bench ended before it could be killed"
            assert time.monotonic() < deadline, "no run recorded in 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    first = read_runs(runs)  # whole lines only, whatever the moment of the kill
    assert 1 <= len(first) < 4
    kept = runs.read_bytes()
    result = cli("bench", plan, "--out", out, "--resume")
    assert result.exit_code == 0, result.output
    final = read_runs(runs)
    assert runs.read_bytes().startswith(kept)
    assert sorted(r["seed"] for r in final) == [0, 1, 2, 3]
    assert len({record_key(r) for r in final}) == len(final) == 4


def test_failures_are_recorded_with_their_cause_and_the_batch_carries_on(tmp_path, monkeypatch):
    monkeypatch.setenv(EXTRA_MODULES_ENV, str(HELPERS))  # the other way to name solver modules
    [instance] = write_instances(tmp_path, [6])
    plan = write_plan(tmp_path, instances=[instance.name],
                      solvers=["test-hang", "test-crash", "test-die", "test-oom", "test-sleep",
                               "test-steps"],
                      seeds=[0], time_limit=1.0, kill_margin=1.0, memory_limit_mb=3000,
                      params={"test-oom": {"gigabytes": 8.0}})
    out = tmp_path / "out"
    result = cli("bench", plan, "--out", out, "--jobs", 2)
    assert result.exit_code == 0, result.output
    by_solver = {r["solver"]: r for r in read_runs(out / "runs.jsonl")}
    assert {s: r["status"] for s, r in by_solver.items()} == {
        "test-hang": "timeout", "test-crash": "error", "test-die": "killed", "test-oom": "oom",
        "test-sleep": "feasible", "test-steps": "feasible"}
    assert "limit 1 s + margin 1 s" in by_solver["test-hang"]["error"]
    assert by_solver["test-crash"]["error"].startswith("RuntimeError: boom")
    assert "SIGSEGV" in by_solver["test-die"]["error"]
    assert "3000 MB" in by_solver["test-oom"]["error"]
    for solver in ("test-hang", "test-crash", "test-die", "test-oom"):
        assert by_solver[solver]["placement"] is None and by_solver[solver]["latency"] is None
    # a solver that sleeps past its limit is stopped by solve() itself: the slowest placement
    assert by_solver["test-sleep"]["notes"] == {"hard_stop": True, "no_incumbent": True}
    assert "6 runs" in result.output and "4 failed" in result.output


def test_resume_retries_failed_runs_only_when_asked(tmp_path):
    [instance] = write_instances(tmp_path, [7])
    marker = tmp_path / "fail"
    marker.touch()
    plan = write_plan(tmp_path, instances=[instance.name], solvers=["test-flaky", "all-slowest"],
                      seeds=[0], time_limit=10.0, solver_modules=[str(HELPERS)],
                      params={"test-flaky": {"marker": str(marker)}})
    out = tmp_path / "out"
    assert cli("bench", plan, "--out", out).exit_code == 0
    marker.unlink()
    resumed = cli("bench", plan, "--out", out, "--resume")
    assert "to run now: 0 (recorded: 1, failed and not retried: 1)" in resumed.output
    retried = cli("bench", plan, "--out", out, "--retry-failed")
    assert retried.exit_code == 0, retried.output
    assert "to run now: 1 (recorded: 1" in retried.output
    records = read_runs(out / "runs.jsonl")
    assert [(r["solver"], r["status"]) for r in records if r["solver"] == "test-flaky"] == [
        ("test-flaky", "error"), ("test-flaky", "feasible")]
    assert [r["status"] for r in Results(records).runs(solver="test-flaky")] == ["feasible"]


@pytest.mark.parametrize("keys, message", [
    ({"instances": ["resnet51@nnpi"]}, "unknown instance 'resnet51@nnpi'"),
    ({"instances": ["nothing-like-this*"]}, "'nothing-like-this\\*' matches no built-in instance"),
    ({"solvers": ["simulated-anealing"]}, "unknown solver 'simulated-anealing'"),
    ({"solvers": ["random-greedy"], "params": {"random-greedy": {"colour": "red"}}},
     "'random-greedy' has no parameter 'colour'"),
    ({"params": {"milp": {"gap": 0.1}}}, "solver 'milp' is not among the plan's solvers"),
    ({"seeds": [-1]}, "seeds must be"),
    ({"timelimit": 5}, "unknown key 'timelimit'"),
    ({"solvers": ["sa"], "params": {"sa": {"restarts": 0, "group_max": 99}}},
     r"solver 'sa': parameter 'restarts'=0 is outside \[1, inf\]"),
    ({"solvers": ["sa"], "params": {"sa": {"group_max": 99}}},
     r"solver 'sa': parameter 'group_max'=99 is outside \[2, 16\]"),
    ({"solvers": ["ga"], "params": {"ga": {"population": 4, "elite": 4}}},
     r"solver 'ga': parameter 'elite'=4 is outside \[0, population-1\] = \[0, 3\]"),
])
def test_plan_errors_name_the_offending_entry_before_anything_runs(tmp_path, keys, message):
    plan_keys = {"instances": ["vgg16@nnpi"], "solvers": ["compiler"], "seeds": [0],
                 "time_limit": 1.0, **keys}
    params = plan_keys.pop("params", None)
    plan = write_plan(tmp_path, params=params, **plan_keys)
    with pytest.raises(PlanError, match=message):
        load_plan(str(plan))
    result = cli("bench", plan, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "error: plan" in result.output
    assert not (tmp_path / "out").exists()


def test_shipped_plans_load_and_quick_fits_five_minutes_on_two_cores():
    quick = load_plan("quick")
    assert quick.path.name == "quick.toml" and len(quick.instances) >= 3
    # every seed-dependent solver runs once per seed, the deterministic ones once
    seeds = {}
    for task in quick.tasks:
        seeds.setdefault((task.instance, task.solver), []).append(task.seed)
    assert all(seeds[i, "compiler"] == [0] for i in quick.instances)
    assert all(seeds[i, "random-greedy"] == [0, 1] for i in quick.instances)
    # upper bound: every run using its whole limit (heuristics take about a second)
    assert sum(t.time_limit for t in quick.tasks) / 2 <= 300
    egrl = load_plan("egrl")
    assert egrl.instances == ["resnet50@nnpi", "resnet101@nnpi", "bert-base@nnpi"]
    assert {t.seed for t in egrl.tasks} == {0, 1, 2, 3, 4} and egrl.tasks[0].time_limit == 60
    full = load_plan("full")
    assert len(full.instances) == len(list(builtin_path("vgg16@nnpi").parent.glob("*.json")))


def test_instance_patterns_expand_over_builtin_names_in_order_without_repeats(tmp_path):
    plan = write_plan(tmp_path, instances=["vgg16@*", "vgg16@nnpi", "unet@tpu"],
                      solvers=["compiler", "x*"], seeds=[0, 1], time_limit=1.0)
    loaded = load_plan(str(plan))
    assert loaded.instances == ["vgg16@edge-npu", "vgg16@gpu", "vgg16@nnpi", "vgg16@tpu", "unet@tpu"]
    assert loaded.solvers == ["compiler", "xla-msa"]
    assert len(loaded.tasks) == 5 * 2  # both deterministic: one seed each
    assert loaded.name == "plan"


def test_builtin_instance_fingerprint_is_the_sha256_of_its_committed_file():
    path = builtin_path("vgg16@nnpi")
    assert Instance.from_file(path).fingerprint() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_records_notes_keep_their_numbers_when_one_of_them_is_infinite():
    """A solver's notes holding -inf somewhere (the bound solver's horizon bound when no
    round completed) once turned every note into a string, "False" included."""
    import numpy as np
    from memplace.bench.worker import _jsonable

    notes = {"closed_form_bound": 2.5e-05, "exact": False, "keys": np.int64(36),
             "horizon": {"bound": float("-inf"), "rounds": 0, "status": "no round completed"},
             "trace": (1.0, float("nan"))}
    stored = json.loads(json.dumps(_jsonable(notes), allow_nan=False))
    assert stored == {"closed_form_bound": 2.5e-05, "exact": False, "keys": 36,
                      "horizon": {"bound": None, "rounds": 0, "status": "no round completed"},
                      "trace": [1.0, None]}
