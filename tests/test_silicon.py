"""The model against published silicon (dse.silicon, hwmodels.catalogs.chips): the comparison measures what each
paper measured, and the figures stay inside the bands recorded here (a drift out of them fails).

benchmarks/silicon_compare.py prints the whole table; this runs the comparison on Eyeriss (fast: five AlexNet
layers) and checks the catalog's bookkeeping for every chip.
"""

from __future__ import annotations

import math
import re

import pytest

from dse.evaluate import PointEvaluator
from dse.silicon import SiliconRow, chip_graph, chip_power_w, compare_chip
from hwmodels.base import LayerMetrics, Metrics
from hwmodels.catalogs.chips import CHIPS
from hwmodels.catalogs.tech import UNVERIFIED, get_tech
from hwmodels.systolic.pricing import ONE_REGISTER_EACH, pe_local_storage_mm2

YEAR = re.compile(r"\b(19|20)\d\d\b")

# (low, high) relative error of the model against the published figure, as measured when the band was set
# (see the report of issue #28): a change to the area or energy model that moves a figure out of its band
# must update the band on purpose. The 30 % target is not met on area: see benchmarks/silicon_compare.py.
# area: -17 % with the per-PE scratchpads priced (the RLC codecs and multicast buses are not modelled); power: the
# target
EYERISS_BANDS = {"area": (-0.30, -0.05), "power": (-0.30, 0.30)}


@pytest.fixture(scope="module")
def eyeriss():
    return compare_chip(CHIPS["eyeriss"])


def test_eyeriss_area_and_power_stay_in_their_bands(eyeriss):
    low, high = EYERISS_BANDS["area"]
    assert low <= eyeriss.area_error <= high, eyeriss.area_error
    low, high = EYERISS_BANDS["power"]
    assert low <= eyeriss.power_error <= high, eyeriss.power_error
    # a figure outside the 30 % target says why (printed by benchmarks/silicon_compare.py)
    assert abs(eyeriss.area_error) <= 0.30 or len(eyeriss.chip.misses.get("area", "")) > 80
    assert eyeriss.area_blocks["sram"] > 0 and set(eyeriss.power_parts) == {"switching", "leakage"}


def test_eyeriss_scratchpads_are_priced_per_pe(eyeriss):
    """Eyeriss' 0.5 KB of scratchpad per PE (224 weights in an SRAM macro, 12 inputs and 24 partial sums in
    registers, 16 bits wide) is the template's ``pe_*_words``, priced by ``pe_local_storage_mm2`` in the PE array;
    with it the core is within the 30 % target."""
    node = get_tech(eyeriss.chip.tech)
    assert pe_local_storage_mm2(node, 16, 16, ONE_REGISTER_EACH) == 0
    depths = {role: eyeriss.chip.point[f"pe_{role}_words"] for role in ONE_REGISTER_EACH}
    assert depths == {"weight": 224, "input": 12, "psum": 24}
    local = 168 * pe_local_storage_mm2(node, 16, 16, depths)
    assert local > 0.3 * eyeriss.area_blocks["pe_array"]  # the scratchpads are a large share of the PE array
    assert abs(eyeriss.area_error) <= 0.30


def test_power_counts_only_what_the_paper_measured_at_its_rate():
    chip = CHIPS["eyeriss"]
    metrics = PointEvaluator(chip_graph(chip), chip.family, fixed={"tech": chip.tech})(dict(chip.point))
    breakdown = metrics.energy_breakdown_pj
    assert breakdown["dram"] > 0 and "dram" in chip.power_excludes
    switching_pj = sum(v for k, v in breakdown.items() if k not in ("dram", "leakage"))
    per_inference = switching_pj * 1e-12 / chip.workload.batch
    leakage_w = breakdown["leakage"] * 1e-12 / (metrics["latency_ms"] * 1e-3)  # a power, not per inference
    assert chip_power_w(chip, metrics) == pytest.approx(per_inference * chip.rate_ips.value + leakage_w)
    assert chip_power_w(chip, metrics) < metrics["energy_mj"] * 1e-3 / chip.workload.batch * chip.rate_ips.value


def test_every_chip_is_sourced_and_says_what_its_figures_include():
    assert len(CHIPS) >= 6
    for key, chip in CHIPS.items():
        get_tech(chip.tech)  # a known node
        assert YEAR.search(chip.paper), key
        for what, figure, includes in (
            ("area", chip.area_mm2, chip.area_includes),
            ("power", chip.power_w, chip.power_includes),
        ):
            if figure is None:
                assert len(chip.not_comparable.get(what, "")) > 40, f"{key}: {what} needs a figure or the reason"
            else:
                assert figure.value > 0 and includes, key
                assert YEAR.search(figure.source) or figure.source.startswith(UNVERIFIED), key


def test_tpu_v1_power_is_priced_per_mac_at_the_published_rate():
    """TPU v1's busy power was measured on CNN0 near peak: the model's switching energy per MAC on its stand-in
    workload times the published MAC rate, plus leakage, not the model's own (DRAM-bound) latency."""
    chip = CHIPS["tpu_v1"]
    assert chip.rate_macs_per_s is not None and chip.rate_ips is None
    layer = LayerMetrics("a", "conv", 1.0, 1.0, 0.0, 10**6, 1.0, 0.0, 0.0)
    metrics = Metrics(
        values={"latency_ms": 2.0},
        energy_breakdown_pj={"mac": 3e6, "sram": 1e6, "dram": 5e6, "leakage": 4e6},
        layers=[layer],
    )
    switching_w = 4e6 * 1e-12 / 1e6 * chip.rate_macs_per_s.value  # 4 pJ per MAC, DRAM left out
    assert chip_power_w(chip, metrics) == pytest.approx(switching_w + 4e6 * 1e-12 / 2e-3)


def test_chips_without_figures_are_not_evaluated():
    row = compare_chip(CHIPS["nvdla"])
    assert math.isnan(row.area_mm2) and math.isnan(row.power_w) and math.isnan(row.area_error)


def test_tpu_v1_blocks_are_compared_like_for_like_by_their_floor_plan_shares():
    """Each TPU v1 block the model prices is set against its own floor-plan share (Unified Buffer + accumulators,
    matrix unit, activation pipeline: 65 % of the die), and the blocks together are the like-for-like area."""
    chip = CHIPS["tpu_v1"]
    assert set(chip.blocks_mm2) == {"sram", "pe_array", "vector"}
    published = sum(b.value for b in chip.blocks_mm2.values())
    assert published == pytest.approx(0.65 * chip.area_mm2.value)
    row = SiliconRow(chip, 1.0, 1.0, 1.0, {name: (2.0, b.value) for name, b in chip.blocks_mm2.items()})
    assert row.blocks_together == (6.0, pytest.approx(published))


def test_simba_distributed_buffers_do_not_explain_its_area_gap():
    """The Simba reason says its 49 distributed macros, priced one by one, take 1.92 mm^2 against the template's
    1.75: their periphery is a few points of the -49 %, and the rest is logic."""
    node = get_tech("asic-16nm")
    template = sum(node.sram_area_mm2(kib, banks=2) for kib in (512, 192, 48))
    distributed = 16 * sum(node.sram_area_mm2(kib) for kib in (32, 8, 3)) + node.sram_area_mm2(64)
    assert (round(distributed, 2), round(template, 2)) == (1.92, 1.75)
    assert "1.92 mm^2 against the template's 1.75" in CHIPS["simba"].misses["area"]
