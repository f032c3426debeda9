"""The chunked sweep: a grid or random sweep on an array evaluator, tens of thousands of points per step.

``Sweep`` asks, looks up, evaluates, stores and counts one point at a time around the batch; at a
million points that bookkeeping (a dict, a JSON text and a SQLite row per point) costs more than the
evaluation. ``ColumnSweep`` does the same steps on columns: the strategy's points as one array per
parameter, their store keys hashed from the same canonical text (``dse.space_columns``), one
sorted-array look-up for the whole chunk (``DigestIndex``), one array evaluation, one stored chunk row
(``Store.put_chunk``) and one front update. Points are stored and counted exactly as ``Sweep`` would:
same keys, same ``seq`` order, a stored point never evaluated again, a refused point stored with the
template's message.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dse.array_executor import refused_outcomes
from dse.chunkstore import IN_POINTS_TABLE, NewChunk, hex_keys, rows_by_chunk
from dse.executors import Executor
from dse.flat import FlatMetricsEvaluator
from dse.objectives import meets_constraints
from dse.space_columns import Columns, column_digests, column_points, points_columns
from dse.sweep import Display, Sweep

CHUNK_POINTS = 32_768  # points per step: a few MB of columns, a few tenths of a second of array evaluation


class ColumnSweep(Sweep):
    """``Sweep`` for a fixed list of points on an executor with ``evaluate_batch`` (``ArrayExecutor``)."""

    def run(self, pool: Executor, display: Display) -> None:
        budget = self.strategy.budget
        while self.proposed < budget:
            columns = self._ask(min(CHUNK_POINTS, budget - self.proposed))
            n = len(next(iter(columns.values()))) if columns else 0
            if n == 0:
                break
            self._run_columns(columns, n, pool, display)
            self.proposed += n

    def _ask(self, n: int) -> Columns:
        ask_columns = getattr(self.strategy, "ask_columns", None)
        columns = ask_columns(n) if ask_columns is not None else None
        if columns is None:  # a strategy of dicts (random), or a grid too large to index as arrays
            return points_columns(self.space, [proposal.point for proposal in self.strategy.ask(n)])
        return columns

    def _run_columns(self, columns: Columns, n: int, pool: Executor, display: Display) -> None:
        """Answer the stored points from the store, evaluate the others once each, store, count."""
        digests = column_digests(self.fingerprint, self.space, columns, n)
        places = self.store.digest_index().find(digests)
        _, first = np.unique(digests, return_index=True)
        fresh = np.zeros(n, dtype=bool)
        fresh[first] = True
        fresh &= places < IN_POINTS_TABLE
        rows = np.flatnonzero(fresh)
        if len(rows):
            self._evaluate(digests[rows], {name: column[rows] for name, column in columns.items()}, pool, display)
        again = np.flatnonzero(~fresh)
        if len(again):  # stored before, or a repeat of a point of this chunk: its stored result
            self._count_stored(digests[again], display)

    def _evaluate(self, digests: np.ndarray, columns: Columns, pool: Executor, display: Display) -> None:
        points = column_points(columns)
        batch = pool.evaluate_batch(points)  # type: ignore[attr-defined]
        accepted = np.empty(0, dtype=np.int64) if batch is None else np.asarray(batch.index, dtype=np.int64)
        if batch is not None and len(accepted):
            params = {name: column[accepted] for name, column in columns.items()}
            metrics, each = batch.metrics, batch.seconds_each
            self.store.put_chunk(
                NewChunk(self.fingerprint, digests[accepted], params, metrics, self.evaluator_name, True, each)
            )
            self.evaluated += len(accepted)
            self._count_columns(batch.metrics, len(accepted), reused=False, display=display)
        if len(accepted) < len(points):  # refused by the array checks: the scalar path, with its message
            task = FlatMetricsEvaluator(self.evaluator)
            keys = hex_keys(digests)
            outcomes = list(refused_outcomes(task, points, accepted))
            records = [self._record(keys[o.index], points[o.index], o) for o in outcomes]
            self.store.put_many(records)
            self.evaluated += len(records)
            self.count_many(records, reused=False, display=display)

    def _count_stored(self, digests: np.ndarray, display: Display) -> None:
        """Count points answered from the store: chunk rows a chunk at a time, ``points`` rows by record."""
        places = self.store.digest_index().find(digests)
        in_points = places == IN_POINTS_TABLE
        if in_points.any():
            keys = hex_keys(digests[in_points])
            found = self.store.get_many(keys)
            self.count_many([found[key] for key in keys if key in found], reused=True, display=display)
        wanted = {*(o.metric for o in self.objectives), *(c.metric for c in self.constraints)}
        for chunk_id, rows in rows_by_chunk(places[places >= 0]):
            chunk = self.store.chunk(chunk_id)
            if chunk is None:
                continue
            names = [name for name in wanted if name in chunk.table.column_names]
            metrics = {name: chunk.table.column(name).to_numpy()[rows] for name in names}
            self._count_columns(metrics, len(rows), reused=True, display=display)

    def _count_columns(self, metrics: Mapping[str, np.ndarray], n: int, *, reused: bool, display: Display) -> None:
        """``count_many`` on columns: the counters, the live front of the feasible points, the progress bar."""
        if reused:
            self.reused += n
        feasible = np.broadcast_to(meets_constraints(metrics, self.constraints), (n,))
        nan = np.full(n, np.nan)
        values = np.column_stack(
            [o.to_min(np.asarray(metrics.get(o.metric, nan), dtype=float)) for o in self.objectives]
        )
        self.front.merge(values.reshape(n, len(self.objectives))[feasible])
        display.advance(front=len(self.front), failed=self.failed, steps=n)
