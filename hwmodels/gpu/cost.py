"""The GPU kernel cost formulas: one kernel's time and traffic on a GpuArch.

:func:`gemm_cost` and :func:`memory_kernel_cost` are the single cost formulas: ``mappers.gpu`` queries them to
pick a threadblock tile and ``hwmodels.gpu.model`` evaluates the chosen mapping with the same functions, so the
mapper's choice and the reported time agree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dse.graph import OpSparsity
from hwmodels.catalogs.gpu import assumption
from hwmodels.catalogs.sparse import GPU_SPARSE_INDEX_BITS, GPU_SPARSE_PATTERN, GPU_SPARSE_TENSOR_SPEEDUP, fits_2_4
from hwmodels.columns import ceil, largest, rate, smallest, where
from templates.gpu import GpuArch

STAGES = 2  # operand tiles double-buffered in shared memory (the minimum that overlaps load and math)
ACCUMULATOR_BYTES = 4  # FP32 / INT32 accumulators, held in registers
ACCUMULATOR_REGISTER_SHARE = 0.5  # at most half the register file holds one block's accumulators
# Small-K inefficiency: a tile's main loop starts only once STAGES k-slices are in shared memory, so each tile
# pays STAGES k-iterations of fill beyond its ceil(K / BK) iterations (negligible for long K, a lot for K ~ BK).
PIPELINE_FILL_ITERS = STAGES
# cuBLAS's tensor-op kernels load operands 128 bits at a time: a row stride that is not a multiple of this many
# bytes sends the GEMM to slower kernels (cuBLAS documentation, tensor core usage: leading dimensions a multiple
# of 16 bytes; NVIDIA/cutlass#75: "most kernels targeting Tensor Cores require 128b aligned memory accesses")
ALIGNMENT_BYTES = 16


@dataclass(frozen=True)
class Gemm:
    """C[M x N] = A[M x K] @ B[K x N], ``count`` independent times (groups or batched matmul)."""

    M: int
    N: int
    K: int
    count: int
    sparse_2_4: bool = False  # B (the weights) is 2:4 sparse and runs on the sparse tensor cores
    # a convolution with a filter window (R*S > 1), run as implicit GEMM: its own efficiency and fixed cost
    # (``GpuTuning.conv_*``) and no split-K; a 1x1 conv is a plain GEMM
    conv: bool = False

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K * self.count


def sparse_gemm(gemm: Gemm, sparsity: OpSparsity, arch: GpuArch) -> Gemm:
    """``gemm`` marked for the 2:4 sparse tensor cores when the GPU has them on (``sparsity: 2:4``), runs the
    GEMM on tensor cores, and the op's weight pattern fits 2:4 (``fits_2_4``); unchanged otherwise."""
    if arch.sparsity != "2:4" or not arch.uses_tensor_cores or not sparsity.structured:
        return gemm
    return replace(gemm, sparse_2_4=fits_2_4(sparsity.n, sparsity.m))


def compressed_weight_fraction(elem_bytes: int) -> float:
    """Bytes of a 2:4-compressed weight over its dense bytes: half the values plus a 2-bit index per kept value."""
    n, m = GPU_SPARSE_PATTERN
    return n / m * (1.0 + GPU_SPARSE_INDEX_BITS.value / (8.0 * elem_bytes))


def math_speedup(gemm: Gemm) -> float:
    """Dense-equivalent throughput over the dense peak: 2 on the sparse tensor cores (datasheet figures)."""
    return GPU_SPARSE_TENSOR_SPEEDUP.value if gemm.sparse_2_4 else 1.0


@dataclass(frozen=True)
class Tile:
    bm: int
    bn: int
    bk: int
    split_k: int = 1


