"""hwmodels.accuracy on fpga_dataflow: ap_fixed arithmetic, the hls4ml emulator against hls4ml's own g++ C
simulation, accuracy metrics, ``dse export --csim`` on the digits design."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dse.cli import main
from hwmodels.accuracy.ap_fixed import OVERFLOWS, ROUNDINGS, FixedType, from_float, parse_type, requantize
from hwmodels.accuracy.hls4ml_auto import infer_auto_types
from hwmodels.accuracy.hls_emulator import HlsEmulator

RNG = np.random.default_rng(7)


def _exact_quantize(value: Fraction, t: FixedType) -> int:
    """ap_fixed's rules written out on exact rationals, one value at a time (the test's own reference)."""
    scaled = value * (1 << t.frac) if t.frac >= 0 else value / (1 << -t.frac)
    floor = scaled.numerator // scaled.denominator
    rem = scaled - floor
    half = Fraction(1, 2)
    up = {
        "AP_TRN": False,
        "AP_TRN_ZERO": scaled < 0 and rem != 0,
        "AP_RND": rem >= half,
        "AP_RND_ZERO": rem > half or (rem == half and scaled < 0),
        "AP_RND_INF": rem > half or (rem == half and scaled >= 0),
        "AP_RND_MIN_INF": rem > half,
        "AP_RND_CONV": rem > half or (rem == half and floor % 2 == 1),
    }[t.rounding]
    q = floor + int(up)
    lo, hi = t.min_int, t.max_int
    if t.overflow == "AP_WRAP":
        return (q - lo) % (1 << t.width) + lo
    if t.overflow == "AP_SAT":
        return min(max(q, lo), hi)
    if t.overflow == "AP_SAT_SYM":
        return min(max(q, -hi if t.signed else lo), hi)
    return q if lo <= q <= hi else 0


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("overflow", OVERFLOWS)
def test_fixed_point_modes_match_exact_arithmetic(rounding: str, overflow: str) -> None:
    t = FixedType(7, 3, True, rounding, overflow)
    values = np.concatenate([RNG.uniform(-12, 12, 300), np.arange(-10, 10, 0.0625)])  # includes exact ties
    got = from_float(values, t)
    want = [_exact_quantize(Fraction(float(v)), t) for v in values]
    assert got.tolist() == want
    m = RNG.integers(-(1 << 12), 1 << 12, 300)  # requantize from 9 fractional bits
    got = requantize(m, 9, t)
    assert got.tolist() == [_exact_quantize(Fraction(int(v), 1 << 9), t) for v in m]


def test_parse_type_reads_what_the_exporter_writes() -> None:
    assert parse_type("ap_fixed<10,6>") == FixedType(10, 6)
    assert parse_type("ap_ufixed<8,0,AP_RND,AP_SAT>") == FixedType(8, 0, False, "AP_RND", "AP_SAT")
    assert parse_type("ap_int<8>") == FixedType(8, 8)
    with pytest.raises(Exception, match="not an ap_fixed"):
        parse_type("float")


# ------------------------------------------------------------------------------------------ emulator vs C-sim


def _dense(name: str, prev: str, n_in: int, n_out: int, rng: np.random.Generator) -> dict:
    lim = np.sqrt(6 / (n_in + n_out))
    return {
        "class_name": "Dense",
        "name": name,
        "inputs": [prev],
        "n_in": n_in,
        "n_out": n_out,
        "weight_data": rng.uniform(-lim, lim, (n_in, n_out)).astype(np.float32),
        "bias_data": rng.uniform(-0.2, 0.2, n_out).astype(np.float32),
    }


def mlp_case(act: str, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {"class_name": "InputLayer", "name": "input_1", "input_shape": [16]},
        _dense("fc1", "input_1", 16, 12, rng),
        {"class_name": "Activation", "name": "a1", "inputs": ["fc1"], "activation": "relu"},
        _dense("fc2", "a1", 12, 8, rng),
        {"class_name": "Activation", "name": "a2", "inputs": ["fc2"], "activation": act},
        _dense("fc3", "a2", 8, 5, rng),
    ]


def conv_case(seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    conv = {
        "class_name": "Conv2D",
        "name": "conv1",
        "inputs": ["input_1"],
        "data_format": "channels_last",
        "in_height": 6,
        "in_width": 6,
        "n_chan": 2,
        "n_filt": 3,
        "filt_height": 3,
        "filt_width": 3,
        "stride_height": 1,
        "stride_width": 1,
        "out_height": 6,
        "out_width": 6,
        "pad_top": 1,
        "pad_bottom": 1,
        "pad_left": 1,
        "pad_right": 1,
        "weight_data": rng.uniform(-0.5, 0.5, (3, 3, 2, 3)).astype(np.float32),
        "bias_data": rng.uniform(-0.1, 0.1, 3).astype(np.float32),
    }
    pool = {
        "class_name": "MaxPooling2D",
        "name": "pool1",
        "inputs": ["relu1"],
        "data_format": "channels_last",
        "in_height": 6,
        "in_width": 6,
        "n_filt": 3,
        "pool_height": 2,
        "pool_width": 2,
        "stride_height": 2,
        "stride_width": 2,
        "out_height": 3,
        "out_width": 3,
        "pad_top": 0,
        "pad_bottom": 0,
        "pad_left": 0,
        "pad_right": 0,
    }
    return [
        {"class_name": "InputLayer", "name": "input_1", "input_shape": [6, 6, 2]},
        conv,
        {"class_name": "Activation", "name": "relu1", "inputs": ["conv1"], "activation": "relu"},
        pool,
        {"class_name": "Reshape", "name": "flat", "inputs": ["pool1"], "target_shape": [27]},
        _dense("fc1", "flat", 27, 4, rng),
    ]


def config(io: str, backend: str, model: str, layers: dict, strategy: str = "Latency") -> dict:
    return {
        "Backend": backend,
        "ProjectName": "myproject",
        "Part": "xcu250-figd2104-2L-e",
        "ClockPeriod": 5,
        "IOType": io,
        "HLSConfig": {"Model": {"Precision": model, "ReuseFactor": 1, "Strategy": strategy}, "LayerName": layers},
    }


def dense_types(w: str, acc: str, res: str) -> dict:
    return {"Precision": {"weight": w, "bias": w, "accum": acc, "result": res}}


# (name, layers, config): W 4..18, I 1..8, per-layer overrides, RND/SAT, io_parallel/io_stream, Vitis/Vivado
CASES = [
    (
        "mlp_sigmoid_rnd_sat_stream",
        mlp_case("sigmoid"),
        config(
            "io_stream",
            "Vitis",
            "ap_fixed<10,4>",
            {
                "fc1": dense_types("ap_fixed<6,1>", "ap_fixed<12,4>", "ap_fixed<9,3>"),
                "a1": {"Precision": {"result": "ap_fixed<9,3>"}},
                "fc2": dense_types("ap_fixed<8,2>", "ap_fixed<14,5>", "ap_fixed<11,4,AP_RND,AP_SAT>"),
                "a2": {"Precision": {"result": "ap_fixed<8,1>"}},
                "fc3": dense_types("ap_fixed<7,2>", "ap_fixed<12,5,AP_RND,AP_SAT>", "ap_fixed<12,5>"),
            },
        ),
    ),
    ("mlp_relu_uniform_16_6", mlp_case("relu", 1), config("io_parallel", "Vitis", "ap_fixed<16,6>", {})),
    (
        "mlp_tanh_w4",
        mlp_case("tanh", 2),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<8,3>",
            {
                "fc1": dense_types("ap_fixed<4,1>", "ap_fixed<10,3>", "ap_fixed<6,2>"),
                "a1": {"Precision": {"result": "ap_fixed<6,2>"}},
                "fc2": dense_types("ap_fixed<4,1>", "ap_fixed<10,3>", "ap_fixed<8,3>"),
                "a2": {"Precision": {"result": "ap_fixed<5,1>"}},
                "fc3": dense_types("ap_fixed<5,1>", "ap_fixed<10,4>", "ap_fixed<8,4>"),
            },
        ),
    ),
    (
        "mlp_relu_w18_i8_stream",
        mlp_case("relu", 3),
        config(
            "io_stream",
            "Vitis",
            "ap_fixed<18,8>",
            {"fc2": dense_types("ap_fixed<18,2>", "ap_fixed<18,8>", "ap_fixed<18,8>")},
        ),
    ),
    (
        "mlp_sigmoid_vivado_resource",
        mlp_case("sigmoid", 4),
        config(
            "io_parallel",
            "Vivado",
            "ap_fixed<12,5>",
            {"fc1": dense_types("ap_fixed<5,1>", "ap_fixed<12,5>", "ap_fixed<10,4>")},
            strategy="Resource",
        ),
    ),
    (
        "mlp_relu_narrow_wrap",
        mlp_case("relu", 5),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<8,2>",
            {
                "fc1": dense_types("ap_fixed<6,2>", "ap_fixed<8,2>", "ap_fixed<6,1>"),
                "fc3": dense_types("ap_fixed<6,2>", "ap_fixed<9,3>", "ap_fixed<7,3>"),
            },
        ),
    ),
    (
        "mlp_tanh_sat_accum_stream",
        mlp_case("tanh", 6),
        config(
            "io_stream",
            "Vitis",
            "ap_fixed<14,4>",
            {
                "fc1": dense_types("ap_fixed<8,1>", "ap_fixed<10,3,AP_TRN,AP_SAT>", "ap_fixed<10,3,AP_RND,AP_SAT>"),
                "a2": {"Precision": {"result": "ap_ufixed<8,0>"}},
            },
        ),
    ),
    (
        "mlp_linear_rnd_vivado_stream",
        mlp_case("linear", 7),
        config("io_stream", "Vivado", "ap_fixed<12,6,AP_RND,AP_SAT>", {}),
    ),
    ("conv_pool_16_6", conv_case(0), config("io_parallel", "Vitis", "ap_fixed<16,6>", {})),
    (
        "conv_pool_w8_overrides",
        conv_case(1),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<10,3>",
            {
                "conv1": dense_types("ap_fixed<6,1>", "ap_fixed<12,4>", "ap_fixed<8,3>"),
                "relu1": {"Precision": {"result": "ap_ufixed<7,3>"}},
                "fc1": dense_types("ap_fixed<5,1>", "ap_fixed<12,5>", "ap_fixed<9,4>"),
            },
        ),
    ),
    (
        "conv_pool_stream",
        conv_case(2),
        config(
            "io_stream",
            "Vitis",
            "ap_fixed<12,4>",
            {"conv1": dense_types("ap_fixed<8,2>", "ap_fixed<14,5>", "ap_fixed<10,4,AP_RND,AP_SAT>")},
        ),
    ),
    (
        "mlp_sigmoid_w4_i1",
        mlp_case("sigmoid", 8),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<4,1>",
            {"fc1": dense_types("ap_fixed<4,1>", "ap_fixed<10,4>", "ap_fixed<6,3>")},
        ),
    ),
]


def with_softmax(layers: list[dict]) -> list[dict]:
    sm = {"class_name": "Softmax", "name": "sm", "inputs": [layers[-1]["name"]], "activation": "softmax", "axis": -1}
    return [*layers, sm]


def avg_pool_case(seed: int) -> list[dict]:
    layers = conv_case(seed)
    return [{**lay, "class_name": "AveragePooling2D"} if lay["class_name"] == "MaxPooling2D" else lay for lay in layers]


def softmax_types(result: str, accum: str, implementation: str | None = None) -> dict:
    entry: dict = {"Precision": {"result": result, "accum": accum}}
    return {**entry, "Implementation": implementation} if implementation else entry


CASES += [
    (
        "mlp_softmax_stable",
        with_softmax(mlp_case("relu", 1)),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<16,6>",
            {"sm": softmax_types("ap_fixed<16,6>", "ap_fixed<18,8,AP_RND,AP_SAT>")},
        ),
    ),
    (
        "mlp_softmax_latency",
        with_softmax(mlp_case("relu", 2)),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<16,6>",
            {"sm": softmax_types("ap_fixed<16,6>", "ap_fixed<18,8,AP_RND,AP_SAT>", "latency")},
        ),
    ),
    (
        "mlp_softmax_stable_w10_stream",
        with_softmax(mlp_case("relu", 3)),
        config("io_stream", "Vitis", "ap_fixed<10,4>", {"sm": softmax_types("ap_ufixed<8,0>", "ap_fixed<14,6>")}),
    ),
    (
        "conv_avgpool_16_6",
        avg_pool_case(0),
        config("io_parallel", "Vitis", "ap_fixed<16,6>", {"pool1": {"Precision": {"accum": "ap_fixed<18,8>"}}}),
    ),
    (
        "conv_avgpool_w10",
        avg_pool_case(1),
        config(
            "io_parallel",
            "Vitis",
            "ap_fixed<10,4>",
            {"pool1": {"Precision": {"result": "ap_fixed<9,3>", "accum": "ap_fixed<12,5>"}}},
        ),
    ),
]
DEFAULT_CASES = ("mlp_sigmoid_rnd_sat_stream", "conv_pool_w8_overrides", "mlp_softmax_stable")
SAMPLES = 128


def csim_outputs(config: dict[str, Any], layers: list[dict[str, Any]], x: np.ndarray, output_dir: Path) -> np.ndarray:
    """hls4ml's own C simulation of ``layers`` under ``config``: the project built in ``output_dir``, compiled with
    g++, predicting ``x`` (the reference the emulator must equal)."""
    from hls4ml.model.graph import ModelGraph

    config = {**copy.deepcopy(config), "OutputDir": str(output_dir)}
    with contextlib.redirect_stdout(io.StringIO()):
        model = ModelGraph.from_layer_list(config, copy.deepcopy(layers))
        model.compile()
    flat = np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(x.shape[0], -1))
    with contextlib.redirect_stdout(io.StringIO()):
        y = model.predict(flat)
    return np.asarray(y, dtype=np.float64).reshape(x.shape[0], -1)


def _inputs(layers: list[dict]) -> np.ndarray:
    shape = layers[0]["input_shape"]
    return np.random.default_rng(11).uniform(-2.5, 2.5, (SAMPLES, *shape)).astype(np.float32)


@pytest.mark.parametrize(
    "name",
    [c[0] if c[0] in DEFAULT_CASES else pytest.param(c[0], marks=pytest.mark.slow) for c in CASES],
)
def test_emulator_is_bit_exact_against_hls4ml_csim(name: str, tmp_path: Path) -> None:
    _, layers, cfg = next(c for c in CASES if c[0] == name)
    x = _inputs(layers)
    want = csim_outputs(cfg, layers, x, tmp_path / "prj")
    got = HlsEmulator(layers).run(x, cfg).value()
    assert got.shape == want.shape
    assert np.array_equal(got, want), f"{np.sum(got != want)} of {got.size} values differ"
    assert len(np.unique(want)) > 10  # the network does not collapse to a constant


def test_cache_reuses_layer_prefixes() -> None:
    layers = mlp_case("relu")
    emu = HlsEmulator(layers)
    x = _inputs(layers)
    base = config("io_parallel", "Vitis", "ap_fixed<16,6>", {})
    changed = config(
        "io_parallel",
        "Vitis",
        "ap_fixed<16,6>",
        {"fc3": dense_types("ap_fixed<6,1>", "ap_fixed<16,6>", "ap_fixed<16,6>")},
    )
    first = emu.run(x, base, input_key="x").value()
    second = emu.run(x, changed, input_key="x").value()
    assert emu.hits == 1 and emu.misses == 1  # the second run started from fc2's cached output
    assert np.array_equal(second, HlsEmulator(layers).run(x, changed).value())
    assert not np.array_equal(first, second)


# ------------------------------------------------------------------------------------------ the digits design


@pytest.fixture(scope="module")
def digits_dir(tmp_path_factory: pytest.TempPathFactory, digits_workloads: Path) -> Path:
    folder = tmp_path_factory.mktemp("digits")
    shutil.copytree(digits_workloads, folder / "workloads")
    spec = (Path(__file__).parent.parent / "designs" / "digits_mlp_fpga.yaml").read_text()
    (folder / "spec.yaml").write_text(spec.replace("budget: 600", "budget: 120"))
    return folder


def test_digits_explore_measures_accuracy_and_export_checks_it(digits_dir: Path) -> None:
    run = digits_dir / "run"
    assert main(["explore", str(digits_dir / "spec.yaml"), "-o", str(run), "--executor", "serial", "-q"]) == 0
    points = pd.read_parquet(run / "points.parquet")
    for metric in ("accuracy", "accuracy_drop", "argmax_agreement", "max_abs_error"):
        assert metric in points.columns and points[metric].notna().all()
    assert points["accuracy"].max() > 0.9 and points["accuracy"].min() < 0.5  # 3-bit weights break the model
    feasible = points[points["feasible"]]
    assert len(feasible) and (feasible["accuracy_drop"] <= 0.01).all()
    assert not points.loc[points["accuracy_drop"] > 0.01, "feasible"].any()
    best = points[points["pareto"]].sort_values("lut").iloc[0]
    out = digits_dir / "export"
    assert main(["export", str(run), "--point", best["point_id"], "-o", str(out), "--csim"]) == 0
    csim = json.loads((out / "export_report.json").read_text())["csim"]
    assert csim["emulator_mismatches"] == 0 and csim["accuracy_samples"] == 540
    assert csim["accuracy"] == pytest.approx(best["accuracy"])


def _spec(folder: Path, workload: str, extra: str = "") -> Path:
    text = f"""
