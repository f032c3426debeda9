"""``dse surrogate dataset --truth scalesim``: real SCALE-Sim 3.0.0 per MAC-array layer, cached on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dse.cli import main
from dse.errors import UserError
from dse.peers import scalesim_predict
from dse.spec import load_spec
from dse.workload import load_workload
from hwmodels.systolic.compute import ConvGeometry, LoweredGemm
from hwmodels.systolic.scalesim_run import scalesim_config, scalesim_layer
from surrogates.dataset import build_dataset, workloads_from_args
from surrogates.truth.scalesim import LayerCache, ScaleSimTruth, SimJob
from templates.systolic import SystolicTemplate

ROOT = Path(__file__).resolve().parents[1]

SPEC = """\
name: tiny-scalesim-truth
workload: {model: small_cnn, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [8, 16]
    cols: [8, 16]
    dataflow: [os, ws]
    ifmap_sram_kib: 64
    filter_sram_kib: 64
    ofmap_sram_kib: 64
    dram_gbps: 10
    dram_mode: DRAM_MODE
    freq_mhz: 1000
tech: asic-16nm
objectives: [min latency_ms]
search: {strategy: grid, seed: 0}
"""


def _arch(**kw):
    base = {"rows": 8, "cols": 16, "dataflow": "ws", "ifmap_sram_kib": 64, "filter_sram_kib": 32}
    return SystolicTemplate().instantiate({**base, "ofmap_sram_kib": 16, "dram_gbps": 12.8, **kw})


def test_every_point_of_the_scalesim_truth_space_is_one_scalesim_can_run():
    """designs/scalesim_truth.yaml promises a space SCALE-Sim runs whole (benchmarks/surrogate_scalesim.py)."""
    spec = load_spec(ROOT / "designs" / "scalesim_truth.yaml")
    template = SystolicTemplate()
    points = spec.design_space().sample(64, 0)
    configs = {scalesim_config(template.instantiate({**p, **spec.fixed_params()})) for p in points}
    assert len(configs) > 32 and {c.bw_mode for c in configs} == {"USER"}


def test_design_maps_to_scalesim_config_or_a_clear_error():
    cfg = scalesim_config(_arch(dram_mode="per_operand"))
    assert (cfg.rows, cfg.cols, cfg.dataflow, cfg.bw_mode) == (8, 16, "ws", "USER")
    assert (cfg.ifmap_kb, cfg.filter_kb, cfg.ofmap_kb) == (64, 32, 16)
    assert cfg.user_bw == 13  # 12.8 words/cycle, rounded as the model's USER emulation rounds it
    assert scalesim_config(_arch(dram_mode="unlimited")).bw_mode == "CALC"
    with pytest.raises(UserError, match="no shared DRAM channel"):
        scalesim_config(_arch(dram_mode="shared"))
    with pytest.raises(UserError, match="not a whole number of SCALE-Sim's 1024-word kB"):
        scalesim_config(_arch(dram_mode="per_operand", ifmap_sram_kib=1, precision="fp32"))


def test_layer_keeps_the_ops_gemm():
    # stride 2, padded 3x3: SCALE-Sim's ceil-sized output must be the op's 28 x 28
    conv = LoweredGemm(28 * 28, 9 * 64, 128, 1, ConvGeometry(56, 56, 64, 3, 3, 2, 2, 28, 28))
    ly = scalesim_layer(conv, "c")
    assert -(-(ly.ifmap_h - ly.filt_h + ly.stride) // ly.stride) == 28
    assert (ly.filt_h * ly.filt_w * ly.channels, ly.num_filters) == (9 * 64, 128)
    fc = scalesim_layer(LoweredGemm(4, 64, 10, 1, ConvGeometry(1, 4, 64, 1, 1, 1, 1, 1, 4)), "fc")
    assert (fc.ifmap_h, fc.ifmap_w, fc.channels, fc.num_filters) == (1, 4, 64, 10)
    with pytest.raises(UserError, match="one stride per layer"):
        scalesim_layer(LoweredGemm(4, 9, 2, 1, ConvGeometry(8, 8, 1, 3, 3, 2, 1, 3, 6)), "odd")


def test_dataset_with_scalesim_truth_is_cached_and_consistent(tmp_path):
    pytest.importorskip("scalesim")
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(SPEC.replace("DRAM_MODE", "per_operand"))
    spec = load_spec(spec_path)
    args = (spec.template.kind, spec.design_space(), spec.fixed_params(), workloads_from_args(spec, []), 2)
    truth = ScaleSimTruth(tmp_path / "cache")
    data = build_dataset(*args, executor="serial", scalesim=truth)
    assert truth.simulated > 0 and truth.failed == 0
    graph = load_workload("small_cnn")
    array_ops = {op.name for op in graph.ops if op.kind.value in ("conv", "matmul")}
    cache = LayerCache(tmp_path / "cache")
    assert len(list(cache.root.rglob("*.json"))) == truth.simulated
    for _, design in data.groupby("design"):
        # vector ops keep the model's cycles; the design latency is the sum of the truth's
        vector = design[~design["op"].isin(array_ops)]
        np.testing.assert_allclose(vector["cycles"], vector["est_cycles"])
        total = (design["cycles"] * design["op_count"]).sum()
        assert design["design_latency_cycles"].iloc[0] == pytest.approx(total)
        # each array op's truth is SCALE-Sim's own report, and our model agrees with it on the layer
        row = design[design["op"] == "conv2"].iloc[0]
        arch = SystolicTemplate().instantiate({**spec.fixed_params(), **{
            k[len("param_"):]: row[k] for k in design.columns if k.startswith("param_")}})  # fmt: skip
        op = next(op for op in graph.ops if op.name == "conv2")
        geometry = ConvGeometry(op.dims["H"], op.dims["W"], op.dims["C"], 3, 3, 1, 1, op.dims["P"], op.dims["Q"])
        layer = scalesim_layer(LoweredGemm(25, 72, 16, 1, geometry), "conv2")
        report = cache.get(SimJob(layer, scalesim_config(arch)))
        assert row["cycles"] == report["total_cycles_incl_prefetch"]
        ours = scalesim_predict([layer], scalesim_config(arch))[0]["total_cycles_incl_prefetch"]
        assert ours == pytest.approx(row["cycles"], rel=0.05)
    again = ScaleSimTruth(tmp_path / "cache")
    rerun = build_dataset(*args, executor="serial", scalesim=again)
    assert again.simulated == 0 and again.cached == truth.simulated
    assert rerun.equals(data)
    # the SCALE-Sim cost bound: above every design it changes nothing; below every design, one clear error
    bounded = ScaleSimTruth(tmp_path / "cache", max_model_cycles=1e12)
    assert build_dataset(*args, executor="serial", scalesim=bounded).equals(data) and bounded.skipped == 0
    with pytest.raises(UserError, match="every sampled design is over the SCALE-Sim bound"):
        build_dataset(*args, executor="serial", scalesim=ScaleSimTruth(tmp_path / "cache", max_model_cycles=1.0))


def test_cli_refuses_a_design_scalesim_cannot_represent(tmp_path, capsys):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(SPEC.replace("DRAM_MODE", "shared"))
    code = main(["surrogate", "dataset", str(spec_path), "-n", "2", "-o", str(tmp_path / "d.parquet"),
                 "--truth", "scalesim", "--scalesim-cache", str(tmp_path / "c")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "SCALE-Sim has no shared DRAM channel" in err and "Traceback" not in err
