"""The explorer: spec -> proposals -> evaluations -> store -> Pareto front -> files and report.

The loop asks the search strategy for a batch, answers every point the store
already holds from the store, evaluates the rest through the executor, and
commits each result before it is counted, shown or told to the sampler. When the
budget is spent it marks feasible and Pareto-optimal points and writes
``points.parquet``/``points.csv``, ``pareto.csv``, ``hypervolume.csv``,
``spec.yaml`` and the HTML report into the run directory. ``explore_points`` runs the same sweep on a
store in memory and writes nothing, for benchmarks and tests that need only the points.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dse.column_sweep import ColumnSweep
from dse.context import RunContext
from dse.executors import make_executor
from dse.finish import SweepCounts, collect_points, finish_run, pareto_frame, spec_yaml_text
from dse.rundir import stops_when_disk_full
from dse.search import ListStrategy, make_strategy
from dse.space import DesignSpace
from dse.spec import Spec
from dse.store import Store
from dse.store_errors import reading_store
from dse.sweep import Display, Evaluation, PointEvaluatorLike, Sweep

__all__ = [
    "Display",
    "Evaluation",
    "ExploreResult",
    "Sweep",
    "SweepCounts",
    "SweepResult",
    "explore",
    "explore_points",
    "spec_yaml_text",
]


@dataclass
class SweepResult:
    """What a sweep found: every point it proposed (annotated with ``feasible`` and ``pareto``) and the front."""

    points: pd.DataFrame
    pareto: pd.DataFrame
    evaluated: int
    reused: int
    failed: int
    seconds: float
    notes: list[str] = field(default_factory=list)


@dataclass
class ExploreResult(SweepResult):
    """What a run produced; ``points`` and ``pareto`` are the frames written to the run directory."""

    out_dir: Path = Path(".")
    report: Path | None = None
    sweep_seconds: float = 0.0  # of ``seconds``, the part spent proposing, evaluating and storing points


def explore(
    spec: Spec,
    out_dir: Path,
    evaluator: PointEvaluatorLike | Evaluation,
    *,
    executor: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    space: DesignSpace | None = None,
    context: RunContext | None = None,
) -> ExploreResult:
    """Run the spec's search to its budget in ``out_dir`` (resuming whatever the store there holds).

    ``evaluator`` is a plain ``point -> Metrics`` callable, or an ``Evaluation`` that brings explorer
    hooks with it (``dse.evaluators`` makes the one a spec's ``evaluator:`` names). ``context`` is the
    run's shared facts when the caller built them already (else they are built here, ``space`` narrowing
    the spec's own design space).
    """
    start = time.perf_counter()
    context = context if context is not None else RunContext.of(spec, space)
    out_dir = Path(out_dir)
    with stops_when_disk_full(out_dir), Store.open(out_dir) as store, reading_store(store.path):
        spec_path = getattr(spec, "path", None)
        store.start_run(
            spec.name, spec_yaml_text(spec), context.fingerprint, str(Path(spec_path).resolve()) if spec_path else ""
        )
        sweep = run_sweep(context, store, evaluator, executor, workers, progress)
        sweep_seconds = time.perf_counter() - start
        store.set_status("done")
        run_notes = list(sweep.strategy.notes) + list(sweep.notes)
        layer_rows = evaluator.layer_rows if isinstance(evaluator, Evaluation) else None
        report, points, pareto, notes = finish_run(
            out_dir, context, store, run_notes, sweep.counts(), layer_rows=layer_rows
        )
    return ExploreResult(
        out_dir=out_dir,
        points=points,
        pareto=pareto,
        evaluated=sweep.evaluated,
        reused=sweep.reused,
        failed=sweep.failed,
        seconds=time.perf_counter() - start,
        report=report,
        notes=notes,
        sweep_seconds=sweep_seconds,
    )


def explore_points(
    spec: Spec,
    evaluator: PointEvaluatorLike | Evaluation,
    *,
    executor: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    space: DesignSpace | None = None,
    context: RunContext | None = None,
) -> SweepResult:
    """The same sweep as ``explore``, on a store in memory: no file is read or written.

    For benchmarks and tests that need only the points: the frames are those ``explore`` would write
    for a fresh run directory (no report, comparison or hypervolume)."""
    start = time.perf_counter()
    context = context if context is not None else RunContext.of(spec, space)
    with Store.in_memory() as store:
        sweep = run_sweep(context, store, evaluator, executor, workers, progress)
        points, _ = collect_points(context, store)
    return SweepResult(
        points=points,
        pareto=pareto_frame(points, context.objectives),
        evaluated=sweep.evaluated,
        reused=sweep.reused,
        failed=sweep.failed,
        seconds=time.perf_counter() - start,
        notes=list(sweep.strategy.notes) + list(sweep.notes),
    )


def run_sweep(
    context: RunContext,
    store: Store,
    evaluator: PointEvaluatorLike | Evaluation,
    executor: str | None,
    workers: int | None,
    progress: bool,
) -> Sweep:
    """The search loop of one run into ``store``, on the evaluation's own executor or the one asked for.

    What ``explore`` and ``explore_points`` run before they collect the points; public for measurements of
    the loop alone (``benchmarks/memory_sweep.py``)."""
    evaluation = evaluator if isinstance(evaluator, Evaluation) else Evaluation(evaluator)
    strategy = make_strategy(context.spec, context.space, list(context.objectives), list(context.constraints))
    batch_executor = evaluation.batch_executor
    if batch_executor is None and executor is None:  # no executor named: the evaluation's array path, if any
        batch_executor = evaluation.array_executor
    with batch_executor() if batch_executor else make_executor(executor, workers) as pool:
        sweep_class = evaluation.sweep_class
        if sweep_class is Sweep and hasattr(pool, "evaluate_batch") and isinstance(strategy, ListStrategy):
            sweep_class = ColumnSweep  # a fixed list of points on an array evaluator: a chunk at a time
        sweep = sweep_class(context, store, strategy, evaluation.evaluator)
        with Display(progress, strategy.budget, context.spec.name) as display:
            sweep.run(pool, display)
    return sweep
