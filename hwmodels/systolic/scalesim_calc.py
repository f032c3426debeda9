"""SCALE-Sim 3.0.0 CALC-mode DRAM reads of the ifmap and filter SRAMs, word for word.

In CALC bandwidth mode SCALE-Sim serves every demand from its read buffer
(``memory/read_buffer_estimate_bw.py``) and counts DRAM reads by this rule, read off its source and
checked here against every CALC run of the shared ResNet-18 reference (all equal, word for word):

* the demand matrix is walked line by line, each line left to right, ``-1`` (padding) skipped;
* an address is a **hit** if it was recorded since the last *epoch boundary*, else it is recorded
  (one DRAM read, ``num_access``) into the current set of ``floor(words/100)`` addresses;
* when the set that completes is the 50th since the last boundary (``active_buf_frac = 0.5``: 50 of
  100 sets), the active window moves past all of them: a boundary. So an epoch ends on the
  reference that records its ``E = 50 * floor(words/100)``-th distinct address, and the next
  reference starts an empty epoch; the partial set at the end is read too (``complete_all_prefetches``).

Hence DRAM reads = sum over epochs of the distinct addresses each epoch references. The streams
are SCALE-Sim's demand matrices for one GEMM (``compute/systolic_compute_{os,ws,is}.py``):

========  =====================================================  =====================================
dataflow  ifmap stream                                           filter stream
========  =====================================================  =====================================
os        for fc: for fr: im2col^T block, skewed (line t + c)    for fc: (block fc, skewed) x rf times
ws        for fc: for fr: im2col pixels x window block, skewed   for fc: for fr: block, rows reversed
is        for fc: for fr: window block reversed x pixel block    for fc: for fr: filter^T block, skewed
========  =====================================================  =====================================

:func:`calc_dram_reads` answers from a closed form when no epoch boundary can make a difference
(fewer distinct addresses than ``E``, or no address referenced twice) and otherwise replays the
rule with numpy over the demand stream (memoised, since a network repeats layer shapes).
"""

from __future__ import annotations

import functools

import numpy as np

from hwmodels.systolic.compute import LoweredGemm, folds, im2col_address, original_window, spatial_dims
from hwmodels.systolic.memory import epoch_words
from templates.systolic import SystolicArch

