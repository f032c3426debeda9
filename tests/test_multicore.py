"""The multicore family: template, CP-SAT scheduling against brute force, schedule validity, fusion, multi-DNN."""

from __future__ import annotations

import math

import pytest

from dse.graph import GraphBuilder, merge_graphs
from dse.registry import family, make_mapper
from dse.session import build_graph
from dse.spec import parse_spec
from dse.spec.messages import SpecError
from dse.zoo import build
from mappers.multicore.bruteforce import brute_force
from mappers.multicore.cpsat import solve
from mappers.multicore.problem import DEMAND_UNITS, build_problem
from mappers.multicore.schedule import Schedule, energy_bound, horizon, list_schedule, score
from templates.base import TemplateError
from templates.multicore import MulticoreTemplate

MIX = "16x16:ws:32+8x32:os:48"
SPILLING_MIX = "16x16:ws:3+8x32:os:48"  # 3 KiB: core 0's ofmap SRAM cannot hold a layer's output


def small_graph():
    """conv a -> relu -> (conv b, conv c) -> add: a branch two cores can run side by side."""
    b = GraphBuilder("branch")
    x = b.input("x", (1, 8, 12, 12))
    a = b.relu(b.conv(x, 16, 3, pad=1, name="a"))
    left = b.conv(a, 16, 3, pad=1, name="b")
    right = b.conv(a, 16, 1, name="c")
    b.output(b.add(left, right))
    return b.build()


def check_schedule(s: Schedule) -> None:
    """Independent check: one task at a time per core, tiles in order; every edge's transfer or read-back
    after its producer and before its consumer (plus the hops); one transfer at a time per link resource
    (the bus, or a mesh core's output/input port); DRAM channels never over-subscribed by the tasks'
    traffic and the read-backs (one channel each)."""
    p = s.problem
    arch = p.arch
    for c in range(p.num_cores):
        spans = sorted((s.start[t.index], s.end(t.index)) for t in p.tasks if s.core(t.index) == c)
        assert all(e0 <= s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))
    links: dict[str, list] = {}
    dram = [(s.start[t.index], s.end(t.index), p.costs[t.index][s.core(t.index)].dram_demand) for t in p.tasks]
    for i, e in enumerate(p.edges):
        a, b = s.core(e.src), s.core(e.dst)
        spilled = not p.costs[e.src][a].output_on_chip
        at = s.edge_start[i]
        assert at >= s.end(e.src)
        if spilled:
            length = math.ceil(e.nbytes / arch.cores[b].dram_bytes_per_cycle)
            dram.append((at, at + length, DEMAND_UNITS))
            assert s.start[e.dst] >= at + length
        elif a != b:
            length = math.ceil(e.nbytes / arch.link_bytes_per_cycle)
            assert s.start[e.dst] >= at + length + arch.hops(a, b) * arch.hop_latency_cycles
            for name in ["bus"] if arch.interconnect == "bus" else [f"out{a}", f"in{b}"]:
                if e.queued:
                    links.setdefault(name, []).append((at, at + length))
    for spans in links.values():
        spans.sort()
        assert all(e0 <= s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))
    for a, b in zip(p.tasks, p.tasks[1:]):
        if a.layer == b.layer:
            assert s.start[b.index] >= s.end(a.index)
    for at in {x for x, _, _ in dram}:
        used = sum(d for x, y, d in dram if x <= at < y and y > x)
        assert used <= DEMAND_UNITS * arch.dram_channels


def test_template_mix_and_slots():
    t = MulticoreTemplate()
    arch = t.instantiate({"cores": "32x32:ws:256+16x64:os", "interconnect": "mesh", "dram_channels": 2})
    assert [(c.rows, c.cols, c.dataflow) for c in arch.cores] == [(32, 32, "ws"), (16, 64, "os")]
    assert arch.cores[0].dram_gbps == pytest.approx(25.6 / 2)
    slots = t.instantiate({"num_cores": 3, "core1_rows": 8, "core1_dataflow": "is"})
    assert [c.rows for c in slots.cores] == [32, 8, 32] and slots.cores[1].dataflow == "is"
    assert (slots.hops(0, 2), slots.hops(1, 2), slots.hops(1, 1)) == (1, 2, 0)  # 2x2 mesh, XY routing


@pytest.mark.parametrize(
    "point, param",
    [
        ({"cores": "32by32:ws"}, "cores"),
        ({"cores": "8x8:ws", "num_cores": 2}, "num_cores"),
        ({"core0_rows": 0}, "core0_rows"),
    ],
)
def test_template_refuses_bad_points(point, param):
    with pytest.raises(TemplateError) as err:
        MulticoreTemplate().instantiate(point)
    assert err.value.param == param


