"""SCALE-Sim USER bandwidth mode (``dram_mode="per_operand"``): an emulation of its read-buffer window walk.

SCALE-Sim USER mode (``memory/read_buffer.py``) cuts each operand's *prefetch* stream (the operand
matrix in the order its compute class lays it out for prefetching) into sets of ceil(words/100)
addresses; the active window is 50 consecutive sets, circular over the operand. A demanded address
in no set of the window triggers a new prefetch: the window moves on by 50 sets and another
half-SRAM of words (rounded up to whole DRAM lines) is read, until the address is inside it. When
the address lies behind the window (a demand line holding addresses from both sides of a window
boundary, the start of a block the dataflow streams again, a row fold whose first diagonals the
prefetch order interleaved with the previous fold's last ones) the window goes all the way round
the operand again. That is a simulator artifact: the words are still on chip and a real
double-buffered SRAM would not re-read the operand. It is emulated here, with numpy over the demand
stream in chunks, only for ``dram_mode="per_operand"`` (the SCALE-Sim-compatible mode); the
physical ``shared`` mode keeps the closed forms of ``hwmodels.systolic.memory``.

The prefetches of one operand are chained back to back (each starts the cycle after the previous
one ends, however early), and a demand line that misses waits for them with SCALE-Sim's rule:
service time t becomes the prefetch end L if L <= t, else 2L - t. The line stalls the array by
the worst operand's wait; the emulation replays that rule over the miss events only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm, fold_cycles, folds, im2col_address, spatial_dims
from hwmodels.systolic.memory import SETS_PER_BUFFER
from templates.systolic import SystolicArch

USER_ACTIVE_FRAC = 0.5
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


def rollout_index(n_rows: int, n_cols: int, row: np.ndarray, col: np.ndarray) -> np.ndarray:
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
    pos = rollout_index(n_rows, width, b3 * t_len + t3, c3)
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
    order[rollout_index(t_len, width, tt, cc).ravel()] = np.arange(t_len * width)
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


def set_words(sram_words: int) -> int:
    """Addresses per set of SCALE-Sim's USER read buffer (the unit its prefetch window moves in)."""
    return math.ceil(sram_words / SETS_PER_BUFFER)


def window_geometry(fetch_words: int, sram_words: int) -> tuple[int, int, int]:
    """(sets of the operand, sets of the active window, sets one prefetch moves it on) of SCALE-Sim's USER
    read buffer: sets of ceil(words/100) addresses, the active half of the SRAM, the other half per prefetch."""
    per_set = set_words(sram_words)
    active_words = math.ceil(sram_words * USER_ACTIVE_FRAC)
    n_sets = fetch_words // per_set + 1
    active = min(math.ceil(active_words / per_set), n_sets)
    return n_sets, active, min(math.ceil((sram_words - active_words) / per_set), n_sets - active)


def _window_walk(op: _OperandWalk, sram_words: int) -> tuple[int, list[tuple[int, int]]]:
    """(new prefetches, [(demand line, prefetches issued on it)]) of SCALE-Sim's USER read buffer."""
    n_sets, active, step = window_geometry(op.fetch_words, sram_words)
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


def stall_replay(events: list[list[tuple[int, int]]], prefetch_lines: list[int]) -> int:
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
    """SCALE-Sim's ifmap and filter streams for one GEMM copy (``compute/systolic_compute_{os,ws,is}.py``)."""
    g = gemm.geometry
    m_px, k_win, n_f = gemm.M, gemm.K, gemm.N
    sr, sc, t_len = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    fold_len = fold_cycles(t_len, rows, cols, df)
    per_set_if = set_words(words_if)
    per_set_f = set_words(words_f)

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
    if df == "is":
        return _user_operands_is(gemm, rows, cols, fold_len, per_set_if, per_set_f)
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


