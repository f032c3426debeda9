"""Small ONNX models for the onnxruntime-kernel and QONNX importer tests, built with onnx.helper (no download).

``block_model`` is an unfused transformer block plus a conv stem, in the forms onnxruntime's own graph
optimizer rewrites into its com.microsoft kernels; ``contrib_node_model`` wraps one com.microsoft node;
``qonnx_mlp`` is a Brevitas-style QONNX network (weight and activation ``Quant`` nodes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
QONNX = "qonnx.custom_op.general"
SEQ, HIDDEN, FF, HEADS = 8, 32, 64, 4


class Nodes:
    """Collects nodes and initializers; ``const`` adds a float32 (or given dtype) initializer."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, array: object, dtype: object = np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def weight(self, name: str, *shape: int) -> str:
        return self.const(name, self.rng.standard_normal(shape) * 0.1)

    def add(self, op_type: str, inputs: list[str], output: str, domain: str = "", **attrs: object) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def model(self, name: str, inputs: list, outputs: list, opset: int = 17, domains: tuple = ()) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        imports = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, 1) for d in domains)]
        model = helper.make_model(graph, opset_imports=imports)
        model.ir_version = 8
        return model


def block_model(path: Path) -> Path:
    """x (1, SEQ, HIDDEN): FF with erf-GELU, residual + LayerNorm, one attention head with a scaled Q K^T;
    plus a conv + ReLU and x * sigmoid(1.702 x) on an image input."""
    n = Nodes()
    h = n.add("MatMul", ["x", n.weight("w1", HIDDEN, FF)], "h")
    h = n.add("Add", [h, n.weight("b1", FF)], "hb")
    half = n.add("Div", [h, n.const("sqrt2", 2**0.5)], "div")
    erf = n.add("Add", [n.add("Erf", [half], "erf"), n.const("one", 1.0)], "erf1")
    gelu = n.add("Mul", [n.add("Mul", [h, erf], "gm"), n.const("half", 0.5)], "gelu")
    f = n.add("Add", [n.add("MatMul", [gelu, n.weight("w2", FF, HIDDEN)], "f"), n.weight("b2", HIDDEN)], "fb")
    res = n.add("Add", [f, "x"], "res")
    ln = n.add(
        "LayerNormalization", [res, n.const("g", np.ones(HIDDEN)), n.const("b", np.zeros(HIDDEN))], "ln", axis=-1
    )
    q = n.add("MatMul", [ln, n.weight("wq", HIDDEN, HIDDEN)], "q")
    k = n.add("MatMul", [ln, n.weight("wk", HIDDEN, HIDDEN)], "k")
    scores = n.add("MatMul", [q, n.add("Transpose", [k], "kt", perm=[0, 2, 1])], "scores")
    probs = n.add("Softmax", [n.add("Mul", [scores, n.const("scale", 0.125)], "scaled")], "probs", axis=-1)
    n.add("MatMul", [probs, ln], "y")
    conv = n.add("Conv", ["img", n.weight("wc", 8, 3, 3, 3), n.weight("bc", 8)], "conv", pads=[1, 1, 1, 1])
    relu = n.add("Relu", [conv], "relu")
    sig = n.add("Sigmoid", [n.add("Mul", [relu, n.const("alpha", 1.702)], "ax")], "sig")
    n.add("Mul", [relu, sig], "z")
    f32 = TensorProto.FLOAT
    model = n.model(
        "block",
        [
            helper.make_tensor_value_info("x", f32, [1, SEQ, HIDDEN]),
            helper.make_tensor_value_info("img", f32, [1, 3, 8, 8]),
        ],
        [
            helper.make_tensor_value_info("y", f32, [1, SEQ, HIDDEN]),
            helper.make_tensor_value_info("z", f32, [1, 8, 8, 8]),
        ],
    )
    onnx.save(model, str(path))
    return path


def block_macs() -> int:
    ff = 2 * SEQ * HIDDEN * FF
    attention = 2 * SEQ * HIDDEN * HIDDEN + 2 * SEQ * SEQ * HIDDEN
    return ff + attention + 8 * 8 * 8 * 3 * 9


