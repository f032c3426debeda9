"""The GPU performance model: a mapped graph on a GpuArch -> latency, energy, utilization, traffic.

Each kernel costs launch + max(compute, DRAM, L2) (``mappers.gpu.gemm_cost`` / ``memory_kernel_cost``):
compute from the threadblock tile, wave quantization over the SMs and the achievable fraction of the dense
tensor peak; memory-bound kernels (elementwise, softmax, layernorm, pooling, decode attention, KV append)
on bandwidth. Kernels run back to back (one stream, no overlap between kernels).

Energy is an **estimate** from TDP and utilization, not a measurement: each kernel draws
``static + (TDP - static) * max(compute utilization, DRAM utilization)`` for its duration, with the static
share an assumption in ``hwmodels.catalogs.gpu.MODEL_ASSUMPTIONS``.

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

from hwmodels.base import LayerMetrics, Metrics
from hwmodels.catalogs.gpu import assumption
from mappers.base import Mapping
from mappers.gpu import Gemm, KernelCost, Tile, gemm_cost, memory_kernel_cost
from templates.gpu import GpuArch

ENERGY_NOTE = "GPU energy is an estimate from TDP and utilization (static share assumed), not a measurement"


def kernel_cost(mapping: Mapping, name: str, arch: GpuArch) -> KernelCost | None:
    """The cost of the kernel rooted at op ``name``; None for an op fused into another kernel's epilogue."""
    om = mapping.ops[name]
    if "fused_into" in om.extra:
        return None
    traffic = om.extra["traffic"]
    if om.extra.get("unit") == "tensor":
        return gemm_cost(
            om.extra["gemm"],
            om.extra["tile"],
            arch,
            a_dram_bytes=om.extra["a_dram"],
            b_dram_bytes=om.extra["b_dram"],
            c_dram_bytes=traffic.dram_write,
            extra_read_bytes=om.extra["extra_dram"],
        )
    op = mapping.graph.op(name)
    return memory_kernel_cost(
        arch,
        flops=float(op.flops),
        dram_read_bytes=traffic.dram_read,
        dram_write_bytes=traffic.dram_write,
        l2_bytes=traffic.l2,
    )


def kernel_power_w(cost: KernelCost, arch: GpuArch, peak_flops: float) -> tuple[float, float, float]:
    """(static, compute, memory) watts of a kernel: static share of TDP plus the rest by utilization."""
    static = assumption("static_power_fraction") * arch.tdp_w
    if cost.seconds <= 0:
        return static, 0.0, 0.0
    u_compute = min(1.0, cost.flops / (cost.seconds * peak_flops)) if peak_flops > 0 else 0.0
    u_memory = min(1.0, (cost.dram_read_bytes + cost.dram_write_bytes) / (cost.seconds * arch.bytes_per_s))
    activity = max(u_compute, u_memory)
    dynamic = (arch.tdp_w - static) * activity
    total_u = u_compute + u_memory
    share = u_compute / total_u if total_u > 0 else 0.0
    return static, dynamic * share, dynamic * (1 - share)


