"""`memplace lib add --lib FOLDER`: a library of a user's own, started where none is."""
from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from memplace.cli.main import main
from memplace.instances.library import USER_VERSION, read_library
from memplace.model.warmup import tiny_instance_dict


def test_add_starts_a_library_of_ones_own_in_an_empty_folder_and_then_adds_to_it(tmp_path):
    for name in ("one", "two"):
        data = tiny_instance_dict()
        data["name"] = data["workload"]["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    folder = tmp_path / "mine"
    runner = CliRunner()
    first = runner.invoke(main, ["lib", "add", "--lib", str(folder), "--problem", "static",
                                 str(tmp_path / "one.json")])
    assert first.exit_code == 0, first.output
    assert f"started a library of your own at {folder}" in first.output
    # figures in the problem's unit, as `lib list` prints them, not raw seconds
    added = read_library(folder).entries[0]
    assert (f"added static/one (train, {added.ops} ops): default "
            f"{added.default['objective'] * 1e6:.3f} us, bound {added.bound * 1e6:.3f} us") in first.output
    lib = read_library(folder)
    assert lib.version == USER_VERSION and not lib.manifest["frozen"]
    assert [e.id for e in lib.entries] == ["static/one"]
    # the second add finds the library and adds to it, starting nothing
    second = runner.invoke(main, ["lib", "add", "--lib", str(folder), "--problem", "static",
                                  str(tmp_path / "two.json")])
    assert second.exit_code == 0 and "started" not in second.output, second.output
    assert [e.id for e in read_library(folder).entries] == ["static/one", "static/two"]
    verified = runner.invoke(main, ["lib", "verify", "--lib", str(folder)])
    assert verified.exit_code == 0, verified.output


def test_a_version_that_is_not_there_is_not_started(tmp_path):
    result = CliRunner().invoke(main, ["lib", "add", "--lib", "memplace-lib/99", "x"])
    assert result.exit_code == 2 and "no library" in result.output


def test_an_instance_that_does_not_load_starts_no_library_and_adds_nothing(tmp_path):
    good = tiny_instance_dict()
    (tmp_path / "good.json").write_text(json.dumps(good), encoding="utf-8")
    (tmp_path / "bad.json").write_text(json.dumps({"format": "nope"}), encoding="utf-8")
    folder = tmp_path / "mine"
    runner = CliRunner()
    result = runner.invoke(main, ["lib", "add", "--lib", str(folder), str(tmp_path / "good.json"),
                                  str(tmp_path / "bad.json")])
    assert result.exit_code == 2 and "bad.json" in result.output, result.output
    assert "started" not in result.output and not (folder / "library.json").exists()
    # into a library that exists: the good one is not added either, the manifest unchanged
    assert runner.invoke(main, ["lib", "add", "--lib", str(folder), "--problem", "static",
                                str(tmp_path / "good.json")]).exit_code == 0
    before = (folder / "library.json").read_bytes()
    again = runner.invoke(main, ["lib", "add", "--lib", str(folder), str(tmp_path / "bad.json")])
    assert again.exit_code == 2 and (folder / "library.json").read_bytes() == before


def test_a_folder_given_relative_is_read_as_absolute_so_that_workers_elsewhere_find_it(tmp_path,
                                                                                        monkeypatch):
    """`lib improve --lib FOLDER --scheduler ADDRESS` sends the entries' paths to Dask workers,
    whose working directory need not be the caller's: the folder's paths are absolute."""
    data = tiny_instance_dict()
    (tmp_path / "one.json").write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["lib", "add", "--lib", str(tmp_path / "mine"),
                                       "--problem", "residency", str(tmp_path / "one.json")])
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)
    lib = read_library("mine")
    assert lib.folder == tmp_path / "mine"
    entry = lib.entries[0]
    monkeypatch.chdir(tmp_path / "mine" / "instances")  # a worker started elsewhere
    assert Path(lib.instance_source(entry)).is_file() and lib.path(entry.best["file"]).is_file()


def test_improve_on_a_scheduler_that_does_not_answer_is_one_error_and_records_nothing(tmp_path):
    import dask
    import distributed  # noqa: F401  (its config defaults are in before dask.config.set saves
    # what to restore: set then removes only its own key, not the whole "distributed" tree)
    data = tiny_instance_dict()
    (tmp_path / "one.json").write_text(json.dumps(data), encoding="utf-8")
    folder = tmp_path / "mine"
    runner = CliRunner()
    added = runner.invoke(main, ["lib", "add", "--lib", str(folder), "--problem", "static",
                                 str(tmp_path / "one.json")])
    assert added.exit_code == 0, added.output
    before = (folder / "library.json").read_bytes()
    with socket.socket() as probe:  # a port no one listens on
        probe.bind(("127.0.0.1", 0))
        silent = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        for address in ("nonsense", silent):
            result = runner.invoke(main, ["lib", "improve", "--lib", str(folder),
                                          "--time-limit", "1", "--scheduler", address])
            assert result.exit_code == 2, result.output
            assert f"--scheduler {address}: " in result.output
            assert "Traceback" not in result.output
            assert (folder / "library.json").read_bytes() == before
