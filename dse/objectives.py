"""Objectives and constraints: small value types shared by the spec, the explorer and the report, and the one
feasibility rule (``meets_constraints``) the explorer, the run's files and the surrogates' screening all apply."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Objective:
    """``min latency_ms`` or ``max throughput_ips``."""

    metric: str
    direction: str  # "min" | "max"

    def __str__(self) -> str:
        return f"{self.direction} {self.metric}"

    def to_min(self, value: float) -> float:
        """The value on a minimise-everything scale (Pareto and hypervolume use this)."""
        return value if self.direction == "min" else -value


@dataclass(frozen=True)
class Constraint:
    """``metric`` must lie in [low, high]; either bound may be None."""

    metric: str
    low: float | None = None
    high: float | None = None

    def violation(self, metrics: Mapping[str, float]) -> float:
        """0 when satisfied, else how far outside the bound (relative), for optuna's constraints_func."""
        v = metrics.get(self.metric, math.nan)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return math.inf
        if self.high is not None and v > self.high:
            return (v - self.high) / max(abs(self.high), 1e-12)
        if self.low is not None and v < self.low:
            return (self.low - v) / max(abs(self.low), 1e-12)
        return 0.0

    def __str__(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{self.metric} >= {self.low:g}")
        if self.high is not None:
            parts.append(f"{self.metric} <= {self.high:g}")
        return " and ".join(parts)


def meets_constraints(metrics: Mapping[str, Any], constraints: Sequence[Constraint]) -> np.ndarray:
    """Whether metrics satisfy every constraint: the feasibility rule, in one place.

    A missing, None or NaN metric fails its constraint; a bound is inclusive. ``metrics`` maps names to the
    values of one point (a 0-d result: take ``bool()``) or to equal-length columns of many points (one flag
    each), so a stored record, a points frame and a batch of predictions are judged alike. A feasible point
    is an ok point that meets the constraints (``dse.pareto.feasible_mask`` adds the status).
    """
    met = np.True_
    for constraint in constraints:
        value = np.asarray(metrics.get(constraint.metric, math.nan), dtype=float)
        ok = ~np.isnan(value)
        if constraint.high is not None:
            ok &= value <= constraint.high
        if constraint.low is not None:
            ok &= value >= constraint.low
        met = met & ok
    return np.asarray(met)


def unproduced_metrics(
    columns: Sequence[str], objectives: Sequence[Objective], constraints: Sequence[Constraint]
) -> list[tuple[str, str]]:
    """(field, metric) of each objective or constraint whose metric the evaluated points do not carry: a metric
    the spec may name, but that this family's model does not give for this workload (an LLM serving metric of a
    graph that is no LLM, say)."""
    present = set(columns)
    named = [("objectives", o.metric) for o in objectives] + [
        (f"constraints.{c.metric}", c.metric) for c in constraints
    ]
    return [(field, metric) for field, metric in named if metric not in present]
