"""The systolic array evaluation (``hwmodels.systolic.arrays``) against the scalar model it vectorises: every
metric, the energy breakdown and the area breakdown of random designs over every axis the template has
(DRAM modes, scratchpads, precisions, sparsity, DRACO), equal within 1e-12 relative."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from dse.graph import Graph
from dse.zoo import build
from hwmodels.array_backend import NUMPY, ArrayBackend, array_backend
from hwmodels.systolic.arrays import DesignColumns, distinct_rows, evaluate_designs
from hwmodels.systolic.batch import GemmShapes, gemm_cost_arrays
from hwmodels.systolic.memory import epoch_words, filter_dram_reads
from hwmodels.systolic.model import SystolicModel
from mappers.systolic.fold import ARRAY_KINDS, SystolicFoldMapper, lower_op
from templates.base import TemplateError
from templates.systolic import DRAM_MODES, SystolicArch, SystolicTemplate

TOLERANCE = 1e-12


def random_archs(n: int, seed: int, dram_modes: tuple[str, ...] = DRAM_MODES) -> list[SystolicArch]:
    """``n`` valid designs drawn over every template axis (small SRAMs and arrays, so epochs and folds bite)."""
    rng = random.Random(seed)
    template = SystolicTemplate()
    archs: list[SystolicArch] = []
    while len(archs) < n:
        try:
            archs.append(template.instantiate(random_point(rng, dram_modes)))
        except TemplateError:
            continue
    return archs


def random_point(rng: random.Random, dram_modes: tuple[str, ...] = DRAM_MODES) -> dict:
    """One point over every template axis; some the template refuses (too small SRAMs, bad sparse options)."""
    if True:
        p = {
            "rows": rng.choice([1, 2, 4, 8, 12, 16, 32, 48, 64, 128]),
            "cols": rng.choice([1, 2, 4, 8, 16, 24, 32, 64, 128]),
            "dataflow": rng.choice(["os", "ws", "is"]),
            "dram_gbps": rng.choice([1.0, 3.3, 6.4, 25.6, 100.0]),
            "freq_mhz": rng.choice([200.0, 750.0, 1000.0]),
            "precision": rng.choice(["int8", "int16", "fp16", "bf16", "fp32"]),
            "dram_mode": rng.choice(dram_modes),
            "scratchpad": rng.choice(["split", "unified"]),
            "vector_lanes": rng.choice([0, 4, 64]),
            "tech": rng.choice(["asic-28nm", "asic-16nm", "asic-7nm"]),
        }
        if p["scratchpad"] == "unified" or rng.random() < 0.3:
            p["sram_kib"] = rng.choice([6.0, 12.0, 96.0, 300.0])
        else:
            for name in ("ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib"):
                p[name] = rng.choice([1.0, 2.0, 8.0, 64.0, 200.0])
        if rng.random() < 0.4:
            p["sparsity_support"] = True
            p["sparse_mac"] = rng.choice(["skip", "gate"])
            p["sparse_rep"] = rng.choice(["ellpack_block", "csr", "csc", "bitmask", "rle"])
            p["sparse_layers"] = rng.choice(["all", "pointwise", "spatial", "workload"])
            p["sparse_pattern"] = rng.choice(["2:4", "1:4", "3:8", "0.3"])
            if p["dataflow"] == "ws" and rng.random() < 0.3:
                p["sparsity_optimized_mapping"] = True
                p["sparsity_block_size"] = rng.choice([2, 4])
        if rng.random() < 0.3:  # per-PE scratchpads: their reuse depends on each GEMM's folds and conv window
            p["pe_weight_words"] = rng.choice([1, 4, 224])
            p["pe_input_words"] = rng.choice([1, 3, 12])
            p["pe_psum_words"] = rng.choice([1, 24])
        if rng.random() < 0.3:
            p["width_multiplier"] = rng.choice([0.5, 1.25])
            p["round_channels"] = rng.random() < 0.5
        refusal = rng.random()
        if refusal < 0.03:  # individual sizes beside a total, or beside a unified scratchpad
            p["ifmap_sram_kib"] = 8.0
        elif refusal < 0.06:
            p["sparsity_optimized_mapping"] = True  # refused under os/is, or with a block above rows
            p["sparsity_block_size"] = rng.choice([2, 6, 16])
        elif refusal < 0.08:
            p["tech"] = "asic-1nm-unlisted"
        elif refusal < 0.1:
            p["sparse_pattern"] = "5:4"
    return p


def test_instantiate_columns_equals_instantiate():
    """The batch instantiation gives every field ``instantiate`` gives, and refuses exactly what it refuses."""
    rng = random.Random(3)
    points = [random_point(rng) for _ in range(400)]
    columns, accepted = SystolicTemplate().instantiate_columns(points, {"tech": "asic-16nm"})
    refused = 0
    for i, point in enumerate(points):
        try:
            arch = SystolicTemplate().instantiate({"tech": "asic-16nm", **point})
        except TemplateError:
            assert not accepted[i], point
            refused += 1
            continue
        assert accepted[i], point
        assert DesignColumns(columns).arch(i) == arch, point
    assert 10 < refused < 200


def assert_equal_to_scalar(graph: Graph, archs: list[SystolicArch]) -> int:
    """Every figure of the array path equals the scalar path's for every design; returns the figures compared."""
    got = evaluate_designs(graph, DesignColumns.of(archs))
    model, mapper = SystolicModel(), SystolicFoldMapper()
    compared = 0
    for i, arch in enumerate(archs):
        ref = model.evaluate(mapper.map(graph, arch), arch)
        pairs = [(f"values.{k}", v, got.values[k][i]) for k, v in ref.values.items()]
        pairs += [(f"energy.{k}", v, got.energy_breakdown_pj[k][i]) for k, v in ref.energy_breakdown_pj.items()]
        pairs += [(f"area.{k}", v, got.area_breakdown_mm2[k][i]) for k, v in ref.info["area_breakdown_mm2"].items()]
        assert set(ref.values) == set(got.values) and set(ref.energy_breakdown_pj) == set(got.energy_breakdown_pj)
        absent = set(got.area_breakdown_mm2) - set(ref.info["area_breakdown_mm2"])  # a block other designs have
        pairs += [(f"area.{k}", 0.0, got.area_breakdown_mm2[k][i]) for k in absent]
        for name, want, have in pairs:
            assert have == pytest.approx(want, rel=TOLERANCE, abs=0.0), (name, arch)
        compared += len(pairs)
    return compared