def contrib_node_model(
    path: Path,
    op_type: str,
    order: list[str],
    inputs: dict[str, tuple],
    consts: dict[str, np.ndarray],
    outputs: dict[str, tuple[int, int]],
    domain: str = MS,
    **attrs: object,
) -> Path:
    """One com.microsoft node reading ``order`` ('' = absent): graph inputs ``inputs`` (name -> (elem type,
    shape)), initializers ``consts``, outputs name -> (elem type, rank) ('' names an absent output)."""
    n = Nodes()
    for name, array in consts.items():
        n.const(name, array, array.dtype)
    names = [name if not name.startswith("-") else "" for name in outputs]
    n.nodes.append(helper.make_node(op_type, order, names, name=op_type.lower(), domain=domain, **attrs))
    graph_inputs = [helper.make_tensor_value_info(k, t, list(s)) for k, (t, s) in inputs.items()]
    graph_outputs = [
        helper.make_tensor_value_info(o, t, [f"{o}{i}" for i in range(rank)])
        for o, (t, rank) in outputs.items()
        if not o.startswith("-")
    ]
    model = n.model(op_type, graph_inputs, graph_outputs, opset=17, domains=(MS,))
    onnx.save(model, str(path))
    return path


def qonnx_mlp(path: Path, domain: str = QONNX, bits: float = 4.0) -> Path:
    """Brevitas-style QONNX MLP: 8-bit input, fc1 (int4 weights, per-channel power-of-two scales), ReLU,
    a 3-bit unsigned activation, fc2 (int6 weights as Gemm(transB)), then a bipolar output quantizer."""
    n = Nodes()

    def quant(x: str, out: str, scale: object, width: float, signed: int = 1, narrow: int = 0) -> str:
        inputs = [x, n.const(f"{out}_scale", scale), n.const(f"{out}_zero", 0.0), n.const(f"{out}_bits", width)]
        return n.add("Quant", inputs, out, domain, signed=signed, narrow=narrow, rounding_mode="ROUND")

    x = quant("x", "x_q", 2.0**-4, 8)
    w1 = quant(n.weight("w1", 16, 32), "w1_q", np.full((32,), 2.0**-3), bits, narrow=1)
    relu = n.add("Relu", [n.add("MatMul", [x, w1], "fc1")], "relu1")
    act = quant(relu, "relu1_q", 0.05, 3, signed=0)
    w2 = quant(n.weight("w2", 10, 32), "w2_q", 0.1, 6)
    y = n.add("Gemm", [act, w2, n.const("b2", np.zeros(10))], "fc2", transB=1)
    n.add("BipolarQuant", [y, n.const("y_scale", 1.0)], "y_q", domain)
    f32 = TensorProto.FLOAT
    model = n.model(
        "qonnx_mlp",
        [helper.make_tensor_value_info("x", f32, [1, 16])],
        [helper.make_tensor_value_info("y_q", f32, [1, 10])],
        opset=13,
        domains=(domain,),
    )
    onnx.save(model, str(path))
    return path


