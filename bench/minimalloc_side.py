"""MiniMalloc run beside memplace on the same instance, in the same process tree.

`memplace pack-bench --minimalloc BINARY` calls this for every fixed-capacity instance:
the instance is written as MiniMalloc CSV, MiniMalloc (github.com/google/minimalloc, built
by the user) packs it with `--validate` and the same time limit, and its packing is
re-checked by memplace's own `check_packing`. The time reported is MiniMalloc's own
"Elapsed time" line (its solver alone, as memplace's `seconds` is memplace's packing alone).
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from memplace.model.core.errors import MemplaceError
from memplace.model.packing.buffers import Buffer
from memplace.model.packing.generate import write_csv
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing

_ELAPSED = re.compile(r"Elapsed time ([0-9.]+)s")


def run_minimalloc(binary: str | Path, buffers: Sequence[Buffer], capacity: int,
                   time_limit: float) -> tuple[str, float]:
    """(status, seconds): "packed" (validated by MiniMalloc and by memplace), "timeout",
    "no solution", "INVALID" (memplace's check rejects its packing) or "error"."""
    if not Path(binary).is_file():
        raise MemplaceError(f"--minimalloc: no MiniMalloc binary at {binary}")
    if any(b.gaps or b.offset is not None or b.hint is not None for b in buffers):
        raise MemplaceError("--minimalloc: only plain instances are passed to MiniMalloc here")
    with tempfile.TemporaryDirectory() as tmp:
        given, out = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        write_csv(given, buffers)
        try:
            done = subprocess.run([str(binary), f"--capacity={capacity}", f"--input={given}",
                                   f"--output={out}", f"--timeout={time_limit:g}s",
                                   "--validate"], capture_output=True, text=True,
                                  timeout=time_limit + 30)
        except subprocess.TimeoutExpired:
            return "timeout", float(time_limit)
        text = done.stdout + done.stderr
        found = _ELAPSED.search(text)
        seconds = float(found[1]) if found else float("nan")
        if done.returncode == 0 and out.exists():
            offsets = [b.offset for b in read_buffers(out).buffers]
            if check_packing(buffers, offsets, capacity):
                return "INVALID", seconds
            return "packed", seconds
        if "DEADLINE_EXCEEDED" in text:
            return "timeout", seconds
        if "NOT_FOUND" in text or "ABORTED" in text:
            return "no solution", seconds
        return "error", seconds