def test_array_evaluation_equals_the_scalar_model_on_random_designs():
    """The default suite's share: shared DRAM on a small CNN (3x3 and strided convs, a classifier, pools and
    adds, fused activations) over every other axis, and a few USER/CALC designs."""
    graph = build("small_cnn")
    archs = random_archs(80, seed=1, dram_modes=("shared",))
    archs += random_archs(4, seed=2, dram_modes=("per_operand",)) + random_archs(4, seed=3, dram_modes=("unlimited",))
    assert {a.dram_mode for a in archs} == set(DRAM_MODES)
    assert any(a.sparsity_support for a in archs) and any(a.round_channels for a in archs)
    assert assert_equal_to_scalar(graph, archs) > 80 * 15


def test_array_evaluation_equals_the_scalar_model_on_ten_thousand_designs():
    """Slow suite: 10,000 random designs over every axis (USER-mode ifmap duplicates on 3x3 convs included)."""
    graph = build("small_cnn")
    archs = random_archs(9_000, seed=7, dram_modes=("shared",))
    archs += random_archs(500, seed=8, dram_modes=("per_operand",)) + random_archs(
        500, seed=9, dram_modes=("unlimited",)
    )
    assert assert_equal_to_scalar(graph, archs) > 10_000 * 15


def test_array_evaluation_equals_the_scalar_model_on_resnet50():
    """Slow suite: ResNet-50's 53 convs at 224x224 with shared DRAM over every other axis (the USER and CALC
    replays are the scalar model's own functions, checked on the small CNN above)."""
    graph = build("resnet50")
    assert_equal_to_scalar(graph, random_archs(200, seed=11, dram_modes=("shared",)))


