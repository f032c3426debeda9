"""Attention-free sequence mixers: a Mamba block and a Hyena operator block, on [B, L, D] activations.

Both need ops a plain GEMM accelerator lacks (a selective scan; long FFT convolutions), which
is exactly why they are in the zoo: they exercise the scan and FFT support of the mappers.
Wide projections that the reference code splits afterwards (Mamba's in_proj to 2*d_inner,
x_proj to dt/B/C; Hyena's in_proj to (order+1)*d_model) are written as one linear per chunk:
the same MACs and weights, with no split op the IR does not have. Causal 1-D convolutions are
convs with N=batch, C=channels, H=1, W=length, R=1, padded on the left only.
"""

from __future__ import annotations

import math

from dse.graph import Graph, GraphBuilder, OpKind


def _to_channels_first(b: GraphBuilder, x: str) -> str:
    """[B, L, C] -> [B, C, 1, L] for a 1-D conv (a layout view, no op)."""
    batch, length, channels = b.shape(x)
    return b.reshape(x, (batch, channels, 1, length))


def _causal_depthwise_conv(b: GraphBuilder, x: str, kernel: int, name: str) -> str:
    """Depthwise conv1d with ``kernel - 1`` zeros on the left, so output length == input length."""
    channels = b.shape(x)[1]
    return b.conv(x, channels, (1, kernel), pad=(0, kernel - 1, 0, 0), groups=channels, name=name, bias=True)


def mamba_dt_rank(d_model: int) -> int:
    """Mamba's default ``dt_rank = ceil(d_model / 16)``."""
    return math.ceil(d_model / 16)


def mamba(
    batch: int = 1,
    elem_bytes: int = 1,
    seq_len: int = 1024,
    d_model: int = 768,
    d_state: int = 16,
    expand: int = 2,
    d_conv: int = 4,
    num_layers: int = 1,
) -> Graph:
    """Mamba blocks (Gu & Dao 2023, ``mamba_ssm/modules/mamba_simple.py``) with pre-norm and residual.

    Per layer: RMSNorm (a layernorm op) -> in_proj (x and z halves) -> causal depthwise conv1d
    -> SiLU -> x_proj (dt, B, C) -> dt_proj -> softplus -> selective scan (its D skip term
    is part of the scan op) -> y * SiLU(z) -> out_proj -> residual add; a final norm_f.
    """
    d_inner = expand * d_model
    dt_rank = mamba_dt_rank(d_model)
    b = GraphBuilder("mamba", elem_bytes)
    x = b.input("embeddings", (batch, seq_len, d_model))
    for i in range(num_layers):
        p = f"layer{i}"
        h = b.layernorm(x, name=f"{p}.norm")
        u = b.linear(h, d_inner, name=f"{p}.in_proj_x", bias=False)
        z = b.linear(h, d_inner, name=f"{p}.in_proj_z", bias=False)
        u = _causal_depthwise_conv(b, _to_channels_first(b, u), d_conv, name=f"{p}.conv1d")
        u = b.elementwise("silu", u, name=f"{p}.conv_silu")
        b.reshape(u, (batch, seq_len, d_inner))
        dt = b.linear(u, dt_rank, name=f"{p}.x_proj_dt", bias=False)
        ssm_b = b.linear(u, d_state, name=f"{p}.x_proj_B", bias=False)
        ssm_c = b.linear(u, d_state, name=f"{p}.x_proj_C", bias=False)
        dt = b.linear(dt, d_inner, name=f"{p}.dt_proj", bias=True)
        dt = b.elementwise("softplus", dt, name=f"{p}.dt_softplus")
        y = b.scan(u, dt, ssm_b, ssm_c, state=d_state, name=f"{p}.selective_scan")
        gate = b.elementwise("silu", z, name=f"{p}.z_silu")
        y = b.elementwise("mul", y, gate, name=f"{p}.gate")
        y = b.linear(y, d_model, name=f"{p}.out_proj", bias=False)
        x = b.add(y, x, name=f"{p}.residual_add")
    b.layernorm(x, name="norm_f")
    b.meta.update(d_model=d_model, d_inner=d_inner, d_state=d_state, d_conv=d_conv, dt_rank=dt_rank)
    return b.build()


def mamba_macs(
    batch: int = 1,
    seq_len: int = 1024,
    d_model: int = 768,
    d_state: int = 16,
    expand: int = 2,
    d_conv: int = 4,
    num_layers: int = 1,
) -> int:
    """Closed form of :func:`mamba`'s MACs (the scan has FLOPs but no MACs)."""
    d_inner, rank = expand * d_model, mamba_dt_rank(d_model)
    per_token = 2 * d_model * d_inner + d_inner * d_conv + d_inner * (rank + 2 * d_state) + rank * d_inner
    per_token += d_inner * d_model
    return batch * seq_len * num_layers * per_token


HYENA_SHORT_FILTER = 3  # short_filter_order in safari's HyenaOperator
HYENA_EMB_DIM = 3  # positional features (t, cos, sin) fed to the implicit filter
HYENA_INNER_MLPS = 2  # hidden filter_order x filter_order layers of the implicit filter


