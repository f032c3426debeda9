"""Quantized ONNX: QDQ pairs and the QLinear / Integer ops, with each op's integer precision recorded.

A QuantizeLinear -> DequantizeLinear pair around an activation is how a quantized tensor is written
in ONNX: both are views here that label the value with its precision (int8, int4, ...), as an
integer inference compiler fuses them. A DequantizeLinear of an integer weight labels the weight.
Each conv/matmul then records ``attrs['precision']`` (its activation's), ``attrs['weight_precision']``
and stores its weights at that precision's bytes, so the hardware models cost them at that width.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from dse.graph import PRECISION_BYTES
from dse.importers.onnx_walk import Activation, Constant, GraphWalk, quant_precision

if TYPE_CHECKING:
    import onnx

QUANT_OPS = ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger")
# op type -> (activation input, weight input, bias input or -1)
QUANT_OPERANDS: dict[str, tuple[int, int, int]] = {
    "QLinearConv": (0, 3, 8),
    "QLinearMatMul": (0, 3, -1),
    "ConvInteger": (0, 1, -1),
    "MatMulInteger": (0, 1, -1),
}


def label_bytes(label: str) -> int:
    """Bytes one value of a precision label takes in memory: the table's, else whole bytes of its bits.

    Labels outside PRECISION_BYTES come from QONNX and MatMulNBits ('int3', 'uint6', 'bipolar'); like int4,
    values narrower than a byte are stored one per byte (packing is a hardware-model concern).
    """
    if label in PRECISION_BYTES:
        return PRECISION_BYTES[label]
    digits = "".join(c for c in label if c.isdigit())
    return max(1, math.ceil(int(digits) / 8)) if digits else 1


class QuantOps(GraphWalk):
    """QDQ views and the precision every compute op records."""

    def _quantize(self, node: onnx.NodeProto, name: str) -> None:
        """QuantizeLinear / DequantizeLinear of an activation: a view that carries the precision."""
        source = self._activation(node, name)
        if node.op_type == "DequantizeLinear":
            label = source.precision or quant_precision(self.elem_types.get(node.input[0], 0))
        else:
            label = quant_precision(self.elem_types.get(node.output[0], 0))
        self._bind(node, name, Activation(source.tensor, source.shape, label))

    def _value_precision(self, node: onnx.NodeProto, index: int) -> str | None:
        value = self._input(node, index)
        if isinstance(value, (Activation, Constant)) and value.precision:
            return value.precision
        return quant_precision(self.elem_types.get(node.input[index], 0)) if index < len(node.input) else None

    def _record_precision(self, node: onnx.NodeProto, act_index: int, weight_index: int) -> None:
        """Label the op just added with its operands' precisions; its weights take the weight's width.

        A QONNX-quantized operand adds its bits, scale, signedness and the ap_fixed type holding it
        (``weight_bits``, ``weight_scale``, ``weight_signed``, ``weight_fixed``; ``act_*`` for the input)."""
        act = self._value_precision(node, act_index)
        weight = self._value_precision(node, weight_index)
        if act is None and weight is None:
            return
        op = self.builder.ops[-1]
        attrs = dict(op.attrs)
        attrs["precision"] = act or weight
        attrs["weight_precision"] = weight or act
        for prefix, index in (("act", act_index), ("weight", weight_index)):
            value = self._input(node, index)
            quant = value.quant if isinstance(value, (Activation, Constant)) else None
            if quant is not None:
                attrs[f"{prefix}_bits"] = 1 if quant.bipolar else quant.bits
                attrs[f"{prefix}_scale"] = quant.scale
                attrs[f"{prefix}_signed"] = quant.signed or quant.bipolar
                attrs[f"{prefix}_fixed"] = quant.fixed_point
        self.builder.ops[-1] = replace(op, attrs=attrs)
        if weight is not None:
            for tensor in op.weights:
                self.builder.tensors[tensor] = replace(self.builder.tensors[tensor], elem_bytes=label_bytes(weight))
