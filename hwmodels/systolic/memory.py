"""SCALE-Sim's double-buffered SRAMs in closed form: DRAM re-fetches of the read SRAMs, the initial fill
and the ofmap drain.

SCALE-Sim's read SRAMs (``read_buffer_estimate_bw.py``) record new addresses in sets of
``floor(words/100)``; a reference hits only if its address was brought in since the last boundary of
``50`` sets (the active half). So an operand is re-fetched whenever a reuse straddles such a boundary
of W = 50*floor(words/100) fetched words. For a block of f < W distinct words repeated r times the
first pass fetches f and the second re-fetches only the prefix fetched before the boundary it
crossed; f >= W thrashes (every pass re-fetches all). The ifmap im2col stream re-references inputs
horizontally (neighbouring pixels, a few lines apart) and vertically (the next output row); each reuse
misses with probability (reuse distance / W). The ofmap SRAM drains its passive half (``words/2``)
when the active half fills; what is left drains after the last fold (the tail).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm, fold_cycles, folds, spatial_dims

# SCALE-Sim's read SRAMs keep half the capacity active (``active_buf_frac = 0.5``) and track it in
# 100 sets; the ofmap SRAM drains its other half at once.
SETS_PER_BUFFER = 100
ACTIVE_SETS = 50


def epoch_words(sram_words: int, min_set_words: int = 0) -> int:
    """W (or E): words recorded between two boundaries of the active half, 50 sets of floor(words/100).

    SCALE-Sim's own rule gives 0 below 100 words (sets never complete; ``scalesim_calc`` then counts
    every address once). The closed forms here divide by W, so they ask for at least one word per set
    (``min_set_words=1``); the two agree on every SRAM the template accepts (>= 200 words).
    """
    return ACTIVE_SETS * max(min_set_words, sram_words // SETS_PER_BUFFER)


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


def fill_cycles_unlimited(fetched: float, sram_words: int, first_demand: int, words_per_cycle: float) -> float:
    """SCALE-Sim CALC: the active half (or all of a smaller operand) is fetched before it is needed."""
    per_set = max(1, sram_words // SETS_PER_BUFFER)
    active = epoch_words(sram_words, min_set_words=1)
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


# ---------------------------------------------------------------------------------------------------
# SCALE-Sim CALC's ofmap write buffer, event by event (``memory/write_buffer.py``)
# ---------------------------------------------------------------------------------------------------
def _ramp_sum(v: int, width: int) -> int:
    """sum over j < width of max(0, v - j)."""
    n = min(width, max(0, v))
    return n * v - n * (n - 1) // 2


@dataclass(frozen=True)
class OfmapWriteProfile:
    """When the array writes its ofmap, as SCALE-Sim's ofmap demand matrix lays it out: folds of
    ``fold_lines`` cycles run column fold by column fold (row folds inside); in a fold, active column
    j (of ``width``) writes one word per cycle on lines [offset + j, offset + j + duration)."""

    dataflow: str
    m: int
    n: int
    rows: int
    cols: int
    row_folds: int
    col_folds: int
    t: int  # the streamed dimension
    fold_lines: int

    @classmethod
    def of(cls, gemm: LoweredGemm, dataflow: str, rows: int, cols: int) -> OfmapWriteProfile:
        sr, sc, t = spatial_dims(gemm, dataflow)
        rf, cf = folds(sr, sc, rows, cols)
        return cls(dataflow, gemm.M, gemm.N, rows, cols, rf, cf, t, fold_cycles(t, rows, cols, dataflow))

    @property
    def lines(self) -> int:
        return self.row_folds * self.col_folds * self.fold_lines

    def _shape(self, fc: int, fr: int) -> tuple[int, int, int]:
        """(offset, duration, width) of fold (fc, fr)."""
        sc = self.n if self.dataflow in ("os", "ws") else self.m
        width = min(self.cols, sc - fc * self.cols)
        if self.dataflow == "os":  # outputs leave after the T-cycle reduction, bottom row first
            height = min(self.rows, self.m - fr * self.rows)
            return self.t - 1 + self.rows - height, height, width
        return 2 * self.rows - 1, self.t, width  # ws/is: after the stationary operand's load

    def _before(self, fc: int, fr: int) -> int:
        """Words written by the folds before (fc, fr)."""
        offset, duration, width = self._shape(fc, fr)
        if self.dataflow == "os":
            return fc * self.m * self.cols + min(fr * self.rows, self.m) * width
        return fc * self.row_folds * self.t * self.cols + fr * self.t * width

    def written_through(self, line: int) -> int:
        """Words written on lines 0..line."""
        if line < 0:
            return 0
        f = min(line // self.fold_lines, self.row_folds * self.col_folds - 1)
        fc, fr = divmod(f, self.row_folds)
        offset, duration, width = self._shape(fc, fr)
        u = min(line - f * self.fold_lines, self.fold_lines - 1) - offset + 1
        return self._before(fc, fr) + _ramp_sum(u, width) - _ramp_sum(u - duration, width)

    def line_of(self, word: int) -> int:
        """The line on which the ``word``-th word (1-based) is written."""
        lo, hi = 0, self.lines - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.written_through(mid) >= word:
                hi = mid
            else:
                lo = mid + 1
        return lo


# Beyond this many drains the replay is skipped: a drain past the end then adds < 1/REPLAY_DRAINS of the
# layer's cycles, so ``ofmap_tail``'s closed form is as good.
REPLAY_DRAINS = 4096


@functools.lru_cache(maxsize=65536)
def calc_ofmap_tail(profile: OfmapWriteProfile, sram_words: int, drain_words_per_cycle: int) -> int:
    """Cycles from the array's last demand line to SCALE-Sim CALC's last ofmap DRAM write, less one
    (the ``tail`` of ``GemmCost``; ``ofmap_tail``'s first element where no drain runs past the end).

    SCALE-Sim's write buffer stores words in lines of ``drain_words_per_cycle``; when a word arrives
    with no drain running and more than the drain half (``words - ceil(words/2)``) held, it closes the
    open line and drains the next ceil(half / bw) lines, one per cycle from that word's cycle; after the
    last demand line it drains what is left. A drain triggered near the end therefore runs past it.
    This replays those drains event by event (one step per drain, O(drains x log lines)).
    """
    writes = profile.written_through(profile.lines - 1)
    if writes <= 0:
        return 0
    half = sram_words - math.ceil(sram_words / 2)
    if writes / max(1, half) > REPLAY_DRAINS:
        return int(ofmap_tail(writes, sram_words, drain_words_per_cycle)[0])
    per_drain = math.ceil(half / drain_words_per_cycle)
    segments: list[int] = []  # words of each closed run of lines (a drain closes the open line)
    closed = drained = 0
    seg, seg_line = 0, 0  # first line not yet drained: segment and line inside it
    drain_end = 0
    last_end = -1

    def take(lines_wanted: int) -> tuple[int, int]:
        """Drain up to ``lines_wanted`` lines: (lines, words SCALE-Sim credits back). It credits every
        line as full except the last one's empty slots, so a short line closed by an earlier drain counts
        full when it is not last (the buffer then believes it holds fewer words than it does)."""
        nonlocal seg, seg_line
        taken = last_size = 0
        while taken < lines_wanted and seg < len(segments):
            size = segments[seg]
            seg_lines = math.ceil(size / drain_words_per_cycle)
            got = min(lines_wanted - taken, seg_lines - seg_line)
            end_line = seg_line + got
            last_size = min(size, end_line * drain_words_per_cycle) - (end_line - 1) * drain_words_per_cycle
            taken += got
            seg_line = end_line
            if seg_line >= seg_lines:
                seg, seg_line = seg + 1, 0
        return taken, (taken - 1) * drain_words_per_cycle + last_size if taken else 0

    while True:
        word = max(profile.written_through(drain_end - 1) + 1, drained + half + 1)
        if word > writes:
            break
        line = profile.line_of(word)
        segments.append(word - closed)
        closed = word
        lines, words = take(per_drain)
        drained += words
        drain_end = line + lines - 1
        last_end = drain_end
    if writes > closed:
        segments.append(writes - closed)
    left, _ = take(1 << 62)
    last_line = profile.lines - 1
    stop = max(last_end, last_line + left - 1 if left else last_end)
    return stop - last_line
