"""Validate the fpga_dataflow model against real Vivado HLS synthesis (the wa-hls4ml subset).

Every row is a 2-layer dense network (d_in -> hidden -> d_out, QKeras weights quantized_bits(prec, 0) i.e.
ap_fixed<prec,1>, data at hls4ml's default ap_fixed<16,6>, Resource strategy, io_parallel, 5 ns, xcu250) with
its synthesized latency, interval, DSP, LUT, FF and BRAM. Rows are split by network (model_string) into a
calibration half and a test half with a stable hash; the model's fitted constants come from the calibration
half (``--fit`` refits and prints them) and the figures that count are the test half's.

    .venv/bin/python benchmarks/fpga_wa_hls4ml.py [--fit] [--data PATH]
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dse.graph import GraphBuilder  # noqa: E402
from hwmodels.catalogs.fpga import get_part, wa_hls4ml_column  # noqa: E402
from hwmodels.fpga import cost as fpga_model  # noqa: E402
from hwmodels.fpga.model import FpgaDataflowModel  # noqa: E402
from mappers.fpga import FpgaDataflowMapper  # noqa: E402
from templates.fpga_dataflow import FpgaDataflowTemplate  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "wa-hls4ml" / "wa_2layer_subset.csv"
ALLOWED_MEDIAN_APE = {"latency_cycles": 0.10, "ii_cycles": 0.10, "dsp": 0.10, "lut": 0.20, "ff": 0.20, "bram": 0.20}
TARGETS = {metric: (wa_hls4ml_column(metric), limit) for metric, limit in ALLOWED_MEDIAN_APE.items()}
FEATURES = list(fpga_model.LUT_COEFFICIENTS)


def load_rows(path: Path = DATA) -> pd.DataFrame:
    frame = pd.read_csv(path)
    frame = frame[frame["hls_synth_success"].astype(bool)].copy()
    widths = frame["model_string"].str.split("-", expand=True).astype(int)
    frame["d_in"], frame["hidden"], frame["d_out"] = widths[0], widths[1], widths[2]
    frame["calibration"] = [zlib.crc32(s.encode()) % 2 == 0 for s in frame["model_string"]]
    return frame.reset_index(drop=True)


def two_layer_graph(d_in: int, hidden: int, d_out: int):
    b = GraphBuilder(f"dense_{d_in}_{hidden}_{d_out}", elem_bytes=2)
    x = b.input("x", (1, d_in))
    x = b.linear(x, hidden, name="dense_1")
    b.linear(x, d_out, name="dense_2")
    return b.build()


def point_of(prec: int, rf: int) -> dict:
    """The benchmark's hls4ml configuration as an fpga_dataflow point."""
    return {
        "part": "xcu250",
        "clock_period_ns": 5.0,
        "io_type": "io_parallel",
        "strategy": "resource",
        "reuse_factor": int(rf),
        "width": 16,
        "integer": 6,
        "weight_width": int(prec),
        "weight_integer": 1,
    }


def predict(rows: pd.DataFrame) -> pd.DataFrame:
    """Our metrics and LUT/FF features for every row (evaluated once per distinct design)."""
    template, mapper, model = FpgaDataflowTemplate(), FpgaDataflowMapper(), FpgaDataflowModel()
    part = get_part("xcu250")
    cache: dict[tuple, dict] = {}
    out = []
    for d_in, hidden, d_out, prec, rf in rows[["d_in", "hidden", "d_out", "prec", "rf"]].itertuples(index=False):
        key = (d_in, hidden, d_out, prec, rf)
        if key not in cache:
            arch = template.instantiate(point_of(prec, rf))
            mapping = mapper.map(two_layer_graph(d_in, hidden, d_out), arch)
            metrics = model.evaluate(mapping, arch)
            features = dict.fromkeys(FEATURES, 0.0)
            for om in mapping.ops.values():
                plan = om.payload.plan
                f = fpga_model.layer_features(
                    plan.shape.n_in,
                    plan.shape.n_out,
                    plan.mults,
                    plan.reuse_factor,
                    plan.knobs.weight.width,
                    arch.precision.width,
                    plan.knobs.accum.width,
                    plan.knobs.strategy,
                    part,
                )
                for k, v in f.items():
                    features[k] += v
            cache[key] = {**{m: metrics.values[m] for m in TARGETS}, **{f"f_{k}": v for k, v in features.items()}}
        out.append(cache[key])
    return pd.DataFrame(out, index=rows.index)


def fit(rows: pd.DataFrame, predicted: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Non-negative least-squares LUT/FF coefficients on the calibration rows, weighted to minimise relative error."""
    cal = rows["calibration"].to_numpy()
    x = predicted[[f"f_{k}" for k in FEATURES]].to_numpy()[cal]
    out = {}
    for metric in ("lut", "ff"):
        y = rows[TARGETS[metric][0]].to_numpy(dtype=float)[cal]
        w = 1.0 / np.maximum(y, 1.0)
        used = np.abs(x).sum(axis=0) > 0
        coef = np.zeros(len(FEATURES))
        coef[used], _ = nnls(x[:, used] * w[:, None], y * w)  # non-negative: every feature costs, never saves
        out[metric] = {k: round(float(c), 4) for k, c in zip(FEATURES, coef)}
    return out


def errors(rows: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Median and p90 absolute percentage error per target, on the calibration and the test halves."""
    table = []
    for metric, (column, limit) in TARGETS.items():
        truth = rows[column].to_numpy(dtype=float)
        ape = np.abs(predicted[metric].to_numpy() - truth) / np.maximum(np.abs(truth), 1e-9)
        ape = np.where(truth == 0, np.where(predicted[metric].to_numpy() == 0, 0.0, 1.0), ape)
        for half, mask in (("calibration", rows["calibration"]), ("test", ~rows["calibration"])):
            sel = ape[mask.to_numpy()]
            table.append(
                {
                    "target": metric,
                    "half": half,
                    "rows": int(sel.size),
                    "median_ape_%": 100 * float(np.median(sel)),
                    "p90_ape_%": 100 * float(np.quantile(sel, 0.9)),
                    "limit_%": 100 * limit,
                }
            )
    return pd.DataFrame(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--fit", action="store_true", help="refit the LUT/FF coefficients and print them")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"wa-hls4ml data not found at {args.data}; nothing to compare")
        return 1
    rows = load_rows(args.data)
    predicted = predict(rows)
    if args.fit:
        for metric, coef in fit(rows, predicted).items():
            print(f"{metric.upper()}_COEFFICIENTS = {coef}")
    print(
        f"wa-hls4ml subset: {len(rows)} rows, {rows['model_string'].nunique()} networks "
        f"({int(rows['calibration'].sum())} calibration rows / {int((~rows['calibration']).sum())} test rows)"
    )
    table = errors(rows, predicted)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
