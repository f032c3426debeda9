"""Time one whole-network evaluation (point -> Arch -> Mapping -> Metrics) of the systolic model.

Target: under 10 ms for ResNet-18. Design points cycle over dataflows and array shapes so nothing is
served from a cache.

    python benchmarks/eval_speed.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import time

from dse.evaluate import PointEvaluator
from dse.zoo import build

POINTS = [
    {"rows": r, "cols": c, "dataflow": df, "sram_kib": s}
    for r, c in ((32, 32), (64, 16), (128, 128))
    for df in ("os", "ws", "is")
    for s in (192, 1536)
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    for model in ("resnet18", "resnet50"):
        graph = build(model)
        ev = PointEvaluator(graph, "systolic", fixed={"tech": "asic-28nm", "dram_gbps": 25.6, "freq_mhz": 800})
        ev(POINTS[0])
        times = []
        for i in range(args.repeat):
            start = time.perf_counter()
            ev(POINTS[i % len(POINTS)])
            times.append(time.perf_counter() - start)
        times.sort()
        med = times[len(times) // 2] * 1e3
        print(f"{model}: {len(graph.ops)} ops, median {med:.2f} ms, best {times[0] * 1e3:.2f} ms per network")


if __name__ == "__main__":
    main()
