"""An ONNX model run in numpy on a whole batch, its GEMM operands passing through a number format.

``OnnxNet`` executes the model's nodes in order (MLPs and CNNs as torch or Keras export them: Gemm/MatMul/Conv,
element-wise activations and arithmetic, pooling, Softmax, LayerNormalization, BatchNormalization and the
shape plumbing between them). With a ``Quantizer`` every Gemm/MatMul/Conv rounds its operands first: weights
(initializers) per output channel, activations per tensor; the contraction runs on the rounded values and is
scaled back. Anything else raises QuantError naming the node and its op type. Samples are the batch axis, so
every op is vectorised over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hwmodels.accuracy.ap_fixed import QuantError

GEMM_OPS = ("Gemm", "MatMul", "Conv")
UNARY = {
    "Relu": lambda v, a: np.maximum(v, 0),
    "LeakyRelu": lambda v, a: np.where(v >= 0, v, a.get("alpha", 0.01) * v),
    "Sigmoid": lambda v, a: 1 / (1 + np.exp(-v)),
    "Tanh": lambda v, a: np.tanh(v),
    "HardSigmoid": lambda v, a: np.clip(a.get("alpha", 0.2) * v + a.get("beta", 0.5), 0, 1),
    "HardSwish": lambda v, a: v * np.clip(v / 6 + 0.5, 0, 1),
    "Exp": lambda v, a: np.exp(v),
    "Sqrt": lambda v, a: np.sqrt(v),
    "Neg": lambda v, a: -v,
    "Abs": lambda v, a: np.abs(v),
    "Erf": lambda v, a: _erf(v),
    "Identity": lambda v, a: v,
    "Dropout": lambda v, a: v,
}
BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Pow": np.power,
}
SHAPE_OPS = ("Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Reshape", "Flatten", "Transpose")
OTHER_OPS = (
    "Gelu",
    "Clip",
    "Softmax",
    "LogSoftmax",
    "LayerNormalization",
    "BatchNormalization",
    "ReduceMean",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Constant",
)
SUPPORTED = (*GEMM_OPS, *UNARY, *BINARY, *SHAPE_OPS, *OTHER_OPS)


class Quantizer(Protocol):
    """What a precision does to a GEMM's operands and to stored tensors."""

    def activation(self, key: str, x: np.ndarray) -> tuple[np.ndarray, float]:
        """(rounded values, scale) of a per-tensor activation operand; ``key`` names node and input."""

    def weight(self, key: str, w: np.ndarray, channel_axis: int) -> tuple[np.ndarray, np.ndarray]:
        """(rounded values, 1-D per-output-channel scales) of a weight."""

    def bias(self, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """The bias as the hardware adds it to an accumulator of scale ``scale`` (per channel)."""

    def accumulate(self, y: np.ndarray) -> np.ndarray:
        """The contraction's accumulator precision (exact for integers, float32 for floats)."""

    def store(self, y: np.ndarray) -> np.ndarray:
        """An op's output as it is stored between ops."""


@dataclass
class Node:
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


def _erf(v: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(v)


class OnnxNet:
    """The nodes, initializers and the one data input of an ONNX model, runnable on a batch of samples."""

    def __init__(self, path: str | Path):
        import onnx
        from onnx import numpy_helper

        self.path = Path(path)
        model = onnx.load(str(self.path))
        self.inits: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.nodes: list[Node] = []
        for i, n in enumerate(model.graph.node):
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            name = n.name or f"{n.op_type}_{i}"
            if n.op_type == "Constant":
                value = attrs.get("value")
                if value is None:
                    raise QuantError(f"{self.path}: Constant node {name!r} without a tensor value is not emulated")
                self.inits[n.output[0]] = numpy_helper.to_array(value)
                continue
            self.nodes.append(Node(n.op_type, name, list(n.input), list(n.output), attrs))
        unknown = sorted({f"{n.name} ({n.op})" for n in self.nodes if n.op not in SUPPORTED})
        if unknown:
            raise QuantError(
                f"{self.path}: node {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''} is not emulated "
                f"for the precision accuracy metrics; emulated op types: {', '.join(sorted(SUPPORTED))}"
            )
        inputs = [v for v in model.graph.input if v.name not in self.inits]
        if len(inputs) != 1:
            raise QuantError(f"{self.path}: the model has {len(inputs)} data inputs; accuracy needs exactly one")
        self.input_name = inputs[0].name
        dims = inputs[0].type.tensor_type.shape.dim
        self.input_shape = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in dims)
        self.output_name = model.graph.output[0].name
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(self.input_shape[1:])

    def gemm_nodes(self) -> list[str]:
        return [n.name for n in self.nodes if n.op in GEMM_OPS]

    def run(self, x: np.ndarray, quant: Quantizer | None = None, amax: dict[str, float] | None = None) -> np.ndarray:
        """The model's first output for inputs ``x`` (N, *sample shape); float64 when ``quant`` is None.

        ``amax``, when given, collects the largest |value| of every activation operand (calibration)."""
        env: dict[str, Any] = dict(self.inits)
        env[self.input_name] = np.asarray(x, dtype=np.float64).reshape(x.shape[0], *self.sample_shape)
        for node in self.nodes:
            args = [env.get(i) if i else None for i in node.inputs]
            out = self._node(node, args, quant, amax)
            if node.op not in SHAPE_OPS and quant is not None and isinstance(out, np.ndarray):
                out = quant.store(out)
            env[node.outputs[0]] = out
        return np.asarray(env[self.output_name], dtype=np.float64).reshape(x.shape[0], -1)

    # ------------------------------------------------------------------------------------------------ ops

    def _operand(self, node: Node, index: int, value: np.ndarray, quant, amax, channel_axis: int | None):
        """(values, scale) of one GEMM operand: weights per channel, activations per tensor."""
        key = f"{node.name}:{index}"
        if node.inputs[index] in self.inits:
            if quant is None:
                return value, np.ones(1)
            return quant.weight(key, value, channel_axis)
        if amax is not None:
            amax[key] = max(amax.get(key, 0.0), float(np.max(np.abs(value), initial=0.0)))
        if quant is None:
            return value, 1.0
        return quant.activation(key, value)

    def _gemm(self, node: Node, args: list, quant, amax) -> np.ndarray:
        """Gemm / MatMul / Conv on rounded operands, the accumulator scaled back per output channel."""
        a = node.attrs
        accumulate = quant.accumulate if quant is not None else None
        if node.op == "Conv":
            lv, ls = self._operand(node, 0, args[0], quant, amax, None)
            rv, rs = self._operand(node, 1, args[1], quant, amax, 0)
            y = conv(lv, rv, a, accumulate)
            channel: tuple[int, ...] = (1, -1, *([1] * (y.ndim - 2)))
        else:
            lhs, rhs = args[0], args[1]
            if node.op == "Gemm":
                lhs = lhs.reshape(lhs.shape[0], -1) if lhs.ndim > 2 else lhs
                lhs = lhs.T if a.get("transA", 0) else lhs
                rhs = (rhs.T if a.get("transB", 0) else rhs) * a.get("alpha", 1.0)
            lv, ls = self._operand(node, 0, lhs, quant, amax, None)
            rv, rs = self._operand(node, 1, rhs, quant, amax, -1 if np.ndim(rhs) == 2 else None)
            y = lv @ rv
            y = accumulate(y) if accumulate is not None else y
            channel = (-1,)
        scale = np.asarray(ls, dtype=np.float64).reshape(-1) * np.asarray(rs, dtype=np.float64).reshape(-1)
        y = y * (scale.reshape(channel) if scale.size > 1 else scale[0])
        bias = args[2] if len(args) > 2 and args[2] is not None else None
        if bias is None:
            return y
        bias = np.asarray(bias, dtype=np.float64) * (a.get("beta", 1.0) if node.op == "Gemm" else 1.0)
        per_channel = bias.size == y.shape[1 if node.op == "Conv" else -1]
        if per_channel:
            bias = bias.reshape(-1)
            if quant is not None:
                bias = quant.bias(bias, np.broadcast_to(scale, bias.shape))
            bias = bias.reshape(channel)
        elif quant is not None:
            bias = quant.bias(bias, np.broadcast_to(scale[0], bias.shape)) if scale.size == 1 else bias
        return y + bias

    def _node(self, node: Node, args: list, quant, amax) -> Any:
        op, a = node.op, node.attrs
        if op in GEMM_OPS:
            return self._gemm(node, args, quant, amax)
        if op in UNARY:
            return UNARY[op](args[0], a)
        if op in BINARY:
            return BINARY[op](args[0], args[1])
        if op == "Gelu":
            v = args[0]
            if a.get("approximate", "none") == "tanh":
                return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v**3)))
            return 0.5 * v * (1 + _erf(v / np.sqrt(2)))
        if op == "Clip":
            lo = args[1] if len(args) > 1 and args[1] is not None else a.get("min", -np.inf)
            hi = args[2] if len(args) > 2 and args[2] is not None else a.get("max", np.inf)
            return np.clip(args[0], lo, hi)
        if op in ("Softmax", "LogSoftmax"):
            v = args[0]
            axis = a.get("axis", -1 if self.opset >= 13 else 1)
            shifted = v - v.max(axis=axis, keepdims=True)
            e = np.exp(shifted)
            return e / e.sum(axis=axis, keepdims=True) if op == "Softmax" else shifted - np.log(e.sum(axis, None, True))
        if op == "LayerNormalization":
            v, axis = args[0], a.get("axis", -1)
            axes = tuple(range(axis % v.ndim, v.ndim))
            mean = v.mean(axis=axes, keepdims=True)
            var = ((v - mean) ** 2).mean(axis=axes, keepdims=True)
            out = (v - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * args[1]
            return out + args[2] if len(args) > 2 and args[2] is not None else out
        if op == "BatchNormalization":
            v, scale, b, mean, var = args[:5]
            shape = (1, -1, *([1] * (v.ndim - 2)))
            inv = scale / np.sqrt(var + a.get("epsilon", 1e-5))
            return (v - mean.reshape(shape)) * inv.reshape(shape) + b.reshape(shape)
        if op == "ReduceMean":
            axes = a.get("axes", None if len(args) < 2 or args[1] is None else tuple(int(i) for i in args[1]))
            return args[0].mean(axis=None if axes is None else tuple(axes), keepdims=bool(a.get("keepdims", 1)))
        if op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
            return pool(node, args[0])
        return shape_op(node, args, self.input_shape[0] if self.input_shape else 1)


def conv(x: np.ndarray, w: np.ndarray, a: dict[str, Any], accumulate=None) -> np.ndarray:
    """ONNX Conv (N, C, *spatial) x (K, C/group, *kernel): explicit pads, strides, dilations, groups."""
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET", "VALID", b"VALID"):
        raise QuantError(f"Conv auto_pad={a['auto_pad']!r} is not emulated; export with explicit pads")
    dims = x.ndim - 2
    strides = a.get("strides", [1] * dims)
    dil = a.get("dilations", [1] * dims)
    pads = a.get("pads", [0] * (2 * dims))
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + dims]) for i in range(dims)])
    kernel = w.shape[2:]
    span = [dil[i] * (kernel[i] - 1) + 1 for i in range(dims)]
    win = np.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + dims)))
    index = (slice(None), slice(None), *(slice(None, None, s) for s in strides), *(slice(None, None, d) for d in dil))
    win = win[index]  # (N, C, *out, *kernel)
    groups = a.get("group", 1)
    n, c = x.shape[:2]
    out_sp = win.shape[2 : 2 + dims]
    k = w.shape[0]
    cg, kg = c // groups, k // groups
    outs = []
    for g in range(groups):
        patch = win[:, g * cg : (g + 1) * cg]  # (N, cg, *out, *kernel)
        patch = np.moveaxis(patch, 1, 1 + dims).reshape(n * int(np.prod(out_sp)), -1)  # (N*out, cg*kernel)
        wk = w[g * kg : (g + 1) * kg].reshape(kg, -1)
        y = patch @ wk.T
        outs.append(accumulate(y) if accumulate is not None else y)
    y = np.concatenate(outs, axis=1).reshape(n, *out_sp, k)
    return np.moveaxis(y, -1, 1)


