"""The systolic hardware model: ``SystolicModel.evaluate(mapping, arch) -> Metrics``, SCALE-Sim 3.0.0
reproduced analytically (the closed forms are ``hwmodels.systolic.cost``'s, the prices
``hwmodels.systolic.pricing``'s), with a per-layer cache shared across design points.

A fold mapping's array ops cost ``gemm_cost``; its vector ops ``vector_op_cost``; a tiling mapping
(cpsat, greedy) brings its own DRAM bytes and compute cycles, to which the DRAM mode adds the stalls.
Energy is access counts x catalog per-access energies plus leakage x latency.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from dse.graph import Op
from hwmodels.base import LayerMetrics, Metrics, design_figures, graph_batch
from hwmodels.systolic.compute import LoweredGemm, compute_cycles, folds, spatial_dims
from hwmodels.systolic.cost import gemm_cost, vector_op_cost
from hwmodels.systolic.pricing import (
    TILED_ROLES,
    Prices,
    conv_window,
    design_prices,
    fold_streams,
    gemm_energy_pj,
    tiled_array_energy_pj,
    vector_energy_pj,
)
from hwmodels.systolic.sparse import SparseLowering, sparse_mac_energy_pj
from mappers.base import Mapping, OpMapping
from mappers.payloads import FoldPlan, TiledPlan
from templates.systolic import SystolicArch


def vector_tensor_words(op: Op, mapping: Mapping) -> tuple[float, float]:
    """DRAM words an op on the vector unit reads and writes; resident inputs come from on chip, a look-up
    reads only its rows of a weight table (``Graph.read_numel``)."""
    graph = mapping.graph
    resident = set(mapping.ops[op.name].resident_inputs)
    reads = sum(graph.read_numel(op, t) for t in (*op.inputs, *op.weights) if t not in resident)
    writes = sum(graph.tensors[t].numel for t in op.outputs)
    return float(reads), float(writes)


@dataclass
class SystolicModel:
    """SCALE-Sim-faithful analytical model of a systolic array (see the module docstring)."""

    name: str = "systolic"

    def evaluate(self, mapping: Mapping, arch: SystolicArch) -> Metrics:  # type: ignore[override]
        prices = design_prices(arch)
        tech = prices.tech
        area = prices.area_mm2
        area_total = sum(area.values())
        leak_w = prices.leakage_w
        cycle_s = 1e-6 / arch.freq_mhz

        layers: list[LayerMetrics] = []
        totals = {"mac": 0.0, "pe_storage": 0.0, "sram": 0.0, "dram": 0.0, "vector": 0.0, "leakage": 0.0}
        total_cycles = 0.0
        total_macs = 0
        mac_weighted_cycles = 0.0
        dram_bytes = 0.0
        arch_key = _arch_key(arch)
        graph = mapping.graph
        ops_by_name = {o.name: o for o in graph.ops}
        for name in mapping.order:
            om = mapping.ops[name]
            op = ops_by_name[name]
            key = (op.shape_key(), arch_key, _mapping_key(op, om, mapping))
            core = _LAYER_CACHE.get(key)
            if core is None:
                if isinstance(om.payload, TiledPlan):
                    core = _tiled_core(op, om, om.payload, arch, prices)
                else:
                    core = _fold_core(op, om, om.payload_as(FoldPlan), mapping, arch, prices)
                _LAYER_CACHE.put(key, core)
            cycles, compute, stall, macs, util = core.cycles, core.compute, core.stall, core.macs, core.util
            rd, wr, sram_rd, sram_wr = core.rd, core.wr, core.sram_rd, core.sram_wr
            breakdown = dict(core.breakdown)
            extra = dict(core.extra)
            breakdown["leakage"] = leak_w * cycles * cycle_s * 1e12
            energy = sum(breakdown.values())
            layers.append(
                LayerMetrics(
                    layer=name,
                    kind=op.kind.value,
                    cycles=cycles,
                    compute_cycles=compute,
                    stall_cycles=stall,
                    macs=macs,
                    utilization=util,
                    dram_read_bytes=rd,
                    dram_write_bytes=wr,
                    sram_read_bytes=sram_rd,
                    sram_write_bytes=sram_wr,
                    energy_pj=energy,
                    energy_breakdown_pj=breakdown,
                    extra=extra,
                )
            )
            for k, v in breakdown.items():
                totals[k] += v
            total_cycles += cycles
            total_macs += macs
            mac_weighted_cycles += util * macs
            dram_bytes += rd + wr

        utilization = mac_weighted_cycles / total_macs if total_macs else 0.0
        values = systolic_values(
            total_cycles, total_macs, totals, area_total, utilization, dram_bytes, cycle_s, graph_batch(mapping.graph)
        )
        info = {"mapper": mapping.mapper, "area_breakdown_mm2": area, "tech": tech.name, "dram_mode": arch.dram_mode}
        return Metrics(values=values, energy_breakdown_pj=totals, layers=layers, info=info)


def systolic_values(total_cycles, total_macs, totals, area_mm2, utilization, dram_bytes, cycle_s, batch):  # noqa: ANN001, ANN201
    """A systolic design's metric values from its totals: numbers (the model) or numpy columns (the array path,
    ``hwmodels.systolic.arrays``), one formula for both."""
    design = design_figures(
        seconds=total_cycles * cycle_s, energy_pj=sum(totals.values()), ops=2 * total_macs, batch=batch
    )
    return {
        "latency_cycles": total_cycles,
        "latency_ms": design.latency_ms,
        "throughput_ips": design.throughput_ips,
        "energy_mj": design.energy_mj,
        "edp": design.edp,
        "area_mm2": area_mm2,
        "power_w": design.power_w,
        "utilization": utilization,
        "dram_mb": dram_bytes / 1e6,
        "tops_per_w": design.tops_per_w,
    }


@dataclass(frozen=True)
class _LayerCore:
    """A layer's figures before leakage (which depends on the whole design): what the cache keeps."""

    cycles: float
    compute: float
    stall: float
    macs: int
    util: float
    rd: float
    wr: float
    sram_rd: float
    sram_wr: float
    breakdown: tuple
    extra: tuple


