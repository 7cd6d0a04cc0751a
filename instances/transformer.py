"""Transformer workloads at the granularity of a compiled inference graph.

Every GEMM, the attention score product (QK^T), the softmax, the attention-value
product, the residual adds, the layer norms and the GELU are separate ops, and so
are the reshape/transpose ops that move q, k, v into heads and the context back.
Embedding tables are gathers: the op moves the rows it reads, the table is a
weight of its full size. Token ids (and the attention mask) are int32 inputs,
4 bytes per element whatever `width` is; everything else is `width` bytes.

BERT keeps each linear layer's bias add as its own op (MatMul followed by an Add,
as in the TensorFlow/ONNX graph of the reference BERT); this is what brings the
graph to the size of EGRL's BERT (376 nodes). ViT and GPT-2 fold the bias into
the GEMM (PyTorch's addmm), so their bias is part of the weight tensor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memplace.instances.graph import GraphBuilder

ID_BYTES = 4  # int32 token ids and mask


@dataclass(frozen=True)
class Act:
    """An activation of `rows` (batch * tokens) by `cols` elements."""

    tensor: int
    rows: int
    cols: int

    @property
    def elements(self) -> int:
        return self.rows * self.cols


class Transformer:
    """Builds encoder/decoder layers on top of `GraphBuilder`."""

    def __init__(self, name: str, source: str, batch: int, width: int, seq: int,
                 hidden: int, heads: int, separate_bias: bool):
        if batch < 1:
            raise ValueError(f"batch size must be >= 1, got {batch}")
        self.g = GraphBuilder(name, width, source, {"batch": batch, "width": width, "seq_len": seq})
        self.batch, self.seq, self.hidden, self.heads = batch, seq, hidden, heads
        self.separate_bias = separate_bias

    @property
    def rows(self) -> int:
        return self.batch * self.seq

    # ------------------------------------------------------------------ layers
    def linear(self, name: str, x: Act, n: int) -> Act:
        """x @ W + b: a matmul, with the bias add fused or as its own op."""
        out = x.rows * n
        flops = 2.0 * out * x.cols
        fused_bias = 0 if self.separate_bias else n
        t = self.g.op(name, "matmul", flops, [x.tensor], out, {"weight": x.cols * n + fused_bias})
        if self.separate_bias:
            t = self.g.elementwise(f"{name}.bias_add", "add", [t], out, {"bias": n})
        return Act(t, x.rows, n)

    def unary(self, name: str, type: str, x: Act, weights: dict[str, int] | None = None) -> Act:
        return Act(self.g.elementwise(name, type, [x.tensor], x.elements, weights), x.rows, x.cols)

    def add(self, name: str, a: Act, b: Act | int) -> Act:
        other = b.tensor if isinstance(b, Act) else b
        return Act(self.g.elementwise(name, "add", [a.tensor, other], a.elements), a.rows, a.cols)

    def layernorm(self, name: str, x: Act) -> Act:
        return self.unary(name, "layernorm", x, {"weight": 2 * x.cols})  # gamma and beta

    def move(self, name: str, type: str, t: int, elements: int) -> int:
        """A reshape or transpose: reads the tensor, writes a copy, no flops."""
        return self.g.op(name, type, 0.0, [t], elements)

    def to_heads(self, name: str, x: Act) -> int:
        """[B, S, H*d] -> reshape [B, S, H, d] -> transpose [B, H, S, d] (k: [B, H, d, S])."""
        t = self.move(f"{name}.reshape", "reshape", x.tensor, x.elements)
        return self.move(f"{name}.transpose", "transpose", t, x.elements)

    def attention(self, name: str, q: Act, k: Act, v: Act, mask: int | None,
                  causal_mask: int | None = None) -> Act:
        """Scaled dot-product attention over heads; returns the context [B*S, hidden]."""
        B, S, H, D = self.batch, self.seq, self.heads, self.hidden
        d = D // H
        qh = self.to_heads(f"{name}.q", q)
        kh = self.to_heads(f"{name}.k", k)
        vh = self.to_heads(f"{name}.v", v)
        scores = B * H * S * S
        t = self.g.op(f"{name}.scores", "matmul", 2.0 * scores * d, [qh, kh], scores)
        t = self.g.elementwise(f"{name}.scale", "mul", [t], scores)
        if mask is not None:
            t = self.g.elementwise(f"{name}.mask", "add", [t, mask], scores)
        if causal_mask is not None:
            t = self.g.elementwise(f"{name}.causal_mask", "where", [t, causal_mask], scores)
        t = self.g.elementwise(f"{name}.softmax", "softmax", [t], scores)
        t = self.g.op(f"{name}.context", "matmul", 2.0 * scores * d, [t, vh], B * S * D)
        t = self.move(f"{name}.context.transpose", "transpose", t, B * S * D)
        t = self.move(f"{name}.context.reshape", "reshape", t, B * S * D)
        return Act(t, B * S, D)

    def self_attention(self, name: str, x: Act, mask: int | None) -> Act:
        """Query, key and value projections of `x` (`name.query`, ...), attention and the
        output projection `name.output`."""
        q, k, v = (self.linear(f"{name}.{part}", x, self.hidden) for part in ("query", "key", "value"))
        return self.linear(f"{name}.output", self.attention(name, q, k, v, mask), self.hidden)

    def feed_forward(self, name: str, x: Act, inner: int, parts: tuple[str, str, str]) -> Act:
        """Linear to `inner` elements, GELU, linear back to hidden; ops `name.<part>`."""
        up, gelu, down = (f"{name}.{part}" for part in parts)
        return self.linear(down, self.unary(gelu, "gelu", self.linear(up, x, inner)), self.hidden)

    def embedding(self, name: str, table_rows: int) -> int:
        """An embedding table of `table_rows` x hidden: a weight of its full size."""
        return self.g.weight(name, table_rows * self.hidden)

    def gather(self, name: str, table: int, ids: int | None, rows: int) -> Act:
        """Embedding lookup of `rows` rows of `table`: the op moves only the rows it reads.

        `ids` is the index tensor, or None for positions 0..rows-1 (a contiguous slice).
        """
        D = self.hidden
        reads = [(table, rows * D * self.g.width)] + ([ids] if ids is not None else [])
        return Act(self.g.op(name, "gather", 0.0, reads, rows * D), rows, D)

    def first_token(self, name: str, x: Act) -> Act:
        """Slice the first (class) token of every sequence: reads batch rows only."""
        B = self.batch
        t = self.g.op(name, "slice", 0.0, [(x.tensor, B * x.cols * self.g.width)], B * x.cols)
        return Act(t, B, x.cols)

    def last_token(self, name: str, x: Act) -> Act:
        """Slice the last token of every sequence (the one whose logits are sampled)."""
        return self.first_token(name, x)

    def to_dict(self) -> dict[str, Any]:
        return self.g.to_dict()


# ---------------------------------------------------------------------- BERT
BERT_SOURCE = ("Devlin, Chang, Lee, Toutanova: BERT: Pre-training of Deep Bidirectional "
               "Transformers for Language Understanding, NAACL 2019 (BERT-base: 12 layers, "
               "hidden 768, 12 heads, FFN 3072, vocabulary 30522, 512 positions)")


def bert_base(batch: int = 1, width: int = 1, seq_len: int = 128) -> dict[str, Any]:
    """BERT-base encoder with embeddings, extended attention mask and pooler; post-LN."""
    D, F, H, L = 768, 3072, 12, 12
    net = Transformer("bert-base", BERT_SOURCE, batch, width, seq_len, D, H, separate_bias=True)
    g, rows = net.g, net.rows
    input_ids = g.input("input_ids", rows, ID_BYTES)
    token_type_ids = g.input("token_type_ids", rows, ID_BYTES)
    attention_mask = g.input("attention_mask", rows, ID_BYTES)
    words = net.gather("embeddings.word", net.embedding("embeddings.word.table", 30522),
                       input_ids, rows)
    types = net.gather("embeddings.token_type", net.embedding("embeddings.token_type.table", 2),
                       token_type_ids, rows)
    positions = net.gather("embeddings.position", net.embedding("embeddings.position.table", 512),
                           None, seq_len)
    x = net.add("embeddings.add_token_type", words, types)
    x = net.add("embeddings.add_position", x, positions)
    x = net.layernorm("embeddings.layernorm", x)
    # (1 - mask) * -10000, broadcast over heads and query positions by the mask adds.
    mask = g.elementwise("extended_attention_mask", "mul", [attention_mask], rows)
    for i in range(L):
        p = f"layer{i}"
        y = net.add(f"{p}.attention.residual", net.self_attention(f"{p}.attention", x, mask), x)
        x = net.layernorm(f"{p}.attention.layernorm", y)
        y = net.feed_forward(p, x, F, ("intermediate", "gelu", "output"))
        y = net.add(f"{p}.output.residual", y, x)
        x = net.layernorm(f"{p}.output.layernorm", y)
    cls = net.first_token("pooler.first_token", x)
    pooled = net.linear("pooler.dense", cls, D)
    net.unary("pooler.tanh", "tanh", pooled)
    return net.to_dict()


# ---------------------------------------------------------------------- ViT
VIT_SOURCE = ("Dosovitskiy et al.: An Image is Worth 16x16 Words: Transformers for Image "
              "Recognition at Scale, ICLR 2021 (ViT-B/16: 224x224, patch 16, 197 tokens, "
              "12 layers, hidden 768, 12 heads, MLP 3072)")


def vit_b16(batch: int = 1, width: int = 1) -> dict[str, Any]:
    """ViT-B/16 classifier: patch-embedding conv, class token, position embedding,
    12 pre-LN encoder layers, final layer norm, head on the class token."""
    D, F, H, L, P = 768, 3072, 12, 12, 16
    patches = (224 // P) ** 2
    net = Transformer("vit-b16", VIT_SOURCE, batch, width, patches + 1, D, H, separate_bias=False)
    g = net.g
    image = g.input("image", batch * 224 * 224 * 3)
    t = g.op("patch_embed", "conv", 2.0 * batch * patches * D * P * P * 3, [image],
             batch * patches * D, {"weight": P * P * 3 * D + D})
    t = net.move("patch_embed.flatten", "reshape", t, batch * patches * D)
    t = g.op("cls_token.concat", "concat", 0.0, [t], net.rows * D, {"cls_token": D})
    x = net.add("position_embedding.add", Act(t, net.rows, D), g.weight("position_embedding", net.seq * D))
    for i in range(L):
        p = f"layer{i}"
        y = net.layernorm(f"{p}.ln1", x)
        x = net.add(f"{p}.attention.residual", net.self_attention(f"{p}.attention", y, None), x)
        y = net.layernorm(f"{p}.ln2", x)
        x = net.add(f"{p}.mlp.residual", net.feed_forward(f"{p}.mlp", y, F, ("fc1", "gelu", "fc2")), x)
    x = net.layernorm("final_layernorm", x)
    cls = net.first_token("cls_token.slice", x)
    net.linear("head", cls, 1000)
    return net.to_dict()


# ---------------------------------------------------------------------- GPT-2
GPT2_SOURCE = ("Radford, Wu, Child, Luan, Amodei, Sutskever: Language Models are Unsupervised "
               "Multitask Learners, 2019 (GPT-2 small: 12 layers, hidden 768, 12 heads, "
               "vocabulary 50257, 1024 positions, LM head tied to the token embedding)")


def gpt2(batch: int = 1, width: int = 1, seq_len: int = 512) -> dict[str, Any]:
    """GPT-2 small prefill of `seq_len` tokens: pre-LN decoder layers with a fused q/k/v
    projection split in three, causal masking, and logits for the last token only
    (what a generation server samples from), through the tied embedding table."""
    D, F, H, L, V = 768, 3072, 12, 12, 50257
    net = Transformer("gpt2", GPT2_SOURCE, batch, width, seq_len, D, H, separate_bias=False)
    g, rows = net.g, net.rows
    input_ids = g.input("input_ids", rows, ID_BYTES)
    wte = net.embedding("wte.table", V)
    words = net.gather("wte", wte, input_ids, rows)
    positions = net.gather("wpe", net.embedding("wpe.table", 1024), None, seq_len)
    x = net.add("embeddings.add", words, positions)
    causal_mask = g.weight("causal_mask", seq_len * seq_len, element_bytes=1)
    for i in range(L):
        p = f"h{i}"
        y = net.layernorm(f"{p}.ln_1", x)
        qkv = net.linear(f"{p}.attn.c_attn", y, 3 * D)
        q, k, v = (Act(t, rows, D) for t in g.op(
            f"{p}.attn.split", "split", 0.0, [qkv.tensor], [rows * D] * 3, out_names=("q", "k", "v")))
        ctx = net.attention(f"{p}.attn", q, k, v, None, causal_mask)
        y = net.linear(f"{p}.attn.c_proj", ctx, D)
        x = net.add(f"{p}.attn.residual", y, x)
        y = net.layernorm(f"{p}.ln_2", x)
        y = net.feed_forward(f"{p}.mlp", y, F, ("c_fc", "gelu", "c_proj"))
        x = net.add(f"{p}.mlp.residual", y, x)
    x = net.layernorm("ln_f", x)
    last = net.last_token("last_token", x)
    g.op("lm_head", "matmul", 2.0 * batch * V * D, [last.tensor, wte], batch * V)
    return net.to_dict()
