"""The technology catalog's tables of outside numbers that are not scaled from the 45 nm anchors: the
``Sourced`` type, the references, per-node supply and SRAM bitcell, SRAM organisation shares, DRAM energy
per bit and the die overheads around an accelerator's blocks.

Why a module of its own: ``hwmodels.catalogs.tech`` builds the nodes from these and stays readable; every
name here is re-exported there, so callers import from ``hwmodels.catalogs.tech`` only.
"""

from __future__ import annotations

from dataclasses import dataclass

# Sources starting with UNVERIFIED come from the project's technology brief and could not be traced to a primary
# source yet; SOURCES.md shows the flag so a reader can weigh them.
UNVERIFIED = "UNVERIFIED"


@dataclass(frozen=True)
class Sourced:
    """A number taken from outside, with its unit and a citation saying where it came from and how."""

    value: float
    unit: str
    source: str

    def derived(self, factor: float, how: str, unit: str | None = None) -> Sourced:
        """This value times ``factor``; the citation keeps the original source and appends ``how``."""
        return Sourced(self.value * factor, unit or self.unit, f"{self.source}; {how}")


# --------------------------------------------------------------------------------------------------
# References (short forms used in every ``source`` string)
# --------------------------------------------------------------------------------------------------
HOROWITZ = 'M. Horowitz, "Computing\'s energy problem (and what we can do about it)", ISSCC 2014, pp. 10-14'
HOROWITZ_ENERGY = f"{HOROWITZ}, energy table (Fig. 1.1.9: rough energy costs, 45 nm, 0.9 V)"
HOROWITZ_AREA = (
    "S. Han and W. Dally, 'cost of operations' table pairing Horowitz's ISSCC 2014 energies with areas from "
    "Design Compiler synthesis in TSMC 45 nm (FP units from DesignWare), Stanford CS231n 2017 Lecture 15 "
    "'Efficient Methods and Hardware for Deep Learning'"
)
STILLMAKER = (
    'A. Stillmaker and B. Baas, "Scaling equations for the accurate prediction of CMOS device performance '
    'from 180 nm to 7 nm", Integration, the VLSI Journal 58 (2017) 74-81'
)
STILLMAKER_ENERGY = (
    f"{STILLMAKER}, Table 5 energy polynomials for the HP models (coefficients as transcribed in UCLA NanoCAD "
    "nodeScale.py, 2021; checked against the published erratum example E_HP32(0.9 V) = 0.4571)"
)
STILLMAKER_AREA = (
    f"{STILLMAKER}, area scaling factor table, row 45 nm (as transcribed in UCLA NanoCAD nodeScale.py, 2021)"
)
NANGATE = "NanGate FreePDK45 Open Cell Library (2011), typical corner 1.1 V 25 C, liberty file"
OCONNOR = (
    'M. O\'Connor et al., "Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems", '
    "MICRO 2017, Sec. 2 / Fig. 2 (I/O + row + column energy per bit)"
)


# --------------------------------------------------------------------------------------------------
# Table: per-node facts that are not derived by scaling (supply, SRAM bitcell, leakage)
# --------------------------------------------------------------------------------------------------
VDD: dict[int, Sourced] = {
    65: Sourced(
        1.0,
        "V",
        'Y.-H. Chen et al., "Eyeriss: an energy-efficient reconfigurable accelerator for deep convolutional neural '
        'networks", IEEE JSSC 52(1), 2017: TSMC 65 nm LP core measured at its nominal 1.0 V (200 MHz)',
    ),
    45: Sourced(0.9, "V", f"{HOROWITZ_ENERGY}: all figures quoted at 0.9 V"),
    28: Sourced(0.9, "V", "foundry nominal core supply of TSMC 28HPM (volume production 2012): 0.9 V"),
    22: Sourced(
        0.8,
        "V",
        'C. Auth et al. (Intel), "A 22nm high performance and low-power CMOS technology featuring fully-depleted '
        'tri-gate transistors, self-aligned contacts and high density MIM capacitors", VLSI Technology Symp. 2012: '
        "transistor figures quoted at 0.8 V",
    ),
    16: Sourced(0.8, "V", "foundry nominal core supply of TSMC 16FF+ (volume production 2015): 0.8 V"),
    7: Sourced(
        0.7,
        "V",
        'L. T. Clark et al., "ASAP7: A 7-nm finFET predictive process design kit", Microelectronics '
        "Journal 53 (2016) 105-115: nominal VDD 0.7 V",
    ),
}

