"""Analytical resource and latency model of hls4ml-style FPGA designs: DSP, LUT, FF, BRAM, latency, interval.

Per compute layer engine (the mapper fixed its legal ReuseFactor, multiplier count and cycles):

- DSP = multipliers x DSP slices per multiplication. A multiplication whose narrower operand has at most
  ``LUT_MULT_MAX_BITS`` bits is built from LUTs (0 DSP); otherwise it takes ceil(a/A) x ceil(b/B) slices for the
  part's A x B multiplier (27 x 18 on DSP48E2). On wa-hls4ml this is exact for 8..16-bit weights x 16-bit data.
- BRAM (18 Kb blocks) = the Resource strategy's index ROM (hls4ml's ``outidx`` table, RF deep, used when
  RF > n_in and RF % n_in == 0) + the weight ROM when its word (multipliers x weight bits) is wider than
  ``WEIGHT_BRAM_MIN_WORD_BITS`` (narrower ROMs land in LUTs), each with a calibrated scale.
- LUT and FF are linear in physically motivated per-layer features (input register/mux bits, accumulator bits,
  LUT-multiplier bits, DSP-multiplier count, LUT-ROM weight bits, log2 RF, a per-layer constant) with
  coefficients fitted by least squares on the calibration half of the wa-hls4ml rows
  (``benchmarks/fpga_wa_hls4ml.py --fit`` prints them; the other half is the test set).

Shared (sequential) engines, activations, pooling, softmax and io_stream FIFOs use engineering estimates that no
reference data checks yet; their constants say so. The design's latency is the sum of its layers' latencies
plus ``MODEL_OVERHEAD_CYCLES``; its interval is the slowest stage (io_stream, or io_parallel with only
Latency-strategy layers) or, for io_parallel designs with Resource layers (which HLS does not overlap, as the
reference data shows), the latency itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwmodels.base import LayerMetrics, Metrics
from hwmodels.catalogs.fpga import FpgaPart, get_part
from hwmodels.catalogs.tech import Sourced
from mappers.base import Mapping
from mappers.fpga import ComputePlan, EnginePlan, describe, stream_positions
from templates.fpga_dataflow import FpgaArch

WA = "wa-hls4ml Vivado HLS 2023.2 results (arXiv 2511.05615), calibration half of ../shared/data/wa-hls4ml"
ESTIMATE = "engineering estimate (not validated against synthesis)"

LUT_MULT_MAX_BITS = Sourced(
    6.0, "bits", f"{WA}: 6-bit weights x 16-bit data mapped to LUTs in 99% of rows, 8-bit weights to 1 DSP each"
)
MODEL_OVERHEAD_CYCLES = Sourced(1.0, "cycles", f"{WA}: latency = sum of layer RFs + 1 per layer + 1 in 98% of rows")
WEIGHT_BRAM_MIN_WORD_BITS = Sourced(128.0, "bits", f"{WA}: best split of weight ROMs between LUTs and BRAM")
INDEX_ROM_BRAM_SCALE = Sourced(0.5, "x BRAM18K", f"{WA}: HLS reports the RF-deep index ROM at half a block each")
WEIGHT_BRAM_MIN_DEPTH = Sourced(
    128.0, "words", f"{ESTIMATE}: shallower ROMs go to LUTRAM; the reference rows all have RF >= 128 deep ROMs"
)
WEIGHT_ROM_BRAM_SCALE = Sourced(2.89, "x BRAM18K", f"{WA}: least-squares scale of the wide weight ROM's blocks")

# LUT and FF coefficients per feature (see ``layer_features``), fitted on the calibration half.
LUT_COEFFICIENTS: dict[str, float] = {
    "layer": 0.0,
    "in_bits": 1.0557,
    "acc_bits": 5.4497,
    "lut_mult_bits": 1.8682,
    "dsp_mults": 124.4354,
    "rom_bits": 0.0312,
    "log2_rf": 0.0,
}
FF_COEFFICIENTS: dict[str, float] = {
    "layer": 0.0,
    "in_bits": 2.1326,
    "acc_bits": 2.8127,
    "lut_mult_bits": 1.6989,
    "dsp_mults": 56.874,
    "rom_bits": 0.0094,
    "log2_rf": 0.0,
}
COEFFICIENT_SOURCE = f"{WA}: non-negative least squares (benchmarks/fpga_wa_hls4ml.py --fit)"

# Estimates for what the reference data does not cover.
ACTIVATION_LUT_PER_BIT = Sourced(0.5, "LUT/bit", f"{ESTIMATE}: a compare-and-select per output bit, two per LUT6")
ACTIVATION_FF_PER_BIT = Sourced(1.0, "FF/bit", f"{ESTIMATE}: one output register per bit")
POOL_LUT_PER_BIT = Sourced(1.0, "LUT/bit", f"{ESTIMATE}: one comparator bit per pooled input bit")
SOFTMAX_TABLE_BRAM = Sourced(
    2.0, "BRAM18K", "hls4ml 1.3 softmax defaults: exp and inverse tables of 1024 x 18-bit entries, one block each"
)
SOFTMAX_LUT_PER_BIT = Sourced(4.0, "LUT/bit", f"{ESTIMATE}: adder tree, max and multiply per element bit")
SHARED_MUX_LUT_PER_BIT = Sourced(
    0.25, "LUT/bit", f"{ESTIMATE}: a 4:1 mux per LUT6 selecting each member's operands into the shared engine"
)
FIFO_SRL_MAX_DEPTH = Sourced(32.0, "words", "AMD UG901: SRL-based FIFOs up to 32 deep per SRLC32E; deeper go to BRAM")
BRAM18_SHAPES = ((1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512))  # UG573 RAMB18E2 aspect ratios


def bram18_blocks(depth: int, width: int) -> int:
    """18 Kb blocks for a depth x width memory, using the best RAMB18 aspect ratio (AMD UG573)."""
    if depth <= 0 or width <= 0:
        return 0
    return min(math.ceil(width / w) * math.ceil(depth / d) for w, d in BRAM18_SHAPES)


def dsp_per_mult(a_bits: int, b_bits: int, part: FpgaPart) -> int:
    """DSP slices for one a x b multiplication on ``part`` (0 when HLS builds it from LUTs)."""
    wide, narrow = max(a_bits, b_bits), min(a_bits, b_bits)
    if narrow <= LUT_MULT_MAX_BITS.value:
        return 0
    return math.ceil(wide / part.dsp_a_bits.value) * math.ceil(narrow / part.dsp_b_bits.value)


@dataclass(frozen=True)
class EngineResources:
    dsp: float
    lut: float
    ff: float
    bram: float


def weights_in_bram(mults: int, reuse_factor: int, weight_bits: int, strategy: str) -> bool:
    """Whether a Resource layer's weight ROM (RF deep, mults x weight bits wide) is built from block RAM."""
    return (
        strategy == "resource"
        and mults * weight_bits > WEIGHT_BRAM_MIN_WORD_BITS.value
        and reuse_factor >= WEIGHT_BRAM_MIN_DEPTH.value
    )


