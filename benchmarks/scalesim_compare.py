"""Per-layer agreement of our systolic model with SCALE-Sim 3.0.0, and how much faster it is.

Compares every layer of the shared reference runs (ResNet-18; 32x32 and 128x128; OS and WS; CALC,
plus USER 10 words/cycle on 7- and 6-layer subsets) and, with ``--run-scalesim``, fresh SCALE-Sim
runs of the small ResNet-18 layers on non-square arrays and the IS dataflow. Prints the per-layer
error table, then MAE and max error per (array, dataflow, bandwidth mode) and overall.

SCALE-Sim's time per layer is ``sim_wall_s`` from the shared CSV (runs made on the project's 2-core
machines) for the shared runs, and measured here for the ``--run-scalesim`` runs.

    python benchmarks/scalesim_compare.py [--run-scalesim] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from dse.peers import scalesim_predict
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, run_scalesim

ROOT = Path(__file__).resolve().parents[1]

SHARED = ROOT.parent / "shared" / "data" / "scalesim" / "resnet18_per_layer.csv"
METRICS = {
    "compute_cycles": "compute",
    "total_cycles_incl_prefetch": "total",
    "dram_ifmap_reads": "ifmap_rd",
    "dram_filter_reads": "filt_rd",
    "dram_ofmap_writes": "ofmap_wr",
}
# small ResNet-18 layers SCALE-Sim simulates in seconds (the 3x3 ones take minutes each)
FRESH_LAYERS = ("Conv3_s", "Conv4_s", "Conv5_s", "Conv5_1b", "FC")
FRESH_CONFIGS = [
    ScaleSimConfig(32, 16, "os"),
    ScaleSimConfig(32, 16, "ws"),
    ScaleSimConfig(32, 32, "is"),
    ScaleSimConfig(8, 32, "is"),
]


def _layer(r: dict) -> ScaleSimLayer:
    return ScaleSimLayer(
        r["layer"],
        *(int(r[k]) for k in ("ifmap_h", "ifmap_w", "filt_h", "filt_w", "channels", "num_filters")),
        int(r["stride_h"]),
    )


def _timed_predict(layers: list[ScaleSimLayer], cfg: ScaleSimConfig, repeat: int = 20) -> tuple[list[dict], float]:
    """Seconds per layer through template -> mapper -> model. USER mode is timed cold (the emulation's
    memo cleared, one layer at a time), since a repeat would only measure the cache."""
    from hwmodels.systolic.user_mode import clear_user_mode_cache

    if cfg.bw_mode == "USER":
        out, total = [], 0.0
        for layer in layers:
            clear_user_mode_cache()
            start = time.perf_counter()
            out.extend(scalesim_predict([layer], cfg))
            total += time.perf_counter() - start
        return out, total / len(layers)
    scalesim_predict(layers, cfg)
    start = time.perf_counter()
    for _ in range(repeat):
        out = scalesim_predict(layers, cfg)
    return out, (time.perf_counter() - start) / repeat / len(layers)


def shared_groups() -> list[tuple[ScaleSimConfig, list[ScaleSimLayer], list[dict], str]]:
    runs: dict[str, list[dict]] = {}
    with open(SHARED) as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["run"], []).append(row)
    groups = []
    for rows in runs.values():
        r0 = rows[0]
        cfg = ScaleSimConfig.from_reference_row(r0)
        refs = [
            {**{k: float(r[k]) for k in (*METRICS, "stall_cycles", "sim_wall_s")}, "layer": r["layer"]} for r in rows
        ]
        groups.append((cfg, [_layer(r) for r in rows], refs, "shared csv"))
    return groups


def fresh_groups() -> list[tuple[ScaleSimConfig, list[ScaleSimLayer], list[dict], str]]:
    with open(SHARED) as f:
        layers = {r["layer"]: _layer(r) for r in csv.DictReader(f) if r["layer"] in FRESH_LAYERS}
    chosen = [layers[n] for n in FRESH_LAYERS]
    groups = []
    for cfg in FRESH_CONFIGS:
        print(f"running SCALE-Sim {cfg.rows}x{cfg.cols} {cfg.dataflow} {cfg.bw_mode} on {len(chosen)} layers ...")
        groups.append((cfg, chosen, run_scalesim(chosen, cfg), "run here"))
    return groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-scalesim", action="store_true", help="also run SCALE-Sim on non-square / IS configs")
    ap.add_argument("--csv", type=Path, help="write the per-layer table here")
    args = ap.parse_args()

    groups = shared_groups() + (fresh_groups() if args.run_scalesim else [])
    table = []
    for cfg, layers, refs, source in groups:
        preds, model_s = _timed_predict(layers, cfg)
        for p, r in zip(preds, refs):
            row = {
                "config": f"{cfg.rows}x{cfg.cols} {cfg.dataflow} {cfg.bw_mode}",
                "layer": r["layer"],
                "source": source,
                "sim_s": r["sim_wall_s"],
                "model_s": model_s,
            }
            # USER mode's compute cycles include its stalls; the stall-free count is compute - stall
            r = {**r, "compute_cycles": r["compute_cycles"] - (r["stall_cycles"] if cfg.bw_mode == "USER" else 0)}
            for m, short in METRICS.items():
                row[short] = 100 * (p[m] - r[m]) / r[m]
            table.append(row)

    head = f"{'config':<20} {'layer':<9} " + " ".join(f"{s:>9}" for s in METRICS.values()) + "   (error %)"
    print(head)
    print("-" * len(head))
    for row in table:
        print(f"{row['config']:<20} {row['layer']:<9} " + " ".join(f"{row[s]:9.2f}" for s in METRICS.values()))

    def summary(label: str, rows: list[dict]) -> None:
        parts = []
        for s in METRICS.values():
            errs = [abs(r[s]) for r in rows]
            parts.append(f"{s} {sum(errs) / len(errs):6.2f}/{max(errs):6.2f}")
        print(f"{label:<26} n={len(rows):<3} " + "  ".join(parts))

    print("\nMAE % / max % per configuration")
    for cfg_name in dict.fromkeys(r["config"] for r in table):
        summary(cfg_name, [r for r in table if r["config"] == cfg_name])
    print()
    for mode in ("CALC", "USER"):
        rows = [r for r in table if r["config"].endswith(mode)]
        if rows:
            summary(f"all {mode}", rows)
    for mode in ("CALC", "USER"):
        rows = [r for r in table if r["config"].endswith(mode)]
        if rows:
            per_layer = [r["model_s"] * 1e3 for r in rows]
            print(
                f"model time per layer, {mode}{' (cold: USER window-walk emulation)' if mode == 'USER' else ''}: "
                f"mean {sum(per_layer) / len(per_layer):.2f} ms, max {max(per_layer):.2f} ms"
            )
    sim = sum(r["sim_s"] for r in table)
    model = sum(r["model_s"] for r in table)
    print(
        f"\nspeed: SCALE-Sim {sim:.1f} s for {len(table)} layers (shared rows: sim_wall_s from the CSV), "
        f"our model {model * 1e3:.2f} ms through the full template->mapper->model path: {sim / model:,.0f}x faster"
    )
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)


if __name__ == "__main__":
    main()
