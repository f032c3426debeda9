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
