"""ONNX and SCALE-Sim CSV importers: op kinds, loop bounds and MACs against hand counts.

Every ONNX model is built here with onnx.helper (nothing is downloaded), saved to a
temporary folder and imported through the public ``load_onnx``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dse.graph import GraphError, OpKind
from dse.importers.onnx_import import SUPPORTED_OP_TYPES, load_onnx
from dse.importers.scalesim_csv import load_scalesim_csv

SHARED = Path(__file__).resolve().parents[2] / "shared"
SCALESIM_DATA = SHARED / "data" / "scalesim"
OPSET = 17


# -- ONNX construction helpers ---------------------------------------------------
class OnnxModel:
    """Collects nodes and initializers, then writes a checked ONNX file."""

    def __init__(self, dtype: int = TensorProto.FLOAT):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.dtype = dtype

    def weight(self, name: str, shape: tuple[int, ...], value: float = 0.0) -> str:
        np_type = helper.tensor_dtype_to_np_dtype(self.dtype)
        self.initializers.append(numpy_helper.from_array(np.full(shape, value, dtype=np_type), name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def node(self, op_type: str, inputs: list[str], name: str = "", outputs: list[str] | None = None, **attrs) -> str:
        out = outputs or [f"{name or op_type + str(len(self.nodes))}_y"]
        self.nodes.append(helper.make_node(op_type, inputs, out, name=name or None, **attrs))
        return out[0]

    def conv_bn_relu(self, x: str, name: str, c_in: int, c_out: int, k: int, stride: int = 1, pad: int = 0) -> str:
        w = self.weight(f"{name}.w", (c_out, c_in, k, k))
        y = self.node("Conv", [x, w], name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        y = self.batchnorm(y, f"{name}_bn", c_out)
        return y

    def batchnorm(self, x: str, name: str, channels: int) -> str:
        params = [self.weight(f"{name}.{p}", (channels,), 1.0) for p in ("scale", "bias", "mean", "var")]
        return self.node("BatchNormalization", [x, *params], name)

    def save(self, path: Path, inputs: list[onnx.ValueInfoProto], outputs: list[str], opset: int = OPSET) -> Path:
        graph = helper.make_graph(
            self.nodes,
            "test_graph",
            inputs,
            [helper.make_tensor_value_info(o, self.dtype, None) for o in outputs],
            self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        # declare every shape as ONNX infers it, as exporters do (the checker wants a shape on every output)
        model = onnx.shape_inference.infer_shapes(model)
        onnx.checker.check_model(model)
        onnx.save(model, str(path))
        return path


def _input(name: str, shape: list, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def small_cnn(path: Path) -> Path:
    """Conv+BN+Relu, MaxPool, a residual Add, GlobalAveragePool, Flatten, Gemm, Softmax."""
    m = OnnxModel()
    y = m.conv_bn_relu("x", "conv1", 3, 16, 3, pad=1)
    y = m.node("Relu", [y], "relu1")
    pooled = m.node("MaxPool", [y], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = m.node("Conv", [pooled, m.weight("conv2.w", (16, 16, 3, 3))], "conv2", kernel_shape=[3, 3], pads=[1] * 4)
    y = m.node("Relu", [y], "relu2")
    y = m.node("Add", [y, pooled], "residual")
    y = m.node("GlobalAveragePool", [y], "gap")
    y = m.node("Flatten", [y], "flatten", axis=1)
    y = m.node("Gemm", [y, m.weight("fc.w", (10, 16)), m.weight("fc.b", (10,))], "fc", transB=1)
    y = m.node("Softmax", [y], "softmax", axis=-1)
    return m.save(path, [_input("x", [1, 3, 32, 32])], [y])


# -- ONNX: small CNN -----------------------------------------------------------------
def test_small_cnn_ops_dims_and_macs(tmp_path: Path) -> None:
    graph = load_onnx(small_cnn(tmp_path / "cnn.onnx"))
    assert [(op.name, op.kind) for op in graph.ops] == [
        ("conv1", OpKind.CONV),
        ("relu1", OpKind.ELEMENTWISE),
        ("pool", OpKind.POOL),
        ("conv2", OpKind.CONV),
        ("relu2", OpKind.ELEMENTWISE),
        ("residual", OpKind.ELEMENTWISE),
        ("gap", OpKind.POOL),
        ("fc", OpKind.MATMUL),
        ("softmax", OpKind.SOFTMAX),
    ]
    conv1 = graph.op("conv1")
    assert dict(conv1.dims) == dict(N=1, K=16, C=3, H=32, W=32, P=32, Q=32, R=3, S=3, G=1)
    assert conv1.attrs["pad"] == (1, 1, 1, 1)
    assert conv1.macs == 16 * 32 * 32 * 3 * 9
    assert dict(graph.op("pool").dims) == dict(N=1, C=16, H=32, W=32, P=16, Q=16, R=2, S=2)
    assert graph.op("conv2").macs == 16 * 16 * 16 * 16 * 9
    assert dict(graph.op("fc").dims) == dict(B=1, M=1, N=10, K=16)
    assert dict(graph.op("softmax").dims) == dict(R=1, L=10)
    assert graph.macs == 16 * 32 * 32 * 3 * 9 + 16 * 16 * 16 * 16 * 9 + 16 * 10
    residual = graph.op("residual")
    assert residual.attrs == {"fn": "add", "arity": 2}
    assert residual.inputs == ("relu2:out", "pool:out")
    assert dict(graph.op("gap").dims) == dict(N=1, C=16, H=16, W=16, P=1, Q=1, R=16, S=16)
    assert graph.meta["source"] == str(tmp_path / "cnn.onnx")
    assert graph.meta["batch"] == 1


def test_batchnorm_is_folded_into_the_conv(tmp_path: Path) -> None:
    graph = load_onnx(small_cnn(tmp_path / "cnn.onnx"))
    assert graph.meta["folded_batchnorm"] == {"conv1_bn": "conv1"}
    assert not any(op.attrs.get("fn") == "batchnorm" for op in graph.ops)
    # the folded shift becomes the conv bias; the relu reads the conv output directly
    assert graph.op("conv1").weights == ("conv1:weight", "conv1:bias")
    assert graph.tensors["conv1:bias"].shape == (16,)
    assert graph.op("relu1").inputs == ("conv1:out",)
    assert ("conv1", "relu1", "conv1:out") in graph.edges()


def test_batchnorm_not_after_a_conv_is_an_elementwise_op(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("Relu", ["x"], "relu")
    y = m.batchnorm(y, "bn", 8)
    path = m.save(tmp_path / "bn.onnx", [_input("x", [2, 8, 4, 4])], [y])
    graph = load_onnx(path)
    bn = graph.op("bn")
    assert bn.kind is OpKind.ELEMENTWISE
    assert bn.attrs == {"fn": "batchnorm", "arity": 1}
    assert bn.dims == {"N": 2 * 8 * 4 * 4}
    assert graph.meta["folded_batchnorm"] == {}


def test_weights_shapes_and_elem_bytes_follow_precision(tmp_path: Path) -> None:
    path = small_cnn(tmp_path / "cnn.onnx")
    graph = load_onnx(path, precision="fp16")
    assert graph.tensors["conv1:weight"].shape == (16, 3, 3, 3)
    assert graph.tensors["conv2:weight"].shape == (16, 16, 3, 3)
    assert graph.tensors["fc:bias"].shape == (10,)
    assert {t.elem_bytes for t in graph.tensors.values()} == {2}
    expected_weights = 16 * 3 * 9 + 16 + 16 * 16 * 9 + 16 * 10 + 10
    assert graph.weight_bytes == 2 * expected_weights
    assert load_onnx(path).weight_bytes == expected_weights


# -- ONNX: convolutions ----------------------------------------------------------------
def test_depthwise_and_dilated_and_1d_convs(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node(
        "Conv",
        ["x", m.weight("dw.w", (32, 1, 3, 3))],
        "dw",
        group=32,
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    )
    y = m.node("Conv", [y, m.weight("pw.w", (64, 32, 1, 1)), m.weight("pw.b", (64,))], "pw")
    y = m.node("Conv", [y, m.weight("dil.w", (64, 64, 3, 3))], "dilated", dilations=[2, 2], pads=[2, 2, 2, 2])
    y = m.node("Conv", [y, m.weight("same.w", (8, 64, 3, 3))], "same", auto_pad="SAME_UPPER", strides=[2, 2])
    y = m.node("Reshape", [y, m.ints("seq_shape", [1, 8, 196])], "to_seq")
    y = m.node("Conv", [y, m.weight("c1d.w", (4, 8, 5))], "conv1d", pads=[2, 2])
    path = m.save(tmp_path / "dw.onnx", [_input("x", [1, 32, 56, 56])], [y])
    graph = load_onnx(path)
    dw = graph.op("dw")
    assert dict(dw.dims) == dict(N=1, K=32, C=32, H=56, W=56, P=28, Q=28, R=3, S=3, G=32)
    assert dw.macs == 32 * 28 * 28 * 9
    assert graph.tensors["dw:weight"].shape == (32, 1, 3, 3)
    pw = graph.op("pw")
    assert pw.macs == 64 * 32 * 28 * 28 and pw.weights == ("pw:weight", "pw:bias")
    dilated = graph.op("dilated")
    assert (dilated.dims["P"], dilated.dims["Q"], dilated.attrs["dilation"]) == (28, 28, 2)
    same = graph.op("same")
    assert (same.dims["P"], same.dims["Q"]) == (14, 14)  # ceil(28 / 2)
    assert same.attrs["pad"] == (0, 0, 1, 1)  # SAME_UPPER puts the odd padding at the end
    conv1d = graph.op("conv1d")
    assert dict(conv1d.dims) == dict(N=1, K=4, C=8, H=1, W=196, P=1, Q=196, R=1, S=5, G=1)
    assert conv1d.macs == 4 * 8 * 196 * 5
    assert graph.tensors["conv1d:out"].shape == (1, 4, 196)


def test_transposed_convs_cost_torchs_count(tmp_path: Path) -> None:
    """Mask R-CNN's 2x2/2 upsampler and a grouped 4x4/2 one: every input pixel times the whole kernel
    (torch's FlopCounterMode count), with the output shape ONNX infers (the scatter-add moves data only)."""
    m = OnnxModel()
    y = m.node("ConvTranspose", ["x", m.weight("up.w", (16, 8, 2, 2)), m.weight("up.b", (8,))], "up", strides=[2, 2])
    y = m.node("ConvTranspose", [y, m.weight("kp.w", (8, 3, 4, 4))], "kp", strides=[2, 2], pads=[1, 1, 1, 1], group=2)
    path = m.save(tmp_path / "deconv.onnx", [_input("x", [2, 16, 14, 14])], [y])
    graph = load_onnx(path)
    up, kp = graph.op("up"), graph.op("kp")
    assert up.kind is OpKind.MATMUL and up.macs == 2 * 14 * 14 * 16 * 8 * 2 * 2
    assert graph.tensors["up:out"].shape == (2, 8, 28, 28) and up.weights == ("up:weight", "up:bias")
    assert kp.macs == 2 * 28 * 28 * 8 * (6 // 2) * 4 * 4  # 3 outputs per group, 2 groups: K = 6
    assert graph.tensors["kp:out"].shape == (2, 6, 56, 56)
    assert graph.macs == up.macs + kp.macs


def test_video_convs_cost_their_exact_macs(tmp_path: Path) -> None:
    """R(2+1)D's factorised 1x3x3 then 3x1x1 convs and a grouped strided 3x3x3: each is its im2col matmul
    (output voxels x C/G*kd*kh*kw x K/G), the output shape ONNX's."""
    m = OnnxModel()
    y = m.node("Conv", ["x", m.weight("s.w", (8, 3, 1, 3, 3))], "spatial", pads=[0, 1, 1, 0, 1, 1])
    y = m.node("Conv", [y, m.weight("t.w", (8, 8, 3, 1, 1)), m.weight("t.b", (8,))], "temporal", pads=[1, 0, 0] * 2)
    y = m.node("Conv", [y, m.weight("g.w", (4, 4, 3, 3, 3))], "grouped", group=2, strides=[2, 2, 2], pads=[1] * 6)
    path = m.save(tmp_path / "video.onnx", [_input("x", [1, 3, 4, 10, 10])], [y])
    graph = load_onnx(path)
    assert graph.op("spatial").macs == 8 * 4 * 10 * 10 * 3 * 1 * 3 * 3
    assert graph.op("temporal").macs == 8 * 4 * 10 * 10 * 8 * 3 and graph.op("temporal").weights[1] == "temporal:bias"
    assert graph.op("grouped").macs == 4 * 2 * 5 * 5 * (8 // 2) * 27  # K=4, 2x5x5 outputs, 4 inputs per group
    assert graph.tensors["grouped:out"].shape == (1, 4, 2, 5, 5)


def test_batched_constant_right_operand_is_one_matrix_per_batch(tmp_path: Path) -> None:
    """MViT's relative-position term: activations (B, H, M, K) times a constant table (H, K, N)."""
    m = OnnxModel()
    y = m.node("MatMul", ["x", m.weight("rel", (4, 8, 5))], "rel_pos")
    path = m.save(tmp_path / "rel.onnx", [_input("x", [2, 4, 6, 8])], [y])
    graph = load_onnx(path)
    op = graph.op("rel_pos")
    assert op.macs == 2 * 4 * 6 * 5 * 8 and graph.tensors["rel_pos:out"].shape == (2, 4, 6, 5)
    assert graph.tensors["rel_pos:weight"].shape == (4, 8, 5)


def test_pooling_variants(tmp_path: Path) -> None:
    m = OnnxModel()
    a = m.node("MaxPool", ["x"], "max_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    b = m.node("AveragePool", ["x"], "avg_rect", kernel_shape=[2, 3], strides=[2, 3], pads=[0, 0, 0, 1])
    c = m.node("GlobalMaxPool", ["x"], "gmax")
    path = m.save(tmp_path / "pool.onnx", [_input("x", [1, 4, 8, 8])], [a, b, c])
    graph = load_onnx(path)
    assert (graph.op("max_ceil").dims["P"], graph.op("max_ceil").dims["Q"]) == (4, 4)  # ceil((8 - 3) / 2) + 1
    rect = graph.op("avg_rect")
    assert dict(rect.dims) == dict(N=1, C=4, H=8, W=8, P=4, Q=3, R=2, S=3)
    assert rect.attrs["mode"] == "avg" and rect.attrs["stride"] == (2, 3)
    assert graph.op("gmax").attrs["mode"] == "max" and graph.op("gmax").dims["R"] == 8


# -- ONNX: transformer block ------------------------------------------------------------
def transformer_block(path: Path, seq: int = 8, dim: int = 16, heads: int = 2) -> Path:
    head_dim = dim // heads
    m = OnnxModel()
    ln = m.node("LayerNormalization", ["x", m.weight("ln.g", (dim,)), m.weight("ln.b", (dim,))], "ln1", axis=-1)
    proj = {p: m.node("MatMul", [ln, m.weight(f"{p}.w", (dim, dim))], f"{p}_proj") for p in "qkv"}
    split = m.ints("split_heads", [1, seq, heads, head_dim])
    q = m.node("Transpose", [m.node("Reshape", [proj["q"], split], "q_split")], "q_t", perm=[0, 2, 1, 3])
    k = m.node("Transpose", [m.node("Reshape", [proj["k"], split], "k_split")], "k_t", perm=[0, 2, 3, 1])
    v = m.node("Transpose", [m.node("Reshape", [proj["v"], split], "v_split")], "v_t", perm=[0, 2, 1, 3])
    scores = m.node("MatMul", [q, k], "scores")
    scaled = m.node("Div", [scores, m.weight("sqrt_dh", (), math.sqrt(head_dim))], "scale")
    probs = m.node("Softmax", [scaled], "softmax", axis=-1)
    ctx = m.node("MatMul", [probs, v], "context")
    ctx = m.node("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3])
    ctx = m.node("Reshape", [ctx, m.ints("merge_heads", [1, seq, dim])], "ctx_merge")
    out = m.node("MatMul", [ctx, m.weight("o.w", (dim, dim))], "o_proj")
    out = m.node("Add", [out, m.weight("o.b", (dim,))], "o_bias")
    res = m.node("Add", ["x", out], "residual")
    cat = m.node("Concat", [res, "x"], "concat", axis=-1)
    # GELU exported as its erf pattern: 0.5 * h * (1 + erf(h / sqrt(2)))
    h = m.node("MatMul", [cat, m.weight("ff.w", (2 * dim, dim))], "ff")
    e = m.node("Erf", [m.node("Div", [h, m.weight("sqrt2", (), math.sqrt(2))], "gelu_div")], "gelu_erf")
    e = m.node("Add", [e, m.weight("one", (), 1.0)], "gelu_add")
    g = m.node("Mul", [m.node("Mul", [h, e], "gelu_mul"), m.weight("half", (), 0.5)], "gelu_half")
    return m.save(path, [_input("x", [1, seq, dim])], [g])


def test_transformer_block(tmp_path: Path) -> None:
    seq, dim, heads = 8, 16, 2
    graph = load_onnx(transformer_block(tmp_path / "block.onnx", seq, dim, heads))
    names = [op.name for op in graph.ops]
    assert names == [
        "ln1",
        "q_proj",
        "k_proj",
        "v_proj",
        "scores",
        "scale",
        "softmax",
        "context",
        "o_proj",
        "o_bias",
        "residual",
        "concat",
        "ff",
        "gelu_div",
        "gelu_erf",
        "gelu_add",
        "gelu_mul",
        "gelu_half",
    ]  # reshapes and transposes are free views
    assert dict(graph.op("ln1").dims) == dict(R=seq, L=dim)
    assert graph.tensors["ln1:gamma"].shape == (dim,)
    for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert dict(graph.op(p).dims) == dict(B=1, M=seq, N=dim, K=dim)
        assert graph.op(p).weights == (f"{p}:weight",)
    scores = graph.op("scores")
    assert scores.kind is OpKind.MATMUL and scores.weights == ()
    assert dict(scores.dims) == dict(B=heads, M=seq, N=seq, K=dim // heads)
    assert scores.inputs == ("q_proj:out", "k_proj:out")
    assert dict(graph.op("context").dims) == dict(B=heads, M=seq, N=dim // heads, K=seq)
    assert dict(graph.op("softmax").dims) == dict(R=heads * seq, L=seq)
    scale = graph.op("scale")
    assert scale.attrs["arity"] == 1 and scale.inputs == ("scores:out",) and scale.weights == ()
    o_bias = graph.op("o_bias")  # activation + a bias vector: arity 1, the vector is a weight
    assert o_bias.attrs["arity"] == 1 and graph.tensors[o_bias.weights[0]].shape == (dim,)
    assert graph.op("residual").attrs == {"fn": "add", "arity": 2}
    assert graph.op("residual").inputs == ("x", "o_bias:out")
    concat = graph.op("concat")
    assert concat.kind is OpKind.ELEMENTWISE and concat.attrs["fn"] == "identity" and concat.attrs["arity"] == 2
    assert concat.inputs == ("residual:out", "x") and graph.tensors["concat:out"].shape == (1, seq, 2 * dim)
    assert concat.flops == 0
    assert dict(graph.op("ff").dims) == dict(B=1, M=seq, N=dim, K=2 * dim)
    assert graph.op("gelu_erf").attrs["fn"] == "erf"
    assert graph.op("gelu_mul").attrs["arity"] == 2
    expected = 4 * seq * dim * dim + 2 * heads * seq * seq * (dim // heads) + seq * 2 * dim * dim
    assert graph.macs == expected
    # every op is reachable: the DAG keeps the edges through the views and the concat
    consumers_of_ops = {dst for _, dst, _ in graph.edges()}
    assert consumers_of_ops == set(names) - {"ln1"}


# -- ONNX: batch and symbolic dimensions --------------------------------------------------
def symbolic_batch_model(path: Path, batch_dim: str | int = "N") -> Path:
    m = OnnxModel()
    y = m.node("Conv", ["x", m.weight("c.w", (4, 3, 1, 1))], "conv")
    y = m.node("Flatten", [y], "flatten")
    y = m.node("Gemm", [y, m.weight("fc.w", (256, 10))], "fc")
    return m.save(path, [_input("x", [batch_dim, 3, 8, 8])], [y])


def test_symbolic_batch_is_substituted(tmp_path: Path) -> None:
    path = symbolic_batch_model(tmp_path / "dyn.onnx")
    default = load_onnx(path)
    assert default.tensors["x"].shape == (1, 3, 8, 8) and default.meta["batch"] == 1
    graph = load_onnx(path, batch=4)
    assert graph.op("conv").dims["N"] == 4
    assert dict(graph.op("fc").dims) == dict(B=1, M=4, N=10, K=256)
    assert graph.macs == 4 * (4 * 64 * 3) + 4 * 256 * 10
    assert graph.macs == 4 * default.macs


def test_fixed_batch_is_kept_and_a_different_one_is_refused(tmp_path: Path) -> None:
    path = symbolic_batch_model(tmp_path / "fixed.onnx", batch_dim=2)
    assert load_onnx(path).op("conv").dims["N"] == 2
    assert load_onnx(path, batch=2).op("conv").dims["N"] == 2
    with pytest.raises(GraphError, match="fixed batch of 2"):
        load_onnx(path, batch=3)


def test_other_symbolic_dims_need_values(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("MatMul", ["x", m.weight("w", (16, 4))], "proj")
    path = m.save(tmp_path / "seq.onnx", [_input("x", ["batch", "seq", 16])], [y])
    with pytest.raises(GraphError, match="symbolic dimension 'seq' at axis 1") as info:
        load_onnx(path)
    assert info.value.node == "x" and "symbolic_dims" in str(info.value)
    graph = load_onnx(path, batch=2, symbolic_dims={"seq": 12})
    assert dict(graph.op("proj").dims) == dict(B=1, M=24, N=4, K=16)


# -- ONNX: names and errors ------------------------------------------------------------
def test_unnamed_nodes_get_optype_index_names(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("Relu", ["x"])
    y = m.node("Sigmoid", [y], "named")
    y = m.node("Tanh", [y])
    y = m.node("HardSwish", [y])
    y = m.node("LeakyRelu", [y])
    y = m.node("Clip", [y, m.weight("lo", (), 0.0), m.weight("hi", (), 6.0)])
    path = m.save(tmp_path / "unnamed.onnx", [_input("x", [1, 4])], [y])
    graph = load_onnx(path)
    assert [op.name for op in graph.ops] == ["Relu_0", "named", "Tanh_2", "HardSwish_3", "LeakyRelu_4", "Clip_5"]
    assert [op.attrs["fn"] for op in graph.ops] == ["relu", "sigmoid", "tanh", "hard_swish", "leaky_relu", "relu6"]


def test_unsupported_op_names_node_optype_and_supported_list(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("Relu", ["x"], "relu")
    y = m.node("Shrink", [y], "round_down")
    path = m.save(tmp_path / "unsupported.onnx", [_input("x", [1, 4])], [y])
    with pytest.raises(GraphError) as info:
        load_onnx(path)
    message = str(info.value)
    assert info.value.node == "round_down"
    assert "'round_down'" in message and "'Shrink'" in message
    assert ", ".join(sorted(SUPPORTED_OP_TYPES)) in message
    assert list(SUPPORTED_OP_TYPES) == sorted(SUPPORTED_OP_TYPES)
    for op_type in ("Conv", "Gemm", "MatMul", "Concat", "LayerNormalization", "Softmax", "GlobalAveragePool"):
        assert op_type in SUPPORTED_OP_TYPES


def test_unsupported_unnamed_node_gets_a_generated_name(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("Hardmax", [m.node("Relu", ["x"])])
    path = m.save(tmp_path / "unnamed.onnx", [_input("x", [1, 4])], [y])
    with pytest.raises(GraphError, match="'Hardmax_1'") as info:
        load_onnx(path)
    assert info.value.node == "Hardmax_1"


def test_missing_and_non_onnx_files(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.onnx"
    with pytest.raises(GraphError, match="nowhere.onnx"):
        load_onnx(missing)
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n" * 10)
    with pytest.raises(GraphError, match="notes.onnx"):
        load_onnx(text)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(GraphError, match="garbage.onnx"):
        load_onnx(garbage)


def test_bad_precision_and_batch(tmp_path: Path) -> None:
    path = small_cnn(tmp_path / "cnn.onnx")
    with pytest.raises(GraphError, match="unknown precision 'int3'; allowed: int4, int8"):
        load_onnx(path, precision="int3")
    with pytest.raises(GraphError, match="batch must be a positive integer"):
        load_onnx(path, batch=0)


def test_constant_nodes_and_constant_folding(tmp_path: Path) -> None:
    m = OnnxModel()
    shape = m.node("Constant", [], "shape_const", value=numpy_helper.from_array(np.array([2, -1], dtype=np.int64)))
    doubled = m.node("Mul", [m.weight("s", (4,), 2.0), m.weight("t", (4,), 3.0)], "const_mul")  # folded
    y = m.node("Reshape", ["x", shape], "flat")
    y = m.node("Add", [y, doubled], "bias_add")
    y = m.node("Unsqueeze", [y, m.ints("axes", [0])], "unsq")
    y = m.node("Squeeze", [y, m.ints("axes0", [0])], "sq")
    y = m.node("Sum", [y, "x_flat", y], "sum3")
    path = m.save(tmp_path / "const.onnx", [_input("x", [2, 2, 2]), _input("x_flat", [2, 4])], [y])
    graph = load_onnx(path)
    assert [op.name for op in graph.ops] == ["bias_add", "sum3"]
    assert graph.op("sum3").attrs == {"fn": "add", "arity": 3}
    assert graph.op("sum3").inputs == ("bias_add:out", "x_flat", "bias_add:out")
    op = graph.op("bias_add")
    assert op.dims == {"N": 8} and op.attrs["arity"] == 1
    assert graph.tensors[op.weights[0]].shape == (4,)
    assert graph.tensors["bias_add:out"].shape == (2, 4)


# -- ONNX mirrors the zoo ---------------------------------------------------------------
def resnet18_onnx(path: Path) -> Path:
    """torchvision-layout ResNet-18 with the zoo's (SCALE-Sim's) node names and BN after every conv."""
    m = OnnxModel(TensorProto.FLOAT16)  # halves the file; only shapes matter
    x = m.conv_bn_relu("image", "Conv1", 3, 64, 7, stride=2, pad=3)
    x = m.node("Relu", [x], "Conv1_relu")
    x = m.node("MaxPool", [x], "Pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    channels = 64
    for stage, width in enumerate((64, 128, 256, 512), start=2):
        for block in (1, 2):
            stride = 2 if block == 1 and stage > 2 else 1
            prefix = f"Conv{stage}_{block}"
            y = m.conv_bn_relu(x, f"{prefix}a", channels, width, 3, stride, 1)
            y = m.node("Relu", [y], f"{prefix}a_relu")
            y = m.conv_bn_relu(y, f"{prefix}b", width, width, 3, 1, 1)
            shortcut = x
            if stride != 1 or channels != width:
                shortcut = m.conv_bn_relu(x, f"Conv{stage}_s", channels, width, 1, stride, 0)
            x = m.node("Add", [y, shortcut], f"Res{stage}_{block}_add")
            x = m.node("Relu", [x], f"Res{stage}_{block}_relu")
            channels = width
    x = m.node("GlobalAveragePool", [x], "AvgPool")
    x = m.node("Flatten", [x], "flatten")
    x = m.node("Gemm", [x, m.weight("FC.w", (1000, 512)), m.weight("FC.b", (1000,))], "FC", transB=1)
    return m.save(path, [_input("image", ["batch", 3, 224, 224], TensorProto.FLOAT16)], [x])


def test_resnet18_onnx_mirrors_the_zoo(tmp_path: Path) -> None:
    zoo = pytest.importorskip("dse.zoo")
    if not hasattr(zoo, "build") or "resnet18" not in zoo.names():
        pytest.skip("dse.zoo has no resnet18 yet")
    reference = zoo.build("resnet18", batch=2, precision="int8")
    imported = load_onnx(resnet18_onnx(tmp_path / "resnet18.onnx"), batch=2)
    assert [op.name for op in imported.ops] == [op.name for op in reference.ops]
    for ours, theirs in zip(imported.ops, reference.ops):
        assert ours.kind == theirs.kind, ours.name
        assert dict(ours.dims) == dict(theirs.dims), ours.name
        assert ours.inputs == theirs.inputs, ours.name
        assert ours.shape_key() == theirs.shape_key(), ours.name
        assert [imported.tensors[w].shape for w in ours.weights] == [
            reference.tensors[w].shape for w in theirs.weights
        ], ours.name
    assert imported.macs == reference.macs == 2 * 1_814_073_344
    assert imported.weight_bytes == reference.weight_bytes
    assert sorted(imported.edges()) == sorted(reference.edges())


# -- SCALE-Sim CSV ---------------------------------------------------------------------
def _scalesim_reference_macs() -> dict[str, int]:
    per_layer = SCALESIM_DATA / "resnet18_per_layer.csv"
    with per_layer.open() as f:
        rows = [r for r in csv.DictReader(f) if r["topology_file"] == "resnet18.csv"]
    first_run = rows[0]["run"]
    return {r["layer"]: int(r["macs"]) for r in rows if r["run"] == first_run}


@pytest.mark.skipif(not (SCALESIM_DATA / "inputs" / "resnet18.csv").is_file(), reason=f"{SCALESIM_DATA} is absent")
def test_scalesim_resnet18_matches_scalesim_macs() -> None:
    graph = load_scalesim_csv(SCALESIM_DATA / "inputs" / "resnet18.csv")
    reference = _scalesim_reference_macs()
    assert len(graph.ops) == 21 == len(reference)
    assert [op.name for op in graph.ops] == list(reference)
    assert {op.name: op.macs for op in graph.ops} == reference
    assert all(op.kind is OpKind.CONV for op in graph.ops)
    conv1 = graph.op("Conv1")
    assert dict(conv1.dims) == dict(N=1, K=64, C=3, H=224, W=224, P=110, Q=110, R=7, S=7, G=1)
    assert graph.op("Conv2_1a").inputs == ("Conv2_1a:ifmap",)  # 54x54 output does not feed a 56x56 input
    assert graph.op("Conv3_1b").inputs == ("Conv3_1a:out",)  # shapes connect: chained
    assert len(graph.meta["scalesim_layers"]) == 21
    assert graph.meta["scalesim_layers"][0]["Layer name"] == "Conv1"
    assert graph.meta["scalesim_layers"][0]["Strides"] == "2"
    assert graph.meta["source"].endswith("resnet18.csv")
    assert load_scalesim_csv(SCALESIM_DATA / "inputs" / "resnet18.csv", batch=3).macs == 3 * sum(reference.values())


def _write(tmp_path: Path, text: str, name: str = "topo.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


CONV_HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"


def test_scalesim_chain_depthwise_and_sparsity(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        CONV_HEADER + "a,16,16,3,3,8,8,1,\nb,14,14,3,3,8,4,1,\nconvDP,12,12,3,3,4,2,1,\nc,5,5,1,1,8,8,1,2:4,\n",
    )
    graph = load_scalesim_csv(path)
    assert graph.op("b").inputs == ("a:out",)
    dp = graph.op("convDP")
    assert dp.inputs == ("b:out",)
    assert dict(dp.dims) == dict(N=1, K=8, C=4, H=12, W=12, P=10, Q=10, R=3, S=3, G=4)
    assert dp.macs == 4 * 10 * 10 * 9 * 2  # SCALE-Sim: one 1-channel conv with 2 filters per input channel
    assert graph.op("c").inputs == ("c:ifmap",)
    assert graph.meta["scalesim_layers"][3]["Sparsity"] == "2:4"


def test_scalesim_gemm_format(tmp_path: Path) -> None:
    path = _write(tmp_path, "Layer, M, N, K,\nqkv,128,2304,768,\nproj,128,768,2304,\nother,64,10,20,\n")
    graph = load_scalesim_csv(path, batch=2)
    assert [op.kind for op in graph.ops] == [OpKind.MATMUL] * 3
    assert dict(graph.op("qkv").dims) == dict(B=1, M=256, N=2304, K=768)
    assert graph.op("proj").inputs == ("qkv:out",)
    assert graph.op("other").inputs == ("other:ifmap",)
    assert graph.macs == 2 * (128 * 2304 * 768 + 128 * 768 * 2304 + 64 * 10 * 20)
    assert graph.tensors["qkv:weight"].shape == (768, 2304)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a,16,16,3,3,8,x,1,\n", r"topo.csv:2: column 7 \('Num Filter'\) of layer 'a' is 'x'; it must be a positive"),
        ("a,16,16,3,3,8,8,1,\nb,16,16,3,3,0,8,1,\n", r"topo.csv:3: column 6 \('Channels'\) of layer 'b' is '0'"),
        ("a,16,16,3,3,8,8,\n", r"topo.csv:2: .*column 8 \('Strides'\) is missing"),
        ("a,4,4,5,3,8,8,1,\n", r"topo.csv:2: column 4 \('Filter Height'\) of layer 'a' is 5, larger than the IFMAP"),
        ("a,16,16,3,3,8,8,1,1:2,9,\n", r"topo.csv:2: the row has 10 columns"),
        ("a,16,16,3,3,8,8,1,3:2,\n", r"topo.csv:2: column 9 \('Sparsity'\) of layer 'a' is '3:2'"),
        (",16,16,3,3,8,8,1,\n", r"topo.csv:2: column 1 \('Layer name'\) is empty"),
        ("", r"topo.csv: the topology has a header but no layer rows"),
    ],
)
def test_scalesim_bad_rows(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(GraphError, match=expected):
        load_scalesim_csv(_write(tmp_path, CONV_HEADER + text))


def test_scalesim_bad_header_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match=r"layout.csv:1: header 'Layer name,' is not a SCALE-Sim topology header"):
        load_scalesim_csv(_write(tmp_path, "Layer name,\n", "layout.csv"))
    with pytest.raises(GraphError, match="absent.csv: no such SCALE-Sim topology file"):
        load_scalesim_csv(tmp_path / "absent.csv")


LIGHT_RESNET50 = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


@pytest.mark.skipif(not LIGHT_RESNET50.is_file(), reason=f"onnx's test model {LIGHT_RESNET50} is absent")
def test_real_exported_resnet50_matches_the_zoo() -> None:
    """ONNX's own weight-stripped ResNet-50 (ConstantOfShape weights, Sum residuals, BN after every conv)."""
    graph = load_onnx(LIGHT_RESNET50)
    assert sum(op.kind is OpKind.CONV for op in graph.ops) == 53
    assert len(graph.meta["folded_batchnorm"]) == 53
    assert graph.macs == 4_089_184_256  # torchvision ResNet-50: 4.09 GMAC
    zoo = pytest.importorskip("dse.zoo")
    if not hasattr(zoo, "build") or "resnet50" not in zoo.names():
        pytest.skip("dse.zoo has no resnet50 yet")
    reference = zoo.build("resnet50")

    def work(g) -> list:
        return sorted((op.kind.value, sorted(op.dims.items())) for op in g.ops if op.macs)

    assert work(graph) == work(reference)
    assert graph.weight_bytes == reference.weight_bytes


def test_lazy_package_exports() -> None:
    import dse.importers as importers

    assert importers.load_onnx is load_onnx and importers.load_scalesim_csv is load_scalesim_csv
    with pytest.raises(AttributeError):
        importers.load_tflite  # noqa: B018


def test_every_unsupported_op_type_is_named_and_custom_domains_are_refused(tmp_path: Path) -> None:
    m = OnnxModel()
    y = m.node("Shrink", ["x"], "first_bad")
    y = m.node("Hardmax", [y], "second_bad")
    y = m.node("Shrink", [y], "third_bad")
    path = m.save(tmp_path / "many.onnx", [_input("x", [1, 4])], [y])
    with pytest.raises(GraphError, match=r"node 'first_bad' has op type 'Shrink'.*also uses unsupported Hardmax\);"):
        load_onnx(path)
    custom = helper.make_graph(
        [helper.make_node("FusedGemm", ["x"], ["y"], name="fused", domain="com.microsoft")],
        "custom",
        [_input("x", [1, 4])],
        [_input("y", [1, 4])],
    )
    model = helper.make_model(
        custom, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    )
    onnx.save(model, str(tmp_path / "custom.onnx"))
    with pytest.raises(GraphError, match=r"node 'fused' has op type 'FusedGemm' \(domain 'com.microsoft'\)"):
        load_onnx(tmp_path / "custom.onnx")