SRAM_BITCELL_UM2: dict[int, Sourced] = {
    65: Sourced(
        0.57,
        "um^2",
        'P. Bai et al. (Intel), "A 65nm logic technology featuring 35nm gate lengths, enhanced channel strain, 8 Cu '
        'interconnect layers, low-k ILD and 0.57 um^2 SRAM cell", IEDM 2004',
    ),
    45: Sourced(
        0.346,
        "um^2",
        'K. Mistry et al., "A 45nm logic technology with high-k+metal gate transistors...", IEDM 2007: '
        "0.346 um^2 6T SRAM cell",
    ),
    28: Sourced(
        0.127,
        "um^2",
        'S.-Y. Wu et al. (TSMC), "A highly manufacturable 28nm CMOS low power platform technology with fully '
        'functional 64Mb SRAM...", VLSI Technology Symp. 2009: 64 Mb SRAM with a 0.127 um^2 6T cell',
    ),
    22: Sourced(
        0.092,
        "um^2",
        "C. Auth et al. (Intel), 22 nm tri-gate technology, VLSI Technology Symp. 2012: 0.092 um^2 high-density "
        "6T SRAM cell (of the 0.092 / 0.108 / 0.130 um^2 cells offered)",
    ),
    16: Sourced(
        0.07,
        "um^2",
        'S.-Y. Wu et al. (TSMC), "A 16nm FinFET CMOS technology for mobile SoC and computing applications", '
        "IEDM 2013: 128 Mb SRAM with a 0.07 um^2 high-density 6T cell",
    ),
    7: Sourced(
        0.027,
        "um^2",
        'S.-Y. Wu et al., "A 7nm CMOS platform technology featuring 4th generation FinFET transistors with a '
        '0.027um^2 high density 6-T SRAM cell for mobile SoC applications", IEDM 2016',
    ),
}

SRAM_ACCESS_FIXED_SHARE = Sourced(
    0.25,
    "of a 64-bit access",
    f"{UNVERIFIED}: share of a 64-bit SRAM access that does not scale with the access width (row decoder, word "
    "line drivers, control) in the organisation CACTI models (N. Muralimanohar et al., CACTI 6.0, HP Labs "
    "HPL-2009-85, 2009, Sec. 2: decoder + word line vs bit line + sense amplifier + output energy); the rest "
    "scales with the bits read. An assumption until a CACTI run per width replaces it",
)

# TPU v4i's common memory (CMEM): 128 MiB of SRAM in 112 mm^2 of a 7 nm die (N. P. Jouppi et al., "Ten lessons
# from three generations shaped Google's TPUv4i", ISCA 2021, Fig. 6, as AccelForge 1.0.467's tpu_v4i.yaml cites
# it), against the catalog's 7 nm bitcell (0.027 um^2, IEDM 2016): 2**30 bits x 0.027e-6 mm^2 / 112 mm^2.
CMEM_BITS, CMEM_MM2 = 2**30, 112.0
SRAM_ARRAY_EFFICIENCY = Sourced(
    CMEM_BITS * SRAM_BITCELL_UM2[7].value * 1e-6 / CMEM_MM2,
    "bitcell area / on-die buffer area",
    "the share of an on-die SRAM buffer that is bitcells, periphery, banking and the buffer's wiring included: "
    "TPU v4i's 128 MiB CMEM takes 112 mm^2 at 7 nm (Jouppi et al., ISCA 2021, Fig. 6; the figure AccelForge "
    "1.0.467's tpu_v4i.yaml uses) over the 0.027 um^2 7 nm bitcell (Wu et al., IEDM 2016): 0.259. Cross-check, "
    "not fitted: TPU v1's 24 MiB unified buffer (29 % of a <= 331 mm^2 28 nm die, Jouppi et al., ISCA 2017) over "
    "the 0.127 um^2 28 nm bitcell gives 0.27. One figure for every capacity: CACTI (Muralimanohar et al., HPL-2009-85) "
    "gives small arrays a lower efficiency still, so small buffers remain optimistic",
)