def pool(node: Node, x: np.ndarray) -> np.ndarray:
    """Max / average pooling over the spatial axes of (N, C, *spatial), ONNX semantics (floor mode)."""
    a, dims = node.attrs, x.ndim - 2
    axes = tuple(range(2, 2 + dims))
    if node.op.startswith("Global"):
        return (x.max if node.op == "GlobalMaxPool" else x.mean)(axis=axes, keepdims=True)
    if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1] * dims)):
        raise QuantError(f"{node.op} {node.name!r}: ceil_mode / dilations are not emulated")
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET", "VALID", b"VALID"):
        raise QuantError(f"{node.op} {node.name!r}: auto_pad={a['auto_pad']!r} is not emulated; use explicit pads")
    kernel = a["kernel_shape"]
    strides = a.get("strides", [1] * dims)
    pads = a.get("pads", [0] * (2 * dims))
    fill = -np.inf if node.op == "MaxPool" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + dims]) for i in range(dims)], constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=axes)
    win = win[(slice(None), slice(None), *(slice(None, None, s) for s in strides))]
    kaxes = tuple(range(2 + dims, 2 + 2 * dims))
    if node.op == "MaxPool":
        return win.max(axis=kaxes)
    total = win.sum(axis=kaxes)
    if a.get("count_include_pad", 0) or not any(pads):
        return total / float(np.prod(kernel))
    ones = np.pad(np.ones(x.shape[2:]), [(pads[i], pads[i + dims]) for i in range(dims)])
    counts = np.lib.stride_tricks.sliding_window_view(ones, kernel)[tuple(slice(None, None, s) for s in strides)]
    return total / counts.sum(axis=tuple(range(dims, 2 * dims)))


