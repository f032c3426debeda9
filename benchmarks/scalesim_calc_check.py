"""Before/after error of the ifmap/filter DRAM reads in SCALE-Sim CALC mode, on every CALC row of the shared CSV.

"before": ``hwmodels.systolic.gemm_cost`` (the epoch-probability closed forms); "after":
``hwmodels.systolic.scalesim_calc.calc_dram_reads`` (closed form where exact, else the exact replay of
SCALE-Sim's read-buffer rule). Also times ``calc_dram_reads`` per layer, cold (memo cleared) and warm.

    python benchmarks/scalesim_calc_check.py
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from dse.peers import scalesim_trace
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.scalesim_calc import calc_dram_reads, clear_cache
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer

ROOT = Path(__file__).resolve().parents[1]

SHARED = ROOT.parent / "shared" / "data" / "scalesim" / "resnet18_per_layer.csv"


def _pct(model: float, ref: float) -> float:
    return 100.0 * (model - ref) / ref


def main() -> None:
    with open(SHARED) as f:
        rows = [r for r in csv.DictReader(f) if r["bw_mode"] == "CALC"]
    print(
        f"{'config':<14} {'layer':<9} {'ifmap ref':>10} {'before %':>9} {'after %':>8} "
        f"{'filt ref':>9} {'before %':>9} {'after %':>8} {'cold ms':>8} {'warm ms':>8}"
    )
    table = []
    for r in rows:
        cfg = ScaleSimConfig.from_reference_row(r)
        layer = ScaleSimLayer(
            r["layer"],
            *(int(r[k]) for k in ("ifmap_h", "ifmap_w", "filt_h", "filt_w", "channels", "num_filters")),
            int(r["stride_h"]),
        )
        trace = scalesim_trace([layer], cfg)
        arch, gemm = trace.arch, trace.mapping.ops[layer.name].payload.gemm
        before = gemm_cost(gemm, arch)
        clear_cache()
        t0 = time.perf_counter()
        ifmap, filt = calc_dram_reads(gemm, arch)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        calc_dram_reads(gemm, arch)
        warm = time.perf_counter() - t0
        ref_if, ref_f = float(r["dram_ifmap_reads"]), float(r["dram_filter_reads"])
        row = {
            "config": f"{cfg.rows}x{cfg.cols} {cfg.dataflow}",
            "layer": layer.name,
            "if_before": _pct(before.ifmap_dram_reads, ref_if),
            "if_after": _pct(ifmap * gemm.count, ref_if),
            "f_before": _pct(before.filter_dram_reads, ref_f),
            "f_after": _pct(filt * gemm.count, ref_f),
            "cold_ms": cold * 1e3,
            "warm_ms": warm * 1e3,
        }
        table.append(row)
        print(
            f"{row['config']:<14} {row['layer']:<9} {ref_if:10.0f} {row['if_before']:9.2f} {row['if_after']:8.2f} "
            f"{ref_f:9.0f} {row['f_before']:9.2f} {row['f_after']:8.2f} {row['cold_ms']:8.2f} {row['warm_ms']:8.3f}"
        )

    print("\nMAE % / max % (ifmap before | ifmap after | filter before | filter after)")
    for cfg_name in dict.fromkeys(t["config"] for t in table):
        sub = [t for t in table if t["config"] == cfg_name]
        parts = []
        for key in ("if_before", "if_after", "f_before", "f_after"):
            errs = [abs(t[key]) for t in sub]
            parts.append(f"{sum(errs) / len(errs):6.2f}/{max(errs):6.2f}")
        print(f"{cfg_name:<14} n={len(sub):<3} " + " | ".join(parts))
    cold = [t["cold_ms"] for t in table]
    warm = [t["warm_ms"] for t in table]
    closed = [t for t in table if t["cold_ms"] < 1.0]
    print(
        f"\ncalc_dram_reads per layer, cold: mean {sum(cold) / len(cold):.1f} ms, max {max(cold):.1f} ms; "
        f"{len(closed)}/{len(table)} layers under 1 ms (closed form); warm (memoised): max {max(warm):.3f} ms"
    )
    for cfg_name in dict.fromkeys(t["config"] for t in table):
        sub = [t["cold_ms"] for t in table if t["config"] == cfg_name]
        print(f"  {cfg_name:<14} whole ResNet-18 cold: {sum(sub):8.1f} ms")


if __name__ == "__main__":
    main()