# --------------------------------------------------------------------------------------------------
# Table: DRAM access energy (pJ per bit moved across the interface, activation + I/O)
# --------------------------------------------------------------------------------------------------
DRAM: dict[str, Sourced] = {
    "ddr4": Sourced(
        17.5,
        "pJ/bit",
        f"{UNVERIFIED}: midpoint of the 15-20 pJ/bit range for DDR4 DIMMs (activation + column + off-chip I/O) given "
        "in the dse technology brief; the method to re-derive it is Micron TN-40-07 'Calculating Memory Power for "
        "DDR4 SDRAM'",
    ),
    "lpddr4": Sourced(
        5.0,
        "pJ/bit",
        f"{UNVERIFIED}: midpoint of the 4-6 pJ/bit range for LPDDR4 given in the dse technology brief",
    ),
    "lpddr5": Sourced(
        4.0,
        "pJ/bit",
        f"{UNVERIFIED}: LPDDR4 midpoint (5.0 pJ/bit) x 0.8, taking the low end of the ~20-30% power saving over "
        "LPDDR4X that vendors announced for JEDEC LPDDR5 (JESD209-5, 2019)",
    ),
    "hbm2": Sourced(3.97, "pJ/bit", f"{OCONNOR}: HBM2 3.97 pJ/bit"),
    "hbm3": Sourced(
        3.97,
        "pJ/bit",
        f"HBM2 value of {OCONNOR} reused as an upper bound: no primary HBM3 per-bit figure was found; HBM3 "
        "(JEDEC JESD238, 2022) lowers VDDQ to 0.4 V, which trims only the small I/O share",
    ),
    "gddr6": Sourced(
        7.5,
        "pJ/bit",
        f"{UNVERIFIED}: ~7.5 pJ/bit as given in the dse technology brief; for comparison GDDR5 is 14.0 pJ/bit in "
        f"{OCONNOR}",
    ),
}


# --------------------------------------------------------------------------------------------------
# Table: what surrounds an accelerator's arrays and buffers on its die (per-block overheads)
# --------------------------------------------------------------------------------------------------
TPU_V1_FLOORPLAN = (
    'N. P. Jouppi et al., "In-datacenter performance analysis of a tensor processing unit", ISCA 2017, Fig. 2 '
    "floor plan caption: data buffers 37 %, compute 30 %, I/O 10 %, control 2 % of the die"
)
_TPU_V1_CORE_SHARE = 0.37 + 0.30  # buffers + compute: what the model's PE, SRAM and vector blocks price

# Fractions of the core blocks (PE array + SRAM + vector lanes [+ sparse logic]) that a die adds around them.
DIE_OVERHEAD: dict[str, Sourced] = {
    "control": Sourced(
        0.02 / _TPU_V1_CORE_SHARE,
        "x core blocks",
        f"{TPU_V1_FLOORPLAN}; control 2 % / (37 % + 30 %) = {0.02 / _TPU_V1_CORE_SHARE:.4f}",
    ),
    "io": Sourced(
        0.10 / _TPU_V1_CORE_SHARE,
        "x core blocks",
        f"{TPU_V1_FLOORPLAN}; I/O (DDR3, PCIe, host interface) 10 % / 67 % = {0.10 / _TPU_V1_CORE_SHARE:.4f}",
    ),
    "wiring": Sourced(
        0.21 / _TPU_V1_CORE_SHARE,
        "x core blocks",
        f"{TPU_V1_FLOORPLAN}; the 21 % the caption leaves unlabelled (global routing, clock distribution, white "
        f"space between blocks) / 67 % = {0.21 / _TPU_V1_CORE_SHARE:.4f}",
    ),
}

