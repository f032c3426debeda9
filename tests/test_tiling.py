"""Tile candidates: closed-form traffic agrees with a tile-by-tile replay; pruning and caching behave."""

from __future__ import annotations

import numpy as np
import pytest

from dse.graph import GraphBuilder
from hwmodels.systolic.compute import folds, spatial_dims
from hwmodels.systolic.pricing import (
    TILED_ROLES,
    conv_window,
    design_prices,
    fold_streams,
    tiled_array_energy_pj,
    tiled_sram_energy_pj,
)
from mappers.base import MappingError
from mappers.systolic.check import replay_operand
from mappers.systolic.fold import SystolicFoldMapper, lower_op
from mappers.systolic.nest import (
    ROLE_INPUT,
    ROLE_OUTPUT,
    ROLE_WEIGHT,
    UNIFIED_MEMORY,
    build_units,
    loop_nest,
    target_of,
)
from mappers.systolic.objective import CostModel, mode_cost, mode_traffic
from mappers.systolic.problem import build_problem
from mappers.systolic.tiling import (
    CYCLE_SLACK,
    _expand,
    _grid_cycles_cached,
    _grid_tables_cached,
    _nameless,
    _NestKey,
    candidates_for,
    clear_candidate_cache,
    enumerate_candidates,
    residency_modes,
    staged_operands,
    tile_values,
)
from templates.systolic import SystolicArch


def arch(**over):
    base = dict(
        rows=8,
        cols=8,
        dataflow="os",
        ifmap_sram_kib=8.0,
        filter_sram_kib=8.0,
        ofmap_sram_kib=8.0,
        dram_gbps=8.0,
        freq_mhz=1000.0,
        precision="int8",
        tech="asic-28nm",
        vector_lanes=8,
    )
    base.update(over)
    return SystolicArch(**base)


def graph_of(kind: str):
    b = GraphBuilder(kind)
    if kind == "conv":
        x = b.input("x", (1, 12, 14, 14))
        b.conv(x, 20, 3, stride=2, pad=1, name="op")
    elif kind == "depthwise":
        x = b.input("x", (1, 16, 10, 10))
        b.conv(x, 16, 3, pad=1, groups=16, name="op")
    elif kind == "matmul":
        x = b.input("x", (1, 24, 40))
        b.linear(x, 36, name="op", bias=False)
    elif kind == "attention":
        q = b.input("q", (1, 3, 12, 16))
        k = b.input("k", (1, 3, 20, 16))
        b.matmul(q, k, transpose_b=True, name="op")
    elif kind == "pool":
        x = b.input("x", (1, 8, 15, 15))
        b.pool(x, 3, 2, pad=1, name="op")
    elif kind == "softmax":
        x = b.input("x", (1, 30, 17))
        b.softmax(x, name="op")
    return b.build()


@pytest.mark.parametrize("kind", ["conv", "depthwise", "matmul", "attention", "pool", "softmax"])
@pytest.mark.parametrize("dataflow", ["os", "ws"])
def test_closed_form_traffic_matches_replay(kind, dataflow):
    graph = graph_of(kind)
    a = arch(dataflow=dataflow)
    target = target_of(a)
    unit = build_units(graph)[0]
    cands = candidates_for(graph, unit, target, CostModel("latency", 8.0))
    assert len(cands) > (0 if kind in ("pool", "softmax") else 1)  # a vector op's smallest tile dominates
    for c in range(len(cands)):
        tile, order = cands.tile(c), cands.orders[c]
        for j, o in enumerate(cands.nest.operands):
            rep = replay_operand(cands.nest, o, tile, order)
            assert abs(rep.fetched - cands.traffic[j, c]) <= rep.loads, (o.tensor, tile, order)
            need = int(np.ceil(rep.largest)) * (2 if rep.loads > 1 else 1)
            assert cands.footprint[j, c] == need
            if o.role == "output":
                assert abs(rep.reread - cands.psum_reads[c]) <= rep.loads


def test_whole_op_tile_costs_exactly_the_fold_mapper_cycles():
    graph = graph_of("conv")
    a = arch(filter_sram_kib=64.0, ofmap_sram_kib=64.0, ifmap_sram_kib=64.0)
    unit = build_units(graph)[0]
    nest = loop_nest(graph, unit, 1, a.vector_lanes)
    cands = enumerate_candidates(nest, target_of(a), CostModel("latency", 8.0))
    fold = SystolicFoldMapper().map(graph, a).ops["op"].payload.compute_cycles
    assert cands.cycles.min() == fold
    assert lower_op(graph.op("op")).macs == graph.op("op").macs


def test_candidates_are_not_dominated_in_every_mode():
    graph = graph_of("matmul")
    target = target_of(arch())
    cands = candidates_for(graph, build_units(graph)[0], target)
    flags = (False, False, False)
    staged = cands.staging(target, flags)
    cost = cands.costs(target, CostModel(), flags, 0)
    # in the no-residency mode the cheapest candidate is on the front, and nothing both smaller and cheaper exists
    best = int(np.argmin(cost))
    assert not np.any((staged < staged[best]) & (cost < cost[best]))


