"""Transformer encoders and decoders: BERT-base and GPT-2 (prefill and one decode step).

Activations are [B, S, D]. Attention is written out op by op: Q/K/V/O projections are
linears (weights), QK^T and AV are batched activation x activation matmuls over
B = batch * heads, because that is what an accelerator actually has to run and what the
ONNX importer produces. Head split/merge is a free view (no op). Token and position
embedding lookups are gathers, not compute, so the graph input is the summed embedding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dse.graph import Graph, GraphBuilder, OpKind

BERT_HIDDEN = 768
BERT_HEADS = 12
BERT_FFN = 3072

GPT2_VOCAB = 50257
GPT2_CONTEXT = 1024  # n_positions: rows of the position-embedding table


@dataclass(frozen=True)
class Gpt2Variant:
    """Size of one released GPT-2 checkpoint (Radford et al. 2019; HF config.json)."""

    hidden: int
    heads: int
    layers: int


GPT2_VARIANTS: dict[str, Gpt2Variant] = {
    "small": Gpt2Variant(768, 12, 12),
    "medium": Gpt2Variant(1024, 16, 24),
    "large": Gpt2Variant(1280, 20, 36),
    "xl": Gpt2Variant(1600, 25, 48),
}
GPT2_PHASES = ("prefill", "decode")


def _split_heads(b: GraphBuilder, x: str, heads: int) -> str:
    """[B, S, D] -> [B, H, S, D/H]: a layout change only, so a view and not an op."""
    batch, seq, hidden = b.shape(x)
    return b.reshape(x, (batch, heads, seq, hidden // heads))


def _merge_heads(b: GraphBuilder, x: str) -> str:
    batch, heads, seq, head_dim = b.shape(x)
    return b.reshape(x, (batch, seq, heads * head_dim))


def _attention_core(b: GraphBuilder, prefix: str, q: str, k: str, v: str) -> str:
    """softmax(Q K^T / sqrt(d)) V on [B, H, S, d] operands; returns the merged [B, S, D] context."""
    scores = b.matmul(q, k, transpose_b=True, name=f"{prefix}.qk")
    scores = b.elementwise("mul", scores, name=f"{prefix}.scale")  # by 1/sqrt(head_dim)
    probs = b.softmax(scores, name=f"{prefix}.softmax")
    context = b.matmul(probs, v, name=f"{prefix}.av")
    return _merge_heads(b, context)


def bert_base(batch: int = 1, elem_bytes: int = 1, seq_len: int = 128, num_layers: int = 12) -> Graph:
    """BERT-base encoder (Devlin et al. 2019): post-LN, hidden 768, 12 heads, FFN 3072, GELU.

    Input ``embeddings`` [B, S, 768] is the sum of token, position and segment embeddings
    (lookups, no MACs); the embedding LayerNorm is an op. The pooler (one 768x768 dense on
    the [CLS] token) is a task head and is left out. Per layer:
    MACs = S * (4 D^2 + 2 D F) + 2 S^2 D  (D = 768, F = 3072), times batch.
    """
    hidden, heads, ffn = BERT_HIDDEN, BERT_HEADS, BERT_FFN
    b = GraphBuilder("bert_base", elem_bytes)
    x = b.input("embeddings", (batch, seq_len, hidden))
    x = b.layernorm(x, name="embeddings.ln")
    for i in range(num_layers):
        p = f"layer{i}"
        q = _split_heads(b, b.linear(x, hidden, name=f"{p}.q_proj"), heads)
        k = _split_heads(b, b.linear(x, hidden, name=f"{p}.k_proj"), heads)
        v = _split_heads(b, b.linear(x, hidden, name=f"{p}.v_proj"), heads)
        context = _attention_core(b, p, q, k, v)
        attn_out = b.linear(context, hidden, name=f"{p}.o_proj")
        x = b.layernorm(b.add(attn_out, x, name=f"{p}.attn_add"), name=f"{p}.ln1")
        h = b.linear(x, ffn, name=f"{p}.ffn_up")
        h = b.elementwise("gelu", h, name=f"{p}.gelu")
        h = b.linear(h, hidden, name=f"{p}.ffn_down")
        x = b.layernorm(b.add(h, x, name=f"{p}.ffn_add"), name=f"{p}.ln2")
    b.output(x)
    b.meta.update(hidden=hidden, heads=heads, ffn=ffn)
    return b.build()


def bert_base_macs(batch: int, seq_len: int, num_layers: int) -> int:
    """Closed form of :func:`bert_base`'s MACs (used by tests and docs)."""
    d, f = BERT_HIDDEN, BERT_FFN
    return batch * num_layers * (seq_len * (4 * d * d + 2 * d * f) + 2 * seq_len * seq_len * d)


def _concat_seq(b: GraphBuilder, name: str, cache: str, new: str) -> str:
    """Append this step's K or V ([B, H, 1, d]) to the cache ([B, H, T, d]) along the sequence axis."""
    batch, heads, cached, head_dim = b.shape(cache)
    new_len = b.shape(new)[2]
    out_shape = (batch, heads, cached + new_len, head_dim)
    return b.add_op(
        name,
        OpKind.ELEMENTWISE,
        dict(N=math.prod(out_shape)),
        [cache, new],
        out_shape,
        attrs=dict(fn="identity", arity=2, axis=2),  # as the ONNX importer writes Concat: no arithmetic
    )


