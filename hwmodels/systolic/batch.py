"""The systolic cost over arrays: many (design, GEMM) pairs at once.

``gemm_cost_arrays`` evaluates the closed forms of ``hwmodels.systolic.cost.gemm_cost`` over arrays of
(design, GEMM) pairs, for batch consumers (the surrogates' baseline); a test holds it equal to
``gemm_cost`` wherever it does not mark a pair approximate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from hwmodels.array_backend import NUMPY, ArrayBackend
from hwmodels.systolic.compute import LoweredGemm, array_sram_reads, array_writes, fold_cycles, spatial_axes
from hwmodels.systolic.memory import (
    ACTIVE_SETS,
    SETS_PER_BUFFER,
    OfmapWriteProfile,
    calc_ofmap_tail,
)
from hwmodels.systolic.scalesim_calc import calc_dram_reads_of
from hwmodels.systolic.user_mode import user_mode_traffic_of


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
    lowered: tuple[LoweredGemm, ...] = ()  # the GEMMs themselves (for walks that need more than shapes)

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
            tuple(gemms),
        )  # fmt: skip

    def on(self, backend: ArrayBackend) -> GemmShapes:
        """These shapes as arrays of ``backend`` (itself for numpy)."""
        if backend.is_numpy:
            return self
        moved = {f.name: backend.asarray(getattr(self, f.name)) for f in fields(self) if f.name != "lowered"}
        return GemmShapes(**moved, lowered=self.lowered)


def _user_replayed_tails(
    tail: np.ndarray,
    of_writes: np.ndarray,
    dataflow: str,
    shape: tuple[np.ndarray, ...],
    words_of: np.ndarray,
    bw: np.ndarray,
) -> np.ndarray:
    """``gemm_cost``'s USER-mode tail: SCALE-Sim's write buffer replayed (``memory.calc_ofmap_tail``, memoised)
    on the pairs where no line writes more words than the DRAM takes per cycle; the closed form elsewhere.
    ``shape`` is (m, n, rows, cols, Sc, T, row folds, column folds). One replay per such pair, as the USER
    walk of those pairs (``surrogates.systolic.user_mode_closed_form``) already costs."""
    whole_bw = np.maximum(1, np.round(bw))
    arrays = np.broadcast_arrays(tail, of_writes, words_of, whole_bw, *shape)
    out = np.array(arrays[0], dtype=float)
    _, writes, _, line_bw, _, _, _, cols, sc = arrays[:9]
    for i in np.flatnonzero((writes > 0) & (np.minimum(cols, sc) <= line_bw)):
        words, b, m, n, r, c, _, t, rf, cf = (int(x.flat[i]) for x in arrays[2:])
        profile = OfmapWriteProfile(dataflow, m, n, r, c, rf, cf, t, fold_cycles(t, r, c, dataflow))
        out.flat[i] = calc_ofmap_tail(profile, words, b)
    return out


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
    exact: bool = False,
    backend: ArrayBackend = NUMPY,
) -> dict[str, np.ndarray]:
    """``gemm_cost`` for every (design, GEMM) pair of one dataflow and DRAM mode: design-side arrays
    broadcast against ``s``'s GEMM-side arrays. Batch consumers (the surrogates) call it for 10^5 designs.

    The same formulas as ``gemm_cost`` for ``shared`` DRAM; two stand-ins where the
    scalar model walks a sequence: the os filter's per-column-fold epoch rule is replaced by its
    expectation (a block of b < W words straddles a boundary with probability b/W and then re-fetches
    b/2 on average), and ``unlimited`` / ``per_operand`` use these closed forms instead of the
    SCALE-Sim replays. ``approximate`` marks the pairs where either applies.
    ``exact=True`` (the explorer's array evaluation, ``hwmodels.systolic.arrays``) drops both stand-ins: the
    os filter walk, SCALE-Sim CALC's read replays and ofmap tail, and the USER window walk are then the
    scalar model's own functions, called once per distinct (design figures, GEMM) pair; the N:M pattern's
    ifmap share is applied as ``gemm_cost`` does. Every pair then equals ``gemm_cost``.
    ``backend`` runs the closed forms on another array namespace (``hwmodels.array_backend``): the inputs
    are numpy, moved there; the outputs are that backend's arrays (the sequential replays run on numpy).
    Returns per pair, all copies: cycles, compute_cycles, busy_cycles, fill_cycles, tail_cycles, the
    DRAM reads/writes and SRAM accesses of ``GemmCost``, and ``approximate``.
    """
    xp = backend.xp
    host_design = (rows, cols, words_if, words_f, words_per_cycle)
    if not backend.is_numpy:
        s = s.on(backend)
        rows, cols, words_if, words_f, words_of, words_per_cycle = (
            backend.asarray(x) for x in (rows, cols, words_if, words_f, words_of, words_per_cycle)
        )
    sr, sc, t = spatial_axes(s.m, s.k, s.n, dataflow)
    rf, cf = xp.ceil(sr / rows), xp.ceil(sc / cols)
    lines = rf * cf * fold_cycles(t, rows, cols, dataflow)
    per_set_if = xp.maximum(1.0, xp.floor(words_if / SETS_PER_BUFFER))
    per_set_f = xp.maximum(1.0, xp.floor(words_f / SETS_PER_BUFFER))
    epoch_if, epoch_f = ACTIVE_SETS * per_set_if, ACTIVE_SETS * per_set_f
    if_reads = _ifmap_reads_arrays(s, dataflow, rows, cols, cf, epoch_if, xp)
    f_reads, approximate = _filter_reads_arrays(s, dataflow, rows, cols, rf, cf, epoch_f, xp)
    if exact and dram_mode == "unlimited":
        replayed = _per_distinct_pair(s, dataflow, host_design, _calc_reads, 2)
        if_reads, f_reads = (backend.asarray(x) for x in replayed)
    elif exact:
        if_reads = if_reads * backend.asarray(_pattern_share(s))
        if dataflow == "os":
            f_reads = xp.where(approximate, _os_filter_walk(s, cols, rf, cf, epoch_f, xp), f_reads)
    bw = words_per_cycle

    def fill(reads: np.ndarray, epoch: np.ndarray, per_set: np.ndarray, first: np.ndarray | float) -> np.ndarray:
        return xp.where(reads >= epoch, xp.ceil(epoch / bw) - first, xp.ceil(xp.ceil(reads / per_set) * per_set / bw))

    fill_if = fill(if_reads, epoch_if, per_set_if, rows if dataflow == "ws" else 0.0)
    fill_f = fill(f_reads, epoch_f, per_set_f, rows if dataflow == "is" else 0.0)
    emitted = array_writes(s.m, s.n, rf, dataflow)
    of_writes = xp.where(s.write_output, emitted, 0.0)
    drain_bw = cols if dram_mode == "unlimited" else bw
    half = words_of - xp.ceil(words_of / 2)
    drains = xp.where(of_writes > 0, xp.floor(xp.maximum(of_writes - 1.0, 0.0) / half), 0.0)
    tail = xp.ceil((of_writes - drains * half) / drain_bw)
    if dram_mode == "per_operand" or (exact and dram_mode == "unlimited"):
        shape = (s.m, s.n, rows, cols, sc, t, rf, cf)
        host = [backend.to_numpy(x) for x in (tail, of_writes, words_of, drain_bw, *shape)]
        tail = backend.asarray(_user_replayed_tails(*host[:2], dataflow, tuple(host[4:]), *host[2:4]))
    during_if = if_reads - xp.minimum(if_reads, fill_if * bw)
    during_f = f_reads - xp.minimum(f_reads, fill_f * bw)
    during_of = xp.maximum(0.0, of_writes - tail * drain_bw)
    if dram_mode == "unlimited":
        fill_cycles, busy = xp.maximum(fill_if, fill_f), lines
        approximate = _full_like(lines, not exact, xp)  # SCALE-Sim CALC's exact replay is not here
    elif dram_mode == "per_operand":
        fill_cycles = xp.maximum(fill_if, fill_f)
        busy = xp.maximum(xp.maximum(lines, during_if / bw), xp.maximum(during_f / bw, during_of / bw))
        approximate = _full_like(lines, True, xp)  # SCALE-Sim USER's window walk is not here
        if exact:  # the walk, where gemm_cost takes it (a dense GEMM or one condensed to whole channels)
            dense = backend.asarray(np.array([g.window_pattern is None for g in s.lowered]))
            walked = dense & _full_like(lines, True, xp)
            user_if, user_f, user_fill, user_stall = (
                backend.asarray(x)
                for x in _per_distinct_pair(
                    s, dataflow, host_design, _user_walk, 4, lambda gemm: gemm.window_pattern is None
                )
            )
            if_reads, f_reads = xp.where(walked, user_if, if_reads), xp.where(walked, user_f, f_reads)
            fill_cycles = xp.where(walked, user_fill, fill_cycles)
            busy = xp.where(walked, xp.maximum(lines + user_stall, during_of / bw), busy)
            approximate = _full_like(lines, False, xp)
    else:
        fill_cycles = fill_if + fill_f
        busy = xp.maximum(lines, (during_if + during_f + during_of) / bw)
    sram_if, sram_f = array_sram_reads(dataflow, sr, sc, t, rf, cf)
    if exact:
        approximate = _full_like(lines, False, xp)
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
        "ofmap_sram_writes": n * emitted,
        "row_folds": rf,
        "col_folds": cf,
        "approximate": approximate,
    }
    if backend.is_numpy:
        shape = np.broadcast_shapes(*(np.shape(value) for value in figures.values()))
        return {name: np.broadcast_to(value, shape) for name, value in figures.items()}
    arrays = (value if hasattr(value, "shape") else backend.asarray(value) for value in figures.values())
    return dict(zip(figures, xp.broadcast_arrays(*arrays)))


def _full_like(like: np.ndarray, value: bool, xp) -> np.ndarray:  # noqa: ANN001
    """A boolean array of ``like``'s shape (and device) filled with ``value``."""
    return xp.full_like(like, value, dtype=getattr(xp, "bool", bool))


def _ifmap_reads_arrays(
    s: GemmShapes,
    dataflow: str,
    rows: np.ndarray,
    cols: np.ndarray,
    cf: np.ndarray,
    epoch: np.ndarray,
    xp=np,  # noqa: ANN001
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
            fetched = xp.minimum(refs, unique + unique * span / epoch)
        one_pass = fetched
    else:
        horizontal = s.row_uses * s.C * (s.col_uses - s.used_cols)
        vertical = s.C * s.used_cols * (s.row_uses - s.used_rows)
        h_gap, v_gap = s.stride_w * s.C / rows, s.stride_h * s.S * s.C / rows
        cross_h, cross_v = horizontal * xp.minimum(1.0, h_gap), vertical * xp.minimum(1.0, v_gap)
        block_words = (unique + cross_h + cross_v) / xp.ceil(s.R * s.S * s.C / rows)
        h_miss = xp.minimum(1.0, xp.maximum(1.0, h_gap) * block_words / epoch)
        v_miss = xp.minimum(1.0, xp.maximum(1.0, v_gap) * block_words / epoch)
        one_pass = unique + cross_h * h_miss + cross_v * v_miss
    small = (unique < epoch) | (refs <= unique)
    one_pass = xp.where(small, xp.where(refs > 0, xp.minimum(unique, refs), unique), one_pass)
    if dataflow == "is":
        return one_pass
    return xp.where(unique < epoch, one_pass, one_pass * cf)


def _filter_reads_arrays(
    s: GemmShapes,
    dataflow: str,
    rows: np.ndarray,
    cols: np.ndarray,
    rf: np.ndarray,
    cf: np.ndarray,
    epoch: np.ndarray,
    xp=np,  # noqa: ANN001
) -> tuple[np.ndarray, np.ndarray]:
    """``filter_dram_reads`` (one copy) over arrays, and where it is the os expectation (see above)."""
    kn = s.k * s.n
    if dataflow == "ws":
        reads = kn + 0.0 * epoch
        return reads, xp.zeros_like(reads, dtype=getattr(xp, "bool", bool))
    if dataflow == "is":
        exact = xp.where((cf <= 1) | (kn < epoch), kn, kn * cf)
        return exact, xp.zeros_like(exact, dtype=getattr(xp, "bool", bool))

    def block_fetches(block: np.ndarray) -> np.ndarray:
        expected = block + block * xp.minimum(block, epoch) / (2 * epoch)
        return xp.where(rf <= 1, block, xp.where(block >= epoch, block * rf, expected))

    full, last = s.k * cols, s.k * (s.n - (cf - 1) * cols)
    reads = (cf - 1) * block_fetches(full) + block_fetches(last)
    approximate = (rf > 1) & ((full < epoch) | (last < epoch))
    return reads, approximate


# ---------------------------------------------------------------------------------------------------
# The exact mode's sequential parts: the scalar model's own functions, once per distinct pair
# ---------------------------------------------------------------------------------------------------
DesignFigures = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # rows, cols, words_if/f, bw


def _pattern_share(s: GemmShapes) -> np.ndarray:
    """``gemm_cost``'s ifmap share of a GEMM condensed across channels (N:M ``window_pattern``): 1 elsewhere."""
    share = [g.K / (g.geometry.R * g.geometry.S * g.geometry.C) if g.window_pattern else 1.0 for g in s.lowered]
    return np.array(share, dtype=float)


def _per_distinct_pair(
    s: GemmShapes,
    dataflow: str,
    design: DesignFigures,
    scalar: Callable[[LoweredGemm, str, tuple[float, ...]], tuple[float, ...]],
    width: int,
    only: Callable[[LoweredGemm], bool] = lambda gemm: True,
) -> tuple[np.ndarray, ...]:
    """``scalar(gemm, dataflow, design)`` for every (design, GEMM) pair, called once per distinct pair:
    design-side arrays of shape (designs, 1) against ``s.lowered`` along the last axis. ``scalar`` gets the
    GEMM, the dataflow and the design's (rows, cols, ifmap words, filter words, DRAM words per cycle) and
    returns ``width`` figures; GEMMs that ``only`` refuses get NaN."""
    columns = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in design))
    shape = np.broadcast_shapes(columns[0].shape, (len(s.lowered),))
    keys = np.stack([np.broadcast_to(c, shape)[..., 0].ravel() for c in columns], axis=1)
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    outputs: list[np.ndarray] = []
    for gemm in s.lowered:
        if not only(gemm):
            values = np.full((len(distinct), width), np.nan)
        else:
            values = np.array([scalar(gemm, dataflow, tuple(row)) for row in distinct.tolist()], dtype=float)
        column = values[inverse.ravel()]
        outputs.append(column.reshape(*shape[:-1], values.shape[1]))
    stacked = np.stack(outputs, axis=-2)  # (..., gemms, outputs)
    return tuple(stacked[..., i] for i in range(stacked.shape[-1]))