def test_weight_tile_that_fits_nowhere_names_the_op():
    b = GraphBuilder("wide")
    x = b.input("x", (1, 4, 4, 64))
    b.conv(x, 8, (1, 64), name="wide_conv")
    graph = b.build()
    target = target_of(arch(filter_sram_kib=60 / 1024))
    with pytest.raises(MappingError) as err:
        candidates_for(graph, build_units(graph)[0], target)
    assert err.value.node == "wide_conv"
    assert "filter_sram" in str(err.value)


def test_cache_shares_equal_shapes_and_keeps_names_apart():
    clear_candidate_cache()
    b = GraphBuilder("twins")
    x = b.input("x", (1, 8, 8, 8))
    y = b.conv(x, 8, 3, pad=1, name="first")
    b.conv(y, 8, 3, pad=1, name="second")
    graph = b.build()
    target = target_of(arch())
    u1, u2 = build_units(graph)
    c1 = candidates_for(graph, u1, target)
    c2 = candidates_for(graph, u2, target)
    assert c1.tiles is c2.tiles  # one enumeration for both layers
    assert c1.nest.operands[0].tensor == "x" and c2.nest.operands[0].tensor == "first:out"


def test_activation_fuses_into_its_producer_only_when_sole_consumer():
    b = GraphBuilder("fuse")
    x = b.input("x", (1, 4, 6, 6))
    y = b.conv(x, 4, 1, name="c")
    r = b.relu(y, name="r")
    s = b.add(r, x, name="add")
    b.relu(s, name="r2")
    units = build_units(b.build())
    assert [u.ops for u in units] == [("c", "r"), ("add", "r2")]


def test_tile_values_cover_the_extremes():
    vals = tile_values(3136)
    assert vals[0] == 1 and vals[-1] == 3136 and len(vals) <= 16
    assert tile_values(1) == [1]


def test_unified_target_is_one_scratchpad_for_every_role():
    target = target_of(arch(scratchpad="unified"))
    assert target.capacities == ((UNIFIED_MEMORY, 24 * 1024),)
    assert {target.memory_of(r) for r in (ROLE_INPUT, ROLE_WEIGHT, ROLE_OUTPUT)} == {UNIFIED_MEMORY}
    assert target.resident_memory == UNIFIED_MEMORY
    graph = graph_of("conv")
    cands = candidates_for(graph, build_units(graph)[0], target)
    # every operand's tile is staged in the one scratchpad
    assert np.array_equal(cands.staging(target, (False,) * 3), cands.footprint.sum(axis=0))


def _full_grid_reference(nest, target, model):
    """The pruning rule applied to every (tile, order) column of the grid, with no shortcut: the
    (grid point, order) pairs the enumeration must keep."""
    key = _NestKey.of(_nameless(nest))
    tables = _grid_tables_cached(key)
    cycles, sram = _grid_cycles_cached(key, target.rows, target.cols, target.dataflow, target.word_bytes)
    cols = _expand(nest, tables, np.arange(tables.count), cycles, sram)
    ok = np.ones(cols.footprint.shape[1], dtype=bool)
    for role in (ROLE_WEIGHT, ROLE_OUTPUT):
        rows = [j for j, o in enumerate(nest.operands) if o.role == role]
        memory = target.memory_of(role)
        if rows and memory != target.resident_memory:
            ok &= cols.footprint[rows].sum(axis=0) <= target.capacity(memory)
    keep = np.flatnonzero(ok)
    fp = cols.footprint[:, keep].astype(np.int64)
    tr = cols.traffic[:, keep].astype(np.int64)
    psum = cols.psum[keep].astype(np.int64)
    cyc = cols.cycles[keep].astype(np.int64)
    words = cols.sram[keep].astype(np.int64)
    roles = tuple(o.role for o in nest.operands)
    cap = target.capacity(target.resident_memory)
    chosen = set()
    for mode in residency_modes(nest):
        staged = sum((fp[j] for j in staged_operands(nest, target, mode)), np.zeros(len(keep), dtype=np.int64))
        traffic = mode_traffic(tr, psum, roles, mode, 0)
        score = mode_cost(traffic, cyc, words, target.word_bytes, model)
        rank = np.empty(len(keep), dtype=np.int64)
        rank[np.lexsort((traffic, cyc, score))] = np.arange(len(keep))
        fast = np.flatnonzero(cyc <= CYCLE_SLACK * cyc.min())
        for i in fast:  # on the (staged, rank) front: nothing smaller ranks better
            others = fast[staged[fast] <= staged[i]]
            if not np.any(rank[others] < rank[i]):
                chosen.add(int(i))
        if staged[fast].min() > cap:  # last resort: the front of the tiles that fit, near the fastest of them
            fits = np.flatnonzero(staged <= cap)
            if len(fits) == 0:
                smallest = np.flatnonzero(staged == staged.min())
                chosen.add(int(smallest[np.argmin(rank[smallest])]))
                continue
            near = fits[cyc[fits] <= CYCLE_SLACK * cyc[fits].min()]
            for i in near:
                if not np.any(rank[near[staged[near] <= staged[i]]] < rank[i]):
                    chosen.add(int(i))
    return {(int(cols.grid_of[keep[i]]), int(cols.order_of[keep[i]])) for i in chosen}


