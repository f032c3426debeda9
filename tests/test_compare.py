"""GPU baselines: comparison tables, spec validation of `baselines`, `dse compare DIR` and the report section."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dse import zoo
from dse.cli import main
from dse.compare import baseline_names, evaluate_baselines, gpu_precision, layers_frame, summary_frame
from dse.errors import UserError
from dse.spec import SpecError, parse_spec

SPEC = """\
name: mlp-vs-gpus
workload: {{model: jet_mlp, batch: 1, precision: int8}}
template:
  kind: systolic
  params:
    rows: [8, 16]
    cols: [8, 16]
    dataflow: os
tech: asic-28nm
objectives: [min latency_ms, min energy_mj]
search: {{strategy: grid}}
{baselines}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    spec = root / "spec.yaml"
    spec.write_text(SPEC.format(baselines="baselines: [h100, l4]"))
    out = root / "run"
    assert main(["explore", str(spec), "-o", str(out), "-q", "--executor", "serial"]) == 0
    return out


def test_baseline_names_resolve_aliases_and_refuse_unknown_gpus() -> None:
    assert baseline_names(["h100", "H100_SXM", "a100-40gb"]) == ["h100_sxm", "a100_40gb"]
    with pytest.raises(UserError, match="unknown baseline GPU 'b200'; choose one of: h100_sxm"):
        baseline_names(["b200"])


def test_gpus_without_the_workload_precision_fall_back_with_a_note() -> None:
    assert gpu_precision("h100_sxm", "fp8") == "fp8"
    assert gpu_precision("a100_80gb", "fp8") == "fp16"
    assert gpu_precision("l4", "int4") == "int8"
    graph = zoo.build("jet_mlp", batch=1, precision="fp8")
    baselines, notes = evaluate_baselines(graph, ["h100", "a100"], "fp8")
    assert [b.precision for b in baselines] == ["fp8", "fp16"]
    assert len(notes) == 1 and "A100" in notes[0] and "fp16" in notes[0]


def test_summary_ratios_are_relative_to_the_best_gpu() -> None:
    graph = zoo.build("bert_base", batch=1, precision="fp16", num_layers=2)
    gpus, _ = evaluate_baselines(graph, ["h100", "l4"], "fp16")
    h100, l4 = (b.metrics.values for b in gpus)
    designs = pd.DataFrame(
        [
            {
                "point_id": "abcdef123456",
                "rows": 32,
                "latency_ms": 2 * h100["latency_ms"],
                "throughput_ips": 1.0,
                "energy_mj": 0.5 * l4["energy_mj"],
                "power_w": 1.0,
            }
        ]
    )
    frame = summary_frame(designs, gpus, "fp16", ["rows"])
    assert list(frame["kind"]) == ["gpu", "gpu", "design"]
    design = frame.iloc[2]
    assert design["name"].startswith("design abcdef12 (rows=32")
    assert design["latency_vs_best_gpu"] == pytest.approx(2.0)
    assert design["energy_vs_best_gpu"] == pytest.approx(
        0.5 * l4["energy_mj"] / min(h100["energy_mj"], l4["energy_mj"])
    )
    assert frame.iloc[0]["latency_vs_best_gpu"] == pytest.approx(1.0)  # the H100 is the fastest
    assert frame["inferences_per_j"].iloc[0] == pytest.approx(h100["throughput_ips"] / h100["power_w"])


def test_per_layer_frame_lines_up_gpus_and_design() -> None:
    graph = zoo.build("jet_mlp", batch=1, precision="int8")
    gpus, _ = evaluate_baselines(graph, ["h100", "orin"], "int8")
    design = pd.Series({"latency_ms": 1e-3, "latency_cycles": 1000.0})
    layers = pd.DataFrame({"layer": [op.name for op in graph.ops], "cycles": [100.0] * len(graph.ops)})
    frame = layers_frame(design, layers, gpus)
    assert list(frame["layer"]) == [op.name for op in graph.ops]
    assert {"h100_sxm_us", "jetson_agx_orin_us", "best_gpu_us", "design_us", "design_vs_best_gpu"} <= set(frame)
    assert frame["design_us"].iloc[0] == pytest.approx(0.1)  # 100 cycles at 1 ns
    fused = frame[frame["gpu_epilogue_of"] != ""]
    assert not fused.empty and (fused["best_gpu_us"] == 0).all()


def test_spec_refuses_an_unknown_baseline_with_its_line(tmp_path: Path) -> None:
    text = SPEC.format(baselines="baselines: [h100, b200]")
    with pytest.raises(SpecError) as err:
        parse_spec(text, path="s.yaml")
    message = str(err.value)
    assert "s.yaml:" in message and "baselines" in message and "'b200'" in message and "h100_sxm" in message
    assert parse_spec(SPEC.format(baselines="baselines: [A100, orin]"), path="s.yaml").baselines == ["A100", "orin"]


def test_explore_with_baselines_writes_the_comparison_and_report_section(run_dir: Path) -> None:
    summary = pd.read_csv(run_dir / "compare.csv")
    assert list(summary.loc[summary["kind"] == "gpu", "name"]) == ["NVIDIA H100 SXM5 80GB", "NVIDIA L4 24GB"]
    assert (summary["kind"] == "design").sum() >= 1
    assert summary["latency_vs_best_gpu"].notna().all()
    layers = pd.read_csv(run_dir / "compare_layers.csv")
    assert {"h100_sxm_us", "l4_us", "design_us"} <= set(layers.columns)
    report = (run_dir / "report.html").read_text()
    assert "GPU baselines" in report and "fig-compare-roofline" in report and "energy is an estimate" in report


def test_dse_compare_cli_with_other_baselines_and_errors(run_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["compare", str(run_dir), "--baselines", "a100,orin"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA A100 SXM4 80GB" in out and "Jetson AGX Orin" in out and "design" in out
    assert "A100" in pd.read_csv(run_dir / "compare.csv")["name"].iloc[0]
    assert main(["compare", str(run_dir), "--baselines", "b200"]) == 2
    assert "unknown baseline GPU 'b200'" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
