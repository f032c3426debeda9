"""What a GPU calibration records: the model's error before and after the fit, and the stored entry.

Why a module of its own: ``hwmodels.gpu.calibrate`` fits; this runs the fit, the catalog start and k-fold
cross-validation on the same rows (``evaluate``) and turns the result into the entry of
``hwmodels/data/gpu_calibration.json`` with its provenance (``calibration_entry``), for ``tools/gpu_calibrate.py``
and ``tools/gpu_measure.py --fit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from hwmodels.catalogs.gpu_tuning import Calibration, KernelPower, default_tuning, starting_tuning
from hwmodels.gpu.calibrate import (
    LONG_ROW_CHOICES,
    LOSS,
    LOSS_SCALE,
    CrossValidation,
    Fit,
    cross_validate,
    fit,
    mape_by_kind,
    predict_seconds,
    with_tuning,
)
from hwmodels.gpu.calibrate_rows import Measurement
from templates.gpu import GpuArch


@dataclass
class Report:
    """Errors per op kind on the same rows: as shipped (catalog, graph execution), catalog defaults timed as
    the rows were taken, the fit on all rows, and k-fold cross-validated."""

    shipped: dict[str, float]
    catalog: dict[str, float]
    fitted: dict[str, float]
    cross_validated: dict[str, float]
    fit: Fit
    cv: CrossValidation
    rows: dict[str, int]


def evaluate(rows: Sequence[Measurement], arch: GpuArch, k: int = 5) -> Report:
    """Fit ``arch`` (a catalog GPU) on ``rows`` and measure the errors the calibration file records."""
    catalog = with_tuning(arch, default_tuning())
    start = with_tuning(arch, starting_tuning(arch.gpu))
    shipped = [predict_seconds(replace(m, method="graph"), catalog) for m in rows]
    plain = [predict_seconds(m, catalog) for m in rows]
    fitted = fit(rows, start)
    cv = cross_validate(rows, start, k)
    counts: dict[str, int] = {}
    for m in rows:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return Report(
        shipped=mape_by_kind(rows, shipped),
        catalog=mape_by_kind(rows, plain),
        fitted=fitted.fit_mape,
        cross_validated=cv.mape,
        fit=fitted,
        cv=cv,
        rows=counts,
    )


def calibration_entry(
    report: Report, gpu: str, precision: str, source: str, k: int, taken: str = "", power: tuple[KernelPower, ...] = ()
) -> Calibration:
    """What ``hwmodels/data/gpu_calibration.json`` stores for one GPU: constants, provenance (``taken``: which
    files and how they were measured), errors, and board power per kernel kind where it was measured
    (``power``: ``hwmodels.gpu.calibrate_power.fit_power``)."""
    method = f"data: {taken}; " if taken else ""
    method += (
        f"bounded least squares (scipy.optimize.least_squares, {LOSS} loss, scale {LOSS_SCALE}) on "
        f"log(model/measured) over {sum(report.rows.values())} rows, the long-row threshold picked from "
        f"{list(map(int, LONG_ROW_CHOICES))} bytes; error = {k}-fold cross-validation (stratified by op kind); "
        "'uncalibrated' = catalog assumptions as shipped (graph execution, no host cost)"
    )
    if report.fit.notes:
        method += "; " + "; ".join(report.fit.notes)
    if power:
        kinds_measured = ", ".join(f"{p.kind} ({p.rows} rows)" for p in power)
        method += f"; energy: board power (NVML) fitted as static + dynamic x utilization for {kinds_measured}"
    kinds = [kind for kind in ("GEMM", "softmax", "layernorm", "GELU") if kind in report.rows]
    return Calibration(
        gpu=gpu,
        precision=precision,
        source=source,
        method=method,
        tuning=replace(report.fit.tuning, power=tuple(power)),
        cv_mape={kind: round(report.cross_validated[kind], 2) for kind in kinds},
        uncalibrated_mape={kind: round(report.shipped[kind], 2) for kind in kinds},
        rows={kind: report.rows[kind] for kind in kinds},
    )
