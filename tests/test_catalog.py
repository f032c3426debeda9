"""The technology catalog: sources present, anchors reproduced, scaling sensible, SOURCES.md in step."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from hwmodels.catalogs import tech as catalog
from hwmodels.catalogs.tech import (
    DRAM,
    SOURCES_MD,
    Sourced,
    TechNode,
    UnknownDramError,
    UnknownTechError,
    get_tech,
    parse_sources_markdown,
    render_sources_markdown,
    tech_names,
)

NODES_LARGE_TO_SMALL = ["asic-65nm", "asic-45nm", "asic-28nm", "asic-22nm", "asic-16nm", "asic-7nm"]
YEAR = re.compile(r"\b(19|20)\d\d\b")


def all_nodes() -> list[TechNode]:
    return [get_tech(n) for n in tech_names()]


# ---- names, aliases, errors -------------------------------------------------------------------------


def test_tech_names_are_the_six_nodes_largest_first():
    assert tech_names() == NODES_LARGE_TO_SMALL


@pytest.mark.parametrize("alias", ["28nm", "28", "asic-28nm", "ASIC-28NM", "asic_28nm", " 28nm ", "28NM"])
def test_aliases_resolve_to_the_same_node(alias):
    node = get_tech(alias)
    assert node is get_tech("asic-28nm")
    assert node.node_nm == 28 and node.name == "asic-28nm"


@pytest.mark.parametrize("bad", ["3nm", "asic-20nm", "tsmc7", ""])
def test_unknown_tech_is_a_keyerror_listing_every_name(bad):
    with pytest.raises(UnknownTechError) as info:
        get_tech(bad)
    assert isinstance(info.value, KeyError)
    message = str(info.value)
    assert repr(bad) in message
    for name in tech_names():
        assert name in message
    assert not message.startswith(("'", '"')), "message must read cleanly, not as a quoted KeyError"


def test_unknown_dram_kind_lists_kinds():
    node = get_tech("7nm")
    with pytest.raises(UnknownDramError) as info:
        node.dram_energy_pj(64, "ddr9")
    assert isinstance(info.value, KeyError)
    for kind in DRAM:
        assert kind in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda n: n.mac_energy_pj(0),
        lambda n: n.mac_energy_pj(24),
        lambda n: n.mac_energy_pj(32, number_format="int"),
        lambda n: n.mac_energy_pj(8, number_format="fp"),
        lambda n: n.mac_energy_pj(8, number_format="posit"),
        lambda n: n.alu_energy_pj(8.0),
        lambda n: n.pe_area_mm2(64),
        lambda n: n.sram_energy_pj_per_byte(0),
        lambda n: n.sram_area_mm2(-1),
        lambda n: n.leakage_w(-0.5),
        lambda n: n.dram_energy_pj(-1, "ddr4"),
    ],
)
def test_bad_arguments_raise_valueerror_saying_what_is_allowed(call):
    with pytest.raises(ValueError) as info:
        call(get_tech("45nm"))
    assert str(info.value)


# ---- every number has a source ------------------------------------------------------------------------


def test_every_field_of_every_node_is_sourced():
    for node in all_nodes():
        declared = {f.name for f in dataclasses.fields(TechNode)} - {"name", "node_nm"}
        sourced = node.sourced_fields()
        assert set(sourced) == declared, "every numeric field must be a Sourced value"
        assert set(node.sources()) == declared
        for field_name, value in sourced.items():
            assert isinstance(value, Sourced)
            assert math.isfinite(value.value) and value.value > 0, (node.name, field_name)
            assert value.unit.strip(), (node.name, field_name)
            assert len(value.source) > 30, (node.name, field_name, value.source)
            assert YEAR.search(value.source), f"{node.name}.{field_name} source names no dated reference"


def test_every_dram_kind_is_sourced():
    assert {"ddr4", "lpddr4", "lpddr5", "hbm2", "hbm3", "gddr6"} <= set(DRAM)
    for kind, value in DRAM.items():
        assert value.unit == "pJ/bit"
        assert value.value > 0
        assert YEAR.search(value.source) or value.source.startswith(catalog.UNVERIFIED + ":"), kind


def test_unverified_numbers_are_exactly_the_known_few():
    """Adding an untraced number must be a deliberate, visible change (update this list)."""
    flagged = {f"dram.{kind}" for kind, value in DRAM.items() if catalog.UNVERIFIED in value.source}
    for node in all_nodes():
        flagged |= {f"node.{name}" for name, src in node.sources().items() if catalog.UNVERIFIED in src}
    assert flagged == {
        "dram.ddr4",
        "dram.lpddr4",
        "dram.lpddr5",
        "dram.gddr6",
        "node.sram_access_fixed_share",
    }
    assert catalog.UNVERIFIED not in catalog.LOGIC_UTILIZATION.source  # TPU v4i's matrix unit
    assert catalog.UNVERIFIED not in catalog.SRAM_ARRAY_EFFICIENCY.source  # TPU v4i's CMEM
    assert not any(catalog.UNVERIFIED in s.source for s in catalog.DIE_OVERHEAD.values())


def test_derived_values_keep_the_original_reference_and_say_how():
    node = get_tech("7nm")
    src = node.sources()["int8_mult_pj"]
    assert "Horowitz" in src and "Stillmaker" in src and "45->7 nm" in src
    assert "Stillmaker" in node.sources()["int8_mult_area_um2"]
    assert "interpolated" in get_tech("28nm").sources()["energy_scale"]
    assert "interpolated" in get_tech("22nm").sources()["energy_scale"]
    assert "E_bulk65" in get_tech("65nm").sources()["energy_scale"]


def test_nodes_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_tech("45nm").node_nm = 40  # type: ignore[misc]


# ---- Horowitz anchors reproduced exactly at 45 nm -----------------------------------------------------


HOROWITZ_ENERGY_PJ = {
    "int8_add_pj": 0.03,
    "int8_mult_pj": 0.2,
    "int32_add_pj": 0.1,
    "int32_mult_pj": 3.1,
    "fp16_add_pj": 0.4,
    "fp16_mult_pj": 1.1,
    "fp32_add_pj": 0.9,
    "fp32_mult_pj": 3.7,
    "sram_8kib_pj_per_64b": 10.0,
    "sram_32kib_pj_per_64b": 20.0,
    "sram_1mib_pj_per_64b": 100.0,
}


def test_horowitz_fields_exact_at_45nm():
    node = get_tech("45nm")
    for field_name, expected in HOROWITZ_ENERGY_PJ.items():
        assert getattr(node, field_name).value == expected, field_name
    assert node.vdd_v.value == 0.9
    assert node.energy_scale.value == 1.0 and node.area_scale.value == 1.0


def test_horowitz_anchors_reproduced_by_the_methods_at_45nm():
    node = get_tech("45nm")
    assert node.alu_energy_pj(8) == pytest.approx(0.03, rel=1e-12)
    assert node.alu_energy_pj(16, number_format="fp") == pytest.approx(0.4, rel=1e-12)
    assert node.alu_energy_pj(32) == pytest.approx(0.9, rel=1e-12)
    # int8 MAC = 8b multiply + 32b accumulate; fp16 accumulates in fp32
    assert node.mac_energy_pj(8) == pytest.approx(0.2 + 0.1, rel=1e-12)
    assert node.mac_energy_pj(16, number_format="fp") == pytest.approx(1.1 + 0.9, rel=1e-12)
    assert node.mac_energy_pj(32) == pytest.approx(3.7 + 0.9, rel=1e-12)
    # 64-bit accesses: 10 / 20 / 100 pJ -> per byte
    assert node.sram_energy_pj_per_byte(8) == pytest.approx(10 / 8, rel=1e-12)
    assert node.sram_energy_pj_per_byte(32) == pytest.approx(20 / 8, rel=1e-12)
    assert node.sram_energy_pj_per_byte(1024) == pytest.approx(100 / 8, rel=1e-12)


def test_int_power_law_interpolation_hits_both_anchors_and_sits_between():
    node = get_tech("45nm")
    assert node._int_mult_pj(8) == pytest.approx(0.2) and node._int_mult_pj(32) == pytest.approx(3.1)
    assert 0.2 < node._int_mult_pj(16) < 3.1
    # 16-bit add lands near the 0.05 pJ that Dally's version of the table lists
    assert node._int_add_pj(16) == pytest.approx(0.05, rel=0.15)


# ---- scaling sanity -------------------------------------------------------------------------------------


COSTS = {
    "mac int8": lambda n: n.mac_energy_pj(8),
    "mac int16": lambda n: n.mac_energy_pj(16),
    "mac fp16": lambda n: n.mac_energy_pj(16, number_format="fp"),
    "mac fp32": lambda n: n.mac_energy_pj(32),
    "alu int8": lambda n: n.alu_energy_pj(8),
    "alu fp32": lambda n: n.alu_energy_pj(32),
    "sram 64KiB": lambda n: n.sram_energy_pj_per_byte(64),
    "sram 4MiB": lambda n: n.sram_energy_pj_per_byte(4096),
    "sram area": lambda n: n.sram_area_mm2(256),
    "pe area int8": lambda n: n.pe_area_mm2(8),
    "pe area fp32": lambda n: n.pe_area_mm2(32),
    "alu area": lambda n: n.alu_area_mm2(16),
}


@pytest.mark.parametrize("cost", sorted(COSTS))
def test_smaller_nodes_are_cheaper(cost):
    values = [COSTS[cost](get_tech(name)) for name in NODES_LARGE_TO_SMALL]
    assert all(a > b > 0 for a, b in zip(values, values[1:])), dict(zip(NODES_LARGE_TO_SMALL, values))


@pytest.mark.parametrize("name", NODES_LARGE_TO_SMALL)
def test_wider_and_floating_point_operations_cost_more(name):
    node = get_tech(name)
    assert node.mac_energy_pj(4) < node.mac_energy_pj(8) < node.mac_energy_pj(16)
    assert node.mac_energy_pj(8) < node.mac_energy_pj(16, number_format="fp") < node.mac_energy_pj(32)
    assert node.mac_energy_pj(32) > 10 * node.mac_energy_pj(8)
    assert node.alu_energy_pj(8) < node.alu_energy_pj(16) < node.alu_energy_pj(32)
    assert node.pe_area_mm2(4) < node.pe_area_mm2(8) < node.pe_area_mm2(16) < node.pe_area_mm2(32)
    assert node.alu_area_mm2(8) < node.alu_area_mm2(16) < node.alu_area_mm2(32)
    assert node.alu_energy_pj(8) < node.mac_energy_pj(8)


@pytest.mark.parametrize("name", NODES_LARGE_TO_SMALL)
def test_sram_energy_grows_with_capacity_and_is_continuous(name):
    node = get_tech(name)
    caps = [0.0625, 1, 4, 8, 16, 32, 100, 512, 1024, 4096, 65536]
    energies = [node.sram_energy_pj_per_byte(c) for c in caps]
    assert all(a < b for a, b in zip(energies, energies[1:]))
    for anchor in (8, 32, 1024):  # no jump across the piecewise boundaries
        below, above = node.sram_energy_pj_per_byte(anchor * 0.999), node.sram_energy_pj_per_byte(anchor * 1.001)
        assert above / below == pytest.approx(1.0, abs=2e-3)
    # outside the anchors it follows sqrt(capacity)
    assert node.sram_energy_pj_per_byte(4096) / node.sram_energy_pj_per_byte(1024) == pytest.approx(2.0)
    assert node.sram_energy_pj_per_byte(2) / node.sram_energy_pj_per_byte(8) == pytest.approx(0.5)


@pytest.mark.parametrize("name", NODES_LARGE_TO_SMALL)
def test_areas_and_leakage_are_linear_where_documented(name):
    node = get_tech(name)
    # linear beyond the largest macro CACTI 7 was run for (4 MiB), where the periphery share stops falling
    assert node.sram_area_mm2(16384) == pytest.approx(2 * node.sram_area_mm2(8192))
    assert node.sram_area_mm2(0) == 0
    assert node.leakage_w(10.0) == pytest.approx(10 * node.leakage_w(1.0))
    assert node.leakage_w(1.0) == pytest.approx(node.leakage_w_per_mm2.value)


def test_sram_area_grows_per_bit_as_macros_shrink_widen_or_split():
    """CACTI 7's periphery share: a 1 KiB scratchpad is far less dense per bit than a 1 MiB bank, a 256-bit access
    less dense than a 64-bit one, and a buffer split into banks pays each bank's periphery."""
    node = get_tech("28nm")
    per_kib = {kib: node.sram_area_mm2(kib) / kib for kib in (0.25, 1, 16, 1024)}
    assert per_kib[0.25] > per_kib[1] > per_kib[16] > per_kib[1024]
    assert per_kib[1] / per_kib[1024] == pytest.approx(0.92556 / 0.67224, rel=1e-3)  # the CACTI runs' ratio
    assert node.sram_area_mm2(16, width_bits=256) > node.sram_area_mm2(16)
    assert node.sram_area_mm2(64, banks=16) == pytest.approx(16 * node.sram_area_mm2(4))
    columns = node.sram_area_mm2(np.array([1.0, 16.0]), banks=2)  # broadcasts over designs
    assert columns == pytest.approx([node.sram_area_mm2(1.0, banks=2), node.sram_area_mm2(16.0, banks=2)])


