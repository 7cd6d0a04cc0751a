"""Workload generators: node counts, hand-checked shapes, parameters, spec rules, DAG shape."""
from __future__ import annotations

import functools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.instances import WORKLOADS, build_instance, synthetic_workload, workload
from memplace.model import Instance

# EGRL's graphs had 57 (ResNet-50), 108 (ResNet-101) and 376 (BERT) nodes.
NODE_RANGES = {
    "resnet50": (54, 60),
    "resnet101": (104, 112),
    "bert-base": (340, 410),
}


@functools.cache
def built(name: str, **params) -> dict:
    return workload(name, **params)


def tensor(w: dict, name: str) -> dict:
    matches = [t for t in w["tensors"] if t["name"] == name]
    assert len(matches) == 1, f"{name}: {len(matches)} tensors"
    return matches[0]


def op_index(w: dict, name: str) -> int:
    return next(k for k, op in enumerate(w["ops"]) if op["name"] == name)


def weight_bytes(w: dict) -> int:
    return sum(t["size"] for t in w["tensors"] if t["kind"] == "weight")


def check_spec_rules(w: dict) -> None:
    """The spec's rules on a workload, written out independently of model/, plus the
    builder's own promises: accesses sorted by op, producer first, names unique."""
    n = len(w["ops"])
    assert len({op["name"] for op in w["ops"]}) == n
    assert len({t["name"] for t in w["tensors"]}) == len(w["tensors"])
    for op in w["ops"]:
        assert isinstance(op["flops"], float) and op["flops"] >= 0, op
        assert op["type"], op
    for t in w["tensors"]:
        assert isinstance(t["size"], int) and t["size"] > 0, t["name"]
        steps = [k for k, _ in t["accesses"]]
        assert steps == sorted(set(steps)), t["name"]
        assert all(0 <= k < n and isinstance(b, int) and b >= 0 for k, b in t["accesses"])
        if t["kind"] == "weight":
            assert t["producer"] is None, t["name"]
        if t["producer"] is not None:
            assert steps[0] == t["producer"], t["name"]


@pytest.mark.parametrize("name,bounds", NODE_RANGES.items())
def test_node_counts_land_near_egrl(name, bounds):
    lo, hi = bounds
    assert lo <= len(built(name)["ops"]) <= hi


def test_every_workload_has_its_expected_node_count():
    counts = {name: len(built(name)["ops"]) for name in WORKLOADS}
    assert counts == {"resnet50": 56, "resnet101": 107, "resnet152": 158, "vgg16": 21,
                      "mobilenetv2": 54, "efficientnet-b0": 115, "unet": 31,
                      "bert-base": 371, "vit-b16": 283, "gpt2": 282}


def test_resnet50_conv1_shapes_match_the_spec_example():
    w = built("resnet50")
    assert w["ops"][0] == {"name": "conv1", "type": "conv", "flops": 236027904.0}
    assert tensor(w, "conv1.weight")["size"] == 7 * 7 * 3 * 64 == 9408
    out = tensor(w, "conv1.out")
    assert out["size"] == 112 * 112 * 64 == 802816
    assert out["producer"] == 0 and out["accesses"] == [[0, 802816], [1, 802816]]
    assert tensor(w, "image") == {"name": "image", "kind": "activation", "size": 224 * 224 * 3,
                                  "producer": None, "accesses": [[0, 150528]]}


def test_resnet_bottleneck_is_three_ops_and_the_third_reads_the_shortcut():
    w = built("resnet50")
    conv3 = op_index(w, "layer1.1.conv3")
    assert [op["name"] for op in w["ops"][conv3 - 2:conv3 + 1]] == [
        "layer1.1.conv1", "layer1.1.conv2", "layer1.1.conv3"]
    block_input = tensor(w, "layer1.0.conv3.out")  # the identity shortcut of block 1.1
    readers = [k for k, _ in block_input["accesses"]]
    assert readers == [op_index(w, "layer1.0.conv3"), op_index(w, "layer1.1.conv1"), conv3]
    projection = tensor(w, "layer2.0.downsample.out")
    assert projection["size"] == 28 * 28 * 512
    assert [k for k, _ in projection["accesses"]][1:] == [op_index(w, "layer2.0.conv3")]
    assert tensor(w, "fc.weight")["size"] == 2048 * 1000 + 1000


