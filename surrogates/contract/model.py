"""Design-level surrogates on the feature contract (``surrogates.contract.features``), for every template.

A dataset of the contract has one row per (workload, design): the contract's features, the closed
form's metrics (``base_<metric>``) and the truth (``design_<metric>``) from the expensive evaluator --
the spec's own mapper (CP-SAT, the RDU section solver, the multicore scheduler) run on the explorer's
executors. ``ContractSurrogate`` learns ``log(truth / closed form)`` (``learning.to_target``) per metric with
one multi-output regressor; predicting costs one closed-form evaluation per design (milliseconds) instead of a solve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.registry import family
from surrogates.contract.features import (
    CONTRACT_METRICS,
    GRAPH_FEATURES,
    ClosedForm,
    ContractRows,
    baseline_feature_names,
    baseline_row,
    contract_features,
    contract_schema,
    graph_statistics,
    param_feature_names,
    param_features,
)
from surrogates.learning import PARAM_PREFIX, from_target, make_design_regressor, save_model, to_target, versions

FEATURE_SET = "contract"
# counts that are 0 on many designs (FPGA DSPs: LUT-built multipliers): learned as log((truth + 1) / (closed
# form + 1)), so a design the closed form gives 0 and synthesis does not is a finite target, not log(x / 1e-30)
COUNT_OFFSET = {"dsp": 1.0}


@dataclass
class ContractTask:
    """Picklable executor task: the truth (the spec's evaluator) and the closed form of one point."""

    truth: PointEvaluator
    closed_form: ClosedForm

    def __post_init__(self) -> None:
        # the closed form follows the truth's objective (a caller that built it without the options)
        if not self.closed_form.options and self.truth.mapper_options:
            cf = self.closed_form
            self.closed_form = ClosedForm(cf.graph, cf.template_kind, cf.fixed, dict(self.truth.mapper_options))

    def __call__(self, point: Mapping[str, Any]) -> tuple[dict[str, float], list[float], dict[str, float]]:
        metrics = self.truth(point)
        values = {m: float(metrics.values[m]) for m in CONTRACT_METRICS if m in metrics.values}
        row, base = baseline_row(self.closed_form(point))
        return values, row, base


def contract_frame(
    template_kind: str,
    graph: Graph,
    workload: str,
    points: Sequence[Mapping[str, Any]],
    fixed: Mapping[str, Any],
    results: Sequence[tuple[dict[str, float], list[float], dict[str, float]]],
) -> pd.DataFrame:
    """Dataset rows (one per design) from ``ContractTask`` results."""
    template = family(template_kind).template()
    n = len(points)
    stats = graph_statistics(graph)
    names = list(GRAPH_FEATURES) + param_feature_names(template) + baseline_feature_names()
    matrix = np.hstack(
        [
            np.tile([stats[g] for g in GRAPH_FEATURES], (n, 1)),
            param_features(template, points, fixed),
            np.array([r[1] for r in results], dtype=float).reshape(n, -1),
        ]
    )
    frame = pd.DataFrame(matrix, columns=names)
    frame.insert(0, "workload", workload)
    frame.insert(1, "design", np.arange(n))
    frame["template"] = template_kind
    frame["feature_set"] = FEATURE_SET
    for m in CONTRACT_METRICS:
        frame[f"base_{m}"] = [r[2].get(m, np.nan) for r in results]
        frame[f"design_{m}"] = [r[0].get(m, np.nan) for r in results]
    for name in points[0] if points else []:
        frame[PARAM_PREFIX + name] = np.array([p.get(name) for p in points], dtype=object)
    return frame


@dataclass
class ContractSurrogate:
    """A design-level regressor of ``log(truth / closed form)`` for the metrics the closed form gives."""

    kind: str
    template_kind: str
    metric_names: list[str]
    regressor: Any
    schema: dict[str, Any]
    level: str = "contract"
    versions: dict[str, str] = field(default_factory=versions)
    trained_on: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    baseline_options: dict[str, Any] = field(default_factory=dict)  # the closed form's options (objective)
    corrected: list[bool] | None = None  # per metric: the learned correction kept (None: all)

    @classmethod
    def fit(cls, data: pd.DataFrame, kind: str = "rf", seed: int = 0, regressor: Any = None) -> ContractSurrogate:
        kinds = sorted(data["template"].unique())
        if len(kinds) != 1:
            raise UserError(f"a contract dataset must hold one template, this one holds {', '.join(kinds)}")
        schema = contract_schema(kinds[0])
        names = [
            m
            for m in CONTRACT_METRICS
            if np.isfinite(data[f"base_{m}"].to_numpy(float)).all() and np.isfinite(data[f"design_{m}"]).all()
        ]
        if not names:
            raise UserError("no metric has both a closed-form value and a truth on every design of the dataset")
        targets = np.column_stack(
            [
                to_target(
                    data[f"design_{m}"].to_numpy(float), data[f"base_{m}"].to_numpy(float), COUNT_OFFSET.get(m, 0.0)
                )
                for m in names
            ]
        )
        x = np.nan_to_num(data[schema["features"]].to_numpy(float), nan=-1.0)
        corrected = correction_helps(x, targets, data["workload"].to_numpy(), kind, seed)
        regressor = regressor if regressor is not None else make_design_regressor(kind, seed)  # hybrid: its own
        regressor.fit(x, targets)
        model = cls(kind, kinds[0], names, regressor, schema, trained_on=sorted(data["workload"].unique()))
        model.corrected = corrected
        return model

    # ------------------------------------------------------------------------------------- predicting
    def _values(self, x: np.ndarray, base: Mapping[str, np.ndarray], regressors: Sequence[Any]) -> list[np.ndarray]:
        """(designs, metrics) predictions once per regressor."""
        x = np.nan_to_num(x, nan=-1.0)
        base_block = np.column_stack([np.asarray(base[m], dtype=float) for m in self.metric_names])
        offset = np.array([COUNT_OFFSET.get(m, 0.0) for m in self.metric_names])
        out = []
        for regressor in regressors:
            ratios = np.asarray(regressor.predict(x)).reshape(len(x), len(self.metric_names))
            ratios = ratios * np.asarray(getattr(self, "corrected", None) or [True] * len(self.metric_names))
            out.append(from_target(ratios, base_block, offset))
        return out

    def predict_frame(self, data: pd.DataFrame) -> pd.DataFrame:
        """Per-design predictions for the rows of a contract dataset (one row per design)."""
        base = {m: data[f"base_{m}"].to_numpy(float) for m in self.metric_names}
        (values,) = self._values(data[self.schema["features"]].to_numpy(float), base, [self.regressor])
        frame = pd.DataFrame(values, columns=self.metric_names)
        return pd.concat([data[["workload", "design"]].reset_index(drop=True), frame], axis=1)

    def _rows(self, graph: Graph, template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Any) -> ContractRows:
        if template_kind != self.template_kind:
            raise UserError(f"this surrogate was trained for template {self.template_kind}, not {template_kind}")
        rows = contract_features(graph, template_kind, points, fixed, options=getattr(self, "baseline_options", {}))
        if rows.failed.any():
            index = int(np.argmax(rows.failed))
            raise ValueError(f"the closed form refused point {dict(points[index])}")
        return rows

    def predict_designs(
        self, graph: Graph, template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Any, ops: Any = None
    ) -> pd.DataFrame:
        """Metrics of whole designs (one row per point)."""
        rows = self._rows(graph, template_kind, points, fixed)
        (values,) = self._values(rows.matrix, rows.baseline, [self.regressor])
        return pd.DataFrame(values, columns=self.metric_names)

    def tree_predictions(
        self, graph: Graph, template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Any, ops: Any = None
    ) -> np.ndarray:
        """Per-tree predictions of a forest (trees, points, metrics): the hybrid's uncertainty."""
        if self.kind != "rf":
            raise UserError(f"uncertainty needs a random forest surrogate (kind rf), not {self.kind}")
        rows = self._rows(graph, template_kind, points, fixed)
        return np.stack(self._values(rows.matrix, rows.baseline, self.regressor.estimators_))

    def tree_predictions_of(self, rows: ContractRows) -> np.ndarray:
        """``tree_predictions`` from contract rows already computed (the hybrid caches them per point)."""
        return np.stack(self._values(rows.matrix, rows.baseline, self.regressor.estimators_))

    def save(self, path: str | Path) -> Path:
        return save_model(self, path)

    def check_schema(self, where: str) -> None:
        expected = contract_schema(self.template_kind)
        if self.schema != expected:
            gone = [f for f in self.schema["features"] if f not in expected["features"]]
            added = [f for f in expected["features"] if f not in self.schema["features"]]
            raise UserError(
                f"its feature contract does not match this version of dse (unknown {gone}, missing {added}); "
                "retrain it on a dataset built with this version",
                where=where,
            )


def correction_helps(x: np.ndarray, targets: np.ndarray, workloads: np.ndarray, kind: str, seed: int) -> list[bool]:
    """Per metric, whether the learned correction beats the closed form alone on workloads it did not see
    (leave one workload out, mean |log error|), measured on the training data only. A metric whose residual
    is noise across networks (a solver stopped by its time limit) keeps the closed form instead of a
    correction that extrapolates. Fewer than three workloads: every correction is kept."""
    groups = np.unique(workloads)
    if len(groups) < 3:
        return [True] * targets.shape[1]
    predicted = np.zeros_like(targets)
    for group in groups:
        test = workloads == group
        regressor = make_design_regressor(kind, seed)
        regressor.fit(x[~test], targets[~test])
        predicted[test] = np.asarray(regressor.predict(x[test])).reshape(int(test.sum()), targets.shape[1])
    learned = np.abs(predicted - targets).mean(axis=0)
    alone = np.abs(targets).mean(axis=0)
    return [bool(a < b) for a, b in zip(learned, alone)]


def baseline_metric_accuracy(data: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(truth, closed form) per metric of a contract dataset: what the learning starts from."""
    out = {}
    for m in CONTRACT_METRICS:
        truth, base = data[f"design_{m}"].to_numpy(float), data[f"base_{m}"].to_numpy(float)
        if np.isfinite(truth).any() and np.isfinite(base).any():
            out[m] = (truth, base)
    return out


def is_contract(data: pd.DataFrame) -> bool:
    return "feature_set" in data.columns and bool((data["feature_set"] == FEATURE_SET).all())
