"""What the hybrid screens each candidate from, the forest that learns the truth's correction of it, and
the rules that pick what to evaluate exactly (dominance by the exact front, front layers, the batch).

Two bases: the design-level feature contract (``surrogates.contract.features``: the family's closed form, one row per
design) and, where the truth mapper has a cheap mapper of the same search (the family table's
``layer_baselines``: the greedy schedule the CP-SAT systolic scheduler starts from), the layer-level contract:
one row per (design, layer), a design the sum of its layers. On the CP-SAT systolic space the layer baseline
alone is within 6 % of the truth's latency (the fold closed form: 45 %), so the forest only learns a small
residual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.pareto import pareto_mask
from dse.registry import layer_baseline, op_feature_set
from hwmodels.base import Metrics
from surrogates.contract.features import baseline_row
from surrogates.layer.model import LayerSurrogate, baseline_result, layer_frame
from surrogates.learning import DESIGN_TARGETS


@dataclass
class ClosedRow:
    """A candidate's cheap side: its contract feature row, its metric values and, where the closed form
    proves one (the RDU's section lower bound), the floor of the truth's latency as a share of its own;
    on the layer basis also the baseline's per-layer result (``layer.model.baseline_result``)."""

    features: list[float]
    metrics: dict[str, float]
    latency_floor: float = float("nan")
    layers: dict[str, Any] | None = None


def closed_row(metrics: Metrics) -> ClosedRow:
    """The ``ClosedRow`` of one design's closed-form Metrics (the floor is the solver's bound / value)."""
    features, values = baseline_row(metrics)
    solver = metrics.info.get("solver", {})
    bound, value = float(solver.get("bound") or 0.0), float(solver.get("value") or 0.0)
    floor = bound / value if 0.0 < bound <= value else float("nan")
    return ClosedRow(features, values, floor)


def layer_closed_row(baseline: PointEvaluator, point: Mapping[str, Any]) -> ClosedRow:
    """The ``ClosedRow`` of one point on the layer basis: the cheap mapper's layers and design metrics."""
    result = baseline_result(baseline, point)
    return ClosedRow([], dict(result["base_design"]), layers=result)


def screens_by_layer(template_kind: str, mapper: str | None) -> bool:
    """Whether the hybrid screens a space on the layer basis: the truth is an expensive mapper (not the
    family's closed form) with a cheap mapper of the same search to correct per layer."""
    return op_feature_set(template_kind, mapper) is None and layer_baseline(template_kind, mapper) is not None


@dataclass
class LayerRows:
    """Builds the candidates' layer rows (``layer.model.layer_frame``) for a fit or a prediction."""

    template_kind: str
    graph: Graph
    fixed: dict[str, Any]

    def frame(self, points: Sequence[Mapping[str, Any]], rows: Sequence[ClosedRow]) -> pd.DataFrame:
        """One frame of the candidates' layer rows, designs numbered 0..n-1 in the order given."""
        return layer_frame(self.template_kind, self.graph, "_", points, self.fixed, [row.layers for row in rows])

    def training_frame(
        self,
        points: Sequence[Mapping[str, Any]],
        rows: Sequence[ClosedRow],
        per_layer: Sequence[np.ndarray],
        truths: Sequence[Mapping[str, float]],
    ) -> pd.DataFrame:
        """The exact candidates' layer rows with their truth: per-layer (cycles, energy_pj), design metrics."""
        results = [
            {**row.layers, "truth_layer": layers, "design": {m: float(t.get(m, np.nan)) for m in DESIGN_TARGETS}}
            for row, layers, t in zip(rows, per_layer, truths)
        ]
        return layer_frame(self.template_kind, self.graph, "_", points, self.fixed, results)


def fit_layer_screen(data: pd.DataFrame, trees: int, seed: int) -> LayerSurrogate:
    """The layer surrogate of the exact candidates, on the screening forest (its trees are the spread)."""
    return LayerSurrogate.fit(data, "rf", seed, regressor=screening_forest(trees, seed))


def screening_forest(trees: int, seed: int) -> Any:
    """Extremely randomised trees, fully grown on every feature: on the few dozen exact designs the hybrid
    has, they rank the space better than a bagged forest (held-out R2 of the CP-SAT latency ratio 0.46
    vs 0.35 from 68 designs) and their spread is the uncertainty the optimistic bound uses."""
    from sklearn.ensemble import ExtraTreesRegressor

    return ExtraTreesRegressor(n_estimators=trees, min_samples_leaf=1, max_features=1.0, random_state=seed, n_jobs=1)


def pick_batch(
    chance: np.ndarray, ranks: np.ndarray, spread: np.ndarray, take: int, explore_share: float
) -> np.ndarray:
    """Which of the promising candidates to evaluate this round (indices into them).

    Most by the trees' chance of adding a front point (then the mean's front layer, then the spread), and
    ``explore_share`` of the batch to the least sure of the rest (widest spread across trees): those are
    where the forest learns most, and where a front point it underrates hides."""
    order = np.lexsort((-spread, ranks, -np.round(chance, 2)))
    if len(order) <= take:
        return order
    n_explore = int(round(explore_share * take))
    sure, rest = order[: take - n_explore], order[take - n_explore :]
    unsure = rest[np.argsort(-spread[rest], kind="stable")][:n_explore]
    return np.concatenate([sure, unsure]).astype(int)


def dominated_by(front: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which rows of ``values`` some row of ``front`` dominates (all objectives minimised)."""
    dominated = np.zeros(len(values), dtype=bool)
    for row in front:
        dominated |= np.all(row <= values, axis=1) & np.any(row < values, axis=1)
    return dominated


def layer_ranks(values: np.ndarray) -> np.ndarray:
    """Non-dominated layer of each row (0 = the front; all objectives minimised; NaN rows last)."""
    ranks = np.full(len(values), len(values), dtype=int)
    remaining = np.flatnonzero(~np.isnan(values).any(axis=1))
    layer = 0
    while remaining.size:
        on_front = remaining[pareto_mask(values[remaining], ["min"] * values.shape[1])]
        ranks[on_front] = layer
        remaining = np.setdiff1d(remaining, on_front)
        layer += 1
    return ranks
