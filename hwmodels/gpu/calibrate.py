"""Calibration of the GPU model against measured kernels.

:func:`fit_calibration` fits the model's achievable fractions and launch overhead, plus a gradient-boosting
residual predictor (as GPPerf does), to measured kernel times from ``benchmarks/gpu_measure.py``, and reports
the error on shapes held out from the fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hwmodels.gpu.cost import Gemm, Tile, gemm_cost
from mappers.gpu import best_tile
from templates.gpu import GpuArch


@dataclass(frozen=True)
class Measurement:
    """One timed kernel: a GEMM (count batched M x N x K) with its operand bytes, and the measured median."""

    name: str
    gemm: Gemm
    seconds: float
    kind: str = "gemm"  # gemm | conv | attention


@dataclass
class CalibrationResult:
    """Fitted model parameters and held-out errors (mean absolute percentage error)."""

    compute_fraction: float
    bandwidth_fraction: float
    launch_us: float
    fit_mape: float
    heldout_mape_model: float
    heldout_mape_boosted: float
    n_fit: int
    n_heldout: int
    heldout: list[dict[str, Any]] = field(default_factory=list)


def _operand_bytes(g: Gemm, eb: int) -> tuple[float, float, float]:
    return float(g.M * g.K * eb * g.count), float(g.K * g.N * eb * g.count), float(g.M * g.N * eb * g.count)


def predict_seconds(measurement: Measurement, arch: GpuArch, tile: Tile | None = None) -> float:
    """Model time of one measured GEMM, every operand from DRAM, with ``tile`` or else the best legal
    tile (what a tuned library picks)."""
    a, b, c = _operand_bytes(measurement.gemm, arch.elem_bytes)
    if tile is None:
        return best_tile(measurement.gemm, arch, a, b, c, 0.0)[1]
    return gemm_cost(measurement.gemm, tile, arch, a_dram_bytes=a, b_dram_bytes=b, c_dram_bytes=c).seconds


def read_measurements(path: str | Path, kinds: Sequence[str] = ("gemm", "conv")) -> list[Measurement]:
    """Measured kernels from a ``benchmarks/gpu_measure.py`` CSV (GEMM-shaped rows of the given kinds)."""
    import pandas as pd

    frame = pd.read_csv(path)
    frame = frame[frame["kind"].isin(kinds)]
    return [
        Measurement(
            name=str(r["name"]),
            gemm=Gemm(int(r["M"]), int(r["N"]), int(r["K"]), int(r["count"])),
            seconds=float(r["median_s"]),
            kind=str(r["kind"]),
        )
        for _, r in frame.iterrows()
    ]


def _features(m: Measurement, model_s: float, eb: int) -> list[float]:
    g = m.gemm
    traffic = (g.M * g.K + g.K * g.N + g.M * g.N) * g.count * eb
    return [
        math.log(g.flops),
        math.log(traffic),
        math.log(g.flops / traffic),
        math.log(g.M),
        math.log(g.N),
        math.log(g.K),
        math.log(g.count),
        math.log(model_s),
    ]


def _mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
    return float(np.mean(np.abs(p - m) / m) * 100.0)


def fit_calibration(
    measurements: Sequence[Measurement], arch: GpuArch, *, heldout_share: float = 0.3, seed: int = 0
) -> CalibrationResult:
    """Fit compute/bandwidth fractions and launch overhead on a random share of the shapes, then a
    gradient-boosting model of the log residual (GPPerf-style); report MAPE on the held-out shapes."""
    from scipy.optimize import minimize
    from sklearn.ensemble import GradientBoostingRegressor

    if len(measurements) < 6:
        raise ValueError(f"calibration needs at least 6 measured kernels, got {len(measurements)}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(measurements))
    n_held = max(2, int(round(len(measurements) * heldout_share)))
    held = [measurements[i] for i in order[:n_held]]
    fit = [measurements[i] for i in order[n_held:]]

    def with_params(x: np.ndarray) -> GpuArch:
        return replace(
            arch,
            compute_fraction=float(np.clip(x[0], 0.01, 1.0)),
            bandwidth_fraction=float(np.clip(x[1], 0.01, 1.0)),
            launch_us=float(max(0.0, x[2])),
        )

    # tiles are chosen once, with the starting parameters: the fractions move times, rarely the best tile
    tiles = [best_tile(m.gemm, arch, *_operand_bytes(m.gemm, arch.elem_bytes), 0.0)[0] for m in fit]

    def loss(x: np.ndarray) -> float:
        candidate = with_params(x)
        errors = [math.log(predict_seconds(m, candidate, t) / m.seconds) for m, t in zip(fit, tiles)]
        return float(np.mean(np.square(errors)))

    start = np.array([arch.compute_fraction, arch.bandwidth_fraction, arch.launch_us])
    result = minimize(loss, start, method="Nelder-Mead", options={"maxiter": 300, "xatol": 1e-3, "fatol": 1e-6})
    fitted = with_params(result.x)
    fit_pred = [predict_seconds(m, fitted) for m in fit]
    held_pred = [predict_seconds(m, fitted) for m in held]
    eb = arch.elem_bytes
    booster = GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.05, random_state=seed)
    x_fit = np.array([_features(m, p, eb) for m, p in zip(fit, fit_pred)])
    y_fit = np.array([math.log(m.seconds / p) for m, p in zip(fit, fit_pred)])
    booster.fit(x_fit, y_fit)
    x_held = np.array([_features(m, p, eb) for m, p in zip(held, held_pred)])
    boosted = np.array(held_pred) * np.exp(booster.predict(x_held))
    rows = [
        {"name": m.name, "kind": m.kind, "measured_s": m.seconds, "model_s": p, "boosted_s": float(b)}
        for m, p, b in zip(held, held_pred, boosted)
    ]
    return CalibrationResult(
        compute_fraction=fitted.compute_fraction,
        bandwidth_fraction=fitted.bandwidth_fraction,
        launch_us=fitted.launch_us,
        fit_mape=_mape(fit_pred, [m.seconds for m in fit]),
        heldout_mape_model=_mape(held_pred, [m.seconds for m in held]),
        heldout_mape_boosted=_mape(list(boosted), [m.seconds for m in held]),
        n_fit=len(fit),
        n_heldout=len(held),
        heldout=rows,
    )
