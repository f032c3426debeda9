"""ONNX models become the same graph IR the zoo builds (NCHW activations, ops via GraphBuilder).

The importer walks the ONNX graph once, in its (checker-verified) topological order.
Compute nodes become IR ops; views (Reshape, Transpose, Flatten, ...) only rename an
activation's shape, so no op and no copy is costed for them. Constants (initializers and
Constant nodes) never become activations: an op that mixes an activation with a constant
reads only the activation, and the constant becomes one of its weights. ONNX's own shape
inference runs first and every shape the importer derives is checked against it, so an
op whose semantics the importer gets wrong stops with a message instead of costing the
wrong work.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from dse.graph import PRECISION_BYTES, Graph, GraphBuilder, GraphError, OpKind

# Unary elementwise ONNX ops -> IR elementwise function names.
_UNARY_FUNCTIONS: dict[str, str] = {
    "Relu": "relu",
    "LeakyRelu": "leaky_relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Gelu": "gelu",
    "Erf": "erf",
    "HardSigmoid": "hard_sigmoid",
    "HardSwish": "hard_swish",
    "Sqrt": "sqrt",
    "Exp": "exp",
    "Neg": "neg",
}
# Broadcasting n-ary elementwise ops (Sum is the variadic add of older exporters).
_BINARY_FUNCTIONS: dict[str, str] = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Sum": "add"}
_VIEW_OPS = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout")
_OTHER_OPS = (
    "Conv",
    "Gemm",
    "MatMul",
    "Clip",
    "BatchNormalization",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Softmax",
    "LayerNormalization",
    "Concat",
    "Constant",
    "ConstantOfShape",
)
SUPPORTED_OP_TYPES: tuple[str, ...] = tuple(sorted({*_UNARY_FUNCTIONS, *_BINARY_FUNCTIONS, *_VIEW_OPS, *_OTHER_OPS}))


@dataclass(frozen=True)
class _Activation:
    """An ONNX value computed at run time: the IR tensor that holds it and its shape as ONNX sees it."""

    tensor: str
    shape: tuple[int, ...]


@dataclass
class _Constant:
    """An ONNX value known before run time (initializer, Constant node or folded from them)."""

    name: str
    shape: tuple[int, ...]
    proto: onnx.TensorProto | None = None
    array: np.ndarray | None = None

    def value(self) -> np.ndarray | None:
        if self.array is None and self.proto is not None:
            self.array = numpy_helper.to_array(self.proto)
        return self.array


_Value = _Activation | _Constant
_MATERIALISE_LIMIT = 4096  # elements; larger computed constants keep only their shape


def load_onnx(
    path: str | Path,
    *,
    batch: int | None = None,
    precision: str = "int8",
    symbolic_dims: Mapping[str, int] | None = None,
) -> Graph:
    """Import an ONNX file as a Graph.

    ``batch`` replaces a symbolic or unknown leading (batch) dimension of the graph inputs
    (default 1); a model exported with a fixed batch keeps it, and asking for a different one
    is an error. ``symbolic_dims`` gives values for other symbolic input dimensions by name
    (for example ``{"sequence": 128}``).
    """
    if precision not in PRECISION_BYTES:
        raise GraphError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise GraphError(f"batch must be a positive integer, got {batch!r}")
    model = _read_model(Path(path))
    _fix_input_dims(model, Path(path), batch, dict(symbolic_dims or {}))
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as err:  # onnx raises several types here (InferenceError, RuntimeError)
        raise GraphError(f"{path}: ONNX shape inference failed: {err}") from None
    importer = _Importer(Path(path), inferred, PRECISION_BYTES[precision])
    graph = importer.run()
    graph.meta.update(
        source=str(path),
        format="onnx",
        precision=precision,
        batch=importer.batch,
        opset=importer.opset,
        folded_batchnorm=dict(importer.folded_batchnorm),
    )
    return graph


def _read_model(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise GraphError(f"{path}: no such ONNX file")
    try:
        model = onnx.load(str(path))
    except Exception as err:  # protobuf DecodeError, OSError, external-data errors
        raise GraphError(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") from None
    if not model.graph.node and not model.graph.input:
        raise GraphError(f"{path}: not an ONNX model (no graph nodes or inputs were found)")
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # onnx.checker.ValidationError and friends
        raise GraphError(f"{path}: invalid ONNX model: {err}") from None
    return model


def _fix_input_dims(model: onnx.ModelProto, path: Path, batch: int | None, symbolic: dict[str, int]) -> None:
    """Give every graph input concrete dimensions so shape inference yields concrete shapes everywhere.

    Shapes the exporter recorded for intermediate values and outputs are dropped first: they were
    inferred from the symbolic inputs and would only conflict with the concrete ones.
    """
    del model.graph.value_info[:]
    for output in model.graph.output:
        output.type.tensor_type.ClearField("shape")
    initializers = {t.name for t in model.graph.initializer}
    batch_names: set[str] = set()
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if value.name not in initializers and dims and dims[0].HasField("dim_param"):
            batch_names.add(dims[0].dim_param)
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            raise GraphError(f"{path}: graph input {value.name!r} has no shape; export the model with input shapes")
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                if axis == 0 and batch is not None and dim.dim_value != batch:
                    raise GraphError(
                        f"{path}: graph input {value.name!r} has a fixed batch of {dim.dim_value}, so batch={batch} "
                        f"cannot be applied; export the model with a dynamic batch axis or use batch {dim.dim_value}",
                        node=value.name,
                    )
                continue
            param = dim.dim_param if dim.HasField("dim_param") else ""
            if param in symbolic:
                dim.dim_value = int(symbolic[param])
            elif axis == 0 or (param and param in batch_names):
                dim.dim_value = batch if batch is not None else 1
            else:
                label = f"symbolic dimension {param!r}" if param else "an unknown dimension"
                raise GraphError(
                    f"{path}: graph input {value.name!r} has {label} at axis {axis}; only the batch axis is "
                    f"filled in automatically; give it a value with symbolic_dims={{{param or 'name'!r}: N}} "
                    "or export the model with a fixed size",
                    node=value.name,
                )


def _shape_of(value_info: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value") or dim.dim_value <= 0:
            return None
        dims.append(int(dim.dim_value))
    return tuple(dims)


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def _normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@dataclass
class _Importer:
    path: Path
    model: onnx.ModelProto
    elem_bytes: int
    values: dict[str, _Value] = field(default_factory=dict)
    inferred: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    folded_batchnorm: dict[str, str] = field(default_factory=dict)
    batch: int = 1
    opset: int = 0
    _node_name: str = ""

    def __post_init__(self) -> None:
        self.builder = GraphBuilder(self.path.stem, elem_bytes=self.elem_bytes)
        self.opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 0)
        graph = self.model.graph
        for info in (*graph.input, *graph.value_info, *graph.output):
            self.inferred[info.name] = _shape_of(info)
        self.handlers: dict[str, Callable[[onnx.NodeProto, str], None]] = {
            "Conv": self._conv,
            "Gemm": self._gemm,
            "MatMul": self._matmul,
            "Clip": self._clip,
            "BatchNormalization": self._batchnorm,
            "MaxPool": self._pool,
            "AveragePool": self._pool,
            "GlobalAveragePool": self._global_pool,
            "GlobalMaxPool": self._global_pool,
            "Softmax": self._softmax,
            "LayerNormalization": self._layernorm,
            "Concat": self._concat,
            "Constant": self._constant_node,
            "ConstantOfShape": self._constant_of_shape,
            "Flatten": self._flatten,
            "Reshape": self._reshape,
            "Transpose": self._transpose,
            "Squeeze": self._squeeze,
            "Unsqueeze": self._unsqueeze,
            "Identity": self._alias,
            "Dropout": self._alias,
        }
        for op_type in _UNARY_FUNCTIONS:
            self.handlers[op_type] = self._unary
        for op_type in _BINARY_FUNCTIONS:
            self.handlers[op_type] = self._binary
        assert set(self.handlers) == set(SUPPORTED_OP_TYPES)

    # -- driver ------------------------------------------------------------
    def run(self) -> Graph:
        graph = self.model.graph
        for init in graph.initializer:
            self.values[init.name] = _Constant(init.name, tuple(int(d) for d in init.dims), init)
        for info in graph.input:
            if info.name in self.values:
                continue  # old exporters list initializers as inputs too
            shape = self.inferred[info.name]
            assert shape is not None  # _fix_input_dims made every input dimension concrete
            self.values[info.name] = _Activation(self.builder.input(info.name, shape), shape)
            self.batch = shape[0] if shape else 1
        self._check_supported()
        for index, node in enumerate(graph.node):
            name = node.name or f"{node.op_type}_{index}"
            self._node_name = name
            self.handlers[node.op_type](node, name)
        for info in graph.output:
            value = self.values.get(info.name)
            if isinstance(value, _Activation):
                self.builder.reshape(value.tensor, value.shape)
                self.builder.output(value.tensor)
        return self.builder.build()

    def _check_supported(self) -> None:
        """Refuse the model before any work if a node is not supported, naming every unsupported op type."""
        unsupported: list[tuple[str, str, str]] = []
        for index, node in enumerate(self.model.graph.node):
            if node.domain not in ("", "ai.onnx") or node.op_type not in self.handlers:
                unsupported.append((node.name or f"{node.op_type}_{index}", node.op_type, node.domain))
        if not unsupported:
            return
        name, op_type, domain = unsupported[0]
        in_domain = f" (domain {domain!r})" if domain not in ("", "ai.onnx") else ""
        others = sorted({o for _, o, _ in unsupported[1:]} - {op_type})
        also = f" (the model also uses unsupported {', '.join(others)})" if others else ""
        raise GraphError(
            f"{self.path}: node {name!r} has op type {op_type!r}{in_domain}, which the ONNX importer does not "
            f"support{also}; supported op types: {', '.join(SUPPORTED_OP_TYPES)}",
            node=name,
        )

    # -- value helpers -------------------------------------------------------
    def _error(self, name: str, node: onnx.NodeProto, message: str) -> GraphError:
        return GraphError(f"{self.path}: node {name!r} ({node.op_type}): {message}", node=name)

    def _input(self, node: onnx.NodeProto, index: int) -> _Value | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return self._value(node, node.input[index])

    def _value(self, node: onnx.NodeProto, tensor_name: str) -> _Value:
        if tensor_name not in self.values:
            raise self._error(
                self._node_name, node, f"reads {tensor_name!r}, which no supported node or initializer produces"
            )
        return self.values[tensor_name]

    def _present_inputs(self, node: onnx.NodeProto) -> list[_Value]:
        return [self._value(node, n) for n in node.input if n]

    def _activation(self, node: onnx.NodeProto, name: str, index: int = 0) -> _Activation:
        value = self._input(node, index)
        if not isinstance(value, _Activation):
            raise self._error(name, node, f"input {index} must be a computed tensor, but it is a constant")
        return value

    def _constant(self, node: onnx.NodeProto, name: str, index: int, what: str) -> _Constant:
        value = self._input(node, index)
        if not isinstance(value, _Constant):
            raise self._error(name, node, f"the {what} (input {index}) must be an initializer or a constant")
        return value

    def _constant_ints(self, node: onnx.NodeProto, name: str, index: int, what: str) -> list[int] | None:
        value = self._input(node, index)
        if value is None:
            return None
        if not isinstance(value, _Constant) or value.value() is None:
            raise self._error(name, node, f"the {what} (input {index}) must be a constant known at import time")
        return [int(v) for v in np.asarray(value.value()).reshape(-1)]

    def _use(self, value: _Activation) -> str:
        """The IR tensor name, with its shape set to how this op sees it (views only rename shapes)."""
        if self.builder.shape(value.tensor) != value.shape:
            self.builder.reshape(value.tensor, value.shape)
        return value.tensor

    def _bind(self, node: onnx.NodeProto, name: str, value: _Value, output: int = 0) -> None:
        out_name = node.output[output]
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
        self._bind(node, name, _Activation(tensor, self.builder.shape(tensor)))

    def _view(self, node: onnx.NodeProto, name: str, source: _Activation, shape: tuple[int, ...]) -> None:
        if math.prod(shape) != math.prod(source.shape):
            raise self._error(name, node, f"cannot view shape {source.shape} as {shape}")
        self._bind(node, name, _Activation(source.tensor, tuple(int(d) for d in shape)))

    def _attrs(self, node: onnx.NodeProto) -> dict[str, Any]:
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def _all_constant(self, node: onnx.NodeProto) -> bool:
        present = self._present_inputs(node)
        return bool(present) and all(isinstance(v, _Constant) for v in present)

    def _fold(self, node: onnx.NodeProto, name: str, compute: Callable[[list[np.ndarray]], np.ndarray] | None) -> None:
        """Evaluate a node whose inputs are all constants; its output stays a constant."""
        arrays = [v.value() for v in self._present_inputs(node) if isinstance(v, _Constant)]
        array = None
        if compute is not None and all(a is not None for a in arrays):
            array = np.asarray(compute(arrays))  # type: ignore[arg-type]
        shape = tuple(array.shape) if array is not None else self.inferred.get(node.output[0])
        if shape is None:
            raise self._error(name, node, "cannot work out the shape of this constant expression")
        self.values[node.output[0]] = _Constant(node.output[0], tuple(int(d) for d in shape), array=array)

    def _constant_weights(self, constants: list[_Constant]) -> dict[str, tuple[int, ...]]:
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
        inputs: list[_Activation],
        out_shape: tuple[int, ...],
        constants: Sequence[_Constant] = (),
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

    # -- compute ops ---------------------------------------------------------
    def _spatial(
        self,
        node: onnx.NodeProto,
        name: str,
        x: _Activation,
        kernel: list[int],
        attrs: dict[str, Any],
        ceil_mode: bool = False,
    ) -> tuple[_Activation, list[int], list[int], list[int], list[int], list[int]]:
        """Normalise a 1-D or 2-D window op to 2-D: (x as NCHW, kernel, strides, pads tlbr, dilations, out HW)."""
        spatial_rank = len(x.shape) - 2
        if spatial_rank not in (1, 2) or len(kernel) != spatial_rank:
            raise self._error(
                name, node, f"only 1-D and 2-D windows are supported (input shape {x.shape}, kernel {kernel})"
            )
        strides = list(attrs.get("strides", [1] * spatial_rank))
        dilations = list(attrs.get("dilations", [1] * spatial_rank))
        sizes = list(x.shape[2:])
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            begins, ends = [], []
            for size, k, s, d in zip(sizes, kernel, strides, dilations):
                total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
                small, large = total // 2, total - total // 2
                begins.append(small if auto_pad == "SAME_UPPER" else large)
                ends.append(large if auto_pad == "SAME_UPPER" else small)
        elif auto_pad == "VALID":
            begins, ends = [0] * spatial_rank, [0] * spatial_rank
        else:
            pads = list(attrs.get("pads", [0] * 2 * spatial_rank))
            begins, ends = pads[:spatial_rank], pads[spatial_rank:]
        outs = []
        for size, k, s, d, lo, hi in zip(sizes, kernel, strides, dilations, begins, ends):
            span = size + lo + hi - ((k - 1) * d + 1)
            out = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (out - 1) * s >= size + lo:
                out -= 1  # the last window may not start inside the end padding
            outs.append(out)
        if spatial_rank == 1:
            x = _Activation(x.tensor, (x.shape[0], x.shape[1], 1, x.shape[2]))
            kernel, strides, dilations = [1, *kernel], [1, *strides], [1, *dilations]
            begins, ends, outs = [0, *begins], [0, *ends], [1, *outs]
        return x, list(kernel), strides, [begins[0], begins[1], ends[0], ends[1]], dilations, outs

    def _conv(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        weight = self._constant(node, name, 1, "weight")
        attrs = self._attrs(node)
        group = int(attrs.get("group", 1))
        kernel = list(attrs.get("kernel_shape", weight.shape[2:]))
        x2, kernel, strides, pads, dilations, _ = self._spatial(node, name, x, kernel, attrs)
        if dilations[0] != dilations[1]:
            raise self._error(name, node, f"different dilations per axis ({dilations}) are not supported")
        channels = x2.shape[1]
        if weight.shape[1] * group != channels:
            raise self._error(
                name, node, f"weight shape {weight.shape} with group={group} does not match {channels} input channels"
            )
        out = self.builder.conv(
            self._use(x2),
            weight.shape[0],
            (kernel[0], kernel[1]),
            stride=(strides[0], strides[1]),
            pad=(pads[0], pads[1], pads[2], pads[3]),
            groups=group,
            name=name,
            bias=self._input(node, 2) is not None,
            dilation=dilations[0],
        )
        shape = self.builder.shape(out)
        if len(x.shape) == 3:
            shape = (shape[0], shape[1], shape[3])
        self._bind(node, name, _Activation(out, shape))

    def _gemm(self, node: onnx.NodeProto, name: str) -> None:
        attrs = self._attrs(node)
        a = self._activation(node, name)
        if len(a.shape) != 2:
            raise self._error(name, node, f"input A must be 2-D, got shape {a.shape}")
        if attrs.get("transA", 0):
            a = _Activation(a.tensor, (a.shape[1], a.shape[0]))
        trans_b = bool(attrs.get("transB", 0))
        b = self._input(node, 1)
        c = self._input(node, 2)
        if isinstance(c, _Activation):
            raise self._error(name, node, "a computed bias C is not supported; C must be an initializer")
        if isinstance(b, _Constant):
            out_features = b.shape[0] if trans_b else b.shape[1]
            out = self.builder.linear(self._use(a), out_features, name=name, bias=c is not None)
        else:
            assert b is not None
            out = self.builder.matmul(self._use(a), self._use(b), name=name, transpose_b=trans_b)
        self._bind_op(node, name, out)

    def _matmul(self, node: onnx.NodeProto, name: str) -> None:
        a, b = self._input(node, 0), self._input(node, 1)
        if isinstance(a, _Constant) and isinstance(b, _Constant):
            self._fold(node, name, lambda xs: xs[0] @ xs[1])
            return
        if not isinstance(a, _Activation):
            raise self._error(name, node, "a constant left operand (W @ x) is not supported; export it as x @ W^T")
        assert b is not None
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise self._error(name, node, f"1-D operands are not supported (shapes {a.shape} and {b.shape})")
        if isinstance(b, _Constant):
            if len(b.shape) != 2:
                raise self._error(name, node, f"a constant right operand must be 2-D, got shape {b.shape}")
            out = self.builder.linear(self._use(a), b.shape[1], name=name, bias=False)
        else:
            batch_shape = _broadcast(a.shape[:-2], b.shape[:-2])
            if batch_shape == a.shape[:-2]:
                out = self.builder.matmul(self._use(a), self._use(b), name=name)
            else:  # b carries more batch dimensions than a: a is broadcast
                m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
                if b.shape[-2] != k:
                    raise self._error(name, node, f"inner dimensions {k} and {b.shape[-2]} differ")
                out = self.builder.add_op(
                    name,
                    OpKind.MATMUL,
                    {"B": math.prod(batch_shape), "M": m, "N": n, "K": k},
                    [self._use(a), self._use(b)],
                    (*batch_shape, m, n),
                    None,
                    {"transpose_b": False},
                )
        self._bind_op(node, name, out)

    def _unary(self, node: onnx.NodeProto, name: str) -> None:
        if self._all_constant(node):
            numpy_fns = {"Relu": lambda v: np.maximum(v, 0), "Sqrt": np.sqrt, "Exp": np.exp, "Neg": np.negative}
            fn = numpy_fns.get(node.op_type)
            self._fold(node, name, (lambda xs: fn(xs[0])) if fn else None)
            return
        x = self._activation(node, name)
        self._elementwise(node, name, _UNARY_FUNCTIONS[node.op_type], [x], x.shape)

    def _binary(self, node: onnx.NodeProto, name: str) -> None:
        if self._all_constant(node):
            numpy_fns = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power}
            fn = numpy_fns.get(node.op_type, np.add)
            self._fold(node, name, lambda xs: functools.reduce(fn, xs))
            return
        operands = self._present_inputs(node)
        activations = [v for v in operands if isinstance(v, _Activation)]
        constants = [v for v in operands if isinstance(v, _Constant)]
        out_shape = _broadcast(*(v.shape for v in operands))
        self._elementwise(node, name, _BINARY_FUNCTIONS[node.op_type], activations, out_shape, constants)

    def _clip(self, node: onnx.NodeProto, name: str) -> None:
        if self._all_constant(node):
            self._fold(node, name, None)
            return
        x = self._activation(node, name)
        attrs = self._attrs(node)
        bounds = []
        for index, key in ((1, "min"), (2, "max")):
            value = self._input(node, index)
            if isinstance(value, _Constant) and value.value() is not None:
                bounds.append(float(np.asarray(value.value()).reshape(-1)[0]))
            else:
                bounds.append(attrs.get(key))
        fn = "relu6" if bounds == [0.0, 6.0] else "clip"
        self._elementwise(node, name, fn, [x], x.shape)

    def _batchnorm(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        scale = self._input(node, 1)
        channels = scale.shape[0] if scale is not None and len(scale.shape) == 1 else None
        index = next((i for i, op in enumerate(self.builder.ops) if x.tensor in op.outputs), None)
        if index is not None and len(x.shape) >= 2 and x.shape[1] == channels:
            op = self.builder.ops[index]
            conv_like = op.kind is OpKind.CONV and op.dims["K"] == channels
            linear_like = op.kind is OpKind.MATMUL and bool(op.weights) and len(x.shape) == 2
            if conv_like or linear_like:
                # Inference-time BN is a per-channel scale and shift: the scale folds into the weights and
                # the shift becomes the bias, as every inference compiler (and the zoo) does.
                bias = f"{op.name}:bias"
                if bias not in op.weights:
                    self.builder.tensor(bias, (channels,), "weight")
                    self.builder.ops[index] = replace(op, weights=(*op.weights, bias))
                self.folded_batchnorm[name] = op.name
                self._bind(node, name, x)
                return
        self._elementwise(node, name, "batchnorm", [x], x.shape)

    def _pool(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        attrs = self._attrs(node)
        mode = "max" if node.op_type == "MaxPool" else "avg"
        ceil_mode = bool(attrs.get("ceil_mode", 0))
        if len(node.output) > 1 and node.output[1]:
            raise self._error(name, node, "the Indices output of MaxPool is not supported")
        x2, kernel, strides, pads, dilations, outs = self._spatial(
            node, name, x, list(attrs["kernel_shape"]), attrs, ceil_mode
        )
        if dilations != [1, 1]:
            raise self._error(name, node, f"dilated pooling ({dilations}) is not supported")
        square = kernel[0] == kernel[1] and strides[0] == strides[1] and len(set(pads)) == 1
        if square and not ceil_mode:
            out = self.builder.pool(self._use(x2), kernel[0], strides[0], pads[0], mode=mode, name=name)
        else:
            n, c, h, w = x2.shape
            out = self.builder.add_op(
                name,
                OpKind.POOL,
                {"N": n, "C": c, "H": h, "W": w, "P": outs[0], "Q": outs[1], "R": kernel[0], "S": kernel[1]},
                [self._use(x2)],
                (n, c, outs[0], outs[1]),
                None,
                {"mode": mode, "stride": tuple(strides), "pad": tuple(pads), "ceil_mode": ceil_mode},
            )
        self._bind_pooled(node, name, x, out)

    def _global_pool(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        if len(x.shape) not in (3, 4):
            raise self._error(name, node, f"only 1-D and 2-D inputs are supported, got shape {x.shape}")
        x2 = x if len(x.shape) == 4 else _Activation(x.tensor, (x.shape[0], x.shape[1], 1, x.shape[2]))
        mode = "max" if node.op_type == "GlobalMaxPool" else "avg"
        out = self.builder.global_pool(self._use(x2), mode=mode, name=name)
        self._bind_pooled(node, name, x, out)

    def _bind_pooled(self, node: onnx.NodeProto, name: str, x: _Activation, out: str) -> None:
        shape = self.builder.shape(out)
        if len(x.shape) == 3:
            shape = (shape[0], shape[1], shape[3])
        self._bind(node, name, _Activation(out, shape))

    def _softmax(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        rank = len(x.shape)
        axis = _normalize_axis(int(self._attrs(node).get("axis", -1 if self.opset >= 13 else 1)), rank)
        if axis == rank - 1:
            out = self.builder.softmax(self._use(x), name=name)
        else:
            if self.opset >= 13:
                length = x.shape[axis]
            else:  # opset < 13 coerces the input to 2-D at ``axis``
                length = math.prod(x.shape[axis:])
            rows = math.prod(x.shape) // length
            out = self.builder.add_op(
                name, OpKind.SOFTMAX, {"R": rows, "L": length}, [self._use(x)], x.shape, None, {"axis": axis}
            )
        self._bind_op(node, name, out)

    def _layernorm(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        rank = len(x.shape)
        axis = _normalize_axis(int(self._attrs(node).get("axis", -1)), rank)
        if any(o for o in node.output[1:]):
            raise self._error(name, node, "the Mean and InvStdDev outputs are not supported")
        if axis == rank - 1:
            out = self.builder.layernorm(self._use(x), name=name)
        else:
            normalized = x.shape[axis:]
            out = self.builder.add_op(
                name,
                OpKind.LAYERNORM,
                {"R": math.prod(x.shape[:axis]), "L": math.prod(normalized)},
                [self._use(x)],
                x.shape,
                {"gamma": normalized, "beta": normalized},
                {"axis": axis},
            )
        self._bind_op(node, name, out)

    def _concat(self, node: onnx.NodeProto, name: str) -> None:
        axis_attr = int(self._attrs(node)["axis"])
        if self._all_constant(node):
            self._fold(node, name, lambda xs: np.concatenate(xs, axis=axis_attr))
            return
        operands = self._present_inputs(node)
        rank = len(operands[0].shape)
        axis = _normalize_axis(axis_attr, rank)
        out_shape = list(operands[0].shape)
        out_shape[axis] = sum(v.shape[axis] for v in operands)
        activations = [v for v in operands if isinstance(v, _Activation)]
        constants = [v for v in operands if isinstance(v, _Constant)]
        tensors = [self._use(a) for a in activations]
        # Concatenation moves no data in a well-placed buffer; an arity-n identity keeps every DAG edge.
        out = self.builder.add_op(
            name,
            OpKind.ELEMENTWISE,
            {"N": math.prod(out_shape)},
            tensors,
            tuple(out_shape),
            self._constant_weights(constants),
            {"fn": "identity", "arity": len(tensors), "axis": axis},
        )
        self._bind_op(node, name, out)

    def _constant_node(self, node: onnx.NodeProto, name: str) -> None:
        attrs = self._attrs(node)
        if "value" in attrs:
            array = numpy_helper.to_array(attrs["value"])
        elif "value_float" in attrs or "value_int" in attrs:
            array = np.asarray(attrs.get("value_float", attrs.get("value_int")))
        elif "value_floats" in attrs or "value_ints" in attrs:
            array = np.asarray(attrs.get("value_floats", attrs.get("value_ints")))
        else:
            raise self._error(name, node, f"only tensor and numeric constants are supported, got {sorted(attrs)}")
        self.values[node.output[0]] = _Constant(node.output[0], tuple(int(d) for d in array.shape), array=array)

    def _constant_of_shape(self, node: onnx.NodeProto, name: str) -> None:
        shape = self._constant_ints(node, name, 0, "shape")
        assert shape is not None
        fill = self._attrs(node).get("value")
        fill_array = numpy_helper.to_array(fill) if fill is not None else np.zeros(1, dtype=np.float32)
        # Weight-stripped models rebuild every weight this way: only small constants are materialised.
        array = np.full(shape, fill_array.reshape(-1)[0]) if math.prod(shape) <= _MATERIALISE_LIMIT else None
        self.values[node.output[0]] = _Constant(node.output[0], tuple(shape), array=array)

    # -- views ---------------------------------------------------------------
    def _view_or_fold(
        self, node: onnx.NodeProto, name: str, new_shape: Callable[[tuple[int, ...]], tuple[int, ...]]
    ) -> None:
        source = self._value(node, node.input[0])
        if isinstance(source, _Constant):
            self._fold(node, name, lambda xs: np.reshape(xs[0], new_shape(tuple(xs[0].shape))))
            return
        self._view(node, name, source, new_shape(source.shape))

    def _alias(self, node: onnx.NodeProto, name: str) -> None:
        # Dropout's optional mask output is left unbound: inference graphs never read it.
        self._view_or_fold(node, name, lambda shape: shape)

    def _flatten(self, node: onnx.NodeProto, name: str) -> None:
        axis_attr = int(self._attrs(node).get("axis", 1))

        def flat(shape: tuple[int, ...]) -> tuple[int, ...]:
            axis = _normalize_axis(axis_attr, len(shape))
            return (math.prod(shape[:axis]), math.prod(shape[axis:]))

        self._view_or_fold(node, name, flat)

    def _reshape(self, node: onnx.NodeProto, name: str) -> None:
        target = self._constant_ints(node, name, 1, "target shape")
        assert target is not None
        allow_zero = bool(self._attrs(node).get("allowzero", 0))

        def reshaped(shape: tuple[int, ...]) -> tuple[int, ...]:
            dims = [shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(target)]
            if dims.count(-1) == 1:
                known = math.prod(d for d in dims if d != -1)
                dims[dims.index(-1)] = math.prod(shape) // known if known else 0
            if any(d <= 0 for d in dims) or math.prod(dims) != math.prod(shape):
                raise self._error(name, node, f"cannot reshape {shape} to {target}")
            return tuple(dims)

        self._view_or_fold(node, name, reshaped)

    def _transpose(self, node: onnx.NodeProto, name: str) -> None:
        perm_attr = self._attrs(node).get("perm")
        source = self._value(node, node.input[0])
        perm = list(perm_attr) if perm_attr is not None else list(reversed(range(len(source.shape))))
        if isinstance(source, _Constant):
            self._fold(node, name, lambda xs: np.transpose(xs[0], perm))
            return
        self._view(node, name, source, tuple(source.shape[p] for p in perm))

    def _axes(self, node: onnx.NodeProto, name: str) -> list[int] | None:
        if self.opset >= 13:
            return self._constant_ints(node, name, 1, "axes")
        axes = self._attrs(node).get("axes")
        return list(axes) if axes is not None else None

    def _squeeze(self, node: onnx.NodeProto, name: str) -> None:
        axes = self._axes(node, name)

        def squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
            drop = {_normalize_axis(a, len(shape)) for a in axes} if axes is not None else None
            if drop is None:
                return tuple(d for d in shape if d != 1)
            if any(shape[a] != 1 for a in drop):
                raise self._error(name, node, f"cannot squeeze axes {sorted(drop)} of shape {shape}")
            return tuple(d for i, d in enumerate(shape) if i not in drop)

        self._view_or_fold(node, name, squeezed)

    def _unsqueeze(self, node: onnx.NodeProto, name: str) -> None:
        axes = self._axes(node, name)
        if axes is None:
            raise self._error(name, node, "Unsqueeze needs axes")

        def unsqueezed(shape: tuple[int, ...]) -> tuple[int, ...]:
            rank = len(shape) + len(axes)
            inserted = {_normalize_axis(a, rank) for a in axes}
            rest = iter(shape)
            return tuple(1 if i in inserted else next(rest) for i in range(rank))

        self._view_or_fold(node, name, unsqueezed)
