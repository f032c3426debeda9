"""The technology catalog: every outside number about ASIC process nodes, with its source beside it.

Why one module: an energy or area model is only as credible as its constants, so each constant is a
``Sourced`` value that names the paper, table or datasheet it came from and how it was derived. Hardware
models read numbers *only* from here (``get_tech("asic-28nm").mac_energy_pj(8)``), never from literals.

How the per-node numbers are built:

* Arithmetic and SRAM energies are anchored at 45 nm / 0.9 V on Horowitz, ISSCC 2014 (reproduced exactly
  by ``asic-45nm``) and carried to other nodes with the Stillmaker & Baas 2017 energy polynomials evaluated
  at each node's supply voltage.
* Arithmetic areas are anchored on the 45 nm synthesis areas that Han & Dally published beside Horowitz's
  energies, plus the NanGate 45 nm flip-flop for pipeline registers, and scaled with the Stillmaker & Baas
  area factors; SRAM area comes from published 6T bitcell areas per node divided by an array efficiency.
* Leakage density is calibrated on Aladdin's 40 nm datapath models and kept a constant fraction of dynamic
  power density across nodes (an assumption, stated in the source string).
* DRAM energy per bit does not depend on the logic node; ``DRAM`` holds it by interface kind.
* 28 nm and 22 nm are not Stillmaker & Baas nodes; their factors are interpolated log-linearly (in node size)
  between their 32 nm and 20 nm values, and the ``source`` strings say so. 65 nm uses their bulk row.
* SRAM energy depends on the capacity of the bank an access activates, the access width and the banking
  (``sram_energy_pj_per_byte``): Horowitz's 64-bit accesses split into a part every access pays (decoders,
  word line, control) and a part per bit read (bit lines, sense amplifiers, output drivers), as CACTI
  organises an array.

Structure for other catalogs: GPU and FPGA parts will join as further tables of ``Sourced`` values in this
module, each keyed by a part name with its own ``get_*``/``*_names`` pair and Unknown*Error.

``python -m hwmodels.catalogs.tech`` rewrites ``hwmodels/data/SOURCES.md`` from the tables below.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from dse.files import atomic_write_text
from hwmodels.catalogs.tech_data import (
    DIE_OVERHEAD,
    DRAM,
    HOROWITZ_AREA,
    HOROWITZ_ENERGY,
    LOGIC_UTILIZATION,
    MUX2_AREA_45NM,
    NANGATE,
    SRAM_ACCESS_FIXED_SHARE,
    SRAM_ARRAY_EFFICIENCY,
    SRAM_BITCELL_UM2,
    SRAM_MACRO_EFFICIENCY,
    STILLMAKER_AREA,
    STILLMAKER_ENERGY,
    VDD,
    Sourced,
)
from hwmodels.catalogs.tech_data import UNVERIFIED as UNVERIFIED  # re-exported: callers import it from here

SOURCES_MD = Path(__file__).resolve().parent.parent / "data" / "SOURCES.md"


# --------------------------------------------------------------------------------------------------
# Table: Horowitz ISSCC 2014, 45 nm, 0.9 V (energies in pJ per operation, areas in um^2)
# --------------------------------------------------------------------------------------------------
def _h_energy(value: float, what: str) -> Sourced:
    return Sourced(value, "pJ", f"{HOROWITZ_ENERGY}: {what}")


def _h_area(value: float, what: str) -> Sourced:
    return Sourced(value, "um^2", f"{HOROWITZ_AREA}: {what}")


HOROWITZ_45NM: dict[str, Sourced] = {
    "int8_add_pj": _h_energy(0.03, "8b integer add"),
    "int32_add_pj": _h_energy(0.1, "32b integer add"),
    "int8_mult_pj": _h_energy(0.2, "8b integer multiply"),
    "int32_mult_pj": _h_energy(3.1, "32b integer multiply"),
    "fp16_add_pj": _h_energy(0.4, "16b floating-point add"),
    "fp16_mult_pj": _h_energy(1.1, "16b floating-point multiply"),
    "fp32_add_pj": _h_energy(0.9, "32b floating-point add"),
    "fp32_mult_pj": _h_energy(3.7, "32b floating-point multiply"),
    "sram_8kib_pj_per_64b": _h_energy(10.0, "64-bit cache access, 8 KB"),
    "sram_32kib_pj_per_64b": _h_energy(20.0, "64-bit cache access, 32 KB"),
    "sram_1mib_pj_per_64b": _h_energy(100.0, "64-bit cache access, 1 MB"),
    "int8_add_area_um2": _h_area(36.0, "8b add"),
    "int32_add_area_um2": _h_area(137.0, "32b add"),
    "int8_mult_area_um2": _h_area(282.0, "8b multiply"),
    "int32_mult_area_um2": _h_area(3495.0, "32b multiply"),
    "fp16_add_area_um2": _h_area(1360.0, "16b FP add"),
    "fp16_mult_area_um2": _h_area(1640.0, "16b FP multiply"),
    "fp32_add_area_um2": _h_area(4184.0, "32b FP add"),
    "fp32_mult_area_um2": _h_area(7700.0, "32b FP multiply"),
}

# Flip-flop area: pipeline registers of a PE are counted per bit with the 45 nm library D flip-flop.
DFF_AREA_45NM = Sourced(4.522, "um^2/bit", f"{NANGATE}: cell DFF_X1 area")

# --------------------------------------------------------------------------------------------------
# Table: Stillmaker & Baas 2017 energy polynomials E(V) = a V^2 + b V + c (arbitrary units, HP devices)
# --------------------------------------------------------------------------------------------------
STILLMAKER_ENERGY_POLY: dict[int, tuple[float, float, float]] = {
    65: (3.755, -4.398, 1.975),  # the bulk model: Table 5 has no HP/LP split at 65 nm and above
    45: (1.018, -0.3107, 0.1539),
    32: (0.8367, -0.4341, 0.1701),
    20: (0.373, -0.1582, 0.04104),
    16: (0.2958, -0.1241, 0.03024),
    7: (0.1776, -0.09097, 0.02447),
}
# Area relative to 45 nm (Table 4, row 45 nm).
STILLMAKER_AREA_VS_45NM: dict[int, float] = {65: 1.5, 45: 1.0, 32: 0.46, 20: 0.21, 16: 0.19, 7: 0.059}


def _stillmaker_energy(node_nm: int, vdd: float) -> float:
    a, b, c = STILLMAKER_ENERGY_POLY[node_nm]
    return a * vdd * vdd + b * vdd + c


def _log_interp(node_nm: float, lo_nm: int, hi_nm: int, lo_value: float, hi_value: float) -> float:
    """Interpolate a scaling factor between two tabulated nodes, linear in log(node) and log(value)."""
    t = (math.log(hi_nm) - math.log(node_nm)) / (math.log(hi_nm) - math.log(lo_nm))
    return math.exp(math.log(hi_value) + t * (math.log(lo_value) - math.log(hi_value)))


HOROWITZ_VDD = 0.9


def _energy_scale(node_nm: int, vdd: float) -> Sourced:
    """Energy per operation at (node, vdd) relative to Horowitz's 45 nm / 0.9 V."""
    base = _stillmaker_energy(45, HOROWITZ_VDD)
    if node_nm in STILLMAKER_ENERGY_POLY:
        ratio = _stillmaker_energy(node_nm, vdd) / base
        model = "E_bulk" if node_nm > 45 else "E_HP"  # Table 5 gives one bulk row for 65 nm and above
        how = f"{model}{node_nm}({vdd} V) / E_HP45({HOROWITZ_VDD} V) = {ratio:.4f}"
    elif 20 < node_nm < 32:
        e32, e20 = _stillmaker_energy(32, vdd), _stillmaker_energy(20, vdd)
        ratio = _log_interp(node_nm, 20, 32, e20, e32) / base
        how = (
            f"{node_nm} nm not tabulated: E interpolated log-linearly in node size between E_HP32({vdd} V)="
            f"{e32:.4f} and E_HP20({vdd} V)={e20:.4f}, divided by E_HP45({HOROWITZ_VDD} V)={base:.4f} -> {ratio:.4f}"
        )
    else:
        raise ValueError(f"no Stillmaker & Baas energy data for {node_nm} nm")
    return Sourced(ratio, "x 45nm/0.9V", f"{STILLMAKER_ENERGY}; {how}")


