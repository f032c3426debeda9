"""Held-out-workload accuracy of the surrogates per template, with the expensive evaluator as the truth.

For each template a spec's space is sampled on several workloads; the truth is the spec's own mapper
(systolic CP-SAT, the RDU section solver, the multicore CP-SAT scheduler; the GPU and FPGA models have
one mapper, so there the truth is the analytical model itself and only the plumbing is measured). The
surrogate is trained without the held-out network and tested on it, next to the closed form alone.
For the systolic CP-SAT truth both feature sets are measured: the design-level contract and the op-level
systolic features (per-op fold closed forms, per-op CP-SAT truth).

Target: held-out latency R^2 >= 0.98 and MAPE <= 5 %.

    python benchmarks/surrogate_templates.py [-n 40] [--templates systolic_cpsat rdu] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.spec import load_spec  # noqa: E402
from surrogates.contract_model import fit_surrogate  # noqa: E402
from surrogates.dataset import build_dataset, workloads_from_args  # noqa: E402
from surrogates.evaluate import baseline_accuracy, design_accuracy, format_table  # noqa: E402
from surrogates.train import heldout_split  # noqa: E402

# template -> (spec, workloads (the last is held out), feature sets)
CASES = {
    "systolic_cpsat": (
        "designs/resnet18_cpsat_hybrid.yaml",
        ["resnet50", "mobilenet_v1", "vgg16", "resnet18"],
        ["contract", "systolic"],
    ),
    "rdu": (
        "designs/rdu_hybrid.yaml",
        [
            "gpt2:phase=decode,kv_len=1024,num_layers=2",
            "bert_base:num_layers=2,seq_len=128",
            "gpt2:phase=decode,kv_len=512,num_layers=3",
            "gpt2:phase=decode,kv_len=2048,num_layers=2",
        ],
        ["contract"],
    ),
    "multicore": ("designs/multicore_edge.yaml", ["resnet50", "mobilenet_v1", "resnet18"], ["contract"]),
    "gpu": ("designs/gpu_surrogate.yaml", ["resnet50", "mobilenet_v1", "resnet18"], ["contract"]),
    "fpga_dataflow": ("designs/small_cnn_fpga.yaml", ["jet_mlp", "small_cnn:batch=2", "small_cnn"], ["contract"]),
}


def run_case(name: str, args: argparse.Namespace) -> None:
    spec_path, workloads, feature_sets = CASES[name]
    spec = load_spec(ROOT / spec_path)
    holdout = workloads_from_args(spec, workloads[-1:])[0].label
    for features in feature_sets:
        start = time.perf_counter()
        data = build_dataset(
            spec.template.kind,
            spec.design_space(),
            spec.fixed_params(),
            workloads_from_args(spec, workloads),
            args.n,
            mapper=spec.template.mapper,
            mapper_options=dict(spec.template.mapper_options),
            executor="local" if args.workers > 1 else "serial",
            workers=args.workers,
            features=features,
        )
        build_s = time.perf_counter() - start
        train_part, test_part = heldout_split(data, [holdout])
        title = f"\n[{name}, truth: mapper {spec.template.mapper or 'default'}, features {features}] {holdout} held out"
        print(f"{title} ({args.n} designs x {len(workloads)} workloads, dataset {build_s:.0f} s)")
        print(format_table(baseline_accuracy(test_part), "  closed form alone"))
        for kind in args.models:
            level = "op" if features == "systolic" else "contract"
            model = fit_surrogate(train_part, kind, 0, "op")
            print(format_table(design_accuracy(model, test_part), f"  surrogate {kind} ({level} level)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=40, help="designs per workload")
    ap.add_argument("--templates", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--models", nargs="+", default=["rf", "gb"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print("target: held-out workload latency R^2 >= 0.98, MAPE <= 5 %")
    for name in args.templates:
        run_case(name, args)


if __name__ == "__main__":
    main()
