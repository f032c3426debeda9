"""What a large run's charts draw one by one, and what they count per cell.

Why: a browser draws a few thousand WebGL markers with hover text in a moment, not a million SVG ones.
Above the report's threshold the trade-off charts draw every Pareto design and its neighbourhood as markers
and count every other successful design on a grid over the same axes (a density image).

The neighbourhood is the next few non-dominated layers behind the front: the designs that would be
Pareto-optimal if the front were taken away, then those behind them. Layers need no distance scale across
objectives with different units and log or linear axes, they are exact, and they are the designs an
architect looks at next (a front design ruled out for a reason outside the objectives, or a model a few
percent off). Only whole layers are drawn, so "layer k" means the same on every chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import moocore
import numpy as np
import pandas as pd

from dse.pareto import objective_matrix
from dse.report.data import ReportData

NEAR_FRONT_LAYERS = 3  # at most this many non-dominated layers behind the front are drawn as markers
NEAR_FRONT_LIMIT = 5_000  # only whole layers that keep the neighbourhood within this many designs
CONTEXT_SAMPLE = 1_000  # the 3-D view: an even sample of the other designs, drawn small and without hover
SAMPLED_LINES = 1_000  # parallel coordinates (and a one-objective run's charts): every Pareto design and a sample


@dataclass(frozen=True)
class LargeRunView:
    """A large run split for drawing: markers with hover for ``near`` (and the front), counts for ``cloud``."""

    near: pd.DataFrame  # feasible designs in the first ``near_layers`` non-dominated layers behind the front
    near_layers: int
    cloud: pd.DataFrame  # the objectives and feasibility of every other successful design, for density images
    sample: ReportData  # every Pareto design and an even sample of the rest (parallel coordinates, one objective)
    context: pd.DataFrame  # an even sample of ``cloud`` for the 3-D view


def large_run_view(
    data: ReportData, limit: int, *, near_limit: int = NEAR_FRONT_LIMIT, max_layers: int = NEAR_FRONT_LAYERS
) -> LargeRunView:
    """Split ``data`` for drawing; the sampled figures (parallel coordinates) draw ``limit`` or ``SAMPLED_LINES``
    points, whichever is fewer, every Pareto design among them (all of them if the front is larger): a browser
    without a GPU takes seconds per thousand parallel-coordinates lines."""
    near, layers = near_front_layers(data, near_limit, max_layers)
    drawn = np.zeros(len(data.points), dtype=bool)
    drawn[data.points.index.get_indexer(data.front.index)] = True
    drawn[data.points.index.get_indexer(near.index)] = True
    ok = np.zeros(len(data.points), dtype=bool)
    ok[data.points.index.get_indexer(data.ok.index)] = True
    feasible = np.zeros(len(data.points), dtype=bool)
    feasible[data.points.index.get_indexer(data.feasible.index)] = True
    rest = ok & ~drawn
    cloud = data.points.loc[rest, data.objective_names].assign(feasible=feasible[rest])
    sampled = drawn_points(data, min(limit, SAMPLED_LINES))
    sample = ReportData(sampled, data.objectives, data.constraints, data.param_names)
    return LargeRunView(near, layers, cloud, sample, cloud.iloc[even_picks(len(cloud), CONTEXT_SAMPLE)])


def near_front_layers(data: ReportData, limit: int, max_layers: int) -> tuple[pd.DataFrame, int]:
    """The feasible designs of the first non-dominated layers behind the front (whole layers, at most ``limit``
    designs and ``max_layers`` layers) and how many layers that is. Ties stay in one layer."""
    behind = ~data.feasible.index.isin(data.front.index)
    if len(data.objectives) < 2 or not behind.any():
        return data.feasible.iloc[0:0], 0
    values = objective_matrix(data.feasible[data.objective_names], data.objectives)
    remaining = np.flatnonzero(behind & ~np.isnan(values).any(axis=1))
    chosen: list[np.ndarray] = []
    taken = 0
    while len(chosen) < max_layers and remaining.size:
        on_layer = moocore.is_nondominated(values[remaining], keep_weakly=True)
        if taken + int(on_layer.sum()) > limit:
            break
        chosen.append(remaining[on_layer])
        taken += int(on_layer.sum())
        remaining = remaining[~on_layer]
    rows = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    return data.feasible.iloc[rows], len(chosen)


def even_picks(count: int, room: int) -> np.ndarray:
    """At most ``room`` positions of ``range(count)``, evenly spaced (the first and the last included)."""
    if count <= room:
        return np.arange(count)
    if room <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, count - 1, room).round().astype(np.int64))


def drawn_points(data: ReportData, limit: int) -> pd.DataFrame:
    """At most about ``limit`` rows of ``data.points``: every Pareto design, and the others evenly spaced in
    evaluation order (for the charts that draw a sample of a large run)."""
    front = np.zeros(len(data.points), dtype=bool)
    front[data.points.index.get_indexer(data.front.index)] = True
    others = np.flatnonzero(~front)
    others = others[even_picks(len(others), max(0, limit - int(front.sum())))]
    keep = np.sort(np.concatenate([np.flatnonzero(front), others]))
    return data.points.iloc[keep].reset_index(drop=True)


# --------------------------------------------------------------------------- counting designs per cell


def bin_edges(values: np.ndarray, *, log: bool, bins: int) -> np.ndarray:
    """``bins + 1`` cell edges over the finite values, evenly spaced on a log axis when ``log`` (as drawn)."""
    finite = values[np.isfinite(values) & ((values > 0) if log else True)]
    if finite.size == 0:
        return np.array([0.0, 1.0])
    low, high = float(finite.min()), float(finite.max())
    if low == high:  # one value: one cell around it
        pad = abs(low) * 0.05 or 0.5
        return np.array([low - pad, high + pad]) if not log else np.array([low / 1.1, high * 1.1])
    return np.geomspace(low, high, bins + 1) if log else np.linspace(low, high, bins + 1)


def cell_index(values: np.ndarray, edges: np.ndarray, *, log: bool) -> np.ndarray:
    """The cell of each value (the top edge belongs to the last cell); -1 for a value outside or NaN."""
    cells = len(edges) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        if log:
            position = (np.log10(values) - math.log10(edges[0])) / (math.log10(edges[-1]) - math.log10(edges[0]))
        else:
            position = (values - edges[0]) / (edges[-1] - edges[0])
    index = np.floor(np.nan_to_num(position, nan=-1.0, posinf=-1.0, neginf=-1.0) * cells).astype(np.int64)
    index[(position >= 1.0) & (position <= 1.0 + 1e-9)] = cells - 1
    index[(index < 0) | (index >= cells)] = -1
    return index


def cell_counts(
    x_index: np.ndarray, y_index: np.ndarray, x_cells: int, y_cells: int, feasible: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(designs, feasible designs) per cell as (y_cells, x_cells) arrays, rows along y as a heatmap takes them."""
    inside = (x_index >= 0) & (y_index >= 0)
    flat = y_index[inside] * x_cells + x_index[inside]
    size = x_cells * y_cells
    total = np.bincount(flat, minlength=size).reshape(y_cells, x_cells)
    good = np.bincount(flat[feasible[inside]], minlength=size).reshape(y_cells, x_cells)
    return total, good
