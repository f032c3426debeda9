"""The whole-design metrics every hardware model derives from its totals (hwmodels.base.design_figures)."""

from __future__ import annotations

import pytest

from dse.graph import Graph
from hwmodels.base import design_figures, graph_batch


def test_figures_from_totals() -> None:
    design = design_figures(seconds=2e-3, energy_pj=4e9, ops=8e12, batch=4)
    assert design.latency_ms == pytest.approx(2.0)
    assert design.energy_mj == pytest.approx(4.0)
    assert design.edp == pytest.approx(8.0)
    assert design.power_w == pytest.approx(2.0)  # 4 mJ over 2 ms
    assert design.throughput_ips == pytest.approx(2000.0)  # a batch of 4 every 2 ms
    assert design.tops_per_w == pytest.approx(2000.0)  # 4000 TOPS at 2 W


def test_a_pipelined_rate_replaces_batch_over_latency() -> None:
    assert design_figures(seconds=1.0, energy_pj=1.0, ops=1.0, batch=1, throughput_ips=7.5).throughput_ips == 7.5


def test_zero_latency_gives_zero_rates_not_a_division_error() -> None:
    design = design_figures(seconds=0.0, energy_pj=5.0, ops=10.0, batch=1)
    assert (design.power_w, design.throughput_ips, design.tops_per_w, design.latency_ms) == (0.0, 0.0, 0.0, 0.0)


def test_graph_batch_defaults_to_one() -> None:
    assert graph_batch(Graph("g", [], {}, {"batch": 8})) == 8
    assert graph_batch(Graph("g", [], {}, {})) == 1
    assert graph_batch(Graph("g", [], {}, {"batch": None})) == 1
