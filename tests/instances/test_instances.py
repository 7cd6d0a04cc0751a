"""Hardware presets, the catalog, the committed instance files, loading and the CLI."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memplace.cli import main
from memplace.instances import (COMMITTED, DATA_DIR, HARDWARE, WORKLOADS, build_instance,
                                builtin_names, committed_specs, dumps, hardware_preset, load,
                                residency_names)
from memplace.model import Instance, slowest_latency
from memplace.model.core.errors import MemplaceError


# ---------------------------------------------------------------------- presets
def test_nnpi_preset_is_spec_section_8():
    hw = hardware_preset("nnpi")
    assert hw["compute_rate"] == 9.2e13
    assert hw["levels"] == [
        {"name": "SRAM", "capacity": 4194304, "bandwidth": 6.8e12},
        {"name": "LLC", "capacity": 25165824, "bandwidth": 6.8e11},
        {"name": "DRAM", "capacity": None, "bandwidth": 6.8e10},
    ]
    assert "EGRL" in hw["source"] and "NNP-I" in hw["source"]


@pytest.mark.parametrize("name", list(HARDWARE))
def test_presets_are_fastest_first_with_only_the_last_level_unbounded(name):
    hw = hardware_preset(name)
    levels = hw["levels"]
    assert hw["name"] == name and hw["source"]
    bandwidths = [lv["bandwidth"] for lv in levels]
    assert bandwidths == sorted(bandwidths, reverse=True) and len(set(bandwidths)) == len(levels)
    capacities = [lv["capacity"] for lv in levels[:-1]]
    assert all(isinstance(c, int) and c > 0 for c in capacities)
    assert capacities == sorted(capacities) and levels[-1]["capacity"] is None


def test_published_figures_of_the_other_presets():
    tpu, edge, gpu = hardware_preset("tpu"), hardware_preset("edge-npu"), hardware_preset("gpu")
    assert tpu["compute_rate"] == 1.38e14
    assert [lv["capacity"] for lv in tpu["levels"]] == [16 * 2**20, 128 * 2**20, None]
    assert tpu["levels"][-1]["bandwidth"] == 6.14e11
    assert edge["levels"][0] == {"name": "SRAM", "capacity": 2**20, "bandwidth": 1.6e10,
                                 "addressed": True, "alignment": 64}
    assert edge["compute_rate"] == 1.024e12
    assert gpu["compute_rate"] == 6.24e14
    assert gpu["levels"][0]["capacity"] == 108 * 164 * 1024
    assert gpu["levels"][1]["capacity"] == 40 * 2**20
    assert gpu["levels"][2]["bandwidth"] == 1.555e12


def test_hardware_returns_a_copy():
    hardware_preset("nnpi")["levels"][0]["capacity"] = 1
    assert hardware_preset("nnpi")["levels"][0]["capacity"] == 4194304


# ---------------------------------------------------------------------- catalog
def test_build_instance_names_and_provenance():
    d = build_instance("resnet50", "nnpi")
    assert d["format"] == "memplace-instance/1" and d["name"] == "resnet50@nnpi"
    assert d["workload"]["name"] == "resnet50" and d["hardware"]["name"] == "nnpi"
    assert "He, Zhang" in d["workload"]["source"] and d["source"] and d["notes"]
    batched = build_instance("resnet50", "tpu", batch=2)
    assert batched["name"] == "resnet50[batch=2]@tpu"
    assert batched["workload"]["params"] == {"batch": 2, "width": 1}


def test_unknown_hardware_names_close_matches():
    with pytest.raises(MemplaceError, match="'npu'.*edge-npu"):
        build_instance("resnet50", "npu")


def test_dumps_round_trips_floats_and_keeps_key_order():
    d = build_instance("synth-200", "gpu")
    text = dumps(d)
    assert json.loads(text) == d
    assert list(json.loads(text)) == list(d)
    lines = {line.rstrip(",") for line in text.splitlines()}
    for item in d["workload"]["ops"] + d["workload"]["tensors"]:
        assert json.dumps(item, separators=(",", ":")) in lines  # one line each


def test_committed_set_covers_egrl_and_every_workload_on_two_presets():
    names = set(builtin_names())
    assert {"resnet50@nnpi", "resnet101@nnpi", "bert-base@nnpi"} <= names
    for w in WORKLOADS:
        assert len([n for n in names if n.split("@")[0] == w]) >= 2, w
    assert {"synth-100@nnpi", "synth-1000@nnpi", "synth-10000@nnpi"} <= names
    assert names == {f"{w}@{h}" for w, h in COMMITTED} | set(residency_names())


def test_committed_files_are_what_the_generators_make_now():
    stale = []
    for w, h, params in committed_specs():
        instance = build_instance(w, h, **params)
        path = DATA_DIR / f"{instance['name']}.json"
        if json.loads(path.read_text(encoding="utf-8")) != instance:
            stale.append(path.name)
    assert not stale, f"run `memplace instances regenerate`; stale: {stale}"


# ---------------------------------------------------------------------- loading
def test_load_by_name_and_by_path_give_the_same_instance(tmp_path):
    by_name = load("resnet50@nnpi")
    assert isinstance(by_name, Instance)
    assert (by_name.n_ops, by_name.n_tensors, by_name.level_names) == (56, 111, ["SRAM", "LLC", "DRAM"])
    copy = tmp_path / "mine.json"
    copy.write_text(dumps(build_instance("resnet50", "nnpi")))
    assert load(copy).to_dict() == by_name.to_dict()
    assert load(str(DATA_DIR / "resnet50@nnpi.json")).to_dict() == by_name.to_dict()


def test_unknown_instance_names_it_and_close_matches():
    with pytest.raises(MemplaceError) as info:
        load("resnet50@npi")
    message = str(info.value)
    assert "'resnet50@npi'" in message and "resnet50@nnpi" in message


def test_any_synthetic_size_loads_by_name_as_the_generator_builds_it():
    inst = load("synth-321@gpu", problem="residency")
    assert inst.name == "synth-321@gpu" and inst.n_ops == 321
    assert inst.to_dict() == Instance.from_dict(build_instance("synth-321", "gpu")).to_dict()


@pytest.mark.parametrize("name, says", [
    ("synth-1@nnpi", "at least 2 ops"),
    ("synth-10000001@nnpi", "2 to 10,000,000 ops"),
    ("synth-1000000000000000@nnpi", "2 to 10,000,000 ops"),
    ("synth-500@npi", "unknown hardware preset 'npi'"),
])
def test_bad_synthetic_names_say_what_is_wrong(name, says):
    with pytest.raises(MemplaceError) as info:
        load(name)
    assert says in str(info.value)


@pytest.mark.parametrize("name", ["resnet50@nnpi", "bert-base@edge-npu", "synth-1000@nnpi"])
def test_slowest_latency_of_committed_instances(name):
    """Slowest placement by the spec's formula, written out: sum of max(compute, bytes/bw)."""
    inst = load(name)
    d = inst.to_dict()
    rate = d["hardware"]["compute_rate"]
    bw = d["hardware"]["levels"][-1]["bandwidth"]
    memory = [0.0] * inst.n_ops
    for t in d["workload"]["tensors"]:
        for k, b in t["accesses"]:
            memory[k] += b / bw
    expected = sum(max(op["flops"] / rate, m) for op, m in zip(d["workload"]["ops"], memory))
    assert slowest_latency(inst) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_cli_list_shows_every_builtin_instance(runner):
    result = runner.invoke(main, ["instances", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["name", "ops", "tensors"]
    assert len(lines) == 1 + len(builtin_names())
    row = next(line.split() for line in lines if line.startswith("resnet50@nnpi "))
    inst = load("resnet50@nnpi")
    assert row[1:3] == ["56", "111"]
    assert float(row[3]) == pytest.approx(inst.peak_live_bytes() / 2**20, abs=0.01)
    assert float(row[4]) == pytest.approx(slowest_latency(inst) * 1e6, abs=0.1)
    assert float(row[5]) == pytest.approx(inst.compute_floor() * 1e6, abs=0.1)


def test_cli_list_filters_by_glob(runner):
    result = runner.invoke(main, ["instances", "list", "resnet*@nnpi", "gpt2@*"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()[1:]]
    assert names == ["gpt2@edge-npu", "gpt2@edge-tpu", "gpt2@gpu", "gpt2@nnpi", "gpt2@tpu",
                     "resnet101@nnpi", "resnet152@nnpi", "resnet50@nnpi",
                     "resnet50[batch=8]@nnpi"]
    result = runner.invoke(main, ["instances", "list", "alexnet*"])
    assert result.exit_code == 2 and "alexnet*" in result.output


def test_cli_show_summarises_levels_and_sizes(runner):
    result = runner.invoke(main, ["instances", "show", "mobilenetv2@edge-npu"])
    assert result.exit_code == 0, result.output
    assert "addressed, alignment 64" in result.output
    assert "ops           54" in result.output
    assert "weights       3.31 MiB (3470760 B)" in result.output
    assert "Sandler" in result.output


def test_cli_unknown_instance_exits_2_naming_it(runner):
    result = runner.invoke(main, ["instances", "show", "resnet5@nnpi"])
    assert result.exit_code == 2
    assert "resnet5@nnpi" in result.output and "resnet50@nnpi" in result.output


def test_cli_export_writes_a_loadable_file(runner, tmp_path):
    out = tmp_path / "r.json"
    result = runner.invoke(main, ["instances", "export", "resnet50@nnpi", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == build_instance("resnet50", "nnpi")
    batched = tmp_path / "b.json"
    result = runner.invoke(main, ["instances", "export", "bert-base@tpu", "--batch", "2",
                                  "--seq-len", "64", "-o", str(batched)])
    assert result.exit_code == 0, result.output
    inst = load(batched)
    assert inst.name == "bert-base[batch=2,seq_len=64]@tpu"
    assert inst.tensors[0]["size"] == 2 * 64 * 4  # input ids
    fresh = tmp_path / "s.json"
    result = runner.invoke(main, ["instances", "export", "synth-300@edge-npu", "-o", str(fresh)])
    assert result.exit_code == 0, result.output
    assert load(fresh).n_ops == 300
    result = runner.invoke(main, ["instances", "export", "resnet49@nnpi", "-o", str(fresh)])
    assert result.exit_code == 2 and "'resnet49'" in result.output


def test_cli_regenerate_rewrites_data_files(runner, monkeypatch, tmp_path):
    import memplace.instances.catalog as catalog
    monkeypatch.setattr(catalog, "COMMITTED", (("resnet50", "nnpi"), ("synth-100", "gpu")))
    monkeypatch.setattr(catalog, "RESIDENCY_SET", (("mobilenetv2", "edge-tpu", {"batch": 2}),))
    (tmp_path / "stale@nnpi.json").write_text("{}")
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    monkeypatch.setattr(catalog.regenerate, "__defaults__", (tmp_path,))
    result = runner.invoke(main, ["instances", "regenerate"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "mobilenetv2[batch=2]@edge-tpu.json", "resnet50@nnpi.json", "synth-100@gpu.json"]
    assert json.loads((tmp_path / "synth-100@gpu.json").read_text()) == build_instance("synth-100", "gpu")


def test_only_a_preset_whose_source_documents_its_copy_rate_sets_copy_bandwidth():
    setting = [name for name, hw in HARDWARE.items()
               if any("copy_bandwidth" in level for level in hw["levels"])]
    assert setting == ["edge-tpu"]
    assert "DMA" in HARDWARE["edge-tpu"]["source"]
    # the others copy at the level's bandwidth (docs/spec.md section 9's default)
    assert load("resnet50@nnpi").copy_bandwidth.tolist() == load("resnet50@nnpi").bandwidth.tolist()
    assert load("resnet50@edge-tpu").copy_bandwidth.tolist() == [6.4e10, 5e8]
