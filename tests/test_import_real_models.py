"""Real PyTorch and Hugging Face exports import with exact MAC counts (both torch.onnx exporters).

Every model is built here (tiny configs, random init, nothing downloaded), exported with the
TorchScript exporter (``dynamo=False``) and the torch.export-based one (``dynamo=True``, needs
onnxscript), imported, and its MACs compared with the closed form for its config. Shape
arithmetic the exporters emit (Shape -> Gather -> Concat -> Reshape, causal masks, position ids)
must have been folded away: no op of the imported graph may be a shape computation.
"""

from __future__ import annotations

import logging
import math
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

from dse.graph import GraphError, OpKind
from dse.importers import load_onnx

torch = pytest.importorskip("torch")
nn = torch.nn
pytest.importorskip("onnxscript")

EXPORTERS = ("torchscript", "dynamo")


def export(model: torch.nn.Module, args: tuple, path: Path, exporter: str, **kwargs) -> Path:
    """Export with one of torch's two ONNX exporters, quietly."""
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.getLogger("torch").setLevel(logging.ERROR)
        torch.onnx.export(
            model, args, str(path), dynamo=exporter == "dynamo", opset_version=18 if exporter == "dynamo" else 17,
            verbose=False, **kwargs,
        )  # fmt: skip
    return path


def transformer_macs(
    layers: int, seq: int, d: int, ff: int, heads: int, kv_heads: int | None = None, gated: bool = False
) -> int:
    """Closed form per forward pass: projections, MLP and the two attention matmuls, batch 1."""
    kv = d * (kv_heads or heads) // heads
    projections = 2 * d * d + 2 * d * kv
    mlp = (3 if gated else 2) * d * ff
    return layers * (seq * (projections + mlp) + 2 * seq * seq * d)


def kinds(graph) -> set[str]:
    return {op.kind.value for op in graph.ops}


def assert_no_shape_arithmetic(graph) -> None:
    """Integer shape work (Shape/Range/Equal on sizes) was folded: every remaining op reads an activation."""
    for op in graph.ops:
        assert op.inputs, f"{op.name} reads no activation: a constant expression was not folded"


# -- plain PyTorch -----------------------------------------------------------------
class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.up(self.pool(torch.relu(self.norm(self.conv1(x)))))
        x = torch.nn.functional.silu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


CNN_MACS = 8 * 32 * 32 * 3 * 9 + 16 * 32 * 32 * 8 * 9 + 16 * 10


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_cnn_with_groupnorm_and_upsample(tmp_path: Path, exporter: str) -> None:
    path = export(SmallCNN(), (torch.randn(1, 3, 32, 32),), tmp_path / "cnn.onnx", exporter)
    graph = load_onnx(path, precision="fp32")
    assert graph.macs == CNN_MACS
    assert sum(op.kind is OpKind.CONV for op in graph.ops) == 2
    assert {"conv", "matmul", "pool", "elementwise"} <= kinds(graph)
    assert_no_shape_arithmetic(graph)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_mlp(tmp_path: Path, exporter: str) -> None:
    mlp = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    graph = load_onnx(export(mlp, (torch.randn(4, 64),), tmp_path / "mlp.onnx", exporter))
    assert graph.macs == 4 * (64 * 128 + 128 * 128 + 128 * 10)
    assert sum(op.kind is OpKind.MATMUL for op in graph.ops) == 3


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_transformer_encoder(tmp_path: Path, exporter: str) -> None:
    layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    path = export(encoder, (torch.randn(1, 64, 128),), tmp_path / "encoder.onnx", exporter)
    graph = load_onnx(path, precision="fp32")
    assert graph.macs == transformer_macs(2, 64, 128, 512, 4)
    assert kinds(graph) == {"matmul", "softmax", "layernorm", "elementwise"}
    assert sum(op.kind is OpKind.SOFTMAX for op in graph.ops) == 2
    assert_no_shape_arithmetic(graph)


def test_lstm_torchscript(tmp_path: Path) -> None:
    lstm = nn.LSTM(16, 32, batch_first=False)
    path = export(lstm, (torch.randn(10, 2, 16),), tmp_path / "lstm.onnx", "torchscript")
    graph = load_onnx(path)
    assert graph.macs == 10 * 2 * 4 * 32 * (16 + 32)
    recurrent = [op for op in graph.ops if op.attrs.get("recurrent") == "LSTM"]
    assert len(recurrent) == 1 and recurrent[0].attrs["steps"] == 10


# -- attention blocks written in plain torch ----------------------------------------------
F = nn.functional


