"""What the array-evaluation tests share: one design's flat metrics from the array path against the scalar path's."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

TOLERANCE = 1e-12  # relative: the array paths sum in other orders than the scalar path


def assert_row_equal(want: Mapping[str, float], columns: Mapping[str, np.ndarray], row: int, context: object) -> None:
    """``want`` (a scalar ``Metrics.flat()``) equals row ``row`` of the array path's ``flat_columns``: the same
    names in the same order (a column that is NaN for this row stands for a metric the design has not), every
    value within ``TOLERANCE`` (infinities and NaN equal themselves)."""
    names = [name for name, column in columns.items() if name in want or not np.isnan(column[row])]
    assert names == list(want), context
    for name, value in want.items():
        have = float(columns[name][row])
        if np.isnan(value) or np.isinf(value):
            assert have == value or (np.isnan(value) and np.isnan(have)), (name, context)
        else:
            assert have == pytest.approx(value, rel=TOLERANCE, abs=0.0), (name, context)
