"""Accuracy of a surrogate on data: R^2, MAPE and p50/p75/p95 absolute percentage error per target,
and a predicted-vs-true plotly figure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dse.files import atomic_write
from surrogates.contract.model import baseline_metric_accuracy, is_contract
from surrogates.dataset import design_frame
from surrogates.layer.model import baseline_layer_accuracy, is_layer

REPORTED_TARGETS = ("latency_ms", "energy_mj", "area_mm2", "power_w")
CONTRACT_EXTRA = ("throughput_ips", "lut", "ff", "dsp", "bram")


def accuracy(true: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """R^2 (on the values as they are), MAPE and absolute-percentage-error percentiles (in %)."""
    true = np.asarray(true, dtype=float)
    pred = np.asarray(pred, dtype=float)
    keep = np.isfinite(true) & np.isfinite(pred) & (true != 0)
    true, pred = true[keep], pred[keep]
    if true.size == 0:
        return {
            "n": 0,
            "r2": float("nan"),
            "mape": float("nan"),
            "p50": float("nan"),
            "p75": float("nan"),
            "p95": float("nan"),
        }
    ape = np.abs(pred - true) / np.abs(true) * 100.0
    ss_res = float(np.sum((true - pred) ** 2))
    ss_tot = float(np.sum((true - true.mean()) ** 2))
    return {
        "n": int(true.size),
        "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan"),
        "mape": float(ape.mean()),
        "p50": float(np.percentile(ape, 50)),
        "p75": float(np.percentile(ape, 75)),
        "p95": float(np.percentile(ape, 95)),
    }


def design_accuracy(model, data: pd.DataFrame, targets: Sequence[str] | None = None) -> dict[str, dict]:
    """Whole-design accuracy of ``model`` on every design in a dataset frame (a contract model: every
    metric it predicts of ``REPORTED_TARGETS`` and the FPGA resources)."""
    truth = design_frame(data)
    pred = model.predict_frame(data)
    if targets is None:
        names = getattr(model, "metric_names", None)
        targets = [t for t in (*REPORTED_TARGETS, *CONTRACT_EXTRA) if t in names] if names else REPORTED_TARGETS
    return {
        t: accuracy(truth[f"design_{t}"].to_numpy(), pred[t].to_numpy())
        for t in targets
        if f"design_{t}" in truth and t in pred
    }


def baseline_accuracy(data: pd.DataFrame) -> dict[str, dict]:
    """The baselines alone (no learning): design cycles and energy = sums of the per-op closed forms
    (``surrogates.systolic.features.pair_costs``); for a contract dataset, the closed form's metrics."""
    if is_layer(data):  # the cheap mapper the layers are corrected from
        return {f"{m} (cheap mapper)": accuracy(*pair) for m, pair in baseline_layer_accuracy(data).items()}
    if is_contract(data):
        return {
            f"{m} (closed form)": accuracy(truth, base)
            for m, (truth, base) in baseline_metric_accuracy(data).items()
            if m in (*REPORTED_TARGETS, *CONTRACT_EXTRA)
        }
    count = data["op_count"].to_numpy()
    rows = data.assign(
        est=data["est_cycles"] * count,
        est_energy=data["est_energy_pj"] * count,
    )
    sums = rows.groupby(["workload", "design"], sort=False).agg(
        est=("est", "sum"),
        est_energy=("est_energy", "sum"),
        true=("design_latency_cycles", "first"),
        true_energy=("design_energy_mj", "first"),
    )
    return {
        "latency (closed form)": accuracy(sums["true"].to_numpy(), sums["est"].to_numpy()),
        "energy (closed form)": accuracy(sums["true_energy"].to_numpy() * 1e9, sums["est_energy"].to_numpy()),
    }


def format_table(results: dict[str, dict], title: str) -> str:
    lines = [title, f"  {'target':<22} {'n':>6} {'R^2':>8} {'MAPE %':>8} {'p50 %':>7} {'p75 %':>7} {'p95 %':>7}"]
    for target, m in results.items():
        lines.append(
            f"  {target:<22} {m['n']:>6} {m['r2']:>8.4f} {m['mape']:>8.2f} {m['p50']:>7.2f} {m['p75']:>7.2f} "
            f"{m['p95']:>7.2f}"
        )
    return "\n".join(lines)


def scatter_html(truth: pd.DataFrame, pred: pd.DataFrame, targets: Sequence[str], path: Path, title: str) -> Path:
    """Predicted vs true, one log-log panel per target, with the y = x line."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(targets), subplot_titles=list(targets))
    for i, target in enumerate(targets, start=1):
        t, p = truth[target].to_numpy(float), pred[target].to_numpy(float)
        hover = truth["workload"].astype(str) if "workload" in truth else None
        fig.add_trace(
            go.Scatter(
                x=t, y=p, mode="markers", marker={"size": 4, "opacity": 0.6}, name=target, text=hover, showlegend=False
            ),
            row=1,
            col=i,
        )
        lo, hi = float(np.nanmin(np.r_[t, p])), float(np.nanmax(np.r_[t, p]))
        fig.add_trace(
            go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"dash": "dash", "color": "gray"}, showlegend=False),
            row=1,
            col=i,
        )
        fig.update_xaxes(type="log", title_text="true", row=1, col=i)
        fig.update_yaxes(type="log", title_text="predicted", row=1, col=i)
    fig.update_layout(title=title, height=420, width=360 * len(targets))
    return atomic_write(path, lambda temporary: fig.write_html(temporary, include_plotlyjs="cdn"))