@pytest.mark.parametrize("objective", ["latency", "throughput", "energy", "edp"])
@pytest.mark.parametrize(
    "cores, interconnect, tiles",
    [
        (MIX, "bus", 1),
        (MIX, "bus", 2),
        (SPILLING_MIX, "bus", 2),  # core 0 spills its outputs: DRAM read-backs queue with the tasks' traffic
        (SPILLING_MIX, "mesh", 2),
        (MIX + "+8x8:is:48", "mesh", 1),  # three cores: a core's output port serialises its transfers
    ],
)
def test_cpsat_matches_brute_force(objective, cores, interconnect, tiles):
    arch = MulticoreTemplate().instantiate(
        {"cores": cores, "interconnect": interconnect, "link_gbps": 4.0, "dram_gbps": 4.0}
    )
    problem = build_problem(small_graph(), arch, fusion_tiles=tiles)
    assert any(e.queued for e in problem.edges)
    best, brute = brute_force(problem, objective)
    check_schedule(brute)
    schedule, facts = solve(problem, objective, time_limit_s=20.0)
    assert facts["status"] == "OPTIMAL"
    check_schedule(schedule)
    got = score(schedule, objective, horizon(problem), energy_bound(problem, horizon(problem)))
    n = 1 if objective == "edp" else len(best)  # edp: the product is the objective, the makespan a tie-break
    assert got[:n] == best[:n]


def test_transfers_queue_on_a_shared_bus():
    """Both consumers of ``a`` on the other core: its two transfers share the bus, the second one waits."""
    arch = MulticoreTemplate().instantiate({"cores": MIX, "interconnect": "bus", "link_gbps": 0.5})
    problem = build_problem(small_graph(), arch)
    schedule = list_schedule(problem, (0, 1, 1))  # a on core 0; b, c (+ add) on core 1
    spans = sorted(
        (schedule.edge_start[i], schedule.edge_start[i] + schedule.activity(i).cycles)
        for i in range(len(problem.edges))
        if schedule.activity(i).kind == "noc"
    )
    assert len(spans) == 2 and spans[0][0] == schedule.end(0) and spans[1][0] >= spans[0][1]
    check_schedule(schedule)


def test_resnet18_schedule_is_valid_deterministic_and_beats_greedy():
    graph = build("resnet18")
    arch = MulticoreTemplate().instantiate({"cores": "32x32:ws:256+16x64:os:256+64x16:is:128+16x16:ws:128"})
    runs = [make_mapper("multicore", "multicore", {"time_limit_s": 5.0}).map(graph, arch) for _ in range(2)]
    a, b = (r.solver["schedule"] for r in runs)
    assert (a.layer_core, a.start) == (b.layer_core, b.start)
    check_schedule(a)
    greedy = make_mapper("multicore", "greedy").map(graph, arch).solver["schedule"]
    check_schedule(greedy)
    assert a.makespan <= greedy.makespan
    model = family("multicore").hwmodel()
    metrics = model.evaluate(runs[0], arch)
    assert metrics["latency_cycles"] == a.makespan
    assert sum(layer.macs for layer in metrics.layers) == graph.macs


def chain_graph():
    """Three 3x3 convs on 32x32 with 32 channels: 32 KiB activations, 9 KiB of weights per conv."""
    b = GraphBuilder("chain")
    x = b.input("x", (1, 32, 32, 32))
    for name in ("a", "b", "c"):
        x = b.relu(b.conv(x, 32, 3, pad=1, name=name))
    b.output(x)
    return b.build()


def test_fused_bands_stay_on_chip_and_cut_dram_traffic():
    """An output that does not fit the ofmap SRAM whole spills layer by layer (written, read back); cut into
    bands that fit, with its consumer banded too, it stays on chip: DRAM traffic drops by that write and
    read-back, and only the graph output is written."""
    arch = MulticoreTemplate().instantiate({"cores": "16x16:ws:48+16x16:os:48"})  # 8 KiB ofmap: 16 KiB output
    graph = chain_graph()
    whole, fused = build_problem(graph, arch), build_problem(graph, arch, fusion_tiles=8)
    assert [layer.tiles for layer in whole.layers] == [1, 1, 1]
    assert [layer.tiles for layer in fused.layers] == [4, 4, 4]  # 32 KiB in bands of 8 KiB <= 16 KiB / 2
    assert not any(whole.costs[t.index][0].output_on_chip for t in whole.tasks)
    assert all(fused.costs[t.index][0].output_on_chip for t in fused.tasks if t.layer < 2)

    def traffic(problem):  # (task writes, read-backs of spilled tensors, everything) on core 0
        schedule = list_schedule(problem, (0,) * len(problem.layers))
        costs = [problem.costs[t.index][0] for t in problem.tasks]
        writes = sum(c.dram_write_bytes for c in costs)
        readbacks = sum(schedule.activity(i).dram_bytes for i in range(len(problem.edges)))
        return writes, readbacks, writes + readbacks + sum(c.dram_read_bytes for c in costs)

    activation = 32 * 32 * 32  # int8 bytes of each conv's output
    assert traffic(whole)[:2] == (3 * activation, 2 * activation)  # a, b, c written; a, b read back
    assert traffic(fused)[:2] == (activation, 0)  # only the graph output (c) leaves the chip
    assert traffic(fused)[2] < traffic(whole)[2] - 3 * activation  # the first band's halo re-reads cost less


