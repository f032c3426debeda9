"""Real measurements as contract datasets: wa-hls4ml rows, ingested synthesis reports, GPU kernel timings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.cli import main
from dse.errors import UserError
from dse.rundir import open_store
from hwmodels.gpu.calibrate import Measurement, write_measurements
from surrogates.contract.features import contract_schema
from surrogates.contract.model import ContractSurrogate
from surrogates.truth.measured import measured_dataset, read_gpu_csv
from surrogates.truth.measured_eval import FPGA_REPORTED, group_out_comparison, heldout_comparison

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
WA_CSV = SHARED / "wa-hls4ml" / "wa_2layer_subset.csv"
LLMCOMPASS = SHARED / "gpu" / "llmcompass_a100"
needs_wa = pytest.mark.skipif(not WA_CSV.is_file(), reason=f"wa-hls4ml data absent ({WA_CSV})")


@pytest.fixture(scope="module")
def wa_subset(tmp_path_factory) -> Path:
    """Every row of 12 networks of the real wa-hls4ml file (about 300 designs)."""
    if not WA_CSV.is_file():
        pytest.skip(f"wa-hls4ml data absent ({WA_CSV})")
    raw = pd.read_csv(WA_CSV)
    keep = sorted(raw["model_string"].unique())[:: max(1, raw["model_string"].nunique() // 12)][:12]
    path = tmp_path_factory.mktemp("wa") / "wa.csv"
    raw[raw["model_string"].isin(keep)].to_csv(path, index=False)
    return path


def test_wa_hls4ml_rows_are_contract_rows_with_measured_truth(wa_subset):
    data = measured_dataset([f"wa-hls4ml:{wa_subset}"])
    raw = pd.read_csv(wa_subset)
    assert len(data) == int(raw["hls_synth_success"].sum()) and data["workload"].nunique() == 12
    assert set(contract_schema("fpga_dataflow")["features"]) <= set(data.columns)
    assert (data["feature_set"] == "contract").all() and (data["truth"] == "measured").all()
    first = raw.iloc[0]
    row = data[(data["workload"] == first["model_string"]) & (data["param_reuse_factor"] == first["rf"])]
    row = row[row["param_weight_width"] == first["prec"]].iloc[0]
    assert row["design_lut"] == first["LUT_hls"] and row["design_latency_cycles"] == first["WorstLatency_hls"]
    assert row["design_ii_cycles"] == first["IntervalMax_hls"]
    # the closed form is the analytical model's own estimate, not the measurement
    assert row["base_lut"] > 0 and not np.allclose(data["base_lut"], data["design_lut"])


def test_fpga_surrogate_held_out_by_network_is_reported_next_to_the_model(wa_subset):
    data = measured_dataset([f"wa-hls4ml:{wa_subset}"])
    result = heldout_comparison(data, FPGA_REPORTED, "gb")
    assert result["train_workloads"] + result["test_workloads"] == 12 and result["test_workloads"] > 0
    for target in FPGA_REPORTED:
        both = result["targets"][target]
        assert both["surrogate"]["n"] == both["model"]["n"] > 0 and np.isfinite(both["surrogate"]["mape"])
    for target in ("latency_cycles", "ii_cycles", "lut", "ff"):  # BRAM needs more networks (see the benchmark)
        assert result["targets"][target]["surrogate"]["mape"] < 25.0


def test_dsp_zero_in_the_closed_form_stays_a_finite_prediction(wa_subset):
    data = measured_dataset([f"wa-hls4ml:{wa_subset}"])
    model = ContractSurrogate.fit(data, "gb", 0)
    pred = model.predict_frame(data)
    assert np.isfinite(pred["dsp"]).all() and pred["dsp"].max() < 10 * max(data["design_dsp"].max(), 1.0)


def test_cli_measured_then_train_and_eval(wa_subset, tmp_path, capsys):
    out = tmp_path / "fpga.parquet"
    assert main(["surrogate", "measured", f"wa-hls4ml:{wa_subset}", "-o", str(out)]) == 0
    model = tmp_path / "fpga.joblib"
    assert main(["surrogate", "train", str(out), "-o", str(model)]) == 0
    assert main(["surrogate", "eval", str(model), str(out)]) == 0
    assert "lut" in capsys.readouterr().out


def _kernels(tmp_path: Path) -> Path:
    rows = [
        Measurement("a100_80gb", "fp16", "gemm", 1024, 1024, 1024, 1, 2.0e-4, name="square_1024"),
        Measurement("a100_80gb", "fp16", "gemm", 4096, 4096, 4096, 1, 1.1e-3, name="square_4096"),
        Measurement("a100_80gb", "fp16", "gemm", 128, 128, 64, 64, 3.0e-5, name="batched_64x128x64"),
        Measurement("a100_80gb", "fp16", "conv", 25088, 64, 576, 1, 9.0e-5, name="r50_res2_3x3_b8"),
        Measurement("a100_80gb", "fp16", "attention", 128, 128, 64, 96, 1.2e-4, name="bert_b8_s128"),
        Measurement("a100_80gb", "fp16", "softmax", 4096, 1024, 0, 1, 4.0e-5, name="softmax_4096x1024"),
        Measurement("a100_80gb", "fp16", "layernorm", 4096, 768, 0, 1, 4.5e-5, name="layernorm_4096x768"),
        Measurement("a100_80gb", "fp16", "gelu", 2**20, 1, 0, 1, 5.0e-5, name="gelu_1M"),
    ]
    return write_measurements(tmp_path / "kernels.csv", rows)


def test_gpu_csv_rows_price_each_kernel_and_group_by_shape_family(tmp_path):
    data = measured_dataset([f"gpu-csv:{_kernels(tmp_path)}"])
    assert len(data) == 8 and (data["template"] == "gpu").all()
    assert set(data["family"]) >= {"gemm/square", "attention/bert", "gelu/gelu"}
    assert np.allclose(
        sorted(data["design_latency_ms"]),
        sorted(np.array([2e-4, 1.1e-3, 3e-5, 9e-5, 1.2e-4, 4e-5, 4.5e-5, 5e-5]) * 1e3),
    )
    assert (data["base_latency_ms"] > 0).all() and data["g_log_flops"].nunique() == 8
    # Leave one family out on two families (three kernels): each row is predicted by the fit that never saw its
    # family. Two families keep it to two boosting fits (the 8-row walk refits 56 times for its inner checks).
    two = data[data["family"].isin(["gemm/square", "gelu/gelu"])]
    result = group_out_comparison(two, "family", ("latency_ms",), "gb")
    assert list(result) == ["all", "gelu/gelu", "gemm/square"]
    assert result["all"]["latency_ms"]["surrogate"]["n"] == 3
    assert result["gemm/square"]["latency_ms"]["surrogate"]["n"] == 2


@pytest.mark.skipif(not LLMCOMPASS.is_dir(), reason=f"LLMCompass A100 data absent ({LLMCOMPASS})")
def test_llmcompass_families_are_the_sweeps():
    data = measured_dataset([f"llmcompass:{LLMCOMPASS}"])
    assert data["family"].nunique() == 6 and len(data) == 74
    assert data.groupby("family")["workload"].nunique().min() >= 9


SPEC = """
name: measured-reports
workload: {model: jet_mlp, batch: 1}
template:
  kind: fpga_dataflow
  params: {part: xcu250, io_type: io_parallel, strategy: resource, reuse_factor: 4, width: 16, integer: 6}