def test_parameter_counts_match_the_published_models():
    # torchvision/HF/timm parameter counts; CNNs less their batch-norm scale and shift,
    # which fold into the conv (ResNet-50: 25,557,032 - 53,120).
    assert weight_bytes(built("resnet50")) == 25_557_032 - 53_120
    assert weight_bytes(built("vgg16")) == 138_357_544
    assert weight_bytes(built("bert-base")) == 109_482_240
    assert weight_bytes(built("vit-b16")) == 86_567_656
    assert weight_bytes(built("gpt2")) == 124_439_808 + 512 * 512  # + the causal mask
    assert 3.4e6 < weight_bytes(built("mobilenetv2")) < 3.51e6
    assert 5.2e6 < weight_bytes(built("efficientnet-b0")) < 5.3e6


def test_multiply_accumulates_match_the_published_models():
    def gmacs(name):
        w = built(name)
        return sum(op["flops"] for op in w["ops"] if op["type"] in
                   ("conv", "depthwise_conv", "fc", "matmul", "upsample")) / 2e9
    assert gmacs("resnet50") == pytest.approx(4.09, abs=0.02)
    assert gmacs("vgg16") == pytest.approx(15.47, abs=0.02)
    assert gmacs("mobilenetv2") == pytest.approx(0.300, abs=0.005)
    assert gmacs("vit-b16") == pytest.approx(17.6, abs=0.1)


def test_bert_keeps_attention_ops_separate():
    w = built("bert-base")
    names = [op["name"] for op in w["ops"]]
    layer = [n for n in names if n.startswith("layer0.")]
    for part in ("attention.query", "attention.key", "attention.value", "attention.scores",
                 "attention.softmax", "attention.context", "attention.output",
                 "attention.residual", "attention.layernorm", "intermediate", "gelu", "output",
                 "output.residual", "output.layernorm", "attention.q.reshape",
                 "attention.q.transpose", "attention.context.transpose"):
        assert f"layer0.{part}" in layer, part
    assert len(layer) == 30
    assert names[:6] == ["embeddings.word", "embeddings.token_type", "embeddings.position",
                         "embeddings.add_token_type", "embeddings.add_position",
                         "embeddings.layernorm"]
    assert tensor(w, "layer0.attention.query.weight")["size"] == 768 * 768
    assert tensor(w, "layer0.attention.query.bias_add.bias")["size"] == 768
    scores = tensor(w, "layer0.attention.scores.out")
    assert scores["size"] == 12 * 128 * 128
    softmax = w["ops"][op_index(w, "layer0.attention.softmax")]
    assert softmax["type"] == "softmax" and softmax["flops"] == 5.0 * 12 * 128 * 128


def test_embedding_gathers_move_rows_not_tables():
    w = built("gpt2")
    table = tensor(w, "wte.table")
    assert table["size"] == 50257 * 768
    gather, lm_head = op_index(w, "wte"), op_index(w, "lm_head")
    assert table["accesses"] == [[gather, 512 * 768], [lm_head, 50257 * 768]]
    assert tensor(w, "input_ids")["size"] == 512 * 4
    b = built("bert-base")
    assert tensor(b, "embeddings.word.table")["accesses"] == [[0, 128 * 768]]


def test_vit_has_197_tokens():
    w = built("vit-b16")
    assert tensor(w, "position_embedding")["size"] == 197 * 768
    assert tensor(w, "layer0.attention.scores.out")["size"] == 12 * 197 * 197
    assert tensor(w, "patch_embed.out")["size"] == 196 * 768


def test_unet_crops_the_skip_connection():
    w = built("unet")
    skip = tensor(w, "down0.conv2.out")
    assert skip["size"] == 568 * 568 * 64
    assert skip["accesses"][-1] == [op_index(w, "up0.concat"), 392 * 392 * 64]
    assert tensor(w, "head.out")["size"] == 388 * 388 * 2


@pytest.mark.parametrize("name", ["resnet50", "bert-base", "gpt2", "efficientnet-b0"])
def test_batch_scales_activations_and_flops_not_weights(name):
    one, four = built(name), built(name, batch=4)
    assert weight_bytes(four) == weight_bytes(one)
    assert sum(op["flops"] for op in four["ops"]) == pytest.approx(
        4 * sum(op["flops"] for op in one["ops"]), rel=0.01)
    first_conv_or_gemm = next(t for t in one["tensors"] if t["producer"] == 0)["name"]
    assert tensor(four, first_conv_or_gemm)["size"] == 4 * tensor(one, first_conv_or_gemm)["size"]


