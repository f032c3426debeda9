"""dse export / ingest-report: real hls4ml projects from explored points, C simulation with g++."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dse.cli import main
from dse.export import ExportError, export_point, ingest_report, parse_power_report, stored_synthesis

SPEC = """
name: {name}
workload: {{model: {model}, batch: 1}}
template:
  kind: fpga_dataflow
  params:
    part: {part}
    io_type: {io}
    strategy: resource
    reuse_factor: {rf}
    width: 16
    integer: 6
    weight_width: 10
    weight_integer: 2
    layer1_reuse_factor: {rf1}
objectives: [min latency_cycles, min dsp]
search: {{strategy: grid}}
"""


def _run(tmp_path: Path, model: str, io: str, rf: int = 4, rf1: int = 8, part: str = "xcu250") -> Path:
    spec = tmp_path / f"{model}_{io}.yaml"
    spec.write_text(SPEC.format(name=f"{model}-{io}", model=model, io=io, rf=rf, rf1=rf1, part=part))
    run = tmp_path / f"run_{model}_{io}"
    assert main(["explore", str(spec), "-o", str(run), "--executor", "serial", "-q"]) == 0
    return run


@pytest.fixture(scope="module")
def jet_mlp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jet_mlp io_parallel explored once for the module; its users only read it (export writes elsewhere)."""
    return _run(tmp_path_factory.mktemp("jet"), "jet_mlp", "io_parallel")


def _point_id(run: Path) -> str:
    return (run / "pareto.csv").read_text().splitlines()[1].split(",")[0]


def _check_config(out: Path, report: dict) -> None:
    """The written project carries the point's knobs: hls4ml config, parameters.h and the report agree."""
    params = report["params"]
    cfg = report["hls_config"]
    assert cfg["Model"]["ReuseFactor"] == params["reuse_factor"]
    assert cfg["Model"]["Strategy"] == params["strategy"].capitalize()
    layers = cfg["LayerName"]
    assert all("result" in entry["Precision"] for entry in layers.values())  # never auto
    dense = [e for e in layers.values() if "ReuseFactor" in e]
    assert all(e["Precision"]["weight"] == "ap_fixed<10,2>" and e["Strategy"] == "Resource" for e in dense)
    assert dense[1]["ReuseFactor"] != dense[0]["ReuseFactor"]  # layer1_reuse_factor honoured
    prj = out / "hls4ml_prj"
    header = (prj / "firmware" / "parameters.h").read_text()
    written = [int(v) for v in re.findall(r"reuse_factor = (\d+);", header)]
    for e in dense:
        assert e["ReuseFactor"] in written
    assert "ap_fixed<10,2>" in (prj / "firmware" / "defines.h").read_text()
    tcl = next(prj.glob("*.tcl")).read_text() + (prj / "project.tcl").read_text()
    assert report["part"] in tcl
    readme = (out / "README.md").read_text()
    assert "build_prj.tcl" in readme and f"{report['predicted']['dsp']:.6g}" in readme


def test_export_jet_mlp_with_csim(tmp_path, jet_mlp_run):
    """One real g++ build of hls4ml's C simulation in the default suite."""
    run = jet_mlp_run
    out = tmp_path / "exp"
    assert main(["export", str(run), "--point", _point_id(run), "-o", str(out), "--backend", "Vitis", "--csim"]) == 0
    report = json.loads((out / "export_report.json").read_text())
    _check_config(out, report)
    assert report["backend"] == "Vitis" and report["io_type"] == "io_parallel"
    csim = report["csim"]
    assert csim["samples"] == 32
    assert csim["max_abs_error"] < 0.1 and csim["argmax_agreement"] >= 0.9


def test_export_small_cnn_io_stream_writes_the_project(tmp_path):
    run = _run(tmp_path, "small_cnn", "io_stream", part="xczu9eg")
    out = tmp_path / "cnn"
    report = export_point(run, _point_id(run), out, backend="Vivado")
    _check_config(out, report)
    assert report["part"] == "xczu9eg-ffvb1156-2-e" and report["io_type"] == "io_stream"
    assert (out / "hls4ml_prj" / "firmware" / "myproject.cpp").is_file()
    assert "csim" not in report


def test_ingest_report_stores_synthesis_next_to_prediction(tmp_path):
    run = _run(tmp_path, "jet_mlp", "io_parallel")
    out = tmp_path / "exp"
    report = export_point(run, _point_id(run), out, backend="Vitis")
    with pytest.raises(ExportError, match="no synthesis report"):
        ingest_report(out)
    _fake_csynth(out)
    assert main(["ingest-report", str(out)]) == 0
    (row,) = stored_synthesis(run)
    assert row["point_id"] == report["point_id"] and row["report"]["CSynthesisReport"]["DSP"] == "300"
    assert row["predicted"]["dsp"] == report["predicted"]["dsp"]
    assert "VivadoPowerReport" not in row["report"]  # no report_power run: nothing invented


def _fake_csynth(out: Path) -> None:
    """The files hls4ml's report reader needs: a Vitis HLS csynth report of made-up figures."""
    solution = out / "hls4ml_prj" / "myproject_prj" / "solution1"
    (solution / "syn" / "report").mkdir(parents=True)
    (out / "hls4ml_prj" / "myproject_prj" / "hls.app").write_text(
        '<project><solutions><solution name="solution1"/></solutions></project>'
    )
    (solution / "syn" / "report" / "myproject_csynth.xml").write_text(
        "<profile><UserAssignments><TargetClockPeriod>5.0</TargetClockPeriod></UserAssignments>"
        "<PerformanceEstimates><SummaryOfTimingAnalysis><EstimatedClockPeriod>4.1</EstimatedClockPeriod>"
        "</SummaryOfTimingAnalysis><SummaryOfOverallLatency><Best-caseLatency>40</Best-caseLatency>"
        "<Worst-caseLatency>41</Worst-caseLatency><Interval-min>40</Interval-min><Interval-max>41</Interval-max>"
        "</SummaryOfOverallLatency></PerformanceEstimates><AreaEstimates><Resources><BRAM_18K>4</BRAM_18K>"
        "<DSP>300</DSP><FF>9000</FF><LUT>12000</LUT><URAM>0</URAM></Resources><AvailableResources>"
        "<BRAM_18K>5376</BRAM_18K><DSP>12288</DSP><FF>3456000</FF><LUT>1728000</LUT><URAM>1280</URAM>"
        "</AvailableResources></AreaEstimates></profile>"
    )


