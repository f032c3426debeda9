"""Pareto masks, hypervolume and its history against hand-computed and brute-force answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dse.objectives import Constraint, Objective, meets_constraints
from dse.pareto import (
    FrontTracker,
    Normalisation,
    feasible_mask,
    front_mask,
    hypervolume,
    hypervolume_history,
    pareto_mask,
    to_minimisation,
)


def brute_force_front(values_min: np.ndarray) -> np.ndarray:
    n = len(values_min)
    mask = np.ones(n, dtype=bool)
    for i in range(n):
        if np.isnan(values_min[i]).any():
            mask[i] = False
            continue
        for j in range(n):
            if i != j and not np.isnan(values_min[j]).any():
                if np.all(values_min[j] <= values_min[i]) and np.any(values_min[j] < values_min[i]):
                    mask[i] = False
                    break
    return mask


def test_pareto_mask_two_objectives_by_hand():
    values = np.array([[1, 5], [2, 3], [3, 4], [4, 1], [2, 3], [5, 5]], dtype=float)
    # (3,4) is dominated by (2,3); (5,5) by everything; the duplicate (2,3) rows dominate neither each other
    assert pareto_mask(values, ["min", "min"]).tolist() == [True, True, False, True, True, False]


def test_pareto_mask_respects_max_direction_and_nan():
    values = np.array([[1.0, 10.0], [1.0, 20.0], [0.5, 5.0], [np.nan, 100.0]])
    # minimise the first, maximise the second: (1,20) dominates (1,10); (0.5,5) is best on the first
    assert pareto_mask(values, ["min", "max"]).tolist() == [False, True, True, False]


@pytest.mark.parametrize("m", [2, 3, 5])
def test_pareto_mask_matches_brute_force(m):
    rng = np.random.default_rng(m)
    values = rng.random((300, m))
    values[rng.integers(0, 300, 10)] = np.round(values[rng.integers(0, 300, 10)], 1)  # some ties
    directions = ["min", "max"] * m
    directions = directions[:m]
    expected = brute_force_front(to_minimisation(values, directions))
    assert np.array_equal(pareto_mask(values, directions), expected)
    assert expected.any()


def test_pareto_mask_rejects_bad_directions():
    with pytest.raises(ValueError, match="min' or 'max"):
        pareto_mask(np.ones((2, 2)), ["min", "up"])


def test_hypervolume_2d_staircase():
    front = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert hypervolume(front, np.array([4.0, 4.0])) == pytest.approx(6.0)
    # a dominated point and a point beyond the reference add nothing
    more = np.vstack([front, [[3.5, 3.5], [5.0, 0.5]]])
    assert hypervolume(more, np.array([4.0, 4.0])) == pytest.approx(6.0)
    assert hypervolume(np.empty((0, 2)), np.array([1.0, 1.0])) == 0.0


def test_hypervolume_3d_inclusion_exclusion():
    points = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    # boxes of 4 and 4 overlapping in [1,2]x[0,2]x[1,2] = 2
    assert hypervolume(points, np.array([2.0, 2.0, 2.0])) == pytest.approx(6.0)
    assert hypervolume(np.array([[1.0, 1.0, 1.0]]), np.array([2.0, 3.0, 4.0])) == pytest.approx(6.0)


def test_hypervolume_matches_monte_carlo_in_4d():
    rng = np.random.default_rng(7)
    points = rng.random((12, 4))
    reference = np.full(4, 1.1)
    samples = rng.random((200_000, 4)) * 1.1
    dominated = np.zeros(len(samples), dtype=bool)
    for p in points:
        dominated |= np.all(samples >= p, axis=1)
    estimate = dominated.mean() * 1.1**4
    assert hypervolume(points, reference) == pytest.approx(estimate, rel=0.02)


def test_normalisation_maps_range_to_unit_and_reference_is_1_1():
    values = np.array([[10.0, -4.0], [20.0, -2.0], [15.0, -3.0]])
    scale = Normalisation.from_values(values)
    scaled = scale.apply(values)
    assert scaled.min(axis=0).tolist() == [0.0, 0.0]
    assert scaled.max(axis=0).tolist() == [1.0, 1.0]
    assert scale.reference.tolist() == [1.1, 1.1]
    flat = Normalisation.from_values(np.array([[3.0, 1.0], [3.0, 2.0]]))
    assert flat.apply(np.array([[3.0, 1.5]])).tolist() == [[0.0, 0.5]]  # zero span does not divide by zero


def test_front_tracker_matches_pareto_mask():
    rng = np.random.default_rng(3)
    values = rng.random((200, 3))
    tracker = FrontTracker(3)
    for row in values:
        tracker.add(row)
    expected = values[pareto_mask(values, ["min"] * 3)]
    assert sorted(map(tuple, tracker.front)) == sorted(map(tuple, expected))


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seq": [0, 1, 2, 3, 4, 5],
            "status": ["ok", "ok", "failed", "ok", "ok", "ok"],
            "latency_ms": [4.0, 3.0, np.nan, 1.0, 0.5, 2.0],
            "energy_mj": [4.0, 3.0, np.nan, 3.5, 0.1, 1.0],
            "area_mm2": [1.0, 1.0, np.nan, 1.0, 99.0, 1.0],
        }
    )


OBJECTIVES = [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
AREA = [Constraint("area_mm2", high=10.0)]


def test_feasible_and_front_masks():
    frame = _frame()
    assert feasible_mask(frame, AREA).tolist() == [True, True, False, True, False, True]
    assert feasible_mask(frame, [Constraint("area_mm2", low=50.0)]).tolist() == [False] * 4 + [True, False]
    assert feasible_mask(frame, [Constraint("missing_metric", high=1.0)]).tolist() == [False] * 6
    # point 4 would dominate everything but breaks the area constraint
    assert front_mask(frame, OBJECTIVES, AREA).tolist() == [False, False, False, True, False, True]


def test_one_feasibility_rule_for_a_point_and_for_columns():
    """meets_constraints judges one point as it judges a column of points, and agrees with violation() == 0."""
    constraints = [Constraint("area_mm2", high=10.0), Constraint("power_w", low=1.0, high=2.0), Constraint("dsp")]
    points = [
        {"area_mm2": 10.0, "power_w": 1.0, "dsp": 0.0},  # bounds are inclusive
        {"area_mm2": 10.5, "power_w": 1.5, "dsp": 0.0},
        {"area_mm2": 1.0, "power_w": 2.5, "dsp": 0.0},
        {"area_mm2": 1.0, "power_w": 1.5, "dsp": float("nan")},  # a NaN fails even a bound-less constraint
        {"area_mm2": None, "power_w": 1.5, "dsp": 0.0},
        {"power_w": 1.5, "dsp": 0.0},  # missing
    ]
    one_by_one = [bool(meets_constraints(p, constraints)) for p in points]
    assert one_by_one == [True, False, False, False, False, False]
    assert one_by_one == [all(c.violation(p) == 0.0 for c in constraints) for p in points]
    columns = {m: np.array([p.get(m) for p in points], dtype=float) for m in ("area_mm2", "power_w", "dsp")}
    assert meets_constraints(columns, constraints).tolist() == one_by_one
    assert bool(meets_constraints({}, [])) is True


def test_hypervolume_history_counts_only_feasible_ok_points():
    frame = _frame()
    history = hypervolume_history(frame, OBJECTIVES, AREA)
    assert history["seq"].tolist() == [0, 1, 2, 3, 4, 5]
    assert history["front_size"].tolist() == [1, 1, 1, 2, 2, 2]
    assert np.all(np.diff(history["hypervolume"]) >= -1e-12)
    # final value = hypervolume of the feasible front, normalised over the feasible points' ranges
    feasible = frame[feasible_mask(frame, AREA)]
    values = feasible[["latency_ms", "energy_mj"]].to_numpy()
    scale = Normalisation.from_values(values)
    expected = hypervolume(scale.apply(values), scale.reference)
    assert history["hypervolume"].iloc[-1] == pytest.approx(expected)
    assert history["hypervolume"].iloc[2] == history["hypervolume"].iloc[1]  # the failed point changed nothing


def test_hypervolume_history_uses_feasible_column_and_handles_no_feasible_point():
    frame = _frame().assign(feasible=False)
    history = hypervolume_history(frame, OBJECTIVES)
    assert history["hypervolume"].tolist() == [0.0] * 6
    assert history["front_size"].tolist() == [0] * 6
    assert hypervolume_history(frame.iloc[:0], OBJECTIVES).empty


def test_front_tracker_add_many_equals_adding_one_by_one_and_history_follows_the_front(monkeypatch):
    """The chunk screen sets aside only rows ``add`` would refuse: the same front and the same rows joined;
    the history (screened per chunk) holds each front's hypervolume until the next change."""
    rng = np.random.default_rng(4)
    points = np.round(rng.random((3000, 3)), 2)  # rounded: ties and repeats happen
    points[::97] = np.nan
    one, many = FrontTracker(3), FrontTracker(3)
    joined = [one.add(p) for p in points[:1500]] + [one.add(p) for p in points[1500:]]
    got = np.concatenate([many.add_many(points[:1500]), many.add_many(points[1500:])])
    assert got.tolist() == joined and sum(joined) > 20
    assert np.array_equal(one.front, many.front)
    frame = pd.DataFrame({"seq": np.arange(300), "latency_ms": points[:300, 0], "energy_mj": points[:300, 1]})
    monkeypatch.setattr("dse.pareto.HISTORY_CHUNK", 64)  # several chunks
    history = hypervolume_history(frame, OBJECTIVES)
    scale = Normalisation.from_values(frame[["latency_ms", "energy_mj"]].dropna().to_numpy())
    for i in (0, 57, 123, 299):
        upto = frame.iloc[: i + 1][["latency_ms", "energy_mj"]].dropna().to_numpy()
        want = hypervolume(scale.apply(upto[pareto_mask(upto, ["min", "min"])]), scale.reference)
        assert history["hypervolume"].iloc[i] == pytest.approx(want, rel=1e-12)
        assert history["front_size"].iloc[i] == len(np.unique(upto[pareto_mask(upto, ["min", "min"])], axis=0))