def _area_scale(node_nm: int) -> Sourced:
    """Logic area at ``node_nm`` relative to 45 nm."""
    if node_nm in STILLMAKER_AREA_VS_45NM:
        ratio = STILLMAKER_AREA_VS_45NM[node_nm]
        how = f"45 nm -> {node_nm} nm factor {ratio}"
    elif 20 < node_nm < 32:
        ratio = _log_interp(node_nm, 20, 32, STILLMAKER_AREA_VS_45NM[20], STILLMAKER_AREA_VS_45NM[32])
        how = (
            f"{node_nm} nm not tabulated: interpolated log-linearly in node size between the 32 nm (0.46) "
            f"and 20 nm (0.21) factors -> {ratio:.4f}"
        )
    else:
        raise ValueError(f"no Stillmaker & Baas area data for {node_nm} nm")
    return Sourced(ratio, "x 45nm", f"{STILLMAKER_AREA}; {how}")


# Leakage calibration: Aladdin's functional-unit models, characterized in a commercial 40 nm ('40g') library
# at a 1 ns clock: (leakage mW, area um^2) of a 32-bit register, 32-bit adder and 32-bit multiplier.
ALADDIN = (
    'Y. S. Shao et al., "Aladdin: a pre-RTL, power-performance accelerator simulator", ISCA 2014; '
    "power_func.h FU models 'normalized to a commercial 40g' at 1 ns (REG/ADD/MUL _1ns leakage_power, area)"
)
ALADDIN_40NM_LEAKAGE: dict[str, tuple[float, float]] = {
    "reg32": (7.395312e-05, 5.981433),
    "add32": (2.249908e-03, 277.9792),
    "mul32": (7.786052e-02, 6351.338),
}


