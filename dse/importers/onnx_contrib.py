"""onnxruntime's fused kernels (domain com.microsoft): what its transformer optimizer, its quantizer and
onnxruntime-genai exports write, costed as the work each kernel does (docs/ContribOperators.md).

A fused kernel does the work of the subgraph it replaced, so each becomes the ops that subgraph would:
attention is its projection (when fused in), QK^T, softmax and PV with the heads and the cached length
it reads; a skip layer norm is an add and a layer norm; an embed layer norm is its table look-ups, their
sum and a layer norm; MatMulNBits is a dense layer whose weight is stored at ``bits`` per value with one
scale per ``block_size`` values. The MACs equal those of the model before optimization.
Attention masks and biases are applied inside the softmax pass and are not costed separately.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from dse.graph import PRECISION_BYTES, OpKind, Tensor
from dse.importers.onnx_ops_more import lookup_attrs
from dse.importers.onnx_quant import QuantOps, label_bytes
from dse.importers.onnx_walk import Activation, Constant, quant_precision

if TYPE_CHECKING:
    import onnx

Handler = Callable[["onnx.NodeProto", str], None]
# com.microsoft elementwise kernels -> IR function names
_ELEMENTWISE = {
    "BiasGelu": "gelu",
    "FastGelu": "gelu",
    "Gelu": "gelu",
    "QuickGelu": "quick_gelu",
    "BiasAdd": "add",
    "RotaryEmbedding": "rotary",
    "QLinearAdd": "add",
    "QLinearMul": "mul",
    "QLinearSigmoid": "sigmoid",
    "QLinearLeakyRelu": "leaky_relu",
}
_FUSED_ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu", "Clip": "clip"}
CONTRIB_OPS: tuple[str, ...] = (
    *_ELEMENTWISE,
    "Attention",
    "QAttention",
    "MultiHeadAttention",
    "GroupQueryAttention",
    "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
    "SimplifiedLayerNormalization",
    "LayerNormalization",
    "EmbedLayerNormalization",
    "MatMulNBits",
    "QGemm",
    "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
    "FusedConv",
    "FusedMatMul",
    "QLinearSoftmax",
    "QLinearConcat",
    "QuantizeLinear",
    "DequantizeLinear",
)
# onnxruntime kernels registered in the standard domain
ORT_STANDARD_OPS = ("SimplifiedLayerNormalization", "DynamicQuantizeLinear")


class ContribOps(QuantOps):
    """Converters for CONTRIB_OPS (by com.microsoft op type) and ORT_STANDARD_OPS; OnnxImporter registers them."""

    def contrib_handlers(self) -> dict[str, Handler]:
        handlers: dict[str, Handler] = {op: self._ms_elementwise for op in _ELEMENTWISE}
        handlers.update(
            Attention=self._ms_attention,
            QAttention=self._ms_attention,
            MultiHeadAttention=self._ms_multi_head,
            GroupQueryAttention=self._ms_group_query,
            SkipLayerNormalization=self._ms_layer_norm,
            SkipSimplifiedLayerNormalization=self._ms_layer_norm,
            SimplifiedLayerNormalization=self._ms_layer_norm,
            LayerNormalization=self._ms_layer_norm,
            EmbedLayerNormalization=self._ms_embed_layer_norm,
            MatMulNBits=self._ms_matmul_nbits,
            QGemm=self._ms_qgemm,
            DynamicQuantizeMatMul=self._ms_float_matmul,
            MatMulIntegerToFloat=self._ms_float_matmul,
            FusedConv=self._ms_fused_conv,
            FusedMatMul=self._ms_fused_matmul,
            QLinearSoftmax=self._ms_softmax,
            QLinearConcat=self._ms_concat,
            QuantizeLinear=self._quantize,
            DequantizeLinear=self._quantize,
        )
        return handlers

    def ort_standard_handlers(self) -> dict[str, Handler]:
        return {"SimplifiedLayerNormalization": self._ms_layer_norm, "DynamicQuantizeLinear": self._dynamic_quantize}

    # -- helpers -------------------------------------------------------------
    def _split_operands(
        self, node: onnx.NodeProto, indices: tuple[int, ...]
    ) -> tuple[list[Activation], list[Constant]]:
        values = [self._input(node, i) for i in indices]
        return [v for v in values if isinstance(v, Activation)], [v for v in values if isinstance(v, Constant)]

    def _norm_op(self, name: str, x: str, shape: tuple[int, ...], weights: dict, norm: str) -> str:
        return self.builder.add_op(
            name, OpKind.LAYERNORM, {"R": math.prod(shape[:-1]), "L": shape[-1]}, [x], shape, weights, {"norm": norm}
        )

    def _attention_core(
        self,
        name: str,
        reads: list[str],
        batch: int,
        heads: int,
        query_len: int,
        kv_len: int,
        head_dim: int,
        value_dim: int,
        out_shape: tuple[int, ...],
    ) -> str:
        """QK^T, softmax and PV over ``heads`` heads: the work of an unfused attention."""
        rows = batch * heads
        scores = self.builder.add_op(
            f"{name}:qk", OpKind.MATMUL, {"B": rows, "M": query_len, "N": kv_len, "K": head_dim}, reads,
            (batch, heads, query_len, kv_len), None, {"transpose_b": True},
        )  # fmt: skip
        probs = self.builder.add_op(
            f"{name}:softmax", OpKind.SOFTMAX, {"R": rows * query_len, "L": kv_len}, [scores],
            (batch, heads, query_len, kv_len),
        )  # fmt: skip
        return self.builder.add_op(
            f"{name}:pv", OpKind.MATMUL, {"B": rows, "M": query_len, "N": value_dim, "K": kv_len},
            [probs, *reads[1:]], out_shape, None, {"transpose_b": False},
        )  # fmt: skip

    def _bind_copy(self, node: onnx.NodeProto, name: str, output: int, reads: list[str], fn: str) -> None:
        """A cache output (present key/value): a copy of what it concatenates."""
        if output >= len(node.output) or not node.output[output]:
            return
        shape = self._inferred_shape(node, name, output)
        out = self.builder.add_op(
            f"{name}:{fn}{output}", OpKind.ELEMENTWISE, {"N": math.prod(shape)}, reads, shape, None,
            {"fn": fn, "arity": len(reads)},
        )  # fmt: skip
        self._bind(node, name, Activation(out, shape), output)

    def _tensors(self, values: list[Activation | Constant | None]) -> list[str]:
        return [self._use(v) for v in values if isinstance(v, Activation)]

    # -- converters ------------------------------------------------------------
    def _ms_elementwise(self, node: onnx.NodeProto, name: str) -> None:
        indices = (0, 3) if node.op_type in ("QLinearAdd", "QLinearMul") else tuple(range(len(node.input)))
        activations, constants = self._split_operands(node, indices)
        if node.op_type in ("QLinearSigmoid", "QLinearLeakyRelu"):
            constants = []  # the scales and zero points
        fn = _ELEMENTWISE[node.op_type]
        self._elementwise(node, name, fn, activations, self._inferred_shape(node, name), constants)

    def _ms_softmax(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        out = self.builder.add_op(
            name, OpKind.SOFTMAX, {"R": math.prod(x.shape[:-1]), "L": x.shape[-1]}, [self._use(x)], x.shape
        )
        self._bind_op(node, name, out)

    def _ms_concat(self, node: onnx.NodeProto, name: str) -> None:
        """QLinearConcat: a concatenation (an arity-n identity, as Concat) of its (X, scale, zero point) operands."""
        activations, constants = self._split_operands(node, tuple(range(2, len(node.input), 3)))
        out_shape = self._inferred_shape(node, name)
        axis = int(self._attrs(node)["axis"])
        self._elementwise(node, name, "identity", activations, out_shape, constants, {"axis": axis})

    def _ms_layer_norm(self, node: onnx.NodeProto, name: str) -> None:
        """(Skip)(Simplified)LayerNormalization: the skip (and bias) add, then the normalization."""
        skip = node.op_type.startswith("Skip")
        simplified = "Simplified" in node.op_type
        if any(index < len(node.output) and node.output[index] for index in (1, 2)):
            raise self._error(name, node, "the mean and inverse-std outputs (training only) are not supported")
        x = self._activation(node, name)
        if int(self._attrs(node).get("axis", -1)) not in (-1, len(x.shape) - 1):
            raise self._error(name, node, "only normalization over the last axis is supported")
        gamma_index = 2 if skip else 1
        tensor = self._use(x)
        if skip:
            bias_index = 3 if simplified else 4
            activations, constants = self._split_operands(node, (0, 1, bias_index))
            tensor = self.builder.add_op(
                f"{name}:add", OpKind.ELEMENTWISE, {"N": math.prod(x.shape)}, self._tensors(activations), x.shape,
                self._constant_weights(constants), {"fn": "add", "arity": len(activations)},
            )  # fmt: skip
            if len(node.output) > 3 and node.output[3]:
                self._bind(node, name, Activation(tensor, x.shape), 3)
        weights = {"gamma": (x.shape[-1],)}
        if not simplified and self._input(node, gamma_index + 1) is not None:
            weights["beta"] = (x.shape[-1],)
        self._bind_op(node, name, self._norm_op(name, tensor, x.shape, weights, node.op_type))

    def _ms_attention(self, node: onnx.NodeProto, name: str) -> None:
        """Attention / QAttention: the fused QKV projection, then attention over past + new keys."""
        x = self._activation(node, name)
        weight = self._constant(node, name, 1, "weights")
        attrs = self._attrs(node)
        heads = int(attrs["num_heads"])
        sizes = [int(s) for s in attrs.get("qkv_hidden_sizes", [])] or [weight.shape[1] // 3] * 3
        if len(x.shape) != 3 or len(weight.shape) != 2 or sum(sizes) != weight.shape[1]:
            raise self._error(name, node, f"input {x.shape} and weights {weight.shape} do not match (B, S, hidden)")
        batch, seq, hidden = x.shape
        qkv = self.builder.add_op(
            f"{name}:qkv", OpKind.MATMUL, {"B": 1, "M": batch * seq, "N": sum(sizes), "K": hidden}, [self._use(x)],
            (batch, seq, sum(sizes)), {"weight": weight.shape, "bias": (sum(sizes),)},
        )  # fmt: skip
        if node.op_type == "QAttention":
            self._label_last(quant_precision(self.elem_types.get(node.input[0], 0)), weight.precision)
        past = self._input(node, 4 if node.op_type == "Attention" else 8)
        past_len = past.shape[3] if past is not None else 0
        reads = [qkv, *self._tensors([past])]
        out = self._attention_core(
            name, reads, batch, heads, seq, past_len + seq, sizes[0] // heads, sizes[2] // heads,
            self._inferred_shape(node, name),
        )  # fmt: skip
        self._bind_op(node, name, out)
        self._bind_copy(node, name, 1, reads, "concat")

    def _ms_multi_head(self, node: onnx.NodeProto, name: str) -> None:
        q = self._activation(node, name)
        key, value = self._input(node, 1), self._input(node, 2)
        heads = int(self._attrs(node)["num_heads"])
        if key is None or value is None or len(q.shape) != 3:
            raise self._error(name, node, "packed QKV/KV inputs are not supported; give query, key and value")
        batch, seq, hidden = q.shape
        past_key = self._input(node, 6)
        if len(key.shape) == 4:
            kv_len, head_dim, value_dim = key.shape[2], key.shape[3], value.shape[3]
        else:
            kv_len, head_dim, value_dim = key.shape[1], hidden // heads, value.shape[2] // heads
            kv_len += past_key.shape[2] if past_key is not None else 0
        reads = self._tensors([q, key, value, past_key, self._input(node, 7)])
        out = self._attention_core(
            name, reads, batch, heads, seq, kv_len, head_dim, value_dim, self._inferred_shape(node, name)
        )
        self._bind_op(node, name, out)
        self._bind_copy(node, name, 1, self._tensors([key, past_key]), "concat")
        self._bind_copy(node, name, 2, self._tensors([value, self._input(node, 7)]), "concat")

    def _ms_group_query(self, node: onnx.NodeProto, name: str) -> None:
        """GroupQueryAttention: kv_num_heads key/value heads shared by num_heads query heads, rotary optional."""
        q = self._activation(node, name)
        attrs = self._attrs(node)
        heads, kv_heads = int(attrs["num_heads"]), int(attrs["kv_num_heads"])
        key, value, past_key = self._input(node, 1), self._input(node, 2), self._input(node, 3)
        batch, seq, hidden = q.shape
        head_dim = hidden // heads if key is not None else hidden // (heads + 2 * kv_heads)
        if len(node.output) > 1 and node.output[1]:
            kv_len = self._inferred_shape(node, name, 1)[2]
        else:
            kv_len = seq + (past_key.shape[2] if past_key is not None else 0)
        reads = self._tensors([q, key, value, past_key, self._input(node, 4)])
        if int(attrs.get("do_rotary", 0)):
            rotated = batch * seq * (heads + kv_heads) * head_dim
            rotary = self.builder.add_op(
                f"{name}:rotary", OpKind.ELEMENTWISE, {"N": rotated}, reads[:1] if key is None else reads[:2],
                (batch, seq, (heads + kv_heads) * head_dim), None, {"fn": "rotary", "arity": 1 if key is None else 2},
            )  # fmt: skip
            reads = [rotary, *reads[1:]]
        out = self._attention_core(
            name, reads, batch, heads, seq, kv_len, head_dim, head_dim, self._inferred_shape(node, name)
        )
        self._bind_op(node, name, out)
        packed = key is None  # the new keys and values are slices of the query input
        self._bind_copy(node, name, 1, self._tensors([q if packed else key, past_key]), "concat")
        self._bind_copy(node, name, 2, self._tensors([q if packed else value, self._input(node, 4)]), "concat")

    def _ms_embed_layer_norm(self, node: onnx.NodeProto, name: str) -> None:
        """Word, position and segment look-ups, their sum, a layer norm; mask_index sums the mask."""
        ids = self._activation(node, name)
        batch, seq = ids.shape
        lookups: list[str] = []
        for label, table_index, index_index in (("word", 2, 0), ("position", 3, 8), ("segment", 4, 1)):
            table = self._input(node, table_index)
            if not isinstance(table, Constant):
                continue
            out_shape = (batch, seq, table.shape[1])
            attrs = {"fn": "gather", "arity": 1, **lookup_attrs(table, out_shape, self.elem_bytes)}
            lookups.append(
                self.builder.add_op(
                    f"{name}:{label}",
                    OpKind.ELEMENTWISE,
                    {"N": math.prod(out_shape)},
                    self._tensors([self._input(node, index_index)]),
                    out_shape,
                    {"table": table.shape},
                    attrs,
                )  # fmt: skip
            )
        shape = self.builder.shape(lookups[0])
        total = self.builder.add_op(
            f"{name}:sum", OpKind.ELEMENTWISE, {"N": math.prod(shape)}, lookups, shape, None,
            {"fn": "add", "arity": len(lookups)},
        )  # fmt: skip
        weights = {"gamma": (shape[-1],), "beta": (shape[-1],)}
        self._bind_op(node, name, self._norm_op(name, total, shape, weights, node.op_type))
        if len(node.output) > 2 and node.output[2]:
            self._bind(node, name, Activation(total, shape), 2)
        mask = self._input(node, 7)
        if len(node.output) > 1 and node.output[1]:
            if isinstance(mask, Activation):
                self._bind_copy(node, name, 1, [self._use(mask)], "reduce_sum")
            else:
                self.values[node.output[1]] = Constant(node.output[1], (batch,))

    def _ms_matmul_nbits(self, node: onnx.NodeProto, name: str) -> None:
        """A dense layer with ``bits``-wide weights in blocks of ``block_size`` along K, one scale per block."""
        a = self._activation(node, name)
        attrs = self._attrs(node)
        rows, columns, bits, block = (int(attrs[k]) for k in ("K", "N", "bits", "block_size"))
        if a.shape[-1] != rows:
            raise self._error(name, node, f"input {a.shape} does not end in K={rows}")
        blocks = math.ceil(rows / block)
        weights: dict[str, tuple[int, ...]] = {"weight": (rows, columns), "scales": (columns, blocks)}
        if self._input(node, 3) is not None:
            weights["zero_points"] = (columns, math.ceil(blocks * bits / 8))
        if self._input(node, 5) is not None:
            weights["bias"] = (columns,)
        label = f"int{bits}"
        out = self.builder.add_op(
            name, OpKind.MATMUL, {"B": 1, "M": math.prod(a.shape[:-1]), "N": columns, "K": rows}, [self._use(a)],
            (*a.shape[:-1], columns), weights, {"weight_bits": bits, "block_size": block},
        )  # fmt: skip
        self._label_last(a.precision, label)
        scale_bytes = _itemsize(self.elem_types.get(node.input[2], 1))
        op = self.builder.ops[-1]
        for tensor in op.weights:
            if tensor.endswith(":scales") or tensor.endswith(":bias"):
                self.builder.tensors[tensor] = self._resized(tensor, scale_bytes)
            elif tensor.endswith(":zero_points"):
                self.builder.tensors[tensor] = self._resized(tensor, 1)
        self._bind_op(node, name, out)

    def _ms_qgemm(self, node: onnx.NodeProto, name: str) -> None:
        inputs = [node.input[0], node.input[3], _get(node.input, 6)]
        self._delegate(node, name, "Gemm", inputs, self._gemm, keep={"transA", "transB", "alpha"})

    def _ms_float_matmul(self, node: onnx.NodeProto, name: str) -> None:
        """DynamicQuantizeMatMul / MatMulIntegerToFloat: an int8 matmul (its int8 weight labels it)."""
        self._delegate(node, name, "MatMul", [node.input[0], node.input[1]], self._matmul, keep=set())

    def _ms_fused_conv(self, node: onnx.NodeProto, name: str) -> None:
        """Conv with its bias, an optional residual Z added and an activation applied."""
        conv_attrs = {a.name for a in node.attribute} - {"activation", "activation_params"}
        self._delegate(node, name, "Conv", list(node.input[:3]), self._conv, keep=conv_attrs)
        raw = self._attrs(node).get("activation", b"")
        activation = raw.decode() if isinstance(raw, bytes) else str(raw)
        out = self.values[node.output[0]]
        assert isinstance(out, Activation)
        residual = self._input(node, 3)
        if residual is not None:
            self._elementwise(node, f"{name}:add", "add", [out, *self._activations([residual])], out.shape)
            out = self.values[node.output[0]]
            assert isinstance(out, Activation)
        if activation:
            if activation not in _FUSED_ACTIVATIONS:
                allowed = ", ".join(_FUSED_ACTIVATIONS)
                raise self._error(name, node, f"activation {activation!r} is not supported; allowed: {allowed}")
            self._elementwise(node, f"{name}:{activation.lower()}", _FUSED_ACTIVATIONS[activation], [out], out.shape)

    def _ms_fused_matmul(self, node: onnx.NodeProto, name: str) -> None:
        """MatMul with transposed operands and a scale (alpha, free in the accumulator)."""
        attrs = self._attrs(node)
        if int(attrs.get("transBatchA", 0)) or int(attrs.get("transBatchB", 0)):
            raise self._error(name, node, "transBatchA/transBatchB are not supported")
        a = self._activation(node, name)
        b = self._input(node, 1)
        assert b is not None
        if int(attrs.get("transA", 0)):
            a = Activation(a.tensor, (*a.shape[:-2], a.shape[-1], a.shape[-2]), a.precision)
        trans_b = bool(int(attrs.get("transB", 0)))
        if isinstance(b, Constant):
            if len(b.shape) != 2:
                raise self._error(name, node, f"a constant right operand must be 2-D, got shape {b.shape}")
            out = self.builder.linear(self._use(a), b.shape[0] if trans_b else b.shape[1], name=name, bias=False)
        else:
            out = self.builder.matmul(self._use(a), self._use(b), name=name, transpose_b=trans_b)
        self._bind_op(node, name, out)

    def _dynamic_quantize(self, node: onnx.NodeProto, name: str) -> None:
        """DynamicQuantizeLinear: a view labelling the value uint8 (int8); its scale and zero point are scalars."""
        x = self._activation(node, name)
        self._bind(node, name, Activation(x.tensor, x.shape, "int8"))
        for index in (1, 2):
            if index < len(node.output) and node.output[index]:
                self.values[node.output[index]] = Constant(node.output[index], ())

    # -- plumbing ---------------------------------------------------------------
    def _delegate(
        self, node: onnx.NodeProto, name: str, op_type: str, inputs: list[str], handler: Handler, keep: set[str]
    ) -> None:  # fmt: skip
        """Convert with a standard op's converter over the operands and attributes (``keep``) it shares."""
        from onnx import helper

        proxy = helper.make_node(op_type, inputs, list(node.output), name=node.name)
        proxy.attribute.extend(a for a in node.attribute if a.name in keep)
        handler(proxy, name)

    def _activations(self, values: list[Activation | Constant | None]) -> list[Activation]:
        return [v for v in values if isinstance(v, Activation)]

    def _label_last(self, act: str | None, weight: str | None) -> None:
        if act is None and weight is None:
            return
        op = self.builder.ops[-1]
        labels = {"precision": act or weight, "weight_precision": weight or act}
        self.builder.ops[-1] = replace(op, attrs={**op.attrs, **labels})
        width = label_bytes(weight or act)
        for tensor in op.weights:
            if tensor.endswith(":weight"):
                self.builder.tensors[tensor] = self._resized(tensor, width)

    def _resized(self, tensor: str, elem_bytes: int) -> Tensor:
        return replace(self.builder.tensors[tensor], elem_bytes=elem_bytes)


def _get(names: object, index: int) -> str:
    seq = list(names)  # type: ignore[call-overload]
    return seq[index] if index < len(seq) else ""


def _itemsize(elem_type: int) -> int:
    from onnx import helper

    try:
        return int(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except Exception:  # sub-byte or unknown: the graph's own width
        return PRECISION_BYTES["fp32"]
