"""Cycles, DRAM traffic, energy and area of a systolic array, reproducing SCALE-Sim 3.0.0 analytically.

SCALE-Sim simulates demand matrices cycle by cycle; here every quantity is a closed form of the
lowered GEMM (``mappers.systolic``), the fold counts and the SRAM sizes:

* **Compute cycles** — folds x fold length, exactly SCALE-Sim's demand-matrix length.
* **DRAM reads** — SCALE-Sim's double-buffered read SRAM (``read_buffer_estimate_bw.py``) records
  new addresses in sets of ``floor(words/100)``; a reference hits only if its address was brought
  in since the last boundary of ``50`` sets (the active half). So an operand is re-fetched whenever
  a reuse straddles such a boundary of W = 50*floor(words/100) fetched words. For a block of
  f < W distinct words repeated r times the first pass fetches f and the second re-fetches only
  the prefix fetched before the boundary it crossed; f >= W thrashes (every pass re-fetches all).
  The ifmap im2col stream re-references inputs horizontally (neighbouring pixels, a few lines apart)
  and vertically (the next output row); each reuse misses with probability (reuse distance / W).
* **DRAM writes** — every ofmap word the array emits goes through the ofmap SRAM to DRAM (ws/is emit
  partial sums once per row fold, as SCALE-Sim does). The ofmap SRAM drains its passive half
  (``words/2``) when the active half fills; what is left drains after the last fold (the tail).
* **Total cycles** — initial fill of the read SRAMs (the prefetch before cycle 0) + compute (+ DRAM
  stalls) + ofmap tail, SCALE-Sim's "Total Cycles (incl. prefetch)".

DRAM stalls follow ``arch.dram_mode`` (see ``templates.systolic``): ``unlimited`` = SCALE-Sim CALC
(no stall; fill at ``dram_words_per_cycle``, ofmap drain at ``cols`` words/cycle), ``per_operand`` =
SCALE-Sim USER (each stream its own port of ``dram_words_per_cycle``), ``shared`` = one channel for
all three streams. With limited bandwidth the busy time is max(compute, traffic / bandwidth), which
is SCALE-Sim USER's steady state: its prefetches are chained back to back, and the array waits for
them (its per-miss stall is doubled, but consecutive stalls then alternate so the average rate is
the DRAM rate).

Energy is access counts x catalog per-access energies (``hwmodels.catalog``) plus leakage x latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dse.graph import Op
from hwmodels.base import LayerMetrics, Metrics
from mappers.base import Mapping
from mappers.systolic import ConvGeometry, LoweredGemm, fold_cycles, folds, spatial_dims
from templates.systolic import SystolicArch

# SCALE-Sim's read SRAMs keep half the capacity active (``active_buf_frac = 0.5``) and track it in
# 100 sets; the ofmap SRAM drains its other half at once.
_SETS_PER_BUFFER = 100
_ACTIVE_SETS = 50

# Area of what is neither PE, SRAM nor vector lane (control, the DRAM PHY/controller, clock tree,
# wiring): a fraction of the sum of the blocks. 0.2 sits in the 15-30 % range that published
# accelerator floorplans leave outside their compute arrays and buffers (e.g. TPU v1's die plot,
# Jouppi et al. ISCA 2017, where the unified buffer + MMU + accumulators take ~2/3 of the die and
# the DRAM/host interfaces much of the rest); an assumption, not a catalog number.
INTEGRATION_OVERHEAD = 0.2

# SRAM energy per byte is taken at the capacity of one bank of the double buffer (half the SRAM),
# since an access activates one half only.
_BANKS_PER_SRAM = 2


@dataclass(frozen=True)
class GemmCost:
    """One lowered GEMM (all its copies) on one array. Traffic in words, cycles in array clocks."""

    compute_cycles: int  # stall-free, all folds (SCALE-Sim 'Total Cycles' + 1)
    busy_cycles: float  # compute + DRAM stalls
    fill_cycles: float  # initial SRAM fill before the first fold
    tail_cycles: float  # ofmap drain after the last fold
    ifmap_dram_reads: float
    filter_dram_reads: float
    ofmap_dram_writes: float
    ifmap_sram_reads: float
    filter_sram_reads: float
    ofmap_sram_writes: float
    row_folds: int
    col_folds: int

    @property
    def total_cycles(self) -> float:
        return self.fill_cycles + self.busy_cycles + self.tail_cycles

    @property
    def scalesim_total_cycles(self) -> float:
        """SCALE-Sim's 'Total Cycles (incl. prefetch)' (it counts from the fill start to the last drain)."""
        return self.total_cycles - 1


