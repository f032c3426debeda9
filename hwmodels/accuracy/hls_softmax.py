"""hls4ml's table-based softmax (``latency`` and ``stable``, nnet_activation.h) and io_parallel average pooling
(nnet_pooling.h), on fixed-point mantissas, vectorised over the samples.

Softmax: tables of ``exp_table_size`` / ``inv_table_size`` entries addressed by the top ``ceil(log2(size))``
bits of the operand's bit pattern; entry ``i`` is the operand type's value with those bits set to ``i``, passed
through float ``expf`` (``stable``: of minus the value, the operand being ``x_max - x`` in ``inp_norm_t``) or
``1 / x`` and assigned to ``exp_table_t`` / ``inv_table_t``. The exponentials are summed in ``accum_t`` by
hls4ml's balanced adder tree (``reduce``), the sum assigned to ``inv_inp_t``, and each output is
``exp * inv_table[sum]`` assigned to the result type. Types and sizes default as hls4ml 1.3's backend does:
tables ``ap_fixed<18,8,AP_RND,AP_SAT>``, size 1024 cut to ``2**min(input width, inv_table width)``; ``stable``'s
``inp_norm_t`` is ``ap_ufixed<W-1, I-1>`` of a signed input and its exp table at most ``2**(W-1)`` entries.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from hwmodels.accuracy.ap_fixed import FixedType, QuantError, from_float, parse_type, requantize
from hwmodels.accuracy.hls_tables import libm

SOFTMAX_TABLE_TYPE = FixedType(18, 8, True, "AP_RND", "AP_SAT")
SOFTMAX_TABLE_SIZE = 1024
SOFTMAX_IMPLEMENTATIONS = ("latency", "stable")


def _ceillog2(n: int) -> int:
    return max(0, (int(n) - 1).bit_length())


def _index(m: np.ndarray, t: FixedType, size: int) -> np.ndarray:
    """``x(x.width - 1, x.width - N)``: the top N bits of the mantissa's two's-complement pattern, unsigned."""
    n = _ceillog2(size)
    pattern = np.asarray(m, dtype=np.int64) & ((1 << t.width) - 1)
    return (pattern >> (t.width - n)).astype(np.int64)


def _entry_values(t: FixedType, size: int) -> np.ndarray:
    """The float value of ``t`` with its top N bits set to i (the rest zero), for every table index i."""
    n = _ceillog2(size)
    pattern = np.arange(size, dtype=np.int64) << (t.width - n)
    if t.signed:
        pattern = np.where(pattern >= 1 << (t.width - 1), pattern - (1 << t.width), pattern)
    return np.ldexp(pattern.astype(np.float64), -t.frac).astype(np.float32)


def _expf(x: np.ndarray) -> np.ndarray:
    lib = libm()
    if lib is None:
        return np.exp(x.astype(np.float32))
    return np.array([lib.expf(ctypes.c_float(float(v))) for v in x], dtype=np.float32)


def _float_to_fixed(values: np.ndarray, t: FixedType) -> np.ndarray:
    """A float assigned to ``t``; +-inf (1/0) saturates like an out-of-range value."""
    big = float(2.0 ** (t.integer + 1))  # beyond the type's range either way
    return from_float(np.nan_to_num(values.astype(np.float64), posinf=big, neginf=-big), t)


def exp_table(t: FixedType, size: int, table_t: FixedType, negative: bool) -> np.ndarray:
    x = _entry_values(t, size)
    return _float_to_fixed(_expf(-x if negative else x), table_t)


def invert_table(t: FixedType, size: int, table_t: FixedType) -> np.ndarray:
    x = _entry_values(t, size)
    with np.errstate(divide="ignore"):
        inv = np.float32(1) / x
    return _float_to_fixed(inv, table_t)


def tree_sum(m: np.ndarray, t: FixedType) -> np.ndarray:
    """hls4ml's ``reduce<accum_t, N, Op_add>`` over the last axis: a balanced tree, each sum assigned to ``t``."""
    n = m.shape[-1]
    if n == 1:
        return m[..., 0]
    if n == 2:
        return requantize(m[..., 0] + m[..., 1], t.frac, t)
    left = 1 << ((n - 1).bit_length() - 1)  # pow2(floorlog2(N - 1))
    return requantize(tree_sum(m[..., :left], t) + tree_sum(m[..., left:], t), t.frac, t)


