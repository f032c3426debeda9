"""Tile candidates per op: the legal scratchpad-level tilings of an op's loop nest, with their costs.

Every unit (an op, or a conv/matmul with its activation fused) is a loop nest
(``mappers.systolic.nest.LoopNest``) whose operands are indexed by some of its loops. A *tile* picks a
size per loop and a *loop order* (outer to inner) says which operand stays on chip while the inner loops run:

* an operand is re-fetched for every iteration of the loops outside its innermost indexing loop
  that do not index it (the classic loop-nest reuse rule), so its DRAM traffic is
  ``|operand| x product(trips of those loops)``; a conv input adds the halo rows of every row tile;
* the output is written once per such iteration and read back in between (partial sums);
* an operand held for more than one load is double-buffered (footprint x 2) so DMA overlaps compute
  (``TileTarget.tile_copies`` = 1: single-buffered, one copy, transfers wait for compute).

Compute cycles are those of the fold model (``hwmodels.systolic.compute``) summed over the tiles (a
tile is a smaller GEMM on the same array), so a whole-op tile costs exactly what the fold mapper says.

Candidates are enumerated on a grid of tile sizes x loop orders with numpy and pruned to the Pareto
set of (footprints, traffic per operand, cycles) the objective cares about. Caches sit at three
levels: the tile grid per distinct op shape, its compute cycles per array shape, the pruned
candidates per scratchpad sizes and prices; repeated layers and repeated design points are free, and
a new SRAM size only re-prunes.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from dse.graph import Graph
from hwmodels.systolic.compute import tile_fold_cost
from mappers.base import MappingError
from mappers.systolic.nest import (
    ROLE_OUTPUT,
    ROLE_WEIGHT,
    Halo,
    Loop,
    LoopNest,
    Operand,
    TileTarget,
    Unit,
    larger_memory_hint,
    loop_nest,
)
from mappers.systolic.objective import CostModel, mode_cost, mode_traffic

# Trip counts tried per loop (tile = ceil(extent / trips)); geometric past 8 so a loop offers ~20 sizes.
_TRIPS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192, 256, 512, 1024)
# Candidates whose compute cycles exceed the op's fastest tile by more than this factor are dropped.
CYCLE_SLACK = 1.5
# A vector op's tile is at least 1/256 of its tensors: shorter DMA bursts waste DRAM bandwidth.
_VECTOR_MAX_TRIPS = 256


def tile_values(extent: int, max_trips: int | None = None, limit: int = 16) -> list[int]:
    """Distinct tile sizes ceil(extent / t) over a geometric set of trip counts t (1 and extent always),
    thinned evenly to at most ``limit`` sizes."""
    vals = {math.ceil(extent / t) for t in _TRIPS if t <= extent and (max_trips is None or t <= max_trips)}
    if max_trips is None:
        vals.add(1)
    vals.add(extent)
    out = sorted(vals)
    if len(out) > limit:
        picks = np.unique(np.round(np.linspace(0, len(out) - 1, limit)).astype(int))
        out = [out[i] for i in picks]
    return out


# Values per loop by loop count: ~20^3 x 6 orders, 9^4 x 24 orders, 7^5 x 120 orders grid points.
_VALUES_PER_LOOP = {0: 1, 1: 24, 2: 24, 3: 20, 4: 9, 5: 6}


# ---------------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidates:
    """The pruned tilings of one loop nest. Arrays are per candidate; bytes are integers.

    ``footprint[i]`` / ``traffic[i]`` belong to ``nest.operands[i]``; for the output, ``traffic`` is
    its DRAM writes and ``psum_reads`` the partial sums read back.
    """

    nest: LoopNest
    loop_names: tuple[str, ...]
    tiles: np.ndarray  # [n, loops]
    orders: tuple[tuple[str, ...], ...]  # per candidate, outer -> inner
    footprint: np.ndarray  # [operands, n]
    traffic: np.ndarray  # [operands, n]
    psum_reads: np.ndarray  # [n]
    cycles: np.ndarray  # [n] compute cycles, all tiles
    sram_words: np.ndarray  # [n] array-side SRAM accesses (reads + ofmap writes), words
    array_sram_share: float = 1.0  # the unit's ``CostModel.array_sram_share`` (PE scratchpad reuse)

    def __len__(self) -> int:
        return int(self.tiles.shape[0])

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(o.role for o in self.nest.operands)

    def tile(self, i: int) -> dict[str, int]:
        return {name: int(v) for name, v in zip(self.loop_names, self.tiles[i])}

    def staging(self, target: TileTarget, resident: tuple[bool, ...]) -> np.ndarray:
        """Bytes each candidate stages in the resident scratchpad (operands not resident)."""
        total = np.zeros(len(self), dtype=np.int64)
        for j in staged_operands(self.nest, target, resident):
            total = total + self.footprint[j]
        return total

    def costs(self, target: TileTarget, model: CostModel, resident: tuple[bool, ...], output_bytes: int) -> np.ndarray:
        traffic = mode_traffic(self.traffic, self.psum_reads, self.roles, resident, output_bytes)
        if model.array_sram_share != self.array_sram_share:  # the problem's model, priced as this unit's
            model = replace(model, array_sram_share=self.array_sram_share)
        return mode_cost(traffic, self.cycles, self.sram_words, target.word_bytes, model)


def has_tile_buffer(role: str, resident: bool) -> bool:
    """A resident input is read in place; every other operand has a tile buffer (an output keeps its
    accumulator tile even when the finished tensor stays resident)."""
    return role == ROLE_OUTPUT or not resident


def staged_operands(nest: LoopNest, target: TileTarget, resident: tuple[bool, ...]) -> list[int]:
    """Operands whose tile buffers sit in the resident scratchpad in this residency mode."""
    return [
        j
        for j, o in enumerate(nest.operands)
        if has_tile_buffer(o.role, resident[j]) and target.memory_of(o.role) == target.resident_memory
    ]


def residency_modes(nest: LoopNest) -> list[tuple[bool, ...]]:
    """Every combination of activation operands (inputs and the output) being resident."""
    free = [j for j, o in enumerate(nest.operands) if o.role != ROLE_WEIGHT]
    modes = []
    for bits in itertools.product((False, True), repeat=len(free)):
        flags = [False] * len(nest.operands)
        for j, b in zip(free, bits):
            flags[j] = b
        modes.append(tuple(flags))
    return modes


def _halo_tables(halo: Halo, extent: int, values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(sum of input rows over all tiles, max input rows of one tile) per tile size."""
    sums, maxes = [], []
    for t in values:
        starts = np.arange(0, extent, t)
        rows = halo.rows(starts, np.minimum(starts + t, extent))
        sums.append(int(rows.sum()))
        maxes.append(int(rows.max()))
    return np.array(sums, dtype=np.float64), np.array(maxes, dtype=np.float64)