def test_pe_local_stores_are_registers_when_tiny_and_sram_when_deep():
    node = get_tech("65nm")
    one_word = node.local_storage_area_mm2(1, 16)
    assert one_word == pytest.approx(node.register_file_area_mm2(1, 16) / catalog.LOGIC_UTILIZATION.value)
    deep = node.local_storage_area_mm2(224, 16)  # Eyeriss' weight scratchpad, 224 x 16 bits
    assert deep == pytest.approx(node.sram_area_mm2(224 * 2 / 1024, width_bits=16)) and deep < 224 * one_word


def test_magnitudes_match_published_ballparks():
    n45, n28, n7 = get_tech("45nm"), get_tech("28nm"), get_tech("7nm")
    # "a MAC8 at 45 nm is a few hundred um^2"
    assert 200e-6 < n45.pe_area_mm2(8) < 1000e-6
    # 1 MiB of 45 nm on-die buffer: 8 Mib x 0.346 um^2 / 0.26 (TPU v4i's CMEM, periphery and wiring included)
    assert 8.0 < n45.sram_area_mm2(1024) < 14.0
    # TSMC (VLSI 2009) claims 30-50 % active power reduction for 28 nm over 45 nm
    assert 0.5 <= n28.energy_scale.value <= 0.7
    # leakage of a busy datapath stays a small fraction of its dynamic power (1 GHz, one MAC per cycle)
    for node in (n45, n28, n7):
        dynamic_w = node.mac_energy_pj(8) * 1e-12 * 1e9
        assert node.leakage_w(node.pe_area_mm2(8)) < 0.2 * dynamic_w


