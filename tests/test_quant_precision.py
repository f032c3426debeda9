"""hwmodels.accuracy.precision_accuracy: number-format rounding against torch, int8/int4 inference against an
independent torch fake-quant computation, the numpy ONNX runner against onnxruntime, and accuracy on systolic
points."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.cli import main
from dse.session import build_evaluator
from dse.spec import load_spec
from hwmodels.accuracy.ap_fixed import QuantError
from hwmodels.accuracy.number_formats import NumberFormat, round_float
from hwmodels.accuracy.onnx_runner import OnnxNet
from hwmodels.accuracy.precision_accuracy import FormatQuantizer, PrecisionAccuracy, calibration_split

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(3)


def _values() -> np.ndarray:
    """float32 values across magnitudes, with exact ties of the narrow formats and subnormals."""
    wide = RNG.standard_normal(4000) * np.exp2(RNG.uniform(-30, 20, 4000))
    ties = (np.arange(-3000, 3000) + 0.5) * np.exp2(-10.0)  # halfway between fp16 neighbours near 1
    bf16_ties = np.float32(1.0) + np.arange(1, 400) * np.float32(2.0**-8)  # halfway between bf16 neighbours
    tiny = RNG.standard_normal(500) * 1e-6  # fp16 subnormals
    return np.concatenate([wide, ties, bf16_ties, tiny]).astype(np.float32)


@pytest.mark.parametrize(("name", "dtype"), [("fp16", "float16"), ("bf16", "bfloat16")])
def test_float_rounding_matches_torch_conversion(name: str, dtype: str) -> None:
    x = _values()
    want = torch.from_numpy(x).to(getattr(torch, dtype)).to(torch.float64).numpy()
    got = NumberFormat(name).round(x)
    assert np.array_equal(got, want)  # overflow to inf included (fp16 above 65504)
    assert not np.array_equal(got, x.astype(np.float64))


def test_fp8_e4m3_rounding_matches_torch_in_range() -> None:
    x = _values()
    x = x[np.abs(x) <= 448].astype(np.float32)
    want = torch.from_numpy(x).to(torch.float8_e4m3fn).to(torch.float64).numpy()
    assert np.array_equal(NumberFormat("fp8").round(x), want)
    assert NumberFormat("fp8").round(np.array([1e4, -1e4])).tolist() == [448.0, -448.0]  # saturating


def test_generic_float_rounding_reproduces_ieee_half() -> None:
    x = _values()
    x = x[np.abs(x) < 65504]
    assert np.array_equal(round_float(x, 5, 10), x.astype(np.float16).astype(np.float64))
    assert np.array_equal(round_float(x, 8, 23), x.astype(np.float64))


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(QuantError, match="not emulated"):
        NumberFormat("int3")


# ------------------------------------------------------------------------------------------ a tiny CNN


class TinyCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.dw = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4)
        self.fc1 = torch.nn.Linear(4 * 2 * 2, 12)
        self.norm = torch.nn.LayerNorm(12)
        self.fc2 = torch.nn.Linear(12, 5)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.dw(x))
        x = torch.nn.functional.avg_pool2d(x, 1)
        x = torch.flatten(x, 1)
        x = self.norm(torch.relu(self.fc1(x)))
        return torch.softmax(self.fc2(x), dim=-1) * 10


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> tuple[TinyCnn, Path, np.ndarray]:
    model = TinyCnn().eval()
    x = np.random.default_rng(1).uniform(-1, 1, (200, 2, 8, 8)).astype(np.float32)
    path = tmp_path_factory.mktemp("cnn") / "cnn.onnx"
    torch.onnx.export(model, torch.from_numpy(x[:1]), str(path), input_names=["x"], opset_version=17, dynamo=False)
    return model, path, x


def test_numpy_runner_matches_onnxruntime(cnn) -> None:
    ort = pytest.importorskip("onnxruntime")
    _, path, x = cnn
    session = ort.InferenceSession(str(path))
    want = np.concatenate([session.run(None, {"x": x[i : i + 1]})[0] for i in range(len(x))])
    got = OnnxNet(path).run(x)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-5)


def _torch_int_reference(model: TinyCnn, x: np.ndarray, bits: int, calibration: np.ndarray) -> np.ndarray:
    """The same quantization written with torch's own fake-quant ops, calibrated with forward hooks."""
    qmax = 2 ** (bits - 1) - 1
    gemms = [model.conv, model.dw, model.fc1, model.fc2]
    amax = {}
    hooks = [
        m.register_forward_pre_hook(lambda m, a: amax.__setitem__(m, max(amax.get(m, 0.0), float(a[0].abs().max()))))
        for m in gemms
    ]
    with torch.no_grad():
        model(torch.from_numpy(x[calibration]))
    for h in hooks:
        h.remove()

    def quantized(module, inp, fn):
        s = amax[module] / qmax
        w = module.weight.detach().double()
        sw = w.abs().amax(dim=tuple(range(1, w.ndim))) / qmax
        xq = torch.fake_quantize_per_tensor_affine(inp.float(), s, 0, -qmax, qmax).double()
        wq = torch.fake_quantize_per_channel_affine(
            w.float(), sw.float(), torch.zeros(len(sw), dtype=torch.int32), 0, -qmax, qmax
        ).double()
        bq = torch.round(module.bias.detach().double() / (s * sw.float().double())) * (s * sw.float().double())
        return fn(xq, wq, bq).float()

    f = torch.nn.functional
    with torch.no_grad():
        h = torch.from_numpy(x)
        h = torch.relu(quantized(model.conv, h, lambda a, w, b: f.conv2d(a, w, b, padding=1)))
        h = f.max_pool2d(h, 2)
        h = torch.relu(quantized(model.dw, h, lambda a, w, b: f.conv2d(a, w, b, stride=2, padding=1, groups=4)))
        h = torch.flatten(h, 1)
        h = model.norm(torch.relu(quantized(model.fc1, h, f.linear)))
        return (torch.softmax(quantized(model.fc2, h, f.linear), dim=-1) * 10).double().numpy()