@dataclass(frozen=True)
class KernelCost:
    """One kernel's time and traffic. ``seconds`` = launch + max(compute, DRAM, L2) on the device, plus what
    the host's per-call cost adds in eager execution (``host_s``)."""

    seconds: float
    compute_s: float
    dram_s: float
    l2_s: float
    launch_s: float
    flops: float  # useful operations
    issued_flops: float  # including tile padding
    dram_read_bytes: float
    dram_write_bytes: float
    l2_bytes: float
    blocks: int = 0
    waves: float = 0.0
    tile_efficiency: float = 1.0
    host_s: float = 0.0
    math_speedup: float = 1.0  # 2 for a GEMM on the 2:4 sparse tensor cores
    kind: str = "gemm"  # the kernel kind (``GpuTuning.kernel``): which tuning and measured power it uses

    @property
    def bound(self) -> str:
        parts = {"compute": self.compute_s, "dram": self.dram_s, "l2": self.l2_s}
        return max(parts, key=lambda part: parts[part])


def aligned(gemm: Gemm, elem_bytes: int) -> bool:
    """Whether the reduction dimension's rows are a multiple of ``ALIGNMENT_BYTES``: K strides the rows of A
    (activations, row-major) and of a linear layer's weight (N x K), the operand tiles the main loop loads. An
    N off the alignment misaligns only the rows of C (and of a K x N weight), stored once per tile: not priced."""
    return (gemm.K * elem_bytes) % ALIGNMENT_BYTES == 0


def operand_load_share(gemm: Gemm, arch: GpuArch) -> float:
    """Share of the L2-to-SM operand rate a tensor-core GEMM reaches: ``misaligned_efficiency`` where a row
    stride is misaligned (the fallback kernels load operand tiles in 2- to 8-byte pieces, so feeding shared
    memory, not the math, bounds the main loop), 1 otherwise; a conv with a filter window has its own constants
    and a matrix-vector product (M = 1, e.g. a decode step's attention over an odd KV length) no tiles."""
    return arch.tuning.misaligned_efficiency if misaligned_tiles(gemm, arch) else 1.0


def misaligned_tiles(gemm: Gemm, arch: GpuArch) -> bool:
    """A tensor-core GEMM run as tiles (not a conv with a window, not a matrix-vector product: M = 1 runs gemv
    kernels) whose K rows are off the 16-byte alignment (``aligned``)."""
    return not (gemm.conv or gemm.M == 1 or not arch.uses_tensor_cores or aligned(gemm, arch.elem_bytes))


def tile_fits(tile: Tile, arch: GpuArch) -> bool:
    """Shared memory holds STAGES copies of the A and B tiles; registers hold the FP32 accumulators."""
    eb = arch.elem_bytes
    smem = STAGES * (tile.bm + tile.bn) * tile.bk * eb
    regs = tile.bm * tile.bn * ACCUMULATOR_BYTES
    return (smem <= arch.smem_kib_per_sm * 1024) & (regs <= ACCUMULATOR_REGISTER_SHARE * arch.regs_kib_per_sm * 1024)


def tile_efficiency(tile: Tile, arch: GpuArch, speedup: float = 1.0) -> float:
    """Share of tensor peak a tile's main loop can reach when its operands are fed from shared memory.

    Per k-step the tile does 2*BM*BN*BK operations on (BM+BN)*BK elements read from shared memory; the SM
    needs ``flops_per_clk / smem_bytes_per_clk`` operations per byte to keep the tensor cores busy, so
    thin tiles (GPPerf's up-to-3.2x tile effect) are shared-memory bound. On the sparse tensor cores
    (``speedup`` 2) the SM does twice the dense-equivalent operations per clock from a B tile compressed to
    ``compressed_weight_fraction`` of its bytes.
    """
    eb = arch.elem_bytes
    b_share = compressed_weight_fraction(eb) if speedup > 1.0 else 1.0
    per_byte = 2.0 * tile.bm * tile.bn / ((tile.bm + tile.bn * b_share) * eb)
    needed = speedup * arch.flops_per_clk_per_sm / assumption("smem_bytes_per_clk")
    return smallest([1.0, per_byte / needed])


