"""The instance as a graph a GNN can read: padded arrays in a `gymnasium.spaces.Dict`.

Why a Dict of fixed-shape Boxes and not `gymnasium.spaces.Graph`: the instance is
a graph with two kinds of nodes (ops and tensors) and levels besides, while a
`Graph` space has one node type; and `gymnasium.vector` stacks a Dict of Boxes
into batched arrays (a `Graph` only into a tuple of graphs), which is what
vectorised training and SB3's `MultiInputPolicy` read. Each array is padded to
the environment's `Limits` and comes with a 0/1 mask of its real rows.

Keys (float32 features in SI units: bytes, seconds, flops, bytes per second):

- `op_features[k]`: flops, compute seconds (flops / compute_rate), bytes accessed.
- `tensor_features[t]`: size, traffic (bytes over all accesses), live-range start,
  live-range end (op indices, section 3), is_weight (1/0), producer op (-1: none),
  number of accesses.
- `accesses[a]`: (op, tensor) of every access, in op order; `access_bytes[a]`.
- `edges[e]`: (producer op, consumer op) of the data-flow DAG, one per activation
  read; `edge_tensor[e]`: the tensor the edge carries.
- `level_features[l]`: capacity in bytes (an unbounded level reports the instance's
  peak live bytes, which it can always hold), bandwidth, copy bandwidth, addressed
  (1/0), alignment, unbounded (1/0).
- `compute_rate`: flops per second, shape (1,).
- `op_mask`, `tensor_mask`, `access_mask`, `edge_mask`, `level_mask`: 1 on real rows.

Padded rows are 0 in features and -1 in index arrays.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from memplace.envs.instance_set import Limits
from memplace.model import Instance

OP_FEATURES = ("flops", "compute_s", "bytes")
TENSOR_FEATURES = ("size", "traffic", "live_start", "live_end", "is_weight", "producer", "accesses")
LEVEL_FEATURES = ("capacity", "bandwidth", "copy_bandwidth", "addressed", "alignment", "unbounded")


FLOAT_MAX = float(np.finfo(np.float32).max)  # Box bounds: finite, as env_checker prefers


def _features(rows: int, cols: int) -> spaces.Box:
    return spaces.Box(-1.0, FLOAT_MAX, (rows, cols), np.float32)


def _indices(shape: tuple[int, ...], high: int) -> spaces.Box:
    return spaces.Box(-1, max(high - 1, 0), shape, np.int64)


def _mask(rows: int) -> spaces.Box:
    return spaces.Box(0, 1, (rows,), np.int8)


def graph_space(limits: Limits) -> dict[str, spaces.Space]:
    """The graph part of an observation space (see the module docstring)."""
    m = limits
    return {
        "op_features": _features(m.ops, len(OP_FEATURES)),
        "op_mask": _mask(m.ops),
        "tensor_features": _features(m.tensors, len(TENSOR_FEATURES)),
        "tensor_mask": _mask(m.tensors),
        "accesses": spaces.Box(-1, max(m.ops, m.tensors) - 1, (m.accesses, 2), np.int64),
        "access_bytes": _features(m.accesses, 1),
        "access_mask": _mask(m.accesses),
        "edges": _indices((m.edges, 2), m.ops),
        "edge_tensor": _indices((m.edges,), m.tensors),
        "edge_mask": _mask(m.edges),
        "level_features": _features(m.levels, len(LEVEL_FEATURES)),
        "level_mask": _mask(m.levels),
        "compute_rate": spaces.Box(0.0, FLOAT_MAX, (1,), np.float32),
    }


def graph_observation(instance: Instance, limits: Limits) -> dict[str, np.ndarray]:
    """The graph arrays of `instance` padded to `limits`: fresh copies of arrays built once
    per instance (an agent may keep or modify what it is given)."""
    built = instance.derived(f"gym-graph-{limits}", lambda i: _build(i, limits))
    return {key: array.copy() for key, array in built.items()}


def _padded(values: np.ndarray, rows: int, fill: float, dtype) -> np.ndarray:
    out = np.full((rows,) + values.shape[1:], fill, dtype)
    out[:values.shape[0]] = values
    return out


def _build(i: Instance, m: Limits) -> dict[str, Any]:
    m.check(i)
    op_bytes = np.bincount(i.access_op, weights=i.op_bytes.astype(np.float64), minlength=i.n_ops)
    producer = np.array([-1 if t["producer"] is None else t["producer"] for t in i.tensors], np.float64)
    ops = np.stack([i.flops, i.compute, op_bytes], axis=1)
    tensors = np.stack([i.size, i.traffic, i.start, i.end, i.is_weight, producer,
                        np.diff(i.tensor_ptr)], axis=1).astype(np.float64)
    reads = [(t, tensor["producer"], k) for t, tensor in enumerate(i.tensors)
             if tensor["producer"] is not None for k, _ in tensor["accesses"] if k != tensor["producer"]]
    edges = [(producer_op, k) for _, producer_op, k in reads]
    edge_tensor = [t for t, _, _ in reads]
    unbounded = np.array([lv.capacity is None for lv in i.levels], np.float64)
    capacity = np.where(unbounded == 1, i.peak_live_bytes(), i.capacity.astype(np.float64))
    levels = np.stack([capacity, i.bandwidth, i.copy_bandwidth, i.addressed, i.alignment,
                       unbounded], axis=1).astype(np.float64)
    accesses = np.stack([i.access_op, i.op_tensor], axis=1)

    def mask(n: int, rows: int) -> np.ndarray:
        return _padded(np.ones(n, np.int8), rows, 0, np.int8)

    obs = {
        "op_features": _padded(ops, m.ops, 0.0, np.float32),
        "op_mask": mask(i.n_ops, m.ops),
        "tensor_features": _padded(tensors, m.tensors, 0.0, np.float32),
        "tensor_mask": mask(i.n_tensors, m.tensors),
        "accesses": _padded(accesses, m.accesses, -1, np.int64),
        "access_bytes": _padded(i.op_bytes.astype(np.float64)[:, None], m.accesses, 0.0, np.float32),
        "access_mask": mask(accesses.shape[0], m.accesses),
        "edges": _padded(np.array(edges, np.int64).reshape(-1, 2), m.edges, -1, np.int64),
        "edge_tensor": _padded(np.array(edge_tensor, np.int64), m.edges, -1, np.int64),
        "edge_mask": mask(len(edges), m.edges),
        "level_features": _padded(levels, m.levels, 0.0, np.float32),
        "level_mask": mask(i.n_levels, m.levels),
        "compute_rate": np.array([i.compute_rate], np.float32),
    }
    for array in obs.values():
        array.setflags(write=False)
    return obs