def _calc_reads(gemm: LoweredGemm, dataflow: str, design: tuple) -> tuple[float, float]:
    """SCALE-Sim CALC's (ifmap, filter) reads of one copy (``gemm_cost`` under ``unlimited``)."""
    rows, cols, words_if, words_f, _ = design
    return calc_dram_reads_of(gemm, int(rows), int(cols), dataflow, int(words_if), int(words_f))


def _os_filter_walk(
    s: GemmShapes,
    cols: np.ndarray,
    rf: np.ndarray,
    cf: np.ndarray,
    epoch: np.ndarray,
    xp=np,  # noqa: ANN001
) -> np.ndarray:
    """``memory.filter_dram_reads`` under os, exactly, without walking the column folds one by one.

    The walk fetches, per column fold, a block of b = K x width words ``rf`` times (``repeated_block_fetches``).
    With b < W and rf > 1 only the phase p = (words fetched so far) mod W matters: a block fetches b and moves
    p to p + b while p + b < W; otherwise it re-fetches the W - p words before the boundary and p becomes b.
    From p = 0 the first j* + 1 blocks (j* = ceil(W / b) - 1) fetch W + b, and every later j* blocks W.
    The full folds follow that cycle; the last (narrower) fold starts from the phase they leave.
    """
    k, n = s.k, s.n
    full, last = k * cols, k * (n - (cf - 1) * cols)
    steps = cf - 1  # full column folds before the last
    repeated = rf > 1
    # the full folds: thrashing (b >= W) or a single row fold fetch every block rf times / once
    plain = xp.where(repeated, full * rf, full) * steps
    cycle = xp.maximum(1.0, xp.ceil(epoch / full) - 1)  # j*
    later = xp.maximum(0.0, steps - (cycle + 1))
    rest = xp.remainder(later, cycle)
    cycled = xp.where(steps <= cycle, steps * full, epoch + full + xp.floor_divide(later, cycle) * epoch + rest * full)
    phase_cycled = xp.where(steps <= cycle, steps * full, (rest + 1) * full)
    walked = repeated & (full < epoch)
    fetched = xp.where(walked, cycled, plain)
    phase = xp.where(walked & (steps > 0), phase_cycled, xp.remainder(fetched, epoch))
    last_got = xp.where(
        ~repeated, last, xp.where(last >= epoch, last * rf, last + xp.where(phase + last >= epoch, epoch - phase, 0.0))
    )
    return fetched + last_got


def _user_walk(gemm: LoweredGemm, dataflow: str, design: tuple) -> tuple[float, float, float, float]:
    """SCALE-Sim USER's window walk: (ifmap reads, filter reads, fill, read stalls) of one copy."""
    rows, cols, words_if, words_f, bw = design
    user = user_mode_traffic_of(gemm, int(rows), int(cols), dataflow, (int(words_if), int(words_f)), bw)
    return user.ifmap_dram_reads, user.filter_dram_reads, float(user.fill_cycles), float(user.read_stall_cycles)