@pytest.mark.parametrize("name", ["resnet50", "vit-b16"])
def test_width_scales_every_byte_and_no_flop(name):
    one, two = built(name), built(name, width=2)
    assert [t["size"] * 2 for t in one["tensors"]] == [t["size"] for t in two["tensors"]]
    assert [op["flops"] for op in one["ops"]] == [op["flops"] for op in two["ops"]]


def test_token_ids_stay_int32_whatever_the_width():
    assert tensor(built("bert-base", width=2), "input_ids")["size"] == 128 * 4


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_workload_passes_the_spec_rules(name):
    w = built(name)
    check_spec_rules(w)
    Instance.from_dict(build_instance(name, "nnpi"))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_data_flow_is_a_dag_in_schedule_order_with_one_final_output(name):
    inst = Instance.from_dict(build_instance(name, "nnpi"))
    g = inst.graph()
    assert nx.is_directed_acyclic_graph(g)
    assert all(p < c for p, c in g.edges)
    assert nx.is_weakly_connected(g)
    produced = [t for t in inst.tensors if t["producer"] is not None]
    unread = [t["name"] for t in produced if len(t["accesses"]) == 1]
    assert len(unread) == 1, unread  # the network's output


def test_synthetic_is_seeded():
    assert synthetic_workload(500, seed=3) == synthetic_workload(500, seed=3)
    assert synthetic_workload(500, seed=3) != synthetic_workload(500, seed=4)
    assert synthetic_workload(500)["params"] == {"n_ops": 500, "seed": 0}


@pytest.mark.parametrize("n", [2, 100, 1234, 20000])
def test_synthetic_hits_the_requested_op_count(n):
    w = synthetic_workload(n, seed=1)
    assert w["name"] == f"synth-{n}" and len(w["ops"]) == n
    check_spec_rules(w)
    inst = Instance.from_dict({"format": "memplace-instance/1", "name": w["name"],
                               "workload": w, "hardware": build_instance("resnet50", "nnpi")["hardware"]})
    g = inst.graph()
    assert nx.is_directed_acyclic_graph(g) and all(p < c for p, c in g.edges)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 3000), seed=st.integers(0, 2**32 - 1))
def test_any_synthetic_size_and_seed_gives_a_valid_instance_of_that_size(n, seed):
    w = synthetic_workload(n, seed=seed)
    assert len(w["ops"]) == n
    check_spec_rules(w)
    Instance.from_dict({"format": "memplace-instance/1", "name": w["name"], "workload": w,
                        "hardware": build_instance("resnet50", "tpu")["hardware"]})


def test_synthetic_ops_read_one_to_three_activations_mostly_from_the_previous_layer():
    w = synthetic_workload(5000, seed=2)
    reads: dict[int, list[int]] = {}
    for t in w["tensors"]:
        if t["kind"] == "activation" and t["producer"] is not None:
            for k, _ in t["accesses"][1:]:
                reads.setdefault(k, []).append(t["producer"])
    assert {len(r) for r in reads.values()} == {1, 2, 3}
    assert len(reads) == 5000 - sum(1 for k, _ in w["tensors"][0]["accesses"])
    distances = [c - p for c, ps in reads.items() for p in ps]
    assert sorted(distances)[len(distances) // 2] <= 3  # mostly recent
    assert max(distances) > 10  # some skips
    weighted = sum(t["kind"] == "weight" for t in w["tensors"]) / 5000
    assert 0.55 < weighted < 0.65


def test_synthetic_flops_follow_sizes():
    w = synthetic_workload(300, seed=5)
    by_name = {t["name"]: t for t in w["tensors"]}
    for k, op in enumerate(w["ops"]):
        out = by_name[f"op{k}.out"]["size"]
        weight = by_name.get(f"op{k}.weight")
        if weight is None:
            assert op["flops"] == out
        else:
            assert op["flops"] >= 2 * weight["size"]


def test_unknown_workload_and_bad_parameter_name_the_culprit():
    from memplace.model.core.errors import MemplaceError
    with pytest.raises(MemplaceError, match="'resnet51'.*resnet50"):
        workload("resnet51")
    with pytest.raises(MemplaceError, match="resnet50.*colour"):
        workload("resnet50", colour=3)