def gpt2(
    batch: int = 1,
    elem_bytes: int = 1,
    phase: str = "prefill",
    seq_len: int = 128,
    kv_len: int = 1024,
    num_layers: int | None = None,
    variant: str = "small",
) -> Graph:
    """GPT-2 decoder (Radford et al. 2019; HF ``gpt2`` layout): pre-LN blocks, final LN, LM head.

    ``prefill`` runs ``seq_len`` tokens (full S x S attention scores, the causal mask folded
    into the softmax; K and V projections are graph outputs: they fill the KV cache).
    ``decode`` runs one new token per sequence against a cache of ``kv_len`` tokens: each
    layer's cache is a pair of graph *inputs* ``layer{i}.k_cache``/``v_cache`` [B, H, kv_len, d],
    the new K/V are appended by a concat op (an arity-2 ``identity`` elementwise, as the ONNX
    importer writes Concat: no arithmetic) and attention reads kv_len+1
    positions. HF's fused ``c_attn`` (one 3D-wide linear then a split) is three D-wide linears:
    same MACs and weights, no split op. The LM head (to 50257 logits, tied with the token
    embedding) is an op; the position-embedding table is a weight-only tensor ``wpe`` so that
    the graph's weights count every parameter of the checkpoint once (124,439,808 for small).
    """
    if variant not in GPT2_VARIANTS:
        raise ValueError(f"gpt2 variant {variant!r} is not one of {', '.join(GPT2_VARIANTS)}")
    if phase not in GPT2_PHASES:
        raise ValueError(f"gpt2 phase {phase!r} is not one of {', '.join(GPT2_PHASES)}")
    size = GPT2_VARIANTS[variant]
    hidden, heads = size.hidden, size.heads
    layers = size.layers if num_layers is None else num_layers
    head_dim = hidden // heads
    new_tokens = seq_len if phase == "prefill" else 1

    b = GraphBuilder("gpt2", elem_bytes)
    b.tensor("wpe", (GPT2_CONTEXT, hidden), kind="weight")
    x = b.input("embeddings", (batch, new_tokens, hidden))
    for i in range(layers):
        p = f"layer{i}"
        h = b.layernorm(x, name=f"{p}.ln1")
        q = b.linear(h, hidden, name=f"{p}.q_proj")
        k = b.linear(h, hidden, name=f"{p}.k_proj")
        v = b.linear(h, hidden, name=f"{p}.v_proj")
        b.output(k)  # written to the KV cache
        b.output(v)
        q, k, v = (_split_heads(b, t, heads) for t in (q, k, v))
        if phase == "decode":
            k_cache = b.input(f"{p}.k_cache", (batch, heads, kv_len, head_dim))
            v_cache = b.input(f"{p}.v_cache", (batch, heads, kv_len, head_dim))
            k = _concat_seq(b, f"{p}.k_append", k_cache, k)
            v = _concat_seq(b, f"{p}.v_append", v_cache, v)
        context = _attention_core(b, p, q, k, v)
        attn_out = b.linear(context, hidden, name=f"{p}.o_proj")
        x = b.add(attn_out, x, name=f"{p}.attn_add")
        h = b.layernorm(x, name=f"{p}.ln2")
        h = b.linear(h, 4 * hidden, name=f"{p}.mlp_up")
        h = b.elementwise("gelu", h, name=f"{p}.gelu")
        h = b.linear(h, hidden, name=f"{p}.mlp_down")
        x = b.add(h, x, name=f"{p}.mlp_add")
    x = b.layernorm(x, name="ln_f")
    b.linear(x, GPT2_VOCAB, name="lm_head", bias=False)
    b.meta.update(variant=variant, phase=phase, hidden=hidden, heads=heads, num_layers=layers, vocab=GPT2_VOCAB)
    return b.build()


def gpt2_params(variant: str = "small", num_layers: int | None = None) -> int:
    """Parameters the :func:`gpt2` graph holds: HF's ``num_parameters()`` for the full-depth checkpoint."""
    size = GPT2_VARIANTS[variant]
    d = size.hidden
    layers = size.layers if num_layers is None else num_layers
    per_layer = 12 * d * d + 13 * d  # qkv 3(D^2+D), proj D^2+D, mlp 8D^2+5D, two LNs 4D
    return GPT2_VOCAB * d + GPT2_CONTEXT * d + layers * per_layer + 2 * d


def gpt2_macs(
    batch: int = 1,
    phase: str = "prefill",
    seq_len: int = 128,
    kv_len: int = 1024,
    num_layers: int | None = None,
    variant: str = "small",
) -> int:
    """Closed form of :func:`gpt2`'s MACs: per token 12 L D^2 + D V, plus attention 2 L S_q S_kv D."""
    size = GPT2_VARIANTS[variant]
    d = size.hidden
    layers = size.layers if num_layers is None else num_layers
    tokens, attended = (seq_len, seq_len) if phase == "prefill" else (1, kv_len + 1)
    return batch * (tokens * (12 * layers * d * d + d * GPT2_VOCAB) + 2 * layers * tokens * attended * d)
