"""Our systolic model against SCALE-Sim 3.0.0: the shared reference runs, and SCALE-Sim run live.

Targets (per layer): compute cycles exact; total cycles (incl. prefetch) and DRAM traffic within
2 % mean absolute error. They hold for SCALE-Sim's CALC bandwidth mode. In USER mode SCALE-Sim's
read SRAM walks a circular prefetch window and, when a demand line mixes addresses from both sides
of a window boundary, goes round the whole operand again; that multiplies its DRAM reads (and so
its bandwidth-bound cycles) by 2-40x in ways our closed forms do not reproduce. Those gaps are
recorded as strict xfails so the suite notices if they ever close.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scalesim_runner import ScaleSimConfig, ScaleSimLayer, predict, run_scalesim  # noqa: E402

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
    cfg = ScaleSimConfig(
        int(r0["array_rows"]),
        int(r0["array_cols"]),
        r0["dataflow"],
        int(r0["ifmap_sram_kb"]),
        int(r0["filter_sram_kb"]),
        int(r0["ofmap_sram_kb"]),
        r0["bw_mode"],
        10,
    )
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
            predict(layers, cfg),
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


@pytest.mark.xfail(strict=True, reason="SCALE-Sim USER-mode circular prefetch re-reads are not modelled")
@pytest.mark.parametrize("metric", ["total_cycles_incl_prefetch", "dram_ifmap_reads", "dram_filter_reads"])
def test_shared_user_within_2_percent(metric):
    pairs = _pairs(_shared_runs(), "USER")
    assert _mae([(o[metric], r[metric]) for o, r in pairs]) < 2.0


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
        out[df] = list(zip(predict(LIVE_LAYERS, cfg), run_scalesim(LIVE_LAYERS, cfg)))
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


def test_live_user_ofmap_and_gemm_cycles():
    pytest.importorskip("scalesim")
    cfg = ScaleSimConfig(8, 16, "ws", 4, 4, 4, "USER", 10)
    layers = [LIVE_LAYERS[2]]
    (ours,), (ref,) = predict(layers, cfg), run_scalesim(layers, cfg)
    assert ours["compute_cycles"] == ref["compute_cycles"]
    assert (
        abs(ours["total_cycles_incl_prefetch"] - ref["total_cycles_incl_prefetch"]) / ref["total_cycles_incl_prefetch"]
        < 0.02
    )
    assert abs(ours["dram_ofmap_writes"] - ref["dram_ofmap_writes"]) / ref["dram_ofmap_writes"] < 0.02