def test_exact_os_filter_walk_equals_the_scalar_walk():
    """The os filter's epoch walk in closed form (``gemm_cost_arrays(exact=True)``) equals the fold-by-fold
    walk on every pair, where the inexact mode marks its expectation approximate."""
    gemms = [
        lower_op(op) for model in ("resnet18", "mobilenet_v1") for op in build(model).ops if op.kind in ARRAY_KINDS
    ]
    shapes = GemmShapes.of(gemms, [True] * len(gemms))
    rng = np.random.default_rng(5)
    rows = rng.choice([1, 3, 8, 16, 64], size=(20, 1)).astype(float)
    cols = rng.choice([1, 2, 5, 8, 32], size=(20, 1)).astype(float)
    words_f = rng.choice([200, 333, 1000, 5000, 60000], size=(20, 1)).astype(float)
    words = np.full((20, 1), 4096.0)
    figures = (shapes, "os", "shared", rows, cols, words, words_f, words, np.full((20, 1), 8.0))
    exact = gemm_cost_arrays(*figures, exact=True)["filter_dram_reads"]
    approximate = gemm_cost_arrays(*figures)["approximate"]
    assert approximate.sum() > 50  # the closed form replaces the expectation on many pairs
    for d in range(20):
        for j, gemm in enumerate(gemms):
            epoch = epoch_words(int(words_f[d, 0]), min_set_words=1)
            want = gemm.count * filter_dram_reads(gemm, "os", int(rows[d, 0]), int(cols[d, 0]), epoch)
            assert exact[d, j] == want, (d, j)


def test_distinct_rows_gives_each_row_back_and_no_row_twice():
    """The design figures the GEMM costs are evaluated on: every design's row is its distinct row, with codes
    that would overflow one integer (eight columns of 300 values) renumbered on the way."""
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 2000, size=5000)  # 5000 designs, at most 2000 distinct rows
    columns = [rng.integers(0, 300, size=(2000, 1)).astype(float)[rows] for _ in range(8)]
    columns[3] = 7.0  # a number shared by every design
    distinct, inverse = distinct_rows(columns)
    table = np.hstack(distinct)
    assert len(np.unique(table, axis=0)) == len(table) < 5000
    for j, column in enumerate(columns):
        assert np.array_equal(table[inverse, j], np.broadcast_to(column, (5000, 1))[:, 0])


def test_torch_backend_gives_the_numpy_figures_on_every_dram_mode():
    """The GEMM cost kernel on torch (the CPU build here; CUDA on a lent GPU) gives numpy's figures for every
    metric of random designs over every axis, the SCALE-Sim replays of USER and CALC included."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    graph = build("small_cnn")
    archs = random_archs(30, seed=21, dram_modes=("shared",))
    archs += random_archs(4, seed=22, dram_modes=("per_operand",)) + random_archs(4, seed=23, dram_modes=("unlimited",))
    designs = DesignColumns.of(archs)
    want = evaluate_designs(graph, designs)
    got = evaluate_designs(graph, designs, backend=array_backend("torch", "cpu"))
    for part in ("values", "energy_breakdown_pj", "area_breakdown_mm2"):
        expected, have = getattr(want, part), getattr(got, part)
        assert set(expected) == set(have)
        for name, column in expected.items():
            np.testing.assert_allclose(have[name], column, rtol=TOLERANCE, atol=0.0, err_msg=f"{part}.{name}")


def test_array_backends_are_named_and_checked():
    """numpy is the default and stays on the CPU; an unknown backend or a device numpy has not is one clear
    error; a backend travels to workers by name (it pickles)."""
    assert array_backend() is NUMPY and array_backend("numpy", "cpu").xp is np
    with pytest.raises(ValueError, match="unknown array backend 'jax'"):
        array_backend("jax")
    with pytest.raises(ValueError, match="CPU only"):
        array_backend("numpy", "cuda")
    backend = ArrayBackend("torch", "cuda:1")
    assert pickle.loads(pickle.dumps(backend)) == backend
