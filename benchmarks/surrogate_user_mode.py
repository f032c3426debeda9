"""Surrogate accuracy in SCALE-Sim USER mode (``dram_mode: per_operand``) on a network it never saw.

The systolic space of ``designs/mobilenet_nsga2.yaml`` (array, three SRAMs, bandwidth, dataflow) with
``dram_mode`` fixed to ``per_operand``; trained on the other workloads, tested on held-out ResNet-18.
Prints the baseline alone (no learning; since ``surrogates.systolic.user_mode_closed_form`` it includes the fold-level
USER window walk's re-reads and stalls) and the op- and design-level models: R^2, MAPE, p95; then the
cost of the baseline per held-out design (cold: no memoised walk) next to the exact model's, and the
fold-level walk's latency error against the model's own walk on those designs.
Targets: held-out latency R^2 >= 0.95 (the closed-form baseline without the walk gave 0.30); baseline
>= 20x cheaper per design than exact evaluation.

    python benchmarks/surrogate_user_mode.py [-n 24] [--holdout resnet18] [--models gb] [--without-walk]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import surrogates.systolic.closed_form
from dse.evaluate import PointEvaluator
from dse.spec import load_spec
from dse.workload import load_workload
from hwmodels.systolic.user_mode import clear_user_mode_cache
from hwmodels.systolic.user_mode_batch import clear_batch_cache
from surrogates.dataset import build_dataset, workloads_from_args
from surrogates.evaluate import baseline_accuracy, design_accuracy, format_table
from surrogates.systolic import features as feat
from surrogates.systolic.model import SurrogateModel
from surrogates.train import heldout_split

ROOT = Path(__file__).resolve().parents[1]

WORKLOADS = ["small_cnn", "mobilenet_v1", "bert_base:num_layers=1", "jet_mlp", "resnet18"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=24, help="designs per workload")
    ap.add_argument("--holdout", default="resnet18")
    ap.add_argument("--models", nargs="+", default=["gb"])
    ap.add_argument("--levels", nargs="+", default=["op", "design"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--without-walk",
        action="store_true",
        help="the 'before' figure: the closed-form baseline without the USER walk (the hook switched off here)",
    )
    ap.add_argument("--timing-designs", type=int, default=12, help="os/ws designs timed cold, baseline vs exact")
    args = ap.parse_args()
    if args.without_walk:
        surrogates.systolic.closed_form.user_mode_pair_costs = lambda costs, *_: costs
    spec = load_spec(ROOT / "designs" / "mobilenet_nsga2.yaml")
    fixed = {**spec.fixed_params(), "dram_mode": "per_operand"}
    start = time.perf_counter()
    # serial: the truth's USER walks stay memoised in this process for the baseline built next
    data = build_dataset(
        "systolic", spec.design_space(), fixed, workloads_from_args(spec, WORKLOADS), args.n, seed=args.seed,
        executor="serial",
    )  # fmt: skip
    print(f"dataset: {len(data)} op rows, {args.n} designs x {len(WORKLOADS)} workloads, dram_mode per_operand "
          f"({time.perf_counter() - start:.0f} s)")  # fmt: skip
    print("target: held-out workload latency R^2 >= 0.95 (USER mode)")
    train_part, test_part = heldout_split(data, [args.holdout])
    print(format_table(baseline_accuracy(test_part), f"\n[{args.holdout} held out] baseline alone (no learning)"))
    for level in args.levels:
        for kind in args.models:
            start = time.perf_counter()
            model = SurrogateModel.fit(train_part, kind, level=level)
            title = f"[{args.holdout} held out] level={level} {kind} (fit {time.perf_counter() - start:.0f} s)"
            print(format_table(design_accuracy(model, test_part), title))
    time_baseline(spec, fixed, args.holdout, args.timing_designs, args.seed)


def time_baseline(spec, fixed: dict, workload: str, n: int, seed: int) -> None:
    """Cold cost per design of the baseline (``pair_costs`` totals) and of the exact model on ``workload``,
    every dataflow (each has the USER-mode window walk), and the baseline's latency error against the exact model."""
    points = [{**p, **fixed} for p in spec.design_space().sample(n, seed + 1)]
    graph = load_workload(workload)
    ops = feat.op_table(graph)
    clear_batch_cache()
    start = time.perf_counter()
    totals = feat.pair_costs(ops, feat.arch_table("systolic", points, {}), totals=True)
    base_s = (time.perf_counter() - start) / len(points)
    evaluate = PointEvaluator(graph, "systolic")
    exact, start = [], time.perf_counter()
    for point in points:
        clear_user_mode_cache()
        exact.append(evaluate(point).values["latency_cycles"])
    exact_s = (time.perf_counter() - start) / len(points)
    err = np.abs(totals["est_cycles"] / np.array(exact) - 1)
    print(f"\n[{workload}, {len(points)} os/ws designs, cold] baseline {base_s * 1e3:.1f} ms/design, "
          f"exact model {exact_s * 1e3:.0f} ms/design: {exact_s / base_s:.0f}x (target >= 20x)")  # fmt: skip
    print(f"baseline latency vs exact: MAPE {100 * err.mean():.1f} %, max {100 * err.max():.1f} %, "
          f"within 1 %: {np.mean(err < 0.01):.0%}")  # fmt: skip


if __name__ == "__main__":
    main()
