"""SCALE-Sim USER mode's window walk (``hwmodels.systolic.user_mode``) at the granularity of folds, for
the surrogates' baseline: microseconds per fold instead of a pass over every demanded word.

The scalar walk tests every demanded word against the prefetch window. Inside one fold the demand is
monotone in the prefetch stream (a rolled block's own anti-diagonals are a subsequence of the stacked
roll-out; a ws filter fold reads its rows bottom-up, each row left to right), so a fold is a *run* of
sets and the walk only needs the sets where the run leaves the window: each is walked with the scalar's
own rule (move on by whole steps until the demanded set is inside, all the way round the operand when
it lies behind), and a miss's line is found by bisecting the fold's anti-diagonals on the closed-form
roll-out rank. That reproduces the scalar's reads, fill and stalls exactly for the filters and for an
ifmap without duplicate words (1x1 layers, fully connected layers; ``tests/test_user_mode_batch.py``).
Where it is an approximation:

- the ifmap's duplicate copies (an im2col word that a neighbouring window holds in the active window
  hits there, so the scalar moves the window less): the run walk follows the fold's own copies only,
  and so over-counts re-reads (the surrogates' trees learn that residual);
- the is ifmap (read row by row, not rolled out) counts im2col words off the unpadded edge as present,
  so its sets drift from the scalar's on a layer whose windows hang over the edge (none does in the
  layers ``surrogates.truth.scalesim`` builds);
- im2col words off the unpadded edge are spread evenly over the roll-out (their count is exact, so the
  number of sets is); the padding of the last fold is placed exactly.
``benchmarks/surrogate_user_mode.py`` prints the baseline's latency error against the exact model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm, fold_cycles, folds, spatial_dims
from hwmodels.systolic.user_mode import (
    UserModeTraffic,
    rollout_index,
    set_words,
    traffic_of_walks,
    window_geometry,
)


@dataclass
class _Runs:
    """One operand's demand as monotone runs of sets, one per fold in demand order: the first and last
    set of each, where each first demands a given set and on which line (rolled operands)."""

    fetch_words: int
    fetch_matrix_words: int
    first: np.ndarray
    last: np.ndarray
    line_of: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (runs, sets) -> first line demanding the set
    next_set: Callable[[int, int], int] | None  # (run, set) -> first set >= it the run demands (may skip)


@dataclass
class _RowFolds:
    """The ws filter's (and the is ifmap's) demand: fold i reads rows top[i] down to bottom[i], one per line
    from first_line[i], the words of row r being base[i] + r * width[i] + (0 .. width[i] - 1), left to right."""

    fetch_words: int
    fetch_matrix_words: int
    per_set: int
    base: np.ndarray
    width: np.ndarray
    top: np.ndarray
    bottom: np.ndarray
    first_line: np.ndarray


def _valid_im2col_words(g: ConvGeometry, pixels: int, windows: int) -> int:
    """im2col entries of a dense geometry whose window stays inside the unpadded input (the non-null
    words of the ifmap prefetch matrix), from the rows and columns each output row/column reaches."""
    if pixels != g.P * g.Q or windows != g.R * g.S * g.C:
        return pixels * windows  # a condensed or reshaped GEMM: no edge nulls known here
    rows_ok = np.clip(g.H - np.arange(g.P) * g.stride_h, 0, g.R).sum()
    cols_ok = np.clip(g.W - np.arange(g.Q) * g.stride_w, 0, g.S).sum()
    return int(rows_ok * cols_ok * g.C)


@dataclass(frozen=True)
class _StackedRollout:
    """``n_blocks`` blocks of (t_len x width) stacked and rolled out along anti-diagonals
    (``user_mode._rolled_blocks``), the last block ``last_width`` wide: the non-null rank of a cell, with
    the last block's padding counted out exactly and the other nulls spread evenly."""

    n_blocks: int
    t_len: int
    width: int
    last_width: int
    fetch_words: int

    @property
    def n_rows(self) -> int:
        return self.n_blocks * self.t_len

    def block_width(self, block: np.ndarray) -> np.ndarray:
        return np.where(block < self.n_blocks - 1, self.width, self.last_width)

    def rank(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """Non-null words rolled out before cell (row, col)."""
        n_rows, width, lw = self.n_rows, self.width, self.last_width
        pos = rollout_index(n_rows, width, row, col)
        pad = np.zeros_like(pos)
        if lw < width:  # padding cells (rows >= top, cols >= lw) on the diagonals before, then on this one
            top = (self.n_blocks - 1) * self.t_len
            d = np.arange(top + lw, n_rows + width - 1)
            per_diag = np.maximum(0, np.minimum(d - lw, n_rows - 1) - np.maximum(top, d - width + 1) + 1)
            cum = np.concatenate([[0], np.cumsum(per_diag)])
            diag = row + col
            same = np.minimum(diag - lw, n_rows - 1) - np.maximum(np.maximum(top, diag - width + 1), row + 1)
            pad = cum[np.clip(diag - (top + lw), 0, len(d))] + np.maximum(0, same + 1)
        non_pad = n_rows * width - self.t_len * (width - lw)
        rank = np.floor((pos - pad) * (self.fetch_words / non_pad)).astype(np.int64)
        return np.minimum(rank, self.fetch_words - 1)

    def last_rank_on(self, block: np.ndarray, local_diag: np.ndarray) -> np.ndarray:
        """Rank of the block's last cell on its local anti-diagonal (its lowest row there)."""
        diag = block * self.t_len + local_diag
        row = np.maximum(block * self.t_len, diag - self.block_width(block) + 1)
        return self.rank(row, diag - row)

    def first_rank_at(self, block: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The rank of the block's first word of rank >= target (its first cell on that line, or the target)."""
        line = self.first_line_at(block, target)
        diag = block * self.t_len + line
        row = np.minimum(block * self.t_len + self.t_len - 1, diag)
        return np.maximum(target, self.rank(row, diag - row))

    def first_line_at(self, block: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The block's first local line (anti-diagonal) holding a word of rank >= target: the block's own
        demand reads its anti-diagonals in roll-out order, so this is where it first reaches that word."""
        lo = np.zeros_like(block)
        hi = self.t_len + self.block_width(block) - 2
        while np.any(lo < hi):  # smallest local diagonal whose last rank reaches the target
            mid = (lo + hi) // 2
            reach = self.last_rank_on(block, mid) >= target
            hi = np.where(reach, mid, hi)
            lo = np.where(reach, lo, np.minimum(mid + 1, hi))
        return lo


def _rolled_runs(
    n_blocks: int,
    t_len: int,
    width: int,
    last_width: int,
    fetch_words: int,
    per_set: int,
    order: np.ndarray,
    offsets: np.ndarray,
) -> _Runs:
    """Runs of blocks ``order`` demanded at line ``offsets`` (one entry per demanded block)."""
    roll = _StackedRollout(n_blocks, t_len, width, last_width, fetch_words)
    blocks = np.arange(n_blocks)
    widths = roll.block_width(blocks)
    first = roll.rank(blocks * t_len, np.zeros_like(blocks)) // per_set
    last = roll.rank(blocks * t_len + t_len - 1, widths - 1) // per_set

    def line_of(run: np.ndarray, at: np.ndarray) -> np.ndarray:
        return offsets[run] + roll.first_line_at(order[run], at * per_set)

    def next_set(run: int, at: int) -> int:
        return int(roll.first_rank_at(np.array([order[run]]), np.array([at * per_set]))[0]) // per_set

    # a block's words lie at most a diagonal (width - 1 cells) apart: only then can it skip a set
    skips = width - 1 >= per_set
    return _Runs(fetch_words, n_blocks * t_len * width, first[order], last[order], line_of, next_set if skips else None)


def _user_runs(
    gemm: LoweredGemm, rows: int, cols: int, df: str, words_if: int, words_f: int
) -> tuple[_Runs | _RowFolds, _Runs | _RowFolds]:
    """The ifmap and filter demand runs of one GEMM copy, as ``user_mode._user_operands`` lays them out."""
    g = gemm.geometry
    m_px, k_win, n_f = gemm.M, gemm.K, gemm.N
    sr, sc, t_len = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, rows, cols)
    fold_len = fold_cycles(t_len, rows, cols, df)
    p_if, p_f = set_words(words_if), set_words(words_f)
    valid_if = _valid_im2col_words(g, m_px, k_win)
    passes = np.repeat(np.arange(cf), rf) * rf * fold_len  # the ifmap pass is streamed once per column fold
    blocks = np.tile(np.arange(rf), cf)
    if df == "os":
        ifmap = _rolled_runs(
            rf, k_win, rows, m_px - (rf - 1) * rows, valid_if, p_if, blocks, passes + blocks * fold_len
        )
        order = np.repeat(np.arange(cf), rf)  # each filter column fold demanded rf times in a row
        filt = _rolled_runs(
            cf, k_win, cols, n_f - (cf - 1) * cols, k_win * n_f, p_f, order, np.arange(cf * rf) * fold_len
        )
        return ifmap, filt
    if df == "is":  # ws with the roles swapped: the filter is rolled out, the ifmap read row by row
        filt = _rolled_runs(
            rf, n_f, rows, k_win - (rf - 1) * rows, k_win * n_f, p_f, blocks, passes + blocks * fold_len + rows
        )
        # column fold fc, row fold fr reads window rows fr*rows .. top bottom-up, `width` pixels per line
        fc, fr = np.repeat(np.arange(cf), rf), np.tile(np.arange(rf), cf)
        width = np.minimum(cols, m_px - fc * cols)
        top = np.minimum(fr * rows + rows - 1, k_win - 1)
        line0 = (fc * rf + fr) * fold_len
        first_line = line0 + fr * rows + rows - 1 - top
        ifmap = _RowFolds(k_win * m_px, k_win * cols * cf, p_if, fc * k_win * cols, width, top, fr * rows, first_line)
        return ifmap, filt
    ifmap = _rolled_runs(
        rf, m_px, rows, k_win - (rf - 1) * rows, valid_if, p_if, blocks, passes + blocks * fold_len + rows
    )
    # ws filter: column fold fc, row fold fr reads rows fr*rows .. top bottom-up, one row of `width` per line
    fc, fr = np.repeat(np.arange(cf), rf), np.tile(np.arange(rf), cf)
    width = np.minimum(cols, n_f - fc * cols)
    base = fc * k_win * cols
    top = np.minimum(fr * rows + rows - 1, k_win - 1)
    line0 = (fc * rf + fr) * fold_len
    filt = _RowFolds(
        k_win * n_f, k_win * cols * cf, p_f, base, width, top, fr * rows, line0 + fr * rows + rows - 1 - top
    )
    return ifmap, filt


def _steps(at: int, start: int, n_sets: int, active: int, step: int) -> int:
    """New prefetches until the window (``active`` sets from ``start``) holds set ``at`` (``user_mode``'s rule)."""
    m = 1
    while (at - start - m * step) % n_sets >= active:
        m += 1
    return m


def _walk_rows(ws_filter: _RowFolds, n_sets: int, active: int, step: int, events: list[tuple[int, int]]) -> int:
    """The ws filter's (is ifmap's) walk, line by line where the window moves and a whole stretch of lines at once
    where it holds them: each line reads its row's words in ascending order, the rows go bottom-up."""
    p = ws_filter.per_set
    start, total = 0, 0
    columns = (ws_filter.base, ws_filter.width, ws_filter.top, ws_filter.bottom, ws_filter.first_line)
    for base, width, top, bottom, line0 in zip(*(c.tolist() for c in columns)):
        r = top
        while r >= bottom:
            lo, hi = (base + r * width) // p, (base + r * width + width - 1) // p
            for at in range(lo, hi + 1):
                if (at - start) % n_sets >= active:
                    m = _steps(at, start, n_sets, active, step)
                    start = (start + m * step) % n_sets
                    total += m
                    events.append((line0 + top - r, m))
            # the window now holds hi; the lines below (sets up to this line's first) stay inside while
            # their first set is not behind the window's start
            low = hi - (hi - start) % n_sets
            r = min(r - 1, -(-(low * p - base) // width) - 1)
    return total


def _walk_runs(runs: _Runs | _RowFolds, sram_words: int) -> tuple[int, list[tuple[int, int]]]:
    """(new prefetches, [(demand line, prefetches issued on it)]) of the USER window over the runs, with
    ``user_mode``'s rule applied to the set where each run leaves the window."""
    n_sets, active, step = window_geometry(runs.fetch_words, sram_words)
    if step <= 0:
        return 0, []
    events: list[tuple[int, int]] = []
    if isinstance(runs, _RowFolds):
        return _walk_rows(runs, n_sets, active, step, events), events
    start, total = 0, 0
    misses: list[tuple[int, int, int]] = []  # (run, set, prefetches)
    for run, (first, last) in enumerate(zip(runs.first.tolist(), runs.last.tolist())):
        at = first
        while True:
            offset = (at - start) % n_sets
            if offset >= active:  # the demanded set is outside the window: move on until it is inside
                m = _steps(at, start, n_sets, active, step)
                start = (start + m * step) % n_sets
                total += m
                misses.append((run, at, m))
                offset = (at - start) % n_sets
            at += active - offset  # the first set of the run past the window
            if at > last:
                break
            if runs.next_set is not None:
                at = runs.next_set(run, at)
    if misses:
        run_idx, sets, counts = (np.array(column) for column in zip(*misses))
        events = list(zip(runs.line_of(run_idx, sets).tolist(), counts.tolist()))
    return total, events


def user_mode_traffic_batch(
    gemm: LoweredGemm, rows: int, cols: int, dataflow: str, sram_words: tuple[int, int], words_per_cycle: float
) -> UserModeTraffic:
    """``user_mode.user_mode_traffic_of`` from the fold-level walk (see the module note for what it
    leaves out): reads, read stalls and fill of one GEMM copy."""
    bw = max(1, round(words_per_cycle))
    return _traffic(gemm, int(rows), int(cols), dataflow, (int(sram_words[0]), int(sram_words[1])), bw)


@functools.lru_cache(maxsize=1 << 14)
def _traffic(gemm: LoweredGemm, rows: int, cols: int, df: str, sram_words: tuple[int, int], bw: int) -> UserModeTraffic:
    operands = _user_runs(gemm, rows, cols, df, *sram_words)
    walks = [(*_walk_runs(runs, words), runs.fetch_matrix_words) for runs, words in zip(operands, sram_words)]
    return traffic_of_walks(walks, sram_words, bw)


def clear_batch_cache() -> None:
    """Forget memoised fold-level walks (for timing them)."""
    _traffic.cache_clear()
