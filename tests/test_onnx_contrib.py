"""onnxruntime's com.microsoft kernels: models rewritten by onnxruntime's own graph optimizer and quantizers
import with the MACs of the model before, and each kernel's output shapes match what onnxruntime computes."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from dse.graph import GraphError, OpKind
from dse.importers import load_onnx
from tests.onnx_contrib_models import MS, block_macs, block_model, contrib_node_model, genai_decoder

ort = pytest.importorskip("onnxruntime")
F32, I32, I64, U8, I8 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8
RNG = np.random.default_rng(0)


def ms_ops(path: Path) -> collections.Counter:
    return collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node if n.domain == MS)


def ort_optimized(source: Path, target: Path) -> Path:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return target


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return block_model(tmp_path_factory.mktemp("block") / "block.onnx")


def test_graph_optimizer_kernels_keep_the_macs(block: Path) -> None:
    optimized = ort_optimized(block, block.with_name("block_ort.onnx"))
    fused = ms_ops(optimized)
    assert {"FusedConv", "QuickGelu", "Gelu", "SkipLayerNormalization", "FusedMatMul"} <= set(fused)
    before, after = load_onnx(block, precision="fp32"), load_onnx(optimized, precision="fp32")
    assert before.macs == after.macs == block_macs()
    assert len(after.ops) < len(before.ops)
    norms = [op for op in after.ops if op.kind is OpKind.LAYERNORM]
    assert len(norms) == 1 and norms[0].attrs["norm"] == "SkipLayerNormalization"
    conv = next(op for op in after.ops if op.kind is OpKind.CONV)
    assert after.consumers()[conv.outputs[0]] == [f"{conv.name}:relu"]  # its fused ReLU follows it
    assert any(op.attrs.get("fn") == "quick_gelu" for op in after.ops)


def test_quantizers_keep_the_macs_and_label_precision(block: Path) -> None:
    from onnxruntime import quantization
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": RNG.random((1, 8, 32), np.float32), "img": RNG.random((1, 3, 8, 8), np.float32)}])

        def get_next(self):
            return next(self.feeds, None)

    folder = block.parent
    quantization.quantize_dynamic(str(block), str(folder / "dyn.onnx"), weight_type=quantization.QuantType.QInt8)
    dynamic_fused = ort_optimized(folder / "dyn.onnx", folder / "dyn_ort.onnx")
    quantization.quantize_static(
        str(block), str(folder / "qop.onnx"), Reader(), quant_format=quantization.QuantFormat.QOperator
    )
    nbits = MatMulNBitsQuantizer(onnx.load(str(block)), block_size=16, is_symmetric=True, bits=4)
    nbits.process()
    nbits.model.save_model_to_file(str(folder / "nbits.onnx"))
    assert {"DynamicQuantizeMatMul", "MatMulIntegerToFloat"} <= set(ms_ops(dynamic_fused))
    assert {"QLinearAdd", "QLinearMul", "QLinearSoftmax", "QLinearSigmoid"} <= set(ms_ops(folder / "qop.onnx"))
    assert ms_ops(folder / "nbits.onnx")["MatMulNBits"] == 4
    for name, labels in (
        ("dyn_ort", {"int8": 5, None: 2}),
        ("qop", {"int8": 7}),
        ("nbits", {"int4": 4, None: 3}),
    ):
        graph = load_onnx(folder / f"{name}.onnx", precision="fp32")
        assert graph.macs == block_macs(), name
        assert collections.Counter(op.precision_label for op in graph.ops if op.macs) == labels, name
    graph = load_onnx(folder / "nbits.onnx", precision="fp32")
    op = next(op for op in graph.ops if op.attrs.get("block_size"))
    assert op.attrs["weight_bits"] == 4 and op.attrs["block_size"] == 16
    k, n = op.dims["K"], op.dims["N"]
    sizes = {w.rsplit(":", 1)[1]: graph.tensors[w].nbytes for w in op.weights}
    assert sizes["weight"] == k * n  # one int4 value per byte, as the int4 QDQ path stores it
    assert sizes["scales"] == n * (k // 16) * 4  # one fp32 scale per block of 16


# -- one kernel at a time, shapes checked against onnxruntime's own run ---------------------------------
def _feed(elem_type: int, shape: tuple) -> np.ndarray:
    if elem_type in (I32, I64, U8):
        return RNG.integers(0, 2, shape).astype({I32: np.int32, I64: np.int64, U8: np.uint8}[elem_type])
    return RNG.standard_normal(shape).astype(np.float32)


def _case(name: str):
    """(op type, input order, graph inputs, initializers, outputs, attrs, MACs)."""
    w = lambda *s: (RNG.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    if name == "Attention":  # fused QKV projection, a 3-long past: keys 3 + 8
        inputs = {"x": (F32, (2, 8, 32)), "past": (F32, (2, 2, 4, 3, 8))}
        consts = {"w": w(32, 96), "b": w(96)}
        macs = 2 * 8 * 32 * 96 + 2 * (2 * 4 * 8 * 11 * 8)
        return (
            "Attention",
            ["x", "w", "b", "", "past"],
            inputs,
            consts,
            {"y": (F32, 3), "present": (F32, 5)},
            {"num_heads": 4},
            macs,
        )
    if name == "QAttention":  # uint8 input, int8 QKV weights (what quantize_dynamic makes of Attention)
        consts = {
            "w": RNG.integers(-8, 8, (32, 96)).astype(np.int8), "b": w(96),
            "x_scale": np.array(0.1, np.float32), "w_scale": np.array(0.05, np.float32),
        }  # fmt: skip
        order = ["x", "w", "b", "x_scale", "w_scale"]
        macs = 2 * 8 * 32 * 96 + 2 * (2 * 4 * 8 * 8 * 8)
        return name, order, {"x": (U8, (2, 8, 32))}, consts, {"y": (F32, 3)}, {"num_heads": 4}, macs
    if name == "MultiHeadAttention":  # cross attention: 8 queries over 6 keys
        inputs = {"q": (F32, (2, 8, 32)), "k": (F32, (2, 6, 32)), "v": (F32, (2, 6, 32))}
        return name, ["q", "k", "v"], inputs, {}, {"y": (F32, 3)}, {"num_heads": 4}, 2 * (2 * 4 * 8 * 6 * 8)
    if name == "GroupQueryAttention":  # 4 query heads share 2 key/value heads; 4 cached + 8 new keys
        inputs = {
            "q": (F32, (1, 8, 32)), "k": (F32, (1, 8, 16)), "v": (F32, (1, 8, 16)),
            "pk": (F32, (1, 2, 4, 8)), "pv": (F32, (1, 2, 4, 8)),
        }  # fmt: skip
        consts = {"seqlens": np.array([11], np.int32), "total": np.array(12, np.int32)}
        order = ["q", "k", "v", "pk", "pv", "seqlens", "total"]
        attrs = {"num_heads": 4, "kv_num_heads": 2}
        return (
            name,
            order,
            inputs,
            consts,
            {"y": (F32, 3), "present_k": (F32, 4), "present_v": (F32, 4)},
            attrs,
            2 * (4 * 8 * 12 * 8),
        )
    if name == "EmbedLayerNormalization":
        inputs = {"ids": (I32, (2, 8)), "seg": (I32, (2, 8)), "mask": (I32, (2, 8))}
        consts = {"word": w(50, 32), "pos": w(16, 32), "segment": w(2, 32), "gamma": w(32), "beta": w(32)}
        order = ["ids", "seg", "word", "pos", "segment", "gamma", "beta", "mask"]
        return name, order, inputs, consts, {"y": (F32, 3), "mask_index": (I32, 1)}, {}, 0
    if name == "RotaryEmbedding":
        inputs = {"x": (F32, (1, 4, 8, 8)), "positions": (I64, (1, 8))}
        consts = {"cos": w(16, 4), "sin": w(16, 4)}
        return name, ["x", "positions", "cos", "sin"], inputs, consts, {"y": (F32, 4)}, {}, 0
    if name == "SkipSimplifiedLayerNormalization":
        inputs = {"x": (F32, (2, 8, 32)), "skip": (F32, (2, 8, 32))}
        return (
            name,
            ["x", "skip", "gamma"],
            inputs,
            {"gamma": w(32)},
            {"y": (F32, 3), "-mean": (F32, 0), "-inv_std": (F32, 0), "sum": (F32, 3)},
            {},
            0,
        )
    if name == "QGemm":  # uint8 activations x int8 weights, float output
        inputs = {"a": (U8, (4, 32))}
        consts = {
            "a_scale": np.array(0.1, np.float32), "a_zero": np.array(128, np.uint8),
            "b": RNG.integers(-8, 8, (32, 16)).astype(np.int8), "b_scale": np.array(0.05, np.float32),
            "b_zero": np.array(0, np.int8),
        }  # fmt: skip
        order = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero"]
        return name, order, inputs, consts, {"y": (F32, 2)}, {}, 4 * 32 * 16
    if name == "MatMulNBits":  # 4-bit weights, K=32 in blocks of 16, N=16
        consts = {"b": RNG.integers(0, 255, (16, 2, 8)).astype(np.uint8), "scales": w(32)}
        attrs = {"K": 32, "N": 16, "bits": 4, "block_size": 16}
        return name, ["a", "b", "scales"], {"a": (F32, (2, 8, 32))}, consts, {"y": (F32, 3)}, attrs, 2 * 8 * 32 * 16
    if name == "DynamicQuantizeMatMul":
        consts = {"b": RNG.integers(-8, 8, (32, 16)).astype(np.int8), "b_scale": np.array(0.05, np.float32)}
        return name, ["a", "b", "b_scale"], {"a": (F32, (4, 32))}, consts, {"y": (F32, 2)}, {}, 4 * 32 * 16
    inputs = {"x": (F32, (2, 8, 32))}  # BiasGelu / FastGelu
    return name, ["x", "bias"], inputs, {"bias": w(32)}, {"y": (F32, 3)}, {}, 0


KERNELS = [
    "Attention", "QAttention", "MultiHeadAttention", "GroupQueryAttention", "EmbedLayerNormalization",
    "RotaryEmbedding", "SkipSimplifiedLayerNormalization", "QGemm", "BiasGelu", "FastGelu", "MatMulNBits",
    "DynamicQuantizeMatMul",
]  # fmt: skip


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_shapes_match_onnxruntime(tmp_path: Path, kernel: str) -> None:
    op_type, order, inputs, consts, outputs, attrs, macs = _case(kernel)
    path = contrib_node_model(tmp_path / f"{kernel}.onnx", op_type, order, inputs, consts, outputs, **attrs)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    results = session.run(None, {name: _feed(t, s) for name, (t, s) in inputs.items()})
    expected = {o.name: r.shape for o, r in zip(session.get_outputs(), results)}
    graph = load_onnx(path, precision="fp32")
    assert graph.macs == macs
    if kernel in ("MatMulNBits", "DynamicQuantizeMatMul", "QGemm", "QAttention"):
        op = next(op for op in graph.ops if op.macs)
        assert op.precision_label == ("int4" if kernel == "MatMulNBits" else "int8")
    produced = {t.shape for t in graph.tensors.values() if t.kind == "output"}
    assert {tuple(s) for name, s in expected.items() if name != "mask_index"} <= produced


def test_onnxruntime_qdq_with_int16_activations_and_int4_weights(tmp_path: Path) -> None:
    """com.microsoft QuantizeLinear/DequantizeLinear (onnxruntime's QDQ for types older opsets lack)."""
    from tests.onnx_contrib_models import Nodes

    n = Nodes()
    scale = n.const("scale", 0.05)
    q = n.add("QuantizeLinear", ["x", scale, n.const("zero", 0, np.int16)], "xq", MS)
    x = n.add("DequantizeLinear", [q, scale, n.const("zero2", 0, np.int16)], "xd", MS)
    w = n.add("DequantizeLinear", [n.const("w", RNG.integers(-8, 8, (32, 16)), np.int8), scale], "wd", MS)
    n.add("MatMul", [x, w], "y")
    inputs = [onnx.helper.make_tensor_value_info("x", F32, [4, 32])]
    outputs = [onnx.helper.make_tensor_value_info("y", F32, [4, 16])]
    path = tmp_path / "qdq.onnx"
    onnx.save(n.model("qdq", inputs, outputs, opset=17, domains=(MS,)), str(path))
    graph = load_onnx(path)
    assert graph.macs == 4 * 32 * 16 and graph.op("y").precision_label == "int16 (weights int8)"


def test_unknown_kernel_and_malformed_kernel_are_one_clear_message(tmp_path: Path) -> None:
    inputs = {"x": (F32, (2, 8, 32))}
    path = contrib_node_model(tmp_path / "odd.onnx", "DecoderMaskedSelfAttention", ["x"], inputs, {}, {"y": (F32, 3)})
    with pytest.raises(GraphError) as refused:
        load_onnx(path)
    message = str(refused.value)
    assert "'decodermaskedselfattention'" in message and "domain 'com.microsoft'" in message
    assert "GroupQueryAttention" in message and "Quant" in message and "\n" not in message
    path = contrib_node_model(tmp_path / "bad.onnx", "Attention", ["x"], inputs, {}, {"y": (F32, 3)}, num_heads=4)
    with pytest.raises(GraphError, match=r"node 'attention' \(Attention.*weights \(input 1\) must be a 2-D"):
        load_onnx(path)


# -- real exports through onnxruntime's transformer optimizer (slow: torch export) -------------------------
def test_hugging_face_models_through_the_transformer_optimizer(tmp_path: Path) -> None:
    """BERT and GPT-2 (tiny configs, TorchScript export) rewritten by onnxruntime.transformers.optimize_model,
    then quantized (dynamic int8, MatMulNBits int4): every variant imports with the unoptimized model's MACs."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    from onnxruntime.transformers.optimizer import optimize_model

    class LastHidden(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids).last_hidden_state

    configs = {
        "bert": (transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=64, max_position_embeddings=64), "BiasGelu"),
        "gpt2": (transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64), "FastGelu"),
    }  # fmt: skip
    for kind, (config, gelu) in configs.items():
        torch.manual_seed(0)
        plain = tmp_path / f"{kind}.onnx"
        model = LastHidden(transformers.AutoModel.from_config(config)).eval()
        torch.onnx.export(model, (torch.randint(0, 100, (1, 16)),), str(plain), dynamo=False, opset_version=14)
        optimized = tmp_path / f"{kind}_opt.onnx"
        optimize_model(str(plain), model_type=kind, num_heads=4, hidden_size=32, opt_level=0).save_model_to_file(
            str(optimized)
        )
        assert {"SkipLayerNormalization", gelu} <= set(ms_ops(optimized))
        dynamic = tmp_path / f"{kind}_dyn.onnx"
        quantize_dynamic(
            str(optimized), str(dynamic), weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )  # fmt: skip
        nbits = MatMulNBitsQuantizer(onnx.load(str(optimized)), block_size=16, is_symmetric=True, bits=4)
        nbits.process()
        nbits.model.save_model_to_file(str(tmp_path / f"{kind}_nbits.onnx"))
        macs = load_onnx(plain, precision="fp32").macs
        for variant in (optimized, dynamic, tmp_path / f"{kind}_nbits.onnx"):
            graph = load_onnx(variant, precision="fp32")
            assert graph.macs == macs, variant.name
        assert any(op.precision_label == "int4" for op in load_onnx(tmp_path / f"{kind}_nbits.onnx").ops)


def test_genai_decoder_with_int4_weights_and_kv_cache(tmp_path: Path) -> None:
    """SimplifiedLayerNormalization (standard domain), MatMulNBits, packed GQA with rotary and past/present."""
    path, macs = genai_decoder(tmp_path / "decoder.onnx", layers=2)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: RNG.random(i.shape, np.float32) for i in session.get_inputs()}
    expected = {o.name: r.shape for o, r in zip(session.get_outputs(), session.run(None, feeds))}
    graph = load_onnx(path, precision="fp16")
    assert graph.macs == macs
    assert {t.shape for t in graph.tensors.values() if t.kind == "output"} == set(expected.values())
    assert collections.Counter(op.precision_label for op in graph.ops if op.weights and op.macs) == {"int4": 10}
    attention = [op for op in graph.ops if op.name.endswith(":qk")]
    assert [op.dims["N"] for op in attention] == [16, 16]  # 12 cached + 4 new keys


def test_a_thousand_node_decoder_imports_in_seconds(tmp_path: Path) -> None:
    path, macs = genai_decoder(tmp_path / "decoder.onnx", layers=91)
    assert len(onnx.load(str(path)).graph.node) == 1001
    start = time.perf_counter()
    graph = load_onnx(path)
    seconds = time.perf_counter() - start
    print(f"1001-node onnxruntime-genai-style decoder: {len(graph.ops)} ops, {graph.macs} MACs, {seconds:.2f} s")
    assert graph.macs == macs and seconds < 10
