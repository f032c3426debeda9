"""A surrogate trained on measurements next to the analytical model, on designs the surrogate never saw.

Two honest splits of a measured contract dataset (``surrogates.truth.measured``):

- ``heldout_comparison``: train on some workloads (networks), test on the others -- for wa-hls4ml the
  stable network hash halves (``surrogates.truth.wa_hls4ml.network_split``), whose test half the FPGA model's
  calibration never saw either;
- ``group_out_comparison``: leave one group out (a GPU shape family), every row predicted by the fit
  that did not see its group.

Both give, per target, the accuracy (R^2, MAPE, percentiles) of the surrogate and of the closed form alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from surrogates.contract.model import ContractSurrogate
from surrogates.evaluate import accuracy
from surrogates.truth.wa_hls4ml import network_split

FPGA_REPORTED = ("latency_cycles", "ii_cycles", "lut", "ff", "dsp", "bram")
GPU_REPORTED = ("latency_ms",)
PREDICTORS = ("surrogate", "model")


def surrogate_predictions(model: ContractSurrogate, rows: pd.DataFrame, targets: Sequence[str]) -> pd.DataFrame:
    """The surrogate's value of each target on ``rows``; the interval from its throughput (II = 1 / throughput
    at the design's clock, so II = modelled II x modelled throughput / predicted throughput)."""
    pred = model.predict_frame(rows)
    out = {}
    for t in targets:
        if t in pred:
            out[t] = pred[t].to_numpy(float)
        elif t == "ii_cycles" and "throughput_ips" in pred:
            base_ii, base_thr = rows["base_ii_cycles"].to_numpy(float), rows["base_throughput_ips"].to_numpy(float)
            out[t] = base_ii * base_thr / np.maximum(pred["throughput_ips"].to_numpy(float), 1e-30)
    return pd.DataFrame(out, index=rows.index)


def compare(rows: pd.DataFrame, predicted: pd.DataFrame, targets: Sequence[str]) -> dict[str, dict[str, dict]]:
    """target -> {"surrogate": accuracy, "model": accuracy} on the same rows."""
    out = {}
    for t in targets:
        if t not in predicted or f"design_{t}" not in rows:
            continue
        truth = rows[f"design_{t}"].to_numpy(float)
        out[t] = {
            "surrogate": accuracy(truth, predicted[t].to_numpy(float)),
            "model": accuracy(truth, rows[f"base_{t}"].to_numpy(float)),
        }
    return out


def heldout_comparison(
    data: pd.DataFrame, targets: Sequence[str] = FPGA_REPORTED, kind: str = "gb", seed: int = 0
) -> dict[str, Any]:
    """Train on the workloads of one hash half, compare surrogate and model on the other half."""
    test = network_split(data, "workload")
    if test.all() or not test.any():
        raise UserError("the dataset needs workloads on both sides of the network split to hold some out")
    model = ContractSurrogate.fit(data[~test], kind, seed)
    rows = data[test]
    return {
        "train_workloads": int(data[~test]["workload"].nunique()),
        "test_workloads": int(rows["workload"].nunique()),
        "train_rows": int((~test).sum()),
        "test_rows": int(test.sum()),
        "targets": compare(rows, surrogate_predictions(model, rows, targets), targets),
    }


def group_out_predictions(
    data: pd.DataFrame, column: str = "family", targets: Sequence[str] = GPU_REPORTED, kind: str = "gb", seed: int = 0
) -> pd.DataFrame:
    """Each row's surrogate prediction from the fit that left its ``column`` group out."""
    groups = sorted(data[column].unique())
    if len(groups) < 2:
        raise UserError(f"leaving one {column} out needs at least two, the dataset has {len(groups)}")
    parts = []
    for group in groups:
        test = (data[column] == group).to_numpy()
        model = ContractSurrogate.fit(data[~test], kind, seed)
        parts.append(surrogate_predictions(model, data[test], targets))
    return pd.concat(parts).loc[data.index]


def group_out_comparison(
    data: pd.DataFrame, column: str = "family", targets: Sequence[str] = GPU_REPORTED, kind: str = "gb", seed: int = 0
) -> dict[str, dict[str, dict[str, dict]]]:
    """group ("all" first) -> target -> {"surrogate", "model"} accuracy, every row predicted out of its group."""
    predicted = group_out_predictions(data, column, targets, kind, seed)
    out = {"all": compare(data, predicted, targets)}
    for group in sorted(data[column].unique()):
        mask = (data[column] == group).to_numpy()
        out[str(group)] = compare(data[mask], predicted[mask], targets)
    return out


def format_comparison(results: dict[str, dict[str, dict]], title: str, names: Sequence[str] = PREDICTORS) -> str:
    """One line per (target, predictor): n, R^2, MAPE and p95 absolute percentage error."""
    lines = [title, f"  {'target':<16} {'predictor':<22} {'n':>6} {'R^2':>8} {'MAPE %':>8} {'p95 %':>8}"]
    for target, by in results.items():
        for name in names:
            if name in by:
                m = by[name]
                lines.append(
                    f"  {target:<16} {name:<22} {m['n']:>6} {m['r2']:>8.4f} {m['mape']:>8.2f} {m['p95']:>8.2f}"
                )
    return "\n".join(lines)
