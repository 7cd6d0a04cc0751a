"""The committed XLA programs (issue 20): they load by name, are what their committed HLO
text imports to (without JAX), keep XLA's FLOPs and bytes, and XLA's own offsets are a
packing of their heap CSV; the program makers compile and import at small sizes."""
from __future__ import annotations

import gzip
import json
import sys

import pytest

from memplace.instances import load
from memplace.instances.catalog import XLA_DIR, xla_names
from memplace.instances.xla import cost_comparison, from_hlo_text, import_xla
from memplace.instances.xla.programs import PROGRAMS, cnn, cnn_deep, decoder, encoder, mlp, train
from memplace.model.packing.minimalloc_csv import read_buffers
from memplace.model.packing.packers import check_packing

NAMES = xla_names()


def test_every_program_is_committed_with_its_heap_and_hlo():
    assert NAMES == sorted(f"xla-{p}@nnpi" for p in PROGRAMS)
    for program in PROGRAMS:
        for suffix in (".heap.csv", ".heap.xla.csv", ".heap.xla.json", ".hlo.txt.gz"):
            assert (XLA_DIR / f"xla-{program}{suffix}").is_file(), (program, suffix)
    provenance = json.loads((XLA_DIR / "PROVENANCE.json").read_text())
    assert set(provenance) == set(PROGRAMS)
    assert all(p["jax"].startswith("0.10") and "xla_flags" in p for p in provenance.values())


@pytest.mark.parametrize("name", NAMES)
def test_committed_program_is_its_hlo_text_imported_without_jax(name, monkeypatch):
    inst = load(name)
    program = inst.workload_name.removeprefix("xla-")
    text = gzip.decompress((XLA_DIR / f"xla-{program}.hlo.txt.gz").read_bytes()).decode()
    monkeypatch.setitem(sys.modules, "jax", None)
    again = from_hlo_text(text, "nnpi", name=inst.workload_name)
    assert again["workload"]["ops"] == inst.data["workload"]["ops"]
    assert again["workload"]["tensors"] == inst.data["workload"]["tensors"]
    for key, row in cost_comparison(inst.data).items():
        assert abs(row["memplace"] - row["xla"]) <= 0.05 * max(row["xla"], 1.0), (name, key, row)
    assert load(name, "residency").n_ops == inst.n_ops


@pytest.mark.parametrize("name", NAMES)
def test_xla_offsets_are_a_packing_of_the_committed_heap_csv(name):
    program = load(name).workload_name
    problem = read_buffers(XLA_DIR / f"{program}.heap.csv")
    solution = read_buffers(XLA_DIR / f"{program}.heap.xla.csv")
    record = json.loads((XLA_DIR / f"{program}.heap.xla.json").read_text())
    offsets = [int(row["offset"]) for row in solution.rows]
    assert check_packing(problem.buffers, offsets, record["heap_size"]) == []
    assert record["heap_size"] == load(name).data["import"]["memory_analysis"]["temp_size_in_bytes"]
    assert all(b.alignment == record["alignment"] == 64 for b in problem.buffers)


SMALL = {
    "mlp": lambda: mlp(layers=2, width=32, batch=4),
    "cnn": lambda: cnn(blocks=1, channels=(4, 8), image=8, batch=1),
    "cnn-deep": lambda: cnn_deep(stages=(1, 2), widths=(4, 8), expansion=2, image=8, batch=1),
    "encoder": lambda: encoder(layers=1, seq=8, width=16, heads=2, hidden=32, batch=1),
    "decoder": lambda: decoder(layers=1, steps=3, context=4, width=16, heads=2, hidden=32,
                               batch=1, vocab=32),
    "train": lambda: train(layers=2, width=16, batch=4, inputs=8),
}


def test_every_program_has_a_small_size():
    assert set(SMALL) == set(PROGRAMS)


@pytest.mark.parametrize("program", sorted(SMALL))
def test_program_makers_compile_and_import_at_small_sizes(program):
    fn, args = SMALL[program]()
    got = import_xla(fn, "nnpi", args=args, name=program)
    for key, row in cost_comparison(got.instance).items():
        assert abs(row["memplace"] - row["xla"]) <= 0.05 * max(row["xla"], 1.0), (key, row)
    assert got.heap.problems() == []
    loops = got.instance["import"]["loops"]
    if program == "decoder":
        assert [loop["trip_count"] for loop in loops] == [3]
    if program == "train":  # the scanned checkpointed layers: forward and backward loops
        assert sorted(loop["trip_count"] for loop in loops) == [2, 2]


def test_xla_table_packs_every_heap_no_higher_than_xla_and_checks_it(tmp_path):
    from click.testing import CliRunner
    from memplace.cli import main
    result = CliRunner().invoke(main, ["xla-table", "--runs", str(tmp_path), "--pack-time-limit", "2"])
    assert result.exit_code == 0, result.output
    rows = [line.split("|")[1:-1] for line in (tmp_path / "table.md").read_text().splitlines()[2:]]
    assert sorted(r[0].strip() for r in rows) == sorted(PROGRAMS)
    for r in rows:
        xla_heap, packed, checked = int(r[7]), int(r[8]), r[11].strip()
        assert packed <= xla_heap and checked == "yes", r
    assert (tmp_path / "solvers.md").read_text().count("\n") == 2  # no runs in this folder
