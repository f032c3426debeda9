"""Pareto fronts and hypervolume over evaluated design points.

Everything here works on a minimise-everything scale: ``max`` objectives are
negated first, so one dominance rule serves every spec. The hypervolume itself
comes from moocore's exact algorithms (a maintained public library, C code);
we only add the normalisation that makes runs comparable. Fronts are kept
incrementally: a chunk of points is first screened against the running front
in one array step, and only what survives is merged point by point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import moocore
import numpy as np
import pandas as pd

from dse.objectives import Constraint, Objective, meets_constraints

HISTORY_CHUNK = 4096  # points screened against the running front at once
REFERENCE_FACTOR = 1.1  # reference point = 1.1 x the worst normalised value (i.e. 1.1 after scaling to [0, 1])


def to_minimisation(values: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    """Negate the ``max`` columns so that smaller is better everywhere."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[1] != len(directions):
        raise ValueError(f"values must be (n, {len(directions)}), got shape {values.shape}")
    unknown = [d for d in directions if d not in ("min", "max")]
    if unknown:
        raise ValueError(f"directions must be 'min' or 'max', got {unknown}")
    signs = np.array([1.0 if d == "min" else -1.0 for d in directions])
    return values * signs


def pareto_mask(values: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    """True for rows no other row dominates (equal rows both kept). Rows with NaN are never on the front.

    moocore's ``is_nondominated`` (its C dimension sweeps, O(n log n) in two and three objectives): a
    million points in a fraction of a second.
    """
    v = to_minimisation(values, directions)
    mask = np.zeros(len(v), dtype=bool)
    candidates = np.flatnonzero(~np.isnan(v).any(axis=1))
    if candidates.size == 0:
        return mask
    if v.shape[1] == 1:
        column = v[candidates, 0]
        mask[candidates[column == column.min()]] = True
        return mask
    mask[candidates] = moocore.is_nondominated(v[candidates], maximise=False, keep_weakly=True)
    return mask


def hypervolume(points_min: np.ndarray, reference: np.ndarray) -> float:
    """Exact hypervolume dominated by ``points_min`` (all objectives minimised) up to ``reference``.

    Points that do not dominate the reference add nothing and are dropped.
    """
    points = np.asarray(points_min, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if points.size == 0:
        return 0.0
    points = points.reshape(-1, reference.shape[0])
    inside = np.all(points <= reference, axis=1) & ~np.isnan(points).any(axis=1)
    if not inside.any():
        return 0.0
    return float(moocore.hypervolume(points[inside], ref=reference))


@dataclass(frozen=True)
class Normalisation:
    """Per-objective affine scaling to [0, 1] over a run's range (minimise scale)."""

    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def from_values(cls, points_min: np.ndarray) -> Normalisation:
        points = np.asarray(points_min, dtype=float)
        if points.size == 0 or np.isnan(points).all():
            raise ValueError("cannot normalise an empty set of points")
        return cls(lower=np.nanmin(points, axis=0), upper=np.nanmax(points, axis=0))

    def apply(self, points_min: np.ndarray) -> np.ndarray:
        span = np.where(self.upper > self.lower, self.upper - self.lower, 1.0)
        return (np.asarray(points_min, dtype=float) - self.lower) / span

    @property
    def reference(self) -> np.ndarray:
        """1.1 x the worst point, in normalised units (the worst maps to 1)."""
        return np.full(self.lower.shape, REFERENCE_FACTOR)


def feasible_mask(frame: pd.DataFrame, constraints: Sequence[Constraint] = ()) -> np.ndarray:
    """ok points whose metrics satisfy every constraint (``meets_constraints``; a missing metric is a violation)."""
    mask = np.ones(len(frame), dtype=bool)
    if "status" in frame:
        mask &= (frame["status"] == "ok").to_numpy()
    columns = {
        c.metric: pd.to_numeric(frame[c.metric], errors="coerce").to_numpy(dtype=float)
        for c in constraints
        if c.metric in frame
    }
    return mask & meets_constraints(columns, constraints)


def objective_matrix(frame: pd.DataFrame, objectives: Sequence[Objective]) -> np.ndarray:
    """(n, m) objective values on the minimise scale; NaN where a metric is missing."""
    columns = []
    for objective in objectives:
        if objective.metric in frame:
            column = pd.to_numeric(frame[objective.metric], errors="coerce").to_numpy(dtype=float)
        else:
            column = np.full(len(frame), np.nan)
        columns.append(column)
    values = np.column_stack(columns) if columns else np.empty((len(frame), 0))
    return to_minimisation(values, [o.direction for o in objectives])


def front_mask(
    frame: pd.DataFrame, objectives: Sequence[Objective], constraints: Sequence[Constraint] = ()
) -> np.ndarray:
    """Feasible Pareto-optimal rows of a points frame."""
    feasible = feasible_mask(frame, constraints)
    values = objective_matrix(frame, objectives)
    values[~feasible] = np.nan
    return pareto_mask(values, ["min"] * len(objectives))


def weakly_dominated(points: np.ndarray, front: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """True for rows of ``points`` that some row of ``front`` is no worse than in every objective."""
    out = np.zeros(len(points), dtype=bool)
    if len(front) == 0:
        return out
    for start in range(0, len(points), chunk):  # (chunk x front) booleans at a time, one objective after another
        part = points[start : start + chunk]
        no_worse = front[None, :, 0] <= part[:, None, 0]
        for k in range(1, points.shape[1]):  # a column at a time: numpy reduces a short last axis slowly
            no_worse &= front[None, :, k] <= part[:, None, k]
        out[start : start + chunk] = no_worse.any(axis=1)
    return out


class FrontTracker:
    """Incrementally maintained Pareto front (minimise scale), for progress bars and convergence curves."""

    def __init__(self, n_objectives: int):
        self.front = np.empty((0, n_objectives))

    def add(self, point_min: np.ndarray) -> bool:
        """Add one point; True when it joined the front."""
        p = np.asarray(point_min, dtype=float)
        if np.isnan(p).any():
            return False
        f = self.front
        if len(f) and np.any(np.all(f <= p, axis=1)):
            return False  # dominated by (or equal to) a front member
        dominated = np.all(p <= f, axis=1) & np.any(p < f, axis=1) if len(f) else np.zeros(0, dtype=bool)
        self.front = np.vstack([f[~dominated], p[None, :]])
        return True

    def add_many(self, points_min: np.ndarray) -> np.ndarray:
        """Add rows in order, as ``add`` one by one would; True where a row joined the front. Rows the
        front already holds or dominates (most of a large sweep) are set aside in one array step: a row
        dominated by the front before the chunk is dominated when its turn comes too."""
        points = np.asarray(points_min, dtype=float).reshape(-1, self.front.shape[1])
        joined = np.zeros(len(points), dtype=bool)
        for i in np.flatnonzero(~(weakly_dominated(points, self.front) | np.isnan(points).any(axis=1))):
            joined[i] = self.add(points[i])
        return joined

    def merge(self, points_min: np.ndarray) -> None:
        """Bring in many rows at once: the front becomes the one ``add_many`` reaches (the same rows, the first
        of equal ones kept), without its per-row flags; what a live front over large chunks needs."""
        points = np.asarray(points_min, dtype=float).reshape(-1, self.front.shape[1])
        keep = ~(weakly_dominated(points, self.front) | np.isnan(points).any(axis=1))
        if not keep.any():
            return
        combined = np.vstack([self.front, points[keep]])
        survivors = combined[pareto_mask(combined, ["min"] * combined.shape[1])]
        _, first = np.unique(survivors, axis=0, return_index=True)
        self.front = survivors[np.sort(first)]

    def __len__(self) -> int:
        return len(self.front)


def hypervolume_history(
    frame: pd.DataFrame, objectives: Sequence[Objective], constraints: Sequence[Constraint] = ()
) -> pd.DataFrame:
    """Normalised hypervolume and front size after each evaluation (by ``seq``), for convergence plots.

    Only ok, feasible points count. Objectives are scaled by the ranges of those points over the whole
    run, with the reference at 1.1 x the worst, so the last value is the run's final hypervolume.
    A ``feasible`` column in ``frame`` is used as is when present.
    """
    columns = ["seq", "hypervolume", "front_size"]
    if frame.empty or not objectives:
        return pd.DataFrame(columns=columns)
    ordered = frame.sort_values("seq") if "seq" in frame else frame
    feasible = (
        ordered["feasible"].to_numpy(dtype=bool, copy=True)
        if "feasible" in ordered
        else feasible_mask(ordered, constraints)
    )
    if "status" in ordered:
        feasible &= (ordered["status"] == "ok").to_numpy()
    values = objective_matrix(ordered, objectives)
    feasible &= ~np.isnan(values).any(axis=1)
    seqs = ordered["seq"].to_numpy() if "seq" in ordered else np.arange(len(ordered))
    if not feasible.any():
        return pd.DataFrame({"seq": seqs, "hypervolume": 0.0, "front_size": 0})
    scale = Normalisation.from_values(values[feasible])
    scaled = scale.apply(values)
    reference = scale.reference
    tracker = FrontTracker(len(objectives))
    volumes, sizes = np.zeros(len(scaled)), np.zeros(len(scaled), dtype=np.int64)
    changed = np.zeros(len(scaled), dtype=bool)
    for start in range(0, len(scaled), HISTORY_CHUNK):
        rows = np.flatnonzero(feasible[start : start + HISTORY_CHUNK]) + start
        for i in rows[~weakly_dominated(scaled[rows], tracker.front)]:
            if tracker.add(scaled[i]):  # the front moved: its hypervolume, held until it moves again
                changed[i] = True
                volumes[i], sizes[i] = hypervolume(tracker.front, reference), len(tracker)
    last = np.maximum.accumulate(np.where(changed, np.arange(len(scaled)), -1))
    volumes = np.where(last >= 0, volumes[np.maximum(last, 0)], 0.0)
    sizes = np.where(last >= 0, sizes[np.maximum(last, 0)], 0)
    return pd.DataFrame({"seq": seqs, "hypervolume": volumes, "front_size": sizes})


def knee_distances(front: pd.DataFrame, objectives: Sequence[Objective]) -> pd.Series:
    """Each Pareto design's distance to the utopia point once each objective is scaled to [0, 1], by point_id
    (designs missing an objective left out)."""
    names = [o.metric for o in objectives]
    usable = front.dropna(subset=names)
    scaled = np.zeros((len(usable), len(objectives)))
    for j, objective in enumerate(objectives):
        values = np.array([objective.to_min(float(v)) for v in usable[objective.metric]])
        span = values.max() - values.min() if len(values) else 0.0
        scaled[:, j] = (values - values.min()) / span if span > 0 else 0.0
    return pd.Series(np.sqrt((scaled**2).sum(axis=1)), index=usable["point_id"].astype(str).to_numpy())


def knee_point_id(front: pd.DataFrame, objectives: Sequence[Objective]) -> str | None:
    """The Pareto design closest to the utopia point once each objective is scaled to [0, 1].

    Why: it is the balanced compromise, a sensible default design to inspect first.
    """
    distances = knee_distances(front, objectives)
    return None if distances.empty else str(distances.index[int(np.argmin(distances.to_numpy()))])


def designs_near_knee(front: pd.DataFrame, objectives: Sequence[Objective], n: int) -> list[str]:
    """The point_ids of the ``n`` Pareto designs closest to the utopia point, the knee first."""
    distances = knee_distances(front, objectives)
    order = np.argsort(distances.to_numpy(), kind="stable")[:n]
    return [str(pid) for pid in distances.index[order]]