class GpuModel:
    """Roofline-with-tiles latency and TDP-based energy for a GpuArch."""

    name = "gpu_roofline"

    def evaluate(self, mapping: Mapping, arch: GpuArch) -> Metrics:  # type: ignore[override]
        clock_hz = arch.clock_mhz * 1e6
        layers: list[LayerMetrics] = []
        totals = {"static": 0.0, "compute": 0.0, "memory": 0.0}
        seconds_total = 0.0
        useful_macs = 0
        weighted_util = 0.0
        dram_bytes = 0.0
        kernels = 0
        for name in mapping.order:
            om = mapping.ops[name]
            op = mapping.graph.op(name)
            cost = kernel_cost(mapping, name, arch)
            if cost is None:
                layers.append(
                    LayerMetrics(
                        layer=name,
                        kind=op.kind.value,
                        cycles=0.0,
                        compute_cycles=0.0,
                        stall_cycles=0.0,
                        macs=0,
                        utilization=0.0,
                        dram_read_bytes=0.0,
                        dram_write_bytes=0.0,
                        energy_pj=0.0,
                        energy_breakdown_pj={k: 0.0 for k in totals},
                        extra={"unit": "epilogue", "fused_into": om.extra["fused_into"]},
                    )
                )
                continue
            kernels += 1
            tensor = om.extra.get("unit") == "tensor"
            peak = arch.peak_flops if tensor else arch.fp32_tflops * 1e12
            static_w, compute_w, memory_w = kernel_power_w(cost, arch, peak)
            breakdown = {
                "static": static_w * cost.seconds * 1e12,
                "compute": compute_w * cost.seconds * 1e12,
                "memory": memory_w * cost.seconds * 1e12,
            }
            macs = op.macs if tensor else 0
            util = cost.flops / (cost.seconds * arch.peak_flops) if tensor and cost.seconds > 0 else 0.0
            cycles = cost.seconds * clock_hz
            compute_cycles = min(cost.compute_s, cost.seconds) * clock_hz
            extra: dict[str, Any] = {
                "unit": om.extra.get("unit"),
                "bound": cost.bound,
                "launch_s": cost.launch_s,
                "compute_s": cost.compute_s,
                "dram_s": cost.dram_s,
                "l2_s": cost.l2_s,
                "flops": cost.flops,
                "l2_bytes": cost.l2_bytes,
            }
            if tensor:
                tile: Tile = om.extra["tile"]
                extra.update(
                    tile=f"{tile.bm}x{tile.bn}x{tile.bk}" + (f"/split{tile.split_k}" if tile.split_k > 1 else ""),
                    blocks=cost.blocks,
                    waves=cost.waves,
                    tile_efficiency=cost.tile_efficiency,
                )
            if om.extra.get("fused"):
                extra["epilogue"] = ",".join(om.extra["fused"])
            layers.append(
                LayerMetrics(
                    layer=name,
                    kind=op.kind.value,
                    cycles=cycles,
                    compute_cycles=compute_cycles,
                    stall_cycles=cycles - compute_cycles,
                    macs=macs,
                    utilization=util,
                    dram_read_bytes=cost.dram_read_bytes,
                    dram_write_bytes=cost.dram_write_bytes,
                    sram_read_bytes=cost.l2_bytes,
                    energy_pj=sum(breakdown.values()),
                    energy_breakdown_pj=breakdown,
                    extra=extra,
                )
            )
            for key, value in breakdown.items():
                totals[key] += value
            seconds_total += cost.seconds
            useful_macs += macs
            weighted_util += util * macs
            dram_bytes += cost.dram_read_bytes + cost.dram_write_bytes
        energy_pj = sum(totals.values())
        energy_mj = energy_pj * 1e-9
        latency_ms = seconds_total * 1e3
        batch = int(mapping.graph.meta.get("batch", 1) or 1)
        power_w = energy_pj * 1e-12 / seconds_total if seconds_total > 0 else 0.0
        ops_per_s = mapping.graph.flops / seconds_total if seconds_total > 0 else 0.0
        values = {
            "latency_cycles": seconds_total * clock_hz,
            "latency_ms": latency_ms,
            "throughput_ips": batch / seconds_total if seconds_total > 0 else 0.0,
            "energy_mj": energy_mj,
            "edp": energy_mj * latency_ms,
            "power_w": power_w,
            "utilization": weighted_util / useful_macs if useful_macs else 0.0,
            "dram_mb": dram_bytes / 1e6,
            "tops_per_w": (ops_per_s / 1e12) / power_w if power_w > 0 else 0.0,
        }
        if not math.isnan(arch.die_mm2):
            values["area_mm2"] = arch.die_mm2
        info = {
            "mapper": mapping.mapper,
            "gpu": arch.gpu,
            "display": arch.display,
            "math": arch.math,
            "kernels": kernels,
            "fused_ops": mapping.solver.get("fused_ops", 0),
            "exact": True,
            "notes": [
                ENERGY_NOTE,
                "elementwise ops after a GEMM run in its epilogue; softmax/layernorm are separate kernels",
                f"{kernels} kernels x {arch.launch_us:g} us launch gap",
            ],
        }
        return Metrics(values=values, energy_breakdown_pj=totals, layers=layers, info=info)


def roofline(arch: GpuArch) -> tuple[float, float]:
    """(peak operations/s of the GEMM math, DRAM bytes/s): the two roofs of the GPU's roofline plot."""
    return arch.peak_flops, arch.bytes_per_s


# ---------------------------------------------------------------------------------------------------
# Calibration against measured kernels
# ---------------------------------------------------------------------------------------------------
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
    from mappers.gpu import best_tile

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

    from mappers.gpu import best_tile

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