def _leakage_density(energy_scale: Sourced, area_scale: Sourced) -> Sourced:
    """Leakage W/mm^2: the Aladdin 40 nm datapath density, kept a constant fraction of dynamic power density.

    Dynamic power density at iso-frequency and iso-activity scales with energy/area, so the node value is
    the calibration density times ``energy_scale / area_scale``.
    """
    leak_mw = sum(mw for mw, _ in ALADDIN_40NM_LEAKAGE.values())
    area_um2 = sum(um2 for _, um2 in ALADDIN_40NM_LEAKAGE.values())
    base = leak_mw * 1e-3 / (area_um2 * 1e-6)
    factor = energy_scale.value / area_scale.value
    how = (
        f"sum of leakage / sum of area of REG+ADD+MUL = {leak_mw:.5f} mW / {area_um2:.1f} um^2 = {base:.5f} W/mm^2 "
        "(40 nm used for the 45 nm generation); assumed a constant fraction of dynamic power density, so scaled by "
        f"energy_scale/area_scale = {energy_scale.value:.4f}/{area_scale.value:.4f} = {factor:.4f}"
    )
    return Sourced(base * factor, "W/mm^2", f"{ALADDIN}; {how}")


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------
class UnknownTechError(KeyError):
    """A technology name that is not in the catalog; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownDramError(KeyError):
    """A DRAM kind that is not in the catalog; the message lists the known kinds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------------------------------
# The node
# --------------------------------------------------------------------------------------------------
INT_MAX_BITS = 16
FP_FORMATS = (16, 32)


def _power_law(bits: float, lo_bits: float, lo: float, hi_bits: float, hi: float) -> float:
    """Power law through two anchors (lo_bits, lo) and (hi_bits, hi), evaluated at ``bits``."""
    exponent = math.log(hi / lo) / math.log(hi_bits / lo_bits)
    return lo * (bits / lo_bits) ** exponent


