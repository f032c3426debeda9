"""The gpu array evaluation (``hwmodels.gpu.arrays``) against the scalar path it vectorises: every flat metric of
random designs over every catalog GPU and custom ones, each numeric override, every precision (TF32 on and off),
graph and eager execution, 2:4 sparsity and multi-GPU nodes over NVLink, equal within 1e-12 relative; and the
tile each design's GEMMs get equal to the mapper's ``best_tile``."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from array_checks import assert_row_equal

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.zoo import build
from hwmodels.catalogs.gpu import gpu_names
from hwmodels.gpu.arrays import GpuArrayEvaluator, column_arch, fastest_tiles
from hwmodels.gpu.model import tile_cost
from mappers.base import MappingError
from mappers.gpu import GpuTileMapper, best_tile
from mappers.payloads import GpuKernel
from templates.base import TemplateError
from templates.gpu import CUSTOM, PRECISIONS, GpuTemplate


def random_point(rng: random.Random) -> dict:
    """One point over every axis; some the template refuses (a precision the part lacks, gpus > 1 without a link)
    and some the mapper refuses (shared memory too small for any tile)."""
    p = {"gpu": rng.choice([*gpu_names(), CUSTOM]), "precision": rng.choice(PRECISIONS)}
    if p["gpu"] == CUSTOM:
        p.update(
            sms=rng.choice([16, 108, 132]),
            clock_mhz=rng.choice([1000.0, 1755.0]),
            tensor_tflops=rng.choice([60.0, 400.0]),
            fp32_tflops=rng.choice([20.0, 67.0]),
            mem_gbps=rng.choice([300.0, 3350.0]),
            mem_gb=80.0,
            l2_mib=rng.choice([4.0, 50.0]),
            smem_kib_per_sm=rng.choice([16.0, 100.0, 228.0]),
            tdp_w=rng.choice([75.0, 700.0]),
        )
    else:
        overrides = {
            "sms": [20, 100, 132],
            "clock_mhz": [900.0, 1800.0],
            "tensor_tflops": [50.0, 989.0],
            "mem_gbps": [300.0, 2000.0, 4000.0],
            "l2_mib": [0.0, 2.0, 40.0],
            "smem_kib_per_sm": [16.0, 48.0, 228.0],
            "tdp_w": [70.0, 700.0],
        }
        for name, values in overrides.items():
            if rng.random() < 0.2:
                p[name] = rng.choice(values)
    if rng.random() < 0.3:
        p["tf32"] = rng.random() < 0.5
    if rng.random() < 0.3:
        p["execution"] = "eager"
    if rng.random() < 0.25:
        p["gpus"] = rng.choice([2, 4, 8])
        if rng.random() < 0.5:
            p["nvlink_gbps"] = rng.choice([50.0, 450.0])
    if rng.random() < 0.2:
        p["sparsity"] = "2:4"
    for name, values in (
        ("launch_us", [0.0, 2.0, 6.0]),
        ("compute_fraction", [0.5, 0.9]),
        ("bandwidth_fraction", [0.7]),
    ):
        if rng.random() < 0.2:
            p[name] = rng.choice(values)
    return p


def assert_equal_to_scalar(graph: Graph, points: list[dict]) -> int:
    """Every flat metric of the array path equals the scalar path's, and the points it leaves to the scalar path
    are the ones the template or the mapper refuses; returns the designs compared."""
    evaluator = GpuArrayEvaluator(graph, {})
    metrics, index = evaluator.evaluate_points(points)
    columns = evaluator.flat_columns(metrics)
    rows = evaluator.flat_rows(metrics)
    scalar = PointEvaluator(graph, "gpu", fixed={})
    accepted = set(index.tolist())
    for i, point in enumerate(points):
        if i not in accepted:
            with pytest.raises((TemplateError, MappingError)):
                scalar(point)
            continue
        row = int(np.searchsorted(index, i))
        want = scalar(point).flat()
        assert_row_equal(want, columns, row, point)
        assert list(rows[row]) == list(want)
    return len(accepted)


def test_array_evaluation_equals_the_scalar_path_on_random_designs():
    """The default suite's share: a small CNN (3x3 convs run as implicit GEMM, pools, a classifier)."""
    points = [random_point(random.Random(seed)) for seed in range(40)]
    assert assert_equal_to_scalar(build("small_cnn"), points) > 20


def test_array_evaluation_equals_the_scalar_path_on_ten_thousand_designs():
    """Slow suite: 10,000 random designs (of 11,700 points, some refused) over a CNN, a one-layer BERT (batched
    attention matmuls, softmax, layernorm, tensor-parallel all-reduces) and ResNet-18 (skip connections, L2
    residency): a few minutes, most of them the scalar path's tile searches."""
    rng = random.Random(7)
    compared = 0
    graphs = (
        (build("small_cnn"), 7_200),
        (build("bert_base", seq_len=64, num_layers=1), 2_800),
        (build("resnet18"), 1_700),
    )
    for graph, count in graphs:
        compared += assert_equal_to_scalar(graph, [random_point(rng) for _ in range(count)])
    assert compared >= 10_000


def test_a_grid_of_one_gpu_equals_the_scalar_path():
    """A grid over one catalog part's numbers (one mapping, every tile search in one array)."""
    axes = {
        "sms": [66, 132],
        "mem_gbps": [1000.0, 3350.0],
        "smem_kib_per_sm": [32.0, 228.0],
        "launch_us": [1.0, 4.0],
        "execution": ["graph", "eager"],
    }
    points = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    graph = build("bert_base", seq_len=32, num_layers=2)
    evaluator = GpuArrayEvaluator(graph, {"gpu": "h100_sxm", "precision": "fp16"})
    metrics, index = evaluator.evaluate_points(points)
    assert len(index) == len(points)
    columns = evaluator.flat_columns(metrics)
    scalar = PointEvaluator(graph, "gpu", fixed={"gpu": "h100_sxm", "precision": "fp16"})
    for i in range(0, len(points), 5):
        assert_row_equal(scalar(points[i]).flat(), columns, i, points[i])


def test_the_tile_search_picks_the_tile_best_tile_picks():
    """Each design's tile for each GEMM of a ResNet-18 equals the scalar search's (time, then the larger tile,
    then the first), on designs whose shared memory and clocks differ."""
    template = GpuTemplate()
    archs = [
        template.instantiate({"gpu": "a100_80gb", "smem_kib_per_sm": smem, "sms": sms, "precision": precision})
        for smem in (24.0, 64.0, 164.0)
        for sms in (20, 108)
        for precision in ("fp16",)
    ]
    mapping = GpuTileMapper().map(build("resnet18"), archs[-1])
    grid_arch = column_arch(archs, (len(archs), 1))
    checked = 0
    for name in mapping.order:
        kernel = mapping.ops[name].payload_as(GpuKernel)
        if kernel.unit != "tensor" or kernel.fused_into is not None:
            continue
        cost, found = fastest_tiles(kernel, grid_arch)
        for i, arch in enumerate(archs):
            traffic = kernel.traffic
            assert traffic is not None and kernel.gemm is not None
            tile, seconds = best_tile(
                kernel.gemm, arch, kernel.a_dram, kernel.b_dram, traffic.dram_write, kernel.extra_dram
            )
            want = tile_cost(kernel, tile, arch)  # the chosen tile's own figures tell it apart from the others
            have = (cost.seconds[i], cost.blocks[i], cost.issued_flops[i], cost.tile_efficiency[i])
            assert found[i] and have == (seconds, want.blocks, want.issued_flops, want.tile_efficiency), (name, i)
            checked += 1
    assert checked > 100