def layer_features(
    n_in: int,
    n_out: int,
    mults: int,
    reuse_factor: int,
    weight_bits: int,
    data_bits: int,
    accum_bits: int,
    strategy: str,
    part: FpgaPart,
) -> dict[str, float]:
    """The LUT/FF features of one compute engine (names as in LUT_COEFFICIENTS)."""
    lut_mult = dsp_per_mult(weight_bits, data_bits, part) == 0
    rom_bits = 0.0
    if strategy == "resource" and not weights_in_bram(mults, reuse_factor, weight_bits, strategy):
        rom_bits = float(n_in * n_out * weight_bits)
    return {
        "layer": 1.0,
        "in_bits": float(n_in * data_bits),
        "acc_bits": float(n_out * accum_bits),
        "lut_mult_bits": float(mults * weight_bits * data_bits) if lut_mult else 0.0,
        "dsp_mults": 0.0 if lut_mult else float(mults),
        "rom_bits": rom_bits,
        "log2_rf": math.log2(reuse_factor),
    }


def engine_bram(n_in: int, n_out: int, mults: int, reuse_factor: int, weight_bits: int, strategy: str) -> float:
    if strategy != "resource":
        return 0.0
    bram = 0.0
    if reuse_factor > n_in and reuse_factor % n_in == 0:
        bram += INDEX_ROM_BRAM_SCALE.value * bram18_blocks(reuse_factor, math.ceil(math.log2(n_out + 1)))
    if weights_in_bram(mults, reuse_factor, weight_bits, strategy):
        bram += WEIGHT_ROM_BRAM_SCALE.value * bram18_blocks(reuse_factor, mults * weight_bits)
    return bram


