"""``--arrays``: the array evaluation of each chunk on a named executor's workers, a sub-batch each, merged in
order into the batch the in-process path gives; a failed sub-batch evaluated in process, never lost."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_column_sweep import SPACE_SPEC

import dse.array_executor as array_executor
import dse.explore as explore_module
from dse.array_executor import REFUSED_BATCH, ArrayExecutor, PooledArrayExecutor
from dse.executors import Outcome, SerialExecutor, Task
from dse.spec import parse_spec

# test_column_sweep's grid (its optimised sparse mapping refused off ws: refused points too), at 28 nm
GRID_SPEC = SPACE_SPEC.replace("name: columns", "name: pooled").replace("objectives:", "tech: asic-28nm\nobjectives:")


class SplitSerial(SerialExecutor):
    """In this process, but counted as ``workers`` workers; fails the sub-batches named in ``fail``."""

    def __init__(self, workers: int, fail: Sequence[int] = (), answer: Any = None):
        super().__init__()
        self.workers = workers
        self.fail = set(fail)
        self.answer = answer
        self.items: list[Any] = []

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        self.items = list(items)
        for outcome in super().map(task, items):
            if outcome.index in self.fail:
                yield Outcome(outcome.index, error="WorkerCrashed: the worker process died")
            elif self.answer is not None:
                yield Outcome(outcome.index, value=self.answer)
            else:
                yield outcome


@pytest.fixture(scope="module")
def grid():
    from dse.evaluators import prepare_run

    spec = parse_spec(GRID_SPEC, "pooled.yaml")
    context, evaluation = prepare_run(spec)
    return spec, context, evaluation


def _frame(points: pd.DataFrame) -> pd.DataFrame:
    return points.drop(columns=["eval_s"]).sort_values("point_id").reset_index(drop=True)


def test_sub_batches_cover_the_batch_in_order_none_too_small(monkeypatch):
    pooled = PooledArrayExecutor(ArrayExecutor(object()), SplitSerial(workers=3))
    assert pooled.sub_batches(5_000) == [range(0, 2_500), range(2_500, 5_000)]  # 2,000 points at least each
    assert pooled.sub_batches(30_000) == [range(0, 10_000), range(10_000, 20_000), range(20_000, 30_000)]
    assert pooled.sub_batches(100) == [range(0, 100)]
    monkeypatch.setattr(array_executor, "SUB_BATCH_MIN_POINTS", 10)
    assert pooled.sub_batches(31) == [range(0, 10), range(10, 21), range(21, 31)]


def test_split_batches_equal_the_in_process_batch_and_a_failed_one_is_evaluated_here(grid, monkeypatch):
    """Three sub-batches merged in order, one whose worker died evaluated in process: the in-process batch,
    bit for bit (same accepted indices, same values)."""
    monkeypatch.setattr(array_executor, "SUB_BATCH_MIN_POINTS", 10)
    _, _, evaluation = grid
    local = evaluation.array_executor()
    points = [
        {"rows": rows, "cols": cols, "dataflow": dataflow, "dram_gbps": dram_gbps}
        for rows in (4, 16, 32)
        for cols in (8, 16, 24)
        for dataflow in ("ws", "os")
        for dram_gbps in (6.4, 25.6)
    ]
    whole = local.evaluate_batch(points)
    assert whole is not None and len(whole.index) == len(points)
    for fail in ((), (1,)):
        inner = SplitSerial(workers=3, fail=fail)
        pooled = PooledArrayExecutor(local, inner)
        split = pooled.evaluate_batch(points)
        assert [len(items) for items in inner.items] == [12, 12, 12]
        assert split is not None
        np.testing.assert_array_equal(split.index, whole.index)
        assert list(split.metrics) == list(whole.metrics)
        for name in whole.metrics:
            np.testing.assert_array_equal(split.metrics[name], whole.metrics[name])
        assert len(pooled.fallbacks) == len(fail)


def test_a_refused_sub_batch_sends_the_whole_batch_point_by_point(grid):
    _, _, evaluation = grid
    pooled = PooledArrayExecutor(evaluation.array_executor(), SplitSerial(workers=1, answer=REFUSED_BATCH))
    assert pooled.evaluate_batch([{"rows": 4, "cols": 8, "dataflow": "ws", "dram_gbps": 6.4}]) is None


def test_arrays_on_a_named_executor_store_the_in_process_frame(grid, monkeypatch):
    """The explorer with ``arrays`` on a named executor (two workers, one failing): the in-process array path's
    points frame, same point ids, seqs and values; the fallback is in the run's notes."""
    from dse.explore import explore_points

    spec, context, evaluation = grid
    here = explore_points(spec, evaluation, context=context)
    monkeypatch.setattr(array_executor, "SUB_BATCH_MIN_POINTS", 10)
    monkeypatch.setattr(explore_module, "make_executor", lambda name, workers: SplitSerial(2, fail=(0,)))
    pooled = explore_points(spec, evaluation, executor="local", context=context, arrays=True)
    pd.testing.assert_frame_equal(_frame(pooled.points), _frame(here.points))
    assert any("1 sub-batch(es) evaluated in process: sub-batch of 36 points: WorkerCrashed" in n for n in pooled.notes)


def test_arrays_without_an_array_evaluator_is_a_note(grid):
    from dse.explore import explore_points

    spec, context, evaluation = grid
    result = explore_points(spec, evaluation.evaluator, executor="serial", context=context, arrays=True)
    assert len(result.points) == 72
    assert any(note.startswith("--arrays ignored: no array evaluator") for note in result.notes)


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_arrays_on_real_workers_store_the_in_process_frame(grid, monkeypatch, executor):
    """Two real workers (a spawn pool, a Dask LocalCluster) each take a sub-batch: the in-process frame."""
    if executor == "dask":
        pytest.importorskip("dask.distributed")
    from dse.explore import explore_points

    spec, context, evaluation = grid
    here = explore_points(spec, evaluation, context=context)
    monkeypatch.setattr(array_executor, "SUB_BATCH_MIN_POINTS", 10)
    pooled = explore_points(spec, evaluation, executor=executor, workers=2, context=context, arrays=True)
    pd.testing.assert_frame_equal(_frame(pooled.points), _frame(here.points))
    assert not any("evaluated in process" in note or "--arrays ignored" in note for note in pooled.notes)
