"""The GPU performance model: a mapped graph on a GpuArch -> latency, energy, utilization, traffic.

Each kernel costs launch + max(compute, DRAM, L2) (``hwmodels.gpu.cost.gemm_cost`` / ``memory_kernel_cost``):
compute from the threadblock tile, wave quantization over the SMs and the achievable fraction of the dense
tensor peak (a conv with a filter window at the GPU's fitted ``conv_efficiency`` of that, plus ``conv_fixed_us``:
``Gemm.conv``, set by ``mappers.gpu.lower_gemm``; 1x1 convs are plain GEMMs, depthwise convs CUDA-core
kernels); memory-bound kernels (elementwise, softmax, layernorm, pooling, decode attention, KV append)
on bandwidth. Kernels run back to back (one stream, no overlap between kernels).

Energy is an **estimate** from TDP and utilization, not a measurement: each kernel draws
``static + (TDP - static) * max(compute utilization, DRAM utilization)`` for its duration, with the static
share an assumption in ``hwmodels.catalogs.gpu.MODEL_ASSUMPTIONS``.

``hwmodels.gpu.calibrate`` fits the model's tuning constants to measured kernels; a GPU with fitted constants
(``hwmodels/data/gpu_calibration.json``) uses them, ``info['calibration']`` says which (or catalog-only).

A node of ``gpus`` GPUs (tensor parallel, ``mappers.gpu``) runs each kernel on its 1/n share; a row-parallel
GEMM is followed by a ring all-reduce of its output over NVLink and a gather of a split tensor by an
all-gather (``hwmodels.gpu.cost.allreduce_seconds``), not overlapped with compute. Every GPU draws the same
power, so the node's energy is n times one GPU's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dse.graph import Graph
from hwmodels.base import LayerMetrics, Metrics, design_figures, graph_batch
from hwmodels.catalogs.gpu import assumption
from hwmodels.columns import is_column, largest, rate
from hwmodels.gpu.calibrate_board import board_power_source, with_board_power
from hwmodels.gpu.cost import (
    KernelCost,
    Tile,
    activity,
    allgather_seconds,
    allreduce_seconds,
    gemm_cost,
    memory_kernel_cost,
)
from mappers.base import Mapping
from mappers.payloads import GpuKernel
from templates.gpu import GpuArch

ENERGY_NOTE = "GPU energy is an estimate from TDP and utilization (static share assumed), not a measurement"
ENERGY_MEASURED_NOTE = "GPU energy is from board power measured per kernel kind (NVML) and the kernels' utilization"


def kernel_cost(mapping: Mapping, name: str, arch: GpuArch) -> KernelCost | None:
    """The cost of the kernel rooted at op ``name``; None for an op fused into another kernel's epilogue."""
    kernel = mapping.ops[name].payload_as(GpuKernel)
    if kernel.fused_into is not None:
        return None
    if kernel.traffic is None:
        raise TypeError(f"op {name!r}: its GPU kernel carries no traffic")
    if kernel.unit == "tensor" and kernel.gemm is not None and kernel.tile is not None:
        return tile_cost(kernel, kernel.tile, arch)
    return memory_cost(kernel, arch)


def tile_cost(kernel: GpuKernel, tile: Tile, arch: GpuArch) -> KernelCost:
    """A tensor-core kernel's cost with threadblock ``tile``: its GEMM and operand traffic as the mapper left them
    (the mapper's ``best_tile`` costs its candidates with the same arguments)."""
    assert kernel.gemm is not None and kernel.traffic is not None
    return gemm_cost(
        kernel.gemm,
        tile,
        arch,
        a_dram_bytes=kernel.a_dram,
        b_dram_bytes=kernel.b_dram,
        c_dram_bytes=kernel.traffic.dram_write,
        extra_read_bytes=kernel.extra_dram,
    )


def memory_cost(kernel: GpuKernel, arch: GpuArch) -> KernelCost:
    """A CUDA-core kernel's cost (elementwise, softmax, layernorm, pooling, direct conv)."""
    traffic = kernel.traffic
    assert traffic is not None
    return memory_kernel_cost(
        arch,
        flops=float(kernel.flops),
        dram_read_bytes=traffic.dram_read,
        dram_write_bytes=traffic.dram_write,
        l2_bytes=traffic.l2,
        kind=kernel.kernel_kind,
        row_bytes=float(kernel.row_bytes),
    )


