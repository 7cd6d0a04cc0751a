"""Derive the expected verdicts of minimalloc_verdicts.json by running MiniMalloc itself.

Not run by the tests (they read the committed JSON; MiniMalloc is not needed in CI).
Rerun by hand with a MiniMalloc binary built from github.com/google/minimalloc:

    MINIMALLOC=/path/to/minimalloc python tests/packing/data/derive_minimalloc_verdicts.py

Each case is a small MiniMalloc CSV exercising one column or a combination (aliases,
inclusive `end`, alignment, gaps with and without windows, fixed offsets, hints). For
each, MiniMalloc runs with `--validate` under its default search and again with
`--section_inference=false`; the verdict recorded is "packed" when either returns a
packing its own validator passes, else "infeasible" (both runs finding none), with the
offsets it returned. Where neither run packs, every offset vector (pins kept, each
offset a multiple of its alignment within the capacity) is put to MiniMalloc's own
`Validate` (a driver around it, `MINIMALLOC_VALIDATE`: `mm_validate FILE CAPACITY`
reads the CSV's offset column as the solution); the first it accepts makes the verdict
"packed" (its solver missed it: "solver" says so), none makes it "infeasible".
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (name, capacity, csv text); the comment says what the case pins
CASES = [
    # aliases and the inclusive end
    ("alias-buffer-start-end-touching", 3, "buffer,start,end,size\na,0,1,2\nb,1,2,2\n"),
    ("alias-upper-touching", 3, "id,lower,upper,size\na,0,1,2\nb,1,2,2\n"),
    ("alias-buffer_id-begin-upper", 4, "buffer_id,begin,upper,size\na,0,2,2\nb,1,3,2\nc,2,4,2\n"),
    ("alias-end-three-overlap", 5, "id,begin,end,size\na,0,1,2\nb,1,2,2\nc,0,2,1\n"),
    # alignment
    ("alignment-fits", 7, "id,lower,upper,size,alignment\na,0,2,3,4\nb,0,2,3,4\n"),
    ("alignment-too-tight", 6, "id,lower,upper,size,alignment\na,0,2,3,4\nb,0,2,3,4\n"),
    ("alignment-mixed", 8, "id,lower,upper,size,alignment\na,0,3,3,1\nb,1,4,2,4\nc,2,5,3,2\n"),
    # gaps without windows
    ("gap-lets-buffer-in", 4, "id,lower,upper,size,gaps\na,0,10,4,3-6\nb,3,6,4,\n"),
    ("gap-too-short", 4, "id,lower,upper,size,gaps\na,0,10,4,4-6\nb,3,6,4,\n"),
    ("gap-inclusive-under-end", 4, "id,start,end,size,gaps\na,0,9,4,3-5\nb,3,5,4,\n"),
    ("gap-inclusive-under-end-short", 4, "id,start,end,size,gaps\na,0,9,4,3-4\nb,3,5,4,\n"),
    ("gaps-two-each", 4, "id,lower,upper,size,gaps\na,0,10,4,2-4 6-8\nb,2,4,4,\nc,6,8,4,\n"),
    ("gaps-mutual", 3, "id,lower,upper,size,gaps\na,0,6,3,3-6\nb,0,6,3,0-3\n"),
    # gaps with windows
    ("window-bottom-kept", 4, "id,lower,upper,size,gaps\na,0,10,4,3-6@0:2\nb,3,6,2,\n"),
    ("window-top-kept", 4, "id,lower,upper,size,gaps\na,0,10,4,3-6@2:4\nb,3,6,2,\n"),
    ("window-too-big", 4, "id,lower,upper,size,gaps\na,0,10,4,3-6@0:3\nb,3,6,2,\n"),
    ("window-middle", 4, "id,lower,upper,size,gaps\na,0,10,4,3-6@1:3\nb,3,6,1,\nc,3,6,1,\n"),
    ("window-both-sides", 4,
     "id,lower,upper,size,gaps\na,0,10,4,3-6@0:2\nb,0,10,4,3-6@2:4\nc,3,6,0,\n"),
    ("window-under-end", 4, "id,start,end,size,gaps\na,0,9,4,3-5@0:2\nb,3,5,2,\n"),
    # fixed offsets
    ("pins-valid", 6, "id,lower,upper,size,offset\na,0,2,2,0\nb,1,3,2,2\nc,0,3,2,4\n"),
    ("pins-clash", 6, "id,lower,upper,size,offset\na,0,2,2,0\nb,1,3,2,1\nc,0,3,2,4\n"),
    ("pins-beyond-capacity", 5, "id,lower,upper,size,offset\na,0,2,2,0\nb,1,3,2,4\n"),
    ("pins-apart-in-time", 2, "id,lower,upper,size,offset\na,0,2,2,0\nb,2,4,2,0\n"),
    ("pins-in-gaps", 2, "id,lower,upper,size,gaps,offset\na,0,6,2,2-4,0\nb,2,4,2,,0\n"),
    ("pins-aligned", 8, "id,lower,upper,size,alignment,offset\na,0,2,3,4,4\nb,0,2,3,4,0\n"),
    # hints
    ("hints-packable", 4, "id,lower,upper,size,hint\na,0,2,2,2\nb,1,3,2,0\n"),
    ("hints-none", 4, "id,lower,upper,size,hint\na,0,2,2,-1\nb,1,3,2,-1\n"),
    ("hints-clash-but-packs", 4, "id,lower,upper,size,hint\na,0,2,2,0\nb,1,3,2,0\n"),
    ("hints-infeasible", 3, "id,lower,upper,size,hint\na,0,2,2,0\nb,1,3,2,0\n"),
    # combinations
    ("combo-end-gaps-alignment-hint", 8,
     "buffer,start,end,size,alignment,hint,gaps\na,0,9,4,2,0,3-5@0:2\nb,3,5,2,2,-1,\n"
     "c,0,4,2,2,4,\nd,6,9,4,4,-1,\n"),
    ("combo-gaps-windows-pins", 6,
     "id,lower,upper,size,gaps,offset\na,0,8,4,2-5@2:4,0\nb,2,5,2,,0\nc,0,8,2,,4\n"),
    ("combo-gap-makes-room", 5,
     "id,begin,end,size,alignment,gaps\na,0,5,3,1,2-3\nb,2,3,3,1,\nc,0,5,2,2,\n"),
    ("combo-zero-size", 4, "id,lower,upper,size\na,0,4,4\nz,1,2,0\n"),
]


def run(binary: str, path: Path, capacity: int, *flags: str) -> list[int] | None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.csv"
        got = subprocess.run([binary, f"--capacity={capacity}", f"--input={path}",
                              f"--output={out}", "--validate", *flags],
                             capture_output=True, text=True, timeout=60)
        if got.returncode != 0 or not out.exists():
            return None
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        return [int(r["offset"]) for r in rows]


def validated_by_brute_force(validate: str, text: str, capacity: int, tmp: str
                             ) -> list[int] | None:
    rows = list(csv.DictReader(io.StringIO(text)))
    fields = [f for f in rows[0] if f != "offset"]
    choices = []
    for r in rows:
        if r.get("offset", "") != "":
            choices.append([int(r["offset"])])
        else:
            align = int(r.get("alignment", 1) or 1)
            choices.append(range(0, capacity - int(r["size"]) + 1, align))
    path = Path(tmp) / "try.csv"
    for offsets in itertools.product(*choices):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(fields + ["offset"])
        for r, o in zip(rows, offsets):
            writer.writerow([r[f] for f in fields] + [o])
        path.write_text(out.getvalue())
        if subprocess.run([validate, str(path), str(capacity)], capture_output=True).returncode == 0:
            return list(offsets)
    return None


def main() -> None:
    binary = os.environ["MINIMALLOC"]
    validate = os.environ["MINIMALLOC_VALIDATE"]
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, capacity, text in CASES:
            path = Path(tmp) / f"{name}.csv"
            path.write_text(text)
            default = run(binary, path, capacity)
            plain = run(binary, path, capacity, "--section_inference=false")
            offsets = default if default is not None else plain
            solver = "packed" if offsets is not None else "no solution"
            if offsets is None:
                offsets = validated_by_brute_force(validate, text, capacity, tmp)
            cases.append({"name": name, "capacity": capacity, "csv": text,
                          "verdict": "packed" if offsets is not None else "infeasible",
                          "solver": solver, "default_search_packed": default is not None,
                          "offsets": offsets})
            print(name, cases[-1]["verdict"], solver, offsets)
    (HERE / "minimalloc_verdicts.json").write_text(json.dumps(
        {"source": "MiniMalloc (github.com/google/minimalloc at 9f5cf81), built on this "
                   "machine; written by tests/packing/data/derive_minimalloc_verdicts.py",
         "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
