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

import math

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm, folds, spatial_dims

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
