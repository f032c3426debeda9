"""The fpga_dataflow array evaluation (``hwmodels.fpga.arrays``) against the scalar path it vectorises: every flat
metric (resources, utilisations, latency, interval, power and its energy breakdown) of random designs over every
knob that changes a code path (ReuseFactor and its legal snapping, strategy, IO type, number types per model and
per layer, part, clock, dataflow / sequential / hybrid execution), equal within 1e-12 relative."""

from __future__ import annotations

import random

import numpy as np
import pytest
from array_checks import assert_row_equal

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.zoo import build
from hwmodels.catalogs.fpga import part_names
from hwmodels.fpga.arrays import FpgaArrayEvaluator
from templates.base import TemplateError
from templates.fpga_dataflow import LAYER_KNOBS, MAX_LAYERS, FpgaDataflowTemplate, layer_knob_columns

FIXED = {"clock_period_ns": 4.0}


def random_point(rng: random.Random) -> dict:
    """One point over every knob; some the template refuses (an integer part wider than the type)."""
    p = {
        "reuse_factor": rng.choice([1, 2, 3, 4, 7, 8, 16, 32, 64, 128, 1024]),
        "strategy": rng.choice(["latency", "resource"]),
        "io_type": rng.choice(["io_parallel", "io_stream"]),
        "width": rng.choice([6, 8, 12, 16, 18]),
        "integer": rng.choice([2, 4, 6]),
        "part": rng.choice(part_names()),
        "execution": rng.choice(["dataflow"] * 4 + ["sequential", "hybrid"]),
    }
    if rng.random() < 0.5:
        p["clock_period_ns"] = rng.choice([2.5, 3.3, 5.0, 10.0])
    if rng.random() < 0.5:
        p["weight_width"] = rng.choice([4, 6, 8, 10, 18])
    if rng.random() < 0.2:
        p["weight_integer"] = rng.choice([1, 3, 5])
    if rng.random() < 0.3:
        p["accum_width"], p["accum_integer"] = rng.choice([(24, 12), (32, 16), (12, 8)])
    for i in range(MAX_LAYERS):
        if rng.random() < 0.25:
            p[f"layer{i}_reuse_factor"] = rng.choice([1, 4, 16, 100, 4096])
        if rng.random() < 0.15:
            p[f"layer{i}_strategy"] = rng.choice(["latency", "resource"])
        if rng.random() < 0.15:
            p[f"layer{i}_weight_width"] = rng.choice([3, 8, 12])
        if rng.random() < 0.15:
            p[f"layer{i}_result_width"] = rng.choice([5, 10, 16])
        if rng.random() < 0.05:
            p[f"layer{i}_result_integer"] = rng.choice([3, 7])
        if rng.random() < 0.08:
            p[f"layer{i}_execution"] = rng.choice(["dataflow", "sequential"])
    return p


def assert_equal_to_scalar(graph: Graph, points: list[dict]) -> int:
    """Every flat metric of the array path equals the scalar path's (names and order too), and the points it
    leaves to the scalar path are the ones the template refuses; returns the designs compared."""
    evaluator = FpgaArrayEvaluator(graph, dict(FIXED))
    metrics, index = evaluator.evaluate_points(points)
    columns = evaluator.flat_columns(metrics)
    scalar = PointEvaluator(graph, "fpga_dataflow", fixed=dict(FIXED))
    accepted = set(index.tolist())
    for i, point in enumerate(points):
        if i not in accepted:
            with pytest.raises(TemplateError):
                scalar(point)
            continue
        assert_row_equal(scalar(point).flat(), columns, int(np.searchsorted(index, i)), point)
    return len(accepted)


def test_instantiate_columns_resolves_every_layer_as_instantiate_does():
    """The batch instantiation refuses exactly what ``instantiate`` refuses and gives every layer's knobs after
    inheritance (``FpgaArch.layer``), layers beyond MAX_LAYERS the model-level ones."""
    rng = random.Random(3)
    points = [random_point(rng) for _ in range(300)]
    template = FpgaDataflowTemplate()
    columns, accepted = template.instantiate_columns(points, FIXED)
    refused = 0
    for i, point in enumerate(points):
        try:
            arch = template.instantiate({**FIXED, **point})
        except TemplateError:
            assert not accepted[i], point
            refused += 1
            continue
        assert accepted[i], point
        for index in (0, 3, MAX_LAYERS - 1, MAX_LAYERS + 2):
            knobs, got = arch.layer(index), layer_knob_columns(columns, index)
            assert got["reuse_factor"][i] == knobs.reuse_factor and got["strategy"][i] == knobs.strategy
            assert (got["weight_width"][i], got["weight_integer"][i]) == (knobs.weight.width, knobs.weight.integer)
            assert (got["result_width"][i], got["result_integer"][i]) == (knobs.result.width, knobs.result.integer)
            assert got["execution"][i] == knobs.execution and bool(got["pinned"][i]) == knobs.pinned_execution
        assert columns["accum_width"][i] == arch.accum_precision.width
        assert columns["io_type"][i] == arch.io_type and columns["part"][i] == arch.part
    assert 10 < refused < 150
    assert set(LAYER_KNOBS) <= set(layer_knob_columns(columns, 0))


def test_array_evaluation_equals_the_scalar_path_on_random_designs():
    """The default suite's share: an MLP (dense layers, activations, softmax) and a small CNN (convs, pools)."""
    rng = random.Random(1)
    for name in ("jet_mlp", "small_cnn"):
        points = [random_point(rng) for _ in range(200)]
        assert assert_equal_to_scalar(build(name), points) > 110


def test_array_evaluation_equals_the_scalar_path_on_ten_thousand_designs():
    """Slow suite: 10,000 random designs on each of the two graphs."""
    rng = random.Random(7)
    for name in ("jet_mlp", "small_cnn"):
        points = [random_point(rng) for _ in range(15_000)]  # about a third refused
        assert assert_equal_to_scalar(build(name), points) >= 10_000


def test_a_grid_of_dataflow_designs_equals_the_scalar_path():
    """A grid whose designs share their layer groups' knobs (each group priced once for many designs): every
    design equal to the scalar path, and the clock moves each design's time but not its cycles."""
    points = [
        {"reuse_factor": rf, "clock_period_ns": clock, "strategy": strategy}
        for rf in (1, 4, 16)
        for clock in (2.0, 3.0, 5.0, 7.5)
        for strategy in ("latency", "resource")
    ]
    graph = build("jet_mlp")
    assert assert_equal_to_scalar(graph, points) == len(points)
    metrics, _ = FpgaArrayEvaluator(graph, {}).evaluate_points(points)
    assert len(set(metrics.values["latency_cycles"].tolist())) == 3 * 2  # per ReuseFactor and strategy


def test_a_graph_the_mapper_refuses_is_left_to_the_scalar_path():
    """ResNet-18's skip connections: no point evaluated in arrays; the scalar path raises the mapper's message."""
    metrics, index = FpgaArrayEvaluator(build("resnet18"), {}).evaluate_points([{}, {"reuse_factor": 4}])
    assert len(index) == 0 and len(metrics) == 0
