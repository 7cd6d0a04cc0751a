"""The documentation stays true: the site builds with every link and included file
resolving, the committed results tables are what their committed runs produce, the
Python examples run, and nothing points outside the repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memplace.bench.report_tables import against_table, write_tables
from memplace.bench.results import Results
from memplace.bench.store import read_runs

ROOT = Path(__file__).resolve().parents[2]
REPORTED = sorted(p.parent.name for p in (ROOT / "results").glob("*/runs.jsonl"))
# folders whose report was written with `memplace report --against results/REF/runs.jsonl`
AGAINST = {"residency-check": "residency"}


def test_site_builds_with_no_broken_link(tmp_path):
    """`mkdocs build --strict`: a broken link or anchor, a missing included results file,
    a page left out of the nav or a failing generated page is an error."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = tmp_path / "site"
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "memplace solve" in cli and "--time-limit" in cli  # generated from the commands
    solvers = (site / "reference" / "solvers" / "index.html").read_text()
    assert "<code>msa</code>" in solvers and "<code>milp</code>" in solvers  # from the registry
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "hard wall-clock limit" in api  # solve()'s docstring
    static = (site / "results" / "static" / "index.html").read_text()
    first_row = next(line for line in (ROOT / "results/egrl/table_instances.md").read_text()
                     .splitlines() if line.startswith("| bert-base"))
    assert first_row.split(" | ")[1] in static and (site / "results/egrl/performance_profile.png").is_file()


@pytest.mark.parametrize("name", REPORTED)
def test_committed_report_tables_are_what_the_committed_runs_produce(name, tmp_path):
    """`memplace report`'s tables recomputed from results/<name>/runs.jsonl (with the
    committed static optimum cache, where there is one) equal the committed files byte
    for byte, and every committed table file is among them."""
    folder = ROOT / "results" / name
    for cache in folder.glob("static_optimum.json"):
        shutil.copy(cache, tmp_path)
    results = Results(read_runs(folder / "runs.jsonl"), cache_folder=tmp_path)
    written = write_tables(results, tmp_path)
    if name in AGAINST:
        reference = Results(read_runs(ROOT / "results" / AGAINST[name] / "runs.jsonl"))
        written += against_table(results, reference).write(tmp_path)
    assert {p.name for p in written} == {p.name for p in folder.glob("table_*")}
    for path in written:
        assert path.read_bytes() == (folder / path.name).read_bytes(), f"results/{name}/{path.name}"


def test_report_tables_are_all_checked():
    assert {"quick", "egrl", "others", "residency"} <= set(REPORTED)


def test_python_guide_runs(tmp_path):
    """Every Python block of docs/guide/python.md, in order, each in a fresh interpreter
    as a reader would paste it (in this process, the guide's own solver would stay in the
    registry and be run by every test that iterates over the registered solvers)."""
    text = (ROOT / "docs" / "guide" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    out = ""
    for block in blocks:
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        out += done.stdout
    assert re.search(r"\d+\.\d+ us, feasible", out)
    assert (tmp_path / "bert.json").is_file()


def test_nothing_points_outside_the_repository():
    """The specification and the benchmark data live in the repository: no tracked file
    refers to a shared folder beside the clone or to the old SPEC.md."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    offenders = []
    for name in files:
        path = ROOT / name
        if name == "tests/docs/test_docs_site.py":
            continue
        if path.suffix not in {".py", ".md", ".toml", ".yml", ".cfg", ".txt", ""} or not path.is_file():
            continue
        text = path.read_text(errors="ignore")
        if "../shared" in text or "SPEC.md" in text or "shared/benchmarks" in text:
            offenders.append(name)
    assert offenders == []
