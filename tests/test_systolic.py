"""The systolic template, fold mapper and model: validation, invariants, every zoo model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dse.evaluate import PointEvaluator
from dse.graph import GraphBuilder
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.model import SystolicModel
from mappers.systolic.fold import SystolicFoldMapper, lower_op
from templates.base import TemplateError
from templates.systolic import SystolicTemplate


def _conv_graph(c=64, k=64, hw=56, kernel=3, groups=1):
    b = GraphBuilder("t")
    x = b.input("x", (1, c, hw, hw))
    y = b.conv(x, k, kernel, pad=kernel // 2, groups=groups, name="conv")
    b.relu(y, name="relu")
    return b.build()


def _run(graph, **point):
    arch = SystolicTemplate().instantiate(point)
    return SystolicModel().evaluate(SystolicFoldMapper().map(graph, arch), arch)


@pytest.mark.parametrize(
    "point, param",
    [
        ({"rows": 0}, "rows"),
        ({"dataflow": "rs"}, "dataflow"),
        ({"precision": "int3"}, "precision"),
        ({"tech": "asic-3nm"}, "tech"),
        ({"sram_kib": 192, "ifmap_sram_kib": 64}, "sram_kib"),
        ({"ifmap_sram_kib": 0.1}, "ifmap_sram_kib"),
        ({"bogus": 1}, "bogus"),
        ({"dram_mode": "magic"}, "dram_mode"),
        ({"scratchpad": "shared"}, "scratchpad"),
        ({"scratchpad": "unified", "filter_sram_kib": 64}, "filter_sram_kib"),
    ],
)
def test_bad_parameters_name_the_parameter(point, param):
    with pytest.raises(TemplateError) as err:
        SystolicTemplate().instantiate(point)
    assert err.value.param == param


def test_sram_total_is_split_equally_and_units_follow_precision():
    arch = SystolicTemplate().instantiate({"sram_kib": 300, "precision": "fp16", "dram_gbps": 25.6, "freq_mhz": 800})
    assert arch.ifmap_sram_kib == arch.filter_sram_kib == arch.ofmap_sram_kib == pytest.approx(100)
    assert arch.word_bytes == 2
    assert arch.dram_bytes_per_cycle == pytest.approx(32.0)
    assert arch.dram_words_per_cycle == pytest.approx(16.0)
    assert arch.vector_lanes == arch.cols
    default = SystolicTemplate().instantiate({})
    assert (default.rows, default.cols, default.dataflow, default.ifmap_sram_kib) == (32, 32, "os", 64.0)


def test_unified_scratchpad_is_one_memory_with_larger_banks():
    split = SystolicTemplate().instantiate({"sram_kib": 1536})
    unified = SystolicTemplate().instantiate({"sram_kib": 1536, "scratchpad": "unified"})
    assert split.scratchpad == "split" and unified.scratchpad == "unified"
    assert unified.scratchpad_kib == split.scratchpad_kib == pytest.approx(1536)
    # the fold mapper sees three equal static partitions, so its timing is the split one
    assert unified.ifmap_sram_kib == split.ifmap_sram_kib == pytest.approx(512)
    assert SystolicTemplate().instantiate({"scratchpad": "unified"}).scratchpad_kib == pytest.approx(192)
    g = _conv_graph(c=128, k=128, hw=28)
    m_split = SystolicModel().evaluate(SystolicFoldMapper().map(g, split), split)
    m_unified = SystolicModel().evaluate(SystolicFoldMapper().map(g, unified), unified)
    assert m_unified["latency_cycles"] == m_split["latency_cycles"]
    assert m_unified["dram_mb"] == m_split["dram_mb"]
    # the same bits in four larger banks instead of six smaller ones: less periphery (CACTI 7's macro shares)
    assert m_split["area_mm2"] * 0.97 < m_unified["area_mm2"] < m_split["area_mm2"]
    # one access activates a quarter of the unified scratchpad, a sixth of the split SRAMs
    assert m_unified.energy_breakdown_pj["sram"] > m_split.energy_breakdown_pj["sram"]


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_utilization_at_most_one_and_energy_sums(dataflow):
    m = _run(_conv_graph(), dataflow=dataflow, rows=16, cols=16)
    assert 0 < m["utilization"] <= 1
    for layer in m.layers:
        assert 0 <= layer.utilization <= 1
        assert layer.energy_pj == pytest.approx(sum(layer.energy_breakdown_pj.values()))
        assert layer.cycles >= layer.compute_cycles
    assert m["energy_mj"] * 1e9 == pytest.approx(sum(m.energy_breakdown_pj.values()))
    assert set(m.energy_breakdown_pj) == {"mac", "pe_storage", "sram", "dram", "vector", "leakage"}
    assert m["power_w"] == pytest.approx(m["energy_mj"] / m["latency_ms"])
    assert m["edp"] == pytest.approx(m["energy_mj"] * m["latency_ms"])


@pytest.mark.parametrize("mode", ["shared", "per_operand"])
@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_more_bandwidth_is_never_slower(mode, dataflow):
    g = _conv_graph()
    latencies = [
        _run(g, dataflow=dataflow, dram_gbps=bw, dram_mode=mode)["latency_cycles"] for bw in (1, 4, 16, 64, 256)
    ]
    assert all(a >= b for a, b in zip(latencies, latencies[1:]))
    assert latencies[0] > latencies[-1]  # and a starved DRAM is visibly slower


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_bigger_array_never_more_compute_cycles_on_big_layers(dataflow):
    g = _conv_graph(c=256, k=256, hw=28)
    op = g.op("conv")
    cycles = []
    for n in (8, 16, 32, 64, 128):
        arch = SystolicTemplate().instantiate({"rows": n, "cols": n, "dataflow": dataflow})
        cycles.append(gemm_cost(lower_op(op), arch).compute_cycles)
    assert all(a >= b for a, b in zip(cycles, cycles[1:]))


def test_small_sram_refetches_more():
    g = _conv_graph(c=128, k=256, hw=28)
    small = _run(g, sram_kib=24, dataflow="os")
    big = _run(g, sram_kib=3072, dataflow="os")
    assert small["dram_mb"] > big["dram_mb"]


def test_grouped_conv_is_one_gemm_per_group_and_poorly_utilised():
    dense = lower_op(_conv_graph(c=64, k=64).op("conv"))
    depthwise = lower_op(_conv_graph(c=64, k=64, groups=64).op("conv"))
    assert (depthwise.K, depthwise.N, depthwise.count) == (9, 1, 64)
    assert depthwise.macs * 64 == dense.macs
    m = _run(_conv_graph(c=64, k=64, groups=64), dataflow="ws")
    assert m.layers[0].utilization < 0.05


def test_vector_ops_run_on_the_vector_unit():
    b = GraphBuilder("v")
    x = b.input("x", (1, 128, 768))
    y = b.layernorm(x, name="ln")
    y = b.softmax(y, name="sm")
    b.elementwise("gelu", y, name="act")
    m = _run(b.build(), vector_lanes=64, dram_gbps=1000)
    assert [ly.extra["unit"] for ly in m.layers] == ["vector"] * 3
    ln = m.layers[0]
    assert ln.compute_cycles == math.ceil(8 * 128 * 768 / 64)
    assert ln.energy_breakdown_pj["vector"] > 0 and ln.macs == 0
    assert SystolicFoldMapper().map(b.build(), SystolicTemplate().instantiate({})).ops["sm"].payload.unit == "vector"


def test_every_zoo_model_evaluates():
    zoo = pytest.importorskip("dse.zoo")
    for name in zoo.names():
        g = zoo.build(name)
        m = PointEvaluator(g, "systolic", fixed={"tech": "asic-16nm"})({"rows": 32, "cols": 32, "dataflow": "ws"})
        assert m["latency_ms"] > 0 and m["energy_mj"] > 0 and m["area_mm2"] > 0, name
        assert len(m.layers) == len(g.ops), name
        assert 0 < m["utilization"] <= 1 or g.macs == 0, name


@pytest.mark.parametrize(("dataflow", "dram_mode"), [("os", "shared"), ("ws", "shared"), ("is", "shared")])
def test_gemm_cost_arrays_equals_gemm_cost_where_it_claims_to(dataflow: str, dram_mode: str):
    """The array form (the surrogates' baseline) gives gemm_cost's figures exactly on every pair it does
    not mark approximate (os filters re-streamed over row folds are its expectation; per_operand,
    SCALE-Sim USER's window walk, is always marked)."""
    from dse.zoo import build
    from hwmodels.systolic.batch import GemmShapes, gemm_cost_arrays
    from mappers.systolic.fold import ARRAY_KINDS, lower_op

    gemms = [
        lower_op(op) for model in ("resnet18", "mobilenet_v1") for op in build(model).ops if op.kind in ARRAY_KINDS
    ]
    shapes = GemmShapes.of(gemms, [i % 5 != 0 for i in range(len(gemms))])
    rng = np.random.default_rng(3)
    exact_pairs = 0
    for _ in range(4):
        point = {
            "rows": int(rng.choice([8, 16, 32, 128])),
            "cols": int(rng.choice([8, 32, 64])),
            "dataflow": dataflow,
            "dram_mode": dram_mode,
            **{f"{s}_sram_kib": float(rng.choice([8, 64, 512])) for s in ("ifmap", "filter", "ofmap")},
            "dram_gbps": 12.8,
        }
        arch = SystolicTemplate().instantiate(point)
        got = gemm_cost_arrays(
            shapes,
            dataflow,
            dram_mode,
            np.array([[arch.rows]], dtype=float),
            np.array([[arch.cols]], dtype=float),
            *(np.array([[arch.sram_words(s)]], dtype=float) for s in ("ifmap", "filter", "ofmap")),
            np.array([[arch.dram_words_per_cycle]]),
        )
        for i, gemm in enumerate(gemms):
            cost = gemm_cost(gemm, arch, write_output=bool(shapes.write_output[i]))
            assert got["compute_cycles"][0, i] == cost.compute_cycles
            if got["approximate"][0, i]:
                assert dataflow == "os"
                continue
            exact_pairs += 1
            assert got["cycles"][0, i] == pytest.approx(cost.total_cycles, rel=1e-12), (point, i)
            for name in ("ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes", "fill_cycles", "tail_cycles"):
                assert got[name][0, i] == pytest.approx(getattr(cost, name), rel=1e-12), (point, i, name)
            for name in ("ifmap_sram_reads", "filter_sram_reads", "ofmap_sram_writes"):
                assert got[name][0, i] == pytest.approx(getattr(cost, name), rel=1e-12), (point, i, name)
    assert exact_pairs > 40