class SelfAttention(nn.Module):
    """nn.MultiheadAttention alone, as self-attention (query = key = value)."""

    def __init__(self, d, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class GPT2Block(nn.Module):
    """GPT-2's block in plain torch: pre-LN, fused QKV, causal mask by masked_fill, GELU(tanh) MLP."""

    def __init__(self, d, heads, max_len=128):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.c_proj(context)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, ff, theta=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.input_norm, self.post_norm = RMSNorm(d), RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)
        self.register_buffer("inv_freq", 1.0 / theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))

    def forward(self, x):
        b, t, d = x.shape
        h = self.input_norm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        angles = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~causal, float("-inf"))
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o_proj(context)
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


D, HEADS, KV_HEADS, FF, BLOCK_SEQ = 64, 4, 2, 128, 16
BLOCKS = {  # name -> (module factory, closed-form MACs, matmuls, op kinds)
    "mha": (
        lambda: SelfAttention(D, HEADS), transformer_macs(1, BLOCK_SEQ, D, 0, HEADS), 4,
        {"matmul", "softmax", "elementwise"},
    ),
    "gpt2_block": (
        lambda: GPT2Block(D, HEADS), transformer_macs(1, BLOCK_SEQ, D, 4 * D, HEADS), 6,
        {"matmul", "softmax", "layernorm", "elementwise"},
    ),
    "llama_block": (
        lambda: LlamaBlock(D, HEADS, KV_HEADS, FF),
        transformer_macs(1, BLOCK_SEQ, D, FF, HEADS, kv_heads=KV_HEADS, gated=True), 9,
        {"matmul", "softmax", "elementwise"},
    ),
}  # fmt: skip


