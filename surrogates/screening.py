"""``evaluator: hybrid``: screen the space with a random forest, evaluate exactly only what may lie on the front.

It evaluates a stratified initial sample exactly, fits a per-op forest on those designs' ops (a few
designs give hundreds of op rows), predicts every candidate with every tree, and evaluates exactly
the candidates whose *optimistic* prediction (mean - kappa * spread across trees, in log space) is
feasible and not dominated by the exact front; refit, repeat until no candidate is promising or the
exact budget is spent. The unevaluated rest is stored as predicted (``exact = false``); since every
one of them is dominated by an exact point even optimistically, the front the explorer computes is
made of exact points. ``HybridSweep`` is a ``dse.explore.Sweep`` that drives this loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.executors import Executor
from dse.explore import Display, Sweep
from dse.search import Observation
from dse.store import FlatMetricsEvaluator, PointRecord
from hwmodels.base import Metrics
from surrogates import features as feat
from surrogates.contract import CONTRACT_METRICS, ClosedForm, ContractRows, baseline_row
from surrogates.contract_model import ContractSurrogate, contract_frame, load_surrogate
from surrogates.dataset import WorkloadSpec, design_rows, feature_set
from surrogates.model import SurrogateModel, metrics_from_totals

PREDICTED_METRICS = ("latency_cycles", "latency_ms", "energy_mj", "area_mm2", "power_w", "edp", "throughput_ips")


def check_predictable(metrics: Sequence[str], evaluator: str, where: str | None = None, contract: bool = False) -> None:
    """Refuse objectives/constraints the surrogates do not predict (the contract's closed-form metrics
    for a contract surrogate, ``PREDICTED_METRICS`` for the systolic one)."""
    allowed = CONTRACT_METRICS if contract else PREDICTED_METRICS
    missing = [m for m in metrics if m not in allowed]
    if missing:
        raise UserError(
            f"evaluator {evaluator} predicts only {', '.join(allowed)}; "
            f"{', '.join(missing)} needs evaluator: analytical",
            where=where,
        )


@dataclass
class HybridEvaluator:
    """``evaluator: hybrid``: the exact evaluator plus the knobs of the screening loop.

    ``initial_fraction`` of the candidates (at least ``initial_min``) is evaluated exactly first;
    each round evaluates up to ``batch_fraction`` more; exact evaluations stop at
    ``max_exact_fraction``. ``kappa`` scales the forest's spread into the optimistic bound.
    ``model_path`` (optional) is a trained surrogate that picks the initial sample around its
    predicted front instead of at random.
    """

    exact: PointEvaluator
    model_path: str | None = None
    initial_fraction: float = 0.05
    initial_min: int = 8
    batch_fraction: float = 0.02
    max_exact_fraction: float = 0.2
    kappa: float = 1.0
    trees: int = 48
    seed: int = 0

    def __call__(self, point: Mapping[str, Any]) -> Metrics:
        return self.exact(point)


@dataclass
class ExactTask:
    """Worker task: the exact Metrics of a point, flattened for the store, plus its per-op targets."""

    evaluator: Any
    representatives: list[str]

    def __call__(self, point: Mapping[str, Any]) -> tuple[Any, np.ndarray]:
        metrics = self.evaluator(point)
        by_name = {layer.layer: layer for layer in metrics.layers}
        per_op = np.array([[by_name[n].cycles, by_name[n].energy_pj] for n in self.representatives], dtype=float)
        flat = FlatMetricsEvaluator(lambda _p, m=metrics: m)(point)
        return flat, per_op


@dataclass
class Candidate:
    """A proposed point of the hybrid sweep: exact, failed or (so far) predicted."""

    key: str
    point: dict[str, Any]
    exact: bool = False
    failed: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    per_op: np.ndarray | None = None


class HybridSweep(Sweep):
    """Screen with a forest, evaluate exactly what may be on the front, store the rest as predicted."""

    def run(self, pool: Executor, evaluator: Any, display: Display) -> None:
        hybrid: HybridEvaluator = getattr(evaluator, "evaluator", evaluator)
        exact = hybrid.exact
        self._contract = feature_set(exact.template_kind, exact.mapper_name) == "contract"
        metrics = [o.metric for o in self.objectives] + [c.metric for c in self.constraints]
        check_predictable(metrics, "hybrid", contract=self._contract)
        self._hybrid = hybrid
        self._ops = None if self._contract else feat.op_table(exact.graph)
        self._names = [] if self._contract else self._ops.names
        self._closed_form = ClosedForm(exact.graph, exact.template_kind, dict(exact.fixed)) if self._contract else None
        self._contract_rows: dict[str, tuple[list[float], dict[str, float]]] = {}
        self._task = ExactTask(exact, self._names)
        self._candidates: dict[str, Candidate] = {}
        self.exact_rounds = 0
        budget = self.strategy.budget
        self._cap = max(hybrid.initial_min, math.ceil(hybrid.max_exact_fraction * budget))
        n0 = min(self._cap, max(hybrid.initial_min, math.ceil(hybrid.initial_fraction * budget)))
        self._reuse_stored()
        if self.strategy.replays:  # a sampler: exact answers for its first proposals, then predictions
            first = self.strategy.ask(n0)
            self._add(first)
            self._evaluate_exact([self._candidates[self.key(p.point)] for p in first], pool, display)
            self.strategy.tell(first, [self._observation(self.key(p.point)) for p in first])
            self.proposed = len(first)
            while self.proposed < budget:
                batch = self.strategy.ask(min(64, budget - self.proposed))
                if not batch:
                    break
                self._add(batch)
                self._predict()
                self.strategy.tell(batch, [self._observation(self.key(p.point)) for p in batch])
                self.proposed += len(batch)
        else:
            proposals = self.strategy.ask(budget)
            self.proposed = len(proposals)
            self._add(proposals)
            self._evaluate_exact(self._initial_sample(n0), pool, display)
        self._refine(pool, display)
        self._predict()  # candidates the loop never predicted (the cap was reached by the initial sample)
        self._store_predictions(display)
        n_exact, total = self._n_exact(), len(self._candidates)
        self.notes = [
            f"hybrid: {n_exact} of {total} candidates evaluated exactly ({100 * n_exact / max(1, total):.1f} %) "
            f"over {self.exact_rounds} refinement rounds; {self.predicted} stored as predicted (exact = false)"
            + ("; stopped at the exact-evaluation cap" if self.budget_hit else "")
        ]

    # -- candidates ------------------------------------------------------------------------
    def _add(self, proposals: Sequence[Any]) -> None:
        for p in proposals:
            key = self.key(p.point)
            if key not in self._candidates:
                self._candidates[key] = Candidate(key, dict(p.point))

    def _reuse_stored(self) -> None:
        """Exact points of an earlier run in this directory are training data and need no evaluation."""
        self._stored: dict[str, Any] = {}
        for record in self.store.records(self.fingerprint):
            self._stored[record.key] = record

    def _initial_sample(self, n: int) -> list[Candidate]:
        cands = list(self._candidates.values())
        rng = np.random.default_rng(self._hybrid.seed)
        chosen: list[Candidate] = []
        if self._hybrid.model_path:
            chosen = self._pretrained_front(cands, n // 2)
        rest = [c for c in cands if c not in chosen]
        for i in rng.permutation(len(rest))[: max(0, n - len(chosen))]:
            chosen.append(rest[int(i)])
        return chosen

    def _pretrained_front(self, cands: list[Candidate], n: int) -> list[Candidate]:
        model = load_surrogate(self._hybrid.model_path)
        exact = self._hybrid.exact
        frame = model.predict_designs(
            exact.graph, exact.template_kind, [c.point for c in cands], exact.fixed, self._ops
        )
        values = np.column_stack([o.to_min(1.0) * frame[o.metric].to_numpy(float) for o in self.objectives])
        order = np.argsort(domination_counts(values), kind="stable")
        return [cands[int(i)] for i in order[:n]]

    # -- exact evaluation --------------------------------------------------------------------
    def _n_exact(self) -> int:
        return sum(1 for c in self._candidates.values() if c.exact or c.failed)

    def _evaluate_exact(self, chosen: list[Candidate], pool: Any, display: Any) -> None:
        fresh = []
        for cand in chosen:
            record = self._stored.get(cand.key)
            if record is not None and record.exact:
                cand.exact, cand.failed = record.ok, not record.ok
                cand.metrics = dict(record.metrics)
                if record.ok:
                    rows = {r["layer"]: r for r in self.store.layer_rows(record.key)}
                    if all(n in rows for n in self._names):
                        cand.per_op = np.array([[rows[n]["cycles"], rows[n]["energy_pj"]] for n in self._names])
                self.count(record, reused=True, display=display)
            else:
                fresh.append(cand)
        for outcome in pool.map(self._task, [c.point for c in fresh]):
            cand = fresh[outcome.index]
            common = {
                "key": cand.key,
                "params": dict(cand.point),
                "eval_s": outcome.seconds,
                "fingerprint": self.fingerprint,
            }
            if outcome.ok:
                flat, per_op = outcome.value
                record = PointRecord(
                    status="ok",
                    metrics=flat.values,
                    evaluator="hybrid",
                    exact=True,
                    layers_blob=flat.layers_blob,
                    **common,
                )
                cand.exact, cand.metrics, cand.per_op = True, dict(flat.values), per_op
            else:
                record = PointRecord(status="failed", reason=outcome.error, evaluator="hybrid", exact=False, **common)
                cand.failed = True
            self.store.put_many([record])
            self.evaluated += 1
            self.count(record, reused=False, display=display)

    # -- the model ---------------------------------------------------------------------------
    def _fit(self) -> Any:
        known = [c for c in self._candidates.values() if c.exact and c.per_op is not None]
        if len(known) < 2:
            return None
        exact = self._hybrid.exact
        if self._contract:
            truths = [(dict(c.metrics), *self._closed(c)) for c in known]
            frame = contract_frame(
                exact.template_kind, exact.graph, exact.graph.name, [c.point for c in known], exact.fixed, truths
            )
            model = ContractSurrogate.fit(frame, "rf", self._hybrid.seed)
            model.regressor.set_params(n_jobs=1)
            missing = [o.metric for o in self.objectives if o.metric not in model.metric_names]
            missing += [c.metric for c in self.constraints if c.metric not in model.metric_names]
            if missing:
                raise UserError(
                    f"evaluator hybrid: the {exact.template_kind} closed form does not give {', '.join(missing)}; "
                    f"it gives {', '.join(model.metric_names)}",
                    where="evaluator",
                )
            return model
        results = [
            (
                c.per_op,
                {
                    k: float(c.metrics.get(k, np.nan))
                    for k in ("latency_cycles", "latency_ms", "energy_mj", "area_mm2", "power_w")
                },
            )
            for c in known
        ]
        data = design_rows(
            exact.template_kind,
            exact.graph,
            WorkloadSpec(exact.graph.name),
            self._ops,
            [c.point for c in known],
            exact.fixed,
            results,
        )
        model = SurrogateModel.fit(data, "rf", self._hybrid.seed)
        for forest in (model.op_model, model.area_model):
            forest.set_params(n_jobs=1)
        return model

    def _closed(self, cand: Candidate) -> tuple[list[float], dict[str, float]]:
        """The closed form's contract row and metrics of a candidate, computed once."""
        if cand.key not in self._contract_rows:
            self._contract_rows[cand.key] = baseline_row(self._closed_form(cand.point))
        return self._contract_rows[cand.key]

    def _tree_metrics(self, model: Any, cands: list[Candidate]) -> dict[str, np.ndarray]:
        exact = self._hybrid.exact
        if self._contract:
            frame = contract_frame(
                exact.template_kind,
                exact.graph,
                exact.graph.name,
                [c.point for c in cands],
                exact.fixed,
                [({}, *self._closed(c)) for c in cands],
            )
            base = {m: frame[f"base_{m}"].to_numpy(float) for m in CONTRACT_METRICS}
            rows = ContractRows(model.schema["features"], frame[model.schema["features"]].to_numpy(float), base, None)
            trees = model.tree_predictions_of(rows)
            return {m: trees[..., i] for i, m in enumerate(model.metric_names)}
        trees = model.tree_predictions(
            exact.graph, exact.template_kind, [c.point for c in cands], exact.fixed, self._ops
        )
        archs = feat.arch_table(exact.template_kind, [c.point for c in cands], exact.fixed)
        batch = int(exact.graph.meta.get("batch", 1) or 1)
        return metrics_from_totals(trees[..., 0], trees[..., 1], trees[..., 2], archs.columns["_freq"][None, :], batch)

    def _predict(self) -> None:
        """Mean predictions for candidates without exact results (used to answer a sampler)."""
        model = self._fit()
        open_ = [c for c in self._candidates.values() if not c.exact and not c.failed and not c.metrics]
        if model is None or not open_:
            return
        per_tree = self._tree_metrics(model, open_)
        for i, cand in enumerate(open_):
            cand.metrics = {
                m: float(np.exp(np.nanmean(np.log(np.maximum(v[:, i], 1e-300))))) for m, v in per_tree.items()
            }

    def _observation(self, key: str) -> Any:
        cand = self._candidates[key]
        return Observation(ok=not cand.failed and bool(cand.metrics), metrics=cand.metrics)

    # -- the refinement loop -----------------------------------------------------------------
    def _refine(self, pool: Any, display: Any) -> None:
        hybrid = self._hybrid
        batch_size = max(2, math.ceil(hybrid.batch_fraction * len(self._candidates)))
        while self._n_exact() < self._cap:
            model = self._fit()
            open_ = [c for c in self._candidates.values() if not c.exact and not c.failed]
            if model is None or not open_:
                break
            per_tree = self._tree_metrics(model, open_)
            mean, optimistic, spread = self._bounds(per_tree)
            for i, cand in enumerate(open_):
                cand.metrics = {m: float(v[i]) for m, v in mean.items()}
            promising = self._promising(optimistic)
            if not promising.any():
                break
            idx = np.flatnonzero(promising)
            objective_means = np.column_stack([o.to_min(1.0) * mean[o.metric][idx] for o in self.objectives])
            order = np.lexsort((-spread[idx], domination_counts(objective_means)))
            take = min(batch_size, self._cap - self._n_exact())
            self._evaluate_exact([open_[int(idx[j])] for j in order[:take]], pool, display)
            self.exact_rounds += 1
        self.budget_hit = self._n_exact() >= self._cap

    def _bounds(self, per_tree: dict[str, np.ndarray]) -> tuple[dict, dict, np.ndarray]:
        kappa = self._hybrid.kappa
        mean, optimistic = {}, {}
        spread = np.zeros(next(iter(per_tree.values())).shape[1])
        for metric, values in per_tree.items():
            logs = np.log(np.maximum(values, 1e-300))
            mu, sd = np.nanmean(logs, axis=0), np.nanstd(logs, axis=0)
            better_low = metric != "throughput_ips"
            mean[metric] = np.exp(mu)
            optimistic[metric] = np.exp(mu - kappa * sd) if better_low else np.exp(mu + kappa * sd)
            if metric in {o.metric for o in self.objectives}:
                spread += sd
        return mean, optimistic, spread

    def _promising(self, optimistic: dict[str, np.ndarray]) -> np.ndarray:
        """Optimistically feasible and not dominated by any exact feasible point."""
        n = len(next(iter(optimistic.values())))
        ok = np.ones(n, dtype=bool)
        for c in self.constraints:
            v = optimistic[c.metric]
            if c.high is not None:
                ok &= v <= c.high
            if c.low is not None:
                ok &= v >= c.low
        front = [
            [o.to_min(float(cand.metrics.get(o.metric, np.nan))) for o in self.objectives]
            for cand in self._candidates.values()
            if cand.exact and all(c.violation(cand.metrics) == 0.0 for c in self.constraints)
        ]
        if not front:
            return ok
        exact_values = np.array(front, dtype=float)
        values = np.column_stack([o.to_min(1.0) * optimistic[o.metric] for o in self.objectives])
        dominated = np.zeros(n, dtype=bool)
        for row in exact_values:
            dominated |= np.all(row <= values, axis=1) & np.any(row < values, axis=1)
        return ok & ~dominated

    def _store_predictions(self, display: Any) -> None:
        records = []
        for cand in self._candidates.values():
            if cand.exact or cand.failed or cand.key in self._stored or not cand.metrics:
                continue
            records.append(
                PointRecord(
                    key=cand.key,
                    params=dict(cand.point),
                    status="ok",
                    metrics=cand.metrics,
                    evaluator="hybrid",
                    exact=False,
                    fingerprint=self.fingerprint,
                )
            )
        self.store.put_many(records)
        for record in records:
            self.count(record, reused=False, display=display)
        self.predicted = len(records)


def domination_counts(values: np.ndarray) -> np.ndarray:
    """How many rows dominate each row (all objectives minimised)."""
    le = np.all(values[:, None, :] <= values[None, :, :], axis=2)
    lt = np.any(values[:, None, :] < values[None, :, :], axis=2)
    return (le & lt).sum(axis=0)
