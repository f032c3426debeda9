"""Resource and cycle costs of hls4ml-style FPGA engines: DSP, LUT, FF, BRAM, latency, interval.

What the fpga_dataflow mapper queries and ``hwmodels.fpga.model`` sums into a design's metrics. The plan types
the mapper fills in (``LayerShape``, ``ComputePlan``, ``EnginePlan``) live here so both read the same data.

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
from dataclasses import dataclass, field
from typing import Any

from dse.graph import Graph, Op, OpKind
from hwmodels.catalogs.fpga import FpgaPart
from hwmodels.catalogs.tech import Sourced
from templates.fpga_dataflow import FpgaArch, LayerKnobs

# Cycles a layer adds beyond its RF-paced loop. Resource: calibrated on wa-hls4ml (see module docstring);
# Latency: the multiply and the accumulate register of hls4ml's dense_latency (not validated: no latency-strategy
# rows in the reference data).
RESOURCE_LAYER_OVERHEAD = 1
LATENCY_LAYER_OVERHEAD = 2
# hls4ml's softmax: exp table lookup, adder tree over the row, inverse lookup, multiply (Vivado nnet_activation.h).
SOFTMAX_BASE_CYCLES = 3

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


# ---------------------------------------------------------------------------------------------------
# What the mapper decides per layer (the cost functions below read it)
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerShape:
    """The geometry hls4ml's templates see: matrix sizes of the layer's dense kernel and its output positions."""

    n_in: int  # inputs of one output (Dense: in features; Conv2D: C*R*S)
    n_out: int  # outputs per position (Dense: out features; Conv2D: filters)
    positions: int  # output positions per sample (Dense: rows M; Conv2D: P*Q)
    in_height: int = 1
    in_width: int = 1
    in_channels: int = 0
    kernel: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class ComputePlan:
    """What the mapper decided for one compute layer."""

    index: int
    op: str
    kind: str  # dense | conv
    shape: LayerShape
    knobs: LayerKnobs
    requested_reuse: int
    reuse_factor: int  # legal value actually used (own engine)
    mults: int  # multipliers of its own engine
    engine: str  # "own" | "shared"
    cycles: int  # per-sample latency of the layer on the engine it runs on
    interval: int  # per-sample initiation interval of the layer on its engine


@dataclass
class EnginePlan:
    """The shared (sequential) engine, when any layer runs on it."""

    members: list[str] = field(default_factory=list)
    mults: int = 0
    occupancy: int = 0  # cycles per sample the engine is busy (its members run one after another)


# ---------------------------------------------------------------------------------------------------
# Resources of one engine
# ---------------------------------------------------------------------------------------------------
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


def add_resources(a: EngineResources, b: EngineResources) -> EngineResources:
    """The two engines' resources together."""
    return EngineResources(a.dsp + b.dsp, a.lut + b.lut, a.ff + b.ff, a.bram + b.bram)


def aux_resources(op: Op, graph: Graph, arch: FpgaArch, data_bits: int) -> EngineResources:
    """Activation, pooling and softmax ops: parallel over the tensor (io_parallel) or one pixel (io_stream)."""
    shape = graph.tensors[op.outputs[0]].shape
    numel = per_sample(math.prod(shape), graph.batch)  # one sample's tensor: the engine takes one at a time
    lanes = numel if arch.io_type == "io_parallel" else numel // stream_positions(shape, graph.batch)
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


