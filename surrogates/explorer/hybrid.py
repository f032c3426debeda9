"""Surrogates in the explorer: ``evaluator: surrogate`` (pure prediction) and ``evaluator: hybrid``.

Pure prediction answers every proposed point from a trained model, a whole batch per call, and
stores it with ``exact = false``. Hybrid (``surrogates.explorer.screening``) evaluates exactly only what may
lie on the front. ``wrap_evaluator`` turns a spec's ``evaluator:`` into the explorer's Evaluation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.executors import Outcome, SerialExecutor
from dse.explore import Evaluation
from dse.graph import Graph
from dse.spec import Spec
from dse.store import FlatMetrics
from hwmodels.base import Metrics
from surrogates.contract.features import supported_templates
from surrogates.dataset import feature_set
from surrogates.explorer.screening import PREDICTED_METRICS, HybridEvaluator, HybridSweep, check_predictable
from surrogates.protocol import load_surrogate
from surrogates.systolic import features as feat
from surrogates.systolic.model import SurrogateModel

__all__ = ["BatchExecutor", "SurrogateEvaluator", "check_predictable", "wrap_evaluator"]


@dataclass
class SurrogateEvaluator:
    """``evaluator: surrogate``: Metrics predicted by a saved model, a batch at a time."""

    graph: Graph
    template_kind: str
    fixed: dict[str, Any]
    model_path: str

    def __post_init__(self) -> None:
        self._model = load_surrogate(self.model_path)
        self._ops = feat.op_table(self.graph) if isinstance(self._model, SurrogateModel) else None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def evaluate_batch(self, points: Sequence[Mapping[str, Any]]) -> list[Metrics]:
        frame = self._model.predict_designs(self.graph, self.template_kind, points, self.fixed, self._ops)
        columns = {name: frame[name].to_numpy(float) for name in PREDICTED_METRICS if name in frame}
        info = {"exact": False, "surrogate": str(self.model_path), "model_kind": self._model.kind}
        return [
            Metrics(values={name: float(values[i]) for name, values in columns.items()}, info=dict(info))
            for i in range(len(points))
        ]

    def __call__(self, point: Mapping[str, Any]) -> Metrics:
        return self.evaluate_batch([point])[0]


class BatchExecutor:
    """An executor for batch evaluators: one in-process call per batch instead of one task per point."""

    name = "batch"
    workers = 1

    def map(self, task: Any, items: Sequence[Any]):
        start = time.perf_counter()
        inner = getattr(task, "evaluator", task)
        try:
            results = inner.evaluate_batch(list(items))
        except (ValueError, KeyError) as exc:  # one bad point fails the batch: fall back to one by one
            del exc
            yield from SerialExecutor().map(task, items)
            return
        each = (time.perf_counter() - start) / max(1, len(items))
        for index, metrics in enumerate(results):
            yield Outcome(index, FlatMetrics(values=dict(metrics.flat()), layers_blob=None, exact=False), seconds=each)

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> BatchExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wrap_evaluator(spec: Spec, graph: Graph, exact: PointEvaluator) -> Evaluation:
    """The evaluator a spec's ``evaluator:`` names, around the exact PointEvaluator, with its explorer hooks."""
    if spec.evaluator == "analytical":
        return Evaluation(exact)
    metrics = [o.metric for o in spec.objective_list()] + [c.metric for c in spec.constraint_list()]
    contract = feature_set(spec.template.kind, spec.template.mapper) == "contract"
    check_predictable(metrics, spec.evaluator, where=spec.locate("evaluator"), contract=contract)
    if spec.template.kind not in supported_templates():
        raise UserError(
            f"evaluator {spec.evaluator} supports templates {', '.join(supported_templates())}, not "
            f"{spec.template.kind}; use evaluator: analytical",
            where=spec.locate("evaluator"),
        )
    model_path = str(spec.surrogate_path) if spec.surrogate_path is not None else None
    if spec.evaluator == "surrogate":
        if model_path is None:
            raise UserError(
                "evaluator surrogate needs a trained model; add surrogate: MODEL.joblib (from `dse surrogate "
                "train`) or use evaluator: hybrid, which trains on the fly",
                where=spec.locate("evaluator"),
            )
        surrogate = SurrogateEvaluator(graph, spec.template.kind, dict(exact.fixed), model_path)
        return Evaluation(surrogate, batch_executor=BatchExecutor)
    return Evaluation(HybridEvaluator(exact, model_path=model_path, seed=spec.search.seed), sweep_class=HybridSweep)
