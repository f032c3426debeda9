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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dse.context import RunContext
from dse.executors import Executor, Outcome, make_executor
from dse.finish import SweepCounts, collect_points, finish_run, pareto_frame, spec_yaml_text
from dse.objectives import meets_constraints
from dse.pareto import FrontTracker
from dse.rundir import stops_when_disk_full
from dse.search import Observation, Proposal, SearchStrategy, make_strategy
from dse.space import DesignSpace
from dse.spec import Spec
from dse.store import FlatMetrics, FlatMetricsEvaluator, PointRecord, Store, point_key, reading_store

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

PointEvaluatorLike = Callable[[Mapping[str, Any]], Any]


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
        sweep = evaluation.sweep_class(context, store, strategy, evaluation.evaluator)
        with Display(progress, strategy.budget, context.spec.name) as display:
            sweep.run(pool, display)
    return sweep


@dataclass(frozen=True)
class Evaluation:
    """An evaluator with the explorer hooks it brings: the explorer's two public extension points.

    ``sweep_class``: a Sweep subclass that drives the loop itself (the surrogates' hybrid screening); it
    receives ``evaluator`` as it is here. ``batch_executor``: a factory of an in-process executor for an
    evaluator that answers a whole batch per call (surrogate prediction); None runs points on the
    executor the user chose.
    """

    evaluator: PointEvaluatorLike
    sweep_class: type[Sweep] = field(default_factory=lambda: Sweep)
    batch_executor: Callable[[], Executor] | None = None
    # an in-process executor that evaluates whole batches as arrays (``dse.evaluators.ArrayExecutor``), used
    # when the caller names no executor; a named one (serial, local, dask) evaluates point by point as before
    array_executor: Callable[[], Executor] | None = None
    # the exact per-layer rows of a point, for the front designs a batch evaluator stored without them
    layer_rows: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = None


