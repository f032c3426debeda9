"""The walk over an ONNX graph: its values (activations vs constants) and the helpers every op converter uses.

Constants (initializers and Constant nodes) never become activations: an op that mixes an activation
with a constant reads only the activation, and the constant becomes one of its weights. Every shape the
importer derives is checked against ONNX's shape inference when a value is bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.graph import GraphBuilder, GraphError, OpKind

if TYPE_CHECKING:
    import onnx


@dataclass(frozen=True)
class QuantInfo:
    """A value quantized by a QONNX/Brevitas quantizer: ``(q - zero_point) * scale`` with q a ``bits``-wide
    integer (bipolar: +-1). ``scale`` is the largest of a per-channel scale's values."""

    bits: int
    signed: bool
    scale: float
    zero_point: float = 0.0
    narrow: bool = False
    bipolar: bool = False

    @property
    def label(self) -> str:
        return "bipolar" if self.bipolar else f"{'int' if self.signed else 'uint'}{self.bits}"

    @property
    def fixed_point(self) -> tuple[int, int]:
        """(width, integer bits) of the smallest signed ap_fixed holding every value: an unsigned value takes a
        sign bit more; a power-of-two scale is exact, any other scale keeps the range."""
        if self.bipolar:
            return 2, 2
        width = self.bits + (0 if self.signed else 1)
        exponent = math.ceil(math.log2(self.scale)) if self.scale > 0 else 0
        return width, width + exponent


@dataclass(frozen=True)
class Activation:
    """An ONNX value computed at run time: the IR tensor that holds it and its shape as ONNX sees it."""

    tensor: str
    shape: tuple[int, ...]
    precision: str | None = None  # a quantized value's precision (int8, int4, ...); None: the graph's
    quant: QuantInfo | None = None  # set by a QONNX quantizer


@dataclass
class Constant:
    """An ONNX value known before run time (initializer, Constant node or folded from them)."""

    name: str
    shape: tuple[int, ...]
    proto: onnx.TensorProto | None = None
    array: np.ndarray | None = None
    precision: str | None = None
    quant: QuantInfo | None = None

    def value(self) -> np.ndarray | None:
        if self.array is None and self.proto is not None:
            from onnx import numpy_helper

            self.array = numpy_helper.to_array(self.proto)
        return self.array


Value = Activation | Constant


# Ops that only rename a weight's layout: the weight keeps its quantized precision through them.
SHAPE_ONLY_VIEWS = ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
# ONNX element types that mean a quantized value -> the precision the graph records for it.
_QUANT_TYPES = {2: "int8", 3: "int8", 4: "int16", 5: "int16", 21: "int4", 22: "int4", 17: "fp8", 18: "fp8", 19: "fp8"}


def quant_precision(elem_type: int) -> str | None:
    """int8/int4/int16/fp8 for ONNX's quantized element types (uint8 counts as int8), else None."""
    return _QUANT_TYPES.get(int(elem_type))


