"""Stand-ins for ops outside ONNX's standard set (onnxruntime's com.microsoft kernels, QONNX quantizers).

onnx's checker and shape inference know only the standard ops, so a model with a ``SkipLayerNormalization``
or a QONNX ``Quant`` would lose every shape downstream of it. Before the checker runs, each such node is
replaced by a few standard nodes (``Where``, ``Cast``, ``MatMul``, ``Reshape``, ``Transpose``, ``Concat``,
``Gather``, ``Slice``) that produce outputs of exactly its documented shapes and types, so checking, shape
inference and constant folding see an ordinary model. The stand-ins compute nothing the importer costs: right
before the walk ``restore_foreign_ops`` puts the original nodes back, and the converters in ``onnx_contrib``
and ``onnx_qonnx`` cost them from their own semantics. Every stand-in reads a data-less gate, so folding never
evaluates one (a quantizer on a weight stays a node that labels the weight's precision).

The shapes follow onnxruntime's docs/ContribOperators.md and QONNX's docs/qonnx-custom-ops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dse.graph import GraphError

if TYPE_CHECKING:
    import onnx

MARK = "::dse-stand-in:"
MS_DOMAIN = "com.microsoft"
QONNX_DOMAINS = ("qonnx.custom_op.general", "onnx.brevitas", "finn.custom_op.general")
FLOAT = 1  # onnx.TensorProto.FLOAT
INT32 = 6
INT64 = 7
BOOL = 9


@dataclass
class StandIns:
    """The original nodes by stand-in key, and the initializers the stand-ins added."""

    originals: dict[str, onnx.NodeProto] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)


class _Emitter:
    """Builds the standard nodes that stand in for one foreign node."""

    def __init__(
        self,
        model: onnx.ModelProto,
        node: onnx.NodeProto,
        key: str,
        opset: int,
        added: set[str],
        known: tuple[dict[str, onnx.TensorProto], dict[str, onnx.ValueInfoProto]],
    ) -> None:
        self.model, self.node, self.key, self.opset, self.added = model, node, key, opset, added
        self.nodes: list[onnx.NodeProto] = []
        self.initializers, self.inputs = known  # shared by every emitter of one model
        self._count = 0

    def _name(self) -> str:
        self._count += 1
        return f"{self.key}{MARK}{self._count}"

    def emit(self, op_type: str, inputs: list[str], output: str | None = None, **attrs: object) -> str:
        from onnx import helper

        name = self._name()
        out = output or f"{name}:out"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def constant(self, values: list[int]) -> str:
        """A small int64 initializer (reshape targets, slice bounds)."""
        from onnx import helper

        name = f"{self._name()}:const"
        self.model.graph.initializer.append(helper.make_tensor(name, INT64, [len(values)], values))
        self.added.add(name)
        return name

    def dataless(self, dims: list[int], elem_type: int = FLOAT) -> str:
        """An initializer with a shape and no data: never folded, never read."""
        return self._dataless(f"{self._name()}:shape-only", dims, elem_type)

    def _dataless(self, name: str, dims: list[int], elem_type: int) -> str:
        import onnx

        tensor = onnx.TensorProto(name=name, data_type=elem_type, dims=dims)
        self.model.graph.initializer.append(tensor)
        self.initializers[name] = self.model.graph.initializer[-1]
        self.added.add(name)
        return name

    def input(self, index: int) -> str:
        names = self.node.input
        return names[index] if index < len(names) else ""

    def dims(self, index: int) -> list[int] | None:
        """The dimensions of input ``index`` when it is an initializer or a graph input with concrete dims."""
        name = self.input(index)
        if name in self.initializers:
            return list(self.initializers[name].dims)
        if name in self.inputs:
            dims = self.inputs[name].type.tensor_type.shape.dim
            return [d.dim_value if d.HasField("dim_value") else -1 for d in dims]
        return None

    def elem_type(self, index: int, default: int = FLOAT) -> int:
        name = self.input(index)
        if name in self.initializers:
            return int(self.initializers[name].data_type)
        if name in self.inputs:
            return int(self.inputs[name].type.tensor_type.elem_type)
        return default

    def attr(self, name: str, default: object = None) -> object:
        from onnx import helper

        for a in self.node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default

    def gated(self, name: str) -> str:
        """``name`` unchanged, through a node folding cannot evaluate (its condition has no data)."""
        return self.emit("Where", [self.gate, name, name])

    def same(self, index: int, output: int = 0, elem_type: int | None = None) -> None:
        """Output ``output`` has the shape of input ``index`` (and its type unless ``elem_type`` is given)."""
        self.finish(self.gated(self.input(index)), output, elem_type)

    def finish(self, value: str, output: int, elem_type: int | None = None) -> None:
        name = self.node.output[output] if output < len(self.node.output) else ""
        if not name:
            return
        if elem_type is None:
            self.emit("Identity", [value], name)
        else:
            self.emit("Cast", [value], name, to=elem_type)

    def as_float(self, name: str) -> str:
        return self.emit("Cast", [self.gated(name)], to=FLOAT)

    def project(self, name: str, rows: int, columns: int) -> str:
        """A float value with the last axis of ``name`` (length ``rows``) replaced by ``columns``."""
        return self.emit("MatMul", [self.as_float(name), self.dataless([rows, columns])])

    def heads(self, name: str, heads: int) -> str:
        """(B, S, heads * D) -> (B, heads, S, D)."""
        split = self.emit("Reshape", [name, self.constant([0, 0, heads, -1])])
        return self.emit("Transpose", [split], perm=[0, 2, 1, 3])

    def unsqueeze0(self, name: str) -> str:
        if self.opset >= 13:
            return self.emit("Unsqueeze", [name, self.constant([0])])
        return self.emit("Unsqueeze", [name], axes=[0])

    def per_row(self, name: str) -> str:
        """(B, S) -> (B,): the first element of every row."""
        from onnx import helper

        index = f"{self._name()}:index"
        self.model.graph.initializer.append(helper.make_tensor(index, INT64, [], [0]))
        self.added.add(index)
        return self.emit("Gather", [self.gated(name), index], axis=1)

    @property
    def gate(self) -> str:
        name = "::dse-stand-in-gate"
        return name if name in self.initializers else self._dataless(name, [], BOOL)


StandInBuilder = Callable[[_Emitter], None]
STAND_INS: dict[tuple[str, str], StandInBuilder] = {}


def stand_in(domains: tuple[str, ...], *op_types: str) -> Callable[[StandInBuilder], StandInBuilder]:
    def register(builder: StandInBuilder) -> StandInBuilder:
        for domain in domains:
            for op_type in op_types:
                STAND_INS[(domain, op_type)] = builder
        return builder

    return register


# onnxruntime registers these in the standard domain, beside (or before) ONNX's own versions.
ORT_STANDARD_DOMAIN_OPS = {"SimplifiedLayerNormalization": 1, "LayerNormalization": 17, "Gelu": 20}


def _needs_stand_in(node: onnx.NodeProto, opset: int) -> bool:
    if node.domain in ("", "ai.onnx"):
        first_standard = ORT_STANDARD_DOMAIN_OPS.get(node.op_type)
        return first_standard is not None and (node.op_type == "SimplifiedLayerNormalization" or opset < first_standard)
    return (node.domain, node.op_type) in STAND_INS


def stand_in_foreign_ops(model: onnx.ModelProto, path: object, without_data: set[str]) -> StandIns:
    """Replace every foreign node with its stand-in, in place; ``without_data`` gains the data-less tensors."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    result = StandIns()
    if not any(_needs_stand_in(n, opset) for n in model.graph.node):
        return result
    nodes: list[onnx.NodeProto] = []
    known = ({t.name: t for t in model.graph.initializer}, {v.name: v for v in model.graph.input})
    for index, node in enumerate(model.graph.node):
        if not _needs_stand_in(node, opset):
            nodes.append(node)
            continue
        key = f"{index}:{node.name or node.op_type}"
        emitter = _Emitter(model, node, key, opset, result.added, known)
        domain = MS_DOMAIN if node.domain in ("", "ai.onnx") else node.domain
        builder = STAND_INS[(domain, node.op_type)]
        try:
            builder(emitter)
        except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError) as err:
            raise GraphError(
                f"{path}: node {node.name or key!r} ({node.op_type}, domain {node.domain or 'ai.onnx'!r}) has "
                f"inputs or attributes that do not match its documented signature ({type(err).__name__}: {err})",
                node=node.name or key,
            ) from None
        result.originals[key] = node
        nodes.extend(emitter.nodes)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    without_data.update(result.added)
    return result


