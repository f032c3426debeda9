"""Per-layer agreement of our systolic model with cached SCALE-Sim 3.0.0 runs, per dataflow and component.

Reads a ``--truth scalesim`` layer cache (one JSON per (layer, array config): ``surrogates.truth.scalesim``)
and prices every cached layer as SCALE-Sim ran it (one copy, its ofmap written to DRAM) with
``gemm_cost``. Prints per dataflow the total-cycle error and, per component, the share of layers where
the model equals SCALE-Sim exactly: stall-free compute, stalls, the prefetch before cycle 0, the ofmap
drain after the last demand line, and the ifmap/filter DRAM reads.

    .venv/bin/python benchmarks/scalesim_layer_agreement.py --cache ~/.cache/dse/scalesim
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from dse.peers import scalesim_trace
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer

ROOT = Path(__file__).resolve().parents[1]

COMPONENTS = ("compute", "stall", "prefetch", "drain", "ifmap_reads", "filter_reads")


def compare(entry: dict) -> tuple[str, dict[str, tuple[float, float]]]:
    """(dataflow, {component: (model, SCALE-Sim)}) of one cached run."""
    layer, cfg, ref = ScaleSimLayer(**entry["layer"]), ScaleSimConfig(**entry["config"]), entry["report"]
    trace = scalesim_trace([layer], cfg)
    cost = gemm_cost(trace.mapping.ops[layer.name].payload.gemm, trace.arch)
    return cfg.dataflow, {
        "total": (cost.scalesim_total_cycles, ref["total_cycles_incl_prefetch"]),
        "compute": (cost.compute_cycles - 1, ref["compute_cycles"] - ref["stall_cycles"]),
        "stall": (cost.busy_cycles - cost.compute_cycles, ref["stall_cycles"]),
        "prefetch": (cost.fill_cycles, -min(ref["dram_ifmap_start_cycle"], ref["dram_filter_start_cycle"])),
        "drain": (cost.tail_cycles, ref["dram_ofmap_stop_cycle"] - ref["compute_cycles"]),
        "ifmap_reads": (cost.ifmap_dram_reads, ref["dram_ifmap_reads"]),
        "filter_reads": (cost.filter_dram_reads, ref["dram_filter_reads"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True, help="the SCALE-Sim layer cache directory")
    args = ap.parse_args()
    by_df: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(args.cache.glob("*/*.json")):
        df, figures = compare(json.loads(path.read_text()))
        by_df[df].append(figures)
    if not by_df:
        raise SystemExit(f"no cached SCALE-Sim runs under {args.cache}")
    for df in sorted(by_df):
        runs = by_df[df]
        total = np.array([r["total"] for r in runs], dtype=float)
        err = np.abs(total[:, 0] - total[:, 1]) / total[:, 1]
        ratio = total[:, 0] / total[:, 1]
        print(
            f"{df}: {len(runs)} layers  total cycles MAPE {100 * err.mean():.2f} %  max {100 * err.max():.2f} %  "
            f"within 2 % {100 * np.mean(err <= 0.02):.0f} %  model/SCALE-Sim median {np.median(ratio):.3f} "
            f"[{ratio.min():.3f}, {ratio.max():.3f}]"
        )
        exact = "  ".join(f"{c} {100 * np.mean([r[c][0] == r[c][1] for r in runs]):.0f} %" for c in COMPONENTS)
        print(f"    exact: {exact}")


if __name__ == "__main__":
    main()
