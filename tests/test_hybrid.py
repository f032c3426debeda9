"""The hybrid evaluator's screening helpers (dominance against the exact front, front layers) and its layer basis."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.evaluator_options import HybridOptions
from dse.evaluators import make_evaluation
from dse.explore import explore
from dse.session import build_evaluator
from dse.spec import parse_spec
from hwmodels.base import Metrics
from surrogates.dataset import WorkloadSpec
from surrogates.explorer.screening import HybridSweep
from surrogates.explorer.screening_basis import (
    closed_row,
    dominated_by,
    fit_layer_screen,
    layer_ranks,
    pick_batch,
    screening_forest,
    screens_by_layer,
)
from surrogates.layer.dataset import build_layer_dataset
from surrogates.layer.model import LayerSurrogate
from surrogates.learning import DESIGN_TARGETS


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


def test_layer_forest_trees_sum_their_own_layers(layer_rows: pd.DataFrame):
    # a one-tree forest: each tree's design sums are the model's own design prediction
    model = LayerSurrogate.fit(layer_rows, "rf", 0, regressor=screening_forest(1, 0))
    per_tree = model.tree_design_metrics(layer_rows)
    frame = model.predict_frame(layer_rows)
    for metric in DESIGN_TARGETS:
        np.testing.assert_allclose(per_tree[metric][0], frame[metric].to_numpy(float), rtol=1e-9)
    # more trees: one row per tree, every design, and power is each tree's energy over its latency
    per_tree = fit_layer_screen(layer_rows, 6, 0).tree_design_metrics(layer_rows)
    assert per_tree["latency_ms"].shape == (6, layer_rows["design"].nunique())
    np.testing.assert_allclose(per_tree["power_w"], per_tree["energy_mj"] / per_tree["latency_ms"], rtol=1e-9)


def test_hybrid_screens_a_cpsat_space_by_layer(tmp_path: Path):
    text = (
        "name: h\nworkload: {model: small_cnn}\ntemplate:\n  kind: systolic\n  mapper: cpsat\n"
        "  mapper_options: {objective: latency, time_limit_s: 1.0}\n  params:\n"
        "    rows: [8, 16, 32]\n    cols: [8, 16, 32]\n    sram_kib: [16, 64, 256, 1024]\n"
        "objectives: [min latency_ms, min area_mm2]\nsearch: {strategy: grid}\nevaluator: hybrid\n"
    )
    spec = parse_spec(text, tmp_path / "spec.yaml")
    assert screens_by_layer("systolic", "cpsat") and not screens_by_layer("systolic", "fold")
    graph, exact = build_evaluator(spec)
    result = explore(spec, tmp_path / "run", make_evaluation(spec, graph, exact), workers=1, progress=False)
    points = result.points
    assert points["exact"].astype(bool).sum() == 8  # the cap: max(initial_min, 20 % of 36)
    assert points.loc[points["pareto"], "exact"].astype(bool).all()
    # stored predictions are near the truth: the greedy baseline corrected per layer
    is_exact = points["exact"].astype(bool)
    predicted = points.loc[~is_exact].head(4)
    for _, row in predicted.iterrows():
        truth = exact({p: row[p] for p in ("rows", "cols", "sram_kib")})
        assert abs(np.log(row["latency_ms"] / truth.values["latency_ms"])) < 0.5


def test_the_registry_gives_the_hybrid_its_spec_options(tmp_path: Path):
    text = (
        "name: h\nworkload: {model: small_cnn}\ntemplate:\n  kind: multicore\n  mapper: greedy\n  params:\n"
        "    num_cores: [1, 2]\nobjectives: [min latency_ms, min area_mm2]\nevaluator: hybrid\n"
        "evaluator_options: {max_exact_fraction: 0.5, kappa: 2, trees: 12}\nsearch: {seed: 3}\n"
    )
    spec = parse_spec(text, tmp_path / "spec.yaml")
    graph, exact = build_evaluator(spec)
    evaluation = make_evaluation(spec, graph, exact)
    assert evaluation.sweep_class is HybridSweep and evaluation.evaluator.exact is exact
    assert evaluation.evaluator.options == HybridOptions(max_exact_fraction=0.5, kappa=2.0, trees=12)
    assert evaluation.evaluator.seed == 3
    analytical = make_evaluation(
        spec.model_copy(update={"evaluator": "analytical", "evaluator_options": {}}), graph, exact
    )
    assert analytical.evaluator is exact and analytical.sweep_class is not HybridSweep


@pytest.fixture(scope="module")
def layer_rows() -> pd.DataFrame:
    space = parse_spec(
        "name: l\nworkload: {model: small_cnn}\ntemplate:\n  kind: systolic\n  mapper: cpsat\n  params:\n"
        "    rows: [8, 16, 32]\n    cols: [8, 16]\n    sram_kib: [16, 64, 256]\nobjectives: [min latency_ms]\n",
        Path("l.yaml"),
    ).design_space()
    options = {"objective": "latency", "time_limit_s": 1.0}
    return build_layer_dataset(
        "systolic", space, {}, [WorkloadSpec("small_cnn")], 6, mapper="cpsat", mapper_options=options
    )
