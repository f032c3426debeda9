"""QONNX / Brevitas quantizers: ``Quant``, ``BipolarQuant``, ``Trunc`` and FINN's ``MultiThreshold``.

A quantizer is how Brevitas (and the FINN/hls4ml flows that read its QONNX exports) writes an arbitrary
precision: ``Quant(x, scale, zero_point, bitwidth)`` rounds x to a ``bitwidth``-bit integer grid of step
``scale``. Like a QDQ pair it computes nothing an accelerator keeps: here it is a view that labels the
value with its precision (bits, signedness, scale), and the conv or dense layer reading a quantized
input and weight records both (``attrs['precision']``, ``weight_precision``, ``weight_bits``,
``weight_scale``, ``weight_fixed``, ...), which the FPGA mapper takes as the layer's types as hls4ml's
QONNX front end does. ``MultiThreshold`` (a quantized activation as a threshold table) is an
elementwise op whose thresholds are its weights. Semantics: QONNX docs/qonnx-custom-ops.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from dse.importers.onnx_quant import QuantOps
from dse.importers.onnx_walk import Activation, Constant, QuantInfo

if TYPE_CHECKING:
    import onnx

QONNX_OPS = ("Quant", "BipolarQuant", "Trunc", "MultiThreshold")
_DTYPE = re.compile(r"^(U?INT)(\d+)$")
MAX_QUANT_BITS = 32


class QonnxOps(QuantOps):
    """Converters for QONNX_OPS in QONNX_DOMAINS; OnnxImporter registers them."""

    def qonnx_handlers(self) -> dict[str, Callable[[onnx.NodeProto, str], None]]:
        return {"Quant": self._qonnx_quant, "BipolarQuant": self._qonnx_quant, "Trunc": self._qonnx_quant,
                "MultiThreshold": self._multi_threshold}  # fmt: skip

    def _scalar(self, node: onnx.NodeProto, name: str, index: int, what: str, *, largest: bool = False) -> float:
        value = self._input(node, index)
        array = value.value() if isinstance(value, Constant) else None
        if array is None or np.asarray(array).size == 0:
            raise self._error(name, node, f"the {what} (input {index}) must be a constant known at import time")
        flat = np.abs(np.asarray(array, dtype=np.float64).reshape(-1)) if largest else np.asarray(array).reshape(-1)
        return float(flat.max() if largest else flat[0])

    def _qonnx_quant(self, node: onnx.NodeProto, name: str) -> None:
        """Quant / BipolarQuant / Trunc: the value, labelled with the precision it is rounded to."""
        attrs = self._attrs(node)
        scale = self._scalar(node, name, 1, "scale", largest=True)
        if node.op_type == "BipolarQuant":
            info = QuantInfo(bits=1, signed=True, scale=scale, bipolar=True)
        else:
            bits_index = 4 if node.op_type == "Trunc" else 3
            bits = self._scalar(node, name, bits_index, "bit width")
            if bits != int(bits) or not 1 <= bits <= MAX_QUANT_BITS:
                raise self._error(
                    name, node, f"bit width {bits} is not an integer from 1 to {MAX_QUANT_BITS} (input {bits_index})"
                )
            source = self._input(node, 0)
            inherited = source.quant.signed if isinstance(source, Activation | Constant) and source.quant else True
            default = inherited if node.op_type == "Trunc" else True  # Trunc keeps its input's sign by default
            info = QuantInfo(
                bits=int(bits),
                signed=bool(int(attrs.get("signed", default))),
                scale=scale,
                zero_point=self._scalar(node, name, 2, "zero point"),
                narrow=bool(int(attrs.get("narrow", 0))),
            )
        source = self._input(node, 0)
        if isinstance(source, Constant):  # a weight: it keeps its shape and gains the precision
            shape = self._inferred_shape(node, name)
            self.values[node.output[0]] = Constant(node.output[0], shape, source.proto, source.array, info.label, info)
            return
        x = self._activation(node, name)
        self._bind(node, name, Activation(x.tensor, x.shape, info.label, info))

    def _multi_threshold(self, node: onnx.NodeProto, name: str) -> None:
        """Each value is compared with its channel's thresholds: the output counts those it exceeds."""
        x = self._activation(node, name)
        thresholds = self._constant(node, name, 1, "thresholds")
        attrs = self._attrs(node)
        raw = attrs.get("out_dtype", b"")
        dtype = (raw.decode() if isinstance(raw, bytes) else str(raw)).upper()
        match = _DTYPE.match(dtype)
        if dtype == "BIPOLAR":
            info = QuantInfo(bits=1, signed=True, scale=float(attrs.get("out_scale", 1.0)), bipolar=True)
        elif match:
            info = QuantInfo(
                bits=int(match.group(2)), signed=match.group(1) == "INT", scale=float(attrs.get("out_scale", 1.0))
            )
        else:
            raise self._error(name, node, f"out_dtype {dtype!r} is not supported; allowed: INTn, UINTn, BIPOLAR")
        levels = thresholds.shape[-1] if thresholds.shape else 1
        self._elementwise(
            node, name, "multi_threshold", [x], x.shape, [thresholds], {"thresholds": levels, "precision": info.label}
        )
        out = self.values[node.output[0]]
        assert isinstance(out, Activation)
        self.values[node.output[0]] = Activation(out.tensor, out.shape, info.label, info)
