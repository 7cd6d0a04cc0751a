"""The committed XLA programs: plain JAX (no Flax), random parameters, float32, compiled for
the CPU. Each maker returns `(function, example arguments)`; `regenerate` compiles them
all and writes the instance files and XLA heap baselines under `instances/data/xla/`
(needs `memplace[xla]`; nothing else in memplace needs JAX to read those files).

- mlp: a 32-layer residual MLP with layer norm (batch 64, width 512).
- cnn: a ResNet-style CNN (3 stages x 3 basic blocks, 16/32/64 channels, 32x32 images,
  batch 8), batch norm folded into per-channel scale and shift as at inference.
- cnn-deep: a ResNet-152-deep CNN of bottleneck blocks (stages of 3, 8, 36 and 3 blocks,
  bottleneck widths 8/16/32/64 expanded 4x, 32x32 images, batch 4), batch norm folded the
  same way; deep enough that XLA's fusion still leaves a few hundred ops.
- encoder: a 12-layer transformer encoder (sequence 128, width 256, 4 heads, MLP 1024).
- decoder: a 4-layer decoder that runs 64 decode steps under `lax.scan`, each step
  writing its key and value into a KV cache (`dynamic_update_slice`) and attending
  over it.
- train: one training step of an 8-layer MLP classifier scanned over depth with
  `jax.checkpoint` (forward, backward with rematerialisation, Adam update), where
  activations live from the forward pass to the backward pass.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Callable

SEED = 0


def _jax():
    from memplace.instances.xla.jax_source import require_jax
    jax = require_jax()
    return jax, jax.numpy, jax.lax


class _Random:
    """Random float32 parameters from NumPy (jax.random would compile a kernel per shape)."""

    def __init__(self, seed: int = SEED):
        import numpy as np
        self.rng, self.np = np.random.default_rng(seed), np

    def normal(self, *shape: int, scale: float = 1.0):
        import jax.numpy as jnp
        return jnp.asarray(self.rng.standard_normal(shape, dtype=self.np.float32) * scale)

    def integers(self, high: int, *shape: int):
        import jax.numpy as jnp
        return jnp.asarray(self.rng.integers(0, high, shape, dtype=self.np.int32))


def _layer_norm(jnp, x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * (1.0 / jnp.sqrt(var + 1e-5)) * scale + bias


def mlp(layers: int = 32, width: int = 512, batch: int = 64) -> tuple[Callable, tuple]:
    jax, jnp, _ = _jax()
    rand = _Random()
    params = [{"w": rand.normal(width, width, scale=width ** -0.5),
               "b": jnp.zeros(width), "scale": jnp.ones(width), "bias": jnp.zeros(width)}
              for _ in range(layers)]
    x = rand.normal(batch, width)

    def forward(params, x):
        for p in params:
            x = x + jax.nn.gelu(_layer_norm(jnp, x, p["scale"], p["bias"]) @ p["w"] + p["b"])
        return x
    return forward, (params, x)


def _conv_params(rand: _Random, jnp, cin: int, cout: int, k: int) -> dict:
    """A k x k convolution's weights, its batch norm folded into a per-channel scale and shift."""
    return {"w": rand.normal(k, k, cin, cout, scale=(k * k * cin) ** -0.5),
            "scale": jnp.ones(cout), "shift": jnp.zeros(cout)}