@dataclass(frozen=True)
class TechNode:
    """One ASIC process node. Every field is a ``Sourced`` number; methods turn them into costs.

    Operand width convention (``bits``): 1..16 means an integer datapath of that width (int4/int8/int16);
    32 means IEEE fp32. fp16 is selected with ``number_format="fp"`` (``bits=16``). A MAC accumulates
    integers in ``2*bits + 16`` bits (8-bit operands -> 32-bit accumulator, as in TPU v1) and floats in fp32.
    """

    name: str
    node_nm: int
    vdd_v: Sourced
    energy_scale: Sourced
    area_scale: Sourced
    int8_add_pj: Sourced
    int32_add_pj: Sourced
    int8_mult_pj: Sourced
    int32_mult_pj: Sourced
    fp16_add_pj: Sourced
    fp16_mult_pj: Sourced
    fp32_add_pj: Sourced
    fp32_mult_pj: Sourced
    sram_8kib_pj_per_64b: Sourced
    sram_32kib_pj_per_64b: Sourced
    sram_1mib_pj_per_64b: Sourced
    int8_add_area_um2: Sourced
    int32_add_area_um2: Sourced
    int8_mult_area_um2: Sourced
    int32_mult_area_um2: Sourced
    fp16_add_area_um2: Sourced
    fp16_mult_area_um2: Sourced
    fp32_add_area_um2: Sourced
    fp32_mult_area_um2: Sourced
    dff_area_um2_per_bit: Sourced
    mux2_area_um2: Sourced
    sram_bitcell_um2: Sourced
    sram_array_efficiency: Sourced
    sram_access_fixed_share: Sourced
    leakage_w_per_mm2: Sourced

    # ---- bookkeeping -------------------------------------------------------------------------------
    def sourced_fields(self) -> dict[str, Sourced]:
        """Field name -> Sourced value, for every outside number this node carries."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Sourced)}

    def sources(self) -> dict[str, str]:
        """Field name -> citation."""
        return {name: s.source for name, s in self.sourced_fields().items()}

    # ---- operand formats -----------------------------------------------------------------------------
    @staticmethod
    def _format(bits: int, number_format: str) -> str:
        """Resolve (bits, number_format) to 'int' or 'fp'; raise ValueError naming what is allowed."""
        if isinstance(bits, bool) or not isinstance(bits, int):
            raise ValueError(f"bits must be an int, got {bits!r}")
        if number_format == "auto":
            number_format = "int" if 1 <= bits <= INT_MAX_BITS else "fp"
        if number_format == "int" and 1 <= bits <= INT_MAX_BITS:
            return "int"
        if number_format == "fp" and bits in FP_FORMATS:
            return "fp"
        raise ValueError(
            f"bits={bits} with number_format={number_format!r} is not supported; allowed: integer widths "
            f"1..{INT_MAX_BITS} (number_format 'int' or 'auto'), floating point bits 16 or 32 "
            "(number_format 'fp'; 'auto' picks fp for 32)"
        )

    @staticmethod
    def accumulator_bits(bits: int) -> int:
        """Integer accumulator width of a MAC with ``bits``-wide operands (8 -> 32 as in TPU v1)."""
        return 2 * bits + 16

    # ---- integer building blocks (power laws through Horowitz's 8b and 32b anchors) ------------------
    def _int_add_pj(self, bits: int) -> float:
        return _power_law(bits, 8, self.int8_add_pj.value, 32, self.int32_add_pj.value)

    def _int_mult_pj(self, bits: int) -> float:
        return _power_law(bits, 8, self.int8_mult_pj.value, 32, self.int32_mult_pj.value)

    def _int_add_um2(self, bits: int) -> float:
        return _power_law(bits, 8, self.int8_add_area_um2.value, 32, self.int32_add_area_um2.value)

    def _int_mult_um2(self, bits: int) -> float:
        return _power_law(bits, 8, self.int8_mult_area_um2.value, 32, self.int32_mult_area_um2.value)

    # ---- energies ------------------------------------------------------------------------------------
    def mac_energy_pj(self, bits: int, number_format: str = "auto") -> float:
        """One multiply-accumulate: a ``bits`` multiply plus an add at the accumulator width.

        Integer widths between Horowitz's 8b and 32b anchors follow the power law through them
        (multiply ~ bits^1.98, add ~ bits^0.87). fp16 MACs accumulate in fp32 (mixed precision).
        """
        if self._format(bits, number_format) == "int":
            return self._int_mult_pj(bits) + self._int_add_pj(self.accumulator_bits(bits))
        mult = self.fp16_mult_pj if bits == 16 else self.fp32_mult_pj
        return mult.value + self.fp32_add_pj.value

    def alu_energy_pj(self, bits: int, number_format: str = "auto") -> float:
        """One vector ALU op (add or compare, same datapath) at ``bits`` width."""
        if self._format(bits, number_format) == "int":
            return self._int_add_pj(bits)
        return (self.fp16_add_pj if bits == 16 else self.fp32_add_pj).value

    def sram_energy_pj_per_byte(
        self, capacity_kib: float | np.ndarray, *, width_bits: float = 64, banks: int = 1
    ) -> float | np.ndarray:
        """Energy per byte read or written in an SRAM of ``capacity_kib`` (a float, or an array of them:
        the surrogates price a hundred thousand designs at once), accessed ``width_bits`` at a time, split
        into ``banks`` equal banks of which one access activates one.

        Horowitz's three 64-bit-access anchors (8 KB, 32 KB, 1 MB) are interpolated as a power law in the
        bank's capacity (log-log linear), which reproduces them exactly; outside [8 KiB, 1 MiB] the CACTI-like
        sqrt(capacity) law (bit/word-line length grows with the side of the array) extrapolates. A
        ``width_bits`` access pays the fixed share of a 64-bit access (``SRAM_ACCESS_FIXED_SHARE``) plus the
        per-bit rest for its bits, so narrow accesses cost more per byte and wide ones less.

        Banking prices the bank alone, not the routing to it: CACTI charges an H-tree across the whole macro,
        so heavily banked macros cost more than this (at 65 nm CACTI 7, run through AccelForge's hwcomponents
        1.0.467 in 2026, gives 90.6 pJ per 64-bit read of a 128 KiB, 32-bank buffer; this method gives 13.5 pJ
        for its 4 KiB bank and 72 pJ for the unbanked 128 KiB).
        """
        capacity = np.asarray(capacity_kib, dtype=float)
        if not np.all(capacity > 0):
            bad = capacity if capacity.ndim == 0 else capacity[~(capacity > 0)][0]
            raise ValueError(f"capacity_kib must be > 0, got {bad.item()!r}")
        if not width_bits >= 1:
            raise ValueError(f"width_bits must be >= 1, got {width_bits!r}")
        if isinstance(banks, bool) or not isinstance(banks, int) or banks < 1:
            raise ValueError(f"banks must be an int >= 1, got {banks!r}")
        bank = capacity / banks
        (c0, e0), (c1, e1), (c2, e2) = (
            (8.0, self.sram_8kib_pj_per_64b.value),
            (32.0, self.sram_32kib_pj_per_64b.value),
            (1024.0, self.sram_1mib_pj_per_64b.value),
        )
        per_64b = np.where(
            bank <= c0,
            e0 * np.sqrt(bank / c0),
            np.where(
                bank >= c2,
                e2 * np.sqrt(bank / c2),
                np.where(bank <= c1, _power_law(bank, c0, e0, c1, e1), _power_law(bank, c1, e1, c2, e2)),
            ),
        )
        per_byte = per_64b / 8.0
        if width_bits != 64:
            fixed = self.sram_access_fixed_share.value
            per_byte = per_byte * (fixed * 64.0 / width_bits + (1.0 - fixed))
        return float(per_byte) if per_byte.ndim == 0 else per_byte

    def dram_energy_pj(self, nbytes: float, kind: str = "lpddr4") -> float:
        """Energy to move ``nbytes`` to or from DRAM of ``kind`` (see ``DRAM``); independent of the node."""
        return dram_energy_pj(nbytes, kind)

    # ---- areas ---------------------------------------------------------------------------------------
    def sram_area_mm2(self, capacity_kib, *, width_bits=64, banks=1):  # noqa: ANN001, ANN201 (or numpy columns)
        """Area of ``capacity_kib`` of SRAM built as ``banks`` equal macros, each accessed ``width_bits`` at a time.

        Each macro: its bitcells over the on-die buffer efficiency measured on silicon (``SRAM_ARRAY_EFFICIENCY``,
        a large buffer), times how much less dense CACTI 7 finds a macro of that capacity and width than the
        large-macro limit (``sram_macro_penalty``): a 1 KiB scratchpad pays its decoders and sense amplifiers
        over few bits. Broadcasts over numpy columns of capacities.
        """
        capacity = np.asarray(capacity_kib, dtype=float)
        if not np.all(capacity >= 0):  # numbers or numpy columns of designs
            raise ValueError(f"capacity_kib must be >= 0, got {capacity_kib!r}")
        if isinstance(banks, bool) or not isinstance(banks, int) or banks < 1:
            raise ValueError(f"banks must be an int >= 1, got {banks!r}")
        area = capacity * self.sram_mm2_per_kib() * sram_macro_penalty(capacity * 1024 / banks, width_bits)
        return float(area) if area.ndim == 0 else area

    def sram_mm2_per_kib(self) -> float:
        """Area of one KiB of a large on-die SRAM buffer (the density small macros are penalised against)."""
        return 1024 * 8 * self.sram_bitcell_um2.value / self.sram_array_efficiency.value * 1e-6

    def register_file_area_mm2(self, words, bits):  # noqa: ANN001, ANN201 (or numpy columns)
        """Cell area of ``words`` x ``bits`` of storage built from flip-flops, with a ``words``:1 read multiplexer
        per bit (a tree of 2:1 cells): what a PE's registers and small register files take before placement."""
        words = np.asarray(words, dtype=float)
        cells = words * bits * self.dff_area_um2_per_bit.value + (words - 1) * bits * self.mux2_area_um2.value
        return cells * 1e-6

    def local_storage_area_mm2(self, words, bits):  # noqa: ANN001, ANN201 (or numpy columns)
        """Placed area of a PE-local store of ``words`` x ``bits``: flip-flops (placed like the rest of the PE's
        logic) or an SRAM macro read ``bits`` wide, whichever is smaller, as a designer would choose (Eyeriss
        keeps its 12- and 24-word scratchpads in registers and its 224-word one in SRAM)."""
        flops = self.register_file_area_mm2(words, bits) / LOGIC_UTILIZATION.value
        macro = self.sram_area_mm2(np.asarray(words, dtype=float) * bits / 8 / 1024, width_bits=bits)
        out = np.minimum(flops, macro)
        return float(out) if np.ndim(out) == 0 else out

    def pe_area_mm2(self, bits: int, number_format: str = "auto") -> float:
        """One systolic PE: multiplier, accumulator adder and pipeline registers.

        Registers: the two operands passed to the neighbours (``bits`` each) and the partial sum
        (accumulator width), counted as D flip-flops.
        """
        dff = self.dff_area_um2_per_bit.value
        if self._format(bits, number_format) == "int":
            acc = self.accumulator_bits(bits)
            um2 = self._int_mult_um2(bits) + self._int_add_um2(acc) + (2 * bits + acc) * dff
        else:
            mult = self.fp16_mult_area_um2 if bits == 16 else self.fp32_mult_area_um2
            um2 = mult.value + self.fp32_add_area_um2.value + (2 * bits + 32) * dff
        return um2 * 1e-6

    def alu_area_mm2(self, bits: int, number_format: str = "auto") -> float:
        """One vector ALU lane: an adder/comparator plus its ``bits``-wide output register."""
        if self._format(bits, number_format) == "int":
            um2 = self._int_add_um2(bits)
        else:
            um2 = (self.fp16_add_area_um2 if bits == 16 else self.fp32_add_area_um2).value
        return (um2 + bits * self.dff_area_um2_per_bit.value) * 1e-6

    def leakage_w(self, area_mm2: float) -> float:
        """Static power of ``area_mm2`` of logic + SRAM at nominal supply."""
        if not np.all(np.asarray(area_mm2) >= 0):  # numbers or numpy columns of designs
            raise ValueError(f"area_mm2 must be >= 0, got {area_mm2!r}")
        return area_mm2 * self.leakage_w_per_mm2.value


