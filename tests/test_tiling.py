"""Tile candidates: closed-form traffic agrees with a tile-by-tile replay; pruning and caching behave."""

from __future__ import annotations

import numpy as np
import pytest

from dse.graph import GraphBuilder
from mappers.base import MappingError
from mappers.schedule_check import replay_operand
from mappers.systolic import SystolicFoldMapper, lower_op
from mappers.tiling import (
    CostModel,
    build_units,
    candidates_for,
    clear_candidate_cache,
    enumerate_candidates,
    loop_nest,
    target_of,
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
    fold = SystolicFoldMapper().map(graph, a).ops["op"].extra["compute_cycles"]
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
