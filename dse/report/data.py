"""The data the report is built from: the points split the way every section needs them, and their formatting.

Numbers are shown the same way everywhere (tables, hovers, titles), so formatting lives here with the
frames: the knee design, the constraint words, which metric columns a table shows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dse.objectives import Constraint, Objective
from dse.pareto import knee_point_id
from hwmodels.base import METRICS

REQUIRED_POINT_COLUMNS = ("point_id", "seq", "status", "feasible", "pareto")

ENERGY_POINT_COLUMN = re.compile(r"^energy_(.+)_mj$")
AREA_POINT_COLUMN = re.compile(r"^area_(.+)_mm2$")


# --------------------------------------------------------------------------- formatting helpers


def metric_unit(name: str) -> str:
    """Unit of a metric column: from METRICS, mJ for the ``energy_<component>_mj`` breakdown, mm^2 for the
    ``area_<block>_mm2`` one."""
    if name in METRICS:
        return METRICS[name][0]
    if ENERGY_POINT_COLUMN.match(name):
        return "mJ"
    if AREA_POINT_COLUMN.match(name):
        return "mm^2"
    return ""


def metric_label(name: str) -> str:
    unit = metric_unit(name)
    return f"{name} [{unit}]" if unit else name


def format_value(value: object) -> str:
    """Numbers with ~4 significant digits; big counts with thousands separators; NaN as a dash."""
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        if v == 0:
            return "0"
        if 1e4 <= abs(v) < 1e15:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if isinstance(value, str):
        return value
    try:
        if pd.isna(value):  # pd.NA, NaT
            return "—"
    except (TypeError, ValueError):
        pass
    return str(value)


def is_categorical(series: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)


def as_bool(series: pd.Series) -> pd.Series:
    """feasible/pareto may arrive as bool, 0/1 or with NaN for failed points; NaN means False (vectorised: a
    large run has a million of them)."""
    if pd.api.types.is_bool_dtype(series) and not isinstance(series.dtype, pd.BooleanDtype):
        return series
    missing = series.isna().to_numpy()
    truth = series.where(~missing, False).astype(object).astype(bool).to_numpy()
    return pd.Series(truth & ~missing, index=series.index)


# --------------------------------------------------------------------------- the data the page is built from


@dataclass
class ReportData:
    """The points split the way every section needs them, computed once."""

    points: pd.DataFrame
    objectives: list[Objective]
    constraints: list[Constraint]
    param_names: list[str]
    ok: pd.DataFrame = field(init=False)
    feasible: pd.DataFrame = field(init=False)
    infeasible: pd.DataFrame = field(init=False)
    front: pd.DataFrame = field(init=False)
    failed: pd.DataFrame = field(init=False)
    knee_id: str | None = field(init=False)

    def __post_init__(self) -> None:
        pts = self.points
        is_ok = pts["status"].astype(str) == "ok"
        feasible = as_bool(pts["feasible"]) & is_ok
        pareto = as_bool(pts["pareto"]) & feasible
        self.ok = pts[is_ok]
        self.feasible = pts[feasible]
        self.infeasible = pts[is_ok & ~feasible]
        self.front = pts[pareto]
        self.failed = pts[~is_ok]
        self.knee_id = knee_point_id(self.front, self.objectives)

    @property
    def objective_names(self) -> list[str]:
        return [o.metric for o in self.objectives]


def violated_constraints(row: pd.Series, constraints: Sequence[Constraint]) -> list[str]:
    """The constraints one point breaks, in words (for its hover text)."""
    values = {c.metric: row.get(c.metric, math.nan) for c in constraints}
    return [constraint_words(c) for c in constraints if c.violation(values) > 0]


def constraint_words(constraint: Constraint) -> str:
    """``latency_ms ≤ 2 ms``: a constraint as the page shows it."""
    unit = metric_unit(constraint.metric)
    parts = []
    if constraint.low is not None:
        parts.append(f"≥ {format_value(float(constraint.low))} {unit}".rstrip())
    if constraint.high is not None:
        parts.append(f"≤ {format_value(float(constraint.high))} {unit}".rstrip())
    bound = " and ".join(parts) if parts else "unbounded"
    return f"{constraint.metric} {bound}"


def count_violators(frame: pd.DataFrame, constraint: Constraint) -> int:
    """Points outside the bound or without a value (as Constraint.violation sees it), vectorised."""
    if constraint.metric not in frame.columns:
        return len(frame)
    values = pd.to_numeric(frame[constraint.metric], errors="coerce")
    outside = values.isna()
    if constraint.high is not None:
        outside |= values > constraint.high
    if constraint.low is not None:
        outside |= values < constraint.low
    return int(outside.sum())


def metric_columns(points: pd.DataFrame, objectives: Sequence[str]) -> list[str]:
    """Objectives first, then every other METRICS column, then the energy and area breakdowns, if present and
    not all NaN."""
    present = [m for m in METRICS if m in points.columns and points[m].notna().any()]
    energy = breakdown_columns(points, ENERGY_POINT_COLUMN)
    area = breakdown_columns(points, AREA_POINT_COLUMN)
    return list(dict.fromkeys([*objectives, *present, *energy, *area]))


def breakdown_columns(points: pd.DataFrame, pattern: re.Pattern[str]) -> list[str]:
    """The breakdown columns (``energy_<component>_mj`` or ``area_<block>_mm2``) present and not all NaN."""
    return sorted(c for c in points.columns if pattern.match(c) and c not in METRICS and points[c].notna().any())


def distance_to_knee(frame: pd.DataFrame, data: ReportData) -> np.ndarray:
    """Distance in normalised objective space to the knee (0 for the knee itself)."""
    if data.knee_id is None or data.knee_id not in set(frame["point_id"].astype(str)):
        return np.arange(len(frame), dtype=float)
    scaled = []
    for objective in data.objectives:
        values = frame[objective.metric].to_numpy(dtype=float)
        span = np.nanmax(values) - np.nanmin(values)
        scaled.append((values - np.nanmin(values)) / span if span > 0 else np.zeros_like(values))
    matrix = np.nan_to_num(np.stack(scaled, axis=1), nan=1e9)
    knee_row = matrix[(frame["point_id"].astype(str) == data.knee_id).to_numpy()][0]
    return np.sqrt(((matrix - knee_row) ** 2).sum(axis=1))