def shape_op(node: Node, args: list, declared_batch: int) -> Any:
    """Shape plumbing: exact, on whatever batch the data has."""
    op, a, v = node.op, node.attrs, args[0]
    if op == "Shape":
        return np.array(v.shape, dtype=np.int64)
    if op == "Cast":
        return v if isinstance(v, np.ndarray) and v.dtype.kind == "f" else np.asarray(v)
    if op == "Gather":
        return np.take(v, np.asarray(args[1]).astype(np.int64), axis=a.get("axis", 0))
    if op in ("Unsqueeze", "Squeeze"):
        axes = a.get("axes", None if len(args) < 2 or args[1] is None else [int(i) for i in args[1]])
        if op == "Squeeze":
            return np.squeeze(v, axis=None if axes is None else tuple(axes))
        for ax in sorted(i % (np.ndim(v) + len(axes)) for i in axes):
            v = np.expand_dims(v, ax)
        return v
    if op == "Concat":
        return np.concatenate([np.asarray(t) for t in args], axis=a.get("axis", 0))
    if op == "Slice":
        starts, ends = args[1], args[2]
        axes = args[3] if len(args) > 3 and args[3] is not None else range(len(starts))
        steps = args[4] if len(args) > 4 and args[4] is not None else [1] * len(starts)
        index = [slice(None)] * np.ndim(v)
        for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
            index[int(ax)] = slice(int(s), int(e), int(st))
        return np.asarray(v)[tuple(index)]
    if op == "Flatten":
        axis = a.get("axis", 1) % max(1, v.ndim)
        return v.reshape(int(np.prod(v.shape[:axis])), -1)
    if op == "Transpose":
        return np.transpose(v, a.get("perm"))
    target = [int(t) for t in args[1]]  # Reshape
    target = [v.shape[i] if t == 0 and not a.get("allowzero", 0) else t for i, t in enumerate(target)]
    if target and target[0] == declared_batch and v.shape[0] != declared_batch:
        target[0] = v.shape[0]  # a shape written for the exported batch: keep the data's batch
    return v.reshape(target)
