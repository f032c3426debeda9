"""Uniform precision (hls4ml's one ap_fixed<W,I> for everything) vs searched per-layer precision, digits MLP.

At each ReuseFactor (Strategy Latency, io_parallel, xcu250), the baseline is the uniform ap_fixed<W,I> (W 4..18,
I 1..8: weights, biases, accumulators and results all the same) with the fewest LUTs among those whose emulated
accuracy drop is within the bound; the searched design is the per-layer grid of designs/digits_mlp_fpga.yaml
(weight width per layer, result width per layer) at the same ReuseFactor with the fewest LUTs under the same
bound. Prints accuracy / LUT / DSP / latency side by side (iso-accuracy: both meet the bound).

    .venv/bin/python benchmarks/quant_baseline.py [--bound 0.01]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dse.quant.digits import ensure_digits  # noqa: E402
from dse.session import build_evaluator  # noqa: E402
from dse.spec import load_spec  # noqa: E402


def best(evaluator, points, bound):
    feasible = []
    for p in points:
        m = evaluator(p).values
        if m["accuracy_drop"] <= bound and m["fpga_util"] <= 0.8:
            feasible.append((m["lut"], p, m))
    return min(feasible, key=lambda t: t[0]) if feasible else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bound", type=float, default=0.01)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    ensure_digits(folder / "workloads")
    (folder / "spec.yaml").write_text((ROOT / "designs" / "digits_mlp_fpga.yaml").read_text())
    spec = load_spec(folder / "spec.yaml")
    _, evaluator = build_evaluator(spec)
    grid = spec.design_space()
    per_layer = {d.name: list(d.values) for d in grid.free if d.name.startswith("layer")}
    print(f"digits MLP, accuracy_drop <= {args.bound} on 540 held-out images, Strategy latency, io_parallel")
    print(f"{'RF':>3s}  {'design':42s} {'accuracy':>8s} {'LUT':>9s} {'DSP':>6s} {'latency':>7s}")
    for rf in (1, 4, 16):
        uniform = [
            {
                "reuse_factor": rf,
                "strategy": "latency",
                "width": w,
                "integer": i,
                "weight_width": w,
                "weight_integer": i,
                "accum_width": w,
                "accum_integer": i,
                **{k: None for k in per_layer},
            }
            for w in range(4, 19)
            for i in range(1, 9)
            if i < w
        ]
        searched = [
            {"reuse_factor": rf, "strategy": "latency", **dict(zip(per_layer, combo, strict=True))}
            for combo in itertools.product(*per_layer.values())
        ]
        for label, found in (
            ("uniform", best(evaluator, uniform, args.bound)),
            ("per-layer", best(evaluator, searched, args.bound)),
        ):
            if found is None:
                print(f"{rf:3d}  {label}: no design meets the bound")
                continue
            _, p, m = found
            if label == "uniform":
                what = f"uniform ap_fixed<{p['width']},{p['integer']}>"
            else:
                what = (
                    "w "
                    + "/".join(str(p[f"layer{i}_weight_width"]) for i in range(3))
                    + " r "
                    + "/".join(str(p[f"layer{i}_result_width"]) for i in range(2))
                )
            print(
                f"{rf:3d}  {what:42s} {m['accuracy']:8.4f} {m['lut']:9.0f} {m['dsp']:6.0f} {m['latency_cycles']:7.0f}"
            )


if __name__ == "__main__":
    main()