def pareto_front(size: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Indices on the (size, cost) Pareto front, both minimised (one per distinct point): the candidates
    worth keeping here, and per residency mode in the CP-SAT model's cuts."""
    order = np.lexsort((cost, size))
    best = np.minimum.accumulate(cost[order])
    improves = np.ones(len(order), dtype=bool)
    improves[1:] = cost[order][1:] < best[:-1]
    return order[improves]


@dataclass(frozen=True)
class _GridTables:
    """The arch-independent part of a nest's enumeration: tile sizes per grid point and, per operand,
    the bytes of one sweep (halo rows included) and of its largest tile."""

    names: tuple[str, ...]
    values: tuple[tuple[int, ...], ...]
    grid: np.ndarray  # [count, loops] index into values
    tile: dict[str, np.ndarray]
    trips: dict[str, np.ndarray]
    sweep: tuple[np.ndarray, ...]
    one: tuple[np.ndarray, ...]
    orders: tuple[tuple[str, ...], ...]

    @property
    def count(self) -> int:
        return int(self.grid.shape[0])


@dataclass(frozen=True)
class _Columns:
    """(grid point, loop order) columns with their costs; ordered loop-order-major, then grid point."""

    grid_of: np.ndarray
    order_of: np.ndarray
    footprint: np.ndarray  # [operands, n] float
    traffic: np.ndarray  # [operands, n] float
    psum: np.ndarray
    cycles: np.ndarray
    sram: np.ndarray


@functools.lru_cache(maxsize=1024)
def _grid_tables_cached(key: _NestKey) -> _GridTables:
    nest = key.nest()
    names = tuple(lp.name for lp in nest.loops)
    max_trips = _VECTOR_MAX_TRIPS if nest.kind == "vector" else None
    per_loop = _VALUES_PER_LOOP.get(len(names), 5)
    values = [tile_values(lp.extent, max_trips, per_loop) for lp in nest.loops]
    if names:
        grid = np.array(list(itertools.product(*[range(len(v)) for v in values])), dtype=np.int64)
    else:
        grid = np.zeros((1, 0), dtype=np.int64)
    count = grid.shape[0]
    tile = {nm: np.array(v, dtype=np.float64)[grid[:, i]] for i, (nm, v) in enumerate(zip(names, values))}
    extent = {lp.name: lp.extent for lp in nest.loops}
    trips = {nm: np.ceil(extent[nm] / tile[nm]) for nm in names}
    sweep, one = [], []
    for o in nest.operands:
        tot = np.full(count, float(o.base))
        big = np.full(count, float(o.base))
        for nm in o.loops:
            if nm not in extent:
                continue
            idx = names.index(nm)
            if o.halo is not None and o.halo.loop == nm:
                sums, maxes = _halo_tables(o.halo, extent[nm], values[idx])
                tot = tot * sums[grid[:, idx]]
                big = big * maxes[grid[:, idx]]
            else:
                tot = tot * extent[nm]
                big = big * tile[nm]
        sweep.append(np.ceil(tot))
        one.append(np.ceil(big))
    orders = tuple(itertools.permutations(names)) or ((),)
    return _GridTables(names, tuple(map(tuple, values)), grid, tile, trips, tuple(sweep), tuple(one), orders)


@functools.lru_cache(maxsize=4096)
def _grid_cycles_cached(
    key: _NestKey, rows: int, cols: int, dataflow: str, word_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Compute cycles and array-side SRAM words per grid point of a nest shape on one array."""
    nest = key.nest()
    tables = _grid_tables_cached(key)
    extent = {lp.name: lp.extent for lp in nest.loops}
    return _grid_cycles(nest, (rows, cols, dataflow, word_bytes), tables.names, extent, tables.tile, list(tables.sweep))


def _expand(
    nest: LoopNest, tables: _GridTables, points: np.ndarray, cycles: np.ndarray, sram: np.ndarray, copies: int = 2
) -> _Columns:
    """Cost every loop order of the grid points ``points``: footprints (``copies`` of a tile that reloads: 2
    double-buffered, 1 single) and traffic (one sweep times the re-fetch factor of the loops outside it that do not
    index it)."""
    count = len(points)
    trips = {nm: t[points] for nm, t in tables.trips.items()}
    n_orders = len(tables.orders)
    n_ops = len(nest.operands)
    out_idx = [j for j, o in enumerate(nest.operands) if o.role == ROLE_OUTPUT][0]
    fp = np.zeros((n_ops, count * n_orders))
    tr = np.zeros((n_ops, count * n_orders))
    psum = np.zeros(count * n_orders)
    one = [v[points] for v in tables.one]
    sweep = [v[points] for v in tables.sweep]
    for order_id, order in enumerate(tables.orders):
        at = slice(order_id * count, (order_id + 1) * count)
        for j, o in enumerate(nest.operands):
            # the operand's tile changes with its innermost indexing loop that takes more than one
            # trip; every loop outside that one which does not index it re-fetches it
            outer_other = np.ones(count)
            outer_all = np.ones(count)
            refetch = np.ones(count)
            loads = np.ones(count)
            for nm in order:
                if nm in o.loops:
                    moves = trips[nm] > 1
                    refetch = np.where(moves, outer_other, refetch)
                    loads = np.where(moves, outer_all * trips[nm], loads)
                else:
                    outer_other = outer_other * trips[nm]
                outer_all = outer_all * trips[nm]
            fp[j, at] = one[j] * np.where(loads > 1, copies, 1)
            tr[j, at] = sweep[j] * refetch
            if j == out_idx:
                psum[at] = sweep[j] * (refetch - 1)
    grid_of = np.tile(points, n_orders)
    order_of = np.repeat(np.arange(n_orders), count)
    return _Columns(grid_of, order_of, fp, tr, psum, cycles[grid_of], sram[grid_of])


def _own_memory_fits(nest: LoopNest, target: TileTarget, footprint: np.ndarray) -> np.ndarray:
    """Columns whose weight and output tiles fit their own scratchpads (those not shared with residents)."""
    ok = np.ones(footprint.shape[1], dtype=bool)
    for role in (ROLE_WEIGHT, ROLE_OUTPUT):
        memory = target.memory_of(role)
        rows = [j for j, o in enumerate(nest.operands) if o.role == role]
        if rows and memory != target.resident_memory:
            ok &= footprint[rows].sum(axis=0) <= target.capacity(memory)
    return ok


def enumerate_candidates(nest: LoopNest, target: TileTarget, model: CostModel) -> Candidates:
    """Every tile x loop order on the grid, costed in closed form, then pruned.

    A candidate survives if, in some residency mode of its activation operands, no other candidate
    both stages fewer bytes in the resident scratchpad and scores better; every other candidate is
    dominated in every mode, so dropping it never loses an optimum. Candidates whose weight or output
    tile cannot fit its own scratchpad are dropped (nothing else ever shares those).

    Only tiles within ``CYCLE_SLACK`` of the fastest compete on the fronts, so the loop orders are
    costed for those grid points alone (a few per cent of the grid); the whole grid is costed only
    when a mode needs its last-resort smallest tile. The grid and the per-tile cycles are cached per
    nest shape and per array, so a new scratchpad size re-prunes and nothing else.
    """
    key = _NestKey.of(_nameless(nest))
    tables = _grid_tables_cached(key)
    cycles, sram = _grid_cycles_cached(key, target.rows, target.cols, target.dataflow, target.word_bytes)
    # a tile fits its own scratchpads in some loop order only if its single (not double) buffers do
    once = np.vstack(tables.one) if tables.one else np.zeros((0, tables.count))
    can_fit = _own_memory_fits(nest, target, once)
    if not can_fit.any():
        full = _expand(nest, tables, np.arange(tables.count), cycles, sram, target.tile_copies)
        _raise_unfit(nest, target, full.footprint)
    floor = cycles[can_fit].min()
    while True:  # at most twice: the fastest fitting column may be slower than the fastest single-buffer fit
        points = np.flatnonzero(can_fit & (cycles <= CYCLE_SLACK * floor))
        cols = _expand(nest, tables, points, cycles, sram, target.tile_copies)
        ok = _own_memory_fits(nest, target, cols.footprint)
        if not ok.any():
            cols = _expand(nest, tables, np.arange(tables.count), cycles, sram, target.tile_copies)
            ok = _own_memory_fits(nest, target, cols.footprint)
            if not ok.any():
                _raise_unfit(nest, target, cols.footprint)
            break
        fastest = cols.cycles[ok].min()
        if fastest <= floor:
            break
        floor = fastest
    fast_cols = _take(cols, np.flatnonzero(ok))
    fast = np.flatnonzero(fast_cols.cycles <= CYCLE_SLACK * fast_cols.cycles.min())
    fast_cols = _take(fast_cols, fast)
    roles = tuple(o.role for o in nest.operands)
    cap = target.capacity(target.resident_memory)
    picks: list[_Columns] = []
    chosen: set[int] = set()
    fp_i = fast_cols.footprint.astype(np.int64)
    full_cols: _Columns | None = None
    for mode in residency_modes(nest):
        staged = _staged(nest, target, mode, fp_i)
        rank = _rank(fast_cols, roles, mode, target, model)
        chosen.update(int(i) for i in pareto_front(staged, rank))
        if staged.min() > cap:
            # a tile that slows the op's compute more than CYCLE_SLACK-fold is offered only as the last
            # resort, when no faster tile fits the scratchpad in this mode: no schedule should buy DRAM
            # bytes with an array that mostly fills and drains, but a tight scratchpad must get a tile.
            # The resort is the (staging, score) front of the tiles that fit, within CYCLE_SLACK of the
            # fastest that fits, not just the smallest (1 x 1 x 1 re-fetches every operand per MAC)
            if full_cols is None:
                every = _expand(nest, tables, np.arange(tables.count), cycles, sram, target.tile_copies)
                full_cols = _take(every, np.flatnonzero(_own_memory_fits(nest, target, every.footprint)))
            staged_all = _staged(nest, target, mode, full_cols.footprint.astype(np.int64))
            rank_all = _rank(full_cols, roles, mode, target, model)
            fitting = np.flatnonzero(staged_all <= cap)
            if fitting.size:
                fast_fit = full_cols.cycles[fitting]
                fitting = fitting[fast_fit <= CYCLE_SLACK * fast_fit.min()]
                resort = fitting[pareto_front(staged_all[fitting], rank_all[fitting])]
            else:
                smallest = np.flatnonzero(staged_all == staged_all.min())
                resort = smallest[[np.argmin(rank_all[smallest])]]
            picks.append(_take(full_cols, resort))
    picks.insert(0, _take(fast_cols, np.array(sorted(chosen), dtype=np.int64)))
    merged = _dedupe(_concat(picks), tables.count)
    fp = merged.footprint.astype(np.int64)
    tr = merged.traffic.astype(np.int64)
    cyc = merged.cycles.astype(np.int64)
    order = np.lexsort((cyc, tr.sum(axis=0)))
    rows_grid = tables.grid[merged.grid_of[order]]
    tiles = np.zeros((len(order), len(tables.names)), dtype=np.int64)
    for i, sizes in enumerate(tables.values):
        tiles[:, i] = np.asarray(sizes, dtype=np.int64)[rows_grid[:, i]]
    return Candidates(
        nest=nest,
        loop_names=tables.names,
        tiles=tiles,
        orders=tuple(tables.orders[k] for k in merged.order_of[order]),
        footprint=fp[:, order],
        traffic=tr[:, order],
        psum_reads=merged.psum[order].astype(np.int64),
        cycles=cyc[order],
        sram_words=merged.sram[order].astype(np.int64),
    )


def _staged(nest: LoopNest, target: TileTarget, mode: tuple[bool, ...], footprint: np.ndarray) -> np.ndarray:
    staged = np.zeros(footprint.shape[1], dtype=np.int64)
    for j in staged_operands(nest, target, mode):
        staged = staged + footprint[j]
    return staged


def _rank(cols: _Columns, roles: tuple[str, ...], mode: tuple[bool, ...], target: TileTarget, model: CostModel):
    """Each column's place in (score, then fewer cycles, then less traffic) order in one residency mode."""
    traffic = mode_traffic(cols.traffic.astype(np.int64), cols.psum.astype(np.int64), roles, mode, 0)
    cyc = cols.cycles.astype(np.int64)
    score = mode_cost(traffic, cyc, cols.sram.astype(np.int64), target.word_bytes, model)
    tie = np.lexsort((traffic, cyc, score))
    rank = np.empty(len(tie), dtype=np.int64)
    rank[tie] = np.arange(len(tie))
    return rank


def _take(cols: _Columns, idx: np.ndarray) -> _Columns:
    return _Columns(
        cols.grid_of[idx],
        cols.order_of[idx],
        cols.footprint[:, idx],
        cols.traffic[:, idx],
        cols.psum[idx],
        cols.cycles[idx],
        cols.sram[idx],
    )


def _concat(parts: list[_Columns]) -> _Columns:
    return _Columns(
        np.concatenate([p.grid_of for p in parts]),
        np.concatenate([p.order_of for p in parts]),
        np.concatenate([p.footprint for p in parts], axis=1),
        np.concatenate([p.traffic for p in parts], axis=1),
        np.concatenate([p.psum for p in parts]),
        np.concatenate([p.cycles for p in parts]),
        np.concatenate([p.sram for p in parts]),
    )


def _dedupe(cols: _Columns, count: int) -> _Columns:
    """One column per (grid point, loop order), in loop-order-major then grid-point order."""
    _, first = np.unique(cols.order_of * count + cols.grid_of, return_index=True)
    return _take(cols, first)


def _grid_cycles(
    nest: LoopNest,
    array: tuple[int, int, str, int],
    names: tuple[str, ...],
    extent: dict[str, int],
    tile: dict[str, np.ndarray],
    sweep: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Compute cycles and array-side SRAM words per grid point: the fold model summed over the
    full and edge tile shapes of every loop (vector ops: lanes-limited, independent of the tile).
    ``array`` is (rows, cols, dataflow, word bytes)."""
    rows, cols, dataflow, word_bytes = array
    count = len(sweep[0]) if sweep else 1
    if nest.kind != "array":
        sram = np.zeros(count)
        for tot in sweep:
            sram += tot / word_bytes
        return np.full(count, float(nest.vector_cycles)), sram
    cycles = np.zeros(count)
    sram = np.zeros(count)
    for edge in itertools.product((False, True), repeat=len(names)):
        weight = np.ones(count)
        size: dict[str, np.ndarray] = {}
        for nm, is_edge in zip(names, edge):
            full = np.floor(extent[nm] / tile[nm])
            rem = extent[nm] - full * tile[nm]
            weight = weight * ((rem > 0) if is_edge else full)
            size[nm] = rem if is_edge else tile[nm]

        def axis(a: str, size: dict[str, np.ndarray] = size) -> np.ndarray:
            loops, const = nest.gemm[a]
            val = np.full(count, float(const))
            for nm in loops:
                if nm in size:
                    val = val * size[nm]
            return val

        c, s = tile_fold_cost(axis("M"), axis("K"), axis("N"), rows, cols, dataflow)
        copies = axis("copies")
        cycles += weight * copies * c
        sram += weight * copies * s
    return cycles, sram


def _raise_unfit(nest: LoopNest, target: TileTarget, fp: np.ndarray) -> None:
    for role in (ROLE_WEIGHT, ROLE_OUTPUT):
        memory = target.memory_of(role)
        rows = [j for j, o in enumerate(nest.operands) if o.role == role]
        if not rows:
            continue
        need = int(fp[rows].sum(axis=0).min())
        if need > target.capacity(memory):
            tensors = ", ".join(nest.operands[j].tensor for j in rows)
            raise MappingError(
                f"op {nest.unit!r}: its smallest {role} tile ({tensors}) needs {need} bytes of {memory}, "
                f"which holds {target.capacity(memory)} bytes; give it {larger_memory_hint(memory)}",
                node=nest.unit,
            )
    raise MappingError(f"op {nest.unit!r}: no tile fits the scratchpads", node=nest.unit)


def _nameless(nest: LoopNest) -> LoopNest:
    """The nest with tensor and op names blanked, so equal shapes share one cache entry."""
    operands = tuple(Operand(f"#{i}", o.role, o.base, o.loops, o.halo) for i, o in enumerate(nest.operands))
    return LoopNest("", (), nest.kind, nest.loops, operands, dict(nest.gemm), nest.vector_cycles)


@dataclass(frozen=True)
class _NestKey:
    """A hashable stand-in for a nameless LoopNest (its gemm dict made a tuple)."""

    kind: str
    loops: tuple[Loop, ...]
    operands: tuple[Operand, ...]
    gemm: tuple[tuple[str, tuple[tuple[str, ...], int]], ...]
    vector_cycles: int

    @classmethod
    def of(cls, nest: LoopNest) -> _NestKey:
        return cls(nest.kind, nest.loops, nest.operands, tuple(sorted(nest.gemm.items())), nest.vector_cycles)

    def nest(self) -> LoopNest:
        return LoopNest("", (), self.kind, self.loops, self.operands, dict(self.gemm), self.vector_cycles)


@functools.lru_cache(maxsize=4096)
def _candidate_cache(key: _NestKey, target: TileTarget, model: CostModel) -> Candidates:
    return enumerate_candidates(key.nest(), target, model)


def candidates_for(graph: Graph, unit: Unit, target: TileTarget, model: CostModel | None = None) -> Candidates:
    """Pruned candidates of ``unit``, cached per distinct loop-nest shape, tiling target and prices."""
    model = model or CostModel()
    nest = loop_nest(graph, unit, target.word_bytes, target.vector_lanes)
    try:
        cached = _candidate_cache(_NestKey.of(_nameless(nest)), target, model)
    except MappingError as exc:
        raise MappingError(str(exc).replace("op ''", f"op {unit.name!r}"), node=unit.name) from None
    return Candidates(
        nest=nest,
        loop_names=cached.loop_names,
        tiles=cached.tiles,
        orders=cached.orders,
        footprint=cached.footprint,
        traffic=cached.traffic,
        psum_reads=cached.psum_reads,
        cycles=cached.cycles,
        sram_words=cached.sram_words,
        array_sram_share=model.array_sram_share,
    )


def clear_candidate_cache() -> None:
    """Forget cached candidates, tile grids and per-array cycles (for timing a cold enumeration)."""
    _candidate_cache.cache_clear()
    _grid_tables_cached.cache_clear()
    _grid_cycles_cached.cache_clear()