def engine_resources(
    n_in: int,
    n_out: int,
    mults: int,
    reuse_factor: int,
    weight_bits: int,
    data_bits: int,
    accum_bits: int,
    strategy: str,
    part: FpgaPart,
) -> EngineResources:
    features = layer_features(n_in, n_out, mults, reuse_factor, weight_bits, data_bits, accum_bits, strategy, part)
    return EngineResources(
        dsp=float(mults * dsp_per_mult(weight_bits, data_bits, part)),
        lut=max(0.0, sum(LUT_COEFFICIENTS[k] * v for k, v in features.items())),
        ff=max(0.0, sum(FF_COEFFICIENTS[k] * v for k, v in features.items())),
        bram=engine_bram(n_in, n_out, mults, reuse_factor, weight_bits, strategy),
    )


class FpgaDataflowModel:
    """Metrics of an hls4ml-style design from the mapper's per-layer plans."""

    name = "fpga_dataflow"

    def evaluate(self, mapping: Mapping, arch: FpgaArch) -> Metrics:
        part = get_part(arch.part)
        graph = mapping.graph
        engine: EnginePlan = mapping.solver["engine"]
        layers: list[LayerMetrics] = []
        totals = {"dsp": 0.0, "lut": 0.0, "ff": 0.0, "bram": 0.0}
        latency = MODEL_OVERHEAD_CYCLES.value
        stages: list[float] = []
        resource_layers = False
        data_bits = arch.precision.width
        shared_plans: list[ComputePlan] = []
        for op in graph.ops:
            om = mapping.ops[op.name]
            plan: ComputePlan | None = om.extra.get("plan")
            res = EngineResources(0.0, 0.0, 0.0, 0.0)
            if plan is not None:
                cycles, interval = plan.cycles, plan.interval
                if plan.engine == "own":
                    res = engine_resources(
                        plan.shape.n_in,
                        plan.shape.n_out,
                        plan.mults,
                        plan.reuse_factor,
                        plan.knobs.weight.width,
                        data_bits,
                        plan.knobs.accum.width,
                        plan.knobs.strategy,
                        part,
                    )
                    stages.append(interval)
                    resource_layers |= plan.knobs.strategy == "resource"
                else:
                    shared_plans.append(plan)
                    resource_layers |= plan.knobs.strategy == "resource"
                res = _add(res, _stream_buffers(op, graph, arch, plan.knobs.result.width, plan))
                data_bits = plan.knobs.result.width
                extra = {**describe(plan), **res.__dict__}
            else:
                cycles, interval = om.extra["cycles"], om.extra["interval"]
                res = _add(_aux_resources(op, graph, arch, data_bits), _stream_buffers(op, graph, arch, data_bits))
                stages.append(interval)
                extra = {"layer_index": om.extra["group"], **res.__dict__}
            latency += cycles
            for k in totals:
                totals[k] += getattr(res, k)
            layers.append(
                LayerMetrics(
                    layer=op.name,
                    kind=op.kind.value,
                    cycles=float(cycles),
                    compute_cycles=float(interval),
                    stall_cycles=0.0,
                    macs=op.macs,
                    utilization=1.0,
                    dram_read_bytes=0.0,
                    dram_write_bytes=0.0,
                    extra=extra,
                )
            )
        if shared_plans:
            shared = _shared_engine_resources(shared_plans, engine, arch, part)
            for k in totals:
                totals[k] += getattr(shared, k)
            stages.append(engine.occupancy)
        pipelined = arch.io_type == "io_stream" or not resource_layers
        interval = max(stages) if pipelined else latency
        samples = _samples(graph)
        latency_cycles = latency + (samples - 1) * interval
        capacity = part.capacity()
        utils = {f"{k}_util": totals[k] / capacity[k] if capacity[k] else math.inf for k in totals}
        values = {
            **totals,
            "latency_cycles": latency_cycles,
            "ii_cycles": interval,
            "latency_ms": latency_cycles * arch.clock_period_ns * 1e-6,
            "throughput_ips": 1e9 / (interval * arch.clock_period_ns) * samples,
            **utils,
            "fpga_util": max(utils.values()),
        }
        notes = list(mapping.solver.get("notes", []))
        return Metrics(
            values=values,
            layers=layers,
            info={
                "exact": True,
                "part": part.hls_part,
                "notes": notes,
                "shared_engine": {"members": engine.members, "mults": engine.mults, "occupancy": engine.occupancy},
            },
        )


