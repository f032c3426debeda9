"""Surrogates: features, datasets, training with held-out splits, saved models, CLI, explorer evaluators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.cli import build_evaluator, main
from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.explore import explore
from dse.spec import SpecError, parse_spec
from dse.zoo import build
from mappers.systolic import SystolicFoldMapper
from surrogates import features as feat
from surrogates.dataset import WorkloadSpec, build_dataset, design_frame, stratified_points
from surrogates.evaluate import accuracy
from surrogates.hybrid import wrap_evaluator
from surrogates.model import SurrogateModel
from surrogates.train import heldout_split, random_split, train
from templates.systolic import SystolicTemplate

SHARED = Path(__file__).resolve().parents[2] / "shared"
WA_CSV = SHARED / "data" / "wa-hls4ml" / "wa_2layer_subset.csv"

SPEC = """
name: surrogate-test
workload: {{model: small_cnn, batch: 1, precision: int8}}
template:
  kind: systolic
  params:
    rows: [8, 16, 32]
    cols: [8, 16, 32]
    dataflow: [ws, os, is]
    sram_kib: [24, 96, 384]
    dram_gbps: 12.8
    freq_mhz: 800
objectives: [min latency_ms, min energy_mj]
search: {{strategy: grid}}
evaluator: {evaluator}
{extra}
"""


def make_spec(tmp_path: Path, evaluator: str = "analytical", extra: str = ""):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(evaluator=evaluator, extra=extra))
    return parse_spec(path.read_text(), path)


@pytest.fixture(scope="module")
def dataset() -> pd.DataFrame:
    spec = parse_spec(SPEC.format(evaluator="analytical", extra=""))
    workloads = [WorkloadSpec("small_cnn"), WorkloadSpec("jet_mlp"), WorkloadSpec("resnet18")]
    return build_dataset("systolic", spec.design_space(), spec.fixed_params(), workloads, 30, seed=1)


@pytest.fixture(scope="module")
def forest(dataset: pd.DataFrame) -> SurrogateModel:
    return SurrogateModel.fit(dataset, "rf")


def test_cross_features_reproduce_the_mappers_stall_free_cycles():
    graph = build("resnet18")
    points = [{"rows": 16, "cols": 32, "dataflow": df, "sram_kib": 96} for df in ("os", "ws", "is")]
    ops = feat.op_table(graph)
    cross = feat.cross_features(ops, feat.arch_table("systolic", points, {}))
    compute = 2 ** cross.matrix[:, feat.FEATURES.index("log_compute_cycles")] - 1
    for d, point in enumerate(points):
        arch = SystolicTemplate().instantiate(point)
        mapping = SystolicFoldMapper().map(graph, arch)
        for j, name in enumerate(ops.names):
            expected = mapping.ops[name].extra.get("compute_cycles", 0)
            assert compute[d * len(ops) + j] == pytest.approx(expected, rel=1e-9), (point, name)
    assert ops.count.sum() == len(graph.ops)  # every op is represented exactly once


def test_dataset_rows_add_up_to_the_whole_design(dataset: pd.DataFrame):
    assert set(dataset["workload"]) == {"small_cnn", "jet_mlp", "resnet18"}
    rows = dataset.assign(total=dataset["cycles"] * dataset["op_count"])
    sums = rows.groupby(["workload", "design"])["total"].sum()
    truth = rows.groupby(["workload", "design"])["design_latency_cycles"].first()
    np.testing.assert_allclose(sums.to_numpy(), truth.to_numpy(), rtol=1e-9)
    assert len(design_frame(dataset)) == 90


def test_stratified_points_share_the_categorical_combinations(tmp_path: Path):
    space = make_spec(tmp_path).design_space()
    points = stratified_points(space, 27, seed=3)
    counts = pd.Series([p["dataflow"] for p in points]).value_counts()
    assert counts.to_dict() == {"ws": 9, "os": 9, "is": 9}
    assert len({tuple(sorted(p.items())) for p in points}) == 27


def test_accuracy_metrics():
    m = accuracy(np.array([100.0, 200.0, 400.0]), np.array([110.0, 200.0, 300.0]))
    assert m["mape"] == pytest.approx((10 + 0 + 25) / 3)
    assert m["p50"] == pytest.approx(10.0)
    assert m["r2"] == pytest.approx(1 - (100 + 0 + 10000) / np.var([100, 200, 400]) / 3)


def test_forest_predicts_unseen_designs_of_a_seen_workload(dataset: pd.DataFrame):
    train_part, test_part = random_split(dataset, 0.25, seed=0)
    model = SurrogateModel.fit(train_part, "rf")
    truth = design_frame(test_part)
    pred = model.predict_frame(test_part)
    latency = accuracy(truth["design_latency_ms"], pred["latency_ms"])
    assert latency["r2"] > 0.9 and latency["mape"] < 15
    assert accuracy(truth["design_area_mm2"], pred["area_mm2"])["mape"] < 2


def test_predict_designs_matches_the_dataset_path(dataset: pd.DataFrame, forest: SurrogateModel):
    graph = build("small_cnn")
    points = [{"rows": 16, "cols": 8, "dataflow": "os", "sram_kib": 96}]
    fixed = {"dram_gbps": 12.8, "freq_mhz": 800, "tech": "asic-28nm", "precision": "int8"}
    direct = forest.predict_designs(graph, "systolic", points, fixed)
    exact = PointEvaluator(graph, "systolic", fixed=fixed)(points[0])
    assert direct["latency_ms"][0] == pytest.approx(exact["latency_ms"], rel=0.2)
    trees = forest.tree_predictions(graph, "systolic", points, fixed)
    assert trees.shape == (len(forest.op_model.estimators_), 1, 3)
    assert trees[:, 0, 0].mean() == pytest.approx(direct["latency_cycles"][0], rel=0.05)


def test_heldout_split_never_trains_on_the_test_workload(dataset: pd.DataFrame):
    train_part, test_part = heldout_split(dataset, ["resnet18"])
    assert "resnet18" not in set(train_part["workload"]) and set(test_part["workload"]) == {"resnet18"}
    with pytest.raises(UserError, match="not a workload of the dataset"):
        heldout_split(dataset, ["vgg16"])
    model = train(dataset, "rf", holdout=["resnet18"])
    held = model.metrics["heldout_workload"]
    assert held["train_workloads"] == ["jet_mlp", "small_cnn"]
    assert set(held["designs"]) == {"latency_ms", "energy_mj", "area_mm2", "power_w"}
    assert model.trained_on == ["jet_mlp", "resnet18", "small_cnn"]


def test_saved_model_round_trips_and_refuses_a_foreign_schema(tmp_path: Path, dataset, forest):
    path = forest.save(tmp_path / "m.joblib")
    loaded = SurrogateModel.load(path)
    np.testing.assert_allclose(loaded.predict_frame(dataset)["latency_ms"], forest.predict_frame(dataset)["latency_ms"])
    assert "scikit-learn" in loaded.versions
    forest_old = SurrogateModel(
        forest.kind,
        forest.op_model,
        forest.area_model,
        schema={**feat.schema(), "features": list(feat.FEATURES[:-1]) + ["old_feature"]},
    )
    forest_old.save(tmp_path / "old.joblib")
    with pytest.raises(UserError, match="feature schema does not match.*unknown \\['old_feature'\\]"):
        SurrogateModel.load(tmp_path / "old.joblib")
    (tmp_path / "junk.joblib").write_text("not a model")
    with pytest.raises(UserError, match="cannot be read as a surrogate model"):
        SurrogateModel.load(tmp_path / "junk.joblib")


def test_cli_dataset_train_eval(tmp_path: Path, capsys):
    spec = make_spec(tmp_path)
    data, model, plot = tmp_path / "d.parquet", tmp_path / "m.joblib", tmp_path / "p.html"
    argv = ["surrogate", "dataset", str(spec.path), "-n", "12", "-o", str(data), "--executor", "serial"]
    assert main(argv + ["--workload", "small_cnn", "--workload", "jet_mlp"]) == 0
    assert main(["surrogate", "train", str(data), "-o", str(model), "--model", "rf", "--holdout", "jet_mlp"]) == 0
    out = capsys.readouterr().out
    assert "held-out workload jet_mlp (trained on small_cnn)" in out and "latency_ms" in out
    assert main(["surrogate", "eval", str(model), str(data), "--plot", str(plot)]) == 0
    assert plot.is_file() and "plotly" in plot.read_text()[:5000].lower()
    assert main(["surrogate", "train", str(tmp_path / "missing.parquet"), "-o", str(model)]) == 2
    assert "dataset not found" in capsys.readouterr().err
    assert main(["surrogate", "train", str(data), "-o", str(model), "--model", "svm"]) == 2


def test_spec_surrogate_needs_an_existing_model_file(tmp_path: Path, capsys):
    spec = make_spec(tmp_path, "surrogate")
    assert main(["explore", str(spec.path), "-o", str(tmp_path / "run"), "-q"]) == 2
    assert "evaluator surrogate needs a trained model" in capsys.readouterr().err
    with pytest.raises(SpecError, match=r"spec.yaml:\d+: surrogate: model file 'nope.joblib' not found"):
        make_spec(tmp_path, "surrogate", "surrogate: nope.joblib")


def test_explore_with_surrogate_and_hybrid_evaluators(tmp_path: Path, forest: SurrogateModel):
    forest.save(tmp_path / "model.joblib")
    spec = make_spec(tmp_path, "surrogate", "surrogate: model.joblib")
    graph, exact = build_evaluator(spec)
    result = explore(spec, tmp_path / "pure", wrap_evaluator(spec, graph, exact), progress=False)
    assert len(result.points) == 81 and not result.points["exact"].astype(bool).any()
    assert set(result.points["evaluator"]) == {"surrogate"}

    spec = make_spec(tmp_path, "hybrid")
    graph, exact = build_evaluator(spec)
    result = explore(spec, tmp_path / "hybrid", wrap_evaluator(spec, graph, exact), executor="serial", progress=False)
    points = result.points
    exact_mask = points["exact"].astype(bool)
    assert len(points) == 81 and 8 <= exact_mask.sum() <= 0.35 * 81
    assert exact_mask[points["pareto"]].all()  # the front is made of exactly evaluated points
    assert any("hybrid:" in note for note in result.notes)
    # its exact points carry the analytical model's figures
    row = points[exact_mask].iloc[0]
    point = {k: row[k] for k in ("rows", "cols", "dataflow", "sram_kib")}
    assert row["latency_ms"] == pytest.approx(exact({**point})["latency_ms"])


def test_hybrid_refuses_metrics_it_cannot_predict(tmp_path: Path):
    spec = make_spec(tmp_path, "hybrid").model_copy(update={"objectives": ["min latency_ms", "min dram_mb"]})
    graph, exact = build_evaluator(spec)
    with pytest.raises(UserError, match="predicts only .*dram_mb needs evaluator: analytical"):
        wrap_evaluator(spec, graph, exact)


@pytest.mark.skipif(not WA_CSV.is_file(), reason=f"wa-hls4ml subset not found at {WA_CSV} (../shared absent)")
def test_surrogate_trained_on_real_synthesis_predicts_unseen_networks():
    from surrogates.ingest import FPGA_TARGETS, read_wa_hls4ml, train_measured

    frame = read_wa_hls4ml(WA_CSV)
    assert len(frame) > 7000 and frame["network"].nunique() > 300
    result = train_measured(frame.iloc[::3].reset_index(drop=True), "rf")
    test_rows = frame.iloc[::3].reset_index(drop=True)[result["test"]]
    assert set(test_rows["network"]).isdisjoint(set(frame.iloc[::3].reset_index(drop=True)[~result["test"]]["network"]))
    for target in ("latency_cycles", "lut", "ff"):
        m = accuracy(test_rows[target].to_numpy(), result["predictions"][target].to_numpy())
        assert m["p50"] < 10, (target, m)
    assert set(result["predictions"]) == set(FPGA_TARGETS)
