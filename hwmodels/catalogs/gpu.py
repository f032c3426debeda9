"""The GPU catalog: every number about the GPUs a design is compared against, with its source beside it.

Why a catalog of ``Sourced`` values: a comparison against an H100 is only as credible as the H100's numbers,
so each one names the datasheet, whitepaper or programming-guide table it came from, and how it was derived
when the vendor quotes it differently (vendors quote tensor throughput *with 2:4 sparsity*; this catalog holds
the dense figure, half of it, and says so).

Tensor throughput is *dense*, at FP32 accumulate for the floating-point formats (what cuBLAS/cuDNN use by
default), INT32 accumulate for INT8. GeForce Ada parts (RTX 4090, 4070) run FP16/BF16/FP8 with FP32
accumulate at half their FP16-accumulate rate; the entries hold the FP32-accumulate rate. ``fp8`` is None where
the tensor cores have no FP8 (Ampere: A100, Jetson Orin).

The model's own assumptions (achievable fractions, launch overhead, static power) are not outside numbers but
they sit here too, as ``Sourced`` values whose source starts with ASSUMPTION, so a reader sees every constant
the GPU model uses in one place. They are the defaults of a *catalog-only* GPU; a GPU measured and fitted
(``hwmodels.catalogs.gpu_tuning``, ``tools/gpu_calibrate.py``) uses its fitted values instead.

``python -m hwmodels.catalogs.gpu_tuning`` rewrites ``hwmodels/data/GPU_SOURCES.md`` from the tables below and the
fitted constants of ``hwmodels/data/gpu_calibration.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from hwmodels.catalogs.tech import Sourced

GPU_SOURCES_MD = Path(__file__).resolve().parent.parent / "data" / "GPU_SOURCES.md"
ASSUMPTION = "ASSUMPTION"

# --------------------------------------------------------------------------------------------------
# References (short forms used in every ``source`` string)
# --------------------------------------------------------------------------------------------------
H100_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com, 2023), table 'Technical Specifications'"
H100_WP = (
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (WP-10792-001, 2022), Table 3 'Comparison of NVIDIA A100 "
    "and H100 data center GPUs' and Sec. 'H100 SM architecture'"
)
H100_PCIE_BRIEF = "NVIDIA H100 PCIe GPU Product Brief (PB-11133-001_v02, November 2022)"
A100_WP = (
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1 'NVIDIA A100 Tensor Core GPU performance "
    "specs' and Table 3 'Comparison of NVIDIA data center GPUs'"
)
A100_DATASHEET = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com, 2021), table 'A100 80GB SXM / A100 40GB SXM'"
ADA_WP = (
    "NVIDIA Ada GPU Architecture whitepaper (v2.02, 2023), Appendix A Table 'GeForce RTX 4090' and "
    "Sec. 'Ada SM' (128 FP32 cores, 4 tensor cores per SM)"
)
L4_DATASHEET = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com, 2023), table 'Specifications'"
L40S_DATASHEET = "NVIDIA L40S GPU datasheet (nvidia.com, 2023), table 'Specifications'"
RTX4070_SPECS = (
    "NVIDIA GeForce RTX 4070 family specifications page (nvidia.com, 2023): 5888 CUDA cores, boost 2.475 GHz, "
    "12 GB GDDR6X 192-bit at 21 Gbps, 200 W graphics card power, 466 AI TOPS (FP8, sparse)"
)
ORIN_BRIEF = (
    "NVIDIA Jetson AGX Orin Series Technical Brief (v1.2, 2022): GPU of 2 GPCs / 16 SMs, 2048 CUDA cores, "
    "64 tensor cores, 4 MB L2, 5.3 FP32 TFLOPS, 170 sparse INT8 TOPS; module 64 GB LPDDR5 204.8 GB/s, 15-60 W"
)
CUDA_GUIDE = (
    "NVIDIA CUDA C++ Programming Guide (v12.x), 'Technical Specifications per Compute Capability' table "
    "(maximum shared memory per SM, 32-bit registers per SM, resident blocks per SM)"
)
DGX_H100_GUIDE = (
    "NVIDIA DGX H100 datasheet (nvidia.com, 2023): 8x NVIDIA H100 Tensor Core GPUs (SXM5 80GB), 18 NVLink "
    "connections per GPU, 900 GB/s bidirectional GPU-to-GPU bandwidth, 4x NVSwitch"
)
DGX_A100_GUIDE = (
    "NVIDIA DGX A100 datasheet (nvidia.com, 2020): 8x NVIDIA A100 80GB (640 GB system), 12 NVLinks per GPU, "
    "600 GB/s GPU-to-GPU bidirectional bandwidth, 6x NVSwitch"
)
CUDA_GUIDE_SMEM_BW = (
    "NVIDIA CUDA C++ Programming Guide (v12.x), 'Shared Memory' section: 32 banks, each 4 bytes wide, "
    "serving one request per clock"
)


def _sheet(value: float, unit: str, source: str, what: str) -> Sourced:
    return Sourced(float(value), unit, f"{source}: {what}")


def _sparse_halved(sparse: float, unit: str, source: str, what: str) -> Sourced:
    """Vendors quote tensor throughput with 2:4 sparsity; the dense rate is half of it."""
    return Sourced(sparse / 2.0, unit, f"{source}: {what} {sparse:g} with sparsity; dense = half")


def _per_sm_scaled(rate_per_sm_clk: float, sms: int, clock_mhz: float, unit: str, source: str, how: str) -> Sourced:
    """Dense throughput from a per-SM per-clock rate: rate x SMs x clock (ops counted as 2 per FMA)."""
    value = rate_per_sm_clk * sms * clock_mhz * 1e6 / 1e12
    return Sourced(value, unit, f"{source}; {how}: {rate_per_sm_clk:g} ops/clk/SM x {sms} SMs x {clock_mhz:g} MHz")


# --------------------------------------------------------------------------------------------------
# One GPU
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuSpec:
    """One GPU's catalog entry. Throughputs are dense peaks in TFLOPS/TOPS; memory in GB and GB/s."""

    name: str
    display: str
    architecture: str  # hopper | ampere | ada
    compute_capability: str
    sms: Sourced
    clock_mhz: Sourced
    fp32_tflops: Sourced  # CUDA cores (non-tensor)
    tf32_tflops: Sourced
    fp16_tflops: Sourced  # FP16 and BF16, FP32 accumulate
    fp8_tflops: Sourced | None
    int8_tops: Sourced
    mem_gb: Sourced
    mem_gbps: Sourced
    l2_mib: Sourced
    smem_kib_per_sm: Sourced
    regs_kib_per_sm: Sourced
    max_blocks_per_sm: Sourced
    tdp_w: Sourced
    die_mm2: Sourced | None

    def peak_tflops(self, math: str) -> float | None:
        """Dense peak for a math mode: fp32 (CUDA cores), tf32, fp16, bf16, fp8, int8; None if unsupported."""
        entry = {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "fp16": self.fp16_tflops,
            "bf16": self.fp16_tflops,
            "fp8": self.fp8_tflops,
            "int8": self.int8_tops,
        }[math]
        return None if entry is None else entry.value

    def rows(self) -> list[tuple[str, Sourced]]:
        """(field, Sourced) for every sourced number of this entry, in declaration order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self) if isinstance(getattr(self, f.name), Sourced)]


def _regs(cc: str) -> Sourced:
    return Sourced(256.0, "KiB", f"{CUDA_GUIDE}: compute capability {cc}, 64K 32-bit registers per SM = 256 KiB")


def _smem(kib: float, cc: str) -> Sourced:
    return Sourced(kib, "KiB", f"{CUDA_GUIDE}: compute capability {cc}, maximum shared memory per SM {kib:g} KB")


def _blocks(n: int, cc: str) -> Sourced:
    return Sourced(float(n), "blocks", f"{CUDA_GUIDE}: compute capability {cc}, maximum resident blocks per SM {n}")


# Per-SM dense tensor rates (ops per clock per SM, an FMA counted as 2 ops) used where a vendor page gives no
# per-precision figure. Ada GeForce, FP32 accumulate: RTX 4090 whitepaper figures / (128 SMs x 2520 MHz).
_ADA_GEFORCE_PER_SM = {"fp32": 256.0, "tf32": 256.0, "fp16": 512.0, "fp8": 1024.0, "int8": 2048.0}
_ADA_RATE_HOW = "per-SM rate from the RTX 4090 whitepaper figures divided by 128 SMs x 2520 MHz"

_H100_SXM = GpuSpec(
    name="h100_sxm",
    display="NVIDIA H100 SXM5 80GB",
    architecture="hopper",
    compute_capability="9.0",
    sms=_sheet(132, "SMs", H100_WP, "H100 SXM5 has 132 SMs"),
    clock_mhz=Sourced(
        1830.0,
        "MHz",
        f"{H100_WP}: the tensor figures are at 1830 MHz; check: 989.4 TFLOPS FP16 / (132 SMs x 4096 FLOP/clk/SM)"
        " = 1830 MHz (the maximum boost clock is 1980 MHz)",
    ),
    fp32_tflops=_sheet(66.9, "TFLOPS", H100_WP, "peak FP32 (non-tensor) TFLOPS, H100 SXM5"),
    tf32_tflops=_sheet(494.7, "TFLOPS", H100_WP, "peak TF32 tensor TFLOPS, dense, H100 SXM5"),
    fp16_tflops=_sheet(989.4, "TFLOPS", H100_WP, "peak FP16/BF16 tensor TFLOPS with FP32 accumulate, dense, H100 SXM5"),
    fp8_tflops=_sheet(1978.9, "TFLOPS", H100_WP, "peak FP8 tensor TFLOPS with FP32 accumulate, dense, H100 SXM5"),
    int8_tops=_sheet(1978.9, "TOPS", H100_WP, "peak INT8 tensor TOPS, dense, H100 SXM5"),
    mem_gb=_sheet(80, "GB", H100_DATASHEET, "H100 SXM GPU memory 80 GB HBM3"),
    mem_gbps=_sheet(3350, "GB/s", H100_DATASHEET, "H100 SXM GPU memory bandwidth 3.35 TB/s"),
    l2_mib=_sheet(50, "MiB", H100_WP, "50 MB L2 cache"),
    smem_kib_per_sm=_smem(228, "9.0"),
    regs_kib_per_sm=_regs("9.0"),
    max_blocks_per_sm=_blocks(32, "9.0"),
    tdp_w=_sheet(700, "W", H100_DATASHEET, "H100 SXM max thermal design power up to 700 W"),
    die_mm2=_sheet(814, "mm^2", H100_WP, "GH100 die size 814 mm^2 (TSMC 4N)"),
)

_H100_PCIE = GpuSpec(
    name="h100_pcie",
    display="NVIDIA H100 PCIe 80GB",
    architecture="hopper",
    compute_capability="9.0",
    sms=_sheet(114, "SMs", H100_WP, "H100 PCIe has 114 SMs"),
    clock_mhz=Sourced(
        1620.0,
        "MHz",
        f"{H100_WP}: derived from the tensor figure: 756.5 TFLOPS FP16 / (114 SMs x 4096 FLOP/clk/SM) = 1620 MHz",
    ),
    fp32_tflops=_sheet(51.2, "TFLOPS", H100_WP, "peak FP32 (non-tensor) TFLOPS, H100 PCIe"),
    tf32_tflops=_sheet(378.0, "TFLOPS", H100_WP, "peak TF32 tensor TFLOPS, dense, H100 PCIe"),
    fp16_tflops=_sheet(756.5, "TFLOPS", H100_WP, "peak FP16/BF16 tensor TFLOPS with FP32 accumulate, dense, H100 PCIe"),
    fp8_tflops=_sheet(1513.0, "TFLOPS", H100_WP, "peak FP8 tensor TFLOPS with FP32 accumulate, dense, H100 PCIe"),
    int8_tops=_sheet(1513.0, "TOPS", H100_WP, "peak INT8 tensor TOPS, dense, H100 PCIe"),
    mem_gb=_sheet(80, "GB", H100_PCIE_BRIEF, "80 GB HBM2e"),
    mem_gbps=_sheet(2000, "GB/s", H100_PCIE_BRIEF, "memory bandwidth greater than 2,000 GB/s"),
    l2_mib=_sheet(50, "MiB", H100_WP, "50 MB L2 cache"),
    smem_kib_per_sm=_smem(228, "9.0"),
    regs_kib_per_sm=_regs("9.0"),
    max_blocks_per_sm=_blocks(32, "9.0"),
    tdp_w=_sheet(350, "W", H100_PCIE_BRIEF, "maximum thermal design power (TDP) 350 W"),
    die_mm2=_sheet(814, "mm^2", H100_WP, "GH100 die size 814 mm^2 (TSMC 4N)"),
)


def _a100(memory_gb: int, gbps: float, hbm: str) -> GpuSpec:
    return GpuSpec(
        name=f"a100_{memory_gb}gb",
        display=f"NVIDIA A100 SXM4 {memory_gb}GB",
        architecture="ampere",
        compute_capability="8.0",
        sms=_sheet(108, "SMs", A100_WP, "A100 has 108 SMs"),
        clock_mhz=_sheet(1410, "MHz", A100_WP, "GPU boost clock 1410 MHz"),
        fp32_tflops=_sheet(19.5, "TFLOPS", A100_WP, "peak FP32 TFLOPS (non-tensor)"),
        tf32_tflops=_sheet(156, "TFLOPS", A100_WP, "peak TF32 tensor TFLOPS, dense"),
        fp16_tflops=_sheet(312, "TFLOPS", A100_WP, "peak FP16/BF16 tensor TFLOPS with FP32 accumulate, dense"),
        fp8_tflops=None,
        int8_tops=_sheet(624, "TOPS", A100_WP, "peak INT8 tensor TOPS, dense"),
        mem_gb=_sheet(memory_gb, "GB", A100_DATASHEET, f"A100 {memory_gb}GB SXM GPU memory {memory_gb} GB {hbm}"),
        mem_gbps=_sheet(gbps, "GB/s", A100_DATASHEET, f"A100 {memory_gb}GB SXM GPU memory bandwidth {gbps:g} GB/s"),
        l2_mib=_sheet(40, "MiB", A100_WP, "40 MB L2 cache"),
        smem_kib_per_sm=_smem(164, "8.0"),
        regs_kib_per_sm=_regs("8.0"),
        max_blocks_per_sm=_blocks(32, "8.0"),
        tdp_w=_sheet(400, "W", A100_DATASHEET, "A100 SXM max thermal design power 400 W"),
        die_mm2=_sheet(826, "mm^2", A100_WP, "GA100 die size 826 mm^2 (TSMC 7N)"),
    )


_L4 = GpuSpec(
    name="l4",
    display="NVIDIA L4 24GB",
    architecture="ada",
    compute_capability="8.9",
    sms=Sourced(58.0, "SMs", f"{L4_DATASHEET}; 7424 CUDA cores / 128 per Ada SM ({ADA_WP}) = 58 SMs"),
    clock_mhz=Sourced(
        2040.0, "MHz", f"{L4_DATASHEET}: derived: 121 TFLOPS FP16 dense / (58 SMs x 1024 FLOP/clk/SM) = 2040 MHz"
    ),
    fp32_tflops=_sheet(30.3, "TFLOPS", L4_DATASHEET, "FP32 30.3 teraFLOPS"),
    tf32_tflops=_sparse_halved(120, "TFLOPS", L4_DATASHEET, "TF32 Tensor Core teraFLOPS"),
    fp16_tflops=_sparse_halved(242, "TFLOPS", L4_DATASHEET, "FP16/BF16 Tensor Core teraFLOPS"),
    fp8_tflops=_sparse_halved(485, "TFLOPS", L4_DATASHEET, "FP8 Tensor Core teraFLOPS"),
    int8_tops=_sparse_halved(485, "TOPS", L4_DATASHEET, "INT8 Tensor Core TOPS"),
    mem_gb=_sheet(24, "GB", L4_DATASHEET, "GPU memory 24 GB GDDR6"),
    mem_gbps=_sheet(300, "GB/s", L4_DATASHEET, "GPU memory bandwidth 300 GB/s"),
    l2_mib=Sourced(48.0, "MiB", f"{ADA_WP}: AD104 has 48 MB L2 (L4 is a full AD104 product)"),
    smem_kib_per_sm=_smem(100, "8.9"),
    regs_kib_per_sm=_regs("8.9"),
    max_blocks_per_sm=_blocks(24, "8.9"),
    tdp_w=_sheet(72, "W", L4_DATASHEET, "max thermal design power 72 W"),
    die_mm2=_sheet(294.5, "mm^2", ADA_WP, "AD104 die size 294.5 mm^2"),
)

_L40S = GpuSpec(
    name="l40s",
    display="NVIDIA L40S 48GB",
    architecture="ada",
    compute_capability="8.9",
    sms=Sourced(142.0, "SMs", f"{L40S_DATASHEET}; 18,176 CUDA cores / 128 per Ada SM ({ADA_WP}) = 142 SMs"),
    clock_mhz=_sheet(2520, "MHz", L40S_DATASHEET, "max boost clock 2520 MHz"),
    fp32_tflops=_sheet(91.6, "TFLOPS", L40S_DATASHEET, "FP32 91.6 teraFLOPS"),
    tf32_tflops=_sparse_halved(366, "TFLOPS", L40S_DATASHEET, "TF32 Tensor Core teraFLOPS"),
    fp16_tflops=_sparse_halved(733, "TFLOPS", L40S_DATASHEET, "BF16/FP16 Tensor Core teraFLOPS"),
    fp8_tflops=_sparse_halved(1466, "TFLOPS", L40S_DATASHEET, "FP8 Tensor Core teraFLOPS"),
    int8_tops=_sparse_halved(1466, "TOPS", L40S_DATASHEET, "INT8 Tensor Core TOPS"),
    mem_gb=_sheet(48, "GB", L40S_DATASHEET, "GPU memory 48 GB GDDR6 with ECC"),
    mem_gbps=_sheet(864, "GB/s", L40S_DATASHEET, "memory bandwidth 864 GB/s"),
    l2_mib=Sourced(96.0, "MiB", f"{ADA_WP}: AD102 has 96 MB L2 (L40S enables all of it)"),
    smem_kib_per_sm=_smem(100, "8.9"),
    regs_kib_per_sm=_regs("8.9"),
    max_blocks_per_sm=_blocks(24, "8.9"),
    tdp_w=_sheet(350, "W", L40S_DATASHEET, "max power consumption 350 W"),
    die_mm2=_sheet(608.5, "mm^2", ADA_WP, "AD102 die size 608.5 mm^2"),
)

_RTX_4090 = GpuSpec(
    name="rtx_4090",
    display="NVIDIA GeForce RTX 4090",
    architecture="ada",
    compute_capability="8.9",
    sms=_sheet(128, "SMs", ADA_WP, "RTX 4090: 128 SMs, 16384 CUDA cores"),
    clock_mhz=_sheet(2520, "MHz", ADA_WP, "RTX 4090 boost clock 2520 MHz"),
    fp32_tflops=_sheet(82.6, "TFLOPS", ADA_WP, "RTX 4090 peak FP32 TFLOPS (non-tensor) 82.6"),
    tf32_tflops=_sheet(82.6, "TFLOPS", ADA_WP, "RTX 4090 peak TF32 tensor TFLOPS 82.6 dense (165.2 sparse)"),
    fp16_tflops=_sheet(
        165.2, "TFLOPS", ADA_WP, "RTX 4090 peak FP16/BF16 tensor TFLOPS with FP32 accumulate 165.2 dense"
    ),
    fp8_tflops=_sheet(330.3, "TFLOPS", ADA_WP, "RTX 4090 peak FP8 tensor TFLOPS with FP32 accumulate 330.3 dense"),
    int8_tops=_sheet(660.6, "TOPS", ADA_WP, "RTX 4090 peak INT8 tensor TOPS 660.6 dense (1321.2 sparse)"),
    mem_gb=_sheet(24, "GB", ADA_WP, "RTX 4090 24 GB GDDR6X"),
    mem_gbps=_sheet(1008, "GB/s", ADA_WP, "RTX 4090 memory bandwidth 1008 GB/s (384-bit, 21 Gbps)"),
    l2_mib=_sheet(72, "MiB", ADA_WP, "RTX 4090 L2 cache 72 MB"),
    smem_kib_per_sm=_smem(100, "8.9"),
    regs_kib_per_sm=_regs("8.9"),
    max_blocks_per_sm=_blocks(24, "8.9"),
    tdp_w=_sheet(450, "W", ADA_WP, "RTX 4090 total graphics power 450 W"),
    die_mm2=_sheet(608.5, "mm^2", ADA_WP, "AD102 die size 608.5 mm^2"),
)

_RTX_4070 = GpuSpec(
    name="rtx_4070",
    display="NVIDIA GeForce RTX 4070",
    architecture="ada",
    compute_capability="8.9",
    sms=Sourced(46.0, "SMs", f"{RTX4070_SPECS}; 5888 CUDA cores / 128 per Ada SM = 46 SMs"),
    clock_mhz=Sourced(2475.0, "MHz", f"{RTX4070_SPECS}: boost clock 2.475 GHz"),
    fp32_tflops=_per_sm_scaled(256, 46, 2475, "TFLOPS", RTX4070_SPECS, "128 FP32 FMA/clk/SM"),
    tf32_tflops=_per_sm_scaled(_ADA_GEFORCE_PER_SM["tf32"], 46, 2475, "TFLOPS", RTX4070_SPECS, _ADA_RATE_HOW),
    fp16_tflops=_per_sm_scaled(_ADA_GEFORCE_PER_SM["fp16"], 46, 2475, "TFLOPS", RTX4070_SPECS, _ADA_RATE_HOW),
    fp8_tflops=_per_sm_scaled(_ADA_GEFORCE_PER_SM["fp8"], 46, 2475, "TFLOPS", RTX4070_SPECS, _ADA_RATE_HOW),
    int8_tops=_per_sm_scaled(
        _ADA_GEFORCE_PER_SM["int8"], 46, 2475, "TOPS", RTX4070_SPECS, f"{_ADA_RATE_HOW} (466 sparse FP8 AI TOPS / 2)"
    ),
    mem_gb=Sourced(12.0, "GB", f"{RTX4070_SPECS}: 12 GB GDDR6X"),
    mem_gbps=Sourced(504.0, "GB/s", f"{RTX4070_SPECS}: 192 bit x 21 Gbps / 8 = 504 GB/s"),
    l2_mib=Sourced(36.0, "MiB", "NVIDIA GeForce RTX 4070 launch materials (April 2023): 36 MB L2 cache"),
    smem_kib_per_sm=_smem(100, "8.9"),
    regs_kib_per_sm=_regs("8.9"),
    max_blocks_per_sm=_blocks(24, "8.9"),
    tdp_w=Sourced(200.0, "W", f"{RTX4070_SPECS}: total graphics power 200 W"),
    die_mm2=_sheet(294.5, "mm^2", ADA_WP, "AD104 die size 294.5 mm^2"),
)

_ORIN = GpuSpec(
    name="jetson_agx_orin",
    display="NVIDIA Jetson AGX Orin 64GB (GPU)",
    architecture="ampere",
    compute_capability="8.7",
    sms=_sheet(16, "SMs", ORIN_BRIEF, "16 SMs"),
    clock_mhz=Sourced(1300.0, "MHz", f"{ORIN_BRIEF}: derived: 5.3 TFLOPS / (2048 cores x 2) = 1.3 GHz max GPU clock"),
    fp32_tflops=_sheet(5.3, "TFLOPS", ORIN_BRIEF, "5.3 FP32 TFLOPS"),
    tf32_tflops=Sourced(21.3, "TFLOPS", f"{ORIN_BRIEF}: derived: dense INT8 85 TOPS / 4 (Ampere TF32 = INT8 / 4)"),
    fp16_tflops=Sourced(42.5, "TFLOPS", f"{ORIN_BRIEF}: derived: dense INT8 85 TOPS / 2 (Ampere FP16 = INT8 / 2)"),
    fp8_tflops=None,
    int8_tops=_sparse_halved(170, "TOPS", ORIN_BRIEF, "GPU INT8 TOPS"),
    mem_gb=_sheet(64, "GB", ORIN_BRIEF, "64 GB LPDDR5 (shared with the CPU)"),
    mem_gbps=_sheet(204.8, "GB/s", ORIN_BRIEF, "204.8 GB/s"),
    l2_mib=_sheet(4, "MiB", ORIN_BRIEF, "4 MB L2"),
    smem_kib_per_sm=_smem(164, "8.7"),
    regs_kib_per_sm=_regs("8.7"),
    max_blocks_per_sm=_blocks(16, "8.7"),
    tdp_w=_sheet(60, "W", ORIN_BRIEF, "module power up to 60 W (MAXN)"),
    die_mm2=None,
)

GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        _H100_SXM,
        _H100_PCIE,
        _a100(40, 1555, "HBM2"),
        _a100(80, 2039, "HBM2e"),
        _L4,
        _L40S,
        _RTX_4090,
        _RTX_4070,
        _ORIN,
    )
}

# Short names users write in specs (`baselines: [h100, a100]`).
ALIASES: dict[str, str] = {
    "h100": "h100_sxm",
    "h100_sxm5": "h100_sxm",
    "a100": "a100_80gb",
    "a100_40": "a100_40gb",
    "a100_80": "a100_80gb",
    "4090": "rtx_4090",
    "rtx4090": "rtx_4090",
    "4070": "rtx_4070",
    "rtx4070": "rtx_4070",
    "orin": "jetson_agx_orin",
    "agx_orin": "jetson_agx_orin",
}


class UnknownGpuError(KeyError):
    """A GPU name that is not in the catalog; the message lists the names that are."""

    def __init__(self, name: object):
        super().__init__(name)
        self.name = name
        self.message = f"unknown GPU {name!r}; choose one of: {', '.join(gpu_names())} (or an alias: " + (
            ", ".join(ALIASES) + ")"
        )

    def __str__(self) -> str:
        return self.message


def gpu_names() -> tuple[str, ...]:
    return tuple(GPUS)


def canonical_gpu_name(name: str) -> str:
    """The catalog key for ``name``: case, dashes and spaces do not matter, aliases resolve."""
    if not isinstance(name, str):
        raise UnknownGpuError(name)
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    key = ALIASES.get(key, key)
    if key not in GPUS:
        raise UnknownGpuError(name)
    return key


def get_gpu(name: str) -> GpuSpec:
    return GPUS[canonical_gpu_name(name)]


# --------------------------------------------------------------------------------------------------
# NVLink and multi-GPU nodes
# --------------------------------------------------------------------------------------------------
# Per-GPU NVLink bandwidth in ONE direction (a ring all-reduce sends and receives at once): half the
# vendors' bidirectional figure.
NVLINK_GBPS: dict[str, Sourced] = {
    "h100_sxm": Sourced(450.0, "GB/s", f"{H100_WP}: NVLink 4, 18 links, 900 GB/s total bidirectional; one way = half"),
    "a100_40gb": Sourced(300.0, "GB/s", f"{A100_WP}: NVLink 3, 12 links, 600 GB/s total bidirectional; one way = half"),
    "a100_80gb": Sourced(300.0, "GB/s", f"{A100_WP}: NVLink 3, 12 links, 600 GB/s total bidirectional; one way = half"),
}


@dataclass(frozen=True)
class NodeSpec:
    """A multi-GPU server: ``gpus`` copies of a catalog GPU joined by NVLink (tensor parallel)."""

    name: str
    display: str
    gpu: str
    gpus: Sourced
    nvlink_gbps: Sourced  # per GPU, one direction


NODES: dict[str, NodeSpec] = {
    "dgx_h100": NodeSpec(
        "dgx_h100",
        "NVIDIA DGX H100 (8x H100 SXM5, NVLink 4)",
        "h100_sxm",
        Sourced(8.0, "GPUs", f"{DGX_H100_GUIDE}: 8 GPUs"),
        Sourced(450.0, "GB/s", f"{DGX_H100_GUIDE}: 900 GB/s bidirectional per GPU; one way = half"),
    ),
    "dgx_a100": NodeSpec(
        "dgx_a100",
        "NVIDIA DGX A100 (8x A100 SXM4 80GB, NVLink 3)",
        "a100_80gb",
        Sourced(8.0, "GPUs", f"{DGX_A100_GUIDE}: 8 GPUs"),
        Sourced(300.0, "GB/s", f"{DGX_A100_GUIDE}: 600 GB/s bidirectional per GPU; one way = half"),
    ),
}


def node_names() -> tuple[str, ...]:
    return tuple(NODES)


class UnknownBaselineError(UnknownGpuError):
    """A baseline name that is neither a catalog GPU nor a node preset."""

    def __init__(self, name: object):
        super().__init__(name)
        self.message += f"; or a multi-GPU node: {', '.join(node_names())}"


def canonical_baseline_name(name: str) -> str:
    """A node preset (dgx_h100, dgx_a100) as written, or the catalog key of a GPU."""
    key = name.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(name, str) else name
    if key in NODES:
        return key
    try:
        return canonical_gpu_name(name)
    except UnknownGpuError:
        raise UnknownBaselineError(name) from None


# --------------------------------------------------------------------------------------------------
# The GPU model's assumptions (not outside numbers; uncalibrated until a device measurement exists)
# --------------------------------------------------------------------------------------------------
MODEL_ASSUMPTIONS: dict[str, Sourced] = {
    "compute_fraction": Sourced(
        0.80,
        "fraction of peak",
        f"{ASSUMPTION}: best achievable fraction of dense tensor peak for a large, well-tiled GEMM (cuBLAS-class "
        "kernels sustain roughly 70-90 %); uncalibrated, fit it with tools/gpu_measure.py on a device",
    ),
    "bandwidth_fraction": Sourced(
        0.85,
        "fraction of peak",
        f"{ASSUMPTION}: achievable fraction of datasheet DRAM bandwidth for streaming kernels (STREAM-like copy "
        "kernels reach roughly 80-92 %); uncalibrated",
    ),
    "l2_bandwidth_ratio": Sourced(
        3.0,
        "x DRAM bandwidth",
        f"{ASSUMPTION}: L2-to-SM bandwidth as a multiple of DRAM bandwidth, used for operand re-reads of tiled "
        "GEMMs and for activations that stay in L2",
    ),
    "l2_resident_fraction": Sourced(
        0.5,
        "fraction of L2",
        f"{ASSUMPTION}: an intermediate activation no larger than this share of L2, consumed by the next kernels, "
        "never reaches DRAM",
    ),
    "launch_us": Sourced(
        3.0,
        "us per kernel",
        f"{ASSUMPTION}: fixed cost of one kernel beyond its roofline time: the launch gap of back-to-back kernels "
        "in a captured CUDA graph / TensorRT engine (~1-2 us) plus pipeline fill and tail (~1 us); eager PyTorch "
        "adds roughly 5-10 us per op",
    ),
    "host_overhead_us": Sourced(
        10.0,
        "us per call",
        f"{ASSUMPTION}: host-side cost of one eager framework call (PyTorch op dispatch and cudaLaunchKernel), "
        "charged only when the template's execution is 'eager'; roughly 5-20 us per op",
    ),
    "overlap_exponent": Sourced(
        2.0,
        "p",
        f"{ASSUMPTION}: how far the host's per-call cost overlaps the device's work in eager mode: call time = "
        "(host^p + device^p)^(1/p) (p = 1: serial, large p: fully overlapped asynchronous launches)",
    ),
    "serial_overlap_exponent": Sourced(
        1.0,
        "p",
        "Timing method: a call timed alone (a host timer or CUDA events around one call, then a synchronize) "
        "runs its host dispatch before its kernel starts, so the two add (p = 1); used when no row is timed "
        "both eager and as a CUDA graph, the only rows that show any overlap",
    ),
    "gemm_host_ratio": Sourced(
        2.62,
        "x softmax host cost",
        "Measured (hwmodels/data/gpu_measured_h100_eager_fp16.csv with its CUDA-graph twin, H100 SXM, PyTorch "
        "2.11): host cost of one eager matmul call (cuBLAS dispatch) over one softmax call, fitted 35.3 us / "
        "13.5 us; sets a GPU's GEMM host cost from its softmax rows where every GEMM row is device-bound",
    ),
    "long_row_bytes": Sourced(
        16384.0,
        "bytes per row",
        f"{ASSUMPTION}: a softmax/layernorm row longer than this no longer stays on chip within one block, so "
        "the kernel reads its input again (extra passes are fitted per GPU; 0 uncalibrated)",
    ),
    "nvlink_fraction": Sourced(
        0.8,
        "fraction of NVLink",
        f"{ASSUMPTION}: achievable share of one-way NVLink bandwidth in a ring all-reduce (NCCL bus bandwidth on "
        "DGX-class nodes is roughly 75-90 % of the link rate for large messages)",
    ),
    "allreduce_step_us": Sourced(
        1.0,
        "us per ring step",
        f"{ASSUMPTION}: fixed latency of one ring step over NVLink (NCCL small-message all-reduce on 8 GPUs "
        "takes roughly 10-30 us over its 14 steps)",
    ),
    "static_power_fraction": Sourced(
        0.25,
        "fraction of TDP",
        f"{ASSUMPTION}: power drawn by a busy-but-idle GPU (clocks up, no math, no DRAM traffic) as a share of TDP; "
        "energy = sum over kernels of (static + (TDP - static) x max(compute, DRAM) utilization) x time",
    ),
    "smem_bytes_per_clk": Sourced(128.0, "B/clk/SM", f"{CUDA_GUIDE_SMEM_BW}: 32 banks x 4 B"),
    "simt_fraction": Sourced(
        0.6,
        "fraction of peak",
        f"{ASSUMPTION}: achievable fraction of FP32 CUDA-core peak for direct (non-tensor) convolutions such as "
        "depthwise, and for elementwise math",
    ),
}


def assumption(name: str) -> float:
    return MODEL_ASSUMPTIONS[name].value


# Published large-GEMM throughput over the datasheet dense tensor peak: where a GPU has one, a calibration starts
# its ``compute_fraction`` there instead of the generic assumption, so a fit whose rows never reach the compute
# roof (every compute-bound shape held out) falls back to a measured figure of that GPU, not a guess.
PUBLISHED_GEMM_FRACTION: dict[str, Sourced] = {
    "a100_80gb": Sourced(
        297.0 / 312.0,
        "fraction of dense FP16 tensor peak",
        "github.com/NVIDIA/cutlass/discussions/241: cuBLAS (CUDA 11.3), FP16 8192 x 8192 x 8192 on A100 SXM4 "
        "40GB in 3.71 ms = 297 TFLOP/s (CUTLASS 295-298) of the 312 TFLOPS dense peak; the 80GB part has the "
        "same 108 SMs, 1410 MHz boost clock and tensor peak",
    ),
}


# --------------------------------------------------------------------------------------------------
# SOURCES file
# --------------------------------------------------------------------------------------------------
def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def sources_markdown() -> str:
    """Every GPU number and model assumption with its source, as Markdown tables."""
    lines = [
        "# Sources of the GPU catalog",
        "",
        "Generated by `python -m hwmodels.catalogs.gpu_tuning` from `hwmodels/catalogs/gpu.py` and",
        "`hwmodels/data/gpu_calibration.json`; do not edit by hand.",
        "Throughputs are dense (no 2:4 sparsity); floating point at FP32 accumulate.",
        "",
    ]
    for spec in GPUS.values():
        lines += [f"## {spec.name} — {spec.display}", "", "| field | value | unit | source |", "|---|---|---|---|"]
        for field_name, value in spec.rows():
            lines.append(f"| {field_name} | {value.value:g} | {value.unit} | {_md_cell(value.source)} |")
        if spec.fp8_tflops is None:
            lines.append("| fp8_tflops | — | TFLOPS | no FP8 tensor cores on this architecture |")
        lines.append("")
    lines += ["## NVLink (per GPU, one direction)", "", "| gpu | value | unit | source |", "|---|---|---|---|"]
    for gpu, value in NVLINK_GBPS.items():
        lines.append(f"| {gpu} | {value.value:g} | {value.unit} | {_md_cell(value.source)} |")
    lines += ["", "## Multi-GPU nodes (`baselines: [dgx_h100]`)", ""]
    lines += ["| node | gpu | field | value | unit | source |", "|---|---|---|---|---|---|"]
    for node in NODES.values():
        for label, value in (("gpus", node.gpus), ("nvlink_gbps", node.nvlink_gbps)):
            lines.append(
                f"| {node.name} | {node.gpu} | {label} | {value.value:g} | {value.unit} | {_md_cell(value.source)} |"
            )
    lines += ["", "## GPU model assumptions", "", "| name | value | unit | source |", "|---|---|---|---|"]
    for name, value in MODEL_ASSUMPTIONS.items():
        lines.append(f"| {name} | {value.value:g} | {value.unit} | {_md_cell(value.source)} |")
    lines += ["", "## Published large-GEMM throughput (a calibration's starting compute_fraction)", ""]
    lines += ["| gpu | value | unit | source |", "|---|---|---|---|"]
    for gpu, value in PUBLISHED_GEMM_FRACTION.items():
        lines.append(f"| {gpu} | {value.value:.3f} | {value.unit} | {_md_cell(value.source)} |")
    return "\n".join(lines) + "\n"