objectives: [min latency_cycles, min dsp]
search: {strategy: grid}
"""


def test_ingested_reports_become_rows(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    run = tmp_path / "run"
    assert main(["explore", str(spec), "-o", str(run), "--executor", "serial", "-q"]) == 0
    with pytest.raises(UserError, match="no synthesis report"):
        measured_dataset([f"reports:{run}"])
    with open_store(run) as store:
        point_id = store.records()[0].point_id
        synth = {"WorstLatency": "40", "IntervalMax": "41", "DSP": "300", "LUT": "12000", "FF": "9000"}
        store.put_synthesis(point_id, "Vitis", {"CSynthesisReport": {**synth, "BRAM_18K": "4"}}, {"dsp": 1.0})
    data = measured_dataset([f"reports:{run}"])
    assert len(data) == 1 and data["workload"].iloc[0] == "jet_mlp"
    assert data["design_dsp"].iloc[0] == 300 and data["design_latency_cycles"].iloc[0] == 40
    assert data["design_throughput_ips"].iloc[0] == pytest.approx(1e9 / (41 * 5.0))
    with open_store(run) as store:
        store.put_synthesis(point_id, "Vitis", {"CSynthesisReport": synth}, {"dsp": 1.0})
    with pytest.raises(UserError, match="BRAM_18K"):
        measured_dataset([f"reports:{run}"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("op,M\ngemm,1\n", "missing columns"),
        ("gpu,precision,op,M,N,K,count,latency_s\na100_80gb,fp16,fft,1,1,1,1,1e-3\n", "op 'fft'"),
        ("gpu,precision,op,M,N,K,count,latency_s\na100_80gb,fp16,gemm,x,1,1,1,1e-3\n", "must be numbers"),
        ("gpu,precision,op,M,N,K,count,latency_s\na100_80gb,fp16,gemm,8,8,8,1,0\n", "must be > 0"),
    ],
)
def test_bad_gpu_csv_is_one_user_error(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_gpu_csv(path)


def test_bad_sources_exit_2_with_one_message(tmp_path, capsys):
    out = str(tmp_path / "x.parquet")
    assert main(["surrogate", "measured", "nope:somewhere", "-o", out]) == 2
    assert "KIND one of" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(["surrogate", "measured", f"wa-hls4ml:{bad}", "-o", out]) == 2
    err = capsys.readouterr().err
    assert "missing columns" in err and "Traceback" not in err
    assert main(["surrogate", "measured", f"llmcompass:{tmp_path / 'none'}", "-o", out]) == 2


@needs_wa
def test_sources_of_two_templates_are_refused(wa_subset, tmp_path):
    with pytest.raises(UserError, match="one dataset per template"):
        measured_dataset([f"wa-hls4ml:{wa_subset}", f"gpu-csv:{_kernels(tmp_path)}"])