def test_stillmaker_transcription_matches_the_published_erratum_example():
    # Erratum to Stillmaker & Baas 2017: EnergyFactor = 0.8367(0.9)^2 - 0.4341(0.9) + 0.1701 = 0.4571
    assert catalog._stillmaker_energy(32, 0.9) == pytest.approx(0.4571, abs=1e-4)


def test_dram_energy_is_bytes_times_eight_times_pj_per_bit():
    node = get_tech("16nm")
    assert node.dram_energy_pj(1000, "hbm2") == pytest.approx(1000 * 8 * 3.97)
    assert node.dram_energy_pj(64) == pytest.approx(64 * 8 * DRAM["lpddr4"].value)
    assert node.dram_energy_pj(64, "DDR4") == get_tech("45nm").dram_energy_pj(64, "ddr4")
    assert DRAM["ddr4"].value > DRAM["gddr6"].value > DRAM["lpddr4"].value > DRAM["hbm2"].value


# ---- SOURCES.md ---------------------------------------------------------------------------------------


def test_sources_md_is_up_to_date():
    assert SOURCES_MD.exists(), "run `python -m hwmodels.catalogs.tech` to write hwmodels/data/SOURCES.md"
    assert SOURCES_MD.read_text(encoding="utf-8") == render_sources_markdown(), (
        "SOURCES.md is stale; run `python -m hwmodels.catalogs.tech`"
    )


