"""Design points as columns: the array path's form of a batch of points (one numpy array per parameter).

The same points, keys and membership rules as the point-by-point path, computed once per distinct value
of a column rather than once per point: ``grid_columns`` is ``DesignSpace.grid`` from an index,
``column_digests`` is ``dse.store.point_key`` of each row (the same bytes hashed, so a point has one key
whichever path stored it), and ``contains_columns`` is ``DesignSpace.contains`` of each row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

import dse
from dse.space import DesignSpace, Dimension, coerce
from dse.store import canonical_json

Columns = dict[str, np.ndarray]
MAX_LISTED_VALUES = 1 << 20  # a grid dimension listed as an array of its values (larger ones go point by point)


def column_of(values: Sequence[Any], ptype: str) -> np.ndarray:
    """Python values of one dimension as a numpy column of its type (strings and mixed values as objects)."""
    dtype = {"int": np.int64, "float": np.float64, "bool": np.bool_}.get(ptype)
    if dtype is not None:
        try:
            return np.asarray(values, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            pass
    column = np.empty(len(values), dtype=object)
    column[:] = list(values)
    return column


def grid_columns(space: DesignSpace, start: int, n: int) -> Columns | None:
    """Grid points ``start`` .. ``start + n - 1`` in ``DesignSpace.grid`` order (the last dimension
    fastest) as columns; None when a dimension is too large to list or the index leaves int64."""
    counts = [d.grid_count() for d in space.dims]
    if start + n >= 2**62 or any(c > MAX_LISTED_VALUES for c in counts):
        return None
    index = np.arange(start, start + n, dtype=np.int64)
    columns: Columns = {}
    for dim, count in zip(reversed(space.dims), reversed(counts)):
        index, digit = np.divmod(index, count)
        columns[dim.name] = column_of(dim.grid_values(), dim.ptype)[digit]
    return {d.name: columns[d.name] for d in space.dims}


def points_columns(space: DesignSpace, points: Sequence[Mapping[str, Any]]) -> Columns:
    """Points (dicts of the space's dimensions) as columns, in the space's order."""
    return {
        d.name: column_of([p[d.name] for p in points], d.ptype) for d in space.dims if points and d.name in points[0]
    }


def column_points(columns: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """Columns back as point dicts of Python values (what the evaluators take)."""
    names = list(columns)
    return [dict(zip(names, row)) for row in zip(*(np.asarray(columns[name]).tolist() for name in names))]


def _distinct(column: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """(code of each row, the distinct Python values): what is computed per value, computed once each."""
    codes, uniques = pd.factorize(np.asarray(column), use_na_sentinel=False)
    return codes, list(np.asarray(uniques).tolist())


def _fragments(dim: Dimension, column: np.ndarray) -> np.ndarray:
    """Each row's ``"name":value`` piece of the canonical JSON text (``canonical_json`` of the coerced value).

    A float or int column of a dimension of its own type needs no coercion, and JSON writes such a number as
    Python's ``repr`` does: each distinct value is written once, without the JSON encoder."""
    codes, values = _distinct(column)
    head = canonical_json({dim.name: 0})[1:-2]  # '"name":'
    numbers = {"float": (np.floating, float.__repr__), "int": (np.integer, int.__repr__)}.get(dim.ptype)
    rendered = np.empty(len(values), dtype=object)
    if numbers is not None and np.issubdtype(np.asarray(column).dtype, numbers[0]) and np.isfinite(values).all():
        rendered[:] = [head + text for text in map(numbers[1], values)]
    else:
        rendered[:] = [canonical_json({dim.name: coerce(value, dim.ptype)})[1:-1] for value in values]
    return rendered[codes]


def column_digests(fingerprint: str, space: DesignSpace, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """The raw sha256 digest of ``point_key(fingerprint, space.canonical(row))`` for every row (numpy ``S32``).

    ``space.canonical`` fills fixed dimensions and coerces each value to its dimension's type; the canonical
    JSON text sorts the names and writes no spaces. ValueError, as there, for a value that cannot be coerced."""
    unknown = [name for name in columns if name not in space.names]
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; known: {', '.join(space.names)}")
    pieces = []
    for dim in sorted(space.dims, key=lambda d: d.name):
        if dim.name in columns:
            pieces.append(_fragments(dim, columns[dim.name]))
        elif dim.is_fixed:
            pieces.append(np.full(n, canonical_json({dim.name: dim.values[0]})[1:-1], dtype=object))
        else:
            raise ValueError(f"point has no value for {dim.name!r}")
    head, tail = f"{fingerprint}\n{{", f"}}\n{dse.__version__}"
    rows = zip(*(piece.tolist() for piece in pieces)) if pieces else ([] for _ in range(n))
    raw = b"".join(hashlib.sha256((head + ",".join(row) + tail).encode()).digest() for row in rows)
    return np.frombuffer(raw, dtype="S32").copy()


def contains_columns(space: DesignSpace, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """``space.contains`` of every row: every free dimension given, nothing unknown, each value allowed."""
    if any(name not in space.names for name in columns):
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for dim in space.dims:
        if dim.name not in columns:
            if not dim.is_fixed:
                return np.zeros(n, dtype=bool)
            continue
        mask &= _allowed(dim, np.asarray(columns[dim.name]))
    return mask


def _allowed(dim: Dimension, column: np.ndarray) -> np.ndarray:
    """``dim.contains`` of each value: a float range on a float column by array bounds (the rule's own bounds),
    anything else once per distinct value."""
    if dim.values is None and dim.ptype == "float" and np.issubdtype(column.dtype, np.floating):
        low, high = dim.range_bounds()
        return (column >= low) & (column <= high)
    codes, values = _distinct(column)
    allowed = np.array([dim.contains(value) for value in values], dtype=bool)
    return allowed[codes] if len(values) else np.zeros(len(column), dtype=bool)
