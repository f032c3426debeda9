"""The executor of an array evaluator: a whole batch of points per call, evaluated as arrays in this process.

A family's array evaluator (``Family.array_evaluator``, e.g. ``hwmodels.systolic.arrays``) takes a batch
of points of one graph and gives the scalar path's flat metrics for every point its template accepts;
a point it refuses runs alone through the explorer's task, which records the template's message.
``evaluate_batch`` is the columnar form the chunked sweep (``dse.column_sweep``) uses; ``map`` is the
point-by-point form every other sweep uses.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import UserError
from dse.executors import Executor, Outcome, SerialExecutor, Task
from dse.flat import FlatMetrics


@dataclass(frozen=True)
class ArrayBatch:
    """What an array evaluator gave for a batch: flat metric columns of the accepted points, their indices
    in the batch, and the seconds it took per point."""

    metrics: dict[str, np.ndarray]
    index: np.ndarray
    seconds_each: float


class ArrayExecutor(Executor):
    """An in-process executor for an array evaluator (see the module docstring)."""

    name = "arrays"
    answers_whole_batches = True  # the sweep commits each batch in one transaction

    def __init__(self, arrays: Any):
        self.arrays = arrays
        self.batch_points = int(getattr(arrays, "batch_points", 4096))
        # a fixed-list strategy asks for 16 points per worker: one batch of the array evaluator's size
        self.workers = max(1, self.batch_points // 16)

    def evaluate_batch(self, points: Sequence[dict[str, Any]]) -> ArrayBatch | None:
        """The batch as columns; None when a value the batch checks refuse makes it go point by point."""
        start = time.perf_counter()
        try:
            metrics, index = self.arrays.evaluate_points(list(points))
        except (UserError, ValueError, KeyError, TypeError):
            return None
        columns = self.arrays.flat_columns(metrics)
        return ArrayBatch(columns, index, (time.perf_counter() - start) / max(1, len(index)))

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        items = list(items)
        batch = self.evaluate_batch(items)
        if batch is None:
            yield from SerialExecutor().map(task, items)
            return
        names = list(batch.metrics)
        rows = zip(*(batch.metrics[name].tolist() for name in names))
        for i, row in zip(batch.index.tolist(), rows):
            flat = FlatMetrics(values=dict(zip(names, row)), layers_blob=None, exact=True)
            yield Outcome(i, flat, seconds=batch.seconds_each)
        yield from refused_outcomes(task, items, batch.index)


def refused_outcomes(task: Task, items: Sequence[Any], accepted: np.ndarray) -> Iterator[Outcome]:
    """The scalar path's outcomes (the template's message) for the items an array evaluator did not accept."""
    refused = sorted(set(range(len(items))) - set(np.asarray(accepted).tolist()))
    for outcome in SerialExecutor().map(task, [items[i] for i in refused]):
        yield dataclasses.replace(outcome, index=refused[outcome.index])


SUB_BATCH_MIN_POINTS = 2_000  # below this a worker's share costs more in shipping than it saves
REFUSED_BATCH = "refused"  # what a worker answers when its sub-batch's values make the batch go point by point


@dataclass(frozen=True)
class ArrayBatchTask:
    """The array evaluation of one sub-batch in a worker: picklable, shipped to each worker once."""

    arrays: Any

    def __call__(self, points: list[dict[str, Any]]) -> tuple[dict[str, np.ndarray], np.ndarray] | str:
        try:
            metrics, index = self.arrays.evaluate_points(list(points))
        except (UserError, ValueError, KeyError, TypeError):
            return REFUSED_BATCH
        return self.arrays.flat_columns(metrics), np.asarray(index, dtype=np.int64)


class PooledArrayExecutor(Executor):
    """``evaluate_batch`` on a named executor's workers (``--arrays``): one sub-batch per worker.

    The sub-batches are merged in their order, so the batch is the in-process one (``ArrayExecutor``): the
    same accepted points in the same order with the same values, up to the last bit of sums over layers of
    fractional figures (utilization), whose BLAS matrix-vector order depends on the batch's distinct designs
    (seen: 30 of 32,768 ResNet-50 points, 2.6e-16 relative). A sub-batch whose worker failed or
    died is evaluated in this process instead; one whose values the array checks refuse makes the whole
    batch go point by point, as in process."""

    answers_whole_batches = True

    def __init__(self, local: ArrayExecutor, inner: Executor):
        self.local = local
        self.inner = inner
        self.name = f"arrays on {inner.name}"
        self.workers = local.workers
        self.task = ArrayBatchTask(local.arrays)  # one object, so a pool keeps its workers between batches
        self.fallbacks: list[str] = []  # why a sub-batch was evaluated in this process, one line each

    def sub_batches(self, n: int) -> list[range]:
        """Contiguous shares of ``n`` points, one per worker, none under ``SUB_BATCH_MIN_POINTS`` points."""
        count = max(1, min(self.inner.workers, n // SUB_BATCH_MIN_POINTS))
        bounds = np.linspace(0, n, count + 1).round().astype(int).tolist()
        return [range(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]

    def evaluate_batch(self, points: Sequence[dict[str, Any]]) -> ArrayBatch | None:
        points = list(points)
        if not points:
            return self.local.evaluate_batch(points)
        shares = self.sub_batches(len(points))
        start = time.perf_counter()
        answers: dict[int, Any] = {}
        for outcome in self.inner.map(self.task, [points[share.start : share.stop] for share in shares]):
            if outcome.ok:
                answers[outcome.index] = outcome.value
            else:
                self.fallbacks.append(f"sub-batch of {len(shares[outcome.index])} points: {outcome.error}")
        parts: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
        for i, share in enumerate(shares):
            answer = answers.get(i)
            if answer is None:  # its worker failed or died: the same evaluation here
                answer = ArrayBatchTask(self.local.arrays)(points[share.start : share.stop])
            if isinstance(answer, str):
                return None
            columns, index = answer
            parts.append((columns, index + share.start))
        names = list(parts[0][0])
        metrics = {name: np.concatenate([columns[name] for columns, _ in parts]) for name in names}
        index = np.concatenate([index for _, index in parts])
        return ArrayBatch(metrics, index, (time.perf_counter() - start) / max(1, len(index)))

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        return self.inner.map(task, items)

    def close(self) -> None:
        self.inner.close()
