"""`memplace lib score`: submissions validated against the library, never trusted."""
from __future__ import annotations

import json
import shutil

import subprocess
import sys

from memplace.bench.library.score import Score, score, summary, summary_table
from memplace.instances.library import read_library


def _submission(lib, folder):
    folder.mkdir()
    for e in lib.entries:
        suffix = ".csv" if e.problem == "packing" else ".json"
        name = e.name if e.problem == "packing" else f"{e.problem}-{e.name}"
        shutil.copyfile(lib.path(e.best["file"]), folder / f"{name}{suffix}")
    return folder


def test_best_known_scores_its_own_speedup_and_zero_gap(small_library, tmp_path):
    lib = read_library(small_library)
    scores = score(lib, _submission(lib, tmp_path / "sub"))
    assert len(scores) == 3 and all(s.objective is not None for s in scores)
    for s in scores:
        assert s.speedup == s.entry.default["objective"] / s.entry.best["objective"]
        assert s.gap(s.entry.best["objective"]) == 0.0
    assert summary(scores)["packing"]["valid"] == 1


def test_a_mean_gap_that_rounds_to_zero_prints_without_a_sign(small_library):
    # a submission that ties the best known but for the last bits (the leaderboard's milp
    # printed -0.00)
    lib = read_library(small_library)
    e = next(e for e in lib.entries if e.problem == "static")
    tie = Score(e, "tie.json", e.best["objective"] * (1 - 1e-12))
    assert summary([tie])["static"]["mean gap to best known %"] < 0
    row = summary_table({"tie": [tie]}).splitlines()[-1]
    assert "-0.00" not in row and "| 0.00 |" in row


def test_a_submission_with_no_valid_solution_prints_no_mean_gap(small_library):
    # a folder whose only file names levels of another preset (an edge-tpu solution of an
    # nnpi entry, the fourth round's): its mean gaps printed as "nan"
    lib = read_library(small_library)
    e = next(e for e in lib.entries if e.problem == "static")
    invalid = Score(e, "other.json", None, error="unknown level 'HOST'")
    assert summary([invalid])["static"]["valid"] == 0
    row = summary_table({"other": [invalid]}).splitlines()[-1]
    assert "nan" not in row and row.endswith("| - | - | 0 / 1 |")


def test_an_invalid_solution_scores_as_the_default_and_says_why(small_library, tmp_path):
    lib = read_library(small_library)
    folder = _submission(lib, tmp_path / "sub")
    static = next(folder.glob("static-*.json"))
    data = json.loads(static.read_text())
    data["latency"] *= 0.5  # a claim the checker recomputes
    static.write_text(json.dumps(data))
    s = next(s for s in score(lib, folder) if s.entry.problem == "static")
    assert s.objective is None and s.speedup == 1.0 and "latency" in s.error


def test_a_solution_naming_levels_the_instance_lacks_is_invalid_and_the_rest_still_score(
        small_library, tmp_path):
    # a placement of level numbers where the format names levels: the file is not a
    # solution of this instance; it scores as the default, its note naming the file, and
    # the other entries are scored (the whole command stopped on it, naming no file)
    lib = read_library(small_library)
    folder = _submission(lib, tmp_path / "sub")
    static = next(folder.glob("static-*.json"))
    data = json.loads(static.read_text())
    data["placement"] = [0] * len(data["placement"])
    static.write_text(json.dumps(data))
    scores = {s.entry.problem: s for s in score(lib, folder)}
    bad = scores["static"]
    assert bad.objective is None and bad.speedup == 1.0
    assert bad.error.startswith(f"{static.name}: ") and "level" in bad.error
    assert all(s.objective is not None for p, s in scores.items() if p != "static")


def test_score_command_prints_the_table_and_refuses_a_missing_folder(small_library, tmp_path):
    lib = read_library(small_library)
    folder = _submission(lib, tmp_path / "sub")
    memplace = [sys.executable, "-m", "memplace.cli"]
    ok = subprocess.run(memplace + ["lib", "score", "--lib", str(small_library), str(folder)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "geomean speedup over default" in ok.stdout and "static/vgg16@nnpi" in ok.stdout
    bad = subprocess.run(memplace + ["lib", "score", "--lib", str(small_library),
                                     str(tmp_path / "none")], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "not a folder of solution files" in bad.stderr


def test_leaderboard_rescore_scores_the_submissions_already_written(small_library, tmp_path):
    import pytest
    from memplace.bench.library.leaderboard import leaderboard
    from memplace.model.core.errors import MemplaceError
    lib = read_library(small_library)
    with pytest.raises(MemplaceError, match="no submission of compiler"):
        leaderboard(lib, tmp_path / "none", 1.0, "all", ("static",), echo=lambda line: None,
                    run=False)
    ran = leaderboard(lib, tmp_path / "board", 0.5, "all", ("static",), echo=lambda line: None)
    again = leaderboard(lib, tmp_path / "board", 0.5, "all", ("static",), echo=lambda line: None,
                        run=False)
    assert again == ran and "| compiler | static |" in again
