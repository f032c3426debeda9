"""What a worker sends back for a point, and the encodings the store keeps: flat metrics, per-layer rows.

A module of its own, light to import: a spawned pool worker imports it (``FlatMetricsEvaluator``) and
neither SQLite nor Arrow nor pandas.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def json_default(value: Any) -> Any:
    """numpy scalars and other oddities in points/metrics become plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)


LAYERS_COMPRESSION = 1  # zlib level: per-layer rows compress ~10x at level 1, and level 6 costs twice the time


def encode_layers(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Per-layer rows as the store keeps them: compact JSON, zlib-compressed."""
    text = json.dumps(list(rows), separators=(",", ":"), default=json_default)
    return zlib.compress(text.encode(), LAYERS_COMPRESSION)


def decode_layers(blob: bytes) -> list[dict[str, Any]]:
    return json.loads(zlib.decompress(blob))


@dataclass
class FlatMetrics:
    """What a worker sends back for one point: scalar metrics, encoded per-layer rows, exact flag.

    Workers do the flattening and encoding so the explorer process, which shares the cores
    with them, only unpickles a few kilobytes and writes them to SQLite.
    """

    values: dict[str, float]
    layers_blob: bytes | None
    exact: bool | None
    solver: dict[str, Any] | None = None  # the mapper's solver outcome (status, gap, ...) when it ran one


@dataclass
class FlatMetricsEvaluator:
    """Wraps ``evaluator(point) -> Metrics`` so workers, not the explorer process, flatten the results.

    It lives here rather than in ``dse.explore`` because a spawned worker imports the module
    of the callable it runs; this one does not pull in pandas or optuna.
    """

    evaluator: Callable[[Mapping[str, Any]], Any]

    def __call__(self, point: Mapping[str, Any]) -> FlatMetrics:
        metrics = self.evaluator(point)
        exact = getattr(metrics, "info", {}).get("exact")
        layers = [layer.row() for layer in getattr(metrics, "layers", [])]
        solver = getattr(metrics, "info", {}).get("solver")
        return FlatMetrics(
            values=dict(metrics.flat()),
            layers_blob=encode_layers(layers) if layers else None,
            exact=None if exact is None else bool(exact),
            solver=solver_facts(solver) if isinstance(solver, Mapping) else None,
        )


def solver_facts(solver: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar facts of a solver outcome (status, gap, bound, limit hit, ...): what the store keeps."""
    return {k: v for k, v in solver.items() if isinstance(v, (str, int, float, bool)) or v is None}


POINT_ID_LENGTH = 12
# Failure reasons that say the machine failed the point (the worker process died, Dask lost it, memory ran out),
# not that the point cannot be evaluated: a resumed run evaluates such points again.
TRANSIENT_FAILURES = ("WorkerCrashed", "KilledWorker", "MemoryError")


def failed_transiently(status: str, reason: str | None) -> bool:
    """Whether a stored result is a failure of the machine rather than of the point (``TRANSIENT_FAILURES``)."""
    return status == "failed" and (reason or "").startswith(TRANSIENT_FAILURES)


@dataclass
class PointRecord:
    """One evaluated point as stored: ``status`` is 'ok' or 'failed' (with ``reason``)."""

    key: str
    params: dict[str, Any]
    status: str
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    eval_s: float = 0.0
    evaluator: str = "analytical"
    exact: bool = True
    layers: list[dict[str, Any]] = field(default_factory=list)
    fingerprint: str = ""
    layers_blob: bytes | None = None  # ``layers`` already encoded (by a worker); stored as is when given
    seq: int | None = None  # assigned by the store on put, in evaluation order
    solver: dict[str, Any] | None = None  # solver status/gap when the mapper ran one (a limit hit is kept here)

    @property
    def point_id(self) -> str:
        return self.key[:POINT_ID_LENGTH]

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def transient(self) -> bool:
        """A failure of the machine, not of the point (its worker died or ran out of memory): evaluated again
        when the run resumes, rather than kept as the point's result."""
        return failed_transiently(self.status, self.reason)