def test_fusion_lowers_resnet18_dram_traffic():
    graph = build("resnet18")
    arch = MulticoreTemplate().instantiate({"cores": "32x32:ws:256+32x32:os:256", "dram_gbps": 12.8})
    model = family("multicore").hwmodel()
    figures = {}
    for tiles in (1, 8):
        mapping = make_mapper("multicore", "multicore", {"time_limit_s": 0.5, "fusion_tiles": tiles}).map(graph, arch)
        check_schedule(mapping.solver["schedule"])
        figures[tiles] = model.evaluate(mapping, arch)
    assert figures[8]["dram_mb"] < figures[1]["dram_mb"]
    assert 1 < max(layer.extra["tiles"] for layer in figures[8].layers) <= 8
    assert min(layer.extra["tiles"] for layer in figures[8].layers) == 1  # layers whose output fits stay whole


def test_multi_dnn_spec_graph_and_metrics():
    spec = parse_spec(
        "name: mt\n"
        "workload: {models: [{model: small_cnn, rate: 30}, {model: jet_mlp, rate: 10}]}\n"
        "template: {kind: multicore, params: {cores: '8x8:ws:32+8x8:os:32'}, mapper_options: {objective: throughput}}\n"
    )
    graph = build_graph(spec)
    assert {op.attrs["model"] for op in graph.ops} == {"small_cnn", "jet_mlp"}
    assert graph.meta["model_rates"] == {"small_cnn": 30.0, "jet_mlp": 10.0}
    arch = MulticoreTemplate().instantiate({"cores": "8x8:ws:32+8x8:os:32"})
    mapping = make_mapper("multicore", "multicore", {"objective": "throughput", "time_limit_s": 3.0}).map(graph, arch)
    metrics = family("multicore").hwmodel().evaluate(mapping, arch)
    models = metrics.info["models"]
    assert set(models) == {"small_cnn", "jet_mlp"}
    assert models["small_cnn"]["throughput_ips"] == pytest.approx(3 * models["jet_mlp"]["throughput_ips"])
    assert metrics["throughput_ips"] == pytest.approx(sum(m["throughput_ips"] for m in models.values()))


def test_merge_graphs_keeps_models_apart():
    merged = merge_graphs([("a", build("jet_mlp")), ("b", build("jet_mlp"))])
    assert len(merged.ops) == 2 * len(build("jet_mlp").ops)
    assert merged.macs == 2 * build("jet_mlp").macs


@pytest.mark.parametrize(
    "workload, needle",
    [
        ("{model: resnet18, models: [{model: resnet18}]}", "exactly one of workload.model"),
        ("{models: [{model: nosuchnet}]}", "not a zoo model"),
        ("{models: [{model: resnet18, rate: 0}]}", "rate"),
    ],
)
def test_bad_multi_dnn_workload_is_one_clear_error(workload, needle):
    with pytest.raises(SpecError) as err:
        parse_spec(f"name: x\nworkload: {workload}\ntemplate: {{kind: multicore}}\n")
    assert needle in str(err.value) and "Value error" not in str(err.value)


def test_unknown_objective_is_refused():
    with pytest.raises(Exception, match="choose one of: latency, throughput, energy, edp"):
        make_mapper("multicore", "multicore", {"objective": "speed"})


def test_every_core_takes_the_pe_scratchpad_depths():
    """pe_*_words reach every core (energy and area only): the same schedule and latency, fewer SRAM reads priced,
    and the scratchpads' area in each core's PE array."""
    graph = small_graph()
    template, model = MulticoreTemplate(), family("multicore").hwmodel()
    base_point = {"cores": MIX, "interconnect": "bus"}
    deep_point = {**base_point, "pe_weight_words": 16, "pe_input_words": 3, "pe_psum_words": 4}
    results = []
    for point in (base_point, deep_point):
        arch = template.instantiate(point)
        mapping = make_mapper("multicore", "multicore", {"objective": "latency", "time_limit_s": 3.0}).map(graph, arch)
        results.append((arch, model.evaluate(mapping, arch)))
    (base_arch, base), (deep_arch, deep) = results
    assert all((c.pe_weight_words, c.pe_input_words, c.pe_psum_words) == (16, 3, 4) for c in deep_arch.cores)
    assert deep["latency_cycles"] == base["latency_cycles"]
    assert deep.energy_breakdown_pj["mac"] == pytest.approx(base.energy_breakdown_pj["mac"])
    assert deep.energy_breakdown_pj["sram"] < base.energy_breakdown_pj["sram"]
    assert deep["area_mm2"] > base["area_mm2"]