class Sweep:
    """The ask -> (store | evaluate) -> store -> tell loop, with its counters.

    Public extension point: a loop of another shape (the surrogates' hybrid evaluator screens the
    whole budget before evaluating anything exactly) subclasses Sweep, overrides ``run`` and is passed to
    ``explore`` as an ``Evaluation``'s ``sweep_class``. What a subclass may use: ``evaluator`` (the
    Evaluation's, unwrapped), ``key``, ``count`` (every point it stores or reuses, for the counters, the
    live front and the progress bar), ``store``, ``strategy``, ``space``, ``fingerprint``, ``objectives``,
    ``constraints``, the counters, and ``notes`` (lines for the report).
    """

    def __init__(self, context: RunContext, store: Store, strategy: SearchStrategy, evaluator: PointEvaluatorLike):
        self.context = context
        self.store = store
        self.strategy = strategy
        self.evaluator = evaluator
        self.space = context.space
        self.fingerprint = context.fingerprint
        self.evaluator_name = context.evaluator_name
        self.objectives = context.objectives
        self.constraints = context.constraints
        self.front = FrontTracker(len(self.objectives))
        self.evaluated = 0
        self.reused = 0
        self.failed = 0
        self.proposed = 0
        self.notes: list[str] = []

    def key(self, point: Mapping[str, Any]) -> str:
        return point_key(self.fingerprint, self.space.canonical(dict(point)))

    def counts(self) -> SweepCounts:
        """What the run's notes report: strategy, budget and the counters."""
        return SweepCounts(self.strategy.name, self.strategy.budget, self.evaluated, self.reused, self.failed)

    def run(self, pool: Executor, display: Display) -> None:
        evaluator = FlatMetricsEvaluator(self.evaluator)
        self.proposed = self._replay(display) if self.strategy.replays else 0
        batch_size = self.strategy.batch_size(pool.workers)
        while self.proposed < self.strategy.budget:
            proposals = self.strategy.ask(min(batch_size, self.strategy.budget - self.proposed))
            if not proposals:
                break
            observations = self._run_batch(proposals, pool, evaluator, display)
            self.strategy.tell(proposals, observations)
            self.proposed += len(proposals)

    def _replay(self, display: Display) -> int:
        """Feed the strategy's own earlier proposals back to it, so an optuna sampler continues from them."""
        history = []
        for key in self.store.proposals(self.strategy.tag)[: self.strategy.budget]:
            record = self.store.get(key)
            if record is not None:
                history.append((record.params, _observation(record)))
                self.count(record, reused=True, display=display)
        return self.strategy.replay(history)

    def _run_batch(
        self,
        proposals: Sequence[Proposal],
        pool: Executor,
        evaluator: Callable[[Mapping[str, Any]], Any],
        display: Display,
    ) -> list[Observation]:
        """Answer stored points from the store, evaluate the others once each; observations in proposal order."""
        keys = [self.key(p.point) for p in proposals]
        log: dict[str, list[tuple[str, int, str]]] = {}
        if self.strategy.replays:
            for i, key in enumerate(keys):
                log.setdefault(key, []).append((self.strategy.tag, self.proposed + i, key))
        results: dict[str, PointRecord] = {k: r for k, r in self.store.get_many(keys).items() if not r.transient}
        fresh: dict[str, Mapping[str, Any]] = {}
        for proposal, key in zip(proposals, keys):
            if key not in results and key not in fresh:
                fresh[key] = proposal.point
        self.store.put_many([], proposals=[entry for key in results for entry in log.get(key, [])])
        fresh_keys = list(fresh)
        outcomes = pool.map(evaluator, [fresh[k] for k in fresh_keys])
        # a batch evaluator answers the whole batch at once: commit it in one transaction; a pool point by point
        groups = [list(outcomes)] if getattr(pool, "answers_whole_batches", False) else ([o] for o in outcomes)
        for group in groups:
            records = [self._record(fresh_keys[o.index], fresh[fresh_keys[o.index]], o) for o in group]
            entries = [entry for record in records for entry in log.get(record.key, [])]
            self.store.put_many(records, proposals=entries)  # committed before counted, shown or told
            for record in records:
                results[record.key] = record
            self.evaluated += len(records)
            self.count_many(records, reused=False, display=display)
        counted_fresh: set[str] = set()
        reused: list[PointRecord] = []
        for key in keys:
            if key in fresh and key not in counted_fresh:
                counted_fresh.add(key)  # counted above, when it was evaluated
            else:
                reused.append(results[key])
        self.count_many(reused, reused=True, display=display)
        return [_observation(results[key]) for key in keys]

    def _record(self, key: str, point: Mapping[str, Any], outcome: Outcome) -> PointRecord:
        common = {"key": key, "params": dict(point), "eval_s": outcome.seconds, "fingerprint": self.fingerprint}
        if outcome.ok:
            flat: FlatMetrics = outcome.value
            exact = self.evaluator_name == "analytical" if flat.exact is None else flat.exact
            return PointRecord(
                status="ok",
                metrics=flat.values,
                evaluator=self.evaluator_name,
                exact=exact,
                layers_blob=flat.layers_blob,
                solver=getattr(flat, "solver", None),
                **common,
            )
        return PointRecord(status="failed", reason=outcome.error, evaluator=self.evaluator_name, exact=False, **common)

    def count(self, record: PointRecord, *, reused: bool, display: Display) -> None:
        """Count one stored or reused point: counters, the live front of feasible points, the progress bar."""
        if reused:
            self.reused += 1
        if not record.ok:
            self.failed += 1
        elif self._feasible(record):
            values = np.array(
                [o.to_min(float(record.metrics.get(o.metric, np.nan))) for o in self.objectives], dtype=float
            )
            self.front.add(values)
        display.advance(front=len(self.front), failed=self.failed)

    def count_many(self, records: Sequence[PointRecord], *, reused: bool, display: Display) -> None:
        """``count`` for each record in order, the live front screened a batch at a time."""
        if not records:
            return
        if reused:
            self.reused += len(records)
        kept = [r for r in records if r.ok and self._feasible(r)]
        self.failed += sum(1 for r in records if not r.ok)
        values = [[o.to_min(float(r.metrics.get(o.metric, np.nan))) for o in self.objectives] for r in kept]
        self.front.add_many(np.array(values, dtype=float).reshape(len(kept), len(self.objectives)))
        display.advance(front=len(self.front), failed=self.failed, steps=len(records))

    def _feasible(self, record: PointRecord) -> bool:
        return bool(meets_constraints(record.metrics, self.constraints))


def _observation(record: PointRecord) -> Observation:
    return Observation(ok=record.ok, metrics=record.metrics)


# -- progress --------------------------------------------------------------------------


class Display:
    """A rich progress bar on stderr (done/budget, points/s, ETA, front size, failures), or nothing."""

    def __init__(self, enabled: bool, total: int, title: str):
        self._progress = None
        if not enabled:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("front {task.fields[front]}  failed {task.fields[failed]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task(title, total=total, rate="", front=0, failed=0)
        self._started = time.perf_counter()
        self._done = 0

    def __enter__(self) -> Display:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, *, front: int, failed: int, steps: int = 1) -> None:
        if self._progress is None:
            return
        self._done += steps
        rate = self._done / max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, advance=steps, rate=f"{rate:.1f} pt/s", front=front, failed=failed)
