"""Surrogates: features, datasets, training with held-out splits, saved models, CLI, explorer evaluators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.cli import main
from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.evaluators import make_evaluation
from dse.explore import explore
from dse.session import build_evaluator
from dse.spec import SpecError, parse_spec
from dse.zoo import build
from hwmodels.systolic.pricing import sram_pj_per_byte, systolic_area_mm2
from mappers.systolic.fold import SystolicFoldMapper
from surrogates.dataset import WorkloadSpec, build_dataset, design_frame, stratified_points
from surrogates.evaluate import accuracy
from surrogates.systolic import features as feat
from surrogates.systolic.model import SurrogateModel
from surrogates.train import heldout_split, random_split, train
from templates.base import TemplateError
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


def test_closed_form_pairs_reproduce_the_mappers_stall_free_cycles():
    graph = build("resnet18")
    points = [{"rows": 16, "cols": 32, "dataflow": df, "sram_kib": 96} for df in ("os", "ws", "is")]
    ops = feat.op_table(graph)
    cross = feat.cross_features(ops, feat.arch_table("systolic", points, {}))
    compute = cross.column("est_compute_cycles").reshape(-1)
    for d, point in enumerate(points):
        arch = SystolicTemplate().instantiate(point)
        mapping = SystolicFoldMapper().map(graph, arch)
        for j, name in enumerate(ops.names):
            expected = mapping.ops[name].payload.compute_cycles
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
    result = explore(spec, tmp_path / "pure", make_evaluation(spec, graph, exact), progress=False)
    assert len(result.points) == 81 and not result.points["exact"].astype(bool).any()
    assert set(result.points["evaluator"]) == {"surrogate"}

    spec = make_spec(tmp_path, "hybrid")
    graph, exact = build_evaluator(spec)
    result = explore(spec, tmp_path / "hybrid", make_evaluation(spec, graph, exact), executor="serial", progress=False)
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
        make_evaluation(spec, graph, exact)


@pytest.mark.skipif(not WA_CSV.is_file(), reason=f"wa-hls4ml subset not found at {WA_CSV} (../shared absent)")
def test_surrogate_trained_on_real_synthesis_predicts_unseen_networks():
    from surrogates.truth.wa_hls4ml import FPGA_TARGETS, read_wa_hls4ml, train_measured

    frame = read_wa_hls4ml(WA_CSV)
    assert len(frame) > 7000 and frame["network"].nunique() > 300
    result = train_measured(frame.iloc[::3].reset_index(drop=True), "rf")
    test_rows = frame.iloc[::3].reset_index(drop=True)[result["test"]]
    assert set(test_rows["network"]).isdisjoint(set(frame.iloc[::3].reset_index(drop=True)[~result["test"]]["network"]))
    for target in ("latency_cycles", "lut", "ff"):
        m = accuracy(test_rows[target].to_numpy(), result["predictions"][target].to_numpy())
        assert m["p50"] < 10, (target, m)
    assert set(result["predictions"]) == set(FPGA_TARGETS)


def test_vectorised_arch_table_equals_per_point_instantiate():
    """The batch path must see exactly the designs ``instantiate`` builds, and refuse what it refuses."""
    template = SystolicTemplate()
    rng = np.random.default_rng(3)
    points = [
        {
            "rows": int(rng.integers(1, 300)),
            "cols": int(rng.integers(1, 300)),
            "dataflow": str(rng.choice(["os", "ws", "is"])),
            "ifmap_sram_kib": float(rng.uniform(2, 4096)),
            "filter_sram_kib": float(rng.integers(2, 4096)),
            "ofmap_sram_kib": float(rng.uniform(2, 4096)),
            "dram_gbps": float(rng.uniform(1, 400)),
            "precision": str(rng.choice(["int8", "int16", "fp16", "fp32"])),
            "tech": str(rng.choice(["asic-45nm", "asic-16nm"])),
            "vector_lanes": int(rng.choice([0, 16, 64])),
            "pe_weight_words": int(rng.choice([1, 12, 224])),
            "pe_psum_words": int(rng.choice([1, 24])),
        }
        for _ in range(200)
    ]
    fixed = {"freq_mhz": 700}
    table = feat.arch_table("systolic", points, fixed)
    for i, point in enumerate(points):
        arch = template.instantiate({**fixed, **point})
        assert table.columns["_rows"][i] == arch.rows and table.columns["_lanes"][i] == arch.vector_lanes
        assert table.columns["_ifmap_words"][i] == arch.sram_words("ifmap")
        assert table.columns["_filter_words"][i] == arch.sram_words("filter")
        assert table.columns["_words_per_cycle"][i] == pytest.approx(arch.dram_words_per_cycle, rel=1e-12)
        assert table.columns["_dataflow"][i] == ["os", "ws", "is"].index(arch.dataflow)
        # the one area formula: PE array with its scratchpads, banked SRAM macros, lanes, die overheads
        assert table.columns["_area_total"][i] == pytest.approx(sum(systolic_area_mm2(arch).values()), rel=1e-12)
    split = feat.arch_table("systolic", [{"sram_kib": 96.0}, {"sram_kib": 300}], {})
    assert list(split.columns["log_filter_kib"]) == pytest.approx([np.log2(32.0), np.log2(100.0)])
    bad = [*points[:5], {**points[5], "ifmap_sram_kib": 0.1}]
    with pytest.raises(TemplateError, match="ifmap_sram_kib=0.1 is below the minimum 1 KiB"):
        feat.arch_table("systolic", bad, fixed)
    with pytest.raises(TemplateError, match="give either sram_kib"):
        feat.arch_table("systolic", [*points[:3], {**points[3], "sram_kib": 30.0}], fixed)
    with pytest.raises(TemplateError, match="systolic has no parameter .colz."):
        feat.arch_table("systolic", [*points[:3], {**points[3], "colz": 4}], fixed)


def test_sram_energy_vectorised_matches_the_catalog():
    from hwmodels.catalogs.tech import get_tech

    kib = np.exp(np.random.default_rng(0).uniform(-1, 9, 300))
    tech = np.array(["asic-45nm", "asic-7nm", "asic-28nm"] * 100, dtype=object)
    expected = [get_tech(t).sram_energy_pj_per_byte(k) for t, k in zip(tech, kib)]
    np.testing.assert_allclose(sram_pj_per_byte(feat.label_codes(tech), kib), expected, rtol=1e-12)


@pytest.mark.parametrize("kind", ["gb", "rf"])
def test_design_level_model_batch_path_matches_the_dataset_path(dataset: pd.DataFrame, kind: str, tmp_path: Path):
    """level=design: the frame path (training/eval) and the batch path (explorer) give the same numbers."""
    train_part, test_part = random_split(dataset, 0.25, seed=0)
    model = SurrogateModel.fit(train_part, kind, level="design")
    truth = design_frame(test_part)
    pred = model.predict_frame(test_part)
    latency = accuracy(truth["design_latency_ms"], pred["latency_ms"])
    assert latency["r2"] > 0.9 and latency["mape"] < 15
    one = test_part[test_part["workload"] == "small_cnn"]
    first = one.drop_duplicates("design")
    params = [c for c in first.columns if c.startswith("param_")]
    points = [{c[len("param_") :]: row[c] for c in params} for _, row in first.iterrows()]
    points = [{k: (v.item() if hasattr(v, "item") else v) for k, v in p.items()} for p in points]
    batch = model.predict_designs(build("small_cnn"), "systolic", points, {"tech": "asic-28nm"})
    framed = pred[pred["workload"] == "small_cnn"].reset_index(drop=True)
    np.testing.assert_allclose(batch["latency_cycles"], framed["latency_cycles"], rtol=1e-9)
    np.testing.assert_allclose(batch["energy_mj"], framed["energy_mj"], rtol=1e-9)
    loaded = SurrogateModel.load(model.save(tmp_path / "design.joblib"))
    assert loaded.level == "design"
    np.testing.assert_allclose(loaded.predict_frame(test_part)["latency_ms"], pred["latency_ms"])
    if kind == "rf":
        trees = model.tree_predictions(build("small_cnn"), "systolic", points[:2], {"tech": "asic-28nm"})
        assert trees.shape == (len(model.design_model.estimators_), 2, 3)
    with pytest.raises(UserError, match="unknown surrogate level 'layer'"):
        SurrogateModel.fit(train_part, kind, level="layer")


@pytest.mark.parametrize("scratchpad", ["split", "unified", "pe"])
def test_closed_form_baseline_matches_the_systolic_model_per_op(scratchpad):
    """``pair_costs`` (the surrogates' baseline) against the full model, op by op, shared DRAM: exact
    cycles and energy wherever it is not marked approximate, and close where it is; for split SRAMs, for
    a unified scratchpad (whose banks are priced differently: one price function serves both) and for
    per-PE scratchpads next to registers (their reuse follows each GEMM's folds and conv window)."""
    graph = build("resnet18")
    ops = feat.op_table(graph)
    if scratchpad in ("split", "pe"):
        sizes = [{"ifmap_sram_kib": 64, "filter_sram_kib": f, "ofmap_sram_kib": 32} for f in (64, 512)]
        if scratchpad == "pe":
            sizes[0].update(pe_weight_words=16, pe_input_words=12, pe_psum_words=24)
    else:
        sizes = [{"scratchpad": "unified", "sram_kib": kib} for kib in (160, 608)]
    points = [
        {"rows": r, "cols": c, "dataflow": df, **size}
        for (r, c), size in zip(((16, 32), (64, 8)), sizes)
        for df in ("os", "ws", "is")
    ]
    costs = feat.pair_costs(ops, feat.arch_table("systolic", points, {}))
    for d, point in enumerate(points):
        exact = PointEvaluator(graph, "systolic")(point)
        by_name = {layer.layer: layer for layer in exact.layers}
        for j, name in enumerate(ops.names):
            layer = by_name[name]
            rel = 1e-9 if not costs["est_approximate"][d, j] else 0.25
            assert costs["est_cycles"][d, j] == pytest.approx(layer.cycles, rel=rel, abs=1e-6), (point, name)
            assert costs["est_energy_pj"][d, j] == pytest.approx(layer.energy_pj, rel=rel), (point, name)
        total = (costs["est_cycles"][d] * ops.count).sum()
        assert total == pytest.approx(exact.values["latency_cycles"], rel=0.02)
    mixed = [{**p, "dram_mode": mode} for p, mode in zip(points, ("shared", "per_operand", "unlimited") * 2)]
    archs = feat.arch_table("systolic", mixed, {})
    pairs, totals = feat.pair_costs(ops, archs), feat.pair_costs(ops, archs, totals=True)
    summed = feat.design_totals(lambda name: pairs[name], ops.count)
    for name in feat.PAIR_COLUMNS:  # the batch path's sums are the pair arrays' sums
        np.testing.assert_allclose(totals[name], summed[name], rtol=1e-12, err_msg=name)