def test_sources_md_lists_every_field_of_every_node_with_value_and_source():
    tables = parse_sources_markdown(SOURCES_MD.read_text(encoding="utf-8"))
    for node in all_nodes():
        assert node.name in tables, node.name
        rows = tables[node.name]
        assert set(rows) == set(node.sourced_fields()), node.name
        for field_name, sourced in node.sourced_fields().items():
            value, unit, source = rows[field_name]
            assert value == pytest.approx(sourced.value, rel=1e-5), (node.name, field_name)
            assert unit == sourced.unit
            assert source == sourced.source
    assert set(tables["dram"]) == set(DRAM)
    for kind, sourced in DRAM.items():
        assert tables["dram"][kind][0] == pytest.approx(sourced.value)
        assert tables["dram"][kind][2] == sourced.source


# ---- SRAM by access width and banking ------------------------------------------------------------------


def test_sram_default_width_and_one_bank_keep_the_horowitz_anchors():
    node = get_tech("45nm")
    for kib, pj_64b in ((8, 10.0), (32, 20.0), (1024, 100.0)):
        assert node.sram_energy_pj_per_byte(kib, width_bits=64, banks=1) == node.sram_energy_pj_per_byte(kib)
        assert node.sram_energy_pj_per_byte(kib) == pytest.approx(pj_64b / 8, rel=1e-12)


