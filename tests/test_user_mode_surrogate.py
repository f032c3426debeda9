"""The surrogates' baseline in SCALE-Sim USER mode (``dram_mode: per_operand``) carries the USER window walk
at fold level (``surrogates.systolic.user_mode_closed_form``): the model's figures per op to within the walk's
approximation (marked ``est_approximate``), so the trees learn only a small residual."""

from __future__ import annotations

import numpy as np
import pytest

from dse.evaluate import PointEvaluator
from dse.workload import load_workload
from hwmodels.systolic.compute import ConvGeometry, LoweredGemm
from hwmodels.systolic.user_mode import user_mode_traffic, user_mode_traffic_of
from surrogates.systolic import features as feat
from templates.systolic import SystolicTemplate

POINTS = [
    {"rows": 8, "cols": 16, "dataflow": "os", "ifmap_sram_kib": 4, "filter_sram_kib": 8, "ofmap_sram_kib": 4},
    {"rows": 16, "cols": 8, "dataflow": "ws", "ifmap_sram_kib": 2, "filter_sram_kib": 4, "ofmap_sram_kib": 8},
    {"rows": 12, "cols": 12, "dataflow": "is", "ifmap_sram_kib": 4, "filter_sram_kib": 4, "ofmap_sram_kib": 4},
    {"rows": 8, "cols": 8, "dataflow": "ws", "ifmap_sram_kib": 64, "filter_sram_kib": 64, "ofmap_sram_kib": 64},
]


@pytest.mark.parametrize("workload", ["small_cnn", "jet_mlp"])
def test_user_mode_baseline_is_the_model_per_op(workload):
    """On these small layers the fold-level walk lands within 1 % of the model's word-level walk per op."""
    graph = load_workload(workload)
    ops = feat.op_table(graph)
    points = [{**p, "dram_mode": "per_operand", "dram_gbps": gbps} for p in POINTS for gbps in (3.0, 12.8)]
    archs = feat.arch_table("systolic", points, {})
    costs = feat.pair_costs(ops, archs)
    totals = feat.pair_costs(ops, archs, totals=True)
    for d, point in enumerate(points):
        exact = PointEvaluator(graph, "systolic")(point)
        by_name = {layer.layer: layer for layer in exact.layers}
        rel = 1e-2  # every dataflow is walked at fold level
        for j, name in enumerate(ops.names):
            if ops.columns["_array"][j]:
                assert bool(costs["est_approximate"][d, j]), (point, name)
            assert costs["est_cycles"][d, j] == pytest.approx(by_name[name].cycles, rel=rel, abs=1e-9), (point, name)
            assert costs["est_energy_pj"][d, j] == pytest.approx(by_name[name].energy_pj, rel=rel), (point, name)
        assert totals["est_cycles"][d] == pytest.approx(exact.values["latency_cycles"], rel=rel)
    if workload == "small_cnn":  # USER mode stalls the array on re-reads: the baseline now carries them
        assert (costs["est_stall_cycles"] > 0).any()


def test_user_mode_traffic_of_is_the_arch_entry_point():
    gemm = LoweredGemm(36, 27, 20, 1, ConvGeometry(8, 8, 3, 3, 3, 1, 1, 6, 6))
    for df in ("os", "ws", "is"):
        arch = SystolicTemplate().instantiate(
            {"rows": 8, "cols": 4, "dataflow": df, "ifmap_sram_kib": 1, "filter_sram_kib": 1, "ofmap_sram_kib": 1,
             "dram_mode": "per_operand", "dram_gbps": 5.4, "precision": "int8", "freq_mhz": 1000}
        )  # fmt: skip
        words = (arch.sram_words("ifmap"), arch.sram_words("filter"))
        raw = user_mode_traffic_of(gemm, 8, 4, df, np.array(words), np.float64(5.4))
        assert raw == user_mode_traffic(gemm, arch)
        # every ifmap word (8 x 8 x 3) and filter word (27 x 20) comes from DRAM at least once
        assert raw.ifmap_dram_reads >= 8 * 8 * 3 and raw.filter_dram_reads >= 27 * 20
