"""Surrogates in the explorer: ``evaluator: surrogate`` (pure prediction) and ``evaluator: hybrid``.

Pure prediction answers every proposed point from a trained model, a whole batch per call, and
stores it with ``exact = false``. Hybrid (``surrogates.explorer.screening``) evaluates exactly only what may
lie on the front. ``surrogate_evaluation`` and ``hybrid_evaluation`` are the factories the evaluator
registry (``dse.evaluators``) calls for a spec's ``evaluator: surrogate`` and ``evaluator: hybrid``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.evaluator_options import HybridOptions, SurrogateOptions
from dse.executors import Outcome, SerialExecutor
from dse.explore import Evaluation
from dse.flat import FlatMetrics
from dse.graph import Graph
from dse.spec import Spec
from hwmodels.base import Metrics
from surrogates.contract.features import supported_templates
from surrogates.dataset import feature_set
from surrogates.explorer.screening import (
    PREDICTED_METRICS,
    HybridEvaluator,
    HybridSweep,
    check_layer_metrics,
    check_predictable,
)
from surrogates.protocol import load_surrogate
from surrogates.systolic import features as feat
from surrogates.systolic.model import SurrogateModel

__all__ = ["BatchExecutor", "SurrogateEvaluator", "hybrid_evaluation", "surrogate_evaluation"]


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
    """An executor for a batch evaluator: one in-process call per batch instead of one task per point."""

    name = "batch"
    workers = 1

    def __init__(self, evaluator: SurrogateEvaluator):
        self.evaluator = evaluator

    def map(self, task: Any, items: Sequence[Any]):
        """``task`` (the explorer's per-point wrapper of the same evaluator) runs only when a batch fails."""
        start = time.perf_counter()
        try:
            results = self.evaluator.evaluate_batch(list(items))
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


def check_surrogate_spec(spec: Spec) -> None:
    """What ``evaluator: surrogate`` and ``hybrid`` need of a spec, checked once: objectives and constraints
    the surrogates predict, and a template they support (one UserError located at ``evaluator``)."""
    metrics = [o.metric for o in spec.objective_list()] + [c.metric for c in spec.constraint_list()]
    contract = feature_set(spec.template.kind, spec.template.mapper) == "contract"
    check_predictable(metrics, spec.evaluator, where=spec.locate("evaluator"), contract=contract)
    if spec.template.kind not in supported_templates():
        raise UserError(
            f"evaluator {spec.evaluator} supports templates {', '.join(supported_templates())}, not "
            f"{spec.template.kind}; use evaluator: analytical",
            where=spec.locate("evaluator"),
        )


def surrogate_evaluation(spec: Spec, graph: Graph, exact: PointEvaluator, options: SurrogateOptions) -> Evaluation:
    """``evaluator: surrogate``: the spec's trained model answers every point, a batch per call."""
    del options  # it takes none
    check_surrogate_spec(spec)
    if spec.surrogate_path is None:
        raise UserError(
            "evaluator surrogate needs a trained model; add surrogate: MODEL.joblib (from `dse surrogate "
            "train`) or use evaluator: hybrid, which trains on the fly",
            where=spec.locate("evaluator"),
        )
    surrogate = SurrogateEvaluator(graph, spec.template.kind, dict(exact.fixed), str(spec.surrogate_path))
    return Evaluation(surrogate, batch_executor=partial(BatchExecutor, surrogate))


def hybrid_evaluation(spec: Spec, graph: Graph, exact: PointEvaluator, options: HybridOptions) -> Evaluation:
    """``evaluator: hybrid``: the exact evaluator screened by a forest
    (``surrogates.explorer.screening.HybridSweep``)."""
    del graph  # the exact evaluator carries it
    check_surrogate_spec(spec)
    metrics = [o.metric for o in spec.objective_list()] + [c.metric for c in spec.constraint_list()]
    check_layer_metrics(metrics, spec.template.kind, exact.mapper_name, where=spec.locate("evaluator"))
    model_path = str(spec.surrogate_path) if spec.surrogate_path is not None else None
    hybrid = HybridEvaluator(exact, model_path=model_path, seed=spec.search.seed, options=options)
    return Evaluation(hybrid, sweep_class=HybridSweep)
