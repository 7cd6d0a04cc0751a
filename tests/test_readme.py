"""The README's set-up commands stay what CI runs and what a new user types."""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
