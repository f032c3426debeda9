"""Cycles and DRAM traffic of one GEMM (or vector op) on a systolic array, reproducing SCALE-Sim 3.0.0
analytically: the scalar cost ``gemm_cost`` that the model charges per layer.

SCALE-Sim simulates demand matrices cycle by cycle; here every quantity is a closed form of the
lowered GEMM (``hwmodels.systolic.compute``), the fold counts and the SRAM sizes:

* **Compute cycles** — folds x fold length, exactly SCALE-Sim's demand-matrix length.
* **DRAM reads** — SCALE-Sim's double-buffered read SRAM (``read_buffer_estimate_bw.py``) records
  new addresses in sets of ``floor(words/100)``; a reference hits only if its address was brought
  in since the last boundary of ``50`` sets (the active half). So an operand is re-fetched whenever
  a reuse straddles such a boundary of W = 50*floor(words/100) fetched words. For a block of
  f < W distinct words repeated r times the first pass fetches f and the second re-fetches only
  the prefix fetched before the boundary it crossed; f >= W thrashes (every pass re-fetches all).
  The ifmap im2col stream re-references inputs horizontally (neighbouring pixels, a few lines apart)
  and vertically (the next output row); each reuse misses with probability (reuse distance / W)
  (``hwmodels.systolic.memory``).
* **DRAM writes** — every ofmap word the array emits goes through the ofmap SRAM to DRAM (ws/is emit
  partial sums once per row fold, as SCALE-Sim does). The ofmap SRAM drains its passive half
  (``words/2``) when the active half fills; what is left drains after the last fold (the tail).
* **Total cycles** — initial fill of the read SRAMs (the prefetch before cycle 0) + compute (+ DRAM
  stalls) + ofmap tail, SCALE-Sim's "Total Cycles (incl. prefetch)". Under ``unlimited`` (CALC, drained at
  ``cols`` words/cycle) and ``per_operand`` (USER, at its whole words/cycle) the tail is SCALE-Sim's write
  buffer replayed drain by drain (``memory.calc_ofmap_tail``): a half drained near the end runs past the
  last fold. The replay assumes the array never waits for a drain, so USER uses it only where no line
  writes more words than the DRAM takes per cycle; elsewhere (writes that outrun the DRAM stall the array,
  priced by the ofmap rate below) and under ``shared`` (one channel) the tail keeps the closed form.

DRAM stalls follow ``arch.dram_mode`` (see ``templates.systolic``): ``unlimited`` = SCALE-Sim CALC
(no stall; fill at ``dram_words_per_cycle``, ofmap drain at ``cols`` words/cycle), ``per_operand`` =
SCALE-Sim USER (each stream its own port of ``dram_words_per_cycle``), ``shared`` = one channel for
all three streams. In ``per_operand`` mode (every dataflow) the read traffic and read stalls come from an
emulation of SCALE-Sim USER's circular prefetch-window walk (``hwmodels.systolic.user_mode``): it re-reads
whole operands that are still on chip, a simulator artifact reproduced only in that
SCALE-Sim-compatible mode (a sparse N:M GEMM keeps the closed forms). Otherwise, with limited bandwidth
the busy time is max(compute, traffic / bandwidth): one operand's prefetches are chained back to
back and the array waits for them (SCALE-Sim doubles a per-miss stall, but consecutive stalls then
alternate, so the average rate is the DRAM rate).

Energy is access counts x catalog per-access energies (``hwmodels.systolic.pricing``) plus leakage x
latency, charged by ``hwmodels.systolic.model``.

``hwmodels.systolic.batch.gemm_cost_arrays`` evaluates the same closed forms over arrays of (design,
GEMM) pairs at once, for batch consumers (the surrogates' baseline); a test holds it equal to
``gemm_cost`` wherever it does not mark a pair approximate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Op
from hwmodels.systolic.compute import LoweredGemm, array_sram_reads, array_writes, fold_cycles, folds, spatial_dims
from hwmodels.systolic.memory import (
    OfmapWriteProfile,
    calc_ofmap_tail,
    epoch_words,
    fill_cycles_unlimited,
    filter_dram_reads,
    ifmap_dram_reads,
    ofmap_tail,
)
from hwmodels.systolic.scalesim_calc import calc_dram_reads
from hwmodels.systolic.user_mode import user_mode_traffic
from templates.systolic import SystolicArch


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


def gemm_cost(
    gemm: LoweredGemm, arch: SystolicArch, write_output: bool = True, read_input: bool = True, read_filter: bool = True
) -> GemmCost:
    """Everything SCALE-Sim reports for one layer, for all ``gemm.count`` copies run back to back.

    ``write_output=False`` is a fused producer (``OpMapping.resident_output``): its ofmap stays on
    chip for the op fused into it, so nothing is written to DRAM and there is no drain.
    ``read_input=False`` / ``read_filter=False``: that operand is already on chip (a fused or
    transferred input, weights kept from an earlier tile), so it costs no DRAM reads, fill or stall.
    """
    rows, cols, df = arch.rows, arch.cols, arch.dataflow
    sr, sc, t = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    lines = rf * cf * fold_cycles(t, rows, cols, df)
    n = gemm.count
    words_if, words_f, words_of = arch.sram_words("ifmap"), arch.sram_words("filter"), arch.sram_words("ofmap")

    if arch.dram_mode == "unlimited":
        # SCALE-Sim CALC compatibility: its read buffer's exact epoch rule (hwmodels/systolic/scalesim_calc.py);
        # memoised per layer shape, but a cold replay of a big layer costs up to ~2 s, so only here.
        if_exact, f_exact = calc_dram_reads(gemm, arch)
        if_reads, f_reads = float(if_exact), float(f_exact)
    else:
        if_reads = ifmap_dram_reads(gemm, df, rows, cols, epoch_words(words_if, min_set_words=1))
        if gemm.window_pattern is not None:  # N:M across channels: the dense geometry's share of it
            g = gemm.geometry
            if_reads *= gemm.K / (g.R * g.S * g.C)
        f_reads = float(filter_dram_reads(gemm, df, rows, cols, epoch_words(words_f, min_set_words=1)))
    if_reads, f_reads = (if_reads if read_input else 0.0), (f_reads if read_filter else 0.0)
    emitted = float(array_writes(gemm.M, gemm.N, rf, df))
    of_writes = emitted if write_output else 0.0

    sram_if, sram_f = array_sram_reads(df, sr, sc, t, rf, cf)
    sram_of = emitted

    bw = arch.dram_words_per_cycle
    mode = arch.dram_mode
    first_if = rows if df == "ws" else 0
    first_f = rows if df == "is" else 0
    fill_if = fill_cycles_unlimited(if_reads, words_if, first_if, bw)
    fill_f = fill_cycles_unlimited(f_reads, words_f, first_f, bw)
    drain_bw = cols if mode == "unlimited" else bw
    tail, _ = ofmap_tail(of_writes, words_of, drain_bw)
    # SCALE-Sim CALC / USER: a drain triggered near the end runs past it. The replay holds while the array
    # never waits for a drain: under CALC, and under USER when no line writes more words than a DRAM line holds
    # (min(cols, Sc) active columns write one word each per line), so a drain always outpaces the writes.
    whole_bw = cols if mode == "unlimited" else max(1, round(bw))
    if of_writes and (mode == "unlimited" or (mode == "per_operand" and min(cols, sc) <= whole_bw)):
        tail = float(calc_ofmap_tail(OfmapWriteProfile.of(gemm, df, rows, cols), words_of, whole_bw))
    # words of each stream moved while the array runs (the fill and the tail are outside it)
    during_if = max(0.0, if_reads - min(if_reads, fill_if * bw))
    during_f = max(0.0, f_reads - min(f_reads, fill_f * bw))
    during_of = max(0.0, of_writes - tail * drain_bw)
    if mode == "per_operand" and gemm.window_pattern is None:
        user = user_mode_traffic(gemm, arch)
        if_reads = user.ifmap_dram_reads if read_input else 0.0
        f_reads = user.filter_dram_reads if read_filter else 0.0
        fill = float(user.fill_cycles)
        busy = max(float(lines + user.read_stall_cycles), during_of / bw)
    elif mode == "unlimited":
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
    busy = float(vector_busy_cycles(compute, reads, writes, arch.dram_words_per_cycle, arch.dram_mode))
    return busy, reads, writes


def vector_busy_cycles(compute: Any, reads: Any, writes: Any, words_per_cycle: Any, dram_mode: str) -> Any:
    """Busy cycles of the SIMD unit (numbers or arrays): its compute, or the DRAM streams if slower --
    none under ``unlimited``, each its own port under ``per_operand``, one channel under ``shared``."""
    if dram_mode == "unlimited":
        return compute + 0.0 * words_per_cycle
    if dram_mode == "per_operand":
        return np.maximum(compute, np.maximum(reads, writes) / words_per_cycle)
    return np.maximum(compute, (reads + writes) / words_per_cycle)
