"""Converters for the ops real PyTorch / Hugging Face exports use beyond the classic CNN set.

Table-driven: elementwise functions, data movement (copies: Slice, Gather, Split, Expand, Pad, ...)
and reductions each become one IR elementwise op sized by ONNX's inferred output shape. Gather on a
weight is an embedding look-up (its table is a weight). Einsum, LSTM/GRU/RNN, ConvTranspose and the
fused Attention op become matmuls with their exact MAC counts; InstanceNorm/GroupNorm/RMSNorm become
layernorm ops.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dse.graph import PRECISION_BYTES, OpKind
from dse.importers.onnx_walk import Activation, Constant, GraphWalk, normalize_axis

if TYPE_CHECKING:
    import onnx

# Unary elementwise ops beyond the classic set -> IR function names.
MORE_UNARY: dict[str, str] = {
    "Softplus": "softplus",
    "Mish": "mish",
    "Swish": "silu",
    "Reciprocal": "reciprocal",
    "IsNaN": "isnan",
    "IsInf": "isinf",
    "Abs": "abs",
    "Log": "log",
    "Sin": "sin",
    "Cos": "cos",
    "Sign": "sign",
    "Not": "not",
    "Elu": "elu",
    "Selu": "selu",
    "Celu": "celu",
    "Softsign": "softsign",
    "ThresholdedRelu": "thresholded_relu",
    "Round": "round",
    "Floor": "floor",
    "Ceil": "ceil",
    "LRN": "lrn",
    "LpNormalization": "lp_norm",
    "CumSum": "cumsum",
}
# Broadcasting n-ary elementwise ops -> IR function names.
MORE_NARY: dict[str, str] = {
    "Equal": "equal",
    "Less": "less",
    "LessOrEqual": "less_equal",
    "Greater": "greater",
    "GreaterOrEqual": "greater_equal",
    "And": "and",
    "Or": "or",
    "Xor": "xor",
    "Mod": "mod",
    "Min": "min",
    "Max": "max",
    "Mean": "mean",
    "Where": "where",
    "PRelu": "prelu",
    "BitShift": "shift",
}
# Ops that move or select data: one copy op whose size is the output; only input 0 may be a weight.
MORE_DATA_MOVEMENT: dict[str, str] = {
    "Slice": "slice",
    "Gather": "gather",
    "GatherElements": "gather",
    "GatherND": "gather",
    "Expand": "expand",
    "Tile": "tile",
    "Pad": "pad",
    "Resize": "resize",
    "Upsample": "resize",
    "Trilu": "trilu",
    "DepthToSpace": "depth_to_space",
    "SpaceToDepth": "space_to_depth",
    "ScatterND": "scatter",
    "ScatterElements": "scatter",
    "Range": "range",
    "OneHot": "one_hot",
}
# Reductions: work scales with the input, the output is smaller.
MORE_REDUCE: dict[str, str] = {
    "ReduceMean": "reduce_mean",
    "ReduceSum": "reduce_sum",
    "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_min",
    "ReduceProd": "reduce_prod",
    "ReduceL1": "reduce_l1",
    "ReduceL2": "reduce_l2",
    "ReduceSumSquare": "reduce_sum_square",
    "ReduceLogSumExp": "reduce_logsumexp",
    "ArgMax": "argmax",
    "ArgMin": "argmin",
    "TopK": "topk",
}
# Views: they change only how a value is typed or named.
MORE_VIEWS = ("Cast", "CastLike")
MORE_OTHER = (
    "Split",
    "Einsum",
    "ConvTranspose",
    "LSTM",
    "GRU",
    "RNN",
    "Attention",
    "InstanceNormalization",
    "GroupNormalization",
    "RMSNormalization",
)
RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def lookup_attrs(table: Constant, out_shape: tuple[int, ...], elem_bytes: int) -> dict[str, object]:
    """What an embedding look-up (a Gather from a weight table) reads: the rows it selects, not the table.

    Each output element is one table element read. The cost models price its weight READ traffic through
    Graph.read_numel, which scales the table by 'weight_read_fraction' (capped at 1: a row read twice is on
    chip); the table's storage (Tensor.nbytes, the graph's weight bytes) stays whole. 'rows' and
    'weight_read_bytes' (rows x row bytes for an axis-0 look-up) are the same figure, kept for callers.
    """
    width = PRECISION_BYTES[table.precision] if table.precision in PRECISION_BYTES else elem_bytes
    return {
        "rows": math.prod(out_shape) // max(1, math.prod(table.shape[1:])),
        "weight_read_bytes": math.prod(out_shape) * width,
        "weight_read_fraction": min(1.0, math.prod(out_shape) / math.prod(table.shape)),
    }


class MoreOps(GraphWalk):
    """Converters for the ops in this module's tables; OnnxImporter registers them."""

    def _table_elementwise(self, node: onnx.NodeProto, name: str) -> None:
        """Unary or broadcasting n-ary op: one elementwise op over the output, constants as weights."""
        fn = MORE_UNARY.get(node.op_type) or MORE_NARY[node.op_type]
        operands = self._present_inputs(node)
        activations = [v for v in operands if isinstance(v, Activation)]
        constants = [v for v in operands if isinstance(v, Constant)]
        self._elementwise(node, name, fn, activations, self._inferred_shape(node, name), constants)

    def _data_movement(self, node: onnx.NodeProto, name: str) -> None:
        """A copy that selects or replicates data; Gather from a weight is an embedding look-up."""
        fn = MORE_DATA_MOVEMENT[node.op_type]
        data = self._input(node, 0)
        activations = [v for v in self._present_inputs(node) if isinstance(v, Activation)]
        out_shape = self._inferred_shape(node, name)
        weights = {"table": data.shape} if isinstance(data, Constant) and math.prod(data.shape) > 1 else None
        attrs: dict[str, object] = {"fn": fn, "arity": len(activations)}
        if fn == "gather" and weights and isinstance(data, Constant):
            attrs.update(lookup_attrs(data, out_shape, self.elem_bytes))
        out = self.builder.add_op(
            name,
            OpKind.ELEMENTWISE,
            {"N": math.prod(out_shape)},
            [self._use(a) for a in activations],
            out_shape,
            weights,
            attrs,
        )
        self._bind_op(node, name, out)

    def _reduce(self, node: onnx.NodeProto, name: str) -> None:
        x = self._activation(node, name)
        out = self.builder.add_op(
            name,
            OpKind.ELEMENTWISE,
            {"N": math.prod(x.shape)},
            [self._use(x)],
            self._inferred_shape(node, name),
            None,
            {"fn": MORE_REDUCE[node.op_type], "arity": 1},
        )
        self._bind_op(node, name, out)
        for index in range(1, len(node.output)):  # TopK's indices: the same selection
            if node.output[index]:
                self._bind(node, name, Activation(out, self._inferred_shape(node, name, index)), index)

    def _cast(self, node: onnx.NodeProto, name: str) -> None:
        source = self._activation(node, name)
        self._view(node, name, source, source.shape)

    def _split(self, node: onnx.NodeProto, name: str) -> None:
        """Each part is a copy of its slice of the input (one op per output)."""
        x = self._activation(node, name)
        for index, out_name in enumerate(node.output):
            if not out_name:
                continue
            shape = self._inferred_shape(node, name, index)
            out = self.builder.add_op(
                f"{name}:{index}",
                OpKind.ELEMENTWISE,
                {"N": math.prod(shape)},
                [self._use(x)],
                shape,
                None,
                {"fn": "slice", "arity": 1},
            )
            self._bind(node, name, Activation(out, shape), index)

    def _einsum(self, node: onnx.NodeProto, name: str) -> None:
        """Two-operand einsum as one batched matmul: MACs = the product of every index's size."""
        raw = self._attrs(node)["equation"]
        equation = (raw.decode() if isinstance(raw, bytes) else str(raw)).replace(" ", "")
        operands = self._present_inputs(node)
        lhs, _, out_letters = equation.partition("->")
        terms = lhs.split(",")
        if len(operands) != 2 or len(terms) != 2 or "." in equation or not _:
            raise self._error(name, node, f"only two-operand einsums without '...' are supported, got {equation!r}")
        sizes: dict[str, int] = {}
        for term, value in zip(terms, operands):
            if len(term) != len(value.shape):
                raise self._error(name, node, f"term {term!r} does not match operand shape {value.shape}")
            for letter, size in zip(term, value.shape):
                sizes[letter] = max(sizes.get(letter, 1), size)
        a_terms, b_terms = set(terms[0]), set(terms[1])
        outs = set(out_letters)

        def size_of(letters: set[str]) -> int:
            return math.prod(sizes[c] for c in letters)

        dims = {
            "B": size_of(a_terms & b_terms & outs),
            "M": size_of((a_terms - b_terms) & outs),
            "N": size_of((b_terms - a_terms) & outs),
            "K": size_of((a_terms | b_terms) - outs),
        }
        activations = [v for v in operands if isinstance(v, Activation)]
        constants = [v for v in operands if isinstance(v, Constant)]
        weights = {"weight": constants[0].shape} if constants else None
        out = self.builder.add_op(
            name,
            OpKind.MATMUL,
            dims,
            [self._use(a) for a in activations],
            self._inferred_shape(node, name),
            weights,
            {"equation": equation},
        )
        self._bind_op(node, name, out)

    def _conv_transpose(self, node: onnx.NodeProto, name: str) -> None:
        """Every input pixel times the whole kernel: a grouped matmul of N*H*W pixels by C/G -> K/G*R*S
        (torch's own count, N*H*W*C*K/G*R*S MACs); its scatter-add into the strided output moves data only."""
        x = self._activation(node, name)
        weight = self._constant(node, name, 1, "weight")
        group = int(self._attrs(node).get("group", 1))
        channels, out_per_group = weight.shape[0], weight.shape[1]
        if len(x.shape) < 3 or x.shape[1] != channels or channels % group:
            raise self._error(
                name, node, f"weight shape {weight.shape} with group={group} does not match input shape {x.shape}"
            )
        weights = {"weight": weight.shape}
        bias = self._input(node, 2)
        if isinstance(bias, Constant):
            weights["bias"] = bias.shape
        dims = {
            "B": group,
            "M": x.shape[0] * math.prod(x.shape[2:]),
            "N": out_per_group * math.prod(weight.shape[2:]),
            "K": channels // group,
        }
        out = self.builder.add_op(
            name,
            OpKind.MATMUL,
            dims,
            [self._use(x)],
            self._inferred_shape(node, name),
            weights,
            {"transposed_conv": True},
        )
        self._bind_op(node, name, out)

    def _volume_conv(
        self, node: onnx.NodeProto, name: str, x: Activation, weight: Constant, group: int, bias_index: int
    ) -> None:
        """A 3-D (video) Conv as its im2col matmul: N*D'*H'*W' output pixels by C/G*kd*kh*kw -> K/G per group
        (exact MACs, torch's count); the output shape is ONNX's inferred one."""
        out_shape = self._inferred_shape(node, name)
        weights = {"weight": weight.shape}
        bias = self._input(node, bias_index) if bias_index >= 0 else None
        if isinstance(bias, Constant):
            weights["bias"] = bias.shape
        dims = {
            "B": group,
            "M": out_shape[0] * math.prod(out_shape[2:]),
            "N": weight.shape[0] // group,
            "K": math.prod(weight.shape[1:]),
        }
        out = self.builder.add_op(name, OpKind.MATMUL, dims, [self._use(x)], out_shape, weights, {"conv3d": True})
        self._bind_op(node, name, out)

    def _recurrent(self, node: onnx.NodeProto, name: str) -> None:
        """LSTM/GRU/RNN: every step multiplies [x_t, h_{t-1}] by the gate weights (exact MACs)."""
        x = self._activation(node, name)
        w = self._constant(node, name, 1, "input weights W")
        r = self._constant(node, name, 2, "recurrence weights R")
        attrs = self._attrs(node)
        layout = int(attrs.get("layout", 0))
        seq, batch = (x.shape[0], x.shape[1]) if layout == 0 else (x.shape[1], x.shape[0])
        directions, gate_rows, features = w.shape
        hidden = r.shape[2]
        if gate_rows != RNN_GATES[node.op_type] * hidden:
            raise self._error(name, node, f"W has {gate_rows} rows; {node.op_type} needs gates x hidden_size")
        weights = {"W": w.shape, "R": r.shape}
        bias = self._input(node, 3)
        if isinstance(bias, Constant):
            weights["B"] = bias.shape
        dims = {"B": directions, "M": seq * batch, "N": gate_rows, "K": features + hidden}
        out_shape = self._inferred_shape(node, name) if node.output[0] else (seq, directions, batch, hidden)
        out = self.builder.add_op(
            name, OpKind.MATMUL, dims, [self._use(x)], out_shape, weights, {"recurrent": node.op_type, "steps": seq}
        )
        if node.output[0]:
            self._bind_op(node, name, out)
        for index in range(1, len(node.output)):  # final hidden / cell state: the last step's slice
            if node.output[index]:
                shape = self._inferred_shape(node, name, index)
                state = self.builder.add_op(
                    f"{name}:state{index}", OpKind.ELEMENTWISE, {"N": math.prod(shape)}, [out], shape, None,
                    {"fn": "slice", "arity": 1},
                )  # fmt: skip
                self._bind(node, name, Activation(state, shape), index)

    def _attention(self, node: onnx.NodeProto, name: str) -> None:
        """ONNX Attention (opset 23): QK^T, softmax and PV, with the key/value heads shared (GQA) as given."""
        q = self._activation(node, name, 0)
        k = self._activation(node, name, 1)
        v = self._activation(node, name, 2)
        attrs = self._attrs(node)
        if len(q.shape) == 4:
            batch, q_heads, q_len, head_dim = q.shape
            kv_len, v_dim = k.shape[2], v.shape[3]
        else:
            q_heads = int(attrs.get("q_num_heads", 1))
            kv_heads = int(attrs.get("kv_num_heads", 1))
            batch, q_len = q.shape[0], q.shape[1]
            head_dim, kv_len, v_dim = q.shape[2] // q_heads, k.shape[1], v.shape[2] // kv_heads
        rows = batch * q_heads
        scores = self.builder.add_op(
            f"{name}:qk", OpKind.MATMUL, {"B": rows, "M": q_len, "N": kv_len, "K": head_dim},
            [self._use(q), self._use(k)], (batch, q_heads, q_len, kv_len), None, {"transpose_b": True},
        )  # fmt: skip
        probs = self.builder.add_op(
            f"{name}:softmax", OpKind.SOFTMAX, {"R": rows * q_len, "L": kv_len}, [scores],
            (batch, q_heads, q_len, kv_len),
        )  # fmt: skip
        out = self.builder.add_op(
            f"{name}:pv", OpKind.MATMUL, {"B": rows, "M": q_len, "N": v_dim, "K": kv_len},
            [probs, self._use(v)], self._inferred_shape(node, name), None, {"transpose_b": False},
        )  # fmt: skip
        self._bind_op(node, name, out)
        for index, source in ((1, k), (2, v)):  # present key/value: the cache is the inputs themselves
            if index < len(node.output) and node.output[index]:
                self._view(node, name, source, self._inferred_shape(node, name, index))

    def _norm(self, node: onnx.NodeProto, name: str) -> None:
        """InstanceNorm / GroupNorm / RMSNorm: a layernorm over each group's elements."""
        x = self._activation(node, name)
        attrs = self._attrs(node)
        if node.op_type == "RMSNormalization":
            axis = normalize_axis(int(attrs.get("axis", -1)), len(x.shape))
            rows, length, channels = math.prod(x.shape[:axis]), math.prod(x.shape[axis:]), x.shape[-1]
        else:
            groups = int(attrs.get("num_groups", x.shape[1])) if node.op_type == "GroupNormalization" else x.shape[1]
            rows, length, channels = x.shape[0] * groups, math.prod(x.shape[1:]) // groups, x.shape[1]
        out = self.builder.add_op(
            name,
            OpKind.LAYERNORM,
            {"R": rows, "L": length},
            [self._use(x)],
            x.shape,
            {"gamma": (channels,), "beta": (channels,)},
            {"norm": node.op_type},
        )
        self._bind_op(node, name, out)
