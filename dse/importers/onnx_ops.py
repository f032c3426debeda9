"""The per-op-type converters: each ONNX node becomes IR ops, a view of an activation or a folded constant.

Compute nodes become IR ops; views (Reshape, Transpose, Flatten, ...) only rename an activation's
shape, so no op and no copy is costed for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.graph import Graph, GraphError, OpKind
from dse.importers.onnx_contrib import CONTRIB_OPS, ORT_STANDARD_OPS, ContribOps
from dse.importers.onnx_detection import DATA_DEPENDENT_OPS, DETECTION_OPS, DetectionOps
from dse.importers.onnx_ops_more import (
    MORE_DATA_MOVEMENT,
    MORE_NARY,
    MORE_OTHER,
    MORE_REDUCE,
    MORE_UNARY,
    MORE_VIEWS,
    MoreOps,
)
from dse.importers.onnx_qonnx import QONNX_OPS, QonnxOps
from dse.importers.onnx_quant import QUANT_OPERANDS, QUANT_OPS, QuantOps
from dse.importers.onnx_standins import MS_DOMAIN, QONNX_DOMAINS
from dse.importers.onnx_walk import Activation, Constant, broadcast, normalize_axis, quant_precision

if TYPE_CHECKING:
    import onnx

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
_MORE_TABLES = (
    *MORE_UNARY, *MORE_NARY, *MORE_DATA_MOVEMENT, *MORE_REDUCE, *MORE_VIEWS, *MORE_OTHER, *QUANT_OPS, *ORT_STANDARD_OPS,
    *DETECTION_OPS,
)  # fmt: skip
SUPPORTED_OP_TYPES: tuple[str, ...] = tuple(
    sorted({*_UNARY_FUNCTIONS, *_BINARY_FUNCTIONS, *_VIEW_OPS, *_OTHER_OPS, *_MORE_TABLES})
)
# Ops outside the standard domain: onnxruntime's kernels and the QONNX quantizers (by domain).
FOREIGN_OP_TYPES: dict[str, tuple[str, ...]] = {
    MS_DOMAIN: tuple(sorted(CONTRIB_OPS)),
    **{domain: QONNX_OPS for domain in QONNX_DOMAINS},
}


class OnnxImporter(ContribOps, QonnxOps, QuantOps, MoreOps, DetectionOps):
    """Walks the ONNX graph once, in its (checker-verified) topological order, converting node by node."""

    def __post_init__(self) -> None:
        super().__post_init__()
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
        for table, handler in (
            ((*MORE_UNARY, *MORE_NARY), self._table_elementwise),
            (MORE_DATA_MOVEMENT, self._data_movement),
            (MORE_REDUCE, self._reduce),
            (MORE_VIEWS, self._cast),
            (("Split",), self._split),
            (("Einsum",), self._einsum),
            (("ConvTranspose",), self._conv_transpose),
            (("LSTM", "GRU", "RNN"), self._recurrent),
            (("Attention",), self._attention),
            (("InstanceNormalization", "GroupNormalization", "RMSNormalization"), self._norm),
            (("QuantizeLinear", "DequantizeLinear"), self._quantize),
            (("QLinearConv", "ConvInteger"), self._conv),
            (("QLinearMatMul", "MatMulInteger"), self._matmul),
            (DATA_DEPENDENT_OPS, self._selection),
            (("RoiAlign",), self._roi_align),
        ):
            for op_type in table:
                self.handlers[op_type] = handler
        self.handlers.update(self.ort_standard_handlers())
        assert set(self.handlers) == set(SUPPORTED_OP_TYPES)
        self.foreign_handlers = {(MS_DOMAIN, op): h for op, h in self.contrib_handlers().items()}
        for domain in QONNX_DOMAINS:
            self.foreign_handlers.update({(domain, op): h for op, h in self.qonnx_handlers().items()})
        assert {(d, op) for d, ops in FOREIGN_OP_TYPES.items() for op in ops} == set(self.foreign_handlers)

    def _handler(self, node: onnx.NodeProto) -> Callable[[onnx.NodeProto, str], None] | None:
        if node.domain in ("", "ai.onnx"):
            return self.handlers.get(node.op_type)
        return self.foreign_handlers.get((node.domain, node.op_type))

    # -- driver ------------------------------------------------------------
    def run(self) -> Graph:
        graph = self.model.graph
        for init in graph.initializer:
            proto = None if init.name in self.without_data else init
            label = quant_precision(init.data_type)
            self.values[init.name] = Constant(init.name, tuple(int(d) for d in init.dims), proto, precision=label)
        for info in graph.input:
            if info.name in self.values:
                continue  # old exporters list initializers as inputs too
            shape = self.inferred[info.name]
            assert shape is not None  # fix_input_dims made every input dimension concrete
            self.values[info.name] = Activation(self.builder.input(info.name, shape), shape)
            self.batch = shape[0] if shape else 1
        self._check_supported()
        for index, node in enumerate(graph.node):
            name = node.name or f"{node.op_type}_{index}"
            self._node_name = name
            if self._all_constant(node) and node.domain not in QONNX_DOMAINS:  # a quantizer labels its weight
                self._fold_shape_only(node, name)  # reads only weights too large to evaluate
            elif node.domain in ("", "ai.onnx"):
                self.handlers[node.op_type](node, name)
            else:
                self._foreign(node, name)
        for info in graph.output:
            value = self.values.get(info.name)
            if isinstance(value, Activation):
                self.builder.reshape(value.tensor, value.shape)
                self.builder.output(value.tensor)
        return self.builder.build()

    def _foreign(self, node: onnx.NodeProto, name: str) -> None:
        """An onnxruntime or QONNX node: inputs that break its documented signature get one located message."""
        handler = self.foreign_handlers[(node.domain, node.op_type)]
        try:
            handler(node, name)
        except GraphError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError, AttributeError) as err:
            raise self._error(
                name, node, f"inputs or attributes do not match its documented signature ({type(err).__name__}: {err})"
            ) from None

    def _check_supported(self) -> None:
        """Refuse the model before any work if a node is not supported, naming every unsupported op type."""
        unsupported: list[tuple[str, str, str]] = []
        constant = {t.name for t in self.model.graph.initializer}
        for index, node in enumerate(self.model.graph.node):
            if node.input and all(not n or n in constant for n in node.input):
                constant.update(node.output)  # only reshapes or converts weights: never costed
                continue
            if self._handler(node) is None:
                unsupported.append((node.name or f"{node.op_type}_{index}", node.op_type, node.domain))
        if not unsupported:
            return
        name, op_type, domain = unsupported[0]
        in_domain = f" (domain {domain!r})" if domain not in ("", "ai.onnx") else ""
        others = sorted({o for _, o, _ in unsupported[1:]} - {op_type})
        also = f" (the model also uses unsupported {', '.join(others)})" if others else ""
        foreign = f"domain {MS_DOMAIN!r}: {', '.join(FOREIGN_OP_TYPES[MS_DOMAIN])}"
        qonnx = f"domains {', '.join(map(repr, QONNX_DOMAINS))}: {', '.join(QONNX_OPS)}"
        raise GraphError(
            f"{self.path}: node {name!r} has op type {op_type!r}{in_domain}, which the ONNX importer does not "
            f"support{also}; supported op types: {', '.join(SUPPORTED_OP_TYPES)}; {foreign}; {qonnx}",
            node=name,
        )

    # -- compute ops ---------------------------------------------------------
    def _spatial(
        self,
        node: onnx.NodeProto,
        name: str,
        x: Activation,
        kernel: list[int],
        attrs: dict[str, Any],
        ceil_mode: bool = False,
        max_rank: int = 2,
    ) -> tuple[Activation, list[int], list[int], list[int], list[int], list[int]]:
        """Normalise a window op to 2-D: (x as NCHW, kernel, strides, pads tlbr, dilations, out HW).

        With ``max_rank`` 3 (pools), a 3-D window keeps its work exact with depth folded into height:
        input H = D*H, output P = Pd*Ph, window R = kd*kh; strides and pads stay 3-D (begins, ends).
        """
        spatial_rank = len(x.shape) - 2
        if not 1 <= spatial_rank <= max_rank or len(kernel) != spatial_rank:
            windows = "1-D, 2-D and 3-D" if max_rank == 3 else "1-D and 2-D"
            raise self._error(
                name, node, f"only {windows} windows are supported (input shape {x.shape}, kernel {kernel})"
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
        if spatial_rank == 3:
            n, c, depth, height, width = x.shape
            x = Activation(x.tensor, (n, c, depth * height, width))
            flat_dilations = [1, 1] if dilations == [1, 1, 1] else dilations
            return (
                x,
                [kernel[0] * kernel[1], kernel[2]],
                strides,
                begins + ends,
                flat_dilations,
                [outs[0] * outs[1], outs[2]],
            )
        if spatial_rank == 1:
            x = Activation(x.tensor, (x.shape[0], x.shape[1], 1, x.shape[2]))
            kernel, strides, dilations = [1, *kernel], [1, *strides], [1, *dilations]
            begins, ends, outs = [0, *begins], [0, *ends], [1, *outs]
        return x, list(kernel), strides, [begins[0], begins[1], ends[0], ends[1]], dilations, outs

    def _conv(self, node: onnx.NodeProto, name: str) -> None:
        x_index, w_index, b_index = QUANT_OPERANDS.get(node.op_type, (0, 1, 2))
        x = self._activation(node, name, x_index)
        weight = self._constant(node, name, w_index, "weight")
        attrs = self._attrs(node)
        group = int(attrs.get("group", 1))
        if len(x.shape) == 5 and weight.shape[1] * group == x.shape[1]:
            return self._volume_conv(node, name, x, weight, group, b_index)
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
            bias=b_index >= 0 and self._input(node, b_index) is not None,
            dilation=dilations[0],
        )
        self._record_precision(node, x_index, w_index)
        shape = self.builder.shape(out)
        if len(x.shape) == 3:
            shape = (shape[0], shape[1], shape[3])
        self._bind(node, name, Activation(out, shape))

    def _gemm(self, node: onnx.NodeProto, name: str) -> None:
        attrs = self._attrs(node)
        a = self._activation(node, name)
        if len(a.shape) != 2:
            raise self._error(name, node, f"input A must be 2-D, got shape {a.shape}")
        if attrs.get("transA", 0):
            a = Activation(a.tensor, (a.shape[1], a.shape[0]))
        trans_b = bool(attrs.get("transB", 0))
        b = self._input(node, 1)
        c = self._input(node, 2)
        if isinstance(c, Activation):
            raise self._error(name, node, "a computed bias C is not supported; C must be an initializer")
        if isinstance(b, Constant):
            out_features = b.shape[0] if trans_b else b.shape[1]
            out = self.builder.linear(self._use(a), out_features, name=name, bias=c is not None)
        else:
            assert b is not None
            out = self.builder.matmul(self._use(a), self._use(b), name=name, transpose_b=trans_b)
        self._record_precision(node, 0, 1)
        self._bind_op(node, name, out)

    def _matmul(self, node: onnx.NodeProto, name: str) -> None:
        a_index, b_index, _ = QUANT_OPERANDS.get(node.op_type, (0, 1, -1))
        a, b = self._input(node, a_index), self._input(node, b_index)
        if not isinstance(a, Activation):
            raise self._error(name, node, "a constant left operand (W @ x) is not supported; export it as x @ W^T")
        assert b is not None
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise self._error(name, node, f"1-D operands are not supported (shapes {a.shape} and {b.shape})")
        if isinstance(b, Constant) and len(b.shape) == 2:
            out = self.builder.linear(self._use(a), b.shape[1], name=name, bias=False)
        else:
            batch_shape = broadcast(a.shape[:-2], b.shape[:-2])
            if isinstance(b, Activation) and batch_shape == a.shape[:-2]:
                out = self.builder.matmul(self._use(a), self._use(b), name=name)
            else:  # b carries more batch dimensions than a (a is broadcast), or is a batched constant (MViT's
                m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]  # relative-position table): one matrix per batch
                if b.shape[-2] != k:
                    raise self._error(name, node, f"inner dimensions {k} and {b.shape[-2]} differ")
                constant = isinstance(b, Constant)
                out = self.builder.add_op(
                    name,
                    OpKind.MATMUL,
                    {"B": math.prod(batch_shape), "M": m, "N": n, "K": k},
                    [self._use(a)] if constant else [self._use(a), self._use(b)],
                    (*batch_shape, m, n),
                    {"weight": b.shape} if constant else None,
                    {"transpose_b": False},
                )
        self._record_precision(node, a_index, b_index)
        self._bind_op(node, name, out)

    def _unary(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        self._elementwise(node, name, _UNARY_FUNCTIONS[node.op_type], [x], x.shape)

    def _binary(self, node: onnx.NodeProto, name: str) -> None:
        operands = self._present_inputs(node)
        activations = [v for v in operands if isinstance(v, Activation)]
        constants = [v for v in operands if isinstance(v, Constant)]
        out_shape = broadcast(*(v.shape for v in operands))
        self._elementwise(node, name, _BINARY_FUNCTIONS[node.op_type], activations, out_shape, constants)

    def _clip(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        attrs = self._attrs(node)
        bounds = []
        for index, key in ((1, "min"), (2, "max")):
            value = self._input(node, index)
            if isinstance(value, Constant) and value.value() is not None:
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
            node, name, x, list(attrs["kernel_shape"]), attrs, ceil_mode, max_rank=3
        )
        if dilations != [1, 1]:
            raise self._error(name, node, f"dilated pooling ({dilations}) is not supported")
        square = len(strides) == 2 and kernel[0] == kernel[1] and strides[0] == strides[1] and len(set(pads)) == 1
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
        if len(x.shape) not in (3, 4, 5):
            raise self._error(name, node, f"only 1-D, 2-D and 3-D inputs are supported, got shape {x.shape}")
        x2 = Activation(x.tensor, (x.shape[0], x.shape[1], math.prod(x.shape[2:-1]), x.shape[-1]))  # depth into H
        mode = "max" if node.op_type == "GlobalMaxPool" else "avg"
        out = self.builder.global_pool(self._use(x2), mode=mode, name=name)
        self._bind_pooled(node, name, x, out)

    def _bind_pooled(self, node: onnx.NodeProto, name: str, x: Activation, out: str) -> None:
        shape = self.builder.shape(out)
        if len(x.shape) == 3:
            shape = (shape[0], shape[1], shape[3])
        elif len(x.shape) == 5:  # a 3-D window: unfold depth from the output's height
            shape = self._inferred_shape(node, name)
        self._bind(node, name, Activation(out, shape))

    def _softmax(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        rank = len(x.shape)
        axis = normalize_axis(int(self._attrs(node).get("axis", -1 if self.opset >= 13 else 1)), rank)
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
        axis = normalize_axis(int(self._attrs(node).get("axis", -1)), rank)
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
        operands = self._present_inputs(node)
        rank = len(operands[0].shape)
        axis = normalize_axis(axis_attr, rank)
        out_shape = list(operands[0].shape)
        out_shape[axis] = sum(v.shape[axis] for v in operands)
        activations = [v for v in operands if isinstance(v, Activation)]
        constants = [v for v in operands if isinstance(v, Constant)]
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
        from onnx import numpy_helper

        attrs = self._attrs(node)
        if "value" in attrs:
            array = numpy_helper.to_array(attrs["value"])
        elif "value_float" in attrs or "value_int" in attrs:
            array = np.asarray(attrs.get("value_float", attrs.get("value_int")))
        elif "value_floats" in attrs or "value_ints" in attrs:
            array = np.asarray(attrs.get("value_floats", attrs.get("value_ints")))
        else:
            raise self._error(name, node, f"only tensor and numeric constants are supported, got {sorted(attrs)}")
        self.values[node.output[0]] = Constant(node.output[0], tuple(int(d) for d in array.shape), array=array)

    def _constant_of_shape(self, node: onnx.NodeProto, name: str) -> None:
        # A constant shape was folded before the walk (or kept shape-only when large): only a computed one is left.
        raise self._error(name, node, "the shape (input 0) must be a constant known at import time")

    # -- views (a view of a constant was folded before the walk: only activations reach these) ----------
    def _view_of(
        self, node: onnx.NodeProto, name: str, new_shape: Callable[[tuple[int, ...]], tuple[int, ...]]
    ) -> None:
        source = self._activation(node, name)
        self._view(node, name, source, new_shape(source.shape))

    def _alias(self, node: onnx.NodeProto, name: str) -> None:
        # Dropout's optional mask output is left unbound: inference graphs never read it.
        self._view_of(node, name, lambda shape: shape)

    def _flatten(self, node: onnx.NodeProto, name: str) -> None:
        axis_attr = int(self._attrs(node).get("axis", 1))

        def flat(shape: tuple[int, ...]) -> tuple[int, ...]:
            axis = normalize_axis(axis_attr, len(shape))
            return (math.prod(shape[:axis]), math.prod(shape[axis:]))

        self._view_of(node, name, flat)

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

        self._view_of(node, name, reshaped)

    def _transpose(self, node: onnx.NodeProto, name: str) -> None:
        perm_attr = self._attrs(node).get("perm")
        source = self._activation(node, name)
        perm = list(perm_attr) if perm_attr is not None else list(reversed(range(len(source.shape))))
        if sorted(perm) != list(range(len(source.shape))):
            raise self._error(name, node, f"perm {perm} is not a permutation of the {len(source.shape)} axes")
        self._view(node, name, source, tuple(source.shape[p] for p in perm))

    def _axes(self, node: onnx.NodeProto, name: str) -> list[int] | None:
        if self.opset >= 13:
            return self._constant_ints(node, name, 1, "axes")
        axes = self._attrs(node).get("axes")
        return list(axes) if axes is not None else None

    def _squeeze(self, node: onnx.NodeProto, name: str) -> None:
        axes = self._axes(node, name)

        def squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
            drop = {normalize_axis(a, len(shape)) for a in axes} if axes is not None else None
            if drop is None:
                return tuple(d for d in shape if d != 1)
            if any(shape[a] != 1 for a in drop):
                raise self._error(name, node, f"cannot squeeze axes {sorted(drop)} of shape {shape}")
            return tuple(d for i, d in enumerate(shape) if i not in drop)

        self._view_of(node, name, squeezed)

    def _unsqueeze(self, node: onnx.NodeProto, name: str) -> None:
        axes = self._axes(node, name)
        if axes is None:
            raise self._error(name, node, "Unsqueeze needs axes")

        def unsqueezed(shape: tuple[int, ...]) -> tuple[int, ...]:
            rank = len(shape) + len(axes)
            inserted = {normalize_axis(a, rank) for a in axes}
            rest = iter(shape)
            return tuple(1 if i in inserted else next(rest) for i in range(rank))

        self._view_of(node, name, unsqueezed)
