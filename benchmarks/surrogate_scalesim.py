"""Surrogate accuracy with real SCALE-Sim 3.0.0 as the truth, on a network it never saw.

The space of ``designs/scalesim_truth.yaml`` (USER mode: per-operand DRAM bandwidth, SRAMs in whole kB,
arrays 32..128 a side) is sampled ``-n`` times per workload; every MAC-array layer of every design is run
by SCALE-Sim (``dse surrogate dataset --truth scalesim``'s path: ``surrogates.truth.scalesim``, pooled,
de-duplicated, cached per layer on disk, so a re-run simulates nothing). The surrogate is trained on the
other workloads and tested on the held-out one (ResNet-18 at 32 x 32 and 64 x 64 pixels by default).

SCALE-Sim's run time grows with the cycles it simulates, so two things bound it. Designs whose model latency
over their array layers exceeds ``--max-cycles`` are left out, and counted (the space's worst designs, ws with
a small filter SRAM re-reading through USER mode's prefetch window, model 1e7-5e8 cycles: hours of SCALE-Sim
each). And ResNet-50 and VGG are not in the default training set: one VGG 4096 x 4096 FC layer ran over 20
minutes on a 32 x 32 array, and ResNet-50's designs are mostly over the bound. Prints the closed-form
baseline alone (the USER-mode fold walk, ``surrogates.systolic.user_mode_closed_form``) against SCALE-Sim, the op- and
design-level models, and the SCALE-Sim cost.

Target: held-out latency R^2 >= 0.98 and MAPE <= 5 %.

    python benchmarks/surrogate_scalesim.py [-n 8] [--workers 2] [--cache DIR] [--max-cycles 5e6]
        [--holdout resnet18:resolution=32 resnet18:resolution=64]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dse.choices import scalesim_cache_dir
from dse.spec import load_spec
from surrogates.dataset import build_dataset, workloads_from_args
from surrogates.evaluate import baseline_accuracy, design_accuracy, format_table
from surrogates.systolic.model import SurrogateModel
from surrogates.train import heldout_split
from surrogates.truth.scalesim import ScaleSimTruth

ROOT = Path(__file__).resolve().parents[1]

TRAINING = ["small_cnn", "jet_mlp", "mobilenet_v1:resolution=64"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=8, help="designs per workload")
    ap.add_argument(
        "--holdout",
        nargs="+",
        default=["resnet18:resolution=32", "resnet18:resolution=64"],
        help="the held-out workloads (tested on together; default: ResNet-18 at two input sizes)",
    )
    ap.add_argument("--training", nargs="+", default=TRAINING)
    ap.add_argument("--models", nargs="+", default=["gb", "rf"])
    ap.add_argument("--levels", nargs="+", default=["op", "design"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", default=str(scalesim_cache_dir()), help="SCALE-Sim per-layer report cache")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-cycles",
        type=float,
        default=5e6,
        help="designs whose model latency over their array layers exceeds this are not simulated (0: none left out)",
    )
    args = ap.parse_args()
    spec = load_spec(ROOT / "designs" / "scalesim_truth.yaml")
    truth = ScaleSimTruth(Path(args.cache), max_model_cycles=args.max_cycles or None)
    workloads = workloads_from_args(spec, [*args.training, *args.holdout])
    start = time.perf_counter()
    data = build_dataset(
        "systolic", spec.design_space(), spec.fixed_params(), workloads, args.n, seed=args.seed,
        executor="local", workers=args.workers, scalesim=truth,
    )  # fmt: skip
    print(f"dataset: {len(data)} op rows, {args.n} designs x {len(workloads)} workloads "
          f"({time.perf_counter() - start:.0f} s wall)")  # fmt: skip
    skipped = f"; {truth.skipped} designs over {args.max_cycles:.3g} model cycles left out" if truth.skipped else ""
    print(f"SCALE-Sim: {truth.simulated} layer runs, {truth.sim_seconds:.0f} s simulated, {truth.cached} from "
          f"the cache ({args.cache})" + (f", {truth.failed} failed" if truth.failed else "") + skipped)  # fmt: skip
    print("target: held-out latency R^2 >= 0.98 and MAPE <= 5 % (truth: SCALE-Sim total_cycles_incl_prefetch)")
    labels = [w.label for w in workloads[len(args.training) :]]
    heldout = " + ".join(labels)
    train_part, test_part = heldout_split(data, labels)
    print(format_table(baseline_accuracy(test_part), f"\n[{heldout} held out] baseline alone (no learning)"))
    for level in args.levels:
        for kind in args.models:
            model = SurrogateModel.fit(train_part, kind, level=level)
            print(format_table(design_accuracy(model, test_part), f"[{heldout} held out] level={level} {kind}"))


if __name__ == "__main__":
    main()