def stream_buffers(
    op: Op, graph: Graph, arch: FpgaArch, data_bits: int, plan: ComputePlan | None = None
) -> EngineResources:
    """io_stream only: the output FIFO (depth = pixels, as hls4ml sizes it) and a conv's line buffer."""
    if arch.io_type != "io_stream":
        return EngineResources(0.0, 0.0, 0.0, 0.0)
    shape = graph.tensors[op.outputs[0]].shape
    depth = stream_positions(shape, graph.batch)
    width = (per_sample(math.prod(shape), graph.batch) // depth) * data_bits
    lut = bram = 0.0
    if depth > FIFO_SRL_MAX_DEPTH.value:
        bram += bram18_blocks(depth, width)
    else:
        lut += width
    if plan is not None and plan.kind == "conv" and plan.shape.kernel[0] > 1:
        rows = plan.shape.kernel[0] - 1
        bram += rows * bram18_blocks(plan.shape.in_width, plan.shape.in_channels * data_bits)
    return EngineResources(0.0, lut, 0.0, bram)


def shared_engine_resources(
    plans: list[ComputePlan], engine: EnginePlan, arch: FpgaArch, part: FpgaPart
) -> EngineResources:
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


# ---------------------------------------------------------------------------------------------------
# Per-sample cycles of one engine
# ---------------------------------------------------------------------------------------------------
def compute_cycles(shape: LayerShape, reuse_factor: int, strategy: str, io_type: str, kind: str) -> tuple[int, int]:
    """(latency, interval) per sample of one layer engine running at ``reuse_factor`` cycles per output position."""
    overhead = RESOURCE_LAYER_OVERHEAD if strategy == "resource" else LATENCY_LAYER_OVERHEAD
    busy = reuse_factor * shape.positions
    if kind == "conv" and io_type == "io_stream":
        busy = max(busy, shape.in_height * shape.in_width)
    return busy + overhead, busy


def aux_cycles(op: Op, io_type: str, graph: Graph) -> tuple[int, int]:
    """(latency, interval) per sample of an activation, pooling or softmax op."""
    d = op.dims
    if op.kind is OpKind.SOFTMAX:
        lat = SOFTMAX_BASE_CYCLES + max(1, math.ceil(math.log2(d["L"])))
        rows = per_sample(d["R"], graph.batch)
        return (lat, 1) if io_type == "io_parallel" else (lat + rows, rows)
    if op.kind is OpKind.POOL:
        if io_type == "io_parallel":
            return 1 + max(1, math.ceil(math.log2(d["R"] * d["S"]))), 1
        pixels = per_sample(d["H"] * d["W"] * d["N"], graph.batch)
        return pixels + 1, pixels
    positions = stream_positions(graph.tensors[op.outputs[0]].shape, graph.batch)
    return (1, 1) if io_type == "io_parallel" else (positions, positions)


def per_sample(count: int, samples: int) -> int:
    """One sample's share of a count over the whole batch (positions, pixels, elements): hls4ml designs take one
    sample at a time, and a graph's tensors hold ``samples`` of them."""
    return max(1, count // samples)


def stream_positions(shape: tuple[int, ...], samples: int = 1) -> int:
    """How many stream words one sample of an io_stream tensor takes: pixels of an NCHW map, rows of a [..., D]
    tensor (the tensor holds ``samples`` samples)."""
    if len(shape) == 4:
        return per_sample(shape[0] * shape[2] * shape[3], samples)
    return per_sample(math.prod(shape[:-1]), samples) if len(shape) > 1 else 1


def shared_cycles(plan: ComputePlan, engine_mults: int, io_type: str) -> tuple[int, int]:
    """(latency, interval) of a layer on a shared engine of ``engine_mults`` multipliers."""
    effective_rf = math.ceil(plan.shape.n_in * plan.shape.n_out / engine_mults)
    return compute_cycles(plan.shape, effective_rf, plan.knobs.strategy, io_type, plan.kind)


def describe(plan: ComputePlan) -> dict[str, Any]:
    """Flat per-layer facts for reports and exports."""
    return {
        "layer_index": plan.index,
        "reuse_factor": plan.reuse_factor,
        "requested_reuse_factor": plan.requested_reuse,
        "strategy": plan.knobs.strategy,
        "engine": plan.engine,
        "mults": plan.mults,
        "n_in": plan.shape.n_in,
        "n_out": plan.shape.n_out,
        "weight_type": plan.knobs.weight.hls(),
        "result_type": plan.knobs.result.hls(),
        "accum_type": plan.knobs.accum.hls(),
    }