class _LayerCache:
    """A bounded LRU of layer results, keyed by (op shape, arch sub-parameters, op mapping): an identical
    layer on an identical design is evaluated once per process, across layers and design points."""

    def __init__(self, size: int = 50_000):
        self.size = size
        self.data: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key):
        try:
            hit = self.data[key]
        except (KeyError, TypeError):
            self.misses += 1
            return None
        self.data.move_to_end(key)
        self.hits += 1
        return hit

    def put(self, key, value) -> None:
        try:
            self.data[key] = value
        except TypeError:  # an unhashable mapping detail: just do not cache it
            return
        if len(self.data) > self.size:
            self.data.popitem(last=False)

    def clear(self) -> None:
        self.data.clear()
        self.hits = self.misses = 0


_LAYER_CACHE = _LayerCache()


def clear_layer_cache() -> None:
    """Forget cached layer results (for timing the model)."""
    _LAYER_CACHE.clear()


def layer_cache_stats() -> dict[str, int]:
    return {"entries": len(_LAYER_CACHE.data), "hits": _LAYER_CACHE.hits, "misses": _LAYER_CACHE.misses}


def _arch_key(arch: SystolicArch) -> tuple:
    """Every arch parameter a layer's cycles, traffic and non-leakage energy depend on (the clock and the
    DRAM rate only through bytes per cycle)."""
    return (
        arch.rows,
        arch.cols,
        arch.dataflow,
        arch.ifmap_sram_kib,
        arch.filter_sram_kib,
        arch.ofmap_sram_kib,
        round(arch.dram_bytes_per_cycle, 12),
        arch.precision,
        arch.tech,
        arch.vector_lanes,
        arch.dram_mode,
        arch.scratchpad,
        arch.sparsity_support,
        arch.sparse_rep,
        arch.sparsity_optimized_mapping,
        arch.sparsity_block_size,
        arch.sparse_mac,
        arch.acc_bits,
        arch.pe_weight_words,
        arch.pe_input_words,
        arch.pe_psum_words,
    )