def restore_foreign_ops(model: onnx.ModelProto, stand_ins: StandIns) -> None:
    """Put the original nodes back where their stand-ins are (after shape inference and folding)."""
    if not stand_ins.originals:
        return
    nodes: list[onnx.NodeProto] = []
    restored: set[str] = set()
    for node in model.graph.node:
        key, mark, _ = node.name.partition(MARK)
        if not mark:
            nodes.append(node)
        elif key not in restored:
            restored.add(key)
            nodes.append(stand_ins.originals[key])
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    kept = [t for t in model.graph.initializer if t.name not in stand_ins.added]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    shapes = [v for v in model.graph.value_info if MARK not in v.name]  # the stand-ins' own values
    del model.graph.value_info[:]
    model.graph.value_info.extend(shapes)


# -- the builders: one per documented signature -------------------------------------------------------
_MS = (MS_DOMAIN,)


@stand_in(
    _MS, "BiasGelu", "FastGelu", "Gelu", "QuickGelu", "BiasAdd", "RotaryEmbedding", "QLinearSigmoid",
    "QLinearLeakyRelu", "QLinearSoftmax",
)  # fmt: skip
def _shape_of_input(e: _Emitter) -> None:
    e.same(0)


@stand_in(_MS, "QuantizeLinear")
def _quantize_linear(e: _Emitter) -> None:
    """onnxruntime's own QuantizeLinear (int4/int16 before ONNX had them): the zero point's type."""
    e.same(0, elem_type=e.elem_type(2, 2))


