"""FPGA power: static + dynamic per resource and clock (hwmodels.fpga.power), in every fpga_dataflow point."""

from __future__ import annotations

import pytest

from dse import zoo
from dse.evaluate import PointEvaluator
from hwmodels.base import METRICS
from hwmodels.catalogs.fpga import PARTS, POWER, UNVERIFIED, get_part, power_figures
from hwmodels.fpga.power import POWER_COMPONENTS, design_power

DESIGN = {"dsp": 500.0, "lut": 40_000.0, "ff": 60_000.0, "bram": 20.0}
POINTS = (
    {},
    {"strategy": "resource", "reuse_factor": 16},
    {"weight_width": 6, "weight_integer": 1},
    {"io_type": "io_stream", "strategy": "resource", "reuse_factor": 4, "clock_period_ns": 4.0},
    {"part": "xc7z020", "strategy": "resource", "reuse_factor": 64},
)


@pytest.fixture(scope="module")
def jet_mlp() -> PointEvaluator:
    return PointEvaluator(zoo.build("jet_mlp"), "fpga_dataflow")


def test_every_part_has_power_figures_each_sourced():
    assert set(POWER) == set(PARTS)
    for name, part in PARTS.items():
        figures = power_figures(part)
        assert figures.static_w.value > 0 and figures.toggle_rate.value == 0.125
        for field_name, source in figures.sources().items():
            assert source.strip(), f"{name}.{field_name} has no source"
            assert "UG440" in source or UNVERIFIED in source, f"{name}.{field_name}: {source}"
        assert (figures.uram_uw_per_mhz.value > 0) == (part.uram.value > 0)  # URAM priced only where the part has it


def test_static_power_alone_at_zero_activity():
    part = get_part("xcu250")
    idle = design_power(part, DESIGN, 200.0, activity=0.0)
    assert idle.total_w == power_figures(part).static_w.value and idle.dynamic_w == 0.0
    empty = design_power(part, {"dsp": 0.0, "lut": 0.0, "ff": 0.0, "bram": 0.0}, 0.0)
    assert empty.total_w == power_figures(part).static_w.value


def test_power_grows_with_every_resource_and_the_clock():
    part = get_part("xcvu9p")
    base = design_power(part, DESIGN, 200.0).total_w
    for resource in DESIGN:
        assert design_power(part, {**DESIGN, resource: DESIGN[resource] * 2}, 200.0).total_w > base, resource
    assert design_power(part, DESIGN, 300.0, uram=10).total_w > design_power(part, DESIGN, 300.0).total_w > base
    assert design_power(part, DESIGN, 200.0, activity=0.5).total_w < base


@pytest.mark.parametrize("point", POINTS)
def test_every_point_has_power_energy_and_a_breakdown_that_sums(jet_mlp, point):
    metrics = jet_mlp(point)
    for name in ("power_w", "energy_mj", "edp", "tops_per_w"):
        assert name in METRICS and metrics[name] > 0, name
    assert set(metrics.energy_breakdown_pj) == set(POWER_COMPONENTS)
    assert sum(metrics.energy_breakdown_pj.values()) * 1e-9 == pytest.approx(metrics["energy_mj"], rel=1e-12)
    # energy = power x the initiation interval (a streaming design starts an evaluation every interval)
    interval_s = metrics["ii_cycles"] * _period_s(point)
    assert metrics["energy_mj"] == pytest.approx(metrics["power_w"] * interval_s * 1e3, rel=1e-12)
    assert metrics["edp"] == pytest.approx(metrics["energy_mj"] * metrics["latency_ms"], rel=1e-12)
    assert metrics["throughput_ips"] / metrics["power_w"] == pytest.approx(1e3 / metrics["energy_mj"], rel=1e-12)
    static_share = metrics.energy_breakdown_pj["static"] / sum(metrics.energy_breakdown_pj.values())
    assert 0 < static_share < 1


def test_more_parallel_designs_draw_more_power(jet_mlp):
    wide = jet_mlp({"strategy": "latency", "reuse_factor": 1})
    narrow = jet_mlp({"strategy": "latency", "reuse_factor": 8})
    assert wide["dsp"] > narrow["dsp"] and wide["power_w"] > narrow["power_w"]
    fast = jet_mlp({"clock_period_ns": 3.0})
    assert fast["power_w"] > jet_mlp({"clock_period_ns": 5.0})["power_w"]


def test_power_is_deterministic(jet_mlp):
    first, second = jet_mlp({"reuse_factor": 4}), jet_mlp({"reuse_factor": 4})
    assert first.values == second.values and first.energy_breakdown_pj == second.energy_breakdown_pj


def _period_s(point: dict) -> float:
    return point.get("clock_period_ns", 5.0) * 1e-9