def _mapping_key(op: Op, om: OpMapping, mapping: Mapping) -> tuple:
    """What of an op's mapping (and its tensors' sizes) its figures depend on."""
    tensors = mapping.graph.tensors
    sizes = tuple(tensors[t].numel for t in (*op.inputs, *op.weights, *op.outputs))
    resident = tuple(t in om.resident_inputs for t in op.inputs)
    plan = om.payload if isinstance(om.payload, TiledPlan) else om.payload_as(FoldPlan)
    head = (sizes, resident, om.resident_output, bool(plan.fused_into), plan.unit)
    if isinstance(plan, FoldPlan):
        return (*head, plan.dense_shape_gemm)  # only the report's before-reshaping utilisation depends on it
    return (
        *head,
        None,
        tuple(sorted(om.tile.items())),
        tuple(om.loop_order),
        plan.dram_read_bytes,
        plan.dram_write_bytes,
        plan.compute_cycles,
        plan.sram_words,
        tuple((o.role, o.traffic, o.footprint) for o in plan.operands),
        tuple(mapping.graph.op(n).flops for n in plan.fused_ops),
    )


def _pe_utilization(gemm: LoweredGemm, dense_shape: LoweredGemm | None, arch: SystolicArch) -> dict[str, float]:
    """Stall-free PE utilisation (MACs over PE-cycles of the folds, DRACO's measure) of the GEMM the array runs,
    and of the op as the workload gave it (dense, unreshaped) where the mapper changed it."""
    peak = arch.macs_per_cycle
    out = {"pe_utilization": gemm.macs / (peak * compute_cycles(gemm, arch.rows, arch.cols, arch.dataflow))}
    if dense_shape is not None:
        cycles = compute_cycles(dense_shape, arch.rows, arch.cols, arch.dataflow)
        out["pe_utilization_dense_shape"] = dense_shape.macs / (peak * cycles)
    return out


