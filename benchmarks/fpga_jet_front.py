"""The jet-tagging MLP: the searched Pareto front of designs/jet_mlp_fpga.yaml vs hls4ml's default configuration.

hls4ml's default (``config_from_keras_model``) is ReuseFactor 1, Strategy Latency, ap_fixed<16,6> everywhere.
This script evaluates every grid point of the spec with the analytical model (no store, no report) and prints
the front of latency vs DSP vs LUT next to the default, so the gain of searching is visible side by side.

    .venv/bin/python benchmarks/fpga_jet_front.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dse.pareto import pareto_mask
from dse.session import build_evaluator
from dse.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]

SPEC = ROOT / "designs" / "jet_mlp_fpga.yaml"
HLS4ML_DEFAULT = {
    "reuse_factor": 1,
    "strategy": "latency",
    "width": 16,
    "integer": 6,
    "weight_width": 16,
    "weight_integer": 6,
}
COLUMNS = [
    "reuse_factor",
    "strategy",
    "width",
    "weight_width",
    "latency_cycles",
    "ii_cycles",
    "dsp",
    "lut",
    "ff",
    "bram",
    "fpga_util",
]


def evaluate_grid() -> tuple[pd.DataFrame, dict]:
    spec = load_spec(SPEC)
    _, evaluator = build_evaluator(spec)
    rows = []
    for point in spec.design_space().grid():
        rows.append({**point, **evaluator(point).values})
    default = {**spec.design_space().fixed, **HLS4ML_DEFAULT}
    return pd.DataFrame(rows), {**default, **evaluator(default).values}


def main() -> int:
    frame, default = evaluate_grid()
    fits = frame[frame["fpga_util"] <= 0.8]
    mask = pareto_mask(fits[["latency_cycles", "dsp", "lut"]].to_numpy(dtype=float), ["min", "min", "min"])
    front = fits[mask].sort_values(["latency_cycles", "dsp", "lut"])
    print(
        f"{len(frame)} points evaluated, {len(fits)} fit in 80% of the xcu250, {len(front)} on the front "
        "(min latency_cycles, dsp, lut)\n"
    )
    table = pd.concat(
        [pd.DataFrame([default])[COLUMNS].assign(design="hls4ml default"), front[COLUMNS].assign(design="searched")]
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    same_latency = front[front["latency_cycles"] <= default["latency_cycles"]]
    if len(same_latency):
        best = same_latency.sort_values("dsp").iloc[0]
        print(
            f"\nat no more latency than the default ({default['latency_cycles']:.0f} cycles): "
            f"{best['dsp']:.0f} DSP vs {default['dsp']:.0f} ({default['dsp'] / max(best['dsp'], 1):.1f}x fewer), "
            f"{best['lut']:.0f} LUT vs {default['lut']:.0f}"
        )
    lowest = front.loc[front["dsp"].idxmin()]
    print(f"lowest-DSP design on the front: {lowest['dsp']:.0f} DSP at {lowest['latency_cycles']:.0f} cycles")
    return 0 if np.isfinite(front["latency_cycles"]).all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
