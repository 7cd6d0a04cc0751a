"""Which code produced a benchmark run: the git commit (and whether the tree was dirty),
or the package version when memplace is not run from a git checkout (a wheel), with
the commit pip recorded when it installed from a git URL.

Recorded in every run record (`code`), so that a results file says which commit made
each of its rows, also when a plan was resumed across commits. The `results/` folder
is left out of the dirty check: a plan writing its runs there would otherwise call
its own later runs dirty.
"""
from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

_GIT_TIMEOUT_S = 10.0


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("memplace")
    except PackageNotFoundError:
        return "unknown"


def installed_commit(direct_url: str | None) -> str | None:
    """The commit in an install's `direct_url.json` (PEP 610; pip writes `vcs_info` when
    it installs from a git URL), None when there is none or the file is not readable."""
    try:
        commit = json.loads(direct_url or "")["vcs_info"]["commit_id"]
    except (ValueError, KeyError, TypeError):
        return None
    return commit if isinstance(commit, str) and commit else None


def _metadata_commit() -> str | None:
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        return installed_commit(distribution("memplace").read_text("direct_url.json"))
    except PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """{"commit": sha or None, "dirty": bool or None, "package": version}. The commit is
    that of the checkout the running code comes from (an editable install), never of
    whatever repository the working directory happens to be in; outside a checkout, the
    one the install's metadata names (dirty then unknown: None)."""
    root = Path(__file__).resolve().parents[1]  # the checkout root holding bench/, model/ ...
    info: dict[str, Any] = {"commit": None, "dirty": None, "package": package_version()}
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root or not (root / "pyproject.toml").is_file():
        info["commit"] = _metadata_commit()
        return info
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":(exclude)results")
    if commit:
        info["commit"] = commit
        info["dirty"] = None if status is None else bool(status)
    return info