@pytest.mark.parametrize("bits", [8, 4])
def test_integer_inference_matches_torch_fake_quant(cnn, bits: int) -> None:
    model, path, x = cnn
    net = OnnxNet(path)
    calibration = calibration_split(len(x), size=64)
    amax: dict[str, float] = {}
    net.run(x[calibration], amax=amax)
    got = net.run(x, FormatQuantizer(NumberFormat(f"int{bits}"), amax))
    want = _torch_int_reference(model, x, bits, calibration)
    exact = net.run(x)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4), np.abs(got - want).max()
    assert np.abs(got - exact).max() > (1e-3 if bits == 8 else 1e-2)  # the quantization does change the outputs


def test_unsupported_op_is_named(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], name="inorm")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
        [
            helper.make_tensor("s", TensorProto.FLOAT, [2], [1, 1]),
            helper.make_tensor("b", TensorProto.FLOAT, [2], [0, 0]),
        ],
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    with pytest.raises(QuantError, match=r"inorm \(InstanceNormalization\) is not emulated"):
        OnnxNet(path)


# ------------------------------------------------------------------------------------------ systolic spec


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory, digits_workloads: Path) -> Path:
    folder = tmp_path_factory.mktemp("digits_sys")
    shutil.copytree(digits_workloads, folder / "workloads")
    spec = (Path(__file__).parent.parent / "designs" / "digits_mlp_systolic.yaml").read_text()
    (folder / "spec.yaml").write_text(spec.replace("rows: [4, 8, 16, 32, 64]", "rows: [8, 32]"))
    return folder


def test_systolic_precision_space_gets_accuracy(digits: Path) -> None:
    run = digits / "run"
    assert main(["explore", str(digits / "spec.yaml"), "-o", str(run), "--executor", "serial", "-q"]) == 0
    points = pd.read_parquet(run / "points.parquet")
    by_precision = points.groupby("precision")
    assert set(by_precision.groups) == {"int8", "int16", "fp16", "bf16", "fp32"}
    assert (by_precision["accuracy"].nunique() == 1).all()  # a function of the precision alone
    err = by_precision["max_abs_error"].first()
    assert err["fp32"] < 1e-4 < err["fp16"] < err["bf16"]  # bf16 keeps 8 mantissa bits, fp16 11
    bound = 0.001
    assert ((points["accuracy_drop"] <= bound) == points["feasible"]).all()
    direct = PrecisionAccuracy(str(digits / "workloads" / "digits_mlp.onnx"), str(digits / "workloads/digits_val.npz"))
    assert direct.metrics("int8")["accuracy"] == pytest.approx(by_precision["accuracy"].first()["int8"])


def test_precision_given_twice_is_one_clear_error(digits: Path, capsys) -> None:
    text = (digits / "spec.yaml").read_text().replace("batch: 1}", "batch: 1, precision: int8}")
    (digits / "twice.yaml").write_text(text)
    assert main(["validate", str(digits / "twice.yaml")]) == 2
    err = capsys.readouterr().err
    assert "template.params.precision" in err and "give it in one place" in err and "Traceback" not in err


@pytest.mark.parametrize(("kind", "precision"), [("gpu", "fp16"), ("rdu", "bf16"), ("multicore", "int8")])
def test_other_templates_take_their_precision(digits: Path, kind: str, precision: str) -> None:
    spec_path = digits / f"{kind}.yaml"
    spec_path.write_text(
        f"name: t\nworkload: {{model: workloads/digits_mlp.onnx, data: workloads/digits_val.npz, "
        f"precision: {precision}}}\ntemplate: {{kind: {kind}, params: {{}}}}\n"
        "objectives: [min latency_ms, max accuracy]\n"
    )
    _, evaluator = build_evaluator(load_spec(spec_path))
    metrics = evaluator({}).values
    direct = PrecisionAccuracy(str(digits / "workloads" / "digits_mlp.onnx"), str(digits / "workloads/digits_val.npz"))
    assert metrics["max_abs_error"] == direct.metrics(precision)["max_abs_error"] > 0
