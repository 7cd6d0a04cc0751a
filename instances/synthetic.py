"""Seeded random layered DAGs for scaling studies (100 to 100,000 ops and beyond).

The graph is a sequence of layers of 1-3 ops each, in schedule order. Every op
writes one activation and reads 1-3 activations of recent layers: every op reads
the previous layer, every output but the last layer's is read by the next layer,
and further inputs (up to 3 in all) come from the previous layer too or, with
probability `SKIP_PROBABILITY`, skip back 2-8 layers. Ops of
the first layer read the graph input. An op owns a weight tensor with
probability `WEIGHT_PROBABILITY`.

Sizes are int8 bytes, log-uniform: activations 1 KiB - 2 MiB, weights
`fan_in * channels` with both powers of two (fan_in 16-2048, channels 16-1024).
Flops follow the sizes: an op with a weight is a GEMM/conv with
2 * fan_in * channels * ceil(output / channels) flops; one without is
elementwise, 1 flop per output element.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from memplace.model.core.reading import gc_paused

WEIGHT_PROBABILITY = 0.6
SKIP_PROBABILITY = 0.25
EXTRA_INPUT_PROBABILITIES = (0.6, 0.3, 0.1)  # 0, 1 or 2 inputs beyond the first
ACTIVATION_BYTES = (2**10, 2**21)
SOURCE = ("memplace synthetic layered DAG (instances/synthetic.py): layers of 1-3 ops, "
          "1-3 inputs from recent layers, log-uniform int8 sizes, flops from sizes")


def synthetic_workload(n_ops: int, seed: int = 0) -> dict[str, Any]:
    """A workload dict named `synth-{n_ops}` with exactly `n_ops` ops, drawn from `seed`."""
    if n_ops < 2:
        raise ValueError(f"a synthetic workload needs at least 2 ops, got {n_ops}")
    with gc_paused():  # ~10^5 small dicts, nothing to collect
        return _synthetic(n_ops, seed)


def _synthetic(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)

    # Layers: widths 1..3, the last one trimmed so the total is exactly n.
    widths = rng.integers(1, 4, size=n)
    ends = np.cumsum(widths)
    n_layers = int(np.searchsorted(ends, n)) + 1
    widths = widths[:n_layers].copy()
    widths[-1] -= int(ends[n_layers - 1]) - n
    starts = np.concatenate(([0], np.cumsum(widths)[:-1]))
    layer = np.repeat(np.arange(n_layers), widths)
    position = np.arange(n) - starts[layer]

    # Base edges between consecutive layers, so that every op of a layer reads the
    # previous one and every output of a layer (but the last) is read by the next:
    # op at position i reads position i mod w_prev; output at position i is read
    # by position i mod w_next.
    has_prev = layer > 0
    prev = layer[has_prev] - 1
    has_next = layer < n_layers - 1
    nxt = layer[has_next] + 1
    consumer = np.concatenate((np.flatnonzero(has_prev),
                               starts[nxt] + position[has_next] % widths[nxt]))
    producer = np.concatenate((starts[prev] + position[has_prev] % widths[prev],
                               np.flatnonzero(has_next)))
    pairs = np.unique(producer * n + consumer)

    # Extra inputs, up to 3 in all: the previous layer, or a skip back 2..8 layers.
    n_base = np.bincount(pairs % n, minlength=n)
    n_extra = np.minimum(rng.choice(3, size=n, p=EXTRA_INPUT_PROBABILITIES), 3 - n_base)
    extra_consumer = np.repeat(np.arange(n), np.where(has_prev, np.maximum(n_extra, 0), 0))
    back = np.where(rng.random(extra_consumer.size) < SKIP_PROBABILITY,
                    rng.integers(2, 9, size=extra_consumer.size), 1)
    source_layer = np.maximum(layer[extra_consumer] - back, 0)
    extra_producer = starts[source_layer] + (
        rng.random(extra_consumer.size) * widths[source_layer]).astype(np.int64)
    pairs = np.unique(np.concatenate((pairs, extra_producer * n + extra_consumer)))
    producer, consumer = pairs // n, pairs % n  # sorted by producer, then consumer

    # Sizes and flops.
    lo, hi = np.log2(ACTIVATION_BYTES)
    out_size = np.exp2(rng.uniform(lo, hi, size=n)).astype(np.int64)
    has_weight = rng.random(n) < WEIGHT_PROBABILITY
    fan_in = np.left_shift(1, rng.integers(4, 12, size=n))
    channels = np.minimum(np.left_shift(1, rng.integers(4, 11, size=n)), out_size)
    weight_size = fan_in * channels
    positions = -(-out_size // channels)
    flops = np.where(has_weight, 2.0 * weight_size * positions, out_size.astype(np.float64))
    gemm_kind = rng.random(n) < 0.5
    n_inputs = np.bincount(consumer, minlength=n) + (layer == 0)

    # Tensor indices: the graph input, then per op its weight (if any) and its output.
    out_index = 1 + np.arange(n) + np.cumsum(has_weight)
    weight_index = out_index - 1

    # Accesses of each output: producer first, then its consumers in op order.
    by_producer = np.searchsorted(producer, np.arange(n + 1))
    out_sizes = out_size.tolist()
    cons = consumer.tolist()
    bounds = by_producer.tolist()

    ops: list[dict[str, Any]] = []
    tensors: list[dict[str, Any]] = [None] * (1 + n + int(has_weight.sum()))  # type: ignore[list-item]
    first_layer = np.flatnonzero(layer == 0).tolist()
    input_size = int(np.exp2(rng.uniform(lo, hi)))
    tensors[0] = {"name": "input", "kind": "activation", "size": input_size, "producer": None,
                  "accesses": [[k, input_size] for k in first_layer]}
    weighted, kinds, fl = has_weight.tolist(), gemm_kind.tolist(), flops.tolist()
    inputs, wsize = n_inputs.tolist(), weight_size.tolist()
    for k, (wi, oi) in enumerate(zip(weight_index.tolist(), out_index.tolist())):
        if weighted[k]:
            kind = "matmul" if kinds[k] else "conv"
            tensors[wi] = {"name": f"op{k}.weight", "kind": "weight", "size": wsize[k],
                           "producer": None, "accesses": [[k, wsize[k]]]}
        else:
            kind = "add" if inputs[k] > 1 else "elementwise"
        ops.append({"name": f"op{k}", "type": kind, "flops": fl[k]})
        size = out_sizes[k]
        accesses = [[k, size]]
        accesses.extend([c, size] for c in cons[bounds[k]:bounds[k + 1]])
        tensors[oi] = {"name": f"op{k}.out", "kind": "activation", "size": size,
                       "producer": k, "accesses": accesses}
    return {"name": f"synth-{n}", "source": SOURCE, "params": {"n_ops": n, "seed": seed},
            "ops": ops, "tensors": tensors}
