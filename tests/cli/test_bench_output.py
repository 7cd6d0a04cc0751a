"""What `memplace bench` tells a person: first a line about the kernels (compiling once
into a named cache folder, or loading from it), the plan's runs as instances x solvers
x seeds, then the progress lines; nothing from HiGHS on any stream."""
from __future__ import annotations

import json
import subprocess
import sys

from memplace.model.warmup import tiny_instance_dict


def test_bench_says_what_the_kernels_do_before_any_progress_and_nothing_from_highs(tmp_path):
    (tmp_path / "tiny.json").write_text(json.dumps(tiny_instance_dict()))
    (tmp_path / "tiny.toml").write_text('instances = ["tiny.json"]\nsolvers = ["compiler", "milp"]\n'
                                        'seeds = [0]\ntime_limit = 2.0\n')
    run = subprocess.run([sys.executable, "-m", "memplace.cli", "bench", str(tmp_path / "tiny.toml"),
                          "--out", str(tmp_path / "out"), "--jobs", "1"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(("kernels: compiling every Numba kernel of memplace before the first run, once, "
                                "in this process (cached in ",
                                "kernels: loading the compiled kernels from the cache in "))
    assert lines[1].startswith("plan tiny: 2 runs = 1 instance x 2 solvers x 1 seed; to run now: 2")
    assert lines[2].startswith("kernels: ready in ")
    assert [line.split()[0] for line in lines[3:5]] == ["[1/2", "[2/2"]
    assert lines[5].startswith("done: 2 runs")
    assert "HiGHS" not in run.stdout + run.stderr and "THIRD_PARTY" not in run.stdout + run.stderr


def test_solve_prints_no_highs_banner_even_when_warming_the_milp(tmp_path):
    """A residency solve warms every static solver, milp among them (HiGHS made)."""
    (tmp_path / "tiny.json").write_text(json.dumps(tiny_instance_dict()))
    run = subprocess.run([sys.executable, "-m", "memplace.cli", "solve", str(tmp_path / "tiny.json"),
                          "--problem", "residency", "--solver", "msa", "--time-limit", "2"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("tiny@warmup  solver=msa")
    assert "HiGHS" not in run.stdout + run.stderr
