"""Published accelerators: what their papers say about area and power, and the dse design that matches each.

Why a catalog: ``benchmarks/silicon_compare.py`` (and its fast test) set the model's area and power against
silicon. The published figures are outside numbers, so each is a ``Sourced`` value naming its paper, and each
says what it includes (core or die, busy or TDP, with or without DRAM and I/O): a figure is only comparable to
the part of the model that covers the same things. Where a figure cannot be compared, ``not_comparable`` says
exactly why instead of a number.

The matching design is a point of a dse template (``family`` + ``point``) at the chip's published operating
point, with a workload as close to the paper's measurement as the zoo or a bundled topology offers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwmodels.catalogs.tech import UNVERIFIED, Sourced

TPU_V1 = (
    'N. P. Jouppi et al., "In-datacenter performance analysis of a tensor processing unit", ISCA 2017 '
    "(arXiv 1704.04760)"
)
EYERISS = (
    'Y.-H. Chen, T. Krishna, J. S. Emer and V. Sze, "Eyeriss: an energy-efficient reconfigurable accelerator for '
    'deep convolutional neural networks", IEEE JSSC 52(1), 2017'
)
SIMBA = (
    'Y. S. Shao et al., "Simba: scaling deep-learning inference with multi-chip-module-based architecture", MICRO 2019'
)
SAMSUNG_NPU = (
    'J. Song et al., "An 11.5TOPS/W 1024-MAC butterfly structure dual-core sparsity-aware neural processing unit '
    'in 8nm flagship mobile SoC", ISSCC 2019, paper 7.1'
)
NVDLA = "NVIDIA Deep Learning Accelerator (NVDLA) open-source hardware, nvdla.org hardware manual v1 (2017)"
GEMMINI = (
    'H. Genc et al., "Gemmini: enabling systematic deep-learning architecture evaluation via full-stack '
    'integration", DAC 2021'
)
SN40L = (
    'R. Prabhakar et al., "SambaNova SN40L: scaling the AI memory wall with dataflow and composition of experts", '
    "MICRO 2024 (arXiv 2405.07518)"
)


@dataclass(frozen=True)
class Workload:
    """What the chip was measured on: a zoo model or a bundled SCALE-Sim topology (path from the repository)."""

    model: str
    batch: int
    precision: str
    note: str


@dataclass(frozen=True)
class PublishedChip:
    """One published accelerator, its figures with their scope, and the dse design that matches it.

    ``power_excludes``: energy components (``Metrics.energy_breakdown_pj`` keys) outside the published power
    figure (for example ``dram`` for a core-power measurement). ``rate_ips``: the published inferences per
    second at which the power was measured; the model's energy per inference times this rate is its power at
    the published operating point. ``rate_macs_per_s``: the same for a chip whose power was measured on a
    workload the zoo does not have, at a published throughput: the model's energy per MAC on the stand-in
    workload times that MAC rate (None for both: the model's own latency sets the rate). ``blocks_mm2``: published
    areas of single blocks, keyed by the model's area blocks (``Metrics.info["area_breakdown_mm2"]``) they
    correspond to (a '+' joins several). ``misses``: what the model leaves out or gets wrong that puts a
    figure outside the 30 % target, as far as it is known (printed only while the figure is outside it).
    """

    name: str
    paper: str
    family: str
    tech: str
    point: dict[str, object]
    workload: Workload
    area_mm2: Sourced | None
    area_includes: str
    power_w: Sourced | None
    power_includes: str
    power_excludes: tuple[str, ...] = ()
    rate_ips: Sourced | None = None
    rate_macs_per_s: Sourced | None = None
    blocks_mm2: dict[str, Sourced] = field(default_factory=dict)
    not_comparable: dict[str, str] = field(default_factory=dict)  # 'area' | 'power' -> the precise reason
    misses: dict[str, str] = field(default_factory=dict)  # 'area' | 'power' -> why the model is off, where it is


_TPU_DIE = 331.0  # mm^2, an upper bound ("< 331")


def _tpu_share(share: float, what: str) -> Sourced:
    return Sourced(
        share * _TPU_DIE,
        "mm^2",
        f"{TPU_V1}, Fig. 2 floor plan caption: {what} {share:.0%} of a die of < 331 mm^2 (Table 1) = "
        f"{share * _TPU_DIE:.0f} mm^2 (upper bound)",
    )


CHIPS: dict[str, PublishedChip] = {
    "tpu_v1": PublishedChip(
        name="TPU v1",
        paper=TPU_V1,
        family="systolic",
        tech="asic-28nm",
        point={
            "rows": 256,
            "cols": 256,
            "dataflow": "ws",
            "ifmap_sram_kib": 12288.0,  # the 24 MiB Unified Buffer holds activations in and out
            "ofmap_sram_kib": 12288.0,
            "filter_sram_kib": 4096.0,  # stand-in for the 4 MiB of accumulators (same capacity, 32-bit words)
            "freq_mhz": 700.0,
            "dram_gbps": 34.0,
            "precision": "int8",
            "vector_lanes": 256,
        },
        workload=Workload(
            "resnet50", 8, "int8", "ResNet-50 batch 8 stands in for the paper's CNN0 (batch 8); power is per die"
        ),
        area_mm2=Sourced(_TPU_DIE, "mm^2", f"{TPU_V1}, Table 1: die size < 331 mm^2 (28 nm, 700 MHz)"),
        area_includes="whole die, upper bound: buffers, matrix unit, activation pipeline, control, DDR3/PCIe I/O",
        power_w=Sourced(
            40.0,
            "W",
            f"{TPU_V1}, Table 2: measured per-die busy power 40 W (idle 28 W, TDP 75 W)",
        ),
        power_includes=(
            "busy die power (40 W), measured with CNN0 at 100 % load (Fig. 10), where the matrix unit runs 86 of "
            "its 92 peak TOPS. It includes the idle floor (28 W): clock tree and registers clocked while idle, "
            "leakage at operating temperature, the DDR3 and PCIe PHYs. The model prices every register access "
            "(clock included) per MAC, so its switching energy covers part of that floor: the comparison is busy "
            "against the model's switching at the published rate plus its leakage. Outside ours: the DDR3/PCIe PHYs "
            "and host interface (no model), the DRAM chips (left out)"
        ),
        power_excludes=("dram",),
        rate_macs_per_s=Sourced(
            86.0e12 / 2,
            "MAC/s",
            f"{UNVERIFIED}: {TPU_V1}, Table 3: CNN0 runs at 86.0 TOPS (2 ops per MAC) of the 92 peak, the load at "
            "which Fig. 10 measures the busy power (as recalled, not traced to a copy of the paper in this "
            "session). CNN0 is not public: the model's energy per MAC on ResNet-50 stands in for it; ResNet-50 "
            "on this design is DRAM-bound at 34 GB/s (15 % utilization), so its own latency would price a "
            "different operating point from the one the paper measured",
        ),
        blocks_mm2={
            "sram": _tpu_share(
                0.35,
                "Unified Buffer 29 % + accumulators 6 % (the weight FIFO, the rest of the 37 % data buffers, "
                "has no model)",
            ),
            "pe_array": _tpu_share(0.24, "matrix multiply unit 24 %"),
            "vector": _tpu_share(0.06, "activation pipeline (compute 30 % less the matrix unit's 24 %)"),
        },
        misses={
            "area": (
                "like for like, the buffers agree (block sram) and the compute blocks are short: the die's control, "
                "I/O and wiring are priced as this floor plan's own shares (DIE_OVERHEAD), so the die error repeats "
                "the three blocks' together. The matrix unit (24 % of <= 331 mm^2) is <= 1212 um^2 a MAC against "
                "the model's 555 um^2 placed: Han & Dally's 45 nm cells scaled to 28 nm by Stillmaker & Baas over "
                "the placement density measured on TPU v4i's 7 nm matrix unit (LOGIC_UTILIZATION); either TPU v1 "
                "(closed at 700 MHz in 2015) placed its array less densely than TPU v4i, or 28 nm cells are larger "
                "than the scaled ones, and one density for every node cannot tell which. Each TPU v1 MAC also "
                "double-buffers its weight (Section 2: the matrix unit holds one 64 KiB tile of weights plus one "
                "for double-buffering), a second 8-bit register and 2:1 multiplexer the template leaves out "
                "(44.5 um^2 placed a PE at 28 nm, +2.9 mm^2 over 65536 PEs: too little to close the gap). The "
                "activation pipeline (ReLU, sigmoid, tanh, pooling and normalisation over 256 lanes) is priced as "
                "the vector lanes' adders only"
            ),
        },
    ),
    "eyeriss": PublishedChip(
        name="Eyeriss",
        paper=EYERISS,
        family="systolic",
        tech="asic-65nm",
        point={
            "rows": 12,
            "cols": 14,
            "dataflow": "ws",
            "sram_kib": 108.0,
            "freq_mhz": 200.0,
            "dram_gbps": 25.6,
            "precision": "int16",
            "pe_weight_words": 224,  # the paper's per-PE scratchpads: 224 weights, 12 inputs, 24 partial sums
            "pe_input_words": 12,
            "pe_psum_words": 24,
        },
        workload=Workload(
            "designs/workloads/alexnet_conv_scalesim.csv",
            4,
            "int16",
            "AlexNet CONV1-5 at batch 4, as measured in the paper (row-stationary there, weight-stationary here)",
        ),
        area_mm2=Sourced(12.25, "mm^2", f"{EYERISS}: core area 3.5 mm x 3.5 mm = 12.25 mm^2 (TSMC 65 nm LP)"),
        area_includes=(
            "core without pads: 168 PEs with their scratchpads (0.5 KB each), 108 KB global buffer, RLC codecs, "
            "control; the model prices the scratchpads (pe_*_words) but not the codecs and buses"
        ),
        power_w=Sourced(0.278, "W", f"{EYERISS}: 278 mW on AlexNet CONV layers at 200 MHz, 1 V, 34.7 frames/s"),
        power_includes="chip core power (with leakage), without DRAM and I/O pads: the model's DRAM energy is left out",
        power_excludes=("dram",),
        rate_ips=Sourced(34.7, "inferences/s", f"{EYERISS}: AlexNet CONV1-5 at 34.7 frames/s (batch 4)"),
        misses={
            "area": (
                "the run-length codecs, the GIN/GON multicast buses with their per-PE controllers and the PE "
                "FIFOs have no area in the model (the per-PE scratchpads do: a 224 x 16-bit weight SRAM macro, "
                "12- and 24-word registers). No published split between the PE array and the global buffer was "
                "traced in this session, so no block is compared"
            ),
        },
    ),
    "simba": PublishedChip(
        name="Simba chiplet",
        paper=SIMBA,
        family="systolic",
        tech="asic-16nm",
        point={
            "rows": 32,
            "cols": 32,
            "dataflow": "ws",
            "filter_sram_kib": 512.0,  # 16 PEs x 32 KB weight buffers
            "ifmap_sram_kib": 192.0,  # 16 PEs x 8 KB input buffers + the 64 KB global buffer
            "ofmap_sram_kib": 48.0,  # 16 PEs x 3 KB accumulation buffers
            "freq_mhz": 2000.0,
            "dram_gbps": 100.0,
            "precision": "int8",
        },
        workload=Workload("resnet50", 1, "int8", "ResNet-50 batch 1, the paper's main workload"),
        area_mm2=Sourced(
            6.0,
            "mm^2",
            f"{UNVERIFIED}: {SIMBA}: 6 mm^2 per chiplet in TSMC 16 nm, 16 PEs of 64 int8 MACs each (as recalled, "
            "not traced to a copy of the paper in this session)",
        ),
        area_includes="one chiplet: 16 PEs with their buffers, global PE, RISC-V controller, NoC routers, GRS links",
        power_w=None,
        power_includes="per-chiplet energy is published at 0.42-1.2 V operating points, not one busy power",
        misses={
            "area": (
                "Simba's buffers are distributed: each of the 16 PEs has its own 32 KB weight, 8 KB input and 3 KB "
                "accumulation buffers (plus the global PE's 64 KB), 49 macros where the template builds three "
                "SRAMs of two banks; priced one by one (TechNode.sram_area_mm2, CACTI 7's bitcell shares) the 49 "
                "macros take 1.92 mm^2 against the template's 1.75, so their periphery explains about 4 points of "
                "the gap and the rest is logic: 6 mm^2 less 1.92 leaves about 4 mm^2 for 1,024 MACs with their vector "
                "datapaths, address generators, post-processing units and routers, where the model places 0.29 "
                "mm^2 of PE array (plus its die overheads); the network-on-package "
                "routers and ground-referenced-signalling transceivers are priced by TPU v1's I/O share, the "
                "RISC-V controller has no area, and the 6 mm^2 itself is UNVERIFIED. No published split of the "
                "chiplet's area by block was traced, so no block is compared like for like"
            ),
        },
        not_comparable={
            "power": (
                "the paper reports energy per op over a voltage sweep (down to near-threshold), and the catalog "
                "prices each node at its nominal supply only; no busy power at one voltage was traced"
            )
        },
    ),
    "samsung_npu": PublishedChip(
        name="Samsung Exynos 9820 NPU",
        paper=SAMSUNG_NPU,
        family="systolic",
        tech="asic-7nm",
        point={
            "rows": 32,
            "cols": 32,
            "dataflow": "ws",
            "sram_kib": 1024.0,
            "freq_mhz": 933.0,
            "dram_gbps": 25.6,
            "precision": "int8",
        },
        workload=Workload("mobilenet_v1", 1, "int8", "MobileNet v1 batch 1, an edge CNN"),
        area_mm2=Sourced(
            5.5,
            "mm^2",
            f"{UNVERIFIED}: {SAMSUNG_NPU}: 5.5 mm^2 for the dual-core 1024-MAC NPU with 1 MB scratchpads in Samsung "
            "8 nm (as recalled, not traced to a copy of the paper in this session)",
        ),
        area_includes="the NPU: two cores of 512 MACs, their scratchpads, DMA and control, inside a mobile SoC",
        power_w=None,
        power_includes="11.5 TOPS/W at 0.5 V with zero-skipping: an efficiency, not a busy power",
        misses={
            "area": (
                "Samsung 8 nm is priced with the catalog's 7 nm node, whose bitcell and logic are denser; the "
                "NPU's zero-skipping dispatch (its butterfly structure), 16-bit MAC support and the two cores' "
                "separate control and DMA have no area in the dense int8 array; the 5.5 mm^2 itself is UNVERIFIED. No "
                "published split of the NPU's area by block was traced, so no block is compared like for like"
            ),
        },
        not_comparable={
            "power": (
                "the published 11.5 TOPS/W counts skipped zero operations at a reduced 0.5 V supply; the model "
                "prices dense MACs at nominal supply and no node voltage scaling"
            ),
            "node": "Samsung 8 nm (a 10 nm-class node) is priced with the catalog's 7 nm node, which is denser",
        },
    ),
    "nvdla": PublishedChip(
        name="NVDLA nv_full",
        paper=NVDLA,
        family="systolic",
        tech="asic-16nm",
        point={
            "rows": 64,
            "cols": 32,
            "dataflow": "ws",
            "sram_kib": 512.0,
            "freq_mhz": 1000.0,
            "dram_gbps": 25.6,
            "precision": "int8",
        },
        workload=Workload("resnet50", 1, "int8", "ResNet-50 batch 1"),
        area_mm2=None,
        area_includes="open-source RTL: 2048 int8 MACs, 512 KiB convolution buffer",
        power_w=None,
        power_includes="",
        not_comparable={
            "area": (
                "NVIDIA publishes the nv_full configuration (2048 int8 MACs, 512 KiB convolution buffer) but no "
                "silicon area; the area depends on the integrator's library and node"
            ),
            "power": "no measured power of a fabricated nv_full is published",
        },
    ),
    "gemmini": PublishedChip(
        name="Gemmini (default config)",
        paper=GEMMINI,
        family="systolic",
        tech="asic-16nm",
        point={
            "rows": 16,
            "cols": 16,
            "dataflow": "ws",
            "scratchpad": "unified",
            "sram_kib": 320.0,  # 256 KiB scratchpad + 64 KiB accumulator
            "freq_mhz": 1000.0,
            "dram_gbps": 16.0,
            "precision": "int8",
        },
        workload=Workload("resnet50", 1, "int8", "ResNet-50 batch 1"),
        area_mm2=None,
        area_includes="16x16 int8 array, 256 KiB scratchpad, 64 KiB accumulator, inside a Rocket/BOOM SoC",
        power_w=None,
        power_includes="",
        not_comparable={
            "area": (
                "the DAC 2021 paper reports areas of its generated instances in TSMC 16 nm and Intel 22FFL test "
                "chips, but no figure for this configuration was traced to a copy of the paper in this session"
            ),
            "power": "no measured busy power for this configuration was traced",
        },
    ),
    "sn40l": PublishedChip(
        name="SambaNova SN40L",
        paper=SN40L,
        family="rdu",
        tech="asic-7nm",
        point={"preset": "sn40l"},
        workload=Workload("llama2_7b", 1, "bf16", "Llama-2 7B decode"),
        area_mm2=None,
        area_includes="two TSMC 5 nm RDU dies on a CoWoS-S interposer with 64 GB HBM3",
        power_w=None,
        power_includes="",
        not_comparable={
            "area": (
                "the paper gives 102 billion transistors on two TSMC 5 nm dies but no die area; the catalog has no "
                "5 nm node"
            ),
            "power": "the paper and its HotChips 2024 talk give no per-socket power",
        },
    ),
}


def chip_names() -> list[str]:
    return list(CHIPS)