def _add(a: EngineResources, b: EngineResources) -> EngineResources:
    return EngineResources(a.dsp + b.dsp, a.lut + b.lut, a.ff + b.ff, a.bram + b.bram)


def _samples(graph) -> int:
    batch = graph.meta.get("batch", 1)
    return int(batch) if isinstance(batch, int) and batch > 0 else 1


def _aux_resources(op, graph, arch: FpgaArch, data_bits: int) -> EngineResources:
    """Activation, pooling and softmax ops: parallel over the tensor (io_parallel) or one pixel (io_stream)."""
    shape = graph.tensors[op.outputs[0]].shape
    numel = math.prod(shape)
    lanes = numel if arch.io_type == "io_parallel" else numel // max(1, stream_positions(shape))
    kind = op.kind.value
    if kind == "softmax":
        bits = lanes * data_bits
        return EngineResources(0.0, SOFTMAX_LUT_PER_BIT.value * bits, 2.0 * bits, SOFTMAX_TABLE_BRAM.value)
    if kind == "pool":
        window = op.dims["R"] * op.dims["S"]
        bits = lanes * data_bits * window
        return EngineResources(0.0, POOL_LUT_PER_BIT.value * bits, ACTIVATION_FF_PER_BIT.value * lanes * data_bits, 0.0)
    bits = lanes * data_bits
    return EngineResources(0.0, ACTIVATION_LUT_PER_BIT.value * bits, ACTIVATION_FF_PER_BIT.value * bits, 0.0)


def _stream_buffers(op, graph, arch: FpgaArch, data_bits: int, plan: ComputePlan | None = None) -> EngineResources:
    """io_stream only: the output FIFO (depth = pixels, as hls4ml sizes it) and a conv's line buffer."""
    if arch.io_type != "io_stream":
        return EngineResources(0.0, 0.0, 0.0, 0.0)
    shape = graph.tensors[op.outputs[0]].shape
    depth = stream_positions(shape)
    width = (math.prod(shape) // max(1, depth)) * data_bits
    lut = bram = 0.0
    if depth > FIFO_SRL_MAX_DEPTH.value:
        bram += bram18_blocks(depth, width)
    else:
        lut += width
    if plan is not None and plan.kind == "conv" and plan.shape.kernel[0] > 1:
        rows = plan.shape.kernel[0] - 1
        bram += rows * bram18_blocks(plan.shape.in_width, plan.shape.in_channels * data_bits)
    return EngineResources(0.0, lut, 0.0, bram)


def _shared_engine_resources(plans: list[ComputePlan], engine: EnginePlan, arch: FpgaArch, part: FpgaPart):
    """One engine sized for the largest member, holding every member's weights, plus operand muxes."""
    n_in = max(p.shape.n_in for p in plans)
    n_out = max(p.shape.n_out for p in plans)
    weight_bits = max(p.knobs.weight.width for p in plans)
    accum_bits = max(p.knobs.accum.width for p in plans)
    data_bits = arch.precision.width
    strategy = "resource" if any(p.knobs.strategy == "resource" for p in plans) else "latency"
    rf = max(math.ceil(p.shape.n_in * p.shape.n_out / engine.mults) for p in plans)
    core = engine_resources(n_in, n_out, engine.mults, rf, weight_bits, data_bits, accum_bits, "latency", part)
    lut, bram = core.lut, 0.0  # the core priced without weight storage; every member's weights are added below
    for p in plans[1:]:
        lut += SHARED_MUX_LUT_PER_BIT.value * (p.shape.n_in * data_bits + p.shape.n_out * accum_bits)
    for p in plans:
        member_rf = math.ceil(p.shape.n_in * p.shape.n_out / engine.mults)
        w = p.knobs.weight.width
        bram += engine_bram(p.shape.n_in, p.shape.n_out, engine.mults, member_rf, w, strategy)
        if strategy == "resource" and not weights_in_bram(engine.mults, member_rf, w, strategy):
            lut += LUT_COEFFICIENTS["rom_bits"] * p.shape.n_in * p.shape.n_out * w
    return EngineResources(core.dsp, lut, core.ff, max(bram, 0.0))