def export_block(name: str, exporter: str, folder: Path) -> tuple[Path, nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = BLOCKS[name][0]()
    x = torch.randn(1, BLOCK_SEQ, D)
    return export(model, (x,), folder / f"{name}.onnx", exporter), model, x


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", list(BLOCKS))
def test_attention_blocks(tmp_path: Path, name: str, exporter: str) -> None:
    path, _, _ = export_block(name, exporter, tmp_path)
    graph = load_onnx(path, precision="fp32")
    _, macs, matmuls, op_kinds = BLOCKS[name]
    assert graph.macs == macs
    assert kinds(graph) == op_kinds
    assert sum(op.kind is OpKind.MATMUL for op in graph.ops) == matmuls
    assert sum(op.kind is OpKind.SOFTMAX for op in graph.ops) == 1
    assert_no_shape_arithmetic(graph)
    functions = {op.attrs.get("fn") for op in graph.ops}
    if name == "gpt2_block":
        assert {"where", "tanh"} <= functions  # causal masking, GELU(tanh)
    if name == "llama_block":
        # RMSNorm: mean of squares + sqrt; rotary: rotate_half's neg and slices; SwiGLU: the sigmoid of SiLU
        assert sum(op.attrs.get("fn") == "reduce_mean" for op in graph.ops) == 2
        assert {"sqrt", "neg", "slice", "sigmoid", "where"} <= functions
        k_proj = next(op for op in graph.ops if op.kind is OpKind.MATMUL and op.dims["N"] == KV_HEADS * D // HEADS)
        assert k_proj.weights  # grouped-query attention: K/V projections are kv_heads wide


@pytest.mark.parametrize("name", ["gpt2_block", "llama_block"])
def test_macs_agree_with_torch_flop_counter(name: str) -> None:
    """An independent count: torch's FlopCounterMode (2 FLOPs per MAC; these blocks' FLOPs are all matmuls) on the
    block's own forward pass equals the MACs that test_attention_blocks requires of both exporters' graphs."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = BLOCKS[name][0]()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randn(1, BLOCK_SEQ, D))
    assert BLOCKS[name][1] * 2 == counter.get_total_flops()


def test_lstm_dynamo(tmp_path: Path) -> None:
    class Outputs(nn.Module):  # the sequence output only (the dynamo exporter returns a flat tuple otherwise)
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(16, 32, num_layers=2)

        def forward(self, x):
            return self.lstm(x)[0]

    path = export(Outputs(), (torch.randn(10, 2, 16),), tmp_path / "lstm.onnx", "dynamo")
    graph = load_onnx(path)
    assert graph.macs == 10 * 2 * 4 * 32 * (16 + 32) + 10 * 2 * 4 * 32 * (32 + 32)
    recurrent = [op for op in graph.ops if op.attrs.get("recurrent") == "LSTM"]
    assert len(recurrent) == 2 and all(op.attrs["steps"] == 10 for op in recurrent)
    assert kinds(graph) <= {"matmul", "elementwise"}


# -- LRN (AlexNet) ----------------------------------------------------------------------
class AlexNetLike(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 5, stride=2, padding=2)
        self.lrn = nn.LocalResponseNorm(5)
        self.pool = nn.MaxPool2d(3, 2)
        self.fc = nn.Linear(8 * 7 * 7, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.lrn(torch.relu(self.conv(x)))), 1))


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_local_response_norm_from_torch(tmp_path: Path, exporter: str) -> None:
    """torch writes LRN as a 3-D AveragePool over channels (TorchScript: inside an If on the rank)."""
    path = export(AlexNetLike(), (torch.randn(1, 3, 32, 32),), tmp_path / "alexnet.onnx", exporter)
    graph = load_onnx(path, precision="fp32")
    assert graph.macs == 8 * 16 * 16 * 3 * 25 + 8 * 7 * 7 * 10
    window = next(op for op in graph.ops if op.kind is OpKind.POOL and op.attrs["mode"] == "avg")
    # the channel window: 5 channels x 1 x 1 at every one of the 8 x 16 x 16 outputs
    assert window.flops == 8 * 16 * 16 * 5
    assert_no_shape_arithmetic(graph)


def test_lrn_op_alexnet_style(tmp_path: Path) -> None:
    """The ONNX LRN op itself (ZigZag's AlexNet): an elementwise op over its input."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((16, 3, 11, 11)).astype(np.float32), "conv.weight")
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight"], ["c"], name="conv", strides=[4, 4], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("LRN", ["r"], ["n"], name="lrn", size=5, alpha=1e-4, beta=0.75, bias=2.0),
        helper.make_node("MaxPool", ["n"], ["y"], name="pool", kernel_shape=[3, 3], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes, "alexnet_head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 63, 63])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 7, 7])], [weight],
    )  # fmt: skip
    path = tmp_path / "alexnet_head.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    imported = load_onnx(path)
    assert imported.macs == 16 * 15 * 15 * 3 * 121
    lrn = imported.op("lrn")
    assert lrn.kind is OpKind.ELEMENTWISE and lrn.attrs["fn"] == "lrn" and lrn.dims["N"] == 16 * 15 * 15


# -- Hugging Face transformers (configs only: nothing is downloaded) ----------------------
transformers = pytest.importorskip("transformers")


class LastHidden(nn.Module):
    """forward(ids) -> last_hidden_state: the plain signature the exporters want."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).last_hidden_state


SEQ = 16


def hf_model(kind: str):
    if kind == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=128)
        return config, transformer_macs(2, SEQ, 64, 256, 4)
    if kind == "llama":
        config = transformers.LlamaConfig(
            num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128,
        )  # fmt: skip
        return config, transformer_macs(2, SEQ, 64, 128, 4, kv_heads=2, gated=True)
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
        vocab_size=1000, max_position_embeddings=128,
    )  # fmt: skip
    return config, transformer_macs(2, SEQ, 64, 128, 4)


def export_hf(kind: str, exporter: str, path: Path) -> tuple[Path, int]:
    config, macs = hf_model(kind)
    torch.manual_seed(0)
    model = LastHidden(transformers.AutoModel.from_config(config))
    return export(model, (torch.randint(0, 1000, (1, SEQ)),), path, exporter), macs


@pytest.mark.parametrize(
    "kind, exporter",
    [
        ("gpt2", "dynamo"),
        ("gpt2", "torchscript"),
        pytest.param("llama", "dynamo", marks=pytest.mark.slow),
        pytest.param("bert", "dynamo", marks=pytest.mark.slow),
        pytest.param("bert", "torchscript", marks=pytest.mark.slow),
    ],
)
def test_hugging_face_models(tmp_path: Path, kind: str, exporter: str) -> None:
    path, macs = export_hf(kind, exporter, tmp_path / f"{kind}.onnx")
    graph = load_onnx(path, precision="fp32")
    assert graph.macs == macs
    assert kinds(graph) <= {"matmul", "softmax", "layernorm", "elementwise"}
    assert sum(op.kind is OpKind.SOFTMAX for op in graph.ops) == 2
    embedding = [op for op in graph.ops if op.attrs.get("fn") == "gather" and op.weights]
    table = graph.tensors[embedding[0].weights[0]]
    assert table.shape[0] == 1000  # the token table
    # the look-up reads SEQ rows of the table, not the table
    assert embedding[0].attrs["rows"] == SEQ and embedding[0].attrs["weight_read_bytes"] == SEQ * 64 * 4
    assert graph.read_nbytes(embedding[0], table.name) == SEQ * 64 * 4 < table.nbytes  # costed by the rows read
    assert_no_shape_arithmetic(graph)


def test_llama_torchscript_export_fails_upstream(tmp_path: Path) -> None:
    """transformers 5 + the TorchScript exporter cannot export GQA attention (not an importer limit)."""
    config, _ = hf_model("llama")
    model = LastHidden(transformers.AutoModel.from_config(config))
    with pytest.raises(Exception, match="enable_gqa|diff|not supported|not implemented"):
        export(model, (torch.randint(0, 1000, (1, SEQ)),), tmp_path / "llama.onnx", "torchscript")


# -- external data, shapes-only models --------------------------------------------------
def test_external_data_loads_and_absent_weights_import_shapes_only(tmp_path: Path, caplog) -> None:
    path, macs = export_hf("gpt2", "dynamo", tmp_path / "gpt2.onnx")
    for threshold in (0, 1024):  # 0: even reshape targets sit in the data file and are read from it
        model = onnx.load(str(path))
        folder = tmp_path / f"ext{threshold}"
        folder.mkdir()
        external = folder / "gpt2.onnx"
        onnx.save_model(
            model, str(external), save_as_external_data=True, location="gpt2.onnx.data", size_threshold=threshold
        )
        assert (folder / "gpt2.onnx.data").stat().st_size > 100_000
        full = load_onnx(external)
        assert full.macs == macs and not full.meta["weights_missing"]
    # the exporters' default: small tensors inline, weights in the data file, which is then absent
    (folder / "gpt2.onnx.data").unlink()
    with caplog.at_level(logging.WARNING, logger="dse.importers"):
        shapes_only = load_onnx(external)
    assert shapes_only.macs == macs and shapes_only.weight_bytes == full.weight_bytes
    assert shapes_only.meta["weights_missing"]
    assert [r.message for r in caplog.records if "weights missing" in r.message]


def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", "64")):
        weight.external_data.add(key=key, value=value)
    (tmp_path / "secret.bin").write_bytes(np.zeros(16, np.float32).tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [weight],
    )
    onnx.save(helper.make_model(graph), str(folder / "m.onnx"))
    with pytest.raises(GraphError, match=r"'w'.*outside the model's folder"):
        load_onnx(folder / "m.onnx")


# -- quantized exports --------------------------------------------------------------------
ort_quant = pytest.importorskip("onnxruntime.quantization")


class _Calibration(ort_quant.CalibrationDataReader):
    def __init__(self, name: str) -> None:
        rng = np.random.default_rng(0)
        self.batches = iter([{name: rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(2)])

    def get_next(self):
        return next(self.batches, None)


class PlainCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16 * 32 * 32, 10, bias=False)  # QOperator's bias add is a com.microsoft op

    def forward(self, x):
        features = torch.flatten(torch.relu(self.conv2(torch.relu(self.conv1(x)))), 1)
        return self.head(features.unsqueeze(1))  # 3-D: a MatMul (QLinearMatMul), not a Gemm


@pytest.mark.parametrize("quant_format", ["QDQ", "QOperator"])
def test_int8_quantized_model_records_precision(tmp_path: Path, quant_format: str) -> None:
    path = export(PlainCNN(), (torch.randn(1, 3, 32, 32),), tmp_path / "cnn.onnx", "torchscript", input_names=["x"])
    quantized = tmp_path / f"cnn_{quant_format}.onnx"
    ort_quant.quantize_static(
        str(path), str(quantized), _Calibration("x"), quant_format=getattr(ort_quant.QuantFormat, quant_format)
    )
    op_types = {n.op_type for n in onnx.load(str(quantized)).graph.node}
    assert ("QLinearConv" in op_types) == (quant_format == "QOperator")
    assert ("QLinearMatMul" in op_types) == (quant_format == "QOperator")
    assert "DequantizeLinear" in op_types
    graph = load_onnx(quantized, precision="fp32")
    assert graph.macs == 8 * 32 * 32 * 27 + 16 * 32 * 32 * 72 + 16 * 32 * 32 * 10
    compute = [op for op in graph.ops if op.kind in (OpKind.CONV, OpKind.MATMUL)]
    assert len(compute) == 3
    for op in compute:
        assert op.attrs["precision"] == "int8" and op.attrs["weight_precision"] == "int8", op.name
        assert graph.tensors[op.weights[0]].elem_bytes == 1  # the graph default is fp32 (4 bytes)
    assert graph.meta["quantized_precisions"] == ["int8"]
