"""The built-in model zoo: published sizes, exact closed forms, IR structure and user errors."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from dse import zoo
from dse.graph import PRECISION_BYTES, Graph, OpKind
from dse.zoo.ssm import hyena_macs, mamba_dt_rank, mamba_macs
from dse.zoo.transformers import GPT2_VARIANTS, bert_base_macs, gpt2_macs, gpt2_params

SHARED = Path(__file__).resolve().parents[2] / "shared"
SCALESIM_RESNET18 = SHARED / "data" / "scalesim" / "inputs" / "resnet18.csv"

ALL_MODELS = [
    "resnet18",
    "resnet50",
    "mobilenet_v1",
    "vgg16",
    "jet_mlp",
    "small_cnn",
    "bert_base",
    "gpt2",
    "mamba",
    "hyena",
    # LLM serving workloads (issue 16): Llama-2 7B/13B/70B, Mixtral-style MoE, Composition of Experts
    "llama2_7b",
    "llama2_13b",
    "llama2_70b",
    "llama3_8b",
    "mixtral_8x7b",
    "coe_llama2_7b",
]
CNNS = ["resnet18", "resnet50", "mobilenet_v1", "vgg16"]

# Small sizes so the whole file stays fast; every model is also built at its default size.
SIZES: dict[str, list[dict]] = {
    "resnet18": [{}, {"resolution": 160}, {"batch": 4, "resolution": 320}],
    "resnet50": [{}, {"resolution": 96}, {"batch": 2}],
    "mobilenet_v1": [{}, {"resolution": 128}, {"batch": 8}],
    "vgg16": [{}, {"resolution": 64}, {"batch": 2}],
    "jet_mlp": [{}, {"batch": 1024}],
    "small_cnn": [{}, {"batch": 4}],
    "bert_base": [{}, {"seq_len": 512}, {"seq_len": 16, "num_layers": 2, "batch": 4}],
    "gpt2": [
        {},
        {"phase": "decode"},
        {"phase": "decode", "kv_len": 4096, "batch": 8},
        {"variant": "xl", "seq_len": 1024},
        {"variant": "medium", "phase": "decode", "num_layers": 2},
    ],
    "mamba": [{}, {"seq_len": 8192, "num_layers": 24}, {"d_model": 256, "d_state": 64, "expand": 4, "d_conv": 2}],
    "hyena": [{}, {"seq_len": 16384, "num_layers": 4}, {"order": 4, "filter_order": 16, "d_model": 128}],
}
BUILD_CASES = [(name, opts) for name, sizes in SIZES.items() for opts in sizes]


def _case_id(case: tuple[str, dict]) -> str:
    name, opts = case
    return name + "".join(f"-{k}={v}" for k, v in opts.items())


@pytest.fixture(scope="module")
def default_graphs() -> dict[str, Graph]:
    return {name: zoo.build(name) for name in ALL_MODELS}


# -- registry ------------------------------------------------------------------------------
def test_names_are_exactly_the_zoo():
    assert zoo.names() == ALL_MODELS
    assert sorted(zoo.MODELS) == sorted(ALL_MODELS)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_model_entry_is_documented(name):
    model = zoo.MODELS[name]
    assert model.name == name
    assert model.doc and "\n" not in model.doc
    assert model.source
    assert "batch" in model.options
    if model.published_gmacs is not None:
        assert model.published_gmacs > 0


# -- structure -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", BUILD_CASES, ids=[_case_id(c) for c in BUILD_CASES])
def test_builds_valid_dag_fast(case):
    name, opts = case
    start = time.perf_counter()
    graph = zoo.build(name, **opts)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, f"{name} {opts} took {elapsed:.3f} s"

    graph.validate()
    Graph(graph.name, list(graph.ops), dict(graph.tensors))  # re-validates from scratch
    available = {t for t, tensor in graph.tensors.items() if tensor.kind in ("input", "weight")}
    for op in graph.ops:
        for t in op.inputs:
            assert t in available, f"{op.name} reads {t} before it is produced"
        for t in op.weights:
            assert graph.tensors[t].kind == "weight"
        for t in op.outputs:
            assert t not in available, f"{t} written twice (cycle or duplicate)"
        available.update(op.outputs)
    assert any(t.kind == "input" for t in graph.tensors.values())
    assert any(t.kind == "output" for t in graph.tensors.values())
    assert graph.meta["model"] == name


@pytest.mark.parametrize("name", ALL_MODELS)
def test_work_is_positive_where_it_should_be(default_graphs, name):
    for op in default_graphs[name].ops:
        if op.kind in (OpKind.CONV, OpKind.MATMUL):
            assert op.macs > 0, op.name
            assert op.flops == 2 * op.macs, op.name
        else:
            assert op.macs == 0, op.name
            if op.attrs.get("fn") == "identity":
                assert op.flops == 0, op.name  # a KV-cache append moves data, it does no arithmetic
            else:
                assert op.flops > 0, op.name


@pytest.mark.parametrize("name", ALL_MODELS)
def test_batch_scales_work_linearly(name):
    one, three = zoo.build(name, batch=1), zoo.build(name, batch=3)
    if name == "hyena":
        # the implicit filter depends only on positions, so MACs are affine in the batch
        five = zoo.build(name, batch=5)
        assert five.macs - three.macs == three.macs - one.macs > 0
        assert three.macs < 3 * one.macs
    else:
        assert three.macs == 3 * one.macs
        assert three.flops == 3 * one.flops


@pytest.mark.parametrize("precision", sorted(PRECISION_BYTES))
def test_precision_sets_element_bytes(precision):
    graph = zoo.build("resnet18", precision=precision)
    assert {t.elem_bytes for t in graph.tensors.values()} == {PRECISION_BYTES[precision]}
    assert graph.meta["precision"] == precision


def test_wider_precision_scales_weight_bytes():
    assert zoo.build("bert_base", precision="fp32").weight_bytes == 4 * zoo.build("bert_base").weight_bytes


# -- published totals ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, expected_gmacs, tolerance",
    [("resnet18", 1.82, 0.03), ("resnet50", 4.09, 0.03), ("mobilenet_v1", 0.569, 0.02), ("vgg16", 15.5, 0.02)],
)
def test_cnn_macs_match_published(default_graphs, name, expected_gmacs, tolerance):
    gmacs = default_graphs[name].macs / 1e9
    assert gmacs == pytest.approx(expected_gmacs, rel=tolerance)
    assert zoo.MODELS[name].published_gmacs == pytest.approx(gmacs, rel=tolerance)


def test_jet_mlp_macs_exact():
    expected = 16 * 64 + 64 * 32 + 32 * 32 + 32 * 5
    assert zoo.build("jet_mlp").macs == expected
    assert zoo.build("jet_mlp", batch=7).macs == 7 * expected
    graph = zoo.build("jet_mlp")
    assert [op.name for op in graph.ops] == ["fc1", "relu1", "fc2", "relu2", "fc3", "relu3", "output", "softmax"]
    assert graph.ops[-1].kind is OpKind.SOFTMAX and dict(graph.ops[-1].dims) == {"R": 1, "L": 5}


@pytest.mark.parametrize("batch, seq_len, num_layers", [(1, 128, 12), (2, 384, 12), (3, 16, 2)])
def test_bert_macs_closed_form(batch, seq_len, num_layers):
    graph = zoo.build("bert_base", batch=batch, seq_len=seq_len, num_layers=num_layers)
    d, f = 768, 3072
    per_layer = seq_len * (4 * d * d + 2 * d * f) + 2 * seq_len * seq_len * d
    assert graph.macs == batch * num_layers * per_layer == bert_base_macs(batch, seq_len, num_layers)


def test_bert_base_published_and_structure(default_graphs):
    graph = default_graphs["bert_base"]
    assert graph.macs == 11_173_625_856
    assert graph.macs / 1e9 == pytest.approx(11.2, rel=0.01)
    qk = graph.op("layer0.qk")
    av = graph.op("layer0.av")
    assert dict(qk.dims) == {"B": 12, "M": 128, "N": 128, "K": 64}
    assert dict(av.dims) == {"B": 12, "M": 128, "N": 64, "K": 128}
    assert not qk.weights and not av.weights  # activation x activation
    assert dict(graph.op("layer0.softmax").dims) == {"R": 12 * 128, "L": 128}
    kinds = [op.kind for op in graph.ops if op.name.startswith("layer0.")]
    assert kinds.count(OpKind.LAYERNORM) == 2
    assert kinds.count(OpKind.MATMUL) == 4 + 2 + 2
    assert graph.op("layer0.gelu").attrs["fn"] == "gelu"
    assert dict(graph.op("layer0.ffn_up").dims) == {"B": 1, "M": 128, "N": 3072, "K": 768}


def test_gpt2_small_parameters_match_hf():
    graph = zoo.build("gpt2")
    params = sum(t.numel for t in graph.tensors.values() if t.kind == "weight")
    assert params == 124_439_808 == gpt2_params("small")  # HF GPT2LMHeadModel.num_parameters()
    assert graph.weight_bytes == params  # int8: one byte each
    assert graph.tensors["wpe"].shape == (1024, 768)
    lm_head = graph.op("lm_head")
    assert dict(lm_head.dims) == {"B": 1, "M": 128, "N": 50257, "K": 768}
    assert gpt2_params("medium") == 354_823_168
    assert gpt2_params("xl") == 1_557_611_200


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"seq_len": 512, "batch": 2},
        {"variant": "medium", "seq_len": 64},
        {"variant": "large", "num_layers": 3, "seq_len": 32},
        {"phase": "decode"},
        {"phase": "decode", "kv_len": 77, "batch": 5},
        {"phase": "decode", "variant": "xl", "kv_len": 2048},
    ],
)
def test_gpt2_macs_closed_form(options):
    graph = zoo.build("gpt2", **options)
    size = GPT2_VARIANTS[options.get("variant", "small")]
    layers = options.get("num_layers", size.layers)
    batch, d = options.get("batch", 1), size.hidden
    if options.get("phase", "prefill") == "prefill":
        tokens = attended = options.get("seq_len", 128)
    else:
        tokens, attended = 1, options.get("kv_len", 1024) + 1
    expected = batch * (tokens * (12 * layers * d * d + d * 50257) + 2 * layers * tokens * attended * d)
    assert graph.macs == expected == gpt2_macs(**options)


def test_gpt2_prefill_matches_two_flops_per_param_per_token():
    graph = zoo.build("gpt2", seq_len=128)
    params = gpt2_params("small")
    matmul_flops = sum(op.flops for op in graph.ops if op.kind is OpKind.MATMUL)
    assert matmul_flops == pytest.approx(2 * params * 128, rel=0.03)
    assert graph.macs / 1e9 == pytest.approx(zoo.MODELS["gpt2"].published_gmacs, rel=0.03)


def test_gpt2_decode_reads_kv_cache_inputs():
    layers, heads, kv_len, batch = 12, 12, 300, 2
    graph = zoo.build("gpt2", phase="decode", kv_len=kv_len, batch=batch)
    caches = [t for t in graph.tensors.values() if t.name.endswith(("k_cache", "v_cache"))]
    assert len(caches) == 2 * layers
    for cache in caches:
        assert cache.kind == "input"
        assert cache.shape == (batch, heads, kv_len, 64)
    qk = graph.op("layer5.qk")
    assert dict(qk.dims) == {"B": batch * heads, "M": 1, "N": kv_len + 1, "K": 64}
    assert dict(graph.op("layer5.av").dims) == {"B": batch * heads, "M": 1, "N": 64, "K": kv_len + 1}
    append = graph.op("layer5.k_append")
    assert append.inputs[0] == "layer5.k_cache"
    assert graph.producer()[append.inputs[1]] == "layer5.k_proj"
    assert graph.tensors[append.outputs[0]].shape == (batch, heads, kv_len + 1, 64)
    assert dict(graph.op("lm_head").dims) == {"B": 1, "M": batch, "N": 50257, "K": 768}
    assert graph.tensors["layer5.k_proj:out"].kind == "output"  # the new K is written to the cache


def test_gpt2_decode_is_far_cheaper_than_prefill():
    prefill = zoo.build("gpt2", phase="prefill", seq_len=128)
    decode = zoo.build("gpt2", phase="decode", kv_len=1024)
    assert decode.macs * 50 < prefill.macs
    assert decode.weight_bytes == prefill.weight_bytes
    # decode work is dominated by streaming the weights once: ~1 MAC per parameter
    assert decode.macs == pytest.approx(gpt2_params("small"), rel=0.2)


def test_gpt2_num_layers_defaults_to_variant_depth():
    graph = zoo.build("gpt2", variant="medium", seq_len=8)
    assert sum(op.kind is OpKind.SOFTMAX for op in graph.ops) == 24
    assert graph.op("layer0.q_proj").dims["N"] == 1024
    assert graph.op("layer0.qk").dims["B"] == 16


# -- CNN structure -------------------------------------------------------------------------
def _residual_adds(graph: Graph) -> list:
    return [op for op in graph.ops if op.kind is OpKind.ELEMENTWISE and op.attrs.get("fn") == "add"]


@pytest.mark.parametrize("name, expected", [("resnet18", 8), ("resnet50", 16), ("bert_base", 24), ("mamba", 1)])
def test_residual_adds_have_two_producers(default_graphs, name, expected):
    graph = default_graphs[name]
    producer = graph.producer()
    adds = _residual_adds(graph)
    assert len(adds) == expected
    for op in adds:
        assert len(op.inputs) == 2
        sources = {producer.get(t, "<graph input>") for t in op.inputs}
        assert len(sources) == 2, f"{op.name} reads {op.inputs}"


def test_resnet18_matches_scalesim_topology(default_graphs):
    if not SCALESIM_RESNET18.exists():
        pytest.skip(f"SCALE-Sim reference topology not found at {SCALESIM_RESNET18}")
    graph = default_graphs["resnet18"]
    with SCALESIM_RESNET18.open() as fh:
        rows = [[c.strip() for c in row] for row in csv.reader(fh)][1:]
    convs = [op.name for op in graph.ops if op.kind is OpKind.CONV]
    names = [row[0] for row in rows if row and row[0]]
    assert convs + ["FC"] == names  # same layers, same order
    for row in rows:
        if not row or not row[0]:
            continue
        name, ifmap_h, ifmap_w, filt_h, filt_w, channels, filters, stride = row[:8]
        op = graph.op(name)
        if name == "FC":
            assert op.kind is OpKind.MATMUL
            assert (op.dims["K"], op.dims["N"]) == (int(channels), int(filters))
            continue
        d = op.dims
        assert (d["H"], d["W"], d["R"], d["S"]) == (int(ifmap_h), int(ifmap_w), int(filt_h), int(filt_w)), name
        assert (d["C"], d["K"], op.attrs["stride"][0]) == (int(channels), int(filters), int(stride)), name


def test_resnet_stem_uses_torchvision_padding():
    graph = zoo.build("resnet50", resolution=224)
    conv1, pool1 = graph.op("Conv1"), graph.op("Pool1")
    assert conv1.attrs["pad"] == (3, 3, 3, 3) and (conv1.dims["P"], conv1.dims["Q"]) == (112, 112)
    assert pool1.attrs["pad"] == (1, 1, 1, 1) and (pool1.dims["P"], pool1.dims["Q"]) == (56, 56)
    assert graph.op("Conv2_s").dims["K"] == 256 and graph.op("Conv5_3c").dims["P"] == 7
    assert not any(op.attrs.get("fn") == "batchnorm" for op in graph.ops)  # folded into the convs


def test_cnn_resolution_changes_spatial_sizes():
    graph = zoo.build("resnet18", resolution=320)
    assert graph.op("Conv1").dims["P"] == 160
    assert graph.op("Conv5_2b").dims["P"] == 10
    assert graph.op("FC").dims["K"] == 512  # global pooling keeps the classifier size
    assert zoo.build("vgg16", resolution=64).op("fc6").dims["K"] == 512 * 2 * 2


def test_mobilenet_depthwise_convs_are_grouped(default_graphs):
    graph = default_graphs["mobilenet_v1"]
    depthwise = [op for op in graph.ops if op.name.startswith("conv_dw_") and op.kind is OpKind.CONV]
    assert len(depthwise) == 13
    for op in depthwise:
        assert op.dims["G"] == op.dims["C"] == op.dims["K"]
        assert (op.dims["R"], op.dims["S"]) == (3, 3)
        assert op.macs == op.dims["N"] * op.dims["K"] * op.dims["P"] * op.dims["Q"] * 9
    pointwise = [op for op in graph.ops if op.name.startswith("conv_pw_") and op.kind is OpKind.CONV]
    assert len(pointwise) == 13 and all(op.dims["G"] == 1 and op.dims["R"] == 1 for op in pointwise)
    assert graph.op("conv_dw_13").dims["C"] == 1024


def test_vgg16_has_three_fc_layers(default_graphs):
    graph = default_graphs["vgg16"]
    fcs = [op for op in graph.ops if op.kind is OpKind.MATMUL]
    assert [(op.name, op.dims["K"], op.dims["N"]) for op in fcs] == [
        ("fc6", 25088, 4096),
        ("fc7", 4096, 4096),
        ("fc8", 4096, 1000),
    ]
    assert sum(op.kind is OpKind.CONV for op in graph.ops) == 13
    assert sum(op.kind is OpKind.POOL for op in graph.ops) == 5


# -- sequence mixers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [{}, {"batch": 2, "seq_len": 64}, {"d_model": 256, "d_state": 8, "expand": 3, "d_conv": 2, "num_layers": 3}],
)
def test_mamba_macs_closed_form(options):
    assert zoo.build("mamba", **options).macs == mamba_macs(**options)


def test_mamba_block_structure(default_graphs):
    graph = default_graphs["mamba"]
    d_inner, seq = 2 * 768, 1024
    conv = graph.op("layer0.conv1d")
    assert {k: conv.dims[k] for k in "NCKHWPQRSG"} == dict(
        N=1, C=d_inner, K=d_inner, H=1, W=seq, P=1, Q=seq, R=1, S=4, G=d_inner
    )
    assert conv.attrs["pad"] == (0, 3, 0, 0)  # causal: d_conv - 1 zeros on the left only
    scan = graph.op("layer0.selective_scan")
    assert scan.kind is OpKind.SCAN and dict(scan.dims) == {"B": 1, "L": seq, "D": d_inner, "S": 16}
    producer = graph.producer()
    assert [producer[t] for t in scan.inputs] == [
        "layer0.conv_silu",
        "layer0.dt_softplus",
        "layer0.x_proj_B",
        "layer0.x_proj_C",
    ]
    assert graph.op("layer0.dt_proj").dims["K"] == mamba_dt_rank(768) == 48
    assert graph.op("layer0.gate").attrs["fn"] == "mul"
    assert graph.op("layer0.norm").kind is OpKind.LAYERNORM
    in_proj_n = graph.op("layer0.in_proj_x").dims["N"] + graph.op("layer0.in_proj_z").dims["N"]
    assert in_proj_n == 2 * d_inner


@pytest.mark.parametrize(
    "options",
    [{}, {"batch": 3, "seq_len": 256}, {"order": 3, "filter_order": 32, "d_model": 128, "num_layers": 2}],
)
def test_hyena_macs_closed_form(options):
    assert zoo.build("hyena", **options).macs == hyena_macs(**options)


@pytest.mark.parametrize("order", [2, 3])
def test_hyena_block_structure(order):
    seq, d, batch = 512, 96, 2
    graph = zoo.build("hyena", seq_len=seq, d_model=d, order=order, batch=batch)
    ffts = [op for op in graph.ops if op.kind is OpKind.FFT]
    forward = [op for op in ffts if not op.attrs["inverse"]]
    inverse = [op for op in ffts if op.attrs["inverse"]]
    assert len(forward) == 2 * (order - 1) and len(inverse) == order - 1
    assert all(op.dims["L"] == 2 * seq for op in ffts)
    assert graph.op("layer0.fft_signal0").dims["B"] == batch * d
    assert graph.op("layer0.fft_filter0").dims["B"] == d  # one filter per channel, shared by the batch
    assert graph.tensors[graph.op("layer0.ifft0").outputs[0]].shape == (batch, d, seq)
    in_proj = [op for op in graph.ops if op.name.startswith("layer0.in_proj_")]
    assert sum(op.dims["N"] for op in in_proj) == (order + 1) * d
    short = [op for op in graph.ops if op.name.startswith("layer0.short_conv_")]
    assert len(short) == order + 1 and all(op.dims["G"] == op.dims["C"] == d and op.dims["Q"] == seq for op in short)
    gates = [op for op in graph.ops if op.name.startswith("layer0.gate")]
    assert len(gates) == order  # order-1 inside the recurrence and the final one
    filter_linears = [op for op in graph.ops if op.name.startswith("layer0.filter_") and op.kind is OpKind.MATMUL]
    assert all(op.dims["M"] == seq for op in filter_linears)  # runs on positions, not on the batch


# -- user errors ---------------------------------------------------------------------------
def test_unknown_model_lists_the_zoo():
    with pytest.raises(zoo.UnknownModelError) as info:
        zoo.build("resnet19")
    assert isinstance(info.value, KeyError)
    message = str(info.value)
    assert "resnet19" in message
    assert all(name in message for name in ALL_MODELS)


def test_unknown_option_names_option_and_allowed():
    with pytest.raises(ValueError) as info:
        zoo.build("resnet18", seq_len=128)
    message = str(info.value)
    assert "seq_len" in message and "batch" in message and "resolution" in message


def test_unknown_precision_lists_allowed():
    with pytest.raises(ValueError) as info:
        zoo.build("jet_mlp", precision="int3")
    message = str(info.value)
    assert "int3" in message and all(p in message for p in PRECISION_BYTES)


@pytest.mark.parametrize(
    "name, options, fragment",
    [
        ("gpt2", {"phase": "generate"}, "prefill, decode"),
        ("gpt2", {"variant": "huge"}, "small, medium, large, xl"),
        ("bert_base", {"seq_len": 0}, "seq_len"),
        ("resnet18", {"resolution": 16}, "resolution"),
        ("resnet18", {"batch": 2.5}, "batch"),
        ("hyena", {"order": 1}, "order"),
        ("mamba", {"num_layers": True}, "num_layers"),
    ],
)
def test_bad_option_values_are_rejected(name, options, fragment):
    with pytest.raises(ValueError) as info:
        zoo.build(name, **options)
    assert fragment in str(info.value)


# -- same IR as the ONNX importer ------------------------------------------------------------
def _onnx_model(tmp_path: Path, name: str, nodes: list, inputs: dict, outputs: dict, weights: dict) -> Path:
    import numpy as np

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outputs.items()],
        [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in weights.items()],
    )
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_jet_mlp_equals_onnx_import(tmp_path):
    importer = pytest.importorskip("dse.importers.onnx_import")
    from onnx import helper

    nodes, weights, x = [], {}, "x"
    widths = (16, 64, 32, 32, 5)
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:]), start=1):
        weights[f"W{i}"], weights[f"b{i}"] = (fan_out, fan_in), (fan_out,)
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"b{i}"], [f"h{i}"], transB=1))
        x = f"h{i}"
        if i < 4:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes.append(helper.make_node("Softmax", [x], ["y"], axis=-1))
    path = _onnx_model(tmp_path, "jet", nodes, {"x": (4, 16)}, {"y": (4, 5)}, weights)
    imported = importer.load_onnx(path, precision="int16")
    built = zoo.build("jet_mlp", batch=4, precision="int16")
    assert [op.shape_key() for op in imported.ops] == [op.shape_key() for op in built.ops]
    assert imported.weight_bytes == built.weight_bytes


def test_resnet_stem_equals_onnx_import(tmp_path):
    importer = pytest.importorskip("dse.importers.onnx_import")
    from onnx import helper

    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    ]
    weights = {"W": (64, 3, 7, 7), "B": (64,)}
    path = _onnx_model(tmp_path, "stem", nodes, {"x": (2, 3, 224, 224)}, {"y": (2, 64, 56, 56)}, weights)
    imported = importer.load_onnx(path)
    built = zoo.build("resnet18", batch=2)
    assert [op.shape_key() for op in imported.ops] == [
        built.op(n).shape_key() for n in ("Conv1", "Conv1_relu", "Pool1")
    ]


# -- Llama-style decoders and the Mixtral-style MoE (issue 14) -----------------------------
LLAMA_STYLE = ["llama2_7b", "llama3_8b", "llama2_70b", "mixtral_8x7b"]


def test_llama3_8b_shape_and_published_parameter_count():
    from dse.zoo.llm import LLM_SHAPES, llm_params

    shape = LLM_SHAPES["llama3_8b"]
    assert (shape.hidden, shape.heads, shape.kv_heads, shape.ffn, shape.layers, shape.vocab) == (
        4096, 32, 8, 14336, 32, 128256,
    )  # fmt: skip
    # HF Meta-Llama-3-8B num_parameters(); the graph's norms carry a beta too (2 x hidden per norm more)
    assert llm_params("llama3_8b") == pytest.approx(8_030_261_248, rel=1e-4)
    graph = zoo.build("llama3_8b", phase="decode", num_layers=1, kv_len=64)
    assert graph.tensors["layer0.k_cache"].shape == (8, 64, 128)  # 8 KV heads of 128: grouped-query attention


@pytest.mark.parametrize("name", LLAMA_STYLE)
def test_llm_layers_carry_rmsnorm_rotary_and_swiglu(name):
    graph = zoo.build(name, phase="prefill", seq_len=8, num_layers=2)
    norms = [op for op in graph.ops if op.kind is OpKind.LAYERNORM]
    assert len(norms) == 2 * 2 + 1  # input and post-attention RMSNorm per layer, and the final norm
    rope = [op.name for op in graph.ops if op.attrs.get("fn") == "rope"]
    assert rope == [f"layer{i}.{x}_rope" for i in range(2) for x in "qk"]
    swiglu = [op for op in graph.ops if op.attrs.get("fn") == "silu_mul"]
    assert swiglu and all(len(op.inputs) == 2 for op in swiglu)  # SiLU(gate) x up
    assert len(swiglu) == 2 * (1 if name != "mixtral_8x7b" else 8)  # 8 tokens x top-2 touch all 8 experts


@pytest.mark.parametrize("batch", [1, 3, 5, 16])
def test_mixtral_macs_count_top_k_experts_and_weights_count_all(batch):
    """Per token only top_k experts run (MACs); every expert's weights are held (bytes)."""
    from dse.zoo.llm import LLM_SHAPES

    size = LLM_SHAPES["mixtral_8x7b"]
    graph = zoo.build("mixtral_8x7b", precision="bf16", phase="decode", batch=batch, num_layers=1)
    expert_macs = sum(op.macs for op in graph.ops if ".expert" in op.name)
    assert expert_macs == batch * size.top_k * 3 * size.hidden * size.ffn
    expert_weights = [t for name, t in graph.tensors.items() if ".expert" in name and t.kind == "weight"]
    assert sum(t.nbytes for t in expert_weights) == size.experts * 3 * size.hidden * size.ffn * 2
