"""What a systolic design pays: per-access energies of its SRAM banks, DRAM, MACs and ALUs, its area and
its leakage, all from the technology catalog (``hwmodels.catalogs.tech``).

The one place these prices are derived: the model (``hwmodels.systolic.model``) charges them per
layer, the tiling mappers' energy objective (``mappers.systolic.objective.cost_model``) scores schedules
with them, and the surrogates' batch features (``surrogates.systolic.features.arch_table``) take the same
catalog figures for numpy columns of designs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from hwmodels.catalogs.tech import DIE_OVERHEAD, LOGIC_UTILIZATION, TechNode, get_tech
from hwmodels.systolic.cost import GemmCost
from hwmodels.systolic.sparse import sparse_area_fraction
from templates.systolic import PRECISIONS, SystolicArch

# SRAM energy per byte is taken at the capacity of one bank of the double buffer (half the SRAM),
# since an access activates one half only.
_BANKS_PER_SRAM = 2
# A unified scratchpad (``scratchpad="unified"``) is banked so the array's input, weight and output
# streams and the DMA rarely meet in one bank; 4 banks is Gemmini's default scratchpad (``sp_banks =
# 4``, Genc et al., DAC 2021). Its banks are a quarter of the whole, larger than a split SRAM's halves
# (a sixth of the whole), so every access costs more: the price of one shared address space.
_UNIFIED_BANKS = 4


def bank_kib(ifmap_kib, filter_kib, ofmap_kib, unified):  # noqa: ANN001, ANN201 (scalars or numpy arrays)
    """The bank one access to the ifmap, filter and ofmap SRAMs activates, in KiB: their energy scale.

    The one place this is decided, for scalars (the model, the tiling mappers' prices) and for numpy
    columns (the surrogates' batch features): a split SRAM's half, or a quarter of a unified scratchpad.
    """
    sizes = (ifmap_kib, filter_kib, ofmap_kib)
    whole = (ifmap_kib + filter_kib + ofmap_kib) / _UNIFIED_BANKS
    if isinstance(unified, (bool, np.bool_)):
        return tuple(whole if unified else kib / _BANKS_PER_SRAM for kib in sizes)
    return tuple(np.where(unified, whole, np.asarray(kib) / _BANKS_PER_SRAM) for kib in sizes)


def sram_bank_kib(arch: SystolicArch) -> dict[str, float]:
    """The bank one access to each SRAM ('ifmap' | 'filter' | 'ofmap') activates, in KiB: its energy scale."""
    banks = bank_kib(arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib, arch.scratchpad == "unified")
    return dict(zip(("ifmap", "filter", "ofmap"), banks))


def number_format(precision: str) -> str:
    """The catalog's number format of a precision: 'int' for the integer ones, else 'fp'."""
    return "int" if precision.startswith("int") else "fp"


def die_overhead_mm2(core_mm2):  # noqa: ANN001, ANN201 (a float or a numpy column)
    """What a die adds around its core blocks (control, I/O, wiring), each a sourced fraction of them
    (``hwmodels.catalogs.tech.DIE_OVERHEAD``)."""
    return {block: share.value * core_mm2 for block, share in DIE_OVERHEAD.items()}


def placed_logic_mm2(cell_mm2):  # noqa: ANN001, ANN201 (a float or a numpy column)
    """Placed area of synthesized logic: its cell area over the placement density."""
    return cell_mm2 / LOGIC_UTILIZATION.value


def area_total_mm2(logic_cell_mm2, sram_mm2):  # noqa: ANN001, ANN201 (floats or numpy columns)
    """Whole-design area from the cell area of its logic and the area of its SRAM macros: the one formula the
    surrogates' batch features share with ``systolic_area_mm2``."""
    core = placed_logic_mm2(logic_cell_mm2) + sram_mm2
    return core + sum(die_overhead_mm2(core).values())


def systolic_area_mm2(arch: SystolicArch) -> dict[str, float]:
    """Area per block: PE array, SRAM (one scratchpad or three SRAMs), vector lanes, then the control, I/O and
    wiring a die adds around them. Logic blocks are placed cell areas (``placed_logic_mm2``)."""
    tech = get_tech(arch.tech)
    fmt = number_format(arch.precision)
    pe_array = arch.rows * arch.cols * tech.pe_area_mm2(arch.bits, fmt)
    parts = {
        "pe_array": placed_logic_mm2(pe_array),
        "sram": tech.sram_area_mm2(arch.scratchpad_kib)
        if arch.scratchpad == "unified"
        else sum(tech.sram_area_mm2(kib) for kib in (arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib)),
        "vector": placed_logic_mm2(arch.vector_lanes * tech.alu_area_mm2(arch.bits, fmt)),
    }
    if arch.sparsity_support:  # zero gates, N:M muxes, intersection logic (hwmodels.catalogs.sparse)
        parts["sparse"] = parts["pe_array"] * sparse_area_fraction(arch)
    parts.update(die_overhead_mm2(sum(parts.values())))
    return parts


@dataclass(frozen=True)
class Prices:
    """One design's catalog prices: per-access energies in pJ (SRAM per byte of the bank an access
    activates), its area per block and its leakage."""

    tech: TechNode
    e_mac: float
    e_alu: float
    e_sram: dict[str, float]  # 'ifmap' | 'filter' | 'ofmap' -> pJ per byte
    area_mm2: dict[str, float]
    leakage_w: float
    leakage_pj_per_cycle: float

    @property
    def e_sram_vec(self) -> float:
        """Vector ops stage through the ifmap/ofmap SRAMs: the ifmap bank's price."""
        return self.e_sram["ifmap"]

    @property
    def area_total_mm2(self) -> float:
        return sum(self.area_mm2.values())


def design_prices(arch: SystolicArch) -> Prices:
    """The catalog prices of ``arch``."""
    tech = get_tech(arch.tech)
    fmt = number_format(arch.precision)
    bits = arch.bits
    area = systolic_area_mm2(arch)
    leak_w = tech.leakage_w(sum(area.values()))
    return Prices(
        tech=tech,
        e_mac=tech.mac_energy_pj(bits, fmt),
        e_alu=tech.alu_energy_pj(bits, fmt),
        e_sram={which: tech.sram_energy_pj_per_byte(kib) for which, kib in sram_bank_kib(arch).items()},
        area_mm2=area,
        leakage_w=leak_w,
        leakage_pj_per_cycle=leak_w * 1e12 / (arch.freq_mhz * 1e6),
    )


# ---------------------------------------------------------------------------------------------------
# The same catalog figures for numpy columns of designs (the surrogates' batch features)
# ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def tech_constants(tech: str, precision: str) -> tuple:
    """Catalog energies (pJ) and areas (mm^2) of one technology at one precision."""
    node = get_tech(tech)
    bits = PRECISIONS[precision]
    fmt = number_format(precision)
    return (
        node.mac_energy_pj(bits, fmt),
        node.alu_energy_pj(bits, fmt),
        node.dram_energy_pj(1.0),
        node.pe_area_mm2(bits, fmt),
        node.sram_area_mm2(1.0),
        node.alu_area_mm2(bits, fmt),
        node.leakage_w_per_mm2.value,
        float(node.node_nm),
    )


def sram_pj_per_byte(tech: tuple[np.ndarray, list[str]], kib: np.ndarray) -> np.ndarray:
    """The catalog's SRAM energy per byte of each (technology, capacity): one array call per technology.
    ``tech`` is (code per design, technology names)."""
    codes, names = tech
    if len(names) == 1:
        return np.asarray(get_tech(names[0]).sram_energy_pj_per_byte(kib), dtype=float)
    out = np.empty(len(kib))
    for code, name in enumerate(names):
        mask = codes == code
        out[mask] = get_tech(name).sram_energy_pj_per_byte(kib[mask])
    return out


# ---------------------------------------------------------------------------------------------------
# Charges: access counts x these prices (the systolic model per layer, the multicore mapper per task)
# ---------------------------------------------------------------------------------------------------
def gemm_energy_pj(cost: GemmCost, macs: int, prices: Prices, word_bytes: int) -> dict[str, float]:
    """Energy (pJ, before leakage) of one lowered GEMM: MACs, the SRAM accesses of the array plus every
    DRAM fill and drain through its SRAM, and the DRAM bytes."""
    wb, e_sram = word_bytes, prices.e_sram
    dram_bytes = (cost.ifmap_dram_reads + cost.filter_dram_reads + cost.ofmap_dram_writes) * wb
    sram = (
        (cost.ifmap_sram_reads + cost.ifmap_dram_reads) * wb * e_sram["ifmap"]
        + (cost.filter_sram_reads + cost.filter_dram_reads) * wb * e_sram["filter"]
        + (cost.ofmap_sram_writes + cost.ofmap_dram_writes) * wb * e_sram["ofmap"]
    )
    return {"mac": macs * prices.e_mac, "sram": sram, "dram": prices.tech.dram_energy_pj(dram_bytes), "vector": 0.0}


def vector_energy_pj(flops: int, read_bytes: float, write_bytes: float, prices: Prices) -> dict[str, float]:
    """Energy (pJ, before leakage) of one op on the SIMD unit: ALU work, staging SRAM and DRAM bytes."""
    moved = read_bytes + write_bytes
    return {
        "mac": 0.0,
        "sram": moved * prices.e_sram_vec,
        "dram": prices.tech.dram_energy_pj(moved),
        "vector": flops * prices.e_alu,
    }