def shape_of(value_info: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value") or dim.dim_value <= 0:
            return None
        dims.append(int(dim.dim_value))
    return tuple(dims)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@dataclass
class GraphWalk:
    """The state of one import: the values by ONNX name, the shapes ONNX inferred and the graph being built."""

    path: Path
    model: onnx.ModelProto
    elem_bytes: int
    values: dict[str, Value] = field(default_factory=dict)
    inferred: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    elem_types: dict[str, int] = field(default_factory=dict)
    without_data: set[str] = field(default_factory=set)
    folded_batchnorm: dict[str, str] = field(default_factory=dict)
    batch: int = 1
    opset: int = 0
    _node_name: str = ""

    def __post_init__(self) -> None:
        self.builder = GraphBuilder(self.path.stem, elem_bytes=self.elem_bytes)
        self.opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 0)
        graph = self.model.graph
        for info in (*graph.input, *graph.value_info, *graph.output):
            self.inferred[info.name] = shape_of(info)
            self.elem_types[info.name] = info.type.tensor_type.elem_type
        for init in graph.initializer:
            self.elem_types[init.name] = init.data_type

    # -- value helpers -------------------------------------------------------
    def _error(self, name: str, node: onnx.NodeProto, message: str) -> GraphError:
        return GraphError(f"{self.path}: node {name!r} ({node.op_type}): {message}", node=name)

    def _input(self, node: onnx.NodeProto, index: int) -> Value | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return self._value(node, node.input[index])

    def _value(self, node: onnx.NodeProto, tensor_name: str) -> Value:
        if tensor_name not in self.values:
            raise self._error(
                self._node_name, node, f"reads {tensor_name!r}, which no supported node or initializer produces"
            )
        return self.values[tensor_name]

    def _present_inputs(self, node: onnx.NodeProto) -> list[Value]:
        return [self._value(node, n) for n in node.input if n]

    def _activation(self, node: onnx.NodeProto, name: str, index: int = 0) -> Activation:
        value = self._input(node, index)
        if not isinstance(value, Activation):
            raise self._error(name, node, f"input {index} must be a computed tensor, but it is a constant")
        return value

    def _constant(self, node: onnx.NodeProto, name: str, index: int, what: str) -> Constant:
        value = self._input(node, index)
        if not isinstance(value, Constant):
            raise self._error(name, node, f"the {what} (input {index}) must be an initializer or a constant")
        return value

    def _constant_ints(self, node: onnx.NodeProto, name: str, index: int, what: str) -> list[int] | None:
        value = self._input(node, index)
        if value is None:
            return None
        if not isinstance(value, Constant) or value.value() is None:
            raise self._error(
                name, node, f"the {what} (input {index}) must be a constant known at import time{self._absent(node)}"
            )
        return [int(v) for v in np.asarray(value.value()).reshape(-1)]

    def _use(self, value: Activation) -> str:
        """The IR tensor name, with its shape set to how this op sees it (views only rename shapes)."""
        if self.builder.shape(value.tensor) != value.shape:
            self.builder.reshape(value.tensor, value.shape)
        return value.tensor

    def _bind(self, node: onnx.NodeProto, name: str, value: Value, output: int = 0) -> None:
        out_name = node.output[output]
        if value.precision is None:
            label = quant_precision(self.elem_types.get(out_name, 0))
            if label is not None:
                value = replace(value, precision=label)
        expected = self.inferred.get(out_name)
        if expected is not None and expected != value.shape:
            raise self._error(
                name,
                node,
                f"the importer derived shape {value.shape} for output {out_name!r} but ONNX shape inference "
                f"gives {expected}; this use of {node.op_type} is not supported",
            )
        self.values[out_name] = value

    def _bind_op(self, node: onnx.NodeProto, name: str, tensor: str) -> None:
        self._bind(node, name, Activation(tensor, self.builder.shape(tensor)))

    def _view(self, node: onnx.NodeProto, name: str, source: Activation, shape: tuple[int, ...]) -> None:
        if math.prod(shape) != math.prod(source.shape):
            raise self._error(name, node, f"cannot view shape {source.shape} as {shape}")
        self._bind(node, name, replace(source, shape=tuple(int(d) for d in shape)))

    def _attrs(self, node: onnx.NodeProto) -> dict[str, Any]:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def _all_constant(self, node: onnx.NodeProto) -> bool:
        present = self._present_inputs(node)
        return bool(present) and all(isinstance(v, Constant) for v in present)

    def _inferred_shape(self, node: onnx.NodeProto, name: str, output: int = 0) -> tuple[int, ...]:
        shape = self.inferred.get(node.output[output])
        if shape is None:
            raise self._error(
                name, node, f"ONNX shape inference gives no concrete shape for output {output}{self._absent(node)}"
            )
        return shape

    def _absent(self, node: onnx.NodeProto) -> str:
        """Why a value is unknown when it derives from an initializer whose data the model does not carry."""
        producers = {out: n for n in self.model.graph.node for out in n.output}
        for start in node.input:
            if not isinstance(self.values.get(start), Constant):
                continue  # an activation's values never decide a shape here
            stack, seen = [start], set()
            while stack:
                tensor = stack.pop()
                if tensor in self.without_data:
                    return (
                        f"; input {start!r} is computed from initializer {tensor!r}, whose data is absent (its "
                        "external data file is missing or it is too large to read), and its values decide this "
                        "node's output shape: import the model with its weight file"
                    )
                if tensor in seen or tensor not in producers or isinstance(self.values.get(tensor), Activation):
                    continue
                seen.add(tensor)
                stack.extend(n for n in producers[tensor].input if n)
        return ""

    def _fold_shape_only(self, node: onnx.NodeProto, name: str) -> None:
        """A node that reads only constants too large to evaluate (weights): its outputs stay constants."""
        precision, quant = None, None
        if node.op_type == "DequantizeLinear":
            precision = quant_precision(self.elem_types.get(node.input[0], 0))
        elif node.op_type in SHAPE_ONLY_VIEWS:  # a view of a quantized weight keeps its precision
            source = self._input(node, 0)
            precision, quant = (source.precision, source.quant) if isinstance(source, Constant) else (None, None)
        for index, out in enumerate(node.output):
            if out:
                shape = self._inferred_shape(node, name, index)
                label = precision or quant_precision(self.elem_types.get(out, 0))
                self.values[out] = Constant(out, shape, precision=label, quant=quant)

    def _constant_weights(self, constants: list[Constant]) -> dict[str, tuple[int, ...]]:
        """Non-scalar constant operands are parameters the hardware must hold: keep them as weights."""
        weights: dict[str, tuple[int, ...]] = {}
        for i, const in enumerate(constants):
            if math.prod(const.shape) > 1:
                weights[f"operand{i}"] = const.shape
        return weights

    def _elementwise(
        self,
        node: onnx.NodeProto,
        name: str,
        fn: str,
        inputs: list[Activation],
        out_shape: tuple[int, ...],
        constants: Sequence[Constant] = (),
        extra_attrs: Mapping[str, Any] | None = None,
    ) -> None:
        tensors = [self._use(a) for a in inputs]
        weights = self._constant_weights(list(constants))
        if inputs[0].shape == out_shape and not weights and not extra_attrs:
            out = self.builder.elementwise(fn, *tensors, name=name)
        else:
            attrs = {"fn": fn, "arity": len(tensors), **(extra_attrs or {})}
            out = self.builder.add_op(
                name, OpKind.ELEMENTWISE, {"N": math.prod(out_shape)}, tensors, out_shape, weights, attrs
            )
        self._bind_op(node, name, out)