def softmax_types(layer: dict[str, Any], given: dict[str, Any], in_t: FixedType, accum: str) -> dict[str, Any]:
    """The softmax config hls4ml writes for this layer (types, table sizes, implementation)."""
    prec = given.get("Precision", {}) if isinstance(given.get("Precision"), dict) else {}
    impl = str(given.get("Implementation", layer.get("implementation", "stable"))).lower()
    if impl not in SOFTMAX_IMPLEMENTATIONS:
        raise QuantError(f"softmax implementation {impl!r} is not emulated; emulated: {SOFTMAX_IMPLEMENTATIONS}")
    exp_t = parse_type(prec["exp_table"]) if "exp_table" in prec else SOFTMAX_TABLE_TYPE
    inv_t = parse_type(prec["inv_table"]) if "inv_table" in prec else SOFTMAX_TABLE_TYPE
    inv_inp = parse_type(prec["inv_inp"]) if "inv_inp" in prec else SOFTMAX_TABLE_TYPE
    size = int(given.get("TableSize", layer.get("table_size", SOFTMAX_TABLE_SIZE)))
    size = min(size, 2 ** min(in_t.width, inv_t.width))  # hls4ml's FixSoftmaxTableSize
    exp_size = inv_size = size
    norm = None
    if impl == "stable":
        if "inp_norm" in prec:
            norm = parse_type(prec["inp_norm"])
        else:
            w, i = in_t.width - in_t.signed, in_t.integer - in_t.signed
            norm = FixedType(w, i, False)
            if in_t.signed:
                exp_size = min(exp_size, 2**w)
    return {
        "impl": impl,
        "exp_t": exp_t,
        "inv_t": inv_t,
        "inv_inp": inv_inp,
        "accum": parse_type(accum),
        "exp_size": exp_size,
        "inv_size": inv_size,
        "norm": norm,
    }


def softmax(m: np.ndarray, in_t: FixedType, cfg: dict[str, Any], result: FixedType) -> np.ndarray:
    """Softmax over the last axis of mantissas ``m`` (type ``in_t``); returns mantissas of ``result``."""
    exp_t, inv_t, inv_inp, accum = cfg["exp_t"], cfg["inv_t"], cfg["inv_inp"], cfg["accum"]
    if cfg["impl"] == "latency":
        table = exp_table(in_t, cfg["exp_size"], exp_t, negative=False)
        exps = table[_index(m, in_t, cfg["exp_size"])]
    else:
        norm = cfg["norm"]
        diff = m.max(axis=-1, keepdims=True) - m  # exact, at in_t's fractional bits
        d = requantize(diff, in_t.frac, norm)
        table = exp_table(norm, cfg["exp_size"], exp_t, negative=True)
        exps = table[_index(d, norm, cfg["exp_size"])]
    exps = requantize(exps, exp_t.frac, accum)
    total = requantize(tree_sum(exps, accum), accum.frac, inv_inp)
    inv = invert_table(inv_inp, cfg["inv_size"], inv_t)[_index(total, inv_inp, cfg["inv_size"])]
    return requantize(exps * inv[..., None], accum.frac + inv_t.frac, result)


def average_pool(m: np.ndarray, frac: int, layer: dict[str, Any], accum: FixedType) -> np.ndarray:
    """io_parallel AveragePooling1D/2D without padding: ``y = 0; y += x[i]`` in ``accum_t``, then ``y /= N``
    (integer division of the mantissa, toward zero); returns mantissas at ``accum``'s fractional bits."""
    if any(layer.get(k, 0) for k in ("pad_top", "pad_bottom", "pad_left", "pad_right")):
        raise QuantError(f"average pooling {layer['name']!r} with padding is not emulated")
    two_d = layer["class_name"] == "AveragePooling2D"
    xm = m if two_d else m[:, None]
    r, sh = (layer.get("pool_height", 1), layer.get("stride_height", 1)) if two_d else (1, 1)
    s = layer.get("pool_width", layer.get("pool_size", 1))
    sw = layer.get("stride_width", layer.get("stride", s))
    p, q = (xm.shape[1] - r) // sh + 1, (xm.shape[2] - s) // sw + 1
    y = np.zeros((xm.shape[0], p, q, xm.shape[3]), dtype=np.int64)
    for i in range(r):
        for j in range(s):
            window = xm[:, i : i + sh * (p - 1) + 1 : sh, j : j + sw * (q - 1) + 1 : sw, :]
            f = max(accum.frac, frac)  # y + x at full precision, assigned back to accum_t
            y = requantize((y << (f - accum.frac)) + (window << (f - frac)), f, accum)
    count = r * s
    y = np.where(y >= 0, y // count, -((-y) // count))
    y = requantize(y, accum.frac, accum)
    return y if two_d else y[:, 0]