def _residual_forward(block_body: Callable) -> Callable:
    """The forward pass both CNNs share: the stem, stages of residual blocks (stride 2 on each
    later stage's first block, a 1x1 projection where the block has one), a pooled linear
    head. `block_body(conv, block, x, stride)` is the block's main path."""
    jax, jnp, lax = _jax()

    def conv(p, x, stride=1):
        y = lax.conv_general_dilated(x, p["w"], (stride, stride), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y * p["scale"] + p["shift"]

    def forward(params, x):
        x = jax.nn.relu(conv(params["stem"], x))
        for s, stage in enumerate(params["stages"]):
            for b, block in enumerate(stage):
                stride = 2 if s > 0 and b == 0 else 1
                y = block_body(conv, block, x, stride)
                skip = conv(block["proj"], x, stride) if "proj" in block else x
                x = jax.nn.relu(y + skip)
        x = jnp.mean(x, axis=(1, 2))
        return x @ params["head"]
    return forward


def cnn(blocks: int = 3, channels: tuple[int, ...] = (16, 32, 64), image: int = 32,
        batch: int = 8) -> tuple[Callable, tuple]:
    jax, jnp, _ = _jax()
    rand = _Random()
    params = {"stem": _conv_params(rand, jnp, 3, channels[0], 3), "stages": []}
    cin = channels[0]
    for cout in channels:
        stage = []
        for b in range(blocks):
            block = {"a": _conv_params(rand, jnp, cin, cout, 3), "b": _conv_params(rand, jnp, cout, cout, 3)}
            if cin != cout:
                block["proj"] = _conv_params(rand, jnp, cin, cout, 1)
            stage.append(block)
            cin = cout
        params["stages"].append(stage)
    params["head"] = rand.normal(channels[-1], 10, scale=channels[-1] ** -0.5)
    x = rand.normal(batch, image, image, 3)

    def basic(conv, block, x, stride):
        return conv(block["b"], jax.nn.relu(conv(block["a"], x, stride)))
    return _residual_forward(basic), (params, x)


def cnn_deep(stages: tuple[int, ...] = (3, 8, 36, 3),
             widths: tuple[int, ...] = (8, 16, 32, 64), expansion: int = 4, image: int = 32, batch: int = 4) -> tuple[Callable, tuple]:
    """A ResNet-152-deep CNN of bottleneck blocks (1x1 reduce, 3x3, 1x1 expand, a 1x1
    projection on each stage's first block; stages of 3, 8, 36 and 3 blocks) at a small
    width and image, batch norm folded as in `cnn`."""
    jax, jnp, _ = _jax()
    rand = _Random()
    params = {"stem": _conv_params(rand, jnp, 3, widths[0], 3), "stages": []}
    cin = widths[0]
    for blocks, width in zip(stages, widths):
        stage = []
        for b in range(blocks):
            cout = width * expansion
            block = {"reduce": _conv_params(rand, jnp, cin, width, 1),
                     "conv": _conv_params(rand, jnp, width, width, 3),
                     "expand": _conv_params(rand, jnp, width, cout, 1)}
            if b == 0:
                block["proj"] = _conv_params(rand, jnp, cin, cout, 1)
            stage.append(block)
            cin = cout
        params["stages"].append(stage)
    params["head"] = rand.normal(cin, 10, scale=cin ** -0.5)
    x = rand.normal(batch, image, image, 3)

    def bottleneck(conv, block, x, stride):
        y = jax.nn.relu(conv(block["reduce"], x))
        y = jax.nn.relu(conv(block["conv"], y, stride))
        return conv(block["expand"], y)
    return _residual_forward(bottleneck), (params, x)


def _attention(jax, jnp, q, k, v, heads, mask=None):
    b, t, d = q.shape
    s = k.shape[1]
    q = q.reshape(b, t, heads, d // heads)
    k = k.reshape(b, s, heads, d // heads)
    v = v.reshape(b, s, heads, d // heads)
    logits = jnp.einsum("bthd,bshd->bhts", q, k) / (d // heads) ** 0.5
    if mask is not None:
        logits = jnp.where(mask, logits, -1e9)
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhts,bshd->bthd", weights, v).reshape(b, t, d)


def _block_params(jnp, rand, width, hidden):
    return {"wq": rand.normal(width, width, scale=width ** -0.5),
            "wk": rand.normal(width, width, scale=width ** -0.5),
            "wv": rand.normal(width, width, scale=width ** -0.5),
            "wo": rand.normal(width, width, scale=width ** -0.5),
            "w1": rand.normal(width, hidden, scale=width ** -0.5),
            "w2": rand.normal(hidden, width, scale=hidden ** -0.5),
            "ln1": jnp.ones(width), "ln2": jnp.ones(width)}


def encoder(layers: int = 12, seq: int = 128, width: int = 256, heads: int = 4,
            hidden: int = 1024, batch: int = 2) -> tuple[Callable, tuple]:
    jax, jnp, _ = _jax()
    rand = _Random()
    params = [_block_params(jnp, rand, width, hidden) for _ in range(layers)]
    x = rand.normal(batch, seq, width)

    def forward(params, x):
        zero = jnp.zeros(x.shape[-1])
        for p in params:
            h = _layer_norm(jnp, x, p["ln1"], zero)
            x = x + _attention(jax, jnp, h @ p["wq"], h @ p["wk"], h @ p["wv"], heads) @ p["wo"]
            h = _layer_norm(jnp, x, p["ln2"], zero)
            x = x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]
        return x
    return forward, (params, x)


def decoder(layers: int = 4, steps: int = 64, context: int = 64, width: int = 256,
            heads: int = 4, hidden: int = 1024, batch: int = 4,
            vocab: int = 1024) -> tuple[Callable, tuple]:
    jax, jnp, lax = _jax()
    rand = _Random()
    params = {"blocks": [_block_params(jnp, rand, width, hidden) for _ in range(layers)],
              "embed": rand.normal(vocab, width, scale=0.02)}
    cache = {"k": jnp.zeros((layers, batch, context, width)),
             "v": jnp.zeros((layers, batch, context, width))}
    tokens = rand.integers(vocab, batch)

    def generate(params, cache, tokens):
        zero = jnp.zeros(width)
        positions = jnp.arange(context)

        def step(carry, t):
            cache, tokens = carry
            x = params["embed"][tokens][:, None, :]
            ks, vs = cache["k"], cache["v"]
            for i, p in enumerate(params["blocks"]):
                h = _layer_norm(jnp, x, p["ln1"], zero)
                ks = lax.dynamic_update_slice(ks, (h @ p["wk"])[None], (i, 0, t, 0))
                vs = lax.dynamic_update_slice(vs, (h @ p["wv"])[None], (i, 0, t, 0))
                mask = (positions <= t)[None, None, None, :]
                x = x + _attention(jax, jnp, h @ p["wq"], ks[i], vs[i], heads, mask) @ p["wo"]
                h = _layer_norm(jnp, x, p["ln2"], zero)
                x = x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]
            logits = x[:, 0, :] @ params["embed"].T
            return ({"k": ks, "v": vs}, jnp.argmax(logits, axis=-1)), logits
        (cache, tokens), logits = lax.scan(step, (cache, tokens), jnp.arange(steps))
        return logits, cache
    return generate, (params, cache, tokens)


def train(layers: int = 8, width: int = 256, batch: int = 128, classes: int = 10,
          inputs: int = 784) -> tuple[Callable, tuple]:
    jax, jnp, lax = _jax()
    rand = _Random()
    params = {"w_in": rand.normal(inputs, width, scale=inputs ** -0.5),
              "layers": {"w": rand.normal(layers, width, width, scale=width ** -0.5),
                         "b": jnp.zeros((layers, width))},
              "w_out": rand.normal(width, classes, scale=width ** -0.5)}
    zeros = jax.tree_util.tree_map(lambda p: jnp.zeros(p.shape, p.dtype), params)
    state = {"m": zeros, "v": zeros, "count": jnp.zeros((), jnp.int32)}
    x = rand.normal(batch, inputs)
    labels = rand.integers(classes, batch)

    def loss(params, x, labels):
        h = jax.nn.relu(x @ params["w_in"])

        @jax.checkpoint
        def layer(h, p):
            return jax.nn.relu(h @ p["w"] + p["b"]) + h, None
        h, _ = lax.scan(layer, h, params["layers"])
        logits = h @ params["w_out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def step(params, state, x, labels):
        value, grads = jax.value_and_grad(loss)(params, x, labels)
        count = state["count"] + 1
        b1, b2, lr = 0.9, 0.999, 1e-3
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
        fix1, fix2 = 1 - b1 ** count, 1 - b2 ** count
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / fix1) / (jnp.sqrt(v / fix2) + 1e-8), params, m, v)
        return params, {"m": m, "v": v, "count": count}, value
    return step, (params, state, x, labels)


PROGRAMS: dict[str, Callable[[], tuple[Callable, tuple]]] = {
    "mlp": mlp, "cnn": cnn, "encoder": encoder, "decoder": decoder, "train": train,
    "cnn-deep": cnn_deep,
}


HARDWARE = "nnpi"


def data_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "xla"


def instance_name(program: str) -> str:
    return f"xla-{program}@{HARDWARE}"


def regenerate(folder: Path | None = None, names: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[Path]:
    """Compile every program (or `names`) and write, per program, the instance
    (`xla-NAME@nnpi.json`), XLA's heap as a packing (`xla-NAME.heap.csv`, with
    `.heap.xla.csv` and `.heap.xla.json` beside it) and the scheduled HLO text
    (`xla-NAME.hlo.txt.gz`); `PROVENANCE.json` keeps the versions, flags and XLA's own
    figures."""
    from memplace.instances.catalog import dumps
    from memplace.instances.xla.heap import write_baseline
    from memplace.instances.xla.jax_source import compile_program
    from memplace.instances.xla.sources import _compiled
    folder = data_dir() if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    unknown = [n for n in names or [] if n not in PROGRAMS]
    if unknown:
        from memplace.instances.xla.errors import XlaImportError
        raise XlaImportError(f"unknown program(s) {', '.join(unknown)}; known: {', '.join(PROGRAMS)}")
    record_path = folder / "PROVENANCE.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    written = []
    for name in names or list(PROGRAMS):
        began = time.perf_counter()
        fn, args = PROGRAMS[name]()
        program = compile_program(fn, args, label=f"memplace.instances.xla.programs:{name}")
        got = _compiled(program, HARDWARE, f"xla-{name}")
        path = folder / f"{instance_name(name)}.json"
        path.write_text(dumps(got.instance), encoding="utf-8")
        heap = folder / f"xla-{name}.heap.csv"
        write_baseline(got.heap, heap, program.provenance["program"])
        hlo = folder / f"xla-{name}.hlo.txt.gz"
        with open(hlo, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
            out.write(program.hlo_text.encode("utf-8"))
        record[name] = {**program.provenance, "cost_analysis": program.cost_analysis,
                        "memory_analysis": program.memory_analysis,
                        "ops": len(got.instance["workload"]["ops"]),
                        "tensors": len(got.instance["workload"]["tensors"]),
                        "heap_buffers": len(got.heap.buffers),
                        "compile_and_import_s": round(time.perf_counter() - began, 1)}
        written += [path, heap, hlo]
        if progress is not None:
            progress(f"{name}: {record[name]['ops']} ops, {record[name]['tensors']} tensors, "
                     f"XLA heap {got.heap.heap_size} B in {len(got.heap.buffers)} buffers "
                     f"({record[name]['compile_and_import_s']} s)")
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return written
