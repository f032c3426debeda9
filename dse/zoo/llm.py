"""LLM serving workloads (shapes only, no weights): Llama-2-style decoders, a Mixtral-style MoE and a
Composition of Experts.

Why here: SN40L-class results are about serving 7B-70B decoders and many experts, so the zoo needs their
shapes. Each model is one forward pass of a serving phase: ``prefill`` (``seq_len`` prompt tokens per
sequence, K/V written to the cache as graph outputs) or ``decode`` (one new token per sequence against a
cache of ``kv_len`` tokens, the caches as graph inputs). Per layer: RMSNorm (a layernorm op), Q/K/V/O
projections with grouped-query attention (``kv_heads`` < ``heads``: the K/V projections and caches are
``kv_heads`` wide and each group of query heads reads its shared K/V), rotary embedding (an elementwise op on
Q and K), and a SwiGLU FFN (gate, up, SiLU x up, down). A Mixtral-style MoE layer has a router (linear +
softmax) and ``top_k`` of ``experts`` SwiGLU experts per token: the graph runs the experts a batch touches
(``min(experts, batch x top_k)``, tokens split evenly) and holds every other expert's weights as
weight-only tensors, so the footprint counts all of them.

Sources (architecture hyper-parameters, from the released configs):
Llama 2: Touvron et al. 2023 (arXiv:2307.09288) Table 1 / HF ``meta-llama/Llama-2-*-hf`` config.json;
Llama 3 8B: Grattafiori et al. 2024 "The Llama 3 Herd of Models" (arXiv:2407.21783) Table 3 / HF
``meta-llama/Meta-Llama-3-8B`` config.json (hidden 4096, 32 heads, 8 KV heads, FFN 14336, 32 layers, vocab 128256);
Mixtral 8x7B: Jiang et al. 2024 (arXiv:2401.04088) Table 1 / HF ``mistralai/Mixtral-8x7B-v0.1`` config.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph, GraphBuilder, OpKind

LLM_PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class LlmShape:
    """Hyper-parameters of one released decoder."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    layers: int
    vocab: int
    experts: int = 1  # > 1: a mixture of experts in every layer
    top_k: int = 1


LLM_SHAPES: dict[str, LlmShape] = {
    "llama2_7b": LlmShape(4096, 32, 32, 11008, 32, 32000),
    "llama2_13b": LlmShape(5120, 40, 40, 13824, 40, 32000),
    "llama2_70b": LlmShape(8192, 64, 8, 28672, 80, 32000),
    "llama3_8b": LlmShape(4096, 32, 8, 14336, 32, 128256),
    "mixtral_8x7b": LlmShape(4096, 32, 8, 14336, 32, 32000, experts=8, top_k=2),
}


def _swiglu(b: GraphBuilder, prefix: str, x: str, ffn: int, hidden: int) -> str:
    gate = b.linear(x, ffn, name=f"{prefix}.gate_proj", bias=False)
    up = b.linear(x, ffn, name=f"{prefix}.up_proj", bias=False)
    act = b.elementwise("silu_mul", gate, up, name=f"{prefix}.silu_mul")
    return b.linear(act, hidden, name=f"{prefix}.down_proj", bias=False)


def _attention(b: GraphBuilder, p: str, h: str, size: LlmShape, batch: int, tokens: int, phase: str, kv_len: int):
    hidden, heads, kv_heads = size.hidden, size.heads, size.kv_heads
    head_dim = hidden // heads
    group = heads // kv_heads
    q = b.linear(h, hidden, name=f"{p}.q_proj", bias=False)
    k = b.linear(h, kv_heads * head_dim, name=f"{p}.k_proj", bias=False)
    v = b.linear(h, kv_heads * head_dim, name=f"{p}.v_proj", bias=False)
    q = b.elementwise("rope", q, name=f"{p}.q_rope")
    k = b.elementwise("rope", k, name=f"{p}.k_rope")
    b.output(k)  # written to the KV cache
    b.output(v)
    # [B, T, kv*d] -> [B*kv, T, d]; the query groups ride on the M axis: [B*kv, group*T, d]
    q = b.reshape(q, (batch * kv_heads, group * tokens, head_dim))
    k = b.reshape(k, (batch * kv_heads, tokens, head_dim))
    v = b.reshape(v, (batch * kv_heads, tokens, head_dim))
    if phase == "decode":
        attended = kv_len + tokens
        for name, new in (("k", k), ("v", v)):
            cache = b.input(f"{p}.{name}_cache", (batch * kv_heads, kv_len, head_dim))
            appended = b.add_op(
                f"{p}.{name}_append",
                OpKind.ELEMENTWISE,
                dict(N=batch * kv_heads * attended * head_dim),
                [cache, new],
                (batch * kv_heads, attended, head_dim),
                attrs=dict(fn="identity", arity=2, axis=1),  # a concat: no arithmetic
            )
            k, v = (appended, v) if name == "k" else (k, appended)
    scores = b.matmul(q, k, transpose_b=True, name=f"{p}.qk")
    probs = b.softmax(b.elementwise("mul", scores, name=f"{p}.scale"), name=f"{p}.softmax")
    context = b.matmul(probs, v, name=f"{p}.av")
    context = b.reshape(context, (batch, tokens, hidden))
    return b.linear(context, hidden, name=f"{p}.o_proj", bias=False)