def _fold_core(
    op: Op, om: OpMapping, plan: FoldPlan, mapping: Mapping, arch: SystolicArch, prices: Prices
) -> _LayerCore:
    """One layer under the fold mapper: SCALE-Sim's figures (module docstring)."""
    peak, wb = arch.macs_per_cycle, arch.word_bytes
    if plan.unit == "array" and plan.gemm is not None:
        gemm = plan.gemm
        cost = gemm_cost(gemm, arch, write_output=not om.resident_output)
        cycles = cost.total_cycles
        rd = (cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
        wr = cost.ofmap_dram_writes * wb
        # SRAM: array-side accesses plus the DRAM fills (writes) and ofmap drains (reads)
        sram_rd = (cost.ifmap_sram_reads + cost.filter_sram_reads + cost.ofmap_dram_writes) * wb
        sram_wr = (cost.ofmap_sram_writes + cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
        macs = gemm.macs
        breakdown = gemm_energy_pj(cost, macs, prices, wb, arch.dataflow, conv_window(gemm))
        sparse = plan.sparse
        sparse_extra: dict = {}
        if sparse is not None:
            rd, sram_rd, sram_wr, sparse_extra = sparse_charges(
                sparse, cost, prices, wb, rd, sram_rd, sram_wr, breakdown
            )
        compute = float(cost.compute_cycles)
        stall = cycles - compute
        util = macs / (peak * cycles) if cycles else 0.0
        extra = {
            "unit": "array",
            "fill_cycles": cost.fill_cycles,
            "tail_cycles": cost.tail_cycles,
            "busy_cycles": cost.busy_cycles,
            "ifmap_dram_reads": cost.ifmap_dram_reads,
            "filter_dram_reads": cost.filter_dram_reads,
            "ofmap_dram_writes": cost.ofmap_dram_writes,
            "row_folds": cost.row_folds,
            "col_folds": cost.col_folds,
            **sparse_extra,
            **_pe_utilization(gemm, plan.dense_shape_gemm, arch),
        }
    else:
        busy, rd_words, wr_words = vector_op_cost(op, arch, vector_tensor_words(op, mapping))
        cycles = busy
        compute = float(math.ceil(op.flops / arch.vector_lanes)) if op.flops else 0.0
        stall = cycles - compute
        rd, wr = rd_words * wb, wr_words * wb
        sram_rd, sram_wr = rd, wr
        macs = 0
        util = 0.0
        breakdown = vector_energy_pj(op.flops, rd, wr, prices)
        extra = {"unit": "vector"}
        fused_into = plan.fused_into
        if fused_into:
            # runs in the producer's output pipeline: no latency of its own (and so no
            # leakage), but its ALU work and its output's DRAM write are still paid for
            extra = {"unit": "vector", "fused_into": fused_into, "pipeline_cycles": cycles}
            cycles = compute = stall = 0.0

    return _LayerCore(
        cycles, compute, stall, macs, util, rd, wr, sram_rd, sram_wr, tuple(breakdown.items()), tuple(extra.items())
    )


def sparse_charges(
    low: SparseLowering, cost, prices: Prices, wb: int, rd: float, sram_rd: float, sram_wr: float, breakdown: dict
) -> tuple[float, float, float, dict]:
    """A sparse op's MAC energy (gated / skipped / decoded) and its filter's format: every filter word the
    array streams carries its share of the metadata (and, run dense, the compressed form replaces it),
    through DRAM and the filter SRAM. Returns the new DRAM read and SRAM bytes and the report fields."""
    per_word = low.filter_bytes_per_word(wb)
    dram_delta = cost.filter_dram_reads * (per_word - wb)
    sram_read_delta = cost.filter_sram_reads * (per_word - wb)
    breakdown["mac"] = sparse_mac_energy_pj(low, prices.e_mac)
    breakdown["sram"] += (sram_read_delta + dram_delta) * prices.e_sram["filter"]
    # the delta is negative where a format stores less than the streamed words (optimized mapping's padding)
    breakdown["dram"] += dram_delta * prices.e_dram_read
    extra = {
        "sparsity": low.pattern.label,
        "sparse_mac": low.mode,
        "dense_macs": low.dense.macs,
        "effectual_macs": low.effectual_macs,
        "filter_metadata_bits": low.storage.metadata_bits * low.dense.count,
        "filter_dram_bytes": cost.filter_dram_reads * per_word,
    }
    return rd + dram_delta, sram_rd + sram_read_delta, sram_wr + dram_delta, extra


def _tiled_core(op: Op, om: OpMapping, plan: TiledPlan, arch: SystolicArch, prices: Prices) -> _LayerCore:
    """One op under a tiling mapper (cpsat, greedy): its figures follow the chosen tile and residency.

    DRAM bytes are the mapping's (validated by ``mappers.systolic.check``); compute cycles are the
    fold model summed over the tiles. Transfers overlap compute (double-buffered tiles), so the busy
    time is max(compute, traffic / bandwidth) by ``dram_mode``; the first input and weight tiles load
    before compute starts and the last output tile drains after it (the stalls). Single-buffered tiles
    (``plan.double_buffered`` False) wait for every transfer: compute + traffic / bandwidth, by ``dram_mode``.
    SRAM energy counts the array's accesses plus every DRAM fill and drain; a resident tensor is read from SRAM instead
    of DRAM, so residency shows up as less DRAM energy and fewer stalls.
    """
    wb = arch.word_bytes
    if plan.fused_into:
        # runs in its producer's output pipeline / SIMD pass: no latency or traffic of its own
        breakdown = {"mac": 0.0, "pe_storage": 0.0, "sram": 0.0, "dram": 0.0, "vector": op.flops * prices.e_alu}
        extra = {"unit": "vector", "fused_into": plan.fused_into}
        return _LayerCore(0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, tuple(breakdown.items()), tuple(extra.items()))
    rd = float(plan.dram_read_bytes)
    wr = float(plan.dram_write_bytes)
    compute = float(plan.compute_cycles)
    bpc = arch.dram_bytes_per_cycle
    in_bytes = out_bytes = 0.0
    first_tiles = last_tile = 0.0
    for o in plan.operands:
        traffic, footprint = float(o.traffic), float(o.footprint)
        one_tile = footprint if traffic <= footprint or not plan.double_buffered else footprint / 2
        if o.role == "output":
            out_bytes += traffic
            last_tile += min(traffic, one_tile)
        else:
            in_bytes += traffic
            first_tiles += min(traffic, one_tile)
    if arch.dram_mode == "unlimited":
        busy, fill, tail = compute, 0.0, 0.0
    elif not plan.double_buffered:  # the first loads and last drain are among the transfers compute waits for
        fill = tail = 0.0
        per_operand = [float(o.traffic) for o in plan.operands]
        moved = max(per_operand, default=0.0) if arch.dram_mode == "per_operand" else rd + wr
        busy = compute + moved / bpc
    else:
        fill, tail = first_tiles / bpc, last_tile / bpc
        if arch.dram_mode == "per_operand":
            streams = [float(o.traffic) for o in plan.operands]
            busy = max([compute, *[t / bpc for t in streams]])
        else:
            busy = max(compute, (rd + wr) / bpc)
    cycles = fill + busy + tail
    is_array = plan.unit == "array"
    macs = op.macs if is_array else 0
    util = macs / (arch.macs_per_cycle * cycles) if cycles and is_array else 0.0
    sram_words = float(plan.sram_words)
    sram_rd = sram_words * wb + wr
    sram_wr = rd + (sram_words * wb if not is_array else 0.0)
    streams = fold_streams(plan.gemm, arch) if is_array and plan.gemm is not None else None
    if streams is None:
        e_sram = sum(prices.e_sram.values()) / len(prices.e_sram)
        sram_pj, pe_pj = (sram_words * wb + rd + wr) * e_sram, 0.0
    else:
        fills = {role: sum(float(o.traffic) for o in plan.operands if o.role == role) for role in TILED_ROLES}
        sr, sc, _ = spatial_dims(plan.gemm, arch.dataflow)
        folds_rc = folds(sr, sc, arch.rows, arch.cols)
        sram_pj, pe_pj = tiled_array_energy_pj(
            sram_words * wb, streams, folds_rc, fills, macs, prices, arch.dataflow, conv_window(plan.gemm)
        )
    breakdown = {
        "mac": macs * prices.e_mac,
        "pe_storage": pe_pj,
        "sram": sram_pj,
        "dram": prices.dram_pj(rd, wr),
        "vector": 0.0 if is_array else op.flops * prices.e_alu,
    }
    extra = {
        "unit": plan.unit,
        "fill_cycles": fill,
        "tail_cycles": tail,
        "busy_cycles": busy,
        "tile": ";".join(f"{k}={v}" for k, v in om.tile.items()),
        "loop_order": ">".join(om.loop_order),
        "resident_inputs": len(om.resident_inputs),
        "resident_output": om.resident_output,
    }
    return _LayerCore(
        cycles,
        compute,
        cycles - compute,
        macs,
        util,
        rd,
        wr,
        sram_rd,
        sram_wr,
        tuple(breakdown.items()),
        tuple(extra.items()),
    )