def _efficiency_at(capacity_bytes, rows: tuple) -> np.ndarray:  # noqa: ANN001 (a float or numpy column)
    """CACTI 7's bitcell share of a macro of ``capacity_bytes`` at one width: log-log interpolation between its
    runs; below the smallest run the first segment's slope continues, above the largest the share stays put."""
    sizes = np.log([float(size) for size, _ in rows])
    shares = np.log([s.value for _, s in rows])
    x = np.log(np.maximum(np.asarray(capacity_bytes, dtype=float), 1e-30))
    slope = (shares[1] - shares[0]) / (sizes[1] - sizes[0])
    inside = np.interp(x, sizes, shares)
    return np.exp(np.where(x < sizes[0], shares[0] + slope * (x - sizes[0]), inside))


def sram_macro_penalty(capacity_bytes, width_bits=64):  # noqa: ANN001, ANN201 (floats or numpy columns)
    """How many times the area per bit of a macro of ``capacity_bytes`` read ``width_bits`` wide exceeds that of
    the largest 64-bit macro CACTI 7 was run for (``SRAM_MACRO_EFFICIENCY``): 1 for large buffers, about 2.2 for
    256 B. Widths between the tabulated ones interpolate in log(width); outside them the nearest width is used."""
    widths = sorted(SRAM_MACRO_EFFICIENCY)
    reference = SRAM_MACRO_EFFICIENCY[widths[0]][-1][1].value
    lo_w, hi_w = widths[0], widths[-1]
    w = np.clip(np.asarray(width_bits, dtype=float), lo_w, hi_w)
    lo = _efficiency_at(capacity_bytes, SRAM_MACRO_EFFICIENCY[lo_w])
    hi = _efficiency_at(capacity_bytes, SRAM_MACRO_EFFICIENCY[hi_w])
    t = np.log(w / lo_w) / np.log(hi_w / lo_w)
    out = reference / np.exp(np.log(lo) + t * (np.log(hi) - np.log(lo)))
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------------------------------
# Building the nodes
# --------------------------------------------------------------------------------------------------
ENERGY_FIELDS = tuple(k for k in HOROWITZ_45NM if k.endswith("_pj") or "_pj_" in k)
AREA_FIELDS = tuple(k for k in HOROWITZ_45NM if k.endswith("_um2"))