def llm(
    model: str = "llama2_7b",
    batch: int = 1,
    elem_bytes: int = 2,
    phase: str = "decode",
    seq_len: int = 512,
    kv_len: int = 1024,
    num_layers: int | None = None,
) -> Graph:
    """One serving step of decoder ``model`` (a key of ``LLM_SHAPES``); see the module docstring."""
    if model not in LLM_SHAPES:
        raise ValueError(f"llm model {model!r} is not one of {', '.join(LLM_SHAPES)}")
    if phase not in LLM_PHASES:
        raise ValueError(f"llm phase {phase!r} is not one of {', '.join(LLM_PHASES)}")
    size = LLM_SHAPES[model]
    layers = size.layers if num_layers is None else num_layers
    tokens = seq_len if phase == "prefill" else 1
    hidden = size.hidden
    b = GraphBuilder(model, elem_bytes)
    b.tensor("embed_tokens", (size.vocab, hidden), kind="weight")  # a lookup: weights, no MACs
    x = b.input("embeddings", (batch, tokens, hidden))
    for i in range(layers):
        p = f"layer{i}"
        h = b.layernorm(x, name=f"{p}.input_norm")
        x = b.add(_attention(b, p, h, size, batch, tokens, phase, kv_len), x, name=f"{p}.attn_add")
        h = b.layernorm(x, name=f"{p}.post_norm")
        if size.experts == 1:
            ffn = _swiglu(b, f"{p}.mlp", h, size.ffn, hidden)
        else:
            ffn = _moe(b, p, h, size, batch * tokens)
        x = b.add(ffn, x, name=f"{p}.mlp_add")
    x = b.layernorm(x, name="norm")
    b.linear(x, size.vocab, name="lm_head", bias=False)
    b.meta.update(
        llm=model,
        phase=phase,
        hidden=hidden,
        heads=size.heads,
        kv_heads=size.kv_heads,
        num_layers=layers,
        vocab=size.vocab,
        tokens_per_step=batch * tokens,
        kv_len=kv_len if phase == "decode" else seq_len,
        experts=size.experts,
    )
    return b.build()


def _moe(b: GraphBuilder, p: str, h: str, size: LlmShape, tokens: int) -> str:
    """Router + the experts this step touches; the untouched experts' weights as weight-only tensors."""
    hidden = size.hidden
    logits = b.linear(h, size.experts, name=f"{p}.router", bias=False)
    b.output(b.softmax(logits, name=f"{p}.router_softmax"))  # routing weights (top-k select is free)
    active = min(size.experts, tokens * size.top_k)
    pairs, extra = divmod(tokens * size.top_k, active)  # token-expert pairs: exactly tokens x top_k in all
    flat = b.reshape(h, (1, tokens, hidden))
    outs = []
    for e in range(active):
        per_expert = pairs + (e < extra)
        rows = b.add_op(
            f"{p}.expert{e}.dispatch",
            OpKind.ELEMENTWISE,
            dict(N=per_expert * hidden),
            [flat],
            (1, per_expert, hidden),
            attrs=dict(fn="identity", arity=1),  # a gather of this expert's tokens
        )
        outs.append(_swiglu(b, f"{p}.expert{e}", rows, size.ffn, hidden))
    for e in range(active, size.experts):
        for part, shape in (("gate", (hidden, size.ffn)), ("up", (hidden, size.ffn)), ("down", (size.ffn, hidden))):
            b.tensor(f"{p}.expert{e}.{part}_proj:weight", shape, kind="weight")
    combined = b.add_op(
        f"{p}.combine",
        OpKind.ELEMENTWISE,
        dict(N=tokens * hidden * size.top_k),
        outs,
        b.shape(h),
        attrs=dict(fn="weighted_sum", arity=len(outs)),
    )
    return combined


def llm_params(model: str, num_layers: int | None = None) -> int:
    """Parameters of the graph :func:`llm` builds (all experts counted): the published model size."""
    s = LLM_SHAPES[model]
    layers = s.layers if num_layers is None else num_layers
    head_dim = s.hidden // s.heads
    attn = 2 * s.hidden * s.hidden + 2 * s.hidden * s.kv_heads * head_dim
    ffn = s.experts * 3 * s.hidden * s.ffn + (s.hidden * s.experts if s.experts > 1 else 0)
    return 2 * s.vocab * s.hidden + layers * (attn + ffn + 4 * s.hidden) + 2 * s.hidden


def coe(
    batch: int = 1,
    elem_bytes: int = 2,
    phase: str = "decode",
    seq_len: int = 512,
    kv_len: int = 1024,
    num_layers: int | None = None,
    experts: int = 150,
    output_tokens: int = 128,
) -> Graph:
    """A Composition of Experts (Samba-CoE style): ``experts`` Llama-2-7B-shaped experts, one serving step of the
    active one. The request mix: each request picks an expert uniformly at random and generates
    ``output_tokens`` tokens; the experts live in the slowest tier and the active one is copied to HBM
    (``hwmodels.rdu.serving`` prices the switch and the throughput under the mix)."""
    graph = llm("llama2_7b", batch, elem_bytes, phase, seq_len, kv_len, num_layers)
    graph.meta.update(coe_experts=experts, coe_output_tokens=output_tokens)
    return graph
