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
from dse.silicon import chip_graph, chip_power_w, compare_chip
from hwmodels.catalogs.chips import CHIPS
from hwmodels.catalogs.tech import UNVERIFIED, get_tech

YEAR = re.compile(r"\b(19|20)\d\d\b")

# (low, high) relative error of the model against the published figure, as measured when the band was set
# (see the report of issue #28): a change to the area or energy model that moves a figure out of its band
# must update the band on purpose. The 30 % target is not met on area: see benchmarks/silicon_compare.py.
# area: the per-PE scratchpads (0.5 KB each) and the RLC codecs have no area in the model yet; power: the target
EYERISS_BANDS = {"area": (-0.75, -0.55), "power": (-0.30, 0.30)}


@pytest.fixture(scope="module")
def eyeriss():
    return compare_chip(CHIPS["eyeriss"])


def test_eyeriss_area_and_power_stay_in_their_bands(eyeriss):
    low, high = EYERISS_BANDS["area"]
    assert low <= eyeriss.area_error <= high, eyeriss.area_error
    low, high = EYERISS_BANDS["power"]
    assert low <= eyeriss.power_error <= high, eyeriss.power_error


def test_power_counts_only_what_the_paper_measured_at_its_rate():
    chip = CHIPS["eyeriss"]
    metrics = PointEvaluator(chip_graph(chip), chip.family, fixed={"tech": chip.tech})(dict(chip.point))
    breakdown = metrics.energy_breakdown_pj
    assert breakdown["dram"] > 0 and "dram" in chip.power_excludes
    core_pj = sum(v for k, v in breakdown.items() if k != "dram")
    per_inference = core_pj * 1e-12 / chip.workload.batch
    assert chip_power_w(chip, metrics) == pytest.approx(per_inference * chip.rate_ips.value)
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


def test_chips_without_figures_are_not_evaluated():
    row = compare_chip(CHIPS["nvdla"])
    assert math.isnan(row.area_mm2) and math.isnan(row.power_w) and math.isnan(row.area_error)
