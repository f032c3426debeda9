"""The GPU kernel cost formulas: one kernel's time and traffic on a GpuArch.

:func:`gemm_cost` and :func:`memory_kernel_cost` are the single cost formulas: ``mappers.gpu`` queries them to
pick a threadblock tile and ``hwmodels.gpu.model`` evaluates the chosen mapping with the same functions, so the
mapper's choice and the reported time agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwmodels.catalogs.gpu import assumption
from templates.gpu import GpuArch

STAGES = 2  # operand tiles double-buffered in shared memory (the minimum that overlaps load and math)
ACCUMULATOR_BYTES = 4  # FP32 / INT32 accumulators, held in registers
ACCUMULATOR_REGISTER_SHARE = 0.5  # at most half the register file holds one block's accumulators


@dataclass(frozen=True)
class Gemm:
    """C[M x N] = A[M x K] @ B[K x N], ``count`` independent times (groups or batched matmul)."""

    M: int
    N: int
    K: int
    count: int

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K * self.count


@dataclass(frozen=True)
class Tile:
    bm: int
    bn: int
    bk: int
    split_k: int = 1


@dataclass(frozen=True)
class KernelCost:
    """One kernel's time and traffic. ``seconds`` = launch + max(compute, DRAM, L2)."""

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

    @property
    def bound(self) -> str:
        parts = {"compute": self.compute_s, "dram": self.dram_s, "l2": self.l2_s}
        return max(parts, key=lambda part: parts[part])


def tile_fits(tile: Tile, arch: GpuArch) -> bool:
    """Shared memory holds STAGES copies of the A and B tiles; registers hold the FP32 accumulators."""
    eb = arch.elem_bytes
    smem = STAGES * (tile.bm + tile.bn) * tile.bk * eb
    regs = tile.bm * tile.bn * ACCUMULATOR_BYTES
    return smem <= arch.smem_kib_per_sm * 1024 and regs <= ACCUMULATOR_REGISTER_SHARE * arch.regs_kib_per_sm * 1024


def tile_efficiency(tile: Tile, arch: GpuArch) -> float:
    """Share of tensor peak a tile's main loop can reach when its operands are fed from shared memory.

    Per k-step the tile does 2*BM*BN*BK operations on (BM+BN)*BK elements read from shared memory; the SM
    needs ``flops_per_clk / smem_bytes_per_clk`` operations per byte to keep the tensor cores busy, so
    thin tiles (GPPerf's up-to-3.2x tile effect) are shared-memory bound.
    """
    eb = arch.elem_bytes
    per_byte = 2.0 * tile.bm * tile.bn / ((tile.bm + tile.bn) * eb)
    needed = arch.flops_per_clk_per_sm / assumption("smem_bytes_per_clk")
    return min(1.0, per_byte / needed)


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

    Blocks are spread round-robin over the SMs, so the busiest SM runs ceil(blocks / SMs) tiles (wave
    quantization); each tile runs at the SM's share of peak times the achievable fraction and the tile's
    shared-memory efficiency. DRAM moves each operand once (tile rasterization keeps re-reads in L2,
    an assumption); L2 serves every block its A and B panels, and split-K partial sums.
    """
    eb = arch.elem_bytes
    m_tiles = math.ceil(gemm.M / tile.bm)
    n_tiles = math.ceil(gemm.N / tile.bn)
    k_chunk = math.ceil(gemm.K / tile.split_k)
    k_iters = math.ceil(k_chunk / tile.bk)
    blocks = m_tiles * n_tiles * tile.split_k * gemm.count
    per_sm = math.ceil(blocks / arch.sms)
    tile_ops = 2.0 * tile.bm * tile.bn * tile.bk * k_iters
    efficiency = tile_efficiency(tile, arch)
    sm_rate = arch.flops_per_clk_per_sm * arch.clock_mhz * 1e6 * arch.compute_fraction * efficiency
    compute_s = per_sm * tile_ops / sm_rate
    a_total = gemm.M * gemm.K * eb * gemm.count
    b_total = gemm.K * gemm.N * eb * gemm.count
    c_total = gemm.M * gemm.N * eb * gemm.count
    partials = 2.0 * tile.split_k * gemm.M * gemm.N * ACCUMULATOR_BYTES * gemm.count if tile.split_k > 1 else 0.0
    l2_bytes = a_total * n_tiles + b_total * m_tiles + c_total + partials + extra_read_bytes
    reads = a_dram_bytes + b_dram_bytes + extra_read_bytes
    bandwidth = arch.bytes_per_s
    dram_s = (reads + c_dram_bytes) / (bandwidth * arch.bandwidth_fraction)
    l2_s = l2_bytes / (bandwidth * assumption("l2_bandwidth_ratio"))
    launch_s = arch.launch_us * 1e-6
    return KernelCost(
        seconds=launch_s + max(compute_s, dram_s, l2_s),
        compute_s=compute_s,
        dram_s=dram_s,
        l2_s=l2_s,
        launch_s=launch_s,
        flops=float(gemm.flops),
        issued_flops=float(blocks * tile_ops),
        dram_read_bytes=reads,
        dram_write_bytes=c_dram_bytes,
        l2_bytes=l2_bytes,
        blocks=blocks,
        waves=blocks / arch.sms,
        tile_efficiency=efficiency,
    )


def memory_kernel_cost(
    arch: GpuArch, *, flops: float, dram_read_bytes: float, dram_write_bytes: float, l2_bytes: float
) -> KernelCost:
    """A kernel on the CUDA cores: elementwise, pooling, softmax, layernorm, direct conv, append."""
    bandwidth = arch.bytes_per_s
    compute_s = flops / (arch.fp32_tflops * 1e12 * assumption("simt_fraction"))
    dram_s = (dram_read_bytes + dram_write_bytes) / (bandwidth * arch.bandwidth_fraction)
    l2_s = l2_bytes / (bandwidth * assumption("l2_bandwidth_ratio"))
    launch_s = arch.launch_us * 1e-6
    return KernelCost(
        seconds=launch_s + max(compute_s, dram_s, l2_s),
        compute_s=compute_s,
        dram_s=dram_s,
        l2_s=l2_s,
        launch_s=launch_s,
        flops=flops,
        issued_flops=flops,
        dram_read_bytes=dram_read_bytes,
        dram_write_bytes=dram_write_bytes,
        l2_bytes=l2_bytes,
    )
