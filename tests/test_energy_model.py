"""The energy side of the systolic model: PE-level storage, the accumulator width, published per-action tables as
a ``tech:``, one pricing for every family, and the side-by-side with AccelForge (issue #28)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dse.accelforge import main as accelforge_main
from dse.graph import GraphBuilder
from dse.spec.checks import _tech_problem
from hwmodels.catalogs.actions import (
    REQUIRED_ACTIONS,
    TABLES,
    TPU_V4,
    ActionTable,
    ActionTableError,
    check_price_name,
    register_write_pj_per_bit,
)
from hwmodels.catalogs.tech import Sourced, get_tech
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.model import SystolicModel
from hwmodels.systolic.pricing import design_prices, pe_storage_pj_per_mac, stationary_words
from mappers.payloads import FoldPlan
from mappers.systolic.fold import SystolicFoldMapper
from templates.base import TemplateError
from templates.systolic import SystolicTemplate

ROOT = Path(__file__).resolve().parents[1]
ACCELFORGE = ROOT.parent / "shared" / "data" / "accelforge"


def _gemm(m=256, k=256, n=256):
    b = GraphBuilder("g")
    b.linear(b.input("x", (m, k)), n, name="layer", bias=False)
    return b.build()


def _evaluate(**point):
    arch = SystolicTemplate().instantiate({"rows": 32, "cols": 32, **point})
    mapping = SystolicFoldMapper().map(_gemm(), arch)
    return arch, mapping, SystolicModel().evaluate(mapping, arch)


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_pe_storage_is_per_mac_registers_plus_stationary_loads(dataflow):
    arch, mapping, metrics = _evaluate(dataflow=dataflow)
    prices = design_prices(arch)
    cost = gemm_cost(mapping.ops["layer"].payload_as(FoldPlan).gemm, arch)
    loads = stationary_words(dataflow, cost.ifmap_sram_reads, cost.filter_sram_reads, cost.ofmap_sram_writes)
    macs = 256**3
    expected = macs * prices.e_pe_per_mac + loads * prices.e_pe_per_load
    assert metrics.energy_breakdown_pj["pe_storage"] == pytest.approx(expected)
    # a catalog node writes every moving operand and the 32-bit partial sum into a flip-flop each MAC
    reg = register_write_pj_per_bit(get_tech(arch.tech)) * 8
    moving = {"ws": 1, "is": 1, "os": 2}[dataflow]
    assert prices.e_pe_per_mac == pytest.approx(reg * (moving * 1 + 4))


def test_accumulator_width_prices_the_partial_sums():
    _, _, wide = _evaluate(dataflow="ws")
    _, _, narrow = _evaluate(dataflow="ws", acc_bits=8)
    assert wide.energy_breakdown_pj["pe_storage"] > 2 * narrow.energy_breakdown_pj["pe_storage"]
    assert wide["latency_cycles"] == narrow["latency_cycles"]  # energy only
    assert "acc_bits" in {p.name for p in SystolicTemplate().params()}


def test_pricing_broadcasts_over_columns_of_designs():
    e = {a: float(i + 1) for i, a in enumerate(REQUIRED_ACTIONS)}
    flows = np.array(["ws", "os", "is", "os"])
    cols = pe_storage_pj_per_mac(flows, np.array([1, 1, 2, 2]), np.array([4, 4, 4, 1]), e)
    one = [pe_storage_pj_per_mac(f, w, a, e) for f, w, a in zip(flows, (1, 1, 2, 2), (4, 4, 4, 1))]
    np.testing.assert_allclose(cols, one)


def test_tpu_v4_table_prices_a_design():
    arch, _, metrics = _evaluate(dataflow="ws", tech="tpu-v4")
    prices = design_prices(arch)
    assert prices.e_mac == 0.084
    assert prices.e_sram["filter"] == pytest.approx(1.88 * 8)
    assert prices.sram_write("ifmap") == pytest.approx(0.293 * 8)
    assert prices.e_dram_read == pytest.approx(7.03 * 8)
    assert metrics.energy_breakdown_pj["mac"] == pytest.approx(256**3 * 0.084)
    assert all(s.source for s in TPU_V4.actions.values())
    assert set(TABLES) >= {"tpu-v4", "eyeriss-65nm"}


def test_a_table_missing_an_action_or_an_unknown_tech_is_refused_by_name():
    partial = {a: Sourced(0.1, "pJ", "test") for a in REQUIRED_ACTIONS if a != "dram_write"}
    with pytest.raises(ActionTableError, match="dram_write"):
        ActionTable("partial", "test", 8, "asic-7nm", partial)
    with pytest.raises(ActionTableError, match="tpu-v4"):
        check_price_name("tpu-v9")
    assert "tpu-v4" in _tech_problem("tpu-v9") and _tech_problem("tpu-v4") is None and _tech_problem("7nm") is None
    with pytest.raises(TemplateError) as err:
        SystolicTemplate().instantiate({"tech": "tpu-v9"})
    assert err.value.param == "tech"


@pytest.mark.skipif(not ACCELFORGE.is_dir(), reason="../shared/data/accelforge (AccelForge reference runs) absent")
def test_accelforge_compare_tpu_gemm_within_15_percent(capsys):
    args = ["--arch", str(ACCELFORGE / "arches" / "tpu_v4i.yaml")]
    args += ["--result", str(ACCELFORGE / "results" / "tpu_v4i_gemm512_energy.json"), "--mapper", "fold"]
    assert accelforge_main([*args, "--dataflow", "os"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    last = re.fullmatch(r"total energy: dse ([\d.]+) uJ, AccelForge ([\d.]+) uJ, error ([+-][\d.]+) %", lines[-1])
    assert last, lines[-1]
    assert abs(float(last.group(3))) <= 15
    assert float(last.group(2)) == pytest.approx(83.5, abs=0.1)
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("MainMemory|", "MAC|"))}
    for key in ("MainMemory|A|read", "MainMemory|B|read", "MainMemory|Z|write", "MAC|None|compute"):
        assert float(rows[key][1]) == pytest.approx(float(rows[key][2]), rel=0.05), key