def _scaled(anchor: Sourced, scale: Sourced, kind: str, node_nm: int) -> Sourced:
    """A 45 nm anchor carried to ``node_nm`` with a Stillmaker & Baas ``kind`` ('energy'/'area') factor."""
    if node_nm == 45:
        return anchor
    return anchor.derived(scale.value, f"x{scale.value:.4f} Stillmaker&Baas {kind} scaling 45->{node_nm} nm")


def _make_node(node_nm: int) -> TechNode:
    vdd = VDD[node_nm]
    energy_scale = _energy_scale(node_nm, vdd.value)
    area_scale = _area_scale(node_nm)
    values = {key: _scaled(HOROWITZ_45NM[key], energy_scale, "energy", node_nm) for key in ENERGY_FIELDS}
    values.update({key: _scaled(HOROWITZ_45NM[key], area_scale, "area", node_nm) for key in AREA_FIELDS})
    dff = _scaled(DFF_AREA_45NM, area_scale, "area", node_nm)
    mux2 = _scaled(MUX2_AREA_45NM, area_scale, "area", node_nm)
    return TechNode(
        name=f"asic-{node_nm}nm",
        node_nm=node_nm,
        vdd_v=vdd,
        energy_scale=energy_scale,
        area_scale=area_scale,
        dff_area_um2_per_bit=dff,
        mux2_area_um2=mux2,
        sram_bitcell_um2=SRAM_BITCELL_UM2[node_nm],
        sram_array_efficiency=SRAM_ARRAY_EFFICIENCY,
        sram_access_fixed_share=SRAM_ACCESS_FIXED_SHARE,
        leakage_w_per_mm2=_leakage_density(energy_scale, area_scale),
        **values,
    )


