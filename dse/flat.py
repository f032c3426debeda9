"""What a worker sends back for a point, and the encodings the store keeps: flat metrics, per-layer rows.

A module of its own, light to import: a spawned pool worker imports it (``FlatMetricsEvaluator``) and
neither SQLite nor Arrow nor pandas.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
