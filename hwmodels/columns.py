"""Numbers or numpy columns: the few operations a cost formula needs that Python spells differently for one
design (``max``, ``min``, ``math.ceil``, a conditional) and for many at once (the array evaluations,
``hwmodels.*.arrays``). Each returns exactly what the Python spelling returns for plain numbers, so a formula
written with them gives the scalar path its usual figures and the array path the same figures per design."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def is_column(*values: Any) -> bool:
    """Whether any of ``values`` is a numpy array (the array path)."""
    return any(isinstance(x, np.ndarray) for x in values)


def where(condition: Any, yes: Any, no: Any) -> Any:
    """``yes if condition else no`` for one design, elementwise for columns (both sides are evaluated)."""
    if is_column(condition, yes, no):
        return np.where(condition, yes, no)
    return yes if condition else no


def largest(values: list[Any]) -> Any:
    """``max(values)`` for numbers, elementwise for columns."""
    if is_column(*values):
        return np.maximum.reduce(np.broadcast_arrays(*values))
    return max(values)


def smallest(values: list[Any]) -> Any:
    """``min(values)`` for numbers, elementwise for columns."""
    if is_column(*values):
        return np.minimum.reduce(np.broadcast_arrays(*values))
    return min(values)


def ceil(value: Any) -> Any:
    """``math.ceil`` (an int) for a number, ``np.ceil`` (floats of the same values) for a column."""
    return np.ceil(value) if is_column(value) else math.ceil(value)


def rate(amount: Any, per: Any) -> Any:
    """``amount / per``, 0 where ``per`` is not positive: for numbers or columns."""
    if is_column(amount, per):
        shape = np.broadcast_shapes(np.shape(amount), np.shape(per))
        return np.divide(amount, per, out=np.zeros(shape), where=np.asarray(per) > 0)
    return amount / per if per > 0 else 0.0
