"""The hybrid evaluator's screening helpers: dominance against the exact front and front layers."""

from __future__ import annotations

import numpy as np

from hwmodels.base import Metrics
from surrogates.screening import closed_row, dominated_by, layer_ranks, pick_batch


def test_dominated_by_is_strict_dominance_by_some_front_row():
    front = np.array([[1.0, 4.0], [3.0, 2.0]])
    values = np.array([[2.0, 5.0], [1.0, 4.0], [0.5, 9.0], [3.0, 3.0], [2.0, 3.0]])
    # [1,4] equals a front row (not dominated); [2,3] lies between the two front rows
    assert dominated_by(front, values).tolist() == [True, False, False, True, False]
    assert not dominated_by(np.empty((0, 2)), values).any()


def test_layer_ranks_peel_fronts_and_put_nan_rows_last():
    values = np.array([[1.0, 1.0], [2.0, 2.0], [0.5, 3.0], [3.0, 3.0], [np.nan, 0.0]])
    ranks = layer_ranks(values)
    assert ranks.tolist() == [0, 1, 0, 2, len(values)]


def test_pick_batch_takes_likely_front_points_and_a_share_of_the_least_sure():
    chance = np.array([0.9, 0.1, 0.8, 0.0, 0.05, 0.7])
    ranks = np.zeros(6, dtype=int)
    spread = np.array([0.1, 0.2, 0.1, 0.9, 0.5, 0.1])
    picks = pick_batch(chance, ranks, spread, take=4, explore_share=0.25)
    # three by chance (0.9, 0.8, 0.7), the fourth the widest spread of the rest (index 3)
    assert picks.tolist() == [0, 2, 5, 3]
    assert sorted(pick_batch(chance, ranks, spread, take=8, explore_share=0.25).tolist()) == list(range(6))
    assert pick_batch(chance, ranks, spread, take=2, explore_share=0.0).tolist() == [0, 2]


def test_closed_row_floor_is_the_solver_bound_over_its_value():
    metrics = Metrics(values={"latency_ms": 2.0, "energy_mj": 1.0, "area_mm2": 3.0})
    metrics.info["solver"] = {"value": 200.0, "bound": 150.0}
    assert closed_row(metrics).latency_floor == 0.75
    metrics.info["solver"] = {"value": 200.0}
    assert np.isnan(closed_row(metrics).latency_floor)
