"""MobileNetV1 on a 64x64 systolic array (ws, 768 KiB, 25.6 GB/s, 16 nm): PE utilisation and latency, dense
vs 2:4 (all but the first and last layer) vs DRACO-style reshaping (channels rounded up to multiples of
the 64 columns), with per-layer utilisation before and after. DRACO's published figures for this setting
(Jha et al., ISVLSI 2020, arXiv:2006.15103, abstract): +41.8 % average PE utilisation and 42.6 % lower
inference latency for MobileNetV1 on a 64x64 array, against a row-stationary baseline, by regrouping
pointwise convolutions -- a different reshaping and baseline from ours, so compare the direction and size.

    .venv/bin/python benchmarks/sparse_draco.py [--layers]
"""

from __future__ import annotations

import sys

from dse.evaluate import PointEvaluator
from dse.zoo import build

BASE = {"rows": 64, "cols": 64, "dataflow": "ws", "sram_kib": 768, "dram_gbps": 25.6, "tech": "asic-16nm"}
VARIANTS = {
    "dense": {},
    "2:4 (inner layers)": {"sparsity_support": True, "sparse_layers": "inner", "sparse_pattern": "2:4"},
    "DRACO round to 64": {"round_channels": True},
    "DRACO x0.75 round 64": {"width_multiplier": 0.75, "round_channels": True},
    "DRACO round 64 + 2:4": {"round_channels": True, "sparsity_support": True, "sparse_layers": "inner"},
}


def main() -> None:
    graph = build("mobilenet_v1", batch=1, precision="int8")
    evaluator = PointEvaluator(graph, "systolic", "fold", fixed=BASE)
    results = {name: evaluator(extra) for name, extra in VARIANTS.items()}
    base = results["dense"]
    print(
        f"{'variant':<24} {'util %':>7} {'latency ms':>11} {'MACs M':>8} {'util vs dense':>14} {'latency vs dense':>17}"
    )
    for name, m in results.items():
        v = m.values
        macs = sum(layer.macs for layer in m.layers) / 1e6
        print(
            f"{name:<24} {100 * v['utilization']:>7.1f} {v['latency_ms']:>11.3f} {macs:>8.1f} "
            f"{100 * (v['utilization'] / base.values['utilization'] - 1):>+13.1f}% "
            f"{100 * (v['latency_ms'] / base.values['latency_ms'] - 1):>+16.1f}%"
        )
    print("DRACO (published, 64x64, vs row stationary): utilisation +41.8 %, latency -42.6 %")
    if "--layers" in sys.argv:
        after = results["DRACO round to 64"]
        print(f"\n{'layer':<20} {'util before %':>14} {'util after %':>12} {'cycles before':>14} {'cycles after':>13}")
        for b, a in zip(base.layers, after.layers):
            if b.macs:
                print(
                    f"{b.layer:<20} {100 * b.utilization:>14.1f} {100 * a.utilization:>12.1f} "
                    f"{b.cycles:>14.0f} {a.cycles:>13.0f}"
                )


if __name__ == "__main__":
    main()
