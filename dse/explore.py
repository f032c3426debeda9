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

from dse.array_executor import ArrayExecutor, PooledArrayExecutor
from dse.column_sweep import ColumnSweep
from dse.context import RunContext
from dse.executors import Executor, make_executor
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
    arrays: bool = False,
) -> ExploreResult:
    """Run the spec's search to its budget in ``out_dir`` (resuming whatever the store there holds).

    ``evaluator`` is a plain ``point -> Metrics`` callable, or an ``Evaluation`` that brings explorer
    hooks with it (``dse.evaluators`` makes the one a spec's ``evaluator:`` names). ``context`` is the
    run's shared facts when the caller built them already (else they are built here, ``space`` narrowing
    the spec's own design space). ``arrays``: the array evaluation on the named ``executor``'s workers
    (``run_sweep``).
    """
    start = time.perf_counter()
    context = context if context is not None else RunContext.of(spec, space)
    out_dir = Path(out_dir)
    with stops_when_disk_full(out_dir), Store.open(out_dir) as store, reading_store(store.path):
        spec_path = getattr(spec, "path", None)
        store.start_run(
            spec.name, spec_yaml_text(spec), context.fingerprint, str(Path(spec_path).resolve()) if spec_path else ""
        )
        sweep = run_sweep(context, store, evaluator, executor, workers, progress, arrays)
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
    arrays: bool = False,
) -> SweepResult:
    """The same sweep as ``explore``, on a store in memory: no file is read or written.

    For benchmarks and tests that need only the points: the frames are those ``explore`` would write
    for a fresh run directory (no report, comparison or hypervolume)."""
    start = time.perf_counter()
    context = context if context is not None else RunContext.of(spec, space)
    with Store.in_memory() as store:
        sweep = run_sweep(context, store, evaluator, executor, workers, progress, arrays)
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
    arrays: bool = False,
) -> Sweep:
    """The search loop of one run into ``store``, on the evaluation's own executor or the one asked for.

    ``arrays`` (``--arrays``): a named executor's workers take the array evaluation of each chunk, a
    sub-batch each (``PooledArrayExecutor``); without an array-capable evaluation it is a note and the
    named executor evaluates point by point. What ``explore`` and ``explore_points`` run before they
    collect the points; public for measurements of the loop alone (``benchmarks/memory_sweep.py``)."""
    evaluation = evaluator if isinstance(evaluator, Evaluation) else Evaluation(evaluator)
    strategy = make_strategy(context.spec, context.space, list(context.objectives), list(context.constraints))
    notes: list[str] = []
    with open_executor(evaluation, strategy, executor, workers, arrays, notes) as pool:
        sweep_class = evaluation.sweep_class
        if sweep_class is Sweep and hasattr(pool, "evaluate_batch") and isinstance(strategy, ListStrategy):
            sweep_class = ColumnSweep  # a fixed list of points on an array evaluator: a chunk at a time
        sweep = sweep_class(context, store, strategy, evaluation.evaluator)
        with Display(progress, strategy.budget, context.spec.name) as display:
            sweep.run(pool, display)
        if isinstance(pool, PooledArrayExecutor) and pool.fallbacks:
            notes.append(f"--arrays: {len(pool.fallbacks)} sub-batch(es) evaluated in process: {pool.fallbacks[0]}")
    sweep.notes.extend(notes)
    return sweep


def open_executor(
    evaluation: Evaluation,
    strategy: object,
    executor: str | None,
    workers: int | None,
    arrays: bool,
    notes: list[str],
) -> Executor:
    """The sweep's executor: the evaluation's batch or array executor when none is named, the named one,
    or (``arrays``) the array evaluator on the named one's workers; why ``arrays`` was not taken goes to ``notes``."""
    if evaluation.batch_executor is not None:
        if arrays and executor is not None:
            notes.append("--arrays ignored: this evaluator brings its own executor")
        return evaluation.batch_executor()
    if executor is None and evaluation.array_executor is not None:  # no executor named: the array path here
        return evaluation.array_executor()
    pool = make_executor(executor, workers)
    if not arrays or executor is None:
        return pool
    local = evaluation.array_executor() if evaluation.array_executor is not None else None
    if not isinstance(local, ArrayExecutor) or not isinstance(strategy, ListStrategy):
        notes.append(
            "--arrays ignored: no array evaluator for this run (grid or random search of a family with one, "
            "default mapper, no mapper options); points evaluated one by one"
        )
        return pool
    return PooledArrayExecutor(local, pool)