def _user_operands_is(
    gemm: LoweredGemm, rows: int, cols: int, fold_len: int, per_set_if: int, per_set_f: int
) -> tuple[_OperandWalk, _OperandWalk]:
    """The is dataflow: ws with the operands' roles swapped. The ifmap is stationary: column folds of
    im2col^T (window x ``cols`` pixels, null-padded) stacked row-major, not rolled out; fold (fc, fr) reads
    its window rows bottom-up, one per line from the fold's first line, each row's pixels left to right.
    The filter streams: row folds of filter^T (filters x ``rows`` window entries) stacked and rolled out,
    each demanded along its own anti-diagonals after the ``rows``-line preload, once per column fold."""
    g = gemm.geometry
    m_px, k_win, n_f = gemm.M, gemm.K, gemm.N
    sr, sc, _ = spatial_dims(gemm, "is")
    rf, cf = folds(sr, sc, rows, cols)
    fc3 = np.arange(cf)[:, None, None]
    w3 = np.arange(k_win)[None, :, None]
    pixel3 = fc3 * cols + np.arange(cols)[None, None, :]
    inside = np.broadcast_to(pixel3 < m_px, (cf, k_win, cols))
    addr = np.where(inside, im2col_address(g, np.where(pixel3 < m_px, pixel3, 0), w3), -1)
    valid = addr >= 0
    set_table = ((np.cumsum(valid.ravel()) - 1) // per_set_if).astype(np.int32).reshape(cf, k_win, cols)

    def entry_set(pix: np.ndarray, win: np.ndarray) -> np.ndarray:
        return set_table[pix // cols, win, pix % cols]

    segments = []
    for fc in range(cf):
        fr_idx, line, c = np.meshgrid(np.arange(rf), np.arange(rows), np.arange(cols), indexing="ij")
        window = fr_idx * rows + rows - 1 - line
        keep = window < k_win
        keep[keep] = valid[fc, window[keep], c[keep]]
        window, c = window[keep], c[keep]
        segments.append(_Segment(set_table[fc, window, c], (fr_idx * fold_len + line)[keep], fc * cols + c, window))
    ifmap = _OperandWalk(
        int(valid.sum()),
        cf * k_win * cols,
        segments,
        [(fc, fc * rf * fold_len) for fc in range(cf)],
        _ifmap_duplicates(g, entry_set),
    )
    words, total, blocks, _ = _rolled_blocks(
        lambda b, t, c: t * k_win + b * rows + c, rf, n_f, rows, k_win - (rf - 1) * rows, per_set_f
    )
    one_pass = _concat_segments([(seg, b * fold_len + rows) for b, seg in enumerate(blocks)])
    filt = _OperandWalk(words, total, [one_pass], [(0, fc * rf * fold_len) for fc in range(cf)])
    return ifmap, filt


@dataclass(frozen=True)
class UserModeTraffic:
    """SCALE-Sim USER mode's DRAM reads and read stalls for one GEMM copy."""

    ifmap_dram_reads: float
    filter_dram_reads: float
    read_stall_cycles: int
    fill_cycles: int  # the initial prefetch: DRAM lines of the larger first fill


def user_mode_traffic(gemm: LoweredGemm, arch: SystolicArch) -> UserModeTraffic:
    """Emulate SCALE-Sim USER mode's read buffers (os, ws, is) for one GEMM copy.

    Memoised on what the walk depends on, since a network repeats layer shapes and an exploration
    revisits them on every design point with the same array and SRAMs.
    """
    words = (arch.sram_words("ifmap"), arch.sram_words("filter"))
    return user_mode_traffic_of(gemm, arch.rows, arch.cols, arch.dataflow, words, arch.dram_words_per_cycle)


def user_mode_traffic_of(
    gemm: LoweredGemm, rows: int, cols: int, dataflow: str, sram_words: tuple[int, int], words_per_cycle: float
) -> UserModeTraffic:
    """``user_mode_traffic`` from the design's raw figures (ifmap and filter SRAM words, DRAM words per
    cycle), for batch consumers that hold designs as arrays (the surrogates' baseline). SCALE-Sim's USER
    bandwidth is a whole number of words per cycle."""
    bw = max(1, round(words_per_cycle))
    return _user_mode_traffic(gemm, int(rows), int(cols), dataflow, (int(sram_words[0]), int(sram_words[1])), bw)


def clear_user_mode_cache() -> None:
    """Forget memoised USER-mode emulations (for timing them)."""
    _user_mode_traffic.cache_clear()


@functools.lru_cache(maxsize=1 << 14)  # a few hundred bytes each: a dataset's designs x layer shapes
def _user_mode_traffic(
    gemm: LoweredGemm, rows: int, cols: int, df: str, sram_words: tuple[int, int], bw: int
) -> UserModeTraffic:
    ifmap, filt = _user_operands(gemm, rows, cols, df, *sram_words)
    walks = [(*_window_walk(op, words), op.fetch_matrix_words) for op, words in zip((ifmap, filt), sram_words)]
    return traffic_of_walks(walks, sram_words, bw)


def traffic_of_walks(
    walks: list[tuple[int, list[tuple[int, int]], int]], sram_words: tuple[int, int], bw: int
) -> UserModeTraffic:
    """The traffic of the two operands' window walks ((prefetch count, miss events, fetch-matrix words) each,
    ifmap then filter): DRAM reads, the replayed read stalls and the first fill. Shared by the scalar walk and
    the fold-level one (``user_mode_batch``)."""
    reads: list[float] = []
    events: list[list[tuple[int, int]]] = []
    prefetch_lines: list[int] = []
    fills: list[int] = []
    for (count, evs, fetch_words), words in zip(walks, sram_words):
        first_lines, lines = prefetch_lines_of(words, fetch_words, bw)
        reads.append(float((first_lines + count * lines) * bw))
        events.append(evs)
        prefetch_lines.append(lines)
        fills.append(first_lines)
    return UserModeTraffic(reads[0], reads[1], stall_replay(events, prefetch_lines), max(fills))


def prefetch_lines_of(sram_words: int, fetch_matrix_words: int, bw: int) -> tuple[int, int]:
    """DRAM lines of an operand's first fill (the active half, or the whole operand when smaller) and of
    each later prefetch (the other half), at ``bw`` words per line."""
    active = math.ceil(sram_words * USER_ACTIVE_FRAC)
    return min(math.ceil(active / bw), math.ceil(fetch_matrix_words / bw)), math.ceil((sram_words - active) / bw)