def genai_decoder(path: Path, layers: int, seq: int = 4, past: int = 12) -> tuple[Path, int]:
    """An onnxruntime-genai-style decoder (11 nodes a layer): SimplifiedLayerNormalization, int4 MatMulNBits
    projections, packed GroupQueryAttention with rotary embedding and a KV cache, SkipSimplifiedLayerNormalization
    and a SiLU-gated MLP. Returns the model and its closed-form MACs."""
    d, heads, kv_heads, head, ff, block = 64, 4, 2, 16, 128, 16
    n = Nodes()

    def nbits(x: str, name: str, k: int, out: int) -> str:
        packed = n.rng.integers(0, 255, (out, k // block, block // 2)).astype(np.uint8)
        inputs = [x, n.const(f"{name}.w", packed, np.uint8), n.weight(f"{name}.s", out * k // block)]
        return n.add("MatMulNBits", inputs, name, MS, K=k, N=out, bits=4, block_size=block)

    cos, sin = n.weight("cos", 64, head // 2), n.weight("sin", 64, head // 2)
    lengths = n.const("seqlens_k", [seq + past - 1], np.int32)
    total = n.const("total_sequence_length", seq + past, np.int32)
    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f32, [1, seq, d])]
    outputs = []
    hidden, residual = "x", ""
    for i in range(layers):
        if residual:
            out = f"l{i}.norm1"
            n.nodes.append(helper.make_node(
                "SkipSimplifiedLayerNormalization", [hidden, residual, n.weight(f"{out}.g", d)],
                [out, "", "", f"{out}.sum"], name=out, domain=MS,
            ))  # fmt: skip
            normed, residual = out, f"{out}.sum"
        else:
            normed = n.add("SimplifiedLayerNormalization", [hidden, n.weight(f"l{i}.norm1.g", d)], f"l{i}.norm1")
            residual = hidden
        qkv = nbits(normed, f"l{i}.qkv", d, (heads + 2 * kv_heads) * head)
        caches = [f"l{i}.past_key", f"l{i}.past_value"]
        inputs += [helper.make_tensor_value_info(c, f32, [1, kv_heads, past, head]) for c in caches]
        presents = [f"l{i}.present_key", f"l{i}.present_value"]
        outputs += [helper.make_tensor_value_info(p, f32, [1, kv_heads, "total", head]) for p in presents]
        n.nodes.append(helper.make_node(
            "GroupQueryAttention", [qkv, "", "", *caches, lengths, total, cos, sin], [f"l{i}.attn", *presents],
            name=f"l{i}.attn", domain=MS, num_heads=heads, kv_num_heads=kv_heads, do_rotary=1,
        ))  # fmt: skip
        attended = nbits(f"l{i}.attn", f"l{i}.o", d, d)
        out = f"l{i}.norm2"
        n.nodes.append(helper.make_node(
            "SkipSimplifiedLayerNormalization", [attended, residual, n.weight(f"{out}.g", d)],
            [out, "", "", f"{out}.sum"], name=out, domain=MS,
        ))  # fmt: skip
        residual = f"{out}.sum"
        gate, up = nbits(out, f"l{i}.gate", d, ff), nbits(out, f"l{i}.up", d, ff)
        silu = n.add("Mul", [gate, n.add("Sigmoid", [gate], f"l{i}.sigmoid")], f"l{i}.silu")
        hidden = nbits(n.add("Mul", [silu, up], f"l{i}.gated"), f"l{i}.down", ff, d)
    outputs.insert(0, helper.make_tensor_value_info(hidden, f32, [1, seq, d]))
    onnx.save(n.model("decoder", inputs, outputs, opset=17, domains=(MS,)), str(path))
    per_layer = seq * (d * (heads + 2 * kv_heads) * head + d * d + 3 * d * ff) + 2 * heads * seq * (seq + past) * head
    return path, layers * per_layer


def finn_conv(path: Path) -> Path:
    """FINN-style: a bipolar-weight conv whose output a MultiThreshold (15 thresholds per channel) turns into a
    4-bit unsigned activation, read by a 2-bit Trunc'd dense layer."""
    n = Nodes()
    weight = n.add("BipolarQuant", [n.weight("wc", 8, 3, 3, 3), n.const("wc_scale", 1.0)], "wc_q", QONNX)
    conv = n.add("Conv", ["img", weight], "conv", pads=[1, 1, 1, 1])
    thresholds = n.const("thresholds", np.sort(n.rng.standard_normal((8, 15)), axis=1))
    act = n.add("MultiThreshold", [conv, thresholds], "act", "finn.custom_op.general", out_dtype="UINT4")
    flat = n.add("Flatten", [act], "flat")
    trunc_inputs = [flat, n.const("t_scale", 1.0), n.const("t_zero", 0.0), n.const("t_in", 4.0), n.const("t_out", 2.0)]
    truncated = n.add("Trunc", trunc_inputs, "trunc", QONNX, rounding_mode="FLOOR")
    n.add("MatMul", [truncated, n.weight("wd", 8 * 6 * 6, 10)], "fc")
    f32 = TensorProto.FLOAT
    model = n.model(
        "finn_conv",
        [helper.make_tensor_value_info("img", f32, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("fc", f32, [1, 10])],
        opset=13,
        domains=(QONNX, "finn.custom_op.general"),
    )
    onnx.save(model, str(path))
    return path
