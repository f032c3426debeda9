"""The RDU catalog: SN40L-like and Plasticine-like presets, the SSM-RDU extension and published ratios.

Why one module: the RDU template, mapper and model read every outside number from here, each a ``Sourced``
value naming the paper it came from. Where a paper does not publish a number the model needs (lanes x
stages of an SN40L PCU, its clock, HBM/DDR bandwidth, the section switch time) the value is an
``UNVERIFIED`` assumption and its source string says how it was chosen, so a reader can weigh it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from hwmodels.catalogs.tech import UNVERIFIED, Sourced

SN40L_PAPER = (
    'R. Prabhakar et al., "SambaNova SN40L: Scaling the AI Memory Wall with Dataflow and Composition of Experts", '
    "MICRO 2024 (arXiv 2405.07518)"
)
PLASTICINE_PAPER = 'R. Prabhakar et al., "Plasticine: A Reconfigurable Architecture For Parallel Patterns", ISCA 2017'
SSM_RDU_PAPER = (
    'S. Ko and K. Olukotun, "SSM-RDU: A Reconfigurable Dataflow Unit for Long-Sequence State-Space Models", '
    "arXiv 2503.22937 (2025)"
)


@dataclass(frozen=True)
class RduPreset:
    """One reference RDU, every number with its source. ``native_precision`` runs at the full PCU rate."""

    name: str
    display: str
    pcus: Sourced
    pcu_lanes: Sourced
    pcu_stages: Sourced
    pmus: Sourced
    pmu_kib: Sourced
    clock_mhz: Sourced
    noc_gbps: Sourced
    hbm_gb: Sourced
    hbm_gbps: Sourced
    ddr_gb: Sourced
    ddr_gbps: Sourced
    reconfig_us: Sourced
    published_peak_tflops: Sourced
    published_sram_mb: Sourced
    native_precision: str
    precisions: tuple[str, ...]
    tech: str
    hbm_kind: str
    ddr_kind: str
    sockets: Sourced = Sourced(1, "sockets", "one chip")
    link_gbps: Sourced = Sourced(
        100.0,
        "GB/s",
        f"{UNVERIFIED}: socket-to-socket link bandwidth per socket per direction assumed 100 GB/s (no published figure "
        "taken); used only with sockets > 1",
    )
    link_latency_us: Sourced = Sourced(
        2.0, "us", f"{UNVERIFIED}: per-hop socket-to-socket latency assumed 2 us (no published figure taken)"
    )

    def sourced_fields(self) -> dict[str, Sourced]:
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Sourced)}


SN40L = RduPreset(
    name="sn40l",
    display="SN40L-like RDU",
    pcus=Sourced(1040, "PCUs", f"{SN40L_PAPER}: 1,040 pattern compute units"),
    pcu_lanes=Sourced(
        32,
        "lanes",
        f"{UNVERIFIED}: SIMD lanes per PCU not given in {SN40L_PAPER}; 32 lanes x 6 stages at 1.6 GHz over 1,040 "
        "PCUs reproduces its 638 BF16 TFLOP/s peak (1040*32*6*2*1.6e9 = 639 TFLOP/s)",
    ),
    pcu_stages=Sourced(
        6, "stages", f"{UNVERIFIED}: pipeline stages per PCU, 6 as in Plasticine's PCU ({PLASTICINE_PAPER})"
    ),
    pmus=Sourced(1040, "PMUs", f"{SN40L_PAPER}: 1,040 pattern memory units"),
    pmu_kib=Sourced(
        520 * 1e6 / 1040 / 1024,
        "KiB",
        f"{SN40L_PAPER}: 520 MB on-chip SRAM over 1,040 PMUs = 500 kB (488.3 KiB) per PMU",
    ),
    clock_mhz=Sourced(
        1600, "MHz", f"{UNVERIFIED}: clock chosen so that 1,040 PCUs x 32 x 6 reach the published 638 TFLOP/s"
    ),
    noc_gbps=Sourced(
        150_000 * 1040 / 640,
        "GB/s",
        f"{UNVERIFIED}: SN10's published 150 TB/s on-chip memory bandwidth for 640 PMUs (SambaNova SN10 / SN30 "
        "product material) scaled to 1,040 PMUs = 243.75 TB/s",
    ),
    hbm_gb=Sourced(64, "GB", f"{SN40L_PAPER}: 64 GB of co-packaged HBM"),
    hbm_gbps=Sourced(
        2000,
        "GB/s",
        f"{UNVERIFIED}: HBM bandwidth of the SN40L is not in the numbers we took from {SN40L_PAPER}; ~2 TB/s "
        "assumed for its 64 GB HBM3 (the order of an H100 SXM's 3.35 TB/s over 80 GB, scaled by capacity). Bound: "
        "JEDEC JESD238 HBM3 (2022) runs 6.4 Gb/s on a 1,024-bit stack interface = 819 GB/s per stack, so 64 GB as "
        "four 16 GB stacks peaks at 3.28 TB/s; 2 TB/s is 61 % of that",
    ),
    ddr_gb=Sourced(1536, "GB", f"{SN40L_PAPER}: up to 1.5 TB of DDR"),
    ddr_gbps=Sourced(
        200,
        "GB/s",
        f"{UNVERIFIED}: DDR bandwidth assumed 200 GB/s (a few DDR5 channels); not among the numbers we took from "
        f"{SN40L_PAPER}. Cross-check: JEDEC JESD79-5 DDR5 (2020) at 4,800 MT/s on a 64-bit channel moves 38.4 GB/s, "
        "so 200 GB/s is 5.2 such channels",
    ),
    reconfig_us=Sourced(
        10.0,
        "us",
        f"{UNVERIFIED}: section switch (program load + pipeline drain) assumed 10 us; {SN40L_PAPER} shows that "
        "fusion removes these switches but we did not take a time per switch from it",
    ),
    published_peak_tflops=Sourced(638, "TFLOP/s", f"{SN40L_PAPER}: 638 BF16 TFLOP/s"),
    published_sram_mb=Sourced(520, "MB", f"{SN40L_PAPER}: 520 MB on-chip SRAM"),
    native_precision="bf16",
    precisions=("bf16", "fp16", "fp32", "int8"),
    tech="asic-7nm",  # TSMC 5 nm in the paper; 7 nm is the closest node of the technology catalog
    hbm_kind="hbm3",
    ddr_kind="ddr4",  # DDR5 in the paper; the catalog's DDR4 energy is the nearest entry
)

PLASTICINE = RduPreset(
    name="plasticine",
    display="Plasticine-like RDU",
    pcus=Sourced(64, "PCUs", f"{PLASTICINE_PAPER}: 64 PCUs (8x8 checkerboard with 64 PMUs)"),
    pcu_lanes=Sourced(16, "lanes", f"{PLASTICINE_PAPER}: 16 SIMD lanes per PCU"),
    pcu_stages=Sourced(6, "stages", f"{PLASTICINE_PAPER}: 6 pipeline stages per PCU"),
    pmus=Sourced(64, "PMUs", f"{PLASTICINE_PAPER}: 64 PMUs"),
    pmu_kib=Sourced(256, "KiB", f"{PLASTICINE_PAPER}: 16 MB on chip over 64 PMUs = 256 KiB each"),
    clock_mhz=Sourced(1000, "MHz", f"{PLASTICINE_PAPER}: 1 GHz clock"),
    noc_gbps=Sourced(
        64 * 16 * 4 * 1.0,
        "GB/s",
        f"{UNVERIFIED}: one 16-lane x 32-bit vector per PMU per cycle at 1 GHz ({PLASTICINE_PAPER} PMU datapath "
        "width) = 4,096 GB/s",
    ),
    hbm_gb=Sourced(0.0, "GB", f"{PLASTICINE_PAPER}: evaluated with DDR3 DRAM only, no HBM (a 0 GB HBM tier is unused)"),
    hbm_gbps=Sourced(1.0, "GB/s", "placeholder bandwidth of the empty HBM tier: nothing can be placed in 0 GB"),
    ddr_gb=Sourced(16, "GB", f"{UNVERIFIED}: DRAM capacity assumed 16 GB; {PLASTICINE_PAPER} uses DDR3 channels"),
    ddr_gbps=Sourced(
        51.2, "GB/s", f"{PLASTICINE_PAPER}: 4 DDR3-1600 channels = 51.2 GB/s peak (as used in its evaluation)"
    ),
    reconfig_us=Sourced(
        10.0, "us", f"{UNVERIFIED}: section switch (configuration load) assumed 10 us as for the SN40L preset"
    ),
    published_peak_tflops=Sourced(12.3, "TFLOP/s", f"{PLASTICINE_PAPER}: 12.3 single-precision TFLOP/s"),
    published_sram_mb=Sourced(16, "MB", f"{PLASTICINE_PAPER}: 16 MB of on-chip memory"),
    native_precision="fp32",
    precisions=("fp32", "bf16", "fp16", "int8", "int16", "int32"),
    tech="asic-28nm",
    hbm_kind="hbm2",
    ddr_kind="ddr4",  # DDR3 in the paper; the catalog's nearest DRAM entry
)

SN40L_NODE = replace(
    SN40L,
    name="sn40l_node",
    display="SN40L-like 8-socket node",
    sockets=Sourced(8, "sockets", f"{SN40L_PAPER}: the SN40L Node has 8 RDU sockets"),
    ddr_gb=Sourced(
        1536,
        "GB per socket",
        f"{SN40L_PAPER}: up to 1.5 TB of DDR per socket (12 TB over the 8-socket node)",
    ),
)

PRESETS: dict[str, RduPreset] = {p.name: p for p in (SN40L, SN40L_NODE, PLASTICINE)}

# --------------------------------------------------------------------------------------------------
# Area: Plasticine's per-tile breakdown at 28 nm, carried to other nodes with the technology catalog
# --------------------------------------------------------------------------------------------------
PLASTICINE_TOTAL_AREA_MM2 = Sourced(112.77, "mm^2", f"{PLASTICINE_PAPER}: total area 112.77 mm^2 (28 nm)")
PLASTICINE_PCU_AREA_MM2 = Sourced(
    0.849,
    "mm^2",
    f"{UNVERIFIED}: {PLASTICINE_PAPER} area breakdown table, PCU (16 lanes x 6 stages, FP32) 0.849 mm^2 at 28 nm "
    "(as recalled; with the PMU below it leaves 24 mm^2 of the 112.77 mm^2 total for switches, address "
    "generators and memory controllers, which is consistent)",
)
PLASTICINE_PMU_AREA_MM2 = Sourced(
    0.532,
    "mm^2",
    f"{UNVERIFIED}: {PLASTICINE_PAPER} area breakdown table, PMU (256 KiB scratchpad) 0.532 mm^2 at 28 nm "
    "(as recalled; 256 KiB of 28 nm SRAM from the technology catalog is 0.44 mm^2 of it)",
)
PLASTICINE_TILES = 64
PLASTICINE_PCU_LANES_X_STAGES = 16 * 6
PLASTICINE_PMU_KIB = 256.0
PLASTICINE_NODE = "asic-28nm"

# --------------------------------------------------------------------------------------------------
# SSM-RDU extension and published ratios the benchmark compares against
# --------------------------------------------------------------------------------------------------
SSM_EXTENSION_AREA_FRACTION = Sourced(
    0.01,
    "of PCU+PMU area",
    f"{SSM_RDU_PAPER}: the FFT / scan interconnect extensions cost less than 1% area and power (1% taken as the "
    "upper bound)",
)

PUBLISHED_RATIOS: dict[str, Sourced] = {
    "sn40l_fusion_speedup_low": Sourced(2.0, "x", f"{SN40L_PAPER}: operator fusion gives 2x to 13x over unfused"),
    "sn40l_fusion_speedup_high": Sourced(13.0, "x", f"{SN40L_PAPER}: operator fusion gives 2x to 13x over unfused"),
    "sn40l_coe_vs_dgx_h100": Sourced(
        3.7, "x", f"{SN40L_PAPER}: 3.7x over a DGX H100 for Composition-of-Experts inference (8 sockets vs 8 GPUs)"
    ),
    "sn40l_coe_vs_dgx_a100": Sourced(
        6.6,
        "x",
        f"{UNVERIFIED}: {SN40L_PAPER} abstract, 6.6x over a DGX A100 for CoE inference (as recalled; the 2x-13x, "
        "19x and 15x-31x figures of the same abstract were traced to a copy of it, this one was not)",
    ),
    "sn40l_footprint_reduction": Sourced(
        19.0, "x", f"{SN40L_PAPER} abstract: the 8-socket node reduces machine footprint by up to 19x for CoE"
    ),
    "sn40l_switch_speedup_low": Sourced(
        15.0, "x", f"{SN40L_PAPER} abstract: model switching 15x to 31x faster (vs DGX A100/H100)"
    ),
    "sn40l_switch_speedup_high": Sourced(
        31.0, "x", f"{SN40L_PAPER} abstract: model switching 15x to 31x faster (vs DGX A100/H100)"
    ),
    "ssm_rdu_hyena_vs_gpu": Sourced(5.95, "x", f"{SSM_RDU_PAPER}: Hyena 5.95x over the NVIDIA A100 GPU"),
    "ssm_rdu_mamba_vs_gpu": Sourced(2.12, "x", f"{SSM_RDU_PAPER}: Mamba 2.12x over the NVIDIA A100 GPU"),
    "ssm_rdu_hyena_vs_rdu": Sourced(1.95, "x", f"{SSM_RDU_PAPER}: Hyena 1.95x over the baseline RDU"),
    "ssm_rdu_mamba_vs_rdu": Sourced(1.75, "x", f"{SSM_RDU_PAPER}: Mamba 1.75x over the baseline RDU"),
}

# Energy of a byte crossing a socket-to-socket link (multi-socket nodes: all-reduces, all-gathers, pipeline hops).
LINK_ENERGY_PJ_PER_BIT = Sourced(
    5.0,
    "pJ/bit",
    f"{UNVERIFIED}: board-level chip-to-chip SerDes assumed 5 pJ/bit end to end (no SN40L figure published; "
    "on-package links such as UCIe are near 0.5 pJ/bit, long-reach board SerDes several pJ/bit)",
)

# The GPU-node side of the CoE comparison (benchmarks/rdu_sn40l_compare.py): experts beyond HBM live in host DRAM
# and are copied over each GPU's host link.
DGX_HOST_LINK_GBPS: dict[str, Sourced] = {
    "dgx_h100": Sourced(
        64.0, "GB/s per GPU", f"{UNVERIFIED}: PCIe Gen5 x16 nominal one-way rate per H100 (host DRAM to HBM)"
    ),
    "dgx_a100": Sourced(
        32.0, "GB/s per GPU", f"{UNVERIFIED}: PCIe Gen4 x16 nominal one-way rate per A100 (host DRAM to HBM)"
    ),
}


def preset(name: str) -> RduPreset:
    """Look up a preset by name; KeyError lists the known ones."""
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise KeyError(f"unknown RDU preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[key]


def preset_names() -> tuple[str, ...]:
    return tuple(PRESETS)