# E = epoch_words(words): SCALE-Sim tracks each read SRAM in 100 sets of floor(words/100) addresses and
# (active_buf_frac = 0.5) moves the window on after 50 completed sets; 0 when sets never complete.
_SCAN_CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------------------
# Demand streams (one GEMM copy), in SCALE-Sim's order, padding dropped
# ---------------------------------------------------------------------------------------------------
def _skewed(time_len: int, width: int, n_blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index grids (block, time, column) of ``n_blocks`` skewed blocks laid out line by line: line l of a
    block holds column c at time l - c (``skew_matrix``); entries outside [0, time_len) are marked -1."""
    lines = time_len + width - 1
    blk = np.arange(n_blocks)[:, None, None]
    col = np.arange(width)[None, None, :]
    t = np.arange(lines)[None, :, None] - col
    return blk, np.where((t >= 0) & (t < time_len), t, -1), col


def _drop_pad(addr: np.ndarray) -> np.ndarray:
    flat = addr.ravel()
    return flat[flat >= 0]


def demand_streams(gemm: LoweredGemm, rows: int, cols: int, dataflow: str) -> tuple[np.ndarray, np.ndarray]:
    """(ifmap addresses, filter addresses) in the order SCALE-Sim's CALC read buffers see them."""
    g = gemm.geometry
    m_px, k_win, n_f = gemm.M, gemm.K, gemm.N
    sr, sc, t_len = spatial_dims(gemm, dataflow)
    rf, cf = folds(sr, sc, rows, cols)

    def ifmap(pixel: np.ndarray, window: np.ndarray, ok: np.ndarray) -> np.ndarray:
        pixel, window = np.broadcast_arrays(pixel, window)
        ok = np.broadcast_to(ok, pixel.shape)
        window = original_window(np.where(ok, window, 0), gemm.window_pattern)
        return np.where(ok, im2col_address(g, np.where(ok, pixel, 0), window), -1)

    def filt(window: np.ndarray, n: np.ndarray, ok: np.ndarray) -> np.ndarray:
        window, n = np.broadcast_arrays(window, n)
        return np.where(np.broadcast_to(ok, window.shape), n * k_win + window, -1)

    if dataflow == "os":
        blk, t, c = _skewed(t_len, rows, rf)
        pixel = blk * rows + c
        one_pass = _drop_pad(ifmap(pixel, t, (t >= 0) & (pixel < m_px)))
        if_stream = np.tile(one_pass, cf)
        blk, t, c = _skewed(t_len, cols, cf)
        n = blk * cols + c
        blocks = filt(t, n, (t >= 0) & (n < n_f))
        f_stream = np.concatenate([np.tile(_drop_pad(blocks[fc]), rf) for fc in range(cf)])
        return if_stream, f_stream
    if dataflow == "ws":
        blk, m, c = _skewed(t_len, rows, rf)
        window = blk * rows + c
        one_pass = _drop_pad(ifmap(m, window, (m >= 0) & (window < k_win)))
        if_stream = np.tile(one_pass, cf)
        fc = np.arange(cf)[:, None, None, None]
        fr = np.arange(rf)[None, :, None, None]
        line = np.arange(rows)[None, None, :, None]
        col = np.arange(cols)[None, None, None, :]
        window = fr * rows + rows - 1 - line
        n = fc * cols + col
        f_stream = _drop_pad(filt(window, n, (window < k_win) & (n < n_f)))
        return if_stream, f_stream
    if dataflow == "is":
        fc = np.arange(cf)[:, None, None, None]
        fr = np.arange(rf)[None, :, None, None]
        line = np.arange(rows)[None, None, :, None]
        col = np.arange(cols)[None, None, None, :]
        window = fr * rows + rows - 1 - line
        pixel = fc * cols + col
        if_stream = _drop_pad(ifmap(pixel, window, (window < k_win) & (pixel < m_px)))
        blk, n, c = _skewed(t_len, rows, rf)
        window = blk * rows + c
        one_pass = _drop_pad(filt(window, n, (n >= 0) & (window < k_win)))
        return if_stream, np.tile(one_pass, cf)
    raise ValueError(f"unknown dataflow {dataflow!r}; allowed: os, ws, is")


# ---------------------------------------------------------------------------------------------------
# The epoch rule
# ---------------------------------------------------------------------------------------------------
def _previous_reference(stream: np.ndarray) -> np.ndarray:
    """Index of the previous reference to the same address, -1 for a first reference."""
    order = np.argsort(stream, kind="stable")
    ordered = stream[order]
    prev = np.full(len(stream), -1, dtype=np.int64)
    same = ordered[1:] == ordered[:-1]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def epoch_reads(stream: np.ndarray, sram_words: int) -> int:
    """DRAM reads of one read SRAM fed ``stream``: the distinct addresses of every epoch, summed.

    An epoch starting at reference b records reference j >= b iff the address's previous reference
    is before b; it ends on the E-th such reference.
    """
    n = len(stream)
    epoch = epoch_words(sram_words)
    if n == 0:
        return 0
    prev = _previous_reference(stream)
    if epoch == 0:
        return int(np.count_nonzero(prev < 0))
    total = 0
    start = 0
    while start < n:
        need = epoch
        pos = start
        end = -1
        while pos < n:
            counted = np.cumsum(prev[pos : pos + _SCAN_CHUNK] < start)
            if counted[-1] >= need:
                end = pos + int(np.searchsorted(counted, need))
                break
            need -= int(counted[-1])
            pos += _SCAN_CHUNK
        if end < 0:
            return total + epoch - need
        total += epoch
        start = end + 1
    return total


# ---------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------
def repeated_blocks_reads(blocks: list[tuple[int, int]], epoch: int) -> int:
    """Reads of a stream of disjoint blocks, block i being ``f`` distinct words streamed ``r`` times
    back to back ((f, r) pairs, in stream order): the filter of os (column folds, each re-streamed
    for every row fold), ws (r = 1) and is (one block, the whole filter, once per column fold).

    Every epoch records exactly E words, so the current epoch holds ``reads mod E`` of them; a block
    meets an empty-of-itself epoch. If f >= E every window of E references is all distinct, so every
    reference of a repeated block misses; if f < E the epoch can end at most once inside the first
    pass, and the second pass re-reads the prefix recorded before that boundary.
    """
    reads = 0
    for f, r in blocks:
        if f <= 0 or r <= 0:
            continue
        if r == 1:
            reads += f
        elif epoch == 0 or f >= epoch:
            reads += f * r if epoch else f
        else:
            phase = reads % epoch
            reads += f + (epoch - phase if phase + f >= epoch else 0)
    return reads


def filter_dram_reads(gemm: LoweredGemm, rows: int, cols: int, dataflow: str, sram_words: int) -> int:
    """Filter words read from DRAM for one GEMM copy (exact: the filter streams are repeated disjoint blocks)."""
    k_win, n_f = gemm.K, gemm.N
    sr, sc, _ = spatial_dims(gemm, dataflow)
    rf, cf = folds(sr, sc, rows, cols)
    epoch = epoch_words(sram_words)
    if dataflow == "os":
        widths = [min(cols, n_f - fc * cols) for fc in range(cf)]
        return repeated_blocks_reads([(k_win * w, rf) for w in widths], epoch)
    if dataflow == "ws":
        return k_win * n_f
    return repeated_blocks_reads([(k_win * n_f, cf)], epoch)


def _closed_form_ifmap(gemm: LoweredGemm, rows: int, cols: int, dataflow: str, sram_words: int) -> int | None:
    """Ifmap reads when no epoch boundary can change them: fewer distinct words than an epoch (nothing
    is ever re-read), or no word referenced twice; None when the replay is needed."""
    g = gemm.geometry
    sr, sc, _ = spatial_dims(gemm, dataflow)
    _, cf = folds(sr, sc, rows, cols)
    passes = 1 if dataflow == "is" else cf  # os/ws stream the im2col once per column fold
    distinct, refs = g.unique_inputs, g.references * passes
    epoch = epoch_words(sram_words)
    if gemm.window_pattern is not None:  # a pattern across channels: the geometry's counts do not apply
        return None
    if epoch == 0 or distinct < epoch or refs == distinct:
        return distinct
    return None


@functools.lru_cache(maxsize=256)
def _replayed_ifmap(gemm: LoweredGemm, rows: int, cols: int, dataflow: str, sram_words: int) -> int:
    return epoch_reads(demand_streams(gemm, rows, cols, dataflow)[0], sram_words)


def calc_dram_reads_replayed(gemm: LoweredGemm, arch: SystolicArch) -> tuple[int, int]:
    """(ifmap, filter) DRAM words of ONE GEMM copy, both by replaying the epoch rule over the demand
    streams (the reference the fast path is tested against; seconds on a large layer)."""
    if_stream, f_stream = demand_streams(gemm, arch.rows, arch.cols, arch.dataflow)
    return epoch_reads(if_stream, arch.sram_words("ifmap")), epoch_reads(f_stream, arch.sram_words("filter"))


def calc_dram_reads(gemm: LoweredGemm, arch: SystolicArch) -> tuple[int, int]:
    """(ifmap, filter) words SCALE-Sim CALC mode reads from DRAM for ONE copy of ``gemm``
    (multiply by ``gemm.count`` for all copies, as ``gemm_cost`` does with its per-copy traffic).

    The filter is always a closed form. The ifmap is one where the epoch boundaries cannot matter,
    otherwise the exact replay of the rule over the im2col stream (memoised per layer shape and array).
    """
    words = (arch.sram_words("ifmap"), arch.sram_words("filter"))
    return calc_dram_reads_of(gemm, arch.rows, arch.cols, arch.dataflow, *words)


def calc_dram_reads_of(
    gemm: LoweredGemm, rows: int, cols: int, df: str, words_if: int, words_f: int
) -> tuple[int, int]:
    """``calc_dram_reads`` from the design's raw figures (ifmap and filter SRAM words), for batch callers that
    hold designs as arrays (``hwmodels.systolic.batch``)."""
    ifmap = _closed_form_ifmap(gemm, rows, cols, df, words_if)
    if ifmap is None:
        ifmap = _replayed_ifmap(gemm, rows, cols, df, words_if)
    return ifmap, filter_dram_reads(gemm, rows, cols, df, words_f)


def clear_cache() -> None:
    """Forget memoised replays (for timing them cold)."""
    _replayed_ifmap.cache_clear()
