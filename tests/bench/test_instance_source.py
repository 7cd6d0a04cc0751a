"""A run's instance source: new records name a file of memplace by its path relative to
the package, old records' absolute paths into a checkout since gone still find the
instance by its fingerprint, and `relocate-runs` rewrites them to the new form."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from memplace.bench.instance_source import PACKAGE, load_recorded, moved, recorded_source
from memplace.bench.replay import recheck
from memplace.bench.results import Results
from memplace.bench.task import Task
from memplace.bench.worker import base_record
from memplace.cli import main
from memplace.model import Instance
from memplace.solvers import solve
from test_report import record

ROOT = Path(__file__).resolve().parents[2]
TAIL = Path("instances/library/memplace-lib-2/instances/xla-mlp@nnpi.json")
GONE = str(Path("/nowhere/wt-gone") / TAIL)


def test_a_file_of_the_package_is_recorded_relative_to_it_and_others_as_they_are(tmp_path):
    assert PACKAGE == ROOT  # a checkout: the package's root is the repository's
    assert recorded_source(ROOT / TAIL) == TAIL.as_posix()
    assert recorded_source(str(ROOT / "instances" / ".." / TAIL)) == TAIL.as_posix()
    assert recorded_source("resnet50@nnpi") == "resnet50@nnpi"
    assert recorded_source("zoo/resnet18@nnpi") == "zoo/resnet18@nnpi"
    assert recorded_source(tmp_path / "x.json") == str(tmp_path / "x.json")


def test_a_worker_record_names_a_library_file_relative_to_the_package():
    inst = Instance.from_file(ROOT / TAIL)
    task = Task(inst.name, str(ROOT / TAIL), inst.fingerprint(), "compiler", {}, 0, 1.0)
    assert base_record(task)["instance_source"] == TAIL.as_posix()


def test_a_relative_source_loads_whatever_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inst = Instance.from_file(ROOT / TAIL)
    rec = record(inst, TAIL.as_posix(), "compiler", 0, 1.0, [[0.001, 1, 1.0]], [0] * inst.n_tensors)
    assert load_recorded(rec).fingerprint() == inst.fingerprint()
    assert Results([rec]).instance(inst.name).fingerprint() == inst.fingerprint()


def test_an_instance_file_of_a_checkout_gone_is_found_in_this_one_by_its_fingerprint():
    # older runs keep absolute paths (results/library-residency's named a worktree since
    # removed); the same file under this checkout is the instance when its fingerprint
    # is the recorded one
    inst = Instance.from_file(ROOT / TAIL)
    assert moved(GONE) == [str(ROOT / TAIL)] and moved("xla-mlp@nnpi") == []
    rec = record(inst, GONE, "compiler", 0, 1.0, [[0.001, 1, 1.0]], [0] * inst.n_tensors)
    assert Results([rec]).instance(inst.name).fingerprint() == inst.fingerprint()
    assert Results([dict(rec, instance_sha256="0" * 64)]).instance(inst.name) is None


def test_validate_results_rechecks_a_run_whose_checkout_is_gone():
    # the same move as the report's; a record whose fingerprint matches no file here is
    # still a finding that names the missing file
    inst = Instance.from_file(ROOT / TAIL)
    sol = solve(inst, "compiler")
    rec = record(inst, GONE, "compiler", 0, sol.latency, [[0.001, 1, sol.latency]], list(sol.placement))
    assert recheck([rec]) == (1, [])
    checked, findings = recheck([dict(rec, instance_sha256="0" * 64)])
    assert checked == 1 and "wt-gone" in str(findings[0])
    assert recheck([dict(rec, instance_source=TAIL.as_posix())]) == (1, [])


def _line(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n"


def test_relocate_runs_rewrites_only_the_paths_it_can_find_here_and_only_once(tmp_path):
    inst = Instance.from_file(ROOT / TAIL)
    moved_run = record(inst, GONE, "compiler", 0, 1.0, [[0.001, 1, 1.0]], [0] * inst.n_tensors)
    here_run = dict(moved_run, instance_source=str(ROOT / TAIL), seed=1)
    unknown = dict(moved_run, instance_sha256="0" * 64, seed=2)  # no file here has it
    named = dict(moved_run, instance_source="resnet50@nnpi", seed=3)
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(_line(r) for r in (moved_run, here_run, unknown, named)))
    result = CliRunner().invoke(main, ["relocate-runs", str(runs)])
    assert result.exit_code == 0, result.output
    assert "2 of 4 records rewritten; 1 absolute paths of no file here kept" in result.output
    assert f"kept: {GONE}" in result.output
    relative = dict(moved_run, instance_source=TAIL.as_posix())
    expected = "".join(_line(r) for r in (relative, dict(relative, seed=1), unknown, named))
    assert runs.read_text() == expected
    again = CliRunner().invoke(main, ["relocate-runs", str(runs)])
    assert "0 of 4 records rewritten" in again.output and runs.read_text() == expected


def test_no_committed_runs_file_records_an_absolute_path():
    # `memplace relocate-runs $(git ls-files '*runs.jsonl')` rewrites older ones
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*runs.jsonl"], check=True,
                           capture_output=True, text=True).stdout.split()
    assert files
    for name in files:
        for number, line in enumerate((ROOT / name).read_text().splitlines(), start=1):
            source = json.loads(line)["instance_source"]
            assert not Path(source).is_absolute(), f"{name}:{number}: {source}"
