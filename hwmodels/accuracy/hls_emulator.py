"""Bit-accurate emulation of an hls4ml network's C simulation, vectorised over the samples.

Reads the same hls4ml layer list and ``HLSConfig`` that ``dse export`` writes (``hwmodels.accuracy.hls_network``) and
follows hls4ml 1.3's nnet_utils kernels: the input is converted from float to the model precision; a Dense or
Conv layer forms every product ``data * weight`` at full precision, assigns it to ``accum_t``, starts the
accumulator at ``(accum_t) bias`` and adds the products in order (``acc += mult``), then casts to ``result_t``;
ReLU keeps positives; sigmoid/tanh read hls4ml's tables (``hwmodels.accuracy.hls_tables``); max pooling takes the window
maximum; BatchNorm is ``data * scale + bias``. Weights and biases are the values hls4ml's C code reads: the
float written with ``{:.Ff}`` (F = the type's fractional bits) by its writer, parsed as a double, assigned to
the type. Per-layer outputs are cached by the precisions that produced them, so design points that share a
prefix of layer precisions share the work.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from hwmodels.accuracy.ap_fixed import FixedType, QuantError, from_float, parse_type, requantize, shift_right, to_float
from hwmodels.accuracy.hls_softmax import average_pool, softmax, softmax_types
from hwmodels.accuracy.hls_tables import DEFAULT_TABLE_SIZE, DEFAULT_TABLE_TYPE, lookup, table

CHUNK_ELEMENTS = 1 << 22  # products formed at once when each must be rounded on its own
CACHE_BYTES = 256 << 20
COMPUTE = ("Dense", "Conv1D", "Conv2D")
AVG_POOLS = ("AveragePooling2D", "AveragePooling1D")
EMULATED = (
    *COMPUTE,
    *AVG_POOLS,
    "InputLayer",
    "Reshape",
    "Activation",
    "Softmax",
    "MaxPooling2D",
    "MaxPooling1D",
    "BatchNormalization",
)


@functools.cache
def _blas_controller() -> ThreadpoolController:
    return ThreadpoolController()


def single_threaded_blas():
    """A context running BLAS on one thread: these GEMMs are small (1,797 x 64 x 32), threaded OpenBLAS spends ~10x
    the work synchronising and oversubscribes the cores of parallel workers. Sums are exact, so results are equal."""
    return _blas_controller().limit(limits=1, user_api="blas")


@dataclass(frozen=True)
class Fixed:
    """A fixed-point tensor: int64 mantissas and their type."""

    m: np.ndarray
    type: FixedType

    def value(self) -> np.ndarray:
        return to_float(self.m, self.type)


def hls_text_value(values: np.ndarray, t: FixedType) -> np.ndarray:
    """The double hls4ml's C++ reads for each weight: its writer's ``{:.Ff}`` text, parsed (correctly rounded)."""
    fmt = f"{{:.{max(0, t.frac)}f}}"
    flat = np.asarray(values, dtype=np.float32).reshape(-1)
    return np.array([float(fmt.format(v)) for v in flat], dtype=np.float64).reshape(np.shape(values))


def _lowest_set_bit(m: np.ndarray) -> int:
    """How many trailing zero bits every mantissa shares (62 when all are zero)."""
    bits = int(np.bitwise_or.reduce(np.abs(m).reshape(-1))) if m.size else 0
    return 62 if bits == 0 else (bits & -bits).bit_length() - 1


def accumulate(x: np.ndarray, fx: int, w: np.ndarray, fw: int, bias: np.ndarray, accum: FixedType) -> np.ndarray:
    """hls4ml's ``acc = bias; for i: acc += (accum_t)(x[i] * w[i])`` for x (N, n_in), w (n_in, n_out)."""
    tx, tw = min(_lowest_set_bit(x), fx + 62), min(_lowest_set_bit(w), fw + 62)
    if tx and tx < 62:  # trailing zeros shared by every value change nothing but make exact sums likelier
        x, fx = x >> tx, fx - tx
    if tw and tw < 62:
        w, fw = w >> tw, fw - tw
    shift = fx + fw - accum.frac
    if accum.overflow == "AP_WRAP" and shift <= 0:  # products exact in accum_t: one exact sum, wrapped once
        bound = float(np.abs(x).max(initial=0)) * float(np.abs(w).max(initial=0)) * x.shape[1]
        if bound < 2.0**52:
            total = np.rint(x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64)
        else:
            total = x @ w
        return requantize((total << -shift) + bias[None, :], accum.frac, accum)
    if accum.overflow == "AP_WRAP":  # every product rounded on its own, the sum wrapped once
        out = np.empty((x.shape[0], w.shape[1]), dtype=np.int64)
        step = max(1, CHUNK_ELEMENTS // max(1, w.size))
        for s in range(0, x.shape[0], step):
            p = x[s : s + step, :, None] * w[None, :, :]
            out[s : s + step] = shift_right(p, shift, accum.rounding).sum(axis=1)
        return requantize(out + bias[None, :], accum.frac, accum)
    acc = np.broadcast_to(bias, (x.shape[0], w.shape[1])).copy()  # saturating: in hls4ml's order
    for i in range(x.shape[1]):
        mult = requantize(x[:, i, None] * w[None, i, :], fx + fw, accum)
        acc = requantize(acc + mult, accum.frac, accum)
    return acc


def _im2col(x: np.ndarray, layer: dict[str, Any]) -> np.ndarray:
    """Channels-last (N, H, W, C) -> (N, P, Q, R*S*C) patches, zero padded, in Keras kernel order."""
    pt, pb = layer.get("pad_top", 0), layer.get("pad_bottom", 0)
    pl, pr = layer.get("pad_left", 0), layer.get("pad_right", 0)
    x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    r, s = layer["filt_height"], layer["filt_width"]
    sh, sw = layer["stride_height"], layer["stride_width"]
    p, q = layer["out_height"], layer["out_width"]
    cols = [x[:, i : i + sh * (p - 1) + 1 : sh, j : j + sw * (q - 1) + 1 : sw, :] for i in range(r) for j in range(s)]
    return np.concatenate(cols, axis=-1)


def max_pool(x: np.ndarray, layer: dict[str, Any], reduce=np.max) -> np.ndarray:
    """Window maxima (or ``reduce``) of channels-last (N, H, W, C) (2D pooling) or (N, W, C) (1D), no padding."""
    two_d = layer["class_name"].endswith("2D")
    xm = x if two_d else x[:, None]
    r, sh = (layer.get("pool_height", 1), layer.get("stride_height", 1)) if two_d else (1, 1)
    s = layer.get("pool_width", layer.get("pool_size", 1))
    sw = layer.get("stride_width", layer.get("stride", s))
    p, q = (xm.shape[1] - r) // sh + 1, (xm.shape[2] - s) // sw + 1
    windows = [
        xm[:, i : i + sh * (p - 1) + 1 : sh, j : j + sw * (q - 1) + 1 : sw, :] for i in range(r) for j in range(s)
    ]
    out = reduce(np.stack(windows), axis=0)
    return out if two_d else out[:, 0]


@dataclass
class LayerStep:
    """One emulated hls4ml layer, its weights in float (Keras order) and where its precisions live."""

    layer: dict[str, Any]
    kernel: np.ndarray | None = None
    bias: np.ndarray | None = None
    qweights: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.layer["class_name"]

    def quantized_weights(self, wt: str, bt: str) -> tuple[Fixed, Fixed]:
        if (wt, bt) not in self.qweights:
            w_type, b_type = parse_type(wt), parse_type(bt)
            w = from_float(hls_text_value(self.kernel, w_type), w_type)
            b = from_float(hls_text_value(self.bias, b_type), b_type)
            self.qweights[(wt, bt)] = (w, b)
        w, b = self.qweights[(wt, bt)]
        return Fixed(w, parse_type(wt)), Fixed(b, parse_type(bt))


def layer_types(config: dict[str, Any], name: str) -> dict[str, str]:
    """A layer's precision strings from an hls4ml config, the model precision filling what it leaves out."""
    hls = config.get("HLSConfig", config)
    model = hls["Model"]["Precision"]
    model = model if isinstance(model, str) else model.get("default", "ap_fixed<16,6>")
    given = hls.get("LayerName", {}).get(name, {}).get("Precision", {})
    given = {"result": given} if isinstance(given, str) else given
    out = {k: given.get(k, model) for k in ("weight", "bias", "accum", "result", "scale")}
    out["table"] = given.get("table", DEFAULT_TABLE_TYPE.hls())
    out["table_size"] = str(hls.get("LayerName", {}).get(name, {}).get("table_size", DEFAULT_TABLE_SIZE))
    return out


class HlsEmulator:
    """One network (an hls4ml layer list), many precision configurations, cached per layer prefix."""

    def __init__(self, layers: list[dict[str, Any]]):
        unknown = [
            f"{layer['name']} ({layer['class_name']})" for layer in layers if layer["class_name"] not in EMULATED
        ]
        unknown += [
            f"{layer['name']} (activation {layer.get('activation')})"
            for layer in layers
            if layer["class_name"] == "Activation"
            and layer.get("activation") not in ("relu", "linear", "sigmoid", "tanh", "softmax")
        ]
        if unknown:
            raise QuantError(
                "the emulator does not reproduce layer " + ", ".join(unknown) + "; it emulates "
                "Dense, Conv1D/2D, BatchNormalization, ReLU, linear, sigmoid, tanh, softmax (latency, stable), max "
                "pooling and unpadded io_parallel average pooling"
            )
        self.steps = [LayerStep(layer, layer.get("weight_data"), layer.get("bias_data")) for layer in layers]
        self._cache: OrderedDict[tuple, Fixed] = OrderedDict()
        self._cache_bytes = 0
        self._input_key: Any = None
        self.hits = self.misses = 0

    def signature(self, config: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
        """Per layer, the precision strings that decide its numbers (reuse, strategy and io type do not)."""
        sig = []
        for step in self.steps:
            t = layer_types(config, step.layer["name"])
            if step.kind in COMPUTE:
                sig.append((t["weight"], t["bias"], t["accum"], t["result"]))
            elif step.kind == "BatchNormalization":
                sig.append((t["scale"], t["bias"], t["result"]))
            elif step.kind == "Activation" and step.layer.get("activation") in ("sigmoid", "tanh"):
                sig.append((t["table"], t["table_size"], t["result"]))
            elif step.kind == "Reshape":
                sig.append(())
            elif self._is_softmax(step):  # the whole layer entry: implementation, table types and sizes
                entry = config.get("HLSConfig", config).get("LayerName", {}).get(step.layer["name"], {})
                sig.append((t["result"], t["accum"], json.dumps(entry, sort_keys=True, default=str)))
            elif step.kind in AVG_POOLS:
                if config.get("IOType", "io_parallel") != "io_parallel":
                    raise QuantError(f"average pooling {step.layer['name']!r} is emulated for io_parallel only")
                sig.append((t["accum"], t["result"]))
            else:
                sig.append((t["result"],))
        return tuple(sig)

    @staticmethod
    def _is_softmax(step: LayerStep) -> bool:
        return step.kind == "Softmax" or (step.kind == "Activation" and step.layer.get("activation") == "softmax")

    def run(self, x: np.ndarray, config: dict[str, Any], input_key: Any = None) -> Fixed:
        """Quantized outputs for float inputs ``x`` (N, channels-last input shape) under ``config``."""
        sig = self.signature(config)
        if input_key is None or input_key != self._input_key:
            self.clear()
            self._input_key = input_key
        start, current = 0, None
        for depth in range(len(sig), 0, -1):  # the longest cached prefix
            hit = self._cache.get(sig[:depth]) if input_key is not None else None
            if hit is not None:
                self._cache.move_to_end(sig[:depth])
                start, current = depth, hit
                self.hits += 1
                break
        else:
            self.misses += 1
        with single_threaded_blas():
            for i in range(start, len(sig)):
                current = self._step(self.steps[i], sig[i], x if current is None else current, x.shape[0])
                if input_key is not None:
                    self._remember(sig[: i + 1], current)
        return current

    def clear(self) -> None:
        self._cache.clear()
        self._cache_bytes = 0

    def _remember(self, key: tuple, value: Fixed) -> None:
        self._cache[key] = value
        self._cache_bytes += value.m.nbytes
        while self._cache_bytes > CACHE_BYTES and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cache_bytes -= old.m.nbytes

    def _step(self, step: LayerStep, types: tuple[str, ...], data: Any, n: int) -> Fixed:
        kind, layer = step.kind, step.layer
        if kind == "InputLayer":
            t = parse_type(types[0])
            return Fixed(from_float(np.asarray(data, dtype=np.float32).reshape(n, *layer["input_shape"]), t), t)
        if kind == "Reshape":
            return Fixed(data.m.reshape(n, *layer["target_shape"]), data.type)
        if kind in COMPUTE:
            w, b = step.quantized_weights(types[0], types[1])
            accum, result = parse_type(types[2]), parse_type(types[3])
            bias = requantize(b.m, b.type.frac, accum)
            if kind == "Dense":
                x2 = data.m.reshape(n, -1)
                acc = accumulate(x2, data.type.frac, w.m.reshape(x2.shape[1], -1), w.type.frac, bias, accum)
            else:
                xm = data.m if kind == "Conv2D" else data.m[:, None]  # Conv1D: a height-1 image
                lay = layer if kind == "Conv2D" else {**layer, "filt_height": 1, "stride_height": 1, "out_height": 1}
                cols = _im2col(xm, lay)
                flat = cols.reshape(-1, cols.shape[-1])
                acc = accumulate(flat, data.type.frac, w.m.reshape(flat.shape[1], -1), w.type.frac, bias, accum)
                acc = acc.reshape(*cols.shape[:-1], -1)
                acc = acc if kind == "Conv2D" else acc[:, 0]
            return Fixed(requantize(acc, accum.frac, result), result)
        if kind == "BatchNormalization":
            scale_t, bias_t, result = (parse_type(t) for t in types)
            scale = from_float(hls_text_value(layer["scale_data"], scale_t), scale_t)
            bias = from_float(hls_text_value(layer["bias_data"], bias_t), bias_t)
            frac = max(data.type.frac + scale_t.frac, bias_t.frac)
            prod = (data.m * scale) << (frac - data.type.frac - scale_t.frac)
            total = prod + (bias << (frac - bias_t.frac))
            return Fixed(requantize(total, frac, result), result)
        if self._is_softmax(step):
            result = parse_type(types[0])
            cfg = softmax_types(layer, json.loads(types[2]), data.type, types[1])
            m = data.m.reshape(n, -1)
            return Fixed(softmax(m, data.type, cfg, result).reshape(data.m.shape), result)
        if kind in AVG_POOLS:
            accum, result = parse_type(types[0]), parse_type(types[1])
            pooled = average_pool(data.m, data.type.frac, layer, accum)
            return Fixed(requantize(pooled, accum.frac, result), result)
        result = parse_type(types[-1])
        if kind in ("MaxPooling2D", "MaxPooling1D"):
            return Fixed(requantize(max_pool(data.m, layer), data.type.frac, result), result)
        fn = layer.get("activation")
        if fn == "relu":
            return Fixed(requantize(np.maximum(data.m, 0), data.type.frac, result), result)
        if fn == "linear":
            return Fixed(requantize(data.m, data.type.frac, result), result)
        table_t, size = parse_type(types[0]), int(types[1])
        entries = table(fn, size, table_t)
        return Fixed(requantize(entries[lookup(data.m, data.type.frac, fn, size)], table_t.frac, result), result)


def float_forward(layers: list[dict[str, Any]], x: np.ndarray) -> np.ndarray:
    """The same network in float64 (no quantization), vectorised: the accuracy baseline."""
    n = x.shape[0]
    out = np.asarray(x, dtype=np.float64)
    for layer in layers:
        kind = layer["class_name"]
        if kind == "InputLayer":
            out = out.reshape(n, *layer["input_shape"])
        elif kind == "Reshape":
            out = out.reshape(n, *layer["target_shape"])
        elif kind == "Dense":
            out = out.reshape(n, -1) @ layer["weight_data"].astype(np.float64) + layer["bias_data"]
        elif kind in ("Conv2D", "Conv1D"):
            xm = out if kind == "Conv2D" else out[:, None]
            lay = layer if kind == "Conv2D" else {**layer, "filt_height": 1, "stride_height": 1, "out_height": 1}
            cols = _im2col(xm, lay)
            k = layer["weight_data"].astype(np.float64).reshape(cols.shape[-1], -1)
            out = cols @ k + layer["bias_data"]
            out = out if kind == "Conv2D" else out[:, 0]
        elif kind == "BatchNormalization":
            out = out * layer["scale_data"] + layer["bias_data"]
        elif kind in ("MaxPooling2D", "MaxPooling1D"):
            out = max_pool(out, layer)
        elif kind in AVG_POOLS:
            out = max_pool(out, layer, np.mean)
        elif kind == "Activation" and layer.get("activation") == "softmax":
            e = np.exp(out - out.max(axis=-1, keepdims=True))
            out = e / e.sum(axis=-1, keepdims=True)
        elif kind == "Activation":
            fn = layer.get("activation")
            out = {"relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}.get(
                fn, lambda v: v
            )(out)
        elif kind == "Softmax":
            e = np.exp(out - out.max(axis=-1, keepdims=True))
            out = e / e.sum(axis=-1, keepdims=True)
        else:
            raise QuantError(f"layer {layer['name']} ({kind}) has no float reference here")
    return out.reshape(n, -1)