# TPU v4i's matrix unit: a 128 x 128 array of bf16 MACs takes 14 mm^2 at 7 nm (Jouppi et al., ISCA 2021, Fig. 6, as
# AccelForge 1.0.467's tpu_v4i.yaml cites it): 854 um^2 per PE placed, against the catalog's 7 nm cell area of a
# 16-bit floating-point PE (multiplier, fp32 adder, operand and partial-sum registers: 360.7 um^2).
MXU_PE_UM2 = 14e6 / (128 * 128)
MXU_PE_CELL_UM2 = 360.7
LOGIC_UTILIZATION = Sourced(
    MXU_PE_CELL_UM2 / MXU_PE_UM2,
    "cell area / placed area",
    "cell area of the synthesized arithmetic (Han & Dally 2017 areas, scaled) over the area a placed systolic array "
    "takes per PE, operand wiring, clock tree and control in between: TPU v4i's 128x128 bf16 matrix unit is 14 mm^2 "
    "at 7 nm (Jouppi et al., ISCA 2021, Fig. 6; AccelForge 1.0.467's tpu_v4i.yaml), 854 um^2 a PE, where the "
    "catalog's 7 nm 16-bit float PE counts 360.7 um^2 of cells: 0.42 (the bf16 multiplier is a little smaller "
    "than the fp16 one the catalog prices, so this leans dense). One figure for every node and width",
)


# --------------------------------------------------------------------------------------------------
# Table: SRAM macro area efficiency by capacity and access width (CACTI 7)
# --------------------------------------------------------------------------------------------------
CACTI7 = (
    'R. Balasubramonian, A. B. Kahng, N. Muralimanohar, A. Shafiee and V. Srinivas, "CACTI 7: new tools for '
    'interconnect exploration in innovative off-chip memories", ACM TACO 14(2), 2017; the CACTI 7 sources bundled '
    "in hwcomponents-cacti 1.0.40 (PyPI), built and run on 2026-11-27: cache type ram, 1 read-write port, 1 bank, "
    "itrs-hp cells and periphery, area-optimal organisation (design objective 0:0:0:0:100), 65 nm; the line "
    "'Area efficiency (Memory cell area/Total area)' of its output. At 32 nm the same runs give the same shares "
    "within 0.06 (the share is a property of the organisation, not of the node). "
    "tools/cacti_sram_table.py re-runs these configurations and checks the table"
)


def _cacti_efficiency(capacity_bytes: int, width_bits: int, share: float) -> Sourced:
    return Sourced(
        share,
        "bitcell area / macro area",
        f"{CACTI7}: {capacity_bytes} B accessed {width_bits} bits at a time -> {share:.1%}",
    )


# width_bits -> ((capacity in bytes, efficiency), ...), ascending capacity. The share of a macro that is bitcells
# falls as macros shrink (decoders, sense amplifiers and drivers do not shrink with them) and as the access widens
# (more sense amplifiers and output drivers per bit stored).
SRAM_MACRO_EFFICIENCY: dict[int, tuple[tuple[int, Sourced], ...]] = {
    width: tuple((size, _cacti_efficiency(size, width, share)) for size, share in rows)
    for width, rows in {
        64: (
            (256, 0.42678),
            (1024, 0.67224),
            (4096, 0.73612),
            (16384, 0.78617),
            (65536, 0.85039),
            (262144, 0.89932),
            (1048576, 0.92556),
            (4194304, 0.92670),
        ),
        256: (
            (1024, 0.22912),
            (4096, 0.50256),
            (16384, 0.72006),
            (65536, 0.80999),
            (262144, 0.87694),
            (1048576, 0.90412),
            (4194304, 0.89952),
        ),
    }.items()
}

# A multiplexer cell per bit and per extra word: the read port of a register file built from flip-flops.
MUX2_AREA_45NM = Sourced(1.862, "um^2", f"{NANGATE}: cell MUX2_X1 area")
