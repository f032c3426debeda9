"""Full-design prediction rate of the surrogates (batch prediction), next to the analytical model.

A full-design prediction = latency, energy, area and power of one design point running the whole
network, from the design point itself (features included). Target: >= 100,000 full-design
predictions per second on 2 cores. Both surrogate levels are timed: ``op`` (a tree walk per
(design, op) pair) and ``design`` (the closed-form baseline of every (design, op) pair, summed per
design, and one tree walk per design).

    python benchmarks/surrogate_speed.py [--designs 100000] [--model resnet18]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dse.evaluate import PointEvaluator
from dse.spec import load_spec
from dse.zoo import build
from surrogates.dataset import build_dataset, stratified_points, workloads_from_args
from surrogates.systolic import features as feat
from surrogates.systolic.model import SurrogateModel

ROOT = Path(__file__).resolve().parents[1]


def rate(model: SurrogateModel, graph, points, fixed, ops, repeats: int = 3) -> float:
    """Best of ``repeats`` timed batch predictions (designs/s), after a warm-up."""
    model.predict_designs(graph, "systolic", points[:256], fixed, ops)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        model.predict_designs(graph, "systolic", points, fixed, ops)
        best = min(best, time.perf_counter() - start)
    return len(points) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=100_000)
    ap.add_argument("--op-designs", type=int, default=10_000, help="batch for the (slower) op-level models")
    ap.add_argument("--model", default="resnet18")
    args = ap.parse_args()
    spec = load_spec(ROOT / "designs" / "mobilenet_nsga2.yaml")
    space, fixed = spec.design_space(), spec.fixed_params()
    data = build_dataset(
        "systolic", space, fixed, workloads_from_args(spec, ["resnet50", "vgg16", "mobilenet_v1"]), 300
    )
    graph = build(args.model)
    ops = feat.op_table(graph)
    points = stratified_points(space, args.designs, seed=5)
    print(f"{args.model}: {len(graph.ops)} ops, {len(ops)} distinct; batches of {len(points):,} design points")
    print("target: >= 100,000 full-design predictions/s on 2 cores")
    exact = PointEvaluator(graph, "systolic", fixed=dict(fixed))
    start = time.perf_counter()
    for p in points[:200]:
        exact(p)
    print(f"  analytical model (cold per-op cache)  {200 / (time.perf_counter() - start):>10,.0f} designs/s")
    start = time.perf_counter()
    archs = feat.arch_table("systolic", points, fixed)
    cross = feat.cross_features(ops, archs)
    print(f"  features (design + op x design)       {len(points) / (time.perf_counter() - start):>10,.0f} designs/s")
    for level in ("design", "op"):
        batch = points if level == "design" else points[: args.op_designs]
        for kind in ("gb", "rf"):
            model = SurrogateModel.fit(data, kind, level=level)
            designs_per_s = rate(model, graph, batch, fixed, ops)
            print(
                f"  surrogate level={level:<6} {kind:<3} {designs_per_s:>21,.0f} designs/s ({len(batch):,} per batch)"
            )
    del cross


if __name__ == "__main__":
    main()