def collective_seconds(mapping: Mapping, name: str, arch: GpuArch) -> float:
    """NVLink time around the kernel rooted at ``name``: all-reduce after a row-parallel GEMM, all-gather
    of split inputs before an op that needs them whole (0 on one GPU)."""
    gpus = int(getattr(arch, "gpus", 1))
    if gpus <= 1:
        return 0.0
    kernel = mapping.ops[name].payload_as(GpuKernel)
    link = arch.nvlink_gbps * 1e9
    return allreduce_seconds(kernel.allreduce_bytes, gpus, link) + allgather_seconds(kernel.allgather_bytes, gpus, link)


def kernel_power_w(cost: KernelCost, arch: GpuArch, peak_flops: float) -> tuple[float, float, float]:
    """(static, compute, memory) watts of a kernel: a static part plus a dynamic part by utilization, both
    measured for the kernel's kind when the GPU's calibration has board power (``GpuTuning.power``), else
    the catalog estimate (static share of TDP, the rest of TDP by utilization)."""
    measured = arch.tuning.power_of(cost.kind)
    static = measured.static_w if measured else assumption("static_power_fraction") * arch.tdp_w
    if not is_column(cost.seconds) and cost.seconds <= 0:
        return static, 0.0, 0.0
    u_compute, u_memory = activity(  # zero for a column's designs whose kernel takes no time
        cost.flops, cost.dram_read_bytes + cost.dram_write_bytes, cost.seconds, arch, peak_flops
    )
    dynamic = (measured.dynamic_w if measured else arch.tdp_w - static) * largest([u_compute, u_memory])
    share = rate(u_compute, u_compute + u_memory)
    return static, dynamic * share, dynamic * (1 - share)


@dataclass(frozen=True)
class KernelFigures:
    """One kernel's share of a design's figures: its time (collectives included), energy per part (pJ), useful
    MACs, utilization of the GEMM peak and DRAM bytes of the whole node. Numbers, or columns over designs."""

    seconds: Any
    energy_pj: dict[str, Any]
    macs: int
    utilization: Any
    dram_bytes: Any


def kernel_figures(cost: KernelCost, kernel: GpuKernel, macs: int, arch: GpuArch, comm_s: Any) -> KernelFigures:
    """What ``GpuModel.evaluate`` adds up per kernel (``macs``: its op's), for one design or a column of them
    (``hwmodels.gpu.arrays``)."""
    tensor = kernel.unit == "tensor"
    peak = arch.peak_flops * cost.math_speedup if tensor else arch.fp32_tflops * 1e12
    static_w, compute_w, memory_w = kernel_power_w(cost, arch, peak)
    seconds = cost.seconds + comm_s
    gpus = max(1, int(getattr(arch, "gpus", 1)))
    energy = {  # every GPU of the node draws the same; links idle at static power
        "static": gpus * static_w * seconds * 1e12,
        "compute": gpus * compute_w * cost.seconds * 1e12,
        "memory": gpus * memory_w * cost.seconds * 1e12,
    }
    util = rate(cost.flops, seconds * peak) if tensor else 0.0
    dram = gpus * (cost.dram_read_bytes + cost.dram_write_bytes)
    return KernelFigures(seconds, energy, macs if tensor else 0, util, dram)


def design_values(
    seconds: Any,
    energy_pj: dict[str, Any],
    weighted_util: Any,
    useful_macs: int,
    dram_bytes: Any,
    graph: Graph,
    arch: GpuArch,
) -> dict[str, Any]:
    """A design's values from its kernels' sums (``kernel_figures``): for one design or columns of them."""
    design = design_figures(
        seconds=seconds, energy_pj=sum(energy_pj.values()), ops=graph.flops, batch=graph_batch(graph)
    )
    values = {
        "latency_cycles": seconds * (arch.clock_mhz * 1e6),
        "latency_ms": design.latency_ms,
        "throughput_ips": design.throughput_ips,
        "energy_mj": design.energy_mj,
        "edp": design.edp,
        "power_w": design.power_w,
        "utilization": weighted_util / useful_macs if useful_macs else 0.0,
        "dram_mb": dram_bytes / 1e6,
        "tops_per_w": design.tops_per_w,
    }
    if not math.isnan(arch.die_mm2):
        values["area_mm2"] = arch.die_mm2 * max(1, int(getattr(arch, "gpus", 1)))
    return values


