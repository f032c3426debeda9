"""Objectives and constraints: small value types shared by the spec, the explorer and the report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


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
