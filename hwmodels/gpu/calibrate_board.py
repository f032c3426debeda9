"""Board power measured per kernel on a GPU (``hwmodels/data/gpu_power_*.csv``, ``tools/gpu_power_measure.py``):
where a GPU has such a file, its designs' energy follows it instead of the catalog estimate.

Why: a GPU baseline's energy is otherwise a static share of TDP plus the rest by utilization (an ASSUMPTION).
The power CSV holds GEMMs per precision and a DRAM-bound copy, each run back to back while NVML sampled the
board. Each kernel kind gets ``static_w + dynamic_w x activity`` (activity = max(compute, DRAM) utilization
of the row at its measured time per call, what the model scales power with) by non-negative least squares:
GEMMs of the design's precision for ``gemm``, the copies for ``elementwise`` (the memory-bound kernels the
model runs alone: GELU, residual adds). softmax and layernorm keep what they had (calibration or catalog).
A file's rows apply to the GPU of their ``gpu`` column; with no file, nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from hwmodels.catalogs.gpu_tuning import KernelPower
from hwmodels.gpu.calibrate_rows import Measurement, read_measurements, row_work
from hwmodels.gpu.cost import activity
from templates.gpu import PRECISION_BYTES, GpuArch

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
POWER_FILES = "gpu_power_*.csv"
MIN_ROWS = 2  # a line needs two points; a kind with fewer keeps what it had
MEMORY_BOUND_OPS = {"copy": "elementwise"}  # power-CSV op -> the model's kernel kind it stands for
# a kind whose rows span less activity than this cannot separate its static from its dynamic watts (the copies all
# run near full DRAM rate): its static is the GEMMs' (the same board at the same clocks), its dynamic fitted
MIN_ACTIVITY_SPAN = 0.2


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(static, dynamic) >= 0 minimising the squared error of ``static + dynamic x activity`` over
    (activity, watts) points: the unconstrained least squares, else the best with one term at zero."""
    a = np.array([p[0] for p in points], dtype=float)
    w = np.array([p[1] for p in points], dtype=float)
    design = np.stack([np.ones_like(a), a], axis=1)
    (static, dynamic), *_ = np.linalg.lstsq(design, w, rcond=None)
    if static >= 0 and dynamic >= 0:
        return float(static), float(dynamic)
    candidates = [(float(max(w.mean(), 0.0)), 0.0)]  # dynamic at zero
    if a @ a > 0:
        candidates.append((0.0, float(max((a @ w) / (a @ a), 0.0))))  # static at zero
    return min(candidates, key=lambda c: float(np.sum((c[0] + c[1] * a - w) ** 2)))


def row_activity(m: Measurement, arch: GpuArch, elem_bytes: int | None = None) -> float:
    """max(compute, DRAM) utilization of a row during its power run (its work over its time per call);
    ``elem_bytes``: the row's element size where it differs from the design's precision (a copy)."""
    flops, dram_bytes = row_work(m, elem_bytes or arch.elem_bytes)
    peak = arch.peak_flops if m.kind == "GEMM" else arch.fp32_tflops * 1e12
    return max(activity(flops, dram_bytes, m.power_call_s, arch, peak))


@lru_cache(maxsize=8)
def power_rows(gpu: str, folder: str) -> tuple[Measurement, ...]:
    """The rows with a power reading for catalog GPU ``gpu`` in every power CSV of ``folder``."""
    rows: list[Measurement] = []
    for path in sorted(Path(folder).glob(POWER_FILES)):
        rows += [m for m in read_measurements(path) if m.gpu == gpu and m.power_w > 0 and m.power_call_s > 0]
    return tuple(rows)


def board_power(arch: GpuArch, folder: str | None = None) -> tuple[KernelPower, ...]:
    """The kernel kinds whose power the CSVs measure for this GPU at this precision, fitted."""
    return _fitted(arch.gpu, arch.precision, folder or str(DATA_DIR), arch)


@lru_cache(maxsize=64)
def _fitted(gpu: str, precision: str, folder: str, arch: GpuArch) -> tuple[KernelPower, ...]:
    rows = power_rows(gpu, folder)
    points: dict[str, list[tuple[float, float]]] = {}
    for m in rows:
        if m.kind == "GEMM" and m.precision == precision:
            points.setdefault("gemm", []).append((row_activity(m, arch), m.power_w))
        elif m.op in MEMORY_BOUND_OPS and m.precision in PRECISION_BYTES:
            kind = MEMORY_BOUND_OPS[m.op]
            points.setdefault(kind, []).append((row_activity(m, arch, PRECISION_BYTES[m.precision]), m.power_w))
    fits = {kind: fit_line(pairs) for kind, pairs in points.items() if len(pairs) >= MIN_ROWS}
    for kind, pairs in points.items():
        span = max(a for a, _ in pairs) - min(a for a, _ in pairs)
        if kind in fits and kind != "gemm" and "gemm" in fits and span < MIN_ACTIVITY_SPAN:
            fits[kind] = (fits["gemm"][0], fit_dynamic(pairs, fits["gemm"][0]))
    return tuple(KernelPower(kind, *fits[kind], len(points[kind])) for kind in sorted(fits))


def fit_dynamic(points: Sequence[tuple[float, float]], static: float) -> float:
    """dynamic >= 0 minimising the squared error of ``static + dynamic x activity`` with ``static`` given."""
    a = np.array([p[0] for p in points], dtype=float)
    w = np.array([p[1] for p in points], dtype=float)
    return float(max((a @ (w - static)) / (a @ a), 0.0)) if a @ a > 0 else 0.0


def with_board_power(arch: GpuArch, folder: str | None = None) -> GpuArch:
    """``arch`` whose tuning has the measured board power of the CSVs (their kinds replace the calibration's)."""
    measured = board_power(arch, folder)
    if not measured:
        return arch
    kinds = {p.kind for p in measured}
    kept = tuple(p for p in arch.tuning.power if p.kind not in kinds)
    return replace(arch, tuning=replace(arch.tuning, power=kept + measured))


def board_power_source(gpu: str, folder: str | None = None) -> str:
    """Where a GPU's measured board power comes from (the CSV rows' source), or '' when it has none."""
    rows = power_rows(gpu, folder or str(DATA_DIR))
    return rows[0].source if rows else ""