def gemm_cost(
    gemm: Gemm,
    tile: Tile,
    arch: GpuArch,
    *,
    a_dram_bytes: float,
    b_dram_bytes: float,
    c_dram_bytes: float,
    extra_read_bytes: float = 0.0,
) -> KernelCost:
    """Time of one implicit-GEMM kernel with threadblock ``tile``.

    A convolution (``gemm.conv``) runs its main loop at ``conv_efficiency`` of the GEMM rate and adds
    ``conv_fixed_us`` of device time per call (both fitted; uncalibrated, the H100's fit, ``gpu_tuning``); a
    GEMM with a misaligned row stride streams its operand panels from L2 at ``misaligned_efficiency`` of the
    L2 rate (``operand_load_share``).

    Blocks are spread round-robin over the SMs, so the busiest SM runs ceil(blocks / SMs) tiles (wave
    quantization); each tile runs at the SM's share of peak times the achievable fraction and the tile's
    shared-memory efficiency. DRAM moves each operand once (tile rasterization keeps re-reads in L2,
    an assumption); L2 serves every block its A and B panels, and split-K partial sums.
    """
    eb = arch.elem_bytes
    m_tiles = ceil(gemm.M / tile.bm)
    n_tiles = ceil(gemm.N / tile.bn)
    k_chunk = ceil(gemm.K / tile.split_k)
    k_iters = ceil(k_chunk / tile.bk)
    blocks = m_tiles * n_tiles * tile.split_k * gemm.count
    per_sm = ceil(blocks / arch.sms)
    tile_ops = 2.0 * tile.bm * tile.bn * tile.bk * k_iters
    speedup = math_speedup(gemm)
    efficiency = tile_efficiency(tile, arch, speedup) * (arch.tuning.conv_efficiency if gemm.conv else 1.0)
    sm_rate = speedup * arch.flops_per_clk_per_sm * arch.clock_mhz * 1e6 * arch.compute_fraction * efficiency
    fill_ops = 2.0 * tile.bm * tile.bn * tile.bk * PIPELINE_FILL_ITERS
    compute_s = per_sm * (tile_ops + fill_ops) / sm_rate
    a_total = gemm.M * gemm.K * eb * gemm.count
    b_total = gemm.K * gemm.N * eb * gemm.count * (compressed_weight_fraction(eb) if gemm.sparse_2_4 else 1.0)
    c_total = gemm.M * gemm.N * eb * gemm.count
    partials = where(tile.split_k > 1, 2.0 * tile.split_k * gemm.M * gemm.N * ACCUMULATOR_BYTES * gemm.count, 0.0)
    l2_bytes = a_total * n_tiles + b_total * m_tiles + c_total + partials + extra_read_bytes
    reads = a_dram_bytes + b_dram_bytes + extra_read_bytes
    bandwidth = arch.bytes_per_s
    dram_s = (reads + c_dram_bytes) / (bandwidth * arch.bandwidth_fraction)
    l2_s = l2_bytes / (bandwidth * arch.tuning.l2_bandwidth_ratio * operand_load_share(gemm, arch))
    launch_s = (arch.launch_us + (arch.tuning.conv_fixed_us if gemm.conv else 0.0)) * 1e-6
    device_s = launch_s + largest([compute_s, dram_s, l2_s])
    seconds = call_seconds(device_s, arch, "gemm")
    return KernelCost(
        seconds=seconds,
        host_s=seconds - device_s,
        compute_s=compute_s,
        dram_s=dram_s,
        l2_s=l2_s,
        launch_s=launch_s,
        flops=float(gemm.flops),
        issued_flops=blocks * tile_ops,  # a float: tile_ops is
        dram_read_bytes=reads,
        dram_write_bytes=c_dram_bytes,
        l2_bytes=l2_bytes,
        blocks=blocks,
        waves=blocks / arch.sms,
        tile_efficiency=efficiency,
        math_speedup=speedup,
    )