def test_sram_banking_prices_the_bank_an_access_activates():
    node = get_tech("28nm")
    assert node.sram_energy_pj_per_byte(256, banks=4) == pytest.approx(node.sram_energy_pj_per_byte(64))
    assert node.sram_energy_pj_per_byte(1024, banks=16) < node.sram_energy_pj_per_byte(1024, banks=2)


def test_sram_width_splits_a_fixed_share_from_a_per_bit_share():
    node = get_tech("45nm")
    fixed = node.sram_access_fixed_share.value
    per_64b = node.sram_energy_pj_per_byte(32) * 8
    # a 256-bit access: the fixed share once plus four 64-bit per-bit shares
    assert node.sram_energy_pj_per_byte(32, width_bits=256) * 32 == pytest.approx(per_64b * (fixed + 4 * (1 - fixed)))
    widths = [8, 16, 64, 128, 512]
    per_byte = [node.sram_energy_pj_per_byte(32, width_bits=w) for w in widths]
    assert all(a > b for a, b in zip(per_byte, per_byte[1:])), "wider accesses amortise the fixed share"
    arr = node.sram_energy_pj_per_byte(np.array([16.0, 64.0]), width_bits=128, banks=2)
    assert arr[1] == pytest.approx(node.sram_energy_pj_per_byte(64.0, width_bits=128, banks=2))


@pytest.mark.parametrize("kwargs", [{"width_bits": 0}, {"banks": 0}, {"banks": 1.5}, {"banks": True}])
def test_sram_bad_width_or_banks_raise_valueerror(kwargs):
    with pytest.raises(ValueError):
        get_tech("7nm").sram_energy_pj_per_byte(64, **kwargs)


def test_new_nodes_take_their_published_anchors():
    n65, n22 = get_tech("65nm"), get_tech("22nm")
    assert n65.sram_bitcell_um2.value == 0.57 and n22.sram_bitcell_um2.value == 0.092
    assert n65.area_scale.value == 1.5  # Stillmaker & Baas, row 45 nm, column 65 nm
    # E_bulk65(1.0 V) = 3.755 - 4.398 + 1.975 = 1.332 against E_HP45(0.9 V) = 0.6989
    assert n65.energy_scale.value == pytest.approx(1.332 / 0.69889, rel=1e-3)
    assert get_tech("28nm").energy_scale.value > n22.energy_scale.value > get_tech("16nm").energy_scale.value


def test_die_overheads_reproduce_the_tpu_v1_floor_plan_shares():
    shares = {k: v.value for k, v in catalog.DIE_OVERHEAD.items()}
    core = 0.37 + 0.30
    assert shares["control"] * core == pytest.approx(0.02)
    assert shares["io"] * core == pytest.approx(0.10)
    assert (1 + sum(shares.values())) * core == pytest.approx(1.0)  # the blocks and overheads make the whole die


def test_the_silicon_derived_densities_rest_on_this_catalog_s_own_7nm_figures():
    """The two TPU v4i ratios divide by the catalog's own 7 nm bitcell and 16-bit float PE cell area: a change to
    either must change the ratio with it, not leave a stale constant behind."""
    n7 = get_tech("7nm")
    assert catalog.SRAM_ARRAY_EFFICIENCY.value == pytest.approx(2**30 * n7.sram_bitcell_um2.value * 1e-6 / 112.0)
    cell_um2 = n7.pe_area_mm2(16, "fp") * 1e6
    assert catalog.LOGIC_UTILIZATION.value == pytest.approx(cell_um2 / (14e6 / (128 * 128)), rel=1e-3)
