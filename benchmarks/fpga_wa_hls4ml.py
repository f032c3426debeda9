"""Validate the fpga_dataflow model against real Vivado HLS synthesis (the wa-hls4ml subset).

Every row is a 2-layer dense network (d_in -> hidden -> d_out, QKeras weights quantized_bits(prec, 0) i.e.
ap_fixed<prec,1>, data at hls4ml's default ap_fixed<16,6>, Resource strategy, io_parallel, 5 ns, xcu250) with
its synthesized latency, interval, DSP, LUT, FF and BRAM. Rows are split by network into a calibration half and
a test half with a stable hash (``surrogates.truth.wa_hls4ml.network_split``); the model's fitted constants come
from the calibration half (``--fit`` refits and prints them) and the figures that count are the test half's. Rows are
read by ``surrogates.truth.wa_hls4ml.read_wa_hls4ml`` and evaluated through the evaluator (``dse.peers``).

    .venv/bin/python benchmarks/fpga_wa_hls4ml.py [--fit] [--data PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from dse.peers import wa_hls4ml_errors, wa_hls4ml_predict, wa_hls4ml_traces
from hwmodels.catalogs.fpga import get_part
from hwmodels.fpga import cost as fpga_model
from surrogates.truth.wa_hls4ml import network_split, read_wa_hls4ml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wa-hls4ml" / "wa_2layer_subset.csv"
FEATURES = list(fpga_model.LUT_COEFFICIENTS)


def lut_ff_features(rows: pd.DataFrame) -> pd.DataFrame:
    """The LUT/FF model's features summed over each row's layers (as the model priced them)."""
    part = get_part("xcu250")
    out = []
    for trace in wa_hls4ml_traces(rows):
        features = dict.fromkeys(FEATURES, 0.0)
        for om in trace.mapping.ops.values():
            plan = om.payload.plan
            f = fpga_model.layer_features(
                plan.shape.n_in,
                plan.shape.n_out,
                plan.mults,
                plan.reuse_factor,
                plan.knobs.weight.width,
                trace.arch.precision.width,
                plan.knobs.accum.width,
                plan.knobs.strategy,
                part,
            )
            for k, v in f.items():
                features[k] += v
        out.append(features)
    return pd.DataFrame(out, index=rows.index)


def fit(rows: pd.DataFrame, features: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Non-negative least-squares LUT/FF coefficients on the calibration rows, weighted to minimise relative error."""
    cal = ~network_split(rows)
    x = features[FEATURES].to_numpy()[cal]
    out = {}
    for metric in ("lut", "ff"):
        y = rows[metric].to_numpy(dtype=float)[cal]
        w = 1.0 / np.maximum(y, 1.0)
        used = np.abs(x).sum(axis=0) > 0
        coef = np.zeros(len(FEATURES))
        coef[used], _ = nnls(x[:, used] * w[:, None], y * w)  # non-negative: every feature costs, never saves
        out[metric] = {k: round(float(c), 4) for k, c in zip(FEATURES, coef)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--fit", action="store_true", help="refit the LUT/FF coefficients and print them")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"wa-hls4ml data not found at {args.data}; nothing to compare")
        return 1
    rows = read_wa_hls4ml(args.data)
    if args.fit:
        for metric, coef in fit(rows, lut_ff_features(rows)).items():
            print(f"{metric.upper()}_COEFFICIENTS = {coef}")
    test = network_split(rows)
    print(
        f"wa-hls4ml subset: {len(rows)} rows, {rows['network'].nunique()} networks "
        f"({int((~test).sum())} calibration rows / {int(test.sum())} test rows)"
    )
    table = wa_hls4ml_errors(rows, wa_hls4ml_predict(rows))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
