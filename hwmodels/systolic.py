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
all three streams. For os/ws in ``per_operand`` mode the read traffic and read stalls come from an
emulation of SCALE-Sim USER's circular prefetch-window walk (see that section below): it re-reads
whole operands that are still on chip, a simulator artifact reproduced only in that
SCALE-Sim-compatible mode; ``is`` keeps the closed forms there. Otherwise, with limited bandwidth
the busy time is max(compute, traffic / bandwidth): one operand's prefetches are chained back to
back and the array waits for them (SCALE-Sim doubles a per-miss stall, but consecutive stalls then
alternate, so the average rate is the DRAM rate).

Energy is access counts x catalog per-access energies (``hwmodels.catalogs.tech``) plus leakage x latency.

``gemm_cost_arrays`` evaluates the same closed forms over arrays of (design, GEMM) pairs at once, for
batch consumers (the surrogates' baseline); a test holds it equal to ``gemm_cost`` wherever it does
not mark a pair approximate.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Op
from hwmodels.base import LayerMetrics, Metrics
from hwmodels.scalesim_calc import calc_dram_reads
from mappers.base import Mapping
from mappers.systolic import ConvGeometry, LoweredGemm, fold_cycles, folds, im2col_address, spatial_dims
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
# A unified scratchpad (``scratchpad="unified"``) is banked so the array's input, weight and output
# streams and the DMA rarely meet in one bank; 4 banks is Gemmini's default scratchpad (``sp_banks =
# 4``, Genc et al., DAC 2021). Its banks are a quarter of the whole, larger than a split SRAM's halves
# (a sixth of the whole), so every access costs more: the price of one shared address space.
_UNIFIED_BANKS = 4


def bank_kib(ifmap_kib, filter_kib, ofmap_kib, unified):  # noqa: ANN001, ANN201 (scalars or numpy arrays)
    """The bank one access to the ifmap, filter and ofmap SRAMs activates, in KiB: their energy scale.

    The one place this is decided, for scalars (the model, the tiling mappers' prices) and for numpy
    columns (the surrogates' batch features): a split SRAM's half, or a quarter of a unified scratchpad.
    """
    sizes = (ifmap_kib, filter_kib, ofmap_kib)
    whole = (ifmap_kib + filter_kib + ofmap_kib) / _UNIFIED_BANKS
    if isinstance(unified, (bool, np.bool_)):
        return tuple(whole if unified else kib / _BANKS_PER_SRAM for kib in sizes)
    return tuple(np.where(unified, whole, np.asarray(kib) / _BANKS_PER_SRAM) for kib in sizes)


def sram_bank_kib(arch: SystolicArch) -> dict[str, float]:
    """The bank one access to each SRAM ('ifmap' | 'filter' | 'ofmap') activates, in KiB: its energy scale."""
    banks = bank_kib(arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib, arch.scratchpad == "unified")
    return dict(zip(("ifmap", "filter", "ofmap"), banks))


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
# SCALE-Sim USER bandwidth mode (dram_mode="per_operand"): an emulation of its read-buffer window walk
# ---------------------------------------------------------------------------------------------------
# SCALE-Sim USER mode (``memory/read_buffer.py``) cuts each operand's *prefetch* stream (the operand
# matrix in the order its compute class lays it out for prefetching) into sets of ceil(words/100)
# addresses; the active window is 50 consecutive sets, circular over the operand. A demanded address
# in no set of the window triggers a new prefetch: the window moves on by 50 sets and another
# half-SRAM of words (rounded up to whole DRAM lines) is read, until the address is inside it. When
# the address lies behind the window (a demand line holding addresses from both sides of a window
# boundary, the start of a block the dataflow streams again, a row fold whose first diagonals the
# prefetch order interleaved with the previous fold's last ones) the window goes all the way round
# the operand again. That is a simulator artifact: the words are still on chip and a real
# double-buffered SRAM would not re-read the operand. It is emulated here, with numpy over the demand
# stream in chunks, only for ``dram_mode="per_operand"`` (the SCALE-Sim-compatible mode); the
# physical ``shared`` mode keeps the closed forms above.
#
# The prefetches of one operand are chained back to back (each starts the cycle after the previous
# one ends, however early), and a demand line that misses waits for them with SCALE-Sim's rule:
# service time t becomes the prefetch end L if L <= t, else 2L - t. The line stalls the array by
# the worst operand's wait; the emulation replays that rule over the miss events only.
_USER_ACTIVE_FRAC = 0.5
_WALK_CHUNK = 1 << 14
_DUPLICATE_BATCH = 512


@dataclass
class _Segment:
    """A run of demands, in demand order: the set holding each word's own prefetch copy, the line
    (relative to the segment's start) it is read on, and for the ifmap its (pixel, window) identity."""

    sets: np.ndarray
    lines: np.ndarray
    pixel: np.ndarray | None = None
    window: np.ndarray | None = None


@dataclass
class _OperandWalk:
    """One read operand: its prefetch stream, demand segments and the order they are demanded in."""

    fetch_words: int  # non-null words of the prefetch matrix
    fetch_matrix_words: int  # words of the prefetch matrix, nulls included (sizes its DRAM lines)
    segments: list[_Segment]
    instances: list[tuple[int, int]]  # (segment index, line offset), in demand order
    duplicates: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None


def _rollout_index(n_rows: int, n_cols: int, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Position of (row, col) when SCALE-Sim rolls an n_rows x n_cols matrix out along its anti-diagonals
    (``create_*_prefetch_mat``: diagonal d = row + col in order, rows decreasing inside one)."""
    d = row + col
    # words on the diagonals before d: sum over e < d of min(e, R-1) - max(0, e-C+1) + 1
    r1, c1 = n_rows - 1, n_cols - 1

    def before(e: np.ndarray) -> np.ndarray:  # sum_{x<e} (min(x, r1) + 1) - sum_{x<e} max(0, x - c1)
        a = np.minimum(e, r1 + 1)
        up = a * (a + 1) // 2 + (e - a) * (r1 + 1)
        b = np.maximum(0, e - c1)
        down = (b - 1) * b // 2
        return up - down

    return before(d) + np.minimum(d, r1) - row


def _rolled_blocks(
    addr_of: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    n_blocks: int,
    t_len: int,
    width: int,
    last_width: int,
    words_per_set: int,
) -> tuple[int, int, list[_Segment], Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """Operands whose prefetch matrix is ``n_blocks`` blocks of (t_len x width) stacked and rolled out
    along anti-diagonals, and whose demand streams one block at a time along the block's own
    anti-diagonals (os ifmap, os filter, ws ifmap). ``addr_of(block, t, c)`` gives the address or -1;
    the last block is ``last_width`` wide (the rest of it is SCALE-Sim's null padding).

    Returns (non-null words, words incl. nulls, one demand segment per block with lines t + c, and
    (row, col) of the stacked matrix -> set index).
    """
    n_rows = n_blocks * t_len
    b3 = np.arange(n_blocks)[:, None, None]
    t3 = np.arange(t_len)[None, :, None]
    c3 = np.arange(width)[None, None, :]
    addr = addr_of(b3, t3, c3)
    addr = np.where((b3 < n_blocks - 1) | (c3 < last_width), addr, -1)
    valid = addr >= 0
    pos = _rollout_index(n_rows, width, b3 * t_len + t3, c3)
    valid_at = np.zeros(n_rows * width, dtype=bool)
    valid_at[pos[valid]] = True
    nonnull = np.cumsum(valid_at) - 1
    sets = (nonnull[pos] // words_per_set).astype(np.int32)
    set_table = sets.reshape(n_rows, width)

    def set_of(row: np.ndarray, col: np.ndarray) -> np.ndarray:
        return set_table[row, col]

    # demand order inside one block: its own anti-diagonals
    tt, cc = np.meshgrid(np.arange(t_len), np.arange(width), indexing="ij")
    order = np.empty(t_len * width, dtype=np.int64)
    order[_rollout_index(t_len, width, tt, cc).ravel()] = np.arange(t_len * width)
    lt, lc = np.divmod(order, width)
    flat_valid = valid.reshape(n_blocks, -1)[:, order]
    flat_sets = sets.reshape(n_blocks, -1)[:, order]
    segments = []
    for blk in range(n_blocks):
        keep = flat_valid[blk]
        segments.append(_Segment(flat_sets[blk][keep], lt[keep] + lc[keep], lt[keep], lc[keep]))
    return int(valid_at.sum()), n_rows * width, segments, set_of


def _concat_segments(parts: list[tuple[_Segment, int]]) -> _Segment:
    """One segment from several, each shifted by its line offset (a whole pass of folds at once)."""
    return _Segment(
        np.concatenate([s.sets for s, _ in parts]),
        np.concatenate([s.lines + off for s, off in parts]),
        None if parts[0][0].pixel is None else np.concatenate([s.pixel for s, _ in parts]),
        None if parts[0][0].window is None else np.concatenate([s.window for s, _ in parts]),
    )


def _ifmap_duplicates(
    g: ConvGeometry, set_of_entry: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """For im2col entries (pixel, window): the sets of all R*S entries that may hold the same ifmap
    word (same input pixel and channel) and which of them exist, as two (entries x R*S) arrays."""
    r_all = np.arange(g.R)
    s_all = np.arange(g.S)

    def sets(pixel: np.ndarray, window: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        oh, ow = np.divmod(pixel, g.Q)
        r, rest = np.divmod(window, g.S * g.C)
        s, ch = np.divmod(rest, g.C)
        y = (oh * g.stride_h + r)[:, None] - r_all[None, :]  # entries x R: output row * stride
        x = (ow * g.stride_w + s)[:, None] - s_all[None, :]
        ok_y = (y % g.stride_h == 0) & (y >= 0) & (y < g.P * g.stride_h)
        ok_x = (x % g.stride_w == 0) & (x >= 0) & (x < g.Q * g.stride_w)
        ok = (ok_y[:, :, None] & ok_x[:, None, :]).reshape(len(pixel), -1)
        pix = (np.where(ok_y, y, 0) // g.stride_h * g.Q)[:, :, None] + (np.where(ok_x, x, 0) // g.stride_w)[:, None, :]
        win = ((r_all[:, None] * g.S + s_all[None, :]) * g.C)[None, :, :] + ch[:, None, None]
        return set_of_entry(pix.reshape(len(pixel), -1), win.reshape(len(pixel), -1)), ok

    return sets


def _steps_to_reach(sets: np.ndarray, start: int, n_sets: int, active: int, step: int) -> int:
    """New prefetches until the window (``active`` sets from ``start``, ``step`` per prefetch) holds one of ``sets``."""
    for m in range(1, 2 * n_sets + 2):
        if np.any((sets - (start + m * step)) % n_sets < active):
            return m
    raise AssertionError("SCALE-Sim USER window walk never reaches the address")  # pragma: no cover


def _window_walk(op: _OperandWalk, sram_words: int) -> tuple[int, list[tuple[int, int]]]:
    """(new prefetches, [(demand line, prefetches issued on it)]) of SCALE-Sim's USER read buffer."""
    per_set = math.ceil(sram_words / _SETS_PER_BUFFER)
    active_words = math.ceil(sram_words * _USER_ACTIVE_FRAC)
    n_sets = op.fetch_words // per_set + 1
    active = min(math.ceil(active_words / per_set), n_sets)
    step = min(math.ceil((sram_words - active_words) / per_set), n_sets - active)
    if step <= 0:
        return 0, []  # the whole operand fits in the active window: every demand hits
    start = 0
    total = 0
    events: list[tuple[int, int]] = []
    for seg_index, line_offset in op.instances:
        seg = op.segments[seg_index]
        i, n = 0, len(seg.sets)
        while i < n:
            end = min(n, i + _WALK_CHUNK)
            candidates = np.flatnonzero((seg.sets[i:end] - start) % n_sets >= active)
            miss = -1
            miss_sets = None
            if candidates.size and op.duplicates is None:
                miss = int(candidates[0])
                miss_sets = seg.sets[i + miss : i + miss + 1]
            elif candidates.size:
                for lo in range(0, candidates.size, _DUPLICATE_BATCH):
                    batch = candidates[lo : lo + _DUPLICATE_BATCH] + i
                    sets, exists = op.duplicates(seg.pixel[batch], seg.window[batch])
                    inside = exists & ((sets - start) % n_sets < active)
                    lost = np.flatnonzero(~inside.any(axis=1))
                    if lost.size:
                        miss = int(batch[lost[0]]) - i
                        miss_sets = sets[lost[0]][exists[lost[0]]]
                        break
            if miss < 0:
                i = end
                continue
            m = _steps_to_reach(miss_sets, start, n_sets, active, step)
            start = (start + m * step) % n_sets
            total += m
            events.append((line_offset + int(seg.lines[i + miss]), m))
            i += miss + 1
    return total, events


def _stall_replay(events: list[list[tuple[int, int]]], prefetch_lines: list[int]) -> int:
    """Array stall cycles from the read misses, by SCALE-Sim's per-line rule (see the section comment)."""
    merged: dict[int, list[int]] = {}
    for o, evs in enumerate(events):
        for line, m in evs:
            merged.setdefault(line, [0] * len(events))[o] += m
    last = [-1] * len(events)  # cycle the latest prefetch of each operand ends; the fill ends at -1
    stall = 0
    for line in sorted(merged):
        cycle = line + stall
        worst = 0
        for o, m in enumerate(merged[line]):
            if not m:
                continue
            t = cycle + 1
            for _ in range(m):
                last[o] += prefetch_lines[o] + 1
                t = last[o] if last[o] <= t else 2 * last[o] - t
            worst = max(worst, t - cycle - 1)
        stall += worst
    return stall


def _user_operands(
    gemm: LoweredGemm, rows: int, cols: int, df: str, words_if: int, words_f: int
) -> tuple[_OperandWalk, _OperandWalk]:
    """SCALE-Sim's ifmap and filter streams for one GEMM copy (os and ws dataflows)."""
    g = gemm.geometry
    m_px, k_win, n_f = gemm.M, gemm.K, gemm.N
    sr, sc, t_len = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    fold_len = fold_cycles(t_len, rows, cols, df)
    per_set_if = math.ceil(words_if / _SETS_PER_BUFFER)
    per_set_f = math.ceil(words_f / _SETS_PER_BUFFER)

    def filter_addr(col: np.ndarray, row: np.ndarray) -> np.ndarray:
        return col * k_win + row

    if df == "os":
        # ifmap: blocks = row folds of im2col^T (window x pixels); demanded for fc: for fr
        words, total, blocks, set_of = _rolled_blocks(
            lambda b, t, c: im2col_address(g, b * rows + c, t), rf, k_win, rows, m_px - (rf - 1) * rows, per_set_if
        )
        for b, seg in enumerate(blocks):
            seg.pixel, seg.window = b * rows + seg.window, seg.pixel
        one_pass = _concat_segments([(seg, b * fold_len) for b, seg in enumerate(blocks)])

        def entry_set(pix: np.ndarray, win: np.ndarray) -> np.ndarray:
            return set_of((pix // rows) * k_win + win, pix % rows)

        ifmap = _OperandWalk(
            words, total, [one_pass], [(0, fc * rf * fold_len) for fc in range(cf)], _ifmap_duplicates(g, entry_set)
        )
        # filter: blocks = column folds (window x filters); each demanded rf times in a row
        words, total, blocks, _ = _rolled_blocks(
            lambda b, t, c: filter_addr(b * cols + c, t), cf, k_win, cols, n_f - (cf - 1) * cols, per_set_f
        )
        filt = _OperandWalk(
            words, total, blocks, [(fc, (fc * rf + fr) * fold_len) for fc in range(cf) for fr in range(rf)]
        )
        return ifmap, filt
    # ws. ifmap: blocks = row folds of im2col (pixels x window slice), after a `rows`-line preload gap
    words, total, blocks, set_of = _rolled_blocks(
        lambda b, t, c: im2col_address(g, t, b * rows + c), rf, m_px, rows, k_win - (rf - 1) * rows, per_set_if
    )
    for b, seg in enumerate(blocks):
        seg.pixel, seg.window = seg.pixel, b * rows + seg.window
    one_pass = _concat_segments([(seg, b * fold_len + rows) for b, seg in enumerate(blocks)])

    def entry_set_ws(pix: np.ndarray, win: np.ndarray) -> np.ndarray:
        return set_of((win // rows) * m_px + pix, win % rows)

    ifmap = _OperandWalk(
        words, total, [one_pass], [(0, fc * rf * fold_len) for fc in range(cf)], _ifmap_duplicates(g, entry_set_ws)
    )
    # filter: column folds stacked row-major (no roll-out); a fold reads its rows bottom-up, one per line
    segments = []
    for fc in range(cf):
        width = min(cols, n_f - fc * cols)
        fr_idx, line, c = np.meshgrid(np.arange(rf), np.arange(rows), np.arange(width), indexing="ij")
        row = fr_idx * rows + rows - 1 - line
        keep = row < k_win
        nonnull = fc * k_win * cols + row * width + c
        segments.append(_Segment((nonnull[keep]) // per_set_f, (fr_idx * fold_len + line)[keep]))
    filt = _OperandWalk(k_win * n_f, k_win * cols * cf, segments, [(fc, fc * rf * fold_len) for fc in range(cf)])
    return ifmap, filt


@dataclass(frozen=True)
class UserModeTraffic:
    """SCALE-Sim USER mode's DRAM reads and read stalls for one GEMM copy."""

    ifmap_dram_reads: float
    filter_dram_reads: float
    read_stall_cycles: int
    fill_cycles: int  # the initial prefetch: DRAM lines of the larger first fill


def user_mode_traffic(gemm: LoweredGemm, arch: SystolicArch) -> UserModeTraffic:
    """Emulate SCALE-Sim USER mode's read buffers (os, ws) for one GEMM copy.

    Memoised on what the walk depends on, since a network repeats layer shapes and an exploration
    revisits them on every design point with the same array and SRAMs.
    """
    words = (arch.sram_words("ifmap"), arch.sram_words("filter"))
    bw = max(1, round(arch.dram_words_per_cycle))
    return _user_mode_traffic(gemm, arch.rows, arch.cols, arch.dataflow, words, bw)


def clear_user_mode_cache() -> None:
    """Forget memoised USER-mode emulations (for timing them)."""
    _user_mode_traffic.cache_clear()


@functools.lru_cache(maxsize=512)
def _user_mode_traffic(
    gemm: LoweredGemm, rows: int, cols: int, df: str, sram_words: tuple[int, int], bw: int
) -> UserModeTraffic:
    ifmap, filt = _user_operands(gemm, rows, cols, df, *sram_words)
    reads: list[float] = []
    events: list[list[tuple[int, int]]] = []
    prefetch_lines: list[int] = []
    fills: list[int] = []
    for op, words in zip((ifmap, filt), sram_words):
        active = math.ceil(words * _USER_ACTIVE_FRAC)
        first_lines = min(math.ceil(active / bw), math.ceil(op.fetch_matrix_words / bw))
        lines = math.ceil((words - active) / bw)
        count, evs = _window_walk(op, words)
        reads.append(float((first_lines + count * lines) * bw))
        events.append(evs)
        prefetch_lines.append(lines)
        fills.append(first_lines)
    return UserModeTraffic(reads[0], reads[1], _stall_replay(events, prefetch_lines), max(fills))


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


def array_sram_reads(dataflow: str, sr: Any, sc: Any, t: Any, rf: Any, cf: Any) -> tuple[Any, Any]:
    """(ifmap, filter) SRAM reads of the array for one GEMM copy (numbers or arrays): the streamed operand
    is read once per fold of the other side, the stationary one once."""
    if dataflow == "os":
        return sr * t * cf, t * sc * rf
    if dataflow == "ws":
        return t * sr * cf, sr * sc
    return sr * sc, t * sr * cf


def gemm_cost(gemm: LoweredGemm, arch: SystolicArch, write_output: bool = True) -> GemmCost:
    """Everything SCALE-Sim reports for one layer, for all ``gemm.count`` copies run back to back.

    ``write_output=False`` is a fused producer (``OpMapping.resident_output``): its ofmap stays on
    chip for the op fused into it, so nothing is written to DRAM and there is no drain.
    """
    rows, cols, df = arch.rows, arch.cols, arch.dataflow
    sr, sc, t = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    lines = rf * cf * fold_cycles(t, rows, cols, df)
    n = gemm.count
    words_if, words_f, words_of = arch.sram_words("ifmap"), arch.sram_words("filter"), arch.sram_words("ofmap")

    if arch.dram_mode == "unlimited":
        # SCALE-Sim CALC compatibility: its read buffer's exact epoch rule (hwmodels/scalesim_calc.py);
        # memoised per layer shape, but a cold replay of a big layer costs up to ~2 s, so only here.
        if_exact, f_exact = calc_dram_reads(gemm, arch)
        if_reads, f_reads = float(if_exact), float(f_exact)
    else:
        if_reads = ifmap_dram_reads(gemm, df, rows, cols, epoch_words(words_if))
        f_reads = float(filter_dram_reads(gemm, df, rows, cols, epoch_words(words_f)))
    array_writes = float(gemm.M * gemm.N * (1 if df == "os" else rf))
    of_writes = array_writes if write_output else 0.0

    sram_if, sram_f = array_sram_reads(df, sr, sc, t, rf, cf)
    sram_of = array_writes

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
    if mode == "per_operand" and df in ("os", "ws"):
        user = user_mode_traffic(gemm, arch)
        if_reads, f_reads = user.ifmap_dram_reads, user.filter_dram_reads
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
# The same closed forms over arrays: many (design, GEMM) pairs at once
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmShapes:
    """Lowered GEMMs as arrays (one entry per GEMM, any broadcastable shape): ``LoweredGemm`` and the
    ``ConvGeometry`` figures ``gemm_cost`` uses, for ``gemm_cost_arrays``."""

    m: np.ndarray
    k: np.ndarray
    n: np.ndarray
    count: np.ndarray
    unique_inputs: np.ndarray
    references: np.ndarray
    row_uses: np.ndarray
    used_rows: np.ndarray
    col_uses: np.ndarray
    used_cols: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    S: np.ndarray
    C: np.ndarray
    stride_h: np.ndarray
    stride_w: np.ndarray
    write_output: np.ndarray  # bool: False for a fused producer whose ofmap stays on chip

    @classmethod
    def of(cls, gemms: list[LoweredGemm], write_output: list[bool]) -> GemmShapes:
        g = [x.geometry for x in gemms]
        a = functools.partial(np.array, dtype=float)
        return cls(
            a([x.M for x in gemms]), a([x.K for x in gemms]), a([x.N for x in gemms]), a([x.count for x in gemms]),
            a([x.unique_inputs for x in g]), a([x.references for x in g]), a([x.row_uses for x in g]),
            a([x.used_rows for x in g]), a([x.col_uses for x in g]), a([x.used_cols for x in g]),
            a([x.P for x in g]), a([x.Q for x in g]), a([x.R for x in g]), a([x.S for x in g]), a([x.C for x in g]),
            a([x.stride_h for x in g]), a([x.stride_w for x in g]), np.array(write_output, dtype=bool),
        )  # fmt: skip


def gemm_cost_arrays(
    s: GemmShapes,
    dataflow: str,
    dram_mode: str,
    rows: np.ndarray,
    cols: np.ndarray,
    words_if: np.ndarray,
    words_f: np.ndarray,
    words_of: np.ndarray,
    words_per_cycle: np.ndarray,
) -> dict[str, np.ndarray]:
    """``gemm_cost`` for every (design, GEMM) pair of one dataflow and DRAM mode: design-side arrays
    broadcast against ``s``'s GEMM-side arrays. Batch consumers (the surrogates) call it for 10^5 designs.

    The same formulas as ``gemm_cost`` for ``shared`` DRAM and for ``is``; two stand-ins where the
    scalar model walks a sequence: the os filter's per-column-fold epoch rule is replaced by its
    expectation (a block of b < W words straddles a boundary with probability b/W and then re-fetches
    b/2 on average), and ``unlimited`` / os-ws ``per_operand`` use these closed forms instead of the
    SCALE-Sim replays. ``approximate`` marks the pairs where either applies.
    Returns per pair, all copies: cycles, compute_cycles, busy_cycles, fill_cycles, tail_cycles, the
    DRAM reads/writes and SRAM accesses of ``GemmCost``, and ``approximate``.
    """
    sr, sc, t = {"os": (s.m, s.n, s.k), "ws": (s.k, s.n, s.m), "is": (s.k, s.m, s.n)}[dataflow]
    rf, cf = np.ceil(sr / rows), np.ceil(sc / cols)
    lines = rf * cf * (t + rows + cols - 2 + (0 if dataflow == "os" else rows))
    per_set_if = np.maximum(1.0, np.floor(words_if / _SETS_PER_BUFFER))
    per_set_f = np.maximum(1.0, np.floor(words_f / _SETS_PER_BUFFER))
    epoch_if, epoch_f = _ACTIVE_SETS * per_set_if, _ACTIVE_SETS * per_set_f
    if_reads = _ifmap_reads_arrays(s, dataflow, rows, cols, cf, epoch_if)
    f_reads, approximate = _filter_reads_arrays(s, dataflow, rows, cols, rf, cf, epoch_f)
    bw = words_per_cycle

    def fill(reads: np.ndarray, epoch: np.ndarray, per_set: np.ndarray, first: np.ndarray | float) -> np.ndarray:
        return np.where(reads >= epoch, np.ceil(epoch / bw) - first, np.ceil(np.ceil(reads / per_set) * per_set / bw))

    fill_if = fill(if_reads, epoch_if, per_set_if, rows if dataflow == "ws" else 0.0)
    fill_f = fill(f_reads, epoch_f, per_set_f, rows if dataflow == "is" else 0.0)
    array_writes = s.m * s.n * (1.0 if dataflow == "os" else rf)
    of_writes = np.where(s.write_output, array_writes, 0.0)
    drain_bw = cols if dram_mode == "unlimited" else bw
    half = words_of - np.ceil(words_of / 2)
    drains = np.where(of_writes > 0, np.floor(np.maximum(of_writes - 1.0, 0.0) / half), 0.0)
    tail = np.ceil((of_writes - drains * half) / drain_bw)
    during_if = if_reads - np.minimum(if_reads, fill_if * bw)
    during_f = f_reads - np.minimum(f_reads, fill_f * bw)
    during_of = np.maximum(0.0, of_writes - tail * drain_bw)
    if dram_mode == "unlimited":
        fill_cycles, busy = np.maximum(fill_if, fill_f), lines
        approximate = np.ones(np.shape(lines), dtype=bool)  # SCALE-Sim CALC's exact replay is not here
    elif dram_mode == "per_operand":
        fill_cycles = np.maximum(fill_if, fill_f)
        busy = np.maximum(np.maximum(lines, during_if / bw), np.maximum(during_f / bw, during_of / bw))
        approximate = approximate | (dataflow != "is")
    else:
        fill_cycles = fill_if + fill_f
        busy = np.maximum(lines, (during_if + during_f + during_of) / bw)
    sram_if, sram_f = array_sram_reads(dataflow, sr, sc, t, rf, cf)
    n = s.count
    figures = {
        "cycles": fill_cycles + n * busy + tail,
        "compute_cycles": n * lines,
        "busy_cycles": n * busy,
        "fill_cycles": fill_cycles,
        "tail_cycles": tail,
        "ifmap_dram_reads": n * if_reads,
        "filter_dram_reads": n * f_reads,
        "ofmap_dram_writes": n * of_writes,
        "ifmap_sram_reads": n * sram_if,
        "filter_sram_reads": n * sram_f,
        "ofmap_sram_writes": n * array_writes,
        "row_folds": rf,
        "col_folds": cf,
        "approximate": approximate,
    }
    shape = np.broadcast_shapes(*(np.shape(value) for value in figures.values()))
    return {name: np.broadcast_to(value, shape) for name, value in figures.items()}


def _ifmap_reads_arrays(
    s: GemmShapes, dataflow: str, rows: np.ndarray, cols: np.ndarray, cf: np.ndarray, epoch: np.ndarray
) -> np.ndarray:
    """``ifmap_dram_reads`` (one copy) over arrays: ``ifmap_pass_fetches``'s spans, then the passes."""
    unique, refs = s.unique_inputs, s.references
    if dataflow in ("os", "is"):
        n_r, n_s = s.row_uses / s.used_rows, s.col_uses / s.used_cols
        pixels = s.P * s.Q
        chunk = rows if dataflow == "os" else cols
        fetched = unique + 0.0 * epoch
        for _ in range(3):
            per_pixel = fetched / pixels
            span = (n_r - 1) * s.Q * per_pixel + (n_s - 1) * per_pixel * (s.stride_w * chunk / (s.R * s.S) + 1)
            fetched = np.minimum(refs, unique + unique * span / epoch)
        one_pass = fetched
    else:
        horizontal = s.row_uses * s.C * (s.col_uses - s.used_cols)
        vertical = s.C * s.used_cols * (s.row_uses - s.used_rows)
        h_gap, v_gap = s.stride_w * s.C / rows, s.stride_h * s.S * s.C / rows
        cross_h, cross_v = horizontal * np.minimum(1.0, h_gap), vertical * np.minimum(1.0, v_gap)
        block_words = (unique + cross_h + cross_v) / np.ceil(s.R * s.S * s.C / rows)
        h_miss = np.minimum(1.0, np.maximum(1.0, h_gap) * block_words / epoch)
        v_miss = np.minimum(1.0, np.maximum(1.0, v_gap) * block_words / epoch)
        one_pass = unique + cross_h * h_miss + cross_v * v_miss
    small = (unique < epoch) | (refs <= unique)
    one_pass = np.where(small, np.where(refs > 0, np.minimum(unique, refs), unique), one_pass)
    if dataflow == "is":
        return one_pass
    return np.where(unique < epoch, one_pass, one_pass * cf)


def _filter_reads_arrays(
    s: GemmShapes, dataflow: str, rows: np.ndarray, cols: np.ndarray, rf: np.ndarray, cf: np.ndarray, epoch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``filter_dram_reads`` (one copy) over arrays, and where it is the os expectation (see above)."""
    kn = s.k * s.n
    if dataflow == "ws":
        return kn + 0.0 * epoch, np.zeros(np.broadcast_shapes(np.shape(kn), np.shape(epoch)), dtype=bool)
    if dataflow == "is":
        exact = np.where((cf <= 1) | (kn < epoch), kn, kn * cf)
        return exact, np.zeros(np.shape(exact), dtype=bool)

    def block_fetches(block: np.ndarray) -> np.ndarray:
        expected = block + block * np.minimum(block, epoch) / (2 * epoch)
        return np.where(rf <= 1, block, np.where(block >= epoch, block * rf, expected))

    full, last = s.k * cols, s.k * (s.n - (cf - 1) * cols)
    reads = (cf - 1) * block_fetches(full) + block_fetches(last)
    approximate = (rf > 1) & ((full < epoch) | (last < epoch))
    return reads, approximate


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


# ---------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------
def systolic_area_mm2(arch: SystolicArch) -> dict[str, float]:
    from hwmodels.catalogs.tech import get_tech

    tech = get_tech(arch.tech)
    fmt = "int" if arch.precision.startswith("int") else "fp"
    parts = {
        "pe_array": arch.rows * arch.cols * tech.pe_area_mm2(arch.bits, fmt),
        "sram": tech.sram_area_mm2(arch.scratchpad_kib)
        if arch.scratchpad == "unified"
        else sum(tech.sram_area_mm2(kib) for kib in (arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib)),
        "vector": arch.vector_lanes * tech.alu_area_mm2(arch.bits, fmt),
    }
    parts["overhead"] = INTEGRATION_OVERHEAD * sum(parts.values())
    return parts


def _tensor_words(op: Op, mapping: Mapping) -> tuple[float, float]:
    """DRAM words an op on the vector unit reads and writes; resident inputs come from on chip."""
    tensors = mapping.graph.tensors
    resident = set(mapping.ops[op.name].resident_inputs)
    reads = sum(tensors[t].numel for t in (*op.inputs, *op.weights) if t not in resident)
    writes = sum(tensors[t].numel for t in op.outputs)
    return float(reads), float(writes)


@dataclass
class SystolicModel:
    """SCALE-Sim-faithful analytical model of a systolic array (see the module docstring)."""

    name: str = "systolic"

    def evaluate(self, mapping: Mapping, arch: SystolicArch) -> Metrics:  # type: ignore[override]
        from hwmodels.catalogs.tech import get_tech

        tech = get_tech(arch.tech)
        fmt = "int" if arch.precision.startswith("int") else "fp"
        bits, wb = arch.bits, arch.word_bytes
        e_mac = tech.mac_energy_pj(bits, fmt)
        e_alu = tech.alu_energy_pj(bits, fmt)
        e_sram = {which: tech.sram_energy_pj_per_byte(kib) for which, kib in sram_bank_kib(arch).items()}
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
        prices = _Prices(e_mac, e_alu, e_sram, e_sram_vec, peak, wb, tech)
        arch_key = _arch_key(arch)
        graph = mapping.graph
        ops_by_name = {o.name: o for o in graph.ops}
        for name in mapping.order:
            om = mapping.ops[name]
            op = ops_by_name[name]
            key = (op.shape_key(), arch_key, _mapping_key(op, om, mapping))
            core = _LAYER_CACHE.get(key)
            if core is None:
                if om.extra.get("tiling"):
                    core = _tiled_core(op, om, arch, prices)
                else:
                    core = _fold_core(op, om, mapping, arch, prices)
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


@dataclass(frozen=True)
class _Prices:
    """Per-access energies and array facts one evaluation uses for every layer."""

    e_mac: float
    e_alu: float
    e_sram: dict
    e_sram_vec: float
    peak: int
    wb: int
    tech: object


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
    )


def _mapping_key(op: Op, om, mapping: Mapping) -> tuple:
    """What of an op's mapping (and its tensors' sizes) its figures depend on."""
    tensors = mapping.graph.tensors
    sizes = tuple(tensors[t].numel for t in (*op.inputs, *op.weights, *op.outputs))
    resident = tuple(t in om.resident_inputs for t in op.inputs)
    base = (sizes, resident, om.resident_output, bool(om.extra.get("fused_into")), om.extra.get("unit"))
    if not om.extra.get("tiling"):
        return base
    ex = om.extra
    operands = tuple((o["role"], o["traffic"], o["footprint"]) for o in ex.get("operands", ()))
    return (
        *base,
        tuple(sorted(om.tile.items())),
        tuple(om.loop_order),
        ex.get("dram_read_bytes"),
        ex.get("dram_write_bytes"),
        ex.get("compute_cycles"),
        ex.get("sram_words"),
        operands,
        tuple(mapping.graph.op(n).flops for n in ex.get("fused_ops", ())),
    )


def _fold_core(op: Op, om, mapping: Mapping, arch: SystolicArch, prices: _Prices) -> _LayerCore:
    """One layer under the fold mapper: SCALE-Sim's figures (module docstring)."""
    e_mac, e_alu, e_sram, e_sram_vec, peak, wb, tech = (
        prices.e_mac,
        prices.e_alu,
        prices.e_sram,
        prices.e_sram_vec,
        prices.peak,
        prices.wb,
        prices.tech,
    )
    if om.extra.get("unit") == "array":
        gemm: LoweredGemm = om.extra["gemm"]
        cost = gemm_cost(gemm, arch, write_output=not om.resident_output)
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
        fused_into = om.extra.get("fused_into")
        if fused_into:
            # runs in the producer's output pipeline: no latency of its own (and so no
            # leakage), but its ALU work and its output's DRAM write are still paid for
            extra = {"unit": "vector", "fused_into": fused_into, "pipeline_cycles": cycles}
            cycles = compute = stall = 0.0

    return _LayerCore(
        cycles, compute, stall, macs, util, rd, wr, sram_rd, sram_wr, tuple(breakdown.items()), tuple(extra.items())
    )


def _tiled_core(op: Op, om, arch: SystolicArch, prices: _Prices) -> _LayerCore:
    """One op under a tiling mapper (cpsat, greedy): its figures follow the chosen tile and residency.

    DRAM bytes are the mapping's (validated by ``mappers.schedule_check``); compute cycles are the
    fold model summed over the tiles. Transfers overlap compute (double-buffered tiles), so the busy
    time is max(compute, traffic / bandwidth) by ``dram_mode``; the first input and weight tiles load
    before compute starts and the last output tile drains after it (the stalls). SRAM energy counts
    the array's accesses plus every DRAM fill and drain; a resident tensor is read from SRAM instead
    of DRAM, so residency shows up as less DRAM energy and fewer stalls.
    """
    ex = om.extra
    wb = prices.wb
    if ex.get("fused_into"):
        # runs in its producer's output pipeline / SIMD pass: no latency or traffic of its own
        breakdown = {"mac": 0.0, "sram": 0.0, "dram": 0.0, "vector": op.flops * prices.e_alu}
        extra = {"unit": "vector", "fused_into": ex["fused_into"]}
        return _LayerCore(0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, tuple(breakdown.items()), tuple(extra.items()))
    rd = float(ex["dram_read_bytes"])
    wr = float(ex["dram_write_bytes"])
    compute = float(ex["compute_cycles"])
    bpc = arch.dram_bytes_per_cycle
    in_bytes = out_bytes = 0.0
    first_tiles = last_tile = 0.0
    for o in ex.get("operands", ()):
        traffic, footprint = float(o["traffic"]), float(o["footprint"])
        one_tile = footprint if traffic <= footprint else footprint / 2
        if o["role"] == "output":
            out_bytes += traffic
            last_tile += min(traffic, one_tile)
        else:
            in_bytes += traffic
            first_tiles += min(traffic, one_tile)
    if arch.dram_mode == "unlimited":
        busy, fill, tail = compute, 0.0, 0.0
    else:
        fill, tail = first_tiles / bpc, last_tile / bpc
        if arch.dram_mode == "per_operand":
            streams = [float(o["traffic"]) for o in ex.get("operands", ())]
            busy = max([compute, *[t / bpc for t in streams]])
        else:
            busy = max(compute, (rd + wr) / bpc)
    cycles = fill + busy + tail
    is_array = ex.get("unit") == "array"
    macs = op.macs if is_array else 0
    util = macs / (prices.peak * cycles) if cycles and is_array else 0.0
    sram_words = float(ex.get("sram_words", 0))
    e_sram = sum(prices.e_sram.values()) / len(prices.e_sram)
    sram_rd = sram_words * wb + wr
    sram_wr = rd + (sram_words * wb if not is_array else 0.0)
    breakdown = {
        "mac": macs * prices.e_mac,
        "sram": (sram_words * wb + rd + wr) * e_sram,
        "dram": prices.tech.dram_energy_pj(rd + wr),
        "vector": 0.0 if is_array else op.flops * prices.e_alu,
    }
    extra = {
        "unit": ex.get("unit"),
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