name: t
workload: {workload}
template: {{kind: fpga_dataflow, params: {{reuse_factor: [1, 2]}}}}
objectives: [min lut, {extra or "min dsp"}]
"""
    path = folder / "bad.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x": np.zeros((4, 64))}, "array y missing"),
        ({"x": np.full((4, 64), np.nan), "y": np.zeros(4, int)}, "NaN"),
        ({"x": np.zeros((4, 63)), "y": np.zeros(4, int)}, "sample shape"),
        ({"x": np.zeros((4, 64)), "y": np.zeros(3, int)}, "x has 4 samples but y has 3"),
        ({"x": np.zeros((4, 64)), "y": np.full(4, 12)}, "label 12 but the model has 10 outputs"),
    ],
)
def test_bad_data_is_one_clear_error(digits_dir: Path, arrays: dict, message: str, capsys) -> None:
    np.savez(digits_dir / "workloads" / "bad.npz", **arrays)
    spec = _spec(digits_dir, "{model: workloads/digits_mlp.onnx, data: workloads/bad.npz}")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert message in err and "bad.npz" in err and "Traceback" not in err


def test_accuracy_needs_a_trained_model_and_data(digits_dir: Path, capsys) -> None:
    spec = _spec(digits_dir, "{model: jet_mlp, data: workloads/digits_val.npz}")
    assert main(["validate", str(spec)]) == 2
    assert "not be meaningful" in capsys.readouterr().err
    spec = _spec(digits_dir, "{model: jet_mlp}", "max accuracy")
    assert main(["validate", str(spec)]) == 2
    assert "accuracy needs workload.data" in capsys.readouterr().err


def test_hls4ml_auto_types_are_hls4ml_lossless_growth(digits_workloads: Path) -> None:
    """hls4ml's own 'auto' inference on the digits MLP: Dense accum = W_w + W_in + ceil(log2 n_in) + 1 bits."""
    auto = infer_auto_types(digits_workloads / "digits_mlp.onnx", "fixed<10,4>")
    dense = [a for a in auto if a.class_name == "Dense"]
    assert [a.onnx_name for a in dense] == ["fc1", "fc2", "fc3"]
    assert [a.types["accum"] for a in dense] == ["ap_fixed<27,15>", "ap_fixed<26,14>", "ap_fixed<25,13>"]
    assert all(a.types["weight"] == "ap_fixed<10,4>" for a in dense)
