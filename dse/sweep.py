"""The sweep loop: ask the strategy -> answer from the store or evaluate -> store -> tell, with its counters.

``Sweep`` is the point-by-point loop every strategy and executor runs; ``dse.column_sweep.ColumnSweep``
is its array form for grid and random sweeps on an array evaluator. ``Evaluation`` is what an evaluator
brings to the explorer (its hooks), ``Display`` the progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dse.context import RunContext
from dse.executors import Executor, Outcome
from dse.finish import SweepCounts
from dse.flat import FlatMetrics, FlatMetricsEvaluator
from dse.objectives import meets_constraints
from dse.pareto import FrontTracker
from dse.search import Observation, Proposal, SearchStrategy
from dse.store import PointRecord, Store, point_key

PointEvaluatorLike = Callable[[Mapping[str, Any]], Any]


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
