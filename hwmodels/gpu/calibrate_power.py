"""Board power per kernel kind from measured kernels: what makes a GPU's energy measured, not catalog.

Why: without a measurement the GPU model's energy is an estimate (a static share of TDP plus the rest by
utilization, ``hwmodels.gpu.model.kernel_power_w``). ``tools/gpu_measure.py --power`` samples the board power
(NVML) while each call runs back to back and writes it with the row (``power_w``, ``power_call_s``); here each
kernel kind gets ``static_w + dynamic_w x activity`` by non-negative least squares
(``calibrate_board.fit_line``), activity being the row's max(compute, DRAM) utilization at its time per call in
that run (the same quantity the model scales with), so the fitted kind replaces the catalog estimate for that
GPU (``GpuTuning.power``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hwmodels.catalogs.gpu_tuning import KernelPower
from hwmodels.gpu.calibrate import KERNEL_OF, Measurement
from hwmodels.gpu.calibrate_board import fit_line
from hwmodels.gpu.calibrate_board import row_activity as row_activity
from templates.gpu import GpuArch

MIN_ROWS = 2  # a line needs two points; a kind with fewer keeps the catalog estimate


def power_rows(rows: Sequence[Measurement]) -> list[Measurement]:
    """The rows that carry a power reading."""
    return [m for m in rows if m.power_w > 0 and m.power_call_s > 0]


def fit_power(rows: Sequence[Measurement], arch: GpuArch) -> tuple[KernelPower, ...]:
    """``static_w`` and ``dynamic_w`` per kernel kind (>= 0 W), from the rows with power readings."""
    points: dict[str, list[tuple[float, float]]] = {}
    for m in power_rows(rows):
        points.setdefault(KERNEL_OF[m.kind], []).append((row_activity(m, arch), m.power_w))
    out = []
    for kind, pairs in sorted(points.items()):
        if len(pairs) < MIN_ROWS:
            continue
        out.append(KernelPower(kind, *fit_line(pairs), len(pairs)))
    return tuple(out)


def power_errors(rows: Sequence[Measurement], arch: GpuArch, power: Sequence[KernelPower]) -> dict[str, float]:
    """Mean absolute error (%) of the fitted power per kernel kind on the rows with readings."""
    fitted = {p.kind: p for p in power}
    errors: dict[str, list[float]] = {}
    for m in power_rows(rows):
        p = fitted.get(KERNEL_OF[m.kind])
        if p is not None:
            predicted = p.static_w + p.dynamic_w * row_activity(m, arch)
            errors.setdefault(p.kind, []).append(abs(predicted / m.power_w - 1.0) * 100.0)
    return {kind: float(np.mean(values)) for kind, values in errors.items()}
