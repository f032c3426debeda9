"""Sparse systolic model vs SCALE-Sim 3.0.0 run live in sparsity mode: per array / dataflow / pattern, how
many layers' compute cycles match exactly and the total-cycle and DRAM-traffic errors.

    .venv/bin/python benchmarks/sparse_scalesim.py
"""

from __future__ import annotations

from dse.peers import scalesim_predict
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, run_scalesim

SHAPES = [  # (name, H, W, R, S, C, K, stride): channel counts divisible by M and not
    ("c3x3_c16", 18, 18, 3, 3, 16, 24, 1),
    ("c3x3_c3", 14, 14, 3, 3, 3, 16, 1),
    ("c3x3_s2_c12", 17, 17, 3, 3, 12, 20, 2),
    ("c1x1_c40", 9, 9, 1, 1, 40, 36, 1),
    ("fc_96", 1, 1, 1, 1, 96, 50, 1),
]
ARRAYS = [(8, 8), (16, 8), (8, 16), (32, 32)]
PATTERNS = ["2:4", "1:4", "2:8"]


TRAFFIC = ("dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes")


def _errors(pairs: list[tuple[dict, dict]], metric: str) -> list[float]:
    return [100 * abs(o[metric] - r[metric]) / r[metric] for o, r in pairs]


def main() -> None:
    print(
        f"{'array':>7} {'df':>3} {'N:M':>4} {'compute exact':>14} {'total err %':>12} {'max total %':>12} "
        f"{'ifmap %':>8} {'filter %':>9} {'ofmap %':>8}"
    )
    for rows, cols in ARRAYS:
        for df in ("os", "ws", "is"):
            for nm in PATTERNS:
                layers = [ScaleSimLayer(*s, sparsity=nm) for s in SHAPES]
                cfg = ScaleSimConfig(rows, cols, df, 8, 8, 8, "CALC", sparsity_support=True)
                pairs = list(zip(scalesim_predict(layers, cfg), run_scalesim(layers, cfg)))
                exact = sum(o["compute_cycles"] == r["compute_cycles"] for o, r in pairs)

                tot = _errors(pairs, "total_cycles_incl_prefetch")
                traffic = [sum(_errors(pairs, m)) / len(pairs) for m in TRAFFIC]
                print(
                    f"{rows:>3}x{cols:<3} {df:>3} {nm:>4} {exact:>8}/{len(pairs):<5} {sum(tot) / len(tot):>12.2f} "
                    f"{max(tot):>12.2f} {traffic[0]:>8.2f} {traffic[1]:>9.2f} {traffic[2]:>8.2f}"
                )


if __name__ == "__main__":
    main()
