"""The evaluator registry: a spec's ``evaluator:`` name -> the factory of its explorer Evaluation.

The only place that chooses an evaluator by name: the command line, benchmarks and tests ask here.
Each evaluator's options (the spec's ``evaluator_options``) are its dataclass in ``dse.evaluator_options``,
checked by one function at spec load and again here, for specs built in code; a bad one is one
UserError located at ``evaluator_options.<name>``. It sits above the surrogates (it builds their
evaluators) and below the command lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from dse.array_executor import ArrayExecutor
from dse.context import RunContext
from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.evaluator_options import (
    AnalyticalOptions,
    EvaluatorOptions,
    HybridOptions,
    SurrogateOptions,
    parse_evaluator_options,
)
from dse.explore import Evaluation
from dse.graph import Graph
from dse.registry import family
from dse.session import build_evaluator
from dse.space import DesignSpace
from dse.spec import Spec
from surrogates.explorer.hybrid import hybrid_evaluation, surrogate_evaluation

EvaluationFactory = Callable[[Spec, Graph, PointEvaluator, Any], Evaluation]


@dataclass(frozen=True)
class EvaluatorKind:
    """One ``evaluator:`` of a spec: its options dataclass (the one ``EVALUATOR_OPTIONS`` gives the spec's
    checks) and its factory (spec, graph, exact evaluator, options -> Evaluation)."""

    options: type[EvaluatorOptions]
    build: EvaluationFactory
    doc: str


def analytical_evaluation(spec: Spec, graph: Graph, exact: PointEvaluator, options: Any) -> Evaluation:
    """``evaluator: analytical``: every point mapped and evaluated by the family's hardware model; a grid or
    random sweep of a family with an array evaluator (its default mapper, no mapper options, no accuracy data)
    streams its batches to it in this process (``ArrayExecutor``) with the same figures when no executor is
    named, and the per-layer rows of the front designs are evaluated point by point when the run finishes."""
    del options  # it takes none
    fam = family(spec.template.kind)
    if fam.array_evaluator is None or not streams_to_arrays(spec, exact, fam.default_mapper):
        return Evaluation(exact)
    arrays = fam.array_evaluator(graph, dict(exact.fixed))
    return Evaluation(exact, array_executor=partial(ArrayExecutor, arrays), layer_rows=partial(layer_rows, exact))


def streams_to_arrays(spec: Spec, exact: PointEvaluator, default_mapper: str) -> bool:
    """Whether a sweep's points go to the family's array evaluator: a fixed list of points (grid, random) on
    the default mapper without options or accuracy data; the optuna samplers keep their ask/tell batches."""
    plain = exact.mapper_name == default_mapper and not exact.mapper_options and exact.data is None
    return plain and str(spec.search.strategy).lower() in ARRAY_STRATEGIES


def layer_rows(exact: PointEvaluator, point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-layer rows the store keeps for a point (``FlatMetricsEvaluator``'s), from the scalar path."""
    return [layer.row() for layer in exact(point).layers]


ARRAY_STRATEGIES = ("grid", "random")  # the strategies whose points the array evaluators take

EVALUATORS: dict[str, EvaluatorKind] = {
    "analytical": EvaluatorKind(AnalyticalOptions, analytical_evaluation, "every point mapped and evaluated exactly"),
    "surrogate": EvaluatorKind(
        SurrogateOptions, surrogate_evaluation, "every point predicted by the spec's trained surrogate"
    ),
    "hybrid": EvaluatorKind(
        HybridOptions, hybrid_evaluation, "a forest screens the space; what may lie on the front is evaluated exactly"
    ),
}


def evaluator_options(spec: Spec) -> EvaluatorOptions:
    """The spec's ``evaluator_options`` as its evaluator's dataclass; a bad one is one located UserError."""
    try:
        return parse_evaluator_options(spec.evaluator, spec.evaluator_options)
    except UserError as err:
        raise UserError(err.message, spec.locate(err.where or "evaluator_options")) from None


def make_evaluation(spec: Spec, graph: Graph, exact: PointEvaluator) -> Evaluation:
    """The Evaluation the spec's ``evaluator:`` names, around the exact PointEvaluator of its workload."""
    if spec.evaluator not in EVALUATORS:
        raise UserError(
            f"unknown evaluator {spec.evaluator!r}; choose one of: {', '.join(EVALUATORS)}", spec.locate("evaluator")
        )
    return EVALUATORS[spec.evaluator].build(spec, graph, exact, evaluator_options(spec))


def prepare_run(spec: Spec, space: DesignSpace | None = None) -> tuple[RunContext, Evaluation]:
    """What ``explore`` needs of a spec, each built once: the run context (design space, fingerprint,
    workload graph) and the spec's evaluation."""
    space = space if space is not None else DesignSpace.from_spec(spec)
    graph, exact = build_evaluator(spec, space)
    return RunContext.of(spec, space, graph), make_evaluation(spec, graph, exact)