def _fft(b: GraphBuilder, x: str, batch: int, channels: int, fft_len: int, out_len: int, inverse: bool, name: str):
    """FFT along the last axis of [batch, channels, length], zero-padded to (and truncated from) ``fft_len``."""
    return b.add_op(
        name,
        OpKind.FFT,
        dict(B=batch * channels, L=fft_len),
        [x],
        (batch, channels, out_len),
        attrs=dict(inverse=inverse, n=fft_len),
    )


def hyena(
    batch: int = 1,
    elem_bytes: int = 1,
    seq_len: int = 1024,
    d_model: int = 768,
    order: int = 2,
    filter_order: int = 64,
    num_layers: int = 1,
) -> Graph:
    """Hyena operator blocks (Poli et al. 2023, safari ``HyenaOperator``) with pre-norm and residual.

    Per layer: layernorm -> in_proj to (order+1) chunks of d_model -> short causal depthwise
    conv (3 taps) per chunk -> implicit long filter: an MLP (``filter_order`` wide, sin
    activations) on positional features ``pos_features`` [1, L, 3], times a decay window
    (a precomputed input ``layer{i}.filter_window{o}``) -> for each of order-1 steps: gate
    multiply, FFT of the signal and of the filter at 2L, spectrum multiply, inverse FFT,
    per-channel bias skip -> last gate multiply -> out_proj -> residual add.
    The filter path does not depend on the batch.
    """
    fft_len = 2 * seq_len
    b = GraphBuilder("hyena", elem_bytes)
    x = b.input("embeddings", (batch, seq_len, d_model))
    positions = b.input("pos_features", (1, seq_len, HYENA_EMB_DIM))
    for i in range(num_layers):
        p = f"layer{i}"
        h = b.layernorm(x, name=f"{p}.norm")
        chunks = []
        for j in range(order + 1):
            c = b.linear(h, d_model, name=f"{p}.in_proj_{j}")
            c = _causal_depthwise_conv(b, _to_channels_first(b, c), HYENA_SHORT_FILTER, name=f"{p}.short_conv_{j}")
            chunks.append(b.reshape(c, (batch, d_model, seq_len)))
        *gates, v = chunks

        f = b.linear(positions, filter_order, name=f"{p}.filter_in")
        f = b.elementwise("sin", f, name=f"{p}.filter_sin0")
        for m in range(1, HYENA_INNER_MLPS + 1):
            f = b.linear(f, filter_order, name=f"{p}.filter_mlp{m}")
            f = b.elementwise("sin", f, name=f"{p}.filter_sin{m}")

        for o, gate_index in enumerate(range(order - 1, 0, -1)):
            k = b.linear(f, d_model, name=f"{p}.filter_out{o}", bias=False)
            window = b.input(f"{p}.filter_window{o}", (1, seq_len, d_model))
            k = b.elementwise("mul", k, window, name=f"{p}.filter_modulate{o}")
            b.reshape(k, (1, d_model, seq_len))
            v = b.elementwise("mul", v, gates[gate_index], name=f"{p}.gate{o}")
            v_freq = _fft(b, v, batch, d_model, fft_len, fft_len, False, name=f"{p}.fft_signal{o}")
            k_freq = _fft(b, k, 1, d_model, fft_len, fft_len, False, name=f"{p}.fft_filter{o}")
            y_freq = b.elementwise("mul", v_freq, k_freq, name=f"{p}.spectrum_mul{o}")
            y = _fft(b, y_freq, batch, d_model, fft_len, seq_len, True, name=f"{p}.ifft{o}")
            skip = b.add_op(
                f"{p}.bias_skip{o}",
                OpKind.ELEMENTWISE,
                dict(N=batch * d_model * seq_len),
                [v],
                (batch, d_model, seq_len),
                weights={"bias": (d_model,)},
                attrs=dict(fn="mul", arity=1),
            )
            v = b.add(y, skip, name=f"{p}.fftconv_add{o}")
        y = b.elementwise("mul", v, gates[0], name=f"{p}.gate_out")
        b.reshape(y, (batch, seq_len, d_model))
        y = b.linear(y, d_model, name=f"{p}.out_proj")
        x = b.add(y, x, name=f"{p}.residual_add")
    b.meta.update(d_model=d_model, order=order, filter_order=filter_order, fft_len=fft_len)
    return b.build()


def hyena_macs(
    batch: int = 1,
    seq_len: int = 1024,
    d_model: int = 768,
    order: int = 2,
    filter_order: int = 64,
    num_layers: int = 1,
) -> int:
    """Closed form of :func:`hyena`'s MACs (FFTs and gates have FLOPs but no MACs)."""
    per_token = (order + 1) * (d_model * d_model + d_model * HYENA_SHORT_FILTER) + d_model * d_model
    filter_per_position = HYENA_EMB_DIM * filter_order + HYENA_INNER_MLPS * filter_order**2
    filter_per_position += (order - 1) * filter_order * d_model
    return num_layers * (batch * seq_len * per_token + seq_len * filter_per_position)
