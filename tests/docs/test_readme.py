"""The README stays short, true and runnable: its set-up commands are what CI runs, its
tables are the committed results files, its links resolve and its tour runs."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands():
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.strip()]
    assert lines[0] == "# memplace" and lines[1] == "```bash"  # the commands come first
    commands = _readme_commands()
    assert len(commands) == 2
    assert "pip install -q . &&" in commands[0]  # a user's (non-editable) install first
    assert "&& memplace bench --out " in commands[0]  # the main job, into a folder of its own
    assert 'pip install -q -e ".[test]" &&' in commands[1]  # then the developer's
    assert "python -m pytest" in commands[1]


def test_ci_runs_every_readme_command_in_order():
    printed = subprocess.run([str(ROOT / ".ci" / "run"), "--print"], capture_output=True,
                             text=True, check=True).stdout
    assert printed.splitlines() == _readme_commands()


def test_ci_runs_the_commands_in_one_fresh_clone():
    script = (ROOT / ".ci" / "run").read_text()
    assert 'git clone -q "$repo" "$work/memplace"' in script
    assert 'cd "$work/memplace"' in script
    assert 'bash -c "$script"' in script


def test_readme_fits_on_a_few_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


# The headline's tables, in order: the files the commands named beside them wrote.
HEADLINE_FILES = ("results/library-residency/score.md", "results/residency/table_headline.md")


def test_readme_headline_tables_are_the_committed_results_tables():
    """The tables in the README's headline are the rows of the files `memplace lib score`
    and `memplace report` wrote (a README on GitHub cannot include a file, so the copy is
    checked instead)."""
    readme = (ROOT / "README.md").read_text()
    headline = readme.split("\n## Headline", 1)[1].split("\n## ", 1)[0]
    committed = [line for f in HEADLINE_FILES for line in _table_lines((ROOT / f).read_text())]
    assert _table_lines(headline) == committed
    assert all(f in headline for f in HEADLINE_FILES)
    assert len(_table_lines(headline)) > 10


def test_readme_packing_table_is_the_committed_pack_bench_table():
    """The packing section's table is the rows `memplace pack-bench --set all --out
    results/packing` wrote."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Packing", 1)[1].split("\n## ", 1)[0]
    committed = (ROOT / "results" / "packing" / "pack-bench.md").read_text()
    assert _table_lines(section) == _table_lines(committed)
    assert len(_table_lines(section)) > 30


def test_readme_links_point_at_files_in_the_repository():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert missing == []


def _tour_commands() -> list[str]:
    tour = (ROOT / "README.md").read_text().split("\n## Ten-minute tour", 1)[1]
    block = tour.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_readme_tour_runs_as_written(tmp_path):
    """The tour's lines, in order, in one shell, from a folder that has the repository's
    `instances/` and `model/` (the tour runs from the clone's folder): each must succeed
    and leave the files the next steps and the reader rely on (about 3 min on 2 cores)."""
    for folder in ("instances", "model"):
        (tmp_path / folder).symlink_to(ROOT / folder, target_is_directory=True)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    script = "set -euo pipefail\n" + "\n".join(_tour_commands()) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("r50.json", "r50.static.json", "r50.residency.json", "r50-edge.static.json",
                 "A.packed.csv", "tour-runs/runs.jsonl", "tour-runs/table_instances.md",
                 "tour-runs/performance_profile.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert "ok: valid" in done.stdout
    static = json.loads((tmp_path / "r50-edge.static.json").read_text())
    assert any(offset is not None for offset in static["offsets"])  # the addressed SRAM is packed
    runs = (tmp_path / "tour-runs" / "runs.jsonl").read_text().splitlines()
    assert len(runs) == 6 and all(json.loads(r)["error"] is None for r in runs)
