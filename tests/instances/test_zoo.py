"""The committed zoo of real models: every instance loads by its catalog name and is
valid for both problems, carries its provenance, and the index lists exactly the files
present with the sizes they have. No torch needed."""
from __future__ import annotations

import json
import re

import pytest

from memplace.instances import builtin_path, load, zoo_names
from memplace.instances.zoo import PROVENANCE_FIELDS, ZOO_DIR, read_index, table, zoo_path
from memplace.instances.zoo.export import summary
from memplace.instances.zoo.index import EXPORTERS, VERSION_FIELDS
from memplace.instances.zoo.models import MODELS
from memplace.model.core.errors import MemplaceError

INDEX = read_index()
COMMITTED = [e for e in INDEX["models"] if e.get("file")]
FAMILIES = {"cnn", "vision-transformer", "segmentation", "encoder", "decoder", "speech", "video",
            "detection"}


def test_the_index_lists_exactly_the_instance_files_present():
    files = sorted(p.name for p in ZOO_DIR.glob("*.json") if p.name != "index.json")
    assert sorted(e["file"] for e in COMMITTED) == files
    assert len(files) >= 10
    assert zoo_names() == sorted(f"zoo/{f.removesuffix('.json')}" for f in files)


def test_every_index_entry_is_a_zoo_model_once_with_each_exporters_outcome():
    names = [e["name"] for e in INDEX["models"]]
    assert len(names) == len(set(names))
    for entry in INDEX["models"]:
        assert entry["name"] in MODELS and entry["family"] == MODELS[entry["name"]].family
        assert set(entry["exporters"]) == set(EXPORTERS)
        for outcome in entry["exporters"].values():
            assert outcome["status"] in ("ok", "export-failed", "import-failed", "timeout")
            assert (outcome["status"] == "ok") == ("error" not in outcome)
        # a model is committed exactly when one of its exports was imported
        assert bool(entry.get("file")) == any(o["status"] == "ok"
                                              for o in entry["exporters"].values())


@pytest.mark.parametrize("entry", COMMITTED, ids=[e["name"] for e in COMMITTED])
def test_zoo_instance_loads_by_name_with_its_provenance_and_indexed_sizes(entry):
    name = entry["catalog_name"]
    assert builtin_path(name) == zoo_path(name) == ZOO_DIR / entry["file"]
    data = json.loads((ZOO_DIR / entry["file"]).read_text(encoding="utf-8"))
    model, hardware = re.fullmatch(r"zoo/(.+)@(.+)", name).groups()
    assert data["name"] == name and data["workload"]["name"] == model == entry["name"]
    assert data["hardware"]["name"] == hardware == INDEX["hardware"]

    prov = data["provenance"]
    assert set(PROVENANCE_FIELDS) <= set(prov)
    assert prov["model"] == model and prov["family"] == entry["family"] in FAMILIES
    assert prov["call"] == entry["call"] and prov["hardware"] == hardware
    assert prov["exporter"] == entry["exporter"] in EXPORTERS
    assert entry["exporters"][prov["exporter"]]["status"] == "ok"
    assert entry["exporters"][prov["exporter"]]["opset"] == prov["opset"] >= 13
    assert set(VERSION_FIELDS) <= set(prov["versions"])
    assert re.fullmatch(r"[0-9a-f]{64}", prov["onnx_sha256"])
    assert prov["inputs"] and all(
        i["name"] and i["dtype"] in ("float32", "int64")
        and i["shape"][0] == 1 and all(isinstance(d, int) and d > 0 for d in i["shape"])
        for i in prov["inputs"])  # batch 1, fixed shapes
    assert prov["onnx_nodes"] == data["import"]["nodes"] == entry["summary"]["onnx_nodes"]
    assert summary(data) == entry["summary"]

    static = load(name)
    assert static.n_ops == entry["summary"]["ops"] > 0
    assert load(name, "residency").n_ops == static.n_ops


def test_decoders_come_as_prefill_and_a_decode_step_reading_the_key_value_cache():
    decoders = {e["name"]: e for e in COMMITTED if e["family"] == "decoder"}
    decode = [n for n in decoders if n.endswith("-decode")]
    assert decode, "no decode step committed"
    for name in decode:
        prov = json.loads((ZOO_DIR / decoders[name]["file"]).read_text())["provenance"]
        past = [i for i in prov["inputs"] if i["name"].startswith("past_")]
        assert prov["inputs"][0]["shape"] == [1, 1] and past
        assert len(past) == 2 * sum(o["name"].startswith("present_key") for o in prov["outputs"])


MULTI_STEP = [e for e in COMMITTED if re.search(r"-decode-\d+steps$", e["name"])]


@pytest.mark.parametrize("entry", MULTI_STEP, ids=[e["name"] for e in MULTI_STEP])
def test_a_multi_step_decode_chains_its_steps_through_the_growing_cache(entry):
    steps = int(re.search(r"(\d+)steps$", entry["name"]).group(1))
    data = json.loads((ZOO_DIR / entry["file"]).read_text())
    prov = data["provenance"]
    past = [i for i in prov["inputs"] if i["name"].startswith("past_")]
    present = [o for o in prov["outputs"] if o["name"].startswith("present_")]
    assert prov["inputs"][0]["shape"] == [1, 1] and len(past) == len(present) > 0
    # the cache grows by one token a step; the logits are every step's
    assert all(o["shape"][2] == i["shape"][2] + steps for i, o in zip(past, present))
    assert prov["outputs"][0]["name"] == "logits" and prov["outputs"][0]["shape"][1] == steps
    # one program, not one step: every step reads the embedding table again
    embedding = next(t for t in data["workload"]["tensors"]
                     if t["name"].endswith("embed_tokens.weight"))
    assert len(embedding["accesses"]) == steps
    single = next((e for e in COMMITTED if e["name"] == entry["name"].rsplit("-", 1)[0]), None)
    if single is not None:  # about `steps` times the single step's ops
        assert abs(entry["summary"]["ops"] - steps * single["summary"]["ops"]) <= 2 * steps


def test_the_table_has_a_row_per_model_of_the_index():
    text = table(INDEX)
    for entry in INDEX["models"]:
        assert (f"`{entry['catalog_name']}`" if entry.get("file") else entry["name"]) in text


def test_an_unknown_zoo_name_is_one_error_naming_it_and_a_close_match():
    with pytest.raises(MemplaceError, match=r"unknown zoo instance 'zoo/resnet19@nnpi'.*close"):
        load("zoo/resnet19@nnpi")