@pytest.mark.parametrize("kind", ["conv", "depthwise", "matmul", "attention", "pool"])
@pytest.mark.parametrize(
    "over, objective",
    [
        ({}, "dram"),
        ({"dataflow": "ws"}, "latency"),
        ({"filter_sram_kib": 1.0, "ofmap_sram_kib": 1.0}, "dram"),  # the fastest tiles overflow their SRAMs
        ({"ifmap_sram_kib": 0.25, "filter_sram_kib": 1.0, "ofmap_sram_kib": 1.0}, "dram"),  # last-resort tiles
        ({"scratchpad": "unified"}, "energy"),
    ],
)
def test_enumeration_keeps_exactly_what_pruning_the_whole_grid_keeps(kind, over, objective):
    """Only tiles near the fastest are costed in every loop order; that shortcut must not change the set."""
    graph = graph_of(kind)
    a = arch(**over)
    target = target_of(a)
    nest = loop_nest(graph, build_units(graph)[0], 1, a.vector_lanes)
    model = CostModel(objective, 8.0, 1.0, 0.1, 0.5) if objective != "dram" else CostModel()
    cands = enumerate_candidates(nest, target, model)
    tables = _grid_tables_cached(_NestKey.of(_nameless(nest)))
    got = set()
    for c in range(len(cands)):
        point = tuple(tables.values[i].index(int(v)) for i, v in enumerate(cands.tiles[c]))
        grid_index = int(np.flatnonzero((tables.grid == point).all(axis=1))[0])
        got.add((grid_index, tables.orders.index(cands.orders[c])))
    assert got == _full_grid_reference(nest, target, model)
    assert np.all(np.diff(cands.traffic.sum(axis=0)) >= 0)  # sorted by total traffic


def test_a_new_scratchpad_size_reuses_the_grid_and_the_cycles():
    clear_candidate_cache()
    graph = graph_of("conv")
    unit = build_units(graph)[0]
    candidates_for(graph, unit, target_of(arch()))
    grids, cycles = _grid_tables_cached.cache_info().misses, _grid_cycles_cached.cache_info().misses
    bigger = candidates_for(graph, unit, target_of(arch(ifmap_sram_kib=32.0)))
    assert (_grid_tables_cached.cache_info().misses, _grid_cycles_cached.cache_info().misses) == (grids, cycles)
    candidates_for(graph, unit, target_of(arch(rows=16, ifmap_sram_kib=32.0)))
    assert _grid_cycles_cached.cache_info().misses == cycles + 1  # a new array shape re-costs the cycles
    clear_candidate_cache()
    cold = candidates_for(graph, unit, target_of(arch(ifmap_sram_kib=32.0)))
    assert np.array_equal(cold.footprint, bigger.footprint) and cold.orders == bigger.orders


def test_energy_objective_prices_array_sram_after_the_pe_scratchpads_reuse():
    """Under the energy objective a unit's array-side SRAM bytes are priced as the model prices them after its
    PE scratchpads' reuse (``array_sram_share``); with one register per operand nothing changes."""
    graph = graph_of("conv")
    flat, deep = arch(dataflow="ws"), arch(dataflow="ws", pe_weight_words=16, pe_input_words=4)
    assert build_problem(graph, flat, "energy").cands[0].array_sram_share == 1.0
    problem = build_problem(graph, deep, "energy")
    cands = problem.cands[0]
    gemm = lower_op(graph.op("op"))
    streams = fold_streams(gemm, deep)
    sr, sc, _ = spatial_dims(gemm, "ws")
    prices = design_prices(deep)
    no_fills = dict.fromkeys(TILED_ROLES, 0.0)
    sram, _ = tiled_array_energy_pj(1.0, streams, folds(sr, sc, 8, 8), no_fills, 1, prices, "ws", conv_window(gemm))
    want = sram / tiled_sram_energy_pj(1.0, streams, no_fills, prices)
    assert cands.array_sram_share == pytest.approx(want, rel=1e-12) and want < 0.9
    mode = (False,) * len(cands.roles)
    scored = cands.costs(problem.target, problem.model, mode, 0)
    plain = mode_cost(
        mode_traffic(cands.traffic, cands.psum_reads, cands.roles, mode, 0),
        cands.cycles,
        cands.sram_words,
        problem.target.word_bytes,
        problem.model,
    )
    assert problem.model.array_sram_share == 1.0 and (scored <= plain).all() and (scored < plain).any()