@stand_in(_MS, "DequantizeLinear")
def _dequantize_linear(e: _Emitter) -> None:
    e.same(0, elem_type=e.elem_type(1))


@stand_in(QONNX_DOMAINS, "Quant", "BipolarQuant", "Trunc")
def _quantizer(e: _Emitter) -> None:
    e.same(0)


@stand_in(QONNX_DOMAINS, "MultiThreshold")
def _multi_threshold(e: _Emitter) -> None:
    e.same(0, elem_type=FLOAT)


@stand_in(_MS, "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "LayerNormalization",
          "SimplifiedLayerNormalization")  # fmt: skip
def _layer_norm(e: _Emitter) -> None:
    """Output and the skip sum (output 3) have the input's shape; mean and 1/std have its last axis at 1."""
    e.same(0)
    gamma = e.dims(2 if e.node.op_type.startswith("Skip") else 1)
    for index in (1, 2):
        if index < len(e.node.output) and e.node.output[index]:
            if gamma is None:
                raise ValueError("gamma must be an initializer to size the mean and inverse-std outputs")
            e.finish(e.project(e.input(0), gamma[-1], 1), index)
    if len(e.node.output) > 3 and e.node.output[3]:
        e.finish(e.gated(e.input(0)), 3)


def _qkv_sizes(e: _Emitter, index: int) -> tuple[int, list[int]]:
    weights = e.dims(index)
    if weights is None or len(weights) != 2:
        raise ValueError(f"the weights (input {index}) must be a 2-D initializer")
    sizes = [int(s) for s in (e.attr("qkv_hidden_sizes") or [])] or [weights[1] // 3] * 3  # type: ignore[union-attr]
    return weights[0], sizes


@stand_in(_MS, "Attention", "QAttention")
def _fused_attention(e: _Emitter) -> None:
    """output (B, S, v_hidden); present (2, B, heads, past + S, head_size)."""
    rows, sizes = _qkv_sizes(e, 1)
    e.finish(e.project(e.input(0), rows, sizes[2]), 0, e.elem_type(2))
    if len(e.node.output) > 1 and e.node.output[1]:
        heads = int(e.attr("num_heads"))  # type: ignore[arg-type]
        key = e.unsqueeze0(e.heads(e.project(e.input(0), rows, sizes[1]), heads))
        present = e.emit("Concat", [key, key], axis=0)
        past = e.input(4 if e.node.op_type == "Attention" else 8)
        if past:
            present = e.emit("Concat", [e.as_float(past), present], axis=3)
        e.finish(present, 1, e.elem_type(2))


@stand_in(_MS, "MultiHeadAttention")
def _multi_head_attention(e: _Emitter) -> None:
    """3-D query/key/value (B, S, D); key/value as (B, heads, L, H) when they are 4-D graph inputs."""
    heads = int(e.attr("num_heads"))  # type: ignore[arg-type]
    query, key, value = e.as_float(e.input(0)), e.input(1), e.input(2)
    if not key:
        raise ValueError("packed QKV (no key input) is not supported")
    key_rank, value_rank = len(e.dims(1) or [0, 0, 0]), len(e.dims(2) or [0, 0, 0])
    k4 = e.as_float(key) if key_rank == 4 else e.heads(e.as_float(key), heads)
    v4 = e.as_float(value) if value_rank == 4 else e.heads(e.as_float(value), heads)
    scores = e.emit("MatMul", [e.heads(query, heads), e.emit("Transpose", [k4], perm=[0, 1, 3, 2])])
    context = e.emit("Transpose", [e.emit("MatMul", [scores, v4])], perm=[0, 2, 1, 3])
    e.finish(e.emit("Reshape", [context, e.constant([0, 0, -1])]), 0, e.elem_type(0))
    for output, new, past in ((1, k4, 6), (2, v4, 7)):
        if len(e.node.output) > output and e.node.output[output]:
            present = e.emit("Concat", [e.as_float(e.input(past)), new], axis=2) if e.input(past) else new
            e.finish(present, output, e.elem_type(0))


@stand_in(_MS, "GroupQueryAttention")
def _group_query_attention(e: _Emitter) -> None:
    """output (B, S, heads * H); present key/value (B, kv_heads, past + S, H) (no shared buffer)."""
    heads, kv_heads = int(e.attr("num_heads")), int(e.attr("kv_num_heads"))  # type: ignore[arg-type]
    query = e.gated(e.input(0))
    if e.input(1):
        e.finish(query, 0)
        parts = {1: e.heads(e.input(1), kv_heads), 2: e.heads(e.input(2), kv_heads)}
    else:  # packed (B, S, (heads + 2 kv_heads) * H)
        split = e.emit("Reshape", [query, e.constant([0, 0, heads + 2 * kv_heads, -1])])

        def part(start: int, stop: int) -> str:
            sliced = e.emit("Slice", [split, e.constant([start]), e.constant([stop]), e.constant([2])])
            return e.emit("Reshape", [sliced, e.constant([0, 0, -1])])

        e.finish(part(0, heads), 0)
        parts = {
            1: e.heads(part(heads, heads + kv_heads), kv_heads),
            2: e.heads(part(heads + kv_heads, heads + 2 * kv_heads), kv_heads),
        }
    for output, past in ((1, 3), (2, 4)):
        if len(e.node.output) > output and e.node.output[output]:
            present = e.emit("Concat", [e.input(past), parts[output]], axis=2) if e.input(past) else parts[output]
            e.finish(present, output)


@stand_in(_MS, "EmbedLayerNormalization")
def _embed_layer_norm(e: _Emitter) -> None:
    """output and embedding_sum (B, S, H) of the word table's type; mask_index (B,) int32."""
    embedded = e.emit("Gather", [e.gated(e.input(2)), e.input(0)])
    e.finish(embedded, 0)
    e.finish(e.per_row(e.input(0)), 1, INT32)
    if len(e.node.output) > 2 and e.node.output[2]:
        e.finish(embedded, 2)


@stand_in(_MS, "MatMulNBits")
def _matmul_nbits(e: _Emitter) -> None:
    rows, columns = int(e.attr("K")), int(e.attr("N"))  # type: ignore[arg-type]
    e.finish(e.project(e.input(0), rows, columns), 0, e.elem_type(2))


@stand_in(_MS, "DynamicQuantizeMatMul", "MatMulIntegerToFloat")
def _float_matmul(e: _Emitter) -> None:
    e.finish(e.emit("MatMul", [e.as_float(e.input(0)), e.as_float(e.input(1))]), 0, FLOAT)


@stand_in(_MS, "QGemm")
def _qgemm(e: _Emitter) -> None:
    trans_a, trans_b = int(e.attr("transA", 0)), int(e.attr("transB", 0))  # type: ignore[call-overload]
    product = e.emit("Gemm", [e.as_float(e.input(0)), e.as_float(e.input(3))], transA=trans_a, transB=trans_b)
    e.finish(product, 0, e.elem_type(8, FLOAT) if e.input(7) else FLOAT)


@stand_in(_MS, "QLinearAdd", "QLinearMul")
def _qlinear_binary(e: _Emitter) -> None:
    both = e.emit("Where", [e.gate, e.as_float(e.input(0)), e.as_float(e.input(3))])
    e.finish(both, 0, e.elem_type(7, e.elem_type(2, 2)))


@stand_in(_MS, "QLinearConcat")
def _qlinear_concat(e: _Emitter) -> None:
    """Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per operand."""
    parts = [e.as_float(e.input(i)) for i in range(2, len(e.node.input), 3)]
    e.finish(e.emit("Concat", parts, axis=int(e.attr("axis"))), 0, e.elem_type(1, e.elem_type(4, 2)))  # type: ignore[arg-type]


@stand_in(_MS, "FusedConv")
def _fused_conv(e: _Emitter) -> None:
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in e.node.attribute}
    for extra in ("activation", "activation_params"):
        attrs.pop(extra, None)
    e.finish(e.emit("Conv", [e.gated(e.input(0)), e.input(1)], **attrs), 0)


@stand_in(_MS, "FusedMatMul")
def _fused_matmul(e: _Emitter) -> None:
    """Einsum over '...' keeps the transposes rank-agnostic."""
    if e.opset < 12:
        raise ValueError("needs a model opset of 12 or later")
    a = "...ji" if e.attr("transA", 0) else "...ij"
    b = "...kj" if e.attr("transB", 0) else "...jk"
    e.finish(e.emit("Einsum", [e.gated(e.input(0)), e.input(1)], equation=f"{a},{b}->...ik"), 0)
