"""Uniform precision (hls4ml's one ap_fixed<W,I> for everything) vs searched per-layer precision, digits MLP.

At each ReuseFactor (Strategy Latency, io_parallel, xcu250), the baseline is the uniform ap_fixed<W,I> (W 4..18,
I 1..8: weights, biases, accumulators and results all the same) with the fewest LUTs among those whose emulated
accuracy drop is within the bound; the searched design is the per-layer grid of designs/digits_mlp_fpga.yaml
(weight width per layer, result width per layer) at the same ReuseFactor with the fewest LUTs under the same
bound. The third row is hls4ml's own automatic precision inference: for each default ap_fixed<W,I> of the same
grid, ``config_from_onnx_model(granularity='name', backend='Vitis')`` with every type 'auto', converted by hls4ml,
its resolved per-layer types read back from the ModelGraph (hwmodels.accuracy.hls4ml_auto), emulated bit-exactly and
costed by the fpga_dataflow model (weights/data at the default type, the model-level accumulator at the widest
inferred accum_t: the cost model has one accumulator width). Prints accuracy / LUT / DSP / latency side by side
(iso-accuracy: all meet the bound).

    .venv/bin/python benchmarks/quant_baseline.py [--bound 0.01]
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

from dse.session import build_evaluator
from dse.spec import load_spec
from hwmodels.accuracy.ap_fixed import QuantError, parse_type
from hwmodels.accuracy.data import compare_outputs
from hwmodels.accuracy.hls4ml_auto import emulator_config, infer_auto_types

ROOT = Path(__file__).resolve().parents[1]


def ensure_digits(out_dir: Path) -> Path:
    """The trained digits MLP and its data in ``out_dir``, written by the demo's trainer when missing."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train_digits.py"), str(out_dir)], check=True, stdout=subprocess.DEVNULL
    )
    return out_dir


def best(evaluator, points, bound):
    feasible = []
    for p in points:
        m = evaluator(p).values
        if m["accuracy_drop"] <= bound and m["fpga_util"] <= 0.8:
            feasible.append((m["lut"], p, m))
    return min(feasible, key=lambda t: t[0]) if feasible else None


def hls4ml_auto_designs(onnx_path: Path, prepared, per_layer: dict) -> list[tuple[dict, dict, str]]:
    """(point without reuse_factor, accuracy metrics, label) for hls4ml 'auto' inference at each default type."""
    names = [step.layer["name"] for step in prepared.emulator.steps]
    out, skipped = [], []
    for w in range(4, 19):
        for i in range(1, min(w, 9)):
            auto = infer_auto_types(onnx_path, f"fixed<{w},{i}>")
            config = emulator_config(auto, names, f"fixed<{w},{i}>")
            try:
                q = prepared.emulator.run(prepared.x, config).value()
            except QuantError as exc:  # inferred accumulators past the emulator's 40 bits (W >= 17)
                skipped.append(f"<{w},{i}>: {exc}")
                continue
            metrics = compare_outputs(q, prepared.float_out, prepared.data, prepared.float_accuracy)
            accums = [parse_type(a.types["accum"]) for a in auto if "accum" in a.types]
            widest = max(accums, key=lambda t: (t.width, t.integer))
            point = {
                "strategy": "latency",
                "width": w,
                "integer": i,
                "weight_width": w,
                "weight_integer": i,
                "accum_width": widest.width,
                "accum_integer": max(t.integer for t in accums),
                **{k: None for k in per_layer},
            }
            dense = "/".join(a.types["accum"].removeprefix("ap_fixed") for a in auto if a.class_name == "Dense")
            out.append((point, metrics, f"auto <{w},{i}>, accum {dense}"))
    if skipped:
        print(f"hls4ml auto: {len(skipped)} default types not emulated, e.g. {skipped[0]}")
    return out


def best_auto(evaluator, auto, rf, bound):
    """The cheapest hls4ml-auto design at ReuseFactor ``rf`` whose emulated accuracy drop is within ``bound``."""
    feasible = []
    for point, acc, label in auto:
        if acc["accuracy_drop"] > bound:
            continue
        p = {**point, "reuse_factor": rf}
        m = evaluator(p).values
        if m["fpga_util"] <= 0.8:
            feasible.append((m["lut"], p, m, label, acc))
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
    print(f"{'RF':>3s}  {'design':52s} {'accuracy':>8s} {'LUT':>9s} {'DSP':>6s} {'latency':>7s}")
    auto = hls4ml_auto_designs(folder / "workloads" / "digits_mlp.onnx", evaluator.accuracy.prepare(), per_layer)
    print(
        "hls4ml auto (config_from_onnx_model, all types 'auto', then InferPrecisionTypes): on this float model "
        "it infers only each Dense's accum_t/result_t (lossless growth); weights, biases and ReLU outputs keep the "
        "default type, as no quantizer tells it more"
    )
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
        auto_found = best_auto(evaluator, auto, rf, args.bound)
        for label, found in (
            ("uniform", best(evaluator, uniform, args.bound)),
            ("hls4ml auto", auto_found),
            ("per-layer", best(evaluator, searched, args.bound)),
        ):
            if found is None:
                print(f"{rf:3d}  {label}: no design meets the bound")
                continue
            _, p, m = found[:3]
            if label == "hls4ml auto":
                what, m = found[3], {**m, **found[4]}
            elif label == "uniform":
                what = f"uniform ap_fixed<{p['width']},{p['integer']}>"
            else:
                what = (
                    "w "
                    + "/".join(str(p[f"layer{i}_weight_width"]) for i in range(3))
                    + " r "
                    + "/".join(str(p[f"layer{i}_result_width"]) for i in range(2))
                )
            print(
                f"{rf:3d}  {what:52s} {m['accuracy']:8.4f} {m['lut']:9.0f} {m['dsp']:6.0f} {m['latency_cycles']:7.0f}"
            )


if __name__ == "__main__":
    main()