class GpuModel:
    """Roofline-with-tiles latency and TDP-based energy for a GpuArch."""

    name = "gpu_roofline"

    def evaluate(self, mapping: Mapping, arch: GpuArch) -> Metrics:
        arch = with_board_power(arch)  # a GPU with a measured power CSV: its energy follows it
        clock_hz = arch.clock_mhz * 1e6
        layers: list[LayerMetrics] = []
        totals = {"static": 0.0, "compute": 0.0, "memory": 0.0}
        seconds_total = 0.0
        useful_macs = 0
        weighted_util = 0.0
        dram_bytes = 0.0
        kernels = 0
        for name in mapping.order:
            kernel = mapping.ops[name].payload_as(GpuKernel)
            op = mapping.graph.op(name)
            cost = kernel_cost(mapping, name, arch)
            if cost is None:
                layers.append(
                    LayerMetrics(
                        layer=name,
                        kind=op.kind.value,
                        cycles=0.0,
                        compute_cycles=0.0,
                        stall_cycles=0.0,
                        macs=0,
                        utilization=0.0,
                        dram_read_bytes=0.0,
                        dram_write_bytes=0.0,
                        energy_pj=0.0,
                        energy_breakdown_pj={k: 0.0 for k in totals},
                        extra={"unit": "epilogue", "fused_into": kernel.fused_into},
                    )
                )
                continue
            kernels += 1
            comm_s = collective_seconds(mapping, name, arch)
            figures = kernel_figures(cost, kernel, op.macs, arch, comm_s)
            breakdown, seconds, util = figures.energy_pj, figures.seconds, figures.utilization
            cycles = seconds * clock_hz
            compute_cycles = min(cost.compute_s, cost.seconds) * clock_hz
            extra: dict[str, Any] = {
                "unit": kernel.unit,
                "bound": cost.bound,
                "launch_s": cost.launch_s,
                "host_s": cost.host_s,
                "collective_s": comm_s,
                "shard": kernel.shard,
                "compute_s": cost.compute_s,
                "dram_s": cost.dram_s,
                "l2_s": cost.l2_s,
                "flops": cost.flops,
                "l2_bytes": cost.l2_bytes,
            }
            tile = kernel.tile
            if kernel.unit == "tensor" and tile is not None:
                extra.update(
                    tile=f"{tile.bm}x{tile.bn}x{tile.bk}" + (f"/split{tile.split_k}" if tile.split_k > 1 else ""),
                    blocks=cost.blocks,
                    waves=cost.waves,
                    tile_efficiency=cost.tile_efficiency,
                )
            if kernel.fused:
                extra["epilogue"] = ",".join(kernel.fused)
            layers.append(
                LayerMetrics(
                    layer=name,
                    kind=op.kind.value,
                    cycles=cycles,
                    compute_cycles=compute_cycles,
                    stall_cycles=cycles - compute_cycles,
                    macs=figures.macs,
                    utilization=util,
                    dram_read_bytes=cost.dram_read_bytes,
                    dram_write_bytes=cost.dram_write_bytes,
                    sram_read_bytes=cost.l2_bytes,
                    energy_pj=sum(breakdown.values()),
                    energy_breakdown_pj=breakdown,
                    extra=extra,
                )
            )
            for key, value in breakdown.items():
                totals[key] += value
            seconds_total += seconds
            useful_macs += figures.macs
            weighted_util += util * figures.macs
            dram_bytes += figures.dram_bytes
        values = design_values(seconds_total, totals, weighted_util, useful_macs, dram_bytes, mapping.graph, arch)
        info = {
            "mapper": mapping.mapper,
            "gpu": arch.gpu,
            "display": arch.display,
            "math": arch.math,
            "kernels": kernels,
            "fused_ops": mapping.solver.get("fused_ops", 0),
            "exact": True,
            "calibration": arch.calibration,
            "execution": arch.execution,
            "gpus": arch.gpus,
            "notes": [
                ENERGY_MEASURED_NOTE if arch.tuning.power else ENERGY_NOTE,
                *([f"board power: {board_power_source(arch.gpu)}"] if board_power_source(arch.gpu) else []),
                "elementwise ops after a GEMM run in its epilogue; softmax/layernorm are separate kernels",
                f"{kernels} kernels x {arch.launch_us:.3g} us device fixed cost ({arch.execution} execution)",
                f"tuning constants: {arch.calibration}",
            ],
        }
        return Metrics(values=values, energy_breakdown_pj=totals, layers=layers, info=info)