TECH: dict[str, TechNode] = {n.name: n for n in (_make_node(nm) for nm in (65, 45, 28, 22, 16, 7))}


def tech_names() -> list[str]:
    """Canonical technology names, largest node first."""
    return list(TECH)


def _normalize(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-").replace(" ", "")
    if re.fullmatch(r"\d+", key):
        key += "nm"
    if not key.startswith("asic-"):
        key = "asic-" + key
    return key


def get_tech(name: str) -> TechNode:
    """Look up a node by canonical name (``asic-28nm``) or alias (``28nm``, ``28``, ``ASIC_28NM``)."""
    key = _normalize(name)
    if key not in TECH:
        raise UnknownTechError(
            f"unknown technology {name!r}; known: {', '.join(tech_names())} (a bare node such as '28nm' also works)"
        )
    return TECH[key]


def dram_energy_pj(nbytes: float, kind: str = "lpddr4") -> float:
    """Energy in pJ to move ``nbytes`` across a DRAM interface of ``kind``."""
    key = str(kind).strip().lower()
    if key not in DRAM:
        raise UnknownDramError(f"unknown DRAM kind {kind!r}; known: {', '.join(DRAM)}")
    if not np.all(np.asarray(nbytes) >= 0):  # numbers or numpy columns of designs
        raise ValueError(f"nbytes must be >= 0, got {nbytes!r}")
    return nbytes * 8 * DRAM[key].value


# --------------------------------------------------------------------------------------------------
# SOURCES.md
# --------------------------------------------------------------------------------------------------
def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_sources_markdown() -> str:
    """The human-readable table of every catalog number and its source (what SOURCES.md holds)."""
    lines = [
        "# Sources of the technology catalog",
        "",
        "Generated by `python -m hwmodels.catalogs.tech` from `hwmodels/catalogs/tech.py`; do not edit by hand.",
        "Every number a hardware model uses comes from one of these rows.",
        "",
    ]
    for node in TECH.values():
        lines += [f"## {node.name}", "", "| field | value | unit | source |", "|---|---|---|---|"]
        for field_name, s in node.sourced_fields().items():
            lines.append(f"| {field_name} | {s.value:.6g} | {_md_cell(s.unit)} | {_md_cell(s.source)} |")
        lines.append("")
    lines += ["## dram", "", "| field | value | unit | source |", "|---|---|---|---|"]
    for kind, s in DRAM.items():
        lines.append(f"| {kind} | {s.value:.6g} | {_md_cell(s.unit)} | {_md_cell(s.source)} |")
    lines += ["", "## sram_macro_efficiency", "", "| field | value | unit | source |", "|---|---|---|---|"]
    for width, rows in SRAM_MACRO_EFFICIENCY.items():
        for size, s in rows:
            lines.append(f"| {size}B_{width}b | {s.value:.6g} | {_md_cell(s.unit)} | {_md_cell(s.source)} |")
    lines += ["", "## floorplan", "", "| field | value | unit | source |", "|---|---|---|---|"]
    for block, s in {**DIE_OVERHEAD, "logic_utilization": LOGIC_UTILIZATION}.items():
        lines.append(f"| {block} | {s.value:.6g} | {_md_cell(s.unit)} | {_md_cell(s.source)} |")
    lines.append("")
    return "\n".join(lines)


def parse_sources_markdown(text: str) -> dict[str, dict[str, tuple[float, str, str]]]:
    """Section -> field -> (value, unit, source), read back from SOURCES.md text."""
    tables: dict[str, dict[str, tuple[float, str, str]]] = {}
    section: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            tables[section] = {}
            continue
        if section is None or not line.startswith("| ") or line.startswith("| field ") or line.startswith("|---"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4:
            tables[section][cells[0]] = (float(cells[1]), cells[2], cells[3])
    return tables


def write_sources_markdown(path: Path = SOURCES_MD) -> Path:
    return atomic_write_text(path, render_sources_markdown())


def _summary(nodes: Mapping[str, TechNode]) -> str:
    rows = []
    for n in nodes.values():
        rows.append(
            f"{n.name}: MAC int8 {n.mac_energy_pj(8):.4f} pJ, fp32 {n.mac_energy_pj(32):.4f} pJ, "
            f"SRAM 64KiB {n.sram_energy_pj_per_byte(64):.3f} pJ/B, PE int8 {n.pe_area_mm2(8) * 1e6:.1f} um^2, "
            f"1 MiB SRAM {n.sram_area_mm2(1024):.3f} mm^2"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(f"wrote {write_sources_markdown()}")
    print(_summary(TECH))
