"""`memplace report` says which code made the runs and flags instances where all solvers
tie; `memplace bench` records the commit (or the package version) in every run."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplace.bench import provenance
from memplace.cli import main
from memplace.bench.results import Results, code_label
from memplace.model import Instance, slowest_latency
from memplace.solvers import solve
from randominst import random_instance_dict
from test_report import record

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory):
    """On `tied`, two solvers reach the compiler latency (all-slowest is worse); on
    `apart`, solver A beats the compiler. Runs come from two commits."""
    folder = tmp_path_factory.mktemp("ties")
    records = []
    for seed, name in ((21, "tied"), (22, "apart")):
        path = folder / f"{name}.json"
        data = random_instance_dict(seed, n_ops=8, n_tensors=12)
        data["name"] = name
        path.write_text(json.dumps(data))
        inst = Instance.from_file(path)
        comp = solve(inst, "compiler", time_limit=None)
        c, s = comp.latency, slowest_latency(inst)
        assert s > c  # the reference is worse: a tie must not need it
        a = c if name == "tied" else 0.9 * c
        records += [record(inst, path, "compiler", 0, c, [[0.01, 1, c]], comp.placement),
                    record(inst, path, "all-slowest", 0, s, [[0.01, 1, s]],
                           inst.slowest_placement()),
                    record(inst, path, "A", 0, a, [[0.5, 3, a]], comp.placement)]
    for i, r in enumerate(records):
        r["code"] = {"commit": "a" * 40 if i < 4 else "b" * 40, "dirty": i == 5,
                     "package": "0.1.0"}
    runs = folder / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    return runs


def test_report_flags_instances_where_all_solvers_tie(two_instances):
    assert Results([json.loads(x) for x in two_instances.read_text().splitlines()]
                   ).tied_instances() == ["tied"]
    result = CliRunner().invoke(main, ["report", str(two_instances)])
    assert result.exit_code == 0, result.output
    assert "all solvers tie (the all-slowest reference aside) on tied;" in result.output
    table = (two_instances.parent / "table_instances.md").read_text()
    assert "All solvers tie (the all-slowest reference aside) on tied:" in table
    assert "apart:" not in table


def test_report_prints_which_commits_made_the_runs(two_instances):
    result = CliRunner().invoke(main, ["report", str(two_instances)])
    assert f"code: commit {'a' * 40}: 4 runs" in result.output
    assert f"code: commit {'b' * 40} (dirty): 1 runs" in result.output
    assert f"code: commit {'b' * 40}: 1 runs" in result.output
    table = (two_instances.parent / "table_instances.md").read_text()
    assert f"commit {'a' * 40} (4 runs)" in table


def test_code_labels_fall_back_to_the_package_version_and_to_unrecorded():
    assert code_label({"commit": None, "dirty": None, "package": "0.1.0"}) == "memplace 0.1.0"
    assert code_label({"commit": None, "dirty": None, "package": "unknown"}) == \
        "memplace, version unknown"
    assert code_label({"commit": "c" * 40, "dirty": None, "package": "0.1.0"}) == f"commit {'c' * 40}"
    assert code_label(None) == "unrecorded"


def test_code_version_is_this_checkouts_head():
    provenance.code_version.cache_clear()
    info = provenance.code_version()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:  # an installed copy, not a checkout: what its metadata says
        assert info["commit"] == provenance._metadata_commit() and info["package"]
        return
    assert info["commit"] == head.stdout.strip()
    assert isinstance(info["dirty"], bool)


@pytest.mark.parametrize("commit", [None, "d" * 40])
def test_code_version_outside_a_checkout_records_the_package(monkeypatch, tmp_path, commit):
    monkeypatch.setattr(provenance, "_git", lambda root, *args: None)
    monkeypatch.setattr(provenance, "_metadata_commit", lambda: commit)
    provenance.code_version.cache_clear()
    try:
        info = provenance.code_version()
    finally:
        provenance.code_version.cache_clear()
    assert info == {"commit": commit, "dirty": None, "package": provenance.package_version()}


def test_the_commit_of_a_git_url_install_is_read_from_its_metadata():
    git = {"url": "https://example.org/memplace.git",
           "vcs_info": {"vcs": "git", "commit_id": "e" * 40, "requested_revision": "main"}}
    assert provenance.installed_commit(json.dumps(git)) == "e" * 40
    assert provenance.installed_commit(json.dumps({"url": "file:///src", "dir_info": {}})) is None
    assert provenance.installed_commit("not json") is None and provenance.installed_commit(None) is None
