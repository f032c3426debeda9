"""The feature contract (surrogates.contract.features) and its design-level surrogate, for every template."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.evaluators import make_evaluation
from dse.explore import explore
from dse.registry import family, layer_baseline
from dse.spec import parse_spec
from dse.zoo import build
from mappers.multicore.balanced import balanced_schedule
from mappers.multicore.cpsat import seed_schedule
from mappers.multicore.problem import build_problem
from mappers.multicore.schedule import core_loads
from surrogates.contract.features import (
    ClosedForm,
    closed_form_mapper,
    contract_features,
    contract_schema,
    param_feature_names,
    supported_templates,
)
from surrogates.contract.model import ContractSurrogate, correction_helps, is_contract
from surrogates.dataset import WorkloadSpec, build_dataset, feature_set, stratified_points
from surrogates.evaluate import baseline_accuracy, design_accuracy
from surrogates.layer.dataset import build_layer_dataset
from surrogates.layer.model import LayerSurrogate, feature_names, is_layer
from surrogates.protocol import fit_surrogate, load_surrogate

POINTS = {
    "systolic": [{"rows": 16, "cols": 32}, {"rows": 32, "cols": 8, "dataflow": "os"}],
    "rdu": [{"preset": "sn40l", "pcus": 260, "pmus": 260, "sram_mb": 130}],
    "gpu": [{"gpu": "l4"}, {"gpu": "h100_sxm", "execution": "eager"}],
    "fpga_dataflow": [{"reuse_factor": 4}, {"reuse_factor": 1, "strategy": "resource"}],
    "multicore": [{"num_cores": 2}, {"num_cores": 3}],
}


def test_every_registered_family_has_a_closed_form():
    assert set(supported_templates()) == set(POINTS)
    from dse.registry import families

    assert set(families()) <= set(supported_templates()), "a new family needs a closed form in the contract"


@pytest.mark.parametrize("kind", sorted(POINTS))
def test_contract_rows_follow_the_schema_and_the_closed_form(kind: str):
    graph = build("jet_mlp" if kind == "fpga_dataflow" else "small_cnn")
    points = POINTS[kind]
    rows = contract_features(graph, kind, points, {})
    schema = contract_schema(kind)
    assert rows.names == schema["features"]
    assert rows.matrix.shape == (len(points), len(schema["features"]))
    assert not rows.failed.any()
    mapper = closed_form_mapper(kind)  # the closed form is the family's cheap mapper through its own model
    for i, point in enumerate(points):
        exact = PointEvaluator(graph, kind, mapper)(point)
        assert rows.baseline["latency_ms"][i] == pytest.approx(exact["latency_ms"], rel=1e-12)
    # every template parameter is a column: one that appears later needs no code here
    template = family(kind).template()
    assert len(param_feature_names(template)) >= len(template.params())


def test_rdu_closed_form_lies_between_the_section_bound_and_the_unfused_plan():
    graph = build("gpt2", precision="bf16", phase="decode", kv_len=128, num_layers=1)
    point = {"preset": "sn40l", "pcus": 260, "pmus": 260, "sram_mb": 130}
    heuristic = ClosedForm(graph, "rdu", {})(point)
    unfused = PointEvaluator(graph, "rdu", "unfused")(point)
    assert heuristic["latency_ms"] <= unfused["latency_ms"] * (1 + 1e-12)
    solver = heuristic.info["solver"]
    assert solver["bound"] <= solver["value"] * (1 + 1e-12)


@pytest.fixture(scope="module")
def cpsat_data(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    spec = parse_spec(
        "name: t\nworkload: {model: small_cnn}\ntemplate:\n  kind: systolic\n  mapper: cpsat\n"
        "  mapper_options: {time_limit_s: 0.5}\n  params: {rows: [8, 16, 32], cols: [8, 16, 32], "
        "dataflow: [ws, os], sram_kib: [32, 128]}\nobjectives: [min latency_ms, min energy_mj]\n",
        tmp_path_factory.mktemp("spec") / "spec.yaml",
    )
    workloads = [WorkloadSpec("small_cnn"), WorkloadSpec("jet_mlp"), WorkloadSpec("small_cnn", batch=2)]
    return build_dataset(
        "systolic",
        spec.design_space(),
        spec.fixed_params(),
        workloads,
        10,
        mapper="cpsat",
        mapper_options={"time_limit_s": 0.5},
    )


def test_a_non_default_mapper_is_the_truth_of_a_contract_dataset(cpsat_data: pd.DataFrame):
    assert feature_set("systolic", "cpsat") == "contract" and feature_set("systolic", None) == "systolic"
    assert is_contract(cpsat_data)
    assert len(cpsat_data) == 30  # one row per design
    truth, base = cpsat_data["design_latency_cycles"], cpsat_data["base_latency_cycles"]
    assert (truth > 0).all() and (base > 0).all()
    assert not np.allclose(truth, base)  # CP-SAT's tiling is not the fold closed form


def test_contract_surrogate_trains_predicts_and_round_trips(cpsat_data: pd.DataFrame, tmp_path: Path):
    train = cpsat_data[cpsat_data["workload"] != "small_cnn@b2"]
    model = ContractSurrogate.fit(train, "rf")
    assert {"latency_ms", "energy_mj", "area_mm2"} <= set(model.metric_names)
    fitted = design_accuracy(model, train)
    assert fitted["latency_ms"]["r2"] > 0.9 and fitted["area_mm2"]["mape"] < 1e-6
    loaded = load_surrogate(model.save(tmp_path / "m.joblib"))
    points = [{"rows": 16, "cols": 8, "dataflow": "ws", "sram_kib": 32}]
    a = model.predict_designs(build("small_cnn"), "systolic", points, {})
    b = loaded.predict_designs(build("small_cnn"), "systolic", points, {})
    pd.testing.assert_frame_equal(a, b)
    trees = model.tree_predictions(build("small_cnn"), "systolic", points, {})
    assert trees.shape == (len(model.regressor.estimators_), 1, len(model.metric_names))
    with pytest.raises(UserError, match="trained for template systolic"):
        model.predict_designs(build("small_cnn"), "gpu", [{}], {})
    model.schema = {**model.schema, "features": model.schema["features"][:-1]}
    with pytest.raises(UserError, match="feature contract does not match"):
        load_surrogate(model.save(tmp_path / "old.joblib"))


def test_hybrid_runs_on_a_contract_template(tmp_path: Path):
    text = (
        "name: h\nworkload: {model: small_cnn}\ntemplate:\n  kind: multicore\n  mapper: greedy\n  params:\n"
        "    num_cores: [1, 2, 3, 4]\n    core0_rows: [8, 16, 32]\n    core0_cols: [8, 16, 32]\n"
        "objectives: [min latency_ms, min area_mm2]\nsearch: {strategy: grid}\nevaluator: hybrid\n"
    )
    spec = parse_spec(text, tmp_path / "spec.yaml")
    from dse.session import build_evaluator

    graph, exact = build_evaluator(spec)
    result = explore(spec, tmp_path / "run", make_evaluation(spec, graph, exact), workers=1, progress=False)
    points = result.points
    assert (points["status"] == "ok").all()
    assert points["exact"].astype(bool).sum() == 8  # the cap: max(initial_min, 20 % of 36)
    # predicted points are stored only when they cannot reach the front; the front is exact points only
    assert points.loc[points["pareto"], "exact"].astype(bool).all()
    unresolved = 36 - len(points)
    assert unresolved == 0 or any(f"{unresolved} candidates the cap left unresolved" in n for n in result.notes)
    # every stored prediction is dominated by an exact point (no constraints here), so none can be on the front
    is_exact = points["exact"].astype(bool)
    exact_values = points.loc[is_exact, ["latency_ms", "area_mm2"]].to_numpy(float)
    for values in points.loc[~is_exact, ["latency_ms", "area_mm2"]].to_numpy(float):
        assert ((exact_values <= values).all(axis=1) & (exact_values < values).any(axis=1)).any()


# ------------------------------------------------------------------------------ layer-level contract
def test_multicore_closed_form_balances_at_least_as_well_as_its_seed():
    graph = build("small_cnn")
    arch = family("multicore").template().instantiate({"num_cores": 3})
    problem = build_problem(graph, arch)
    seed = seed_schedule(problem, "throughput", 0.0, 1, 0)
    balanced = balanced_schedule(problem, "throughput")
    assert max(core_loads(problem, balanced.layer_core)) <= max(core_loads(problem, seed.layer_core))
    assert balanced_schedule(problem, "latency").makespan <= seed_schedule(problem, "latency", 0.0, 1, 0).makespan
    # the closed form follows the truth's objective: the contract passes the mapper options through
    closed = ClosedForm(graph, "multicore", {}, {"objective": "throughput", "time_limit_s": 1.0})
    assert closed({"num_cores": 3}).values["throughput_ips"] > 0


def layer_space():
    return parse_spec(
        "name: l\nworkload: {model: small_cnn}\ntemplate:\n  kind: systolic\n  mapper: cpsat\n  params:\n"
        "    rows: [8, 16, 32]\n    cols: [8, 16]\n    sram_kib: [16, 64, 256]\n"
        "objectives: [min latency_ms]\n",
        Path("l.yaml"),
    ).design_space()


@pytest.fixture(scope="module")
def layer_data() -> pd.DataFrame:

    space = layer_space()
    workloads = [WorkloadSpec("small_cnn"), WorkloadSpec("jet_mlp")]
    return build_layer_dataset(
        "systolic",
        space,
        {},
        workloads,
        6,
        mapper="cpsat",
        mapper_options={"objective": "latency", "time_limit_s": 1.0},
    )


def test_layer_rows_hold_the_greedy_baseline_and_the_cpsat_truth_per_layer(layer_data: pd.DataFrame):
    assert is_layer(layer_data) and layer_baseline("systolic", "cpsat") == "greedy"
    assert set(feature_names("systolic")) <= set(layer_data.columns)
    designs = layer_data.groupby(["workload", "design"])
    # the layers add up to the design: both for the truth and for the cheap mapper
    np.testing.assert_allclose(designs["cycles"].sum(), designs["design_latency_cycles"].first(), rtol=1e-9)
    np.testing.assert_allclose(designs["base_cycles"].sum(), designs["base_latency_cycles"].first(), rtol=1e-9)

    point = stratified_points(layer_space(), 6, 0)[0]  # design 0 of the first workload (build_dataset's seeds)
    greedy = PointEvaluator(build("small_cnn"), "systolic", "greedy", {}, {"objective": "latency"})(point)
    first = layer_data[(layer_data["workload"] == "small_cnn") & (layer_data["design"] == 0)]
    np.testing.assert_allclose(first["base_cycles"], [layer.cycles for layer in greedy.layers], rtol=1e-12)


def test_layer_surrogate_sums_its_layers_and_round_trips(layer_data: pd.DataFrame, tmp_path: Path):
    train, test = layer_data[layer_data["workload"] != "small_cnn"], layer_data[layer_data["workload"] == "small_cnn"]
    model = fit_surrogate(train, "rf")
    assert isinstance(model, LayerSurrogate)
    pred = model.predict_frame(test)
    assert len(pred) == test.groupby(["workload", "design"]).ngroups
    assert np.isfinite(pred["latency_ms"]).all() and (pred["latency_ms"] > 0).all()
    accuracy = design_accuracy(model, test)
    assert {"latency_ms", "energy_mj"} <= set(accuracy)
    assert "latency_ms (cheap mapper)" in baseline_accuracy(test)
    # a new graph is priced the same way: the recorded cheap mapper per point, corrected per layer
    assert model.baseline_mapper == "greedy" and model.baseline_options["objective"] == "latency"
    points = stratified_points(layer_space(), 6, 0)
    assert len(pred) == len(points)  # every point of small_cnn was kept, so design i is point i
    direct = model.predict_designs(build("small_cnn"), "systolic", points, {})
    np.testing.assert_allclose(direct["latency_ms"], pred["latency_ms"], rtol=1e-12)
    loaded = load_surrogate(model.save(tmp_path / "layer.joblib"))
    pd.testing.assert_frame_equal(loaded.predict_frame(test), pred)
    model.schema = {**model.schema, "features": model.schema["features"][:-1]}
    with pytest.raises(UserError, match="layer feature contract does not match"):
        load_surrogate(model.save(tmp_path / "old.joblib"))


def test_a_correction_that_does_not_transfer_across_workloads_is_dropped():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (120, 3))
    workloads = np.repeat(np.array(["a", "b", "c", "d"]), 30)
    learnable = 0.5 * x[:, 0]  # the same function of the features on every workload
    noise = np.where(workloads == "a", 0.3, -0.1) * rng.uniform(0.5, 1.5, 120)  # a per-workload offset
    assert correction_helps(x, np.column_stack([learnable, noise]), workloads, "rf", 0) == [True, False]
    assert correction_helps(x[:60], np.column_stack([learnable, noise])[:60], workloads[:60], "rf", 0) == [True, True]