# ---------------------------------------------------------------------------------------------------
# DRAM re-fetch model of SCALE-Sim's double-buffered read SRAM
# ---------------------------------------------------------------------------------------------------
def epoch_words(sram_words: int) -> int:
    """W: words fetched between two boundaries of the active half (50 sets of floor(words/100))."""
    return _ACTIVE_SETS * max(1, sram_words // _SETS_PER_BUFFER)


def repeated_block_fetches(start: int, block: int, repeats: int, epoch: int) -> int:
    """Words fetched for ``block`` distinct words referenced ``repeats`` times in the same order,
    when ``start`` words were fetched into this SRAM before (SCALE-Sim's epoch rule)."""
    if repeats <= 0 or block <= 0:
        return 0
    if repeats == 1:
        return block
    if block >= epoch:
        return block * repeats
    boundary = epoch * ((start + block) // epoch)
    stale_prefix = max(0, min(block, boundary - start))
    return block + stale_prefix


def filter_dram_reads(gemm: LoweredGemm, dataflow: str, rows: int, cols: int, epoch: int) -> int:
    """Filter words fetched for one GEMM copy."""
    k, n = gemm.K, gemm.N
    if dataflow == "ws":  # every filter word is used by exactly one fold
        return k * n
    sr, sc, _ = spatial_dims(gemm, dataflow)
    rf, cf = folds(sr, sc, rows, cols)
    if dataflow == "is":  # the whole filter is streamed once per column fold
        return repeated_block_fetches(0, k * n, cf, epoch)
    total = 0  # os: the filter columns of one column fold are re-streamed for every row fold
    fetched = 0
    for fc in range(cf):
        width = min(cols, n - fc * cols)
        got = repeated_block_fetches(fetched, k * width, rf, epoch)
        total += got
        fetched += got
    return total


def ifmap_pass_fetches(g: ConvGeometry, dataflow: str, rows: int, cols: int, epoch: int) -> float:
    """Words fetched by one pass over the whole im2col matrix in the dataflow's order.

    Under the epoch rule an input word is re-fetched once for every boundary that falls inside its
    live span (first to last reference, counted in fetched words), so the pass fetches
    unique + sum(span) / W words, at most one per reference. Spans, per input word on average:

    * os/is (pixel chunks of ``rows``/``cols`` pixels, window-major inside a chunk): the word is used by
      ``n_r`` output rows (span ``(n_r - 1)`` output rows of fetches) and, inside a row, by ``n_s``
      neighbouring pixels whose window offsets are ``(n_s - 1) * stride * C`` lines apart.
    * ws (blocks of ``rows`` window entries over all pixels): a horizontal neighbour's reuse is
      ``stride * C / rows`` blocks later, a vertical one ``stride * S * C / rows`` blocks later; each
      misses with probability (gap x block words) / W.
    """
    unique = g.unique_inputs
    refs = g.references
    if unique < epoch or refs <= unique:
        return float(min(unique, refs) if refs else unique)
    n_r = g.row_uses / g.used_rows
    n_s = g.col_uses / g.used_cols
    m = g.P * g.Q
    window = g.R * g.S * g.C
    fetched = float(unique)
    for _ in range(3):  # misses add fetches, which lengthen the spans: a few fixed-point steps
        if dataflow in ("os", "is"):
            chunk = rows if dataflow == "os" else cols
            per_pixel = fetched / m
            span_row = g.Q * per_pixel
            span_h = (n_s - 1) * per_pixel * (g.stride_w * chunk / (g.R * g.S) + 1)
            span = (n_r - 1) * span_row + span_h
            fetched = min(float(refs), unique + unique * span / epoch)
        else:
            # a reuse inside one block is a few lines apart (hit); a reuse across blocks is
            # gap whole blocks apart, and misses with probability gap * block / W
            horizontal = g.row_uses * g.C * (g.col_uses - g.used_cols)
            vertical = g.C * g.used_cols * (g.row_uses - g.used_rows)
            h_gap = g.stride_w * g.C / rows
            v_gap = g.stride_h * g.S * g.C / rows
            cross_h = horizontal * min(1.0, h_gap)
            cross_v = vertical * min(1.0, v_gap)
            block_words = (unique + cross_h + cross_v) / math.ceil(window / rows)
            h_miss = min(1.0, max(1.0, h_gap) * block_words / epoch)
            v_miss = min(1.0, max(1.0, v_gap) * block_words / epoch)
            return unique + cross_h * h_miss + cross_v * v_miss
    return fetched


def ifmap_dram_reads(gemm: LoweredGemm, dataflow: str, rows: int, cols: int, epoch: int) -> float:
    g = gemm.geometry
    sr, sc, _ = spatial_dims(gemm, dataflow)
    rf, cf = folds(sr, sc, rows, cols)
    one_pass = ifmap_pass_fetches(g, dataflow, rows, cols, epoch)
    if dataflow == "is":
        return one_pass
    if g.unique_inputs < epoch:
        return one_pass  # later passes hit: all of it was fetched in this epoch
    return one_pass * cf


# ---------------------------------------------------------------------------------------------------
# Fill and drain
# ---------------------------------------------------------------------------------------------------
def fill_cycles_unlimited(fetched: float, sram_words: int, first_demand: int, words_per_cycle: float) -> float:
    """SCALE-Sim CALC: the active half (or all of a smaller operand) is fetched before it is needed."""
    per_set = max(1, sram_words // _SETS_PER_BUFFER)
    active = _ACTIVE_SETS * per_set
    if fetched >= active:
        return math.ceil(active / words_per_cycle) - first_demand
    sets = math.ceil(fetched / per_set)
    return math.ceil(sets * per_set / words_per_cycle)


def ofmap_tail(writes: float, sram_words: int, drain_words_per_cycle: float) -> tuple[float, int]:
    """(cycles to drain what is left after the last fold, number of drains during compute)."""
    half = sram_words - math.ceil(sram_words / 2)
    drains = max(0, math.floor((writes - 1) / half)) if writes > 0 else 0
    left = writes - drains * half
    return math.ceil(left / drain_words_per_cycle), drains


def gemm_cost(gemm: LoweredGemm, arch: SystolicArch) -> GemmCost:
    """Everything SCALE-Sim reports for one layer, for all ``gemm.count`` copies run back to back."""
    rows, cols, df = arch.rows, arch.cols, arch.dataflow
    sr, sc, t = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    lines = rf * cf * fold_cycles(t, rows, cols, df)
    n = gemm.count
    words_if, words_f, words_of = arch.sram_words("ifmap"), arch.sram_words("filter"), arch.sram_words("ofmap")

    if_reads = ifmap_dram_reads(gemm, df, rows, cols, epoch_words(words_if))
    f_reads = float(filter_dram_reads(gemm, df, rows, cols, epoch_words(words_f)))
    of_writes = float(gemm.M * gemm.N * (1 if df == "os" else rf))

    if df == "os":
        sram_if, sram_f = sr * t * cf, t * sc * rf
    elif df == "ws":
        sram_if, sram_f = t * sr * cf, sr * sc
    else:
        sram_if, sram_f = sr * sc, t * sr * cf
    sram_of = of_writes

    bw = arch.dram_words_per_cycle
    mode = arch.dram_mode
    first_if = rows if df == "ws" else 0
    first_f = rows if df == "is" else 0
    fill_if = fill_cycles_unlimited(if_reads, words_if, first_if, bw)
    fill_f = fill_cycles_unlimited(f_reads, words_f, first_f, bw)
    drain_bw = cols if mode == "unlimited" else bw
    tail, _ = ofmap_tail(of_writes, words_of, drain_bw)
    # words of each stream moved while the array runs (the fill and the tail are outside it)
    during_if = max(0.0, if_reads - min(if_reads, fill_if * bw))
    during_f = max(0.0, f_reads - min(f_reads, fill_f * bw))
    during_of = max(0.0, of_writes - tail * drain_bw)
    if mode == "unlimited":
        fill = max(fill_if, fill_f)
        busy = float(lines)
    elif mode == "per_operand":
        fill = max(fill_if, fill_f)
        busy = max(float(lines), during_if / bw, during_f / bw, during_of / bw)
    else:  # shared: one channel, the two fills queue behind each other
        fill = fill_if + fill_f
        busy = max(float(lines), (during_if + during_f + during_of) / bw)
    # copies of a grouped/batched op run back to back: fill once, drain once, traffic n times
    return GemmCost(
        compute_cycles=n * lines,
        busy_cycles=n * busy,
        fill_cycles=fill,
        tail_cycles=tail,
        ifmap_dram_reads=n * if_reads,
        filter_dram_reads=n * f_reads,
        ofmap_dram_writes=n * of_writes,
        ifmap_sram_reads=n * sram_if,
        filter_sram_reads=n * sram_f,
        ofmap_sram_writes=n * sram_of,
        row_folds=rf,
        col_folds=cf,
    )


# ---------------------------------------------------------------------------------------------------
# Vector unit
# ---------------------------------------------------------------------------------------------------
def vector_op_cost(op: Op, arch: SystolicArch, tensor_words: tuple[float, float]) -> tuple[float, float, float]:
    """(busy cycles, DRAM words read, DRAM words written) of a non-MAC op on the SIMD unit.

    One lane does one arithmetic op per cycle; its inputs come from and its output goes to DRAM
    (the array's SRAMs are per-layer in this model, as in SCALE-Sim).
    """
    compute = math.ceil(op.flops / arch.vector_lanes) if op.flops else 0
    reads, writes = tensor_words
    bw = arch.dram_words_per_cycle
    if arch.dram_mode == "unlimited":
        busy = float(compute)
    elif arch.dram_mode == "per_operand":
        busy = max(float(compute), reads / bw, writes / bw)
    else:
        busy = max(float(compute), (reads + writes) / bw)
    return busy, reads, writes


# ---------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------
def systolic_area_mm2(arch: SystolicArch) -> dict[str, float]:
    from hwmodels.catalog import get_tech

    tech = get_tech(arch.tech)
    fmt = "int" if arch.precision.startswith("int") else "fp"
    parts = {
        "pe_array": arch.rows * arch.cols * tech.pe_area_mm2(arch.bits, fmt),
        "sram": sum(
            tech.sram_area_mm2(kib) for kib in (arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib)
        ),
        "vector": arch.vector_lanes * tech.alu_area_mm2(arch.bits, fmt),
    }
    parts["overhead"] = INTEGRATION_OVERHEAD * sum(parts.values())
    return parts


def _tensor_words(op: Op, mapping: Mapping) -> tuple[float, float]:
    tensors = mapping.graph.tensors
    reads = sum(tensors[t].numel for t in (*op.inputs, *op.weights))
    writes = sum(tensors[t].numel for t in op.outputs)
    return float(reads), float(writes)


@dataclass
class SystolicModel:
    """SCALE-Sim-faithful analytical model of a systolic array (see the module docstring)."""

    name: str = "systolic"

    def evaluate(self, mapping: Mapping, arch: SystolicArch) -> Metrics:  # type: ignore[override]
        from hwmodels.catalog import get_tech

        tech = get_tech(arch.tech)
        fmt = "int" if arch.precision.startswith("int") else "fp"
        bits, wb = arch.bits, arch.word_bytes
        e_mac = tech.mac_energy_pj(bits, fmt)
        e_alu = tech.alu_energy_pj(bits, fmt)
        e_sram = {
            which: tech.sram_energy_pj_per_byte(kib / _BANKS_PER_SRAM)
            for which, kib in (
                ("ifmap", arch.ifmap_sram_kib),
                ("filter", arch.filter_sram_kib),
                ("ofmap", arch.ofmap_sram_kib),
            )
        }
        e_sram_vec = e_sram["ifmap"]  # vector ops stage through the ifmap/ofmap SRAMs
        area = systolic_area_mm2(arch)
        area_total = sum(area.values())
        leak_w = tech.leakage_w(area_total)
        cycle_s = 1e-6 / arch.freq_mhz
        peak = arch.rows * arch.cols

        layers: list[LayerMetrics] = []
        totals = {"mac": 0.0, "sram": 0.0, "dram": 0.0, "vector": 0.0, "leakage": 0.0}
        total_cycles = 0.0
        total_macs = 0
        mac_weighted_cycles = 0.0
        dram_bytes = 0.0
        for name in mapping.order:
            om = mapping.ops[name]
            op = mapping.graph.op(name)
            if om.extra.get("unit") == "array":
                gemm: LoweredGemm = om.extra["gemm"]
                cost = gemm_cost(gemm, arch)
                cycles = cost.total_cycles
                rd = (cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
                wr = cost.ofmap_dram_writes * wb
                # SRAM: array-side accesses plus the DRAM fills (writes) and ofmap drains (reads)
                sram_rd = (cost.ifmap_sram_reads + cost.filter_sram_reads + cost.ofmap_dram_writes) * wb
                sram_wr = (cost.ofmap_sram_writes + cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
                e_s = (
                    (cost.ifmap_sram_reads + cost.ifmap_dram_reads) * wb * e_sram["ifmap"]
                    + (cost.filter_sram_reads + cost.filter_dram_reads) * wb * e_sram["filter"]
                    + (cost.ofmap_sram_writes + cost.ofmap_dram_writes) * wb * e_sram["ofmap"]
                )
                macs = gemm.macs
                breakdown = {"mac": macs * e_mac, "sram": e_s, "dram": tech.dram_energy_pj(rd + wr), "vector": 0.0}
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
                }
            else:
                busy, rd_words, wr_words = vector_op_cost(op, arch, _tensor_words(op, mapping))
                cycles = busy
                compute = float(math.ceil(op.flops / arch.vector_lanes)) if op.flops else 0.0
                stall = cycles - compute
                rd, wr = rd_words * wb, wr_words * wb
                sram_rd, sram_wr = rd, wr
                macs = 0
                util = 0.0
                breakdown = {
                    "mac": 0.0,
                    "sram": (rd + wr) * e_sram_vec,
                    "dram": tech.dram_energy_pj(rd + wr),
                    "vector": op.flops * e_alu,
                }
                extra = {"unit": "vector"}
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

        latency_s = total_cycles * cycle_s
        energy_pj = sum(totals.values())
        energy_mj = energy_pj * 1e-9
        latency_ms = latency_s * 1e3
        batch = int(mapping.graph.meta.get("batch", 1) or 1)
        power_w = energy_pj * 1e-12 / latency_s if latency_s > 0 else 0.0
        ops_per_s = 2 * total_macs / latency_s if latency_s > 0 else 0.0
        values = {
            "latency_cycles": total_cycles,
            "latency_ms": latency_ms,
            "throughput_ips": batch / latency_s if latency_s > 0 else 0.0,
            "energy_mj": energy_mj,
            "edp": energy_mj * latency_ms,
            "area_mm2": area_total,
            "power_w": power_w,
            "utilization": mac_weighted_cycles / total_macs if total_macs else 0.0,
            "dram_mb": dram_bytes / 1e6,
            "tops_per_w": (ops_per_s / 1e12) / power_w if power_w > 0 else 0.0,
        }
        info = {"mapper": mapping.mapper, "area_breakdown_mm2": area, "tech": tech.name, "dram_mode": arch.dram_mode}
        return Metrics(values=values, energy_breakdown_pj=totals, layers=layers, info=info)
