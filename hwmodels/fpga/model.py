"""The hls4ml-style FPGA design model: the mapper's per-layer plans on an FpgaArch -> Metrics.

Resources and cycles of each engine come from ``hwmodels.fpga.cost``. The design's latency is the sum of its
layers' latencies plus ``MODEL_OVERHEAD_CYCLES``; its interval is the slowest stage (io_stream, or io_parallel
with only Latency-strategy layers) or, for io_parallel designs with Resource layers (which HLS does not overlap,
as the reference data shows), the latency itself.

Power (``hwmodels.fpga.power``) is static plus dynamic power of the design's resources at its clock, the design
kept busy. Energy per evaluation is that power over the initiation interval, not the latency: a streaming design
starts an evaluation every interval, so in steady state each one costs ``interval`` cycles of the whole chip's
power (its latency overlaps the next evaluations'), which is also what makes ``throughput_ips / power_w`` the
inferences per joule. Where the interval equals the latency (unpipelined io_parallel Resource designs) the two
readings agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dse.graph import Graph, Op
from hwmodels.base import LayerMetrics, Metrics, design_figures, graph_batch
from hwmodels.catalogs.fpga import FpgaPart, get_part
from hwmodels.columns import largest, where
from hwmodels.fpga.cost import (
    MODEL_OVERHEAD_CYCLES,
    ComputePlan,
    EnginePlan,
    EngineResources,
    add_resources,
    aux_resources,
    describe,
    engine_resources,
    shared_engine_resources,
    stream_buffers,
)
from hwmodels.fpga.power import design_power
from mappers.base import Mapping
from mappers.payloads import LayerGroupPlan
from templates.fpga_dataflow import FpgaArch


@dataclass(frozen=True)
class OpFigures:
    """One op of a design priced: its per-sample latency and interval, resources, whether its interval is a
    pipeline stage of its own, whether it is a Resource-strategy layer, and the data width it passes on."""

    cycles: int
    interval: int
    resources: EngineResources
    own_stage: bool
    resource_layer: bool
    data_bits: int
    extra: dict[str, Any]


def op_figures(
    op: Op, member: LayerGroupPlan, graph: Graph, arch: FpgaArch, part: FpgaPart, data_bits: int
) -> OpFigures:
    """The figures of one op of a mapped design, reading ``data_bits`` wide inputs (the previous layer's result
    width): what ``FpgaDataflowModel.evaluate`` sums and the array path (``hwmodels.fpga.arrays``) tabulates."""
    plan = member.plan
    if plan is None:
        res = add_resources(aux_resources(op, graph, arch, data_bits), stream_buffers(op, graph, arch, data_bits))
        extra = {"layer_index": member.group, **res.__dict__}
        return OpFigures(member.cycles, member.interval, res, True, False, data_bits, extra)
    res = EngineResources(0.0, 0.0, 0.0, 0.0)
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
    res = add_resources(res, stream_buffers(op, graph, arch, plan.knobs.result.width, plan))
    extra = {**describe(plan), **res.__dict__}
    own, resource_layer = plan.engine == "own", plan.knobs.strategy == "resource"
    return OpFigures(plan.cycles, plan.interval, res, own, resource_layer, plan.knobs.result.width, extra)


def design_values(
    totals: dict[str, Any],
    latency: Any,
    slowest_stage: Any,
    pipelined: Any,
    samples: int,
    clock_period_ns: Any,
    part: FpgaPart,
    ops: float,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values, energy breakdown in pJ) of designs on ``part`` from their resource totals, per-sample latency,
    slowest pipeline stage and whether they pipeline evaluations: for one design (numbers) or many (numpy
    columns, ``hwmodels.fpga.arrays``). ``ops``: the graph's arithmetic operations (2 x MACs)."""
    interval = where(pipelined, slowest_stage, latency)
    latency_cycles = latency + (samples - 1) * interval
    capacity = part.capacity()
    utils = {f"{k}_util": totals[k] / capacity[k] if capacity[k] else math.inf for k in totals}
    values = {
        **totals,
        "latency_cycles": latency_cycles,
        "ii_cycles": interval,
        "latency_ms": latency_cycles * clock_period_ns * 1e-6,
        "throughput_ips": 1e9 / (interval * clock_period_ns),  # one sample per interval
        **utils,
        "fpga_util": largest(list(utils.values())),
    }
    power = design_power(part, totals, 1000.0 / clock_period_ns)
    interval_seconds = samples * interval * clock_period_ns * 1e-9  # the batch streams in, one per interval
    breakdown = {name: watts * interval_seconds * 1e12 for name, watts in power.watts.items()}
    figures = design_figures(
        seconds=latency_cycles * clock_period_ns * 1e-9,
        energy_pj=sum(breakdown.values()),
        ops=ops,
        batch=samples,
        throughput_ips=values["throughput_ips"],
        interval_seconds=interval_seconds,
    )
    values.update(
        power_w=figures.power_w,
        energy_mj=figures.energy_mj,
        edp=figures.edp,
        tops_per_w=figures.tops_per_w,
    )
    return values, breakdown


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
            member = mapping.ops[op.name].payload_as(LayerGroupPlan)
            figures = op_figures(op, member, graph, arch, part, data_bits)
            if member.plan is not None and member.plan.engine != "own":
                shared_plans.append(member.plan)
            if figures.own_stage:
                stages.append(figures.interval)
            resource_layers |= figures.resource_layer
            data_bits = figures.data_bits
            latency += figures.cycles
            for k in totals:
                totals[k] += getattr(figures.resources, k)
            layers.append(
                LayerMetrics(
                    layer=op.name,
                    kind=op.kind.value,
                    cycles=float(figures.cycles),
                    compute_cycles=float(figures.interval),
                    stall_cycles=0.0,
                    macs=op.macs,
                    utilization=1.0,
                    dram_read_bytes=0.0,
                    dram_write_bytes=0.0,
                    extra=figures.extra,
                )
            )
        if shared_plans:
            shared = shared_engine_resources(shared_plans, engine, arch, part)
            for k in totals:
                totals[k] += getattr(shared, k)
            stages.append(engine.occupancy)
        pipelined = arch.io_type == "io_stream" or not resource_layers
        values, breakdown = design_values(
            totals,
            latency,
            max(stages),
            pipelined,
            graph_batch(graph),  # the samples one evaluation streams through the pipeline
            arch.clock_period_ns,
            part,
            2.0 * sum(op.macs for op in graph.ops),
        )
        notes = list(mapping.solver.get("notes", []))
        return Metrics(
            values=values,
            energy_breakdown_pj=breakdown,
            layers=layers,
            info={
                "exact": True,
                "part": part.hls_part,
                "notes": notes,
                "shared_engine": {"members": engine.members, "mults": engine.mults, "occupancy": engine.occupancy},
            },
        )