def memory_kernel_cost(
    arch: GpuArch,
    *,
    flops: float,
    dram_read_bytes: float,
    dram_write_bytes: float,
    l2_bytes: float,
    kind: str = "elementwise",
    row_bytes: float = 0.0,
) -> KernelCost:
    """A kernel on the CUDA cores: elementwise, pooling, softmax, layernorm, direct conv, append.

    ``kind`` picks the kernel's tuning (its achievable bandwidth share, its host cost); a row-wise kernel
    (softmax, layernorm) whose rows are longer than ``long_row_bytes`` reads its input ``long_row_passes``
    more times.
    """
    tuning = arch.tuning.kernel(kind)
    bandwidth = arch.bytes_per_s
    passes = tuning.long_row_passes if row_bytes > arch.tuning.long_row_bytes else 0.0
    moved = dram_read_bytes * (1.0 + passes) + dram_write_bytes
    compute_s = flops / (arch.fp32_tflops * 1e12 * assumption("simt_fraction"))
    dram_s = moved / (bandwidth * tuning.bandwidth_fraction)
    l2_s = l2_bytes / (bandwidth * arch.tuning.l2_bandwidth_ratio)
    launch_s = arch.launch_us * 1e-6
    device_s = launch_s + largest([compute_s, dram_s, l2_s])
    seconds = call_seconds(device_s, arch, kind)
    return KernelCost(
        seconds=seconds,
        host_s=seconds - device_s,
        compute_s=compute_s,
        dram_s=dram_s,
        l2_s=l2_s,
        launch_s=launch_s,
        flops=flops,
        issued_flops=flops,
        dram_read_bytes=dram_read_bytes,
        dram_write_bytes=dram_write_bytes,
        l2_bytes=l2_bytes,
        kind=kind,
    )


def activity(flops: float, dram_bytes: float, seconds: float, arch: GpuArch, peak_flops: float) -> tuple[float, float]:
    """(compute, DRAM) utilization of a kernel that does ``flops`` and moves ``dram_bytes`` in ``seconds``: what
    its dynamic power scales with (``hwmodels.gpu.model.kernel_power_w``, ``hwmodels.gpu.calibrate.fit_power``)."""
    u_compute = smallest([1.0, rate(flops, seconds * peak_flops)])
    return u_compute, smallest([1.0, rate(dram_bytes, seconds * arch.bytes_per_s)])


def call_seconds(device_s: float, arch: GpuArch, kind: str) -> float:
    """Wall time of one call: the device time alone in graph execution; in eager execution the host's
    per-call cost, partly overlapped with the device work: (host^p + device^p)^(1/p)."""
    if arch.execution != "eager":
        return device_s
    host_s = arch.tuning.kernel(kind).host_us * 1e-6
    p = arch.tuning.overlap_exponent
    return (host_s**p + device_s**p) ** (1.0 / p)


def allreduce_seconds(nbytes: float, gpus: int, link_bytes_per_s: float) -> float:
    """Ring all-reduce of ``nbytes`` over ``gpus`` GPUs: 2(n-1) steps, each moving nbytes/n over one link
    direction: 2(n-1)/n * bytes / (link bandwidth x achievable share) + 2(n-1) x step latency."""
    if gpus <= 1 or nbytes <= 0:
        return 0.0
    steps = 2 * (gpus - 1)
    bandwidth = link_bytes_per_s * assumption("nvlink_fraction")
    return steps / gpus * nbytes / bandwidth + steps * assumption("allreduce_step_us") * 1e-6


def allgather_seconds(nbytes: float, gpus: int, link_bytes_per_s: float) -> float:
    """Ring all-gather of a tensor of ``nbytes`` (each GPU holds 1/n): n-1 steps of nbytes/n each."""
    if gpus <= 1 or nbytes <= 0:
        return 0.0
    steps = gpus - 1
    bandwidth = link_bytes_per_s * assumption("nvlink_fraction")
    return steps / gpus * nbytes / bandwidth + steps * assumption("allreduce_step_us") * 1e-6
