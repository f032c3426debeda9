"""Full-design prediction rate of the surrogates (batch prediction), next to the analytical model.

A full-design prediction = latency, energy, area and power of one design point running the whole
network. Target: >= 100,000 full-design predictions per second on 2 cores.

    python benchmarks/surrogate_speed.py [--designs 20000] [--model resnet18]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.evaluate import PointEvaluator  # noqa: E402
from dse.spec import load_spec  # noqa: E402
from dse.zoo import build  # noqa: E402
from surrogates import features as feat  # noqa: E402
from surrogates.dataset import build_dataset, stratified_points, workloads_from_args  # noqa: E402
from surrogates.model import SurrogateModel  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=20000)
    ap.add_argument("--model", default="resnet18")
    args = ap.parse_args()
    spec = load_spec(ROOT / "designs" / "mobilenet_nsga2.yaml")
    space, fixed = spec.design_space(), spec.fixed_params()
    data = build_dataset("systolic", space, fixed, workloads_from_args(spec, ["resnet50", "vgg16"]), 100)
    graph = build(args.model)
    ops = feat.op_table(graph)
    points = stratified_points(space, args.designs, seed=5)
    print(f"{args.model}: {len(graph.ops)} ops, {len(ops)} distinct; {len(points)} design points in one batch")
    print("target: >= 100,000 full-design predictions/s on 2 cores")
    exact = PointEvaluator(graph, "systolic", fixed=dict(fixed))
    start = time.perf_counter()
    for p in points[:200]:
        exact(p)
    print(f"  analytical model        {200 / (time.perf_counter() - start):>12,.0f} designs/s (one process)")
    start = time.perf_counter()
    archs = feat.arch_table("systolic", points, fixed)
    feat.cross_features(ops, archs)
    print(f"  features only           {len(points) / (time.perf_counter() - start):>12,.0f} designs/s")
    for kind in ("gb", "rf"):
        model = SurrogateModel.fit(data, kind)
        model.predict_designs(graph, "systolic", points[:100], fixed, ops)
        start = time.perf_counter()
        model.predict_designs(graph, "systolic", points, fixed, ops)
        rate = len(points) / (time.perf_counter() - start)
        print(f"  surrogate {kind:<13} {rate:>12,.0f} designs/s ({rate * len(ops):,.0f} op rows/s)")


if __name__ == "__main__":
    main()