# The layout of Vivado's `report_power` text report (2023.2): header, then the Summary table. The figures are made up
# for the test; the format (labels, column bars, the "Unspecified*" and "NA" cells) is Vivado's.
VIVADO_POWER_REPORT = """\
Copyright 1986-2022 Xilinx, Inc. All Rights Reserved. Copyright 2022-2023 Advanced Micro Devices, Inc.
-------------------------------------------------------------------------------------------------------
| Tool Version     : Vivado v.2023.2 (lin64) Build 4029153 Fri Oct 13 20:13:54 MDT 2023
| Command          : report_power -file vivado_power.rpt
| Design           : myproject
| Device           : xcu250-figd2104-2L-e
| Design State     : synthesized
| Process          : typical
-------------------------------------------------------------------------------------------------------

Power Report

1. Summary
----------

+--------------------------+--------------+
| Total On-Chip Power (W)  | 3.612        |
| Design Power Budget (W)  | Unspecified* |
| Power Budget Margin (W)  | NA           |
| Dynamic (W)              | 0.781        |
| Device Static (W)        | 2.831        |
| Effective TJA (C/W)      | 0.9          |
| Junction Temperature (C) | 28.3         |
| Confidence Level         | Low          |
+--------------------------+--------------+

1.1 On-Chip Components
----------------------

+--------------------------+-----------+----------+-----------+-----------------+
| On-Chip                  | Power (W) | Used     | Available | Utilization (%) |
+--------------------------+-----------+----------+-----------+-----------------+
| Clocks                   |     0.052 |        3 |       --- |             --- |
| DSPs                     |     0.187 |      300 |     12288 |            2.44 |
| Static Power             |     2.831 |          |           |                 |
| Total                    |     3.612 |          |           |                 |
+--------------------------+-----------+----------+-----------+-----------------+
"""


def test_parse_power_report_reads_the_summary_table():
    assert parse_power_report(VIVADO_POWER_REPORT) == {"total_on_chip_w": 3.612, "dynamic_w": 0.781, "static_w": 2.831}
    assert parse_power_report("no table here") == {}


def test_ingest_report_reads_a_vivado_power_report_beside_the_prediction(tmp_path, capsys):
    run = _run(tmp_path, "jet_mlp", "io_parallel")  # its own run: ingest writes into the run's store
    out = tmp_path / "exp"
    report = export_point(run, _point_id(run), out, backend="Vitis")
    _fake_csynth(out)
    (out / "hls4ml_prj" / "vivado_power.rpt").write_text(VIVADO_POWER_REPORT)
    assert main(["ingest-report", str(out)]) == 0
    assert re.search(r"power_w\s+measured\s+3\.612 predicted", capsys.readouterr().out)
    (row,) = stored_synthesis(run)
    power = row["report"]["VivadoPowerReport"]
    assert power == {"total_on_chip_w": 3.612, "dynamic_w": 0.781, "static_w": 2.831, "file": "vivado_power.rpt"}
    assert row["predicted"]["power_w"] == report["predicted"]["power_w"] > 0


def test_bad_point_id_is_a_user_error(tmp_path, capsys, jet_mlp_run):
    run = jet_mlp_run
    assert main(["export", str(run), "--point", "zzzz", "-o", str(tmp_path / "x")]) == 2
    assert "no point" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["Vivado", "Vitis"])
@pytest.mark.parametrize("io", ["io_parallel", "io_stream"])
@pytest.mark.parametrize("model", ["jet_mlp", "small_cnn"])
def test_export_and_csim_every_backend_and_io_type(tmp_path, model, io, backend):
    run = _run(tmp_path, model, io)
    out = tmp_path / "exp"
    report = export_point(run, _point_id(run), out, backend=backend, csim=True)
    _check_config(out, report)
    assert report["csim"]["argmax_agreement"] >= 0.9 and report["csim"]["max_abs_error"] < 0.1


def test_shapes_only_model_explores_but_is_refused_by_export(tmp_path, capsys):
    """A model whose external weight file is absent imports with shapes only: explore works, export says why not."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 5)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        initializer=[w1, w2],
    )
    model_path = tmp_path / "mlp.onnx"
    onnx.save_model(
        helper.make_model(graph),
        str(model_path),
        save_as_external_data=True,
        location="mlp.onnx.data",
        size_threshold=0,
    )
    (tmp_path / "mlp.onnx.data").unlink()
    spec = tmp_path / "mlp.yaml"
    spec.write_text(
        SPEC.format(name="mlp", model="mlp.onnx", io="io_parallel", rf=4, rf1=8, part="xcu250").replace(
            "    layer1_reuse_factor: 8\n", ""
        )
    )
    run = tmp_path / "run"
    assert main(["explore", str(spec), "-o", str(run), "--executor", "serial", "-q"]) == 0
    capsys.readouterr()
    assert main(["export", str(run), "--point", _point_id(run), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "weight data is missing (tensors w1, w2)" in err and len(err.strip().splitlines()) == 1
