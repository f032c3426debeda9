"""Our systolic model against SCALE-Sim 3.0.0: the shared reference runs, and SCALE-Sim run live.

Targets (per layer): compute cycles exact; total cycles (incl. prefetch) and DRAM traffic within
2 % mean absolute error, in SCALE-Sim's CALC bandwidth mode (our ``dram_mode="unlimited"``) and in
its USER mode (``dram_mode="per_operand"``). In USER mode SCALE-Sim's "compute cycles" include the
stalls, so the stall-free count we compare is its compute minus its stall cycles. USER mode's read
buffers re-read whole operands when their circular prefetch window walks past a demanded address;
``hwmodels.systolic.user_mode`` emulates that walk, so its DRAM reads match exactly.

Also here: fused activations (``OpMapping.resident_output`` / ``resident_inputs`` / ``fused_into``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dse.peers import scalesim_predict
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, run_scalesim

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "scalesim" / "resnet18_per_layer.csv"
TRAFFIC = ("dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes")


def _mae(pairs: list[tuple[float, float]]) -> float:
    return 100 * sum(abs(p - r) / r for p, r in pairs) / len(pairs)


def _shared_runs() -> dict[str, list[dict]]:
    if not SHARED.exists():
        pytest.skip(f"shared SCALE-Sim reference data not found at {SHARED}")
    runs: dict[str, list[dict]] = {}
    with open(SHARED) as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["run"], []).append(row)
    return runs


def _compare(rows: list[dict]) -> list[tuple[dict, dict]]:
    r0 = rows[0]
    cfg = ScaleSimConfig.from_reference_row(r0)
    layers = [
        ScaleSimLayer(
            r["layer"],
            int(r["ifmap_h"]),
            int(r["ifmap_w"]),
            int(r["filt_h"]),
            int(r["filt_w"]),
            int(r["channels"]),
            int(r["num_filters"]),
            int(r["stride_h"]),
        )
        for r in rows
    ]
    return list(
        zip(
            scalesim_predict(layers, cfg),
            [
                {
                    k: float(v) if k != "layer" else v
                    for k, v in r.items()
                    if v and k not in ("run", "dataflow", "bw_mode", "config_file", "topology_file", "user_bw")
                }
                for r in rows
            ],
        )
    )


def _pairs(runs: dict[str, list[dict]], mode: str) -> list[tuple[dict, dict]]:
    out = []
    for rows in runs.values():
        if rows[0]["bw_mode"] == mode:
            out.extend(_compare(rows))
    return out


def test_shared_calc_compute_cycles_exact():
    pairs = _pairs(_shared_runs(), "CALC")
    assert len(pairs) == 84
    for ours, ref in pairs:
        assert ours["compute_cycles"] == ref["compute_cycles"], ref["layer"]


@pytest.mark.parametrize("metric", ["total_cycles_incl_prefetch", *TRAFFIC])
def test_shared_calc_within_2_percent(metric):
    pairs = _pairs(_shared_runs(), "CALC")
    mae = _mae([(o[metric], r[metric]) for o, r in pairs])
    assert mae < 2.0, f"{metric}: MAE {mae:.2f} % over {len(pairs)} CALC layers"


def test_shared_user_ofmap_writes_within_2_percent():
    pairs = _pairs(_shared_runs(), "USER")
    assert len(pairs) == 13
    assert _mae([(o["dram_ofmap_writes"], r["dram_ofmap_writes"]) for o, r in pairs]) < 2.0


def test_shared_user_base_compute_exact():
    pairs = _pairs(_shared_runs(), "USER")
    for ours, ref in pairs:
        assert ours["compute_cycles"] == ref["compute_cycles"] - ref["stall_cycles"], ref["layer"]


@pytest.mark.parametrize("metric", ["total_cycles_incl_prefetch", "dram_ifmap_reads", "dram_filter_reads"])
def test_shared_user_within_2_percent(metric):
    pairs = _pairs(_shared_runs(), "USER")
    mae = _mae([(o[metric], r[metric]) for o, r in pairs])
    assert mae < 2.0, f"{metric}: MAE {mae:.2f} % over {len(pairs)} USER layers"


def test_shared_user_reads_are_the_window_walk_exactly():
    """The re-reads are whole prefetches (SCALE-Sim counts 32 770 words each at 64 KiB, 10 words/cycle),
    so an emulation that misses one window wrap is off by a visible amount: demand exact counts."""
    pairs = _pairs(_shared_runs(), "USER")
    for ours, ref in pairs:
        assert ours["dram_ifmap_reads"] == ref["dram_ifmap_reads"], ref["layer"]
        assert ours["dram_filter_reads"] == ref["dram_filter_reads"], ref["layer"]


# ---------------------------------------------------------------------------------------------------
# SCALE-Sim run live on layers small enough to simulate in about a second each
# ---------------------------------------------------------------------------------------------------
LIVE_LAYERS = [
    ScaleSimLayer("conv3x3", 18, 18, 3, 3, 16, 24, 1),
    ScaleSimLayer("conv3x3_s2", 20, 20, 3, 3, 8, 40, 2),
    ScaleSimLayer("gemm", 1, 1, 1, 1, 64, 40, 1),  # a 1 x 64 @ 64 x 40 GEMM
]


@pytest.fixture(scope="module")
def live_calc() -> dict[str, list[tuple[dict, dict]]]:
    pytest.importorskip("scalesim")
    out = {}
    for df in ("os", "ws", "is"):
        cfg = ScaleSimConfig(16, 8, df, 4, 4, 4, "CALC")  # non-square array, small SRAMs
        out[df] = list(zip(scalesim_predict(LIVE_LAYERS, cfg), run_scalesim(LIVE_LAYERS, cfg)))
    return out


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_live_calc_compute_exact_and_cycles_within_2_percent(live_calc, df):
    pairs = live_calc[df]
    for ours, ref in pairs:
        assert ours["compute_cycles"] == ref["compute_cycles"], (df, ref["layer"])
    for metric in ("total_cycles_incl_prefetch", "dram_filter_reads", "dram_ofmap_writes"):
        mae = _mae([(o[metric], r[metric]) for o, r in pairs])
        assert mae < 2.0, f"{df} {metric}: MAE {mae:.2f} %"


def test_live_calc_ifmap_reads(live_calc):
    """With 4 KiB SRAMs (W = 2000 words) our im2col re-fetch estimate is coarser than at the 64 KiB
    of the reference runs: it is within 2 % on average there, within 10 % over these layers."""
    pairs = [p for df in live_calc for p in live_calc[df]]
    mae = _mae([(o["dram_ifmap_reads"], r["dram_ifmap_reads"]) for o, r in pairs])
    assert mae < 10.0, f"ifmap reads MAE {mae:.2f} %"


LIVE_USER_LAYERS = [*LIVE_LAYERS, ScaleSimLayer("fc", 1, 1, 1, 1, 256, 48, 1)]


@pytest.mark.parametrize(("df", "rows", "cols"), [("os", 16, 8), ("ws", 8, 16)])
def test_live_user_mode(df, rows, cols):
    """USER 10 words/cycle with 4 KiB SRAMs: the operands are 2-20x the prefetch window, so the
    window walks round them many times; reads exact, cycles within 2 % on average."""
    pytest.importorskip("scalesim")
    cfg = ScaleSimConfig(rows, cols, df, 4, 4, 4, "USER", 10)
    pairs = list(zip(scalesim_predict(LIVE_USER_LAYERS, cfg), run_scalesim(LIVE_USER_LAYERS, cfg)))
    for ours, ref in pairs:
        assert ours["compute_cycles"] == ref["compute_cycles"] - ref["stall_cycles"], ref["layer"]
        assert ours["dram_ifmap_reads"] == ref["dram_ifmap_reads"], ref["layer"]
        assert ours["dram_filter_reads"] == ref["dram_filter_reads"], ref["layer"]
    assert any(r["dram_ifmap_reads"] > 5 * 4096 for _, r in pairs), "no layer exercised the window walk"
    for metric in ("total_cycles_incl_prefetch", "dram_ofmap_writes"):
        mae = _mae([(o[metric], r[metric]) for o, r in pairs])
        assert mae < 2.0, f"{df} {metric}: MAE {mae:.2f} %"


LIVE_IS_LAYERS = [
    ScaleSimLayer("conv3x3", 8, 8, 3, 3, 8, 16, 1),
    ScaleSimLayer("gemm", 1, 1, 1, 1, 64, 40, 1),
    ScaleSimLayer("fc", 1, 1, 1, 1, 256, 48, 1),  # the filter walk wraps: SCALE-Sim stalls the array
]


def test_live_user_mode_is_non_square():
    """is in USER mode on a non-square array at an odd 13 words/cycle: the stationary ifmap is read row by
    row from an unrolled prefetch matrix, the filter streams rolled out; the window walk re-reads both, so
    reads are exact, the stall-free compute exact and the total (fill, read stalls, drain) within 2 %."""
    pytest.importorskip("scalesim")
    cfg = ScaleSimConfig(16, 8, "is", 4, 4, 4, "USER", 13)
    pairs = list(zip(scalesim_predict(LIVE_IS_LAYERS, cfg), run_scalesim(LIVE_IS_LAYERS, cfg)))
    for ours, ref in pairs:
        assert ours["compute_cycles"] == ref["compute_cycles"] - ref["stall_cycles"], ref["layer"]
        assert ours["dram_ifmap_reads"] == ref["dram_ifmap_reads"], ref["layer"]
        assert ours["dram_filter_reads"] == ref["dram_filter_reads"], ref["layer"]
    assert any(r["stall_cycles"] > 0 for _, r in pairs), "no layer stalled on the window walk"
    for metric in ("total_cycles_incl_prefetch", "dram_ofmap_writes"):
        mae = _mae([(o[metric], r[metric]) for o, r in pairs])
        assert mae < 2.0, f"is {metric}: MAE {mae:.2f} %"


# ---------------------------------------------------------------------------------------------------
# Fusion: an activation fused into its producer
# ---------------------------------------------------------------------------------------------------
def _conv_relu_graph():
    from dse.graph import GraphBuilder

    b = GraphBuilder("conv_relu")
    x = b.input("x", (1, 16, 18, 18))
    y = b.conv(x, 24, 3, name="conv")
    b.output(b.relu(y, name="act"))
    return b.build()


@pytest.mark.parametrize("mode", ["shared", "per_operand"])
def test_fused_activation_saves_dram_and_latency(mode):
    from dataclasses import replace

    from hwmodels.systolic.model import SystolicModel
    from mappers.payloads import FoldPlan
    from mappers.systolic.fold import SystolicFoldMapper
    from templates.systolic import SystolicTemplate

    arch = SystolicTemplate().instantiate({"rows": 8, "cols": 8, "dram_gbps": 4.0, "dram_mode": mode})
    graph = _conv_relu_graph()
    fused_map = SystolicFoldMapper().map(graph, arch)
    conv_out = graph.op("conv").outputs[0]
    # the mapper marks the fusion; build the unfused mapping by hand from it
    assert fused_map.ops["conv"].resident_output
    assert fused_map.ops["act"].resident_inputs == (conv_out,)
    assert fused_map.ops["act"].payload.fused_into == "conv"
    plain_ops = {
        "conv": replace(fused_map.ops["conv"], resident_output=False),
        "act": replace(fused_map.ops["act"], resident_inputs=(), payload=FoldPlan(unit="vector")),
    }
    plain_map = replace(fused_map, ops=plain_ops)

    fused = SystolicModel().evaluate(fused_map, arch)
    plain = SystolicModel().evaluate(plain_map, arch)
    f_conv, f_act = fused.layers
    p_conv, p_act = plain.layers
    out_bytes = graph.tensors[conv_out].numel * arch.word_bytes
    assert p_conv.dram_write_bytes >= out_bytes and f_conv.dram_write_bytes == 0
    assert p_act.dram_read_bytes == out_bytes and f_act.dram_read_bytes == 0
    assert f_act.dram_write_bytes == p_act.dram_write_bytes == out_bytes  # its own output still goes out
    assert f_act.cycles == 0 and p_act.cycles > 0
    assert f_act.energy_breakdown_pj["vector"] == p_act.energy_breakdown_pj["vector"] > 0
    assert f_act.energy_breakdown_pj["dram"] > 0 and f_act.energy_breakdown_pj["leakage"] == 0
    assert fused.values["latency_cycles"] == pytest.approx(f_conv.cycles)
    assert fused.values["latency_cycles"] < plain.values["latency_cycles"]
    assert fused.values["energy_mj"] < plain.values["energy_mj"]
    assert fused.values["dram_mb"] == pytest.approx(plain.values["dram_mb"] - 2 * out_bytes / 1e6)
