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
from hwmodels.systolic.arrays import DesignColumns, evaluate_designs
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.model import SystolicModel
from hwmodels.systolic.pricing import design_prices, pe_reuse, pe_storage_pj_per_mac, stationary_words, window_share
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


def _loop_nest_words(dataflow, m, k, n, rows, cols, a, b):
    """The array's SRAM words counted pass by pass, each pass covering rows*a of the row axis and cols*b of the
    column axis while T streams: (words along the rows, words along the columns), both T per element a pass
    holds (ws/is: the streamed operand read and the partial sums written; os: the inputs and the weights)."""
    sr, sc, t = {"ws": (k, n, m), "is": (k, m, n), "os": (m, n, k)}[dataflow]
    along_rows = along_cols = 0
    for r0 in range(0, sr, rows * a):
        for c0 in range(0, sc, cols * b):
            along_rows += t * min(rows * a, sr - r0)
            along_cols += t * min(cols * b, sc - c0)
    return along_rows, along_cols


@pytest.mark.parametrize("dataflow", ["ws", "is", "os"])
@pytest.mark.parametrize("words", [(1, 1, 1), (8, 3, 1), (40, 24, 32), (2, 7, 5)])
def test_pe_reuse_counts_the_loop_nest_of_its_fold_groups(dataflow, words):
    m, k, n, rows, cols = 37, 50, 29, 4, 3
    sr, sc, t = {"ws": (k, n, m), "is": (k, m, n), "os": (m, n, k)}[dataflow]
    rf, cf = -(-sr // rows), -(-sc // cols)
    fold = {"ws": (t * sr * cf, sr * sc), "is": (sr * sc, t * sr * cf), "os": (sr * t * cf, t * sc * rf)}[dataflow]
    fold = (*fold, m * n * (1 if dataflow == "os" else rf))
    reuse = pe_reuse(dataflow, rf, cf, words, fold)
    a, b = int(reuse.a), int(reuse.b)
    stationary = {"ws": words[0], "is": words[1], "os": words[2]}[dataflow]
    assert a * b <= stationary and a <= rf and b <= cf
    got = reuse.streams(*fold)
    along_rows, along_cols = _loop_nest_words(dataflow, m, k, n, rows, cols, a, b)
    want = {
        "ws": (along_rows, fold[1], along_cols),
        "is": (fold[0], along_rows, along_cols),
        "os": (along_rows, along_cols, fold[2]),
    }[dataflow]
    assert got == want
    if words == (1, 1, 1):
        assert got == fold and reuse.moving_per_mac == (1.0, 1.0, 1.0)
    elif stationary > 1:  # a deeper stationary scratchpad always saves words here
        assert sum(got) < sum(fold)


@pytest.mark.parametrize("kernel, out, stride", [(3, 56, 1), (5, 7, 2), (3, 10, 3), (7, 4, 1)])
@pytest.mark.parametrize("taps", [1, 2, 3, 12])
def test_window_share_counts_the_distinct_input_words_of_a_sliding_row(kernel, out, stride, taps):
    g = min(taps, kernel)
    groups = [range(s, min(s + g, kernel)) for s in range(0, kernel, g)]
    distinct = sum(len({q * stride + s for q in range(out) for s in grp}) for grp in groups)
    assert window_share(kernel, out, stride, taps) == pytest.approx(distinct / (out * kernel))
    assert window_share(kernel, out, stride, 1) == 1.0


def test_pe_scratchpads_cut_sram_energy_only_and_the_array_path_agrees():
    arch, mapping, flat = _evaluate(dataflow="is", tech="eyeriss-65nm")
    deep, _, metrics = _evaluate(dataflow="is", tech="eyeriss-65nm", pe_input_words=24, pe_weight_words=8)
    assert metrics["latency_cycles"] == flat["latency_cycles"] and metrics["dram_mb"] == flat["dram_mb"]
    assert metrics.energy_breakdown_pj["sram"] < 0.7 * flat.energy_breakdown_pj["sram"]
    assert metrics.energy_breakdown_pj["pe_storage"] < flat.energy_breakdown_pj["pe_storage"]
    assert design_prices(deep).area_mm2["pe_array"] > design_prices(arch).area_mm2["pe_array"]
    names = {p.name for p in SystolicTemplate().params()}
    assert {"pe_weight_words", "pe_input_words", "pe_psum_words"} <= names
    got = evaluate_designs(_gemm(), DesignColumns.of([arch, deep]))
    for i, want in enumerate((flat, metrics)):
        for part, pj in want.energy_breakdown_pj.items():
            assert got.energy_breakdown_pj[part][i] == pytest.approx(pj, rel=1e-12), part


def _compare(capsys, arch: str, result: str, *options: str) -> tuple[float, dict[str, list[str]]]:
    args = ["--arch", str(ACCELFORGE / "arches" / arch), "--result", str(ACCELFORGE / "results" / result)]
    assert accelforge_main([*args, *options]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    last = re.fullmatch(r"total energy: dse ([\d.]+) uJ, AccelForge ([\d.]+) uJ, error ([+-][\d.]+) %", lines[-1])
    assert last, lines[-1]
    rows = {line.split()[0]: line.split() for line in lines if "|" in line.split(" ")[0]}
    return float(last.group(3)), rows


@pytest.mark.skipif(not ACCELFORGE.is_dir(), reason="../shared/data/accelforge (AccelForge reference runs) absent")
def test_accelforge_compare_within_15_percent(capsys):
    """TPU v4i GEMM (ws, PE registers) and Eyeriss conv (is, per-PE scratchpads with sliding windows), each on its
    fastest dse mapping; ``benchmarks/accelforge_compare.py`` prints all six shared cases (slow: CP-SAT each)."""
    error, rows = _compare(capsys, "tpu_v4i.yaml", "tpu_v4i_gemm512_energy.json", "--mapper", "cpsat")
    assert abs(error) <= 15
    for key in ("MainMemory|A|read", "MainMemory|B|read", "MainMemory|Z|write", "MAC|None|compute"):
        assert float(rows[key][1]) == pytest.approx(float(rows[key][2]), rel=0.05), key
    error, rows = _compare(capsys, "eyeriss.yaml", "eyeriss_conv_energy_noLO.json", "--mapper", "cpsat")
    assert abs(error) <= 15
    for key in ("MainMemory|Ofm|write", "MainMemory|Wgt|read", "MAC|None|compute"):
        assert float(rows[key][1]) == pytest.approx(float(rows[key][2]), rel=0.05), key
