"""The section-mapping problem of a graph on an RDU, in integer picoseconds and femtojoules, and its objective."""

from __future__ import annotations

import math

from dse.graph import Graph, Op
from hwmodels.rdu.cost import (
    PCU_OP_KINDS,
    AllocOption,
    Edge,
    Placeable,
    PlanCost,
    SectionProblem,
    ceil_div,
    energy_prices,
    op_chunks,
    op_cycles,
)
from hwmodels.rdu.node import node_view
from mappers.base import MappingError
from templates.rdu import RduArch

OBJECTIVES = ("latency", "energy", "weighted")
PMU_PCUS_SERVED = 2  # one PMU feeds the operand streams of two PCUs (assumption: each op needs pcus/2 PMUs)


def _alloc_options(op: Op, graph: Graph, arch: RduArch) -> list[AllocOption]:
    if op.kind not in PCU_OP_KINDS:
        raise MappingError(f"op {op.name!r}: the RDU mapper has no cost for {op.kind.value}", node=op.name)
    total_pcus, total_pmus = arch.pcus, arch.pmus
    chunks = max(1, op_chunks(op, graph))
    io_bytes = sum(graph.tensors[t].nbytes for t in (*op.inputs, *op.outputs))
    buffer_pmus = ceil_div(2 * io_bytes / chunks, arch.pmu_bytes)  # double-buffered chunk
    ps_per_cycle = 1e6 / arch.clock_mhz
    counts = sorted({min(total_pcus, 2**e) for e in range(0, max(1, total_pcus).bit_length() + 1)} | {total_pcus})
    options: list[AllocOption] = []
    best_cycles = math.inf
    for p in counts:
        cycles = op_cycles(op, arch, p)
        if cycles >= best_cycles:
            continue  # dominated: more PCUs, no faster
        pmus = max(1, ceil_div(p, PMU_PCUS_SERVED), buffer_pmus)
        if pmus > total_pmus:
            continue
        best_cycles = cycles
        total_ps = int(math.ceil(cycles * ps_per_cycle))
        fill = ceil_div(total_ps, chunks)
        options.append(AllocOption(p, pmus, cycles, fill, max(0, total_ps - fill)))
    if not options:
        raise MappingError(
            f"op {op.name!r} needs {buffer_pmus} PMUs for its double-buffered stream chunk "
            f"({2 * io_bytes / chunks / 1024:.1f} KiB) but the RDU has {total_pmus} PMUs of "
            f"{arch.pmu_kib:g} KiB; raise pmus or pmu_kib",
            node=op.name,
        )
    return options


def build_problem(graph: Graph, arch: RduArch, objective: str = "latency") -> SectionProblem:
    """The section-mapping problem of ``graph`` on ``arch``; raises MappingError for what cannot fit."""
    arch = node_view(arch)  # a multi-socket node as the one socket whose section problem is the node's
    if objective not in OBJECTIVES:
        raise MappingError(f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    if not graph.ops:
        raise MappingError(f"graph {graph.name!r} has no ops to map")
    index = {op.name: i for i, op in enumerate(graph.ops)}
    producer = {t: index[p] for t, p in graph.producer().items()}
    consumers = graph.consumers()
    stream_input = graph.ops[0].inputs[0] if graph.ops[0].inputs else None
    edges: list[Edge] = []
    fixed_reads: list[tuple[int, int]] = []
    readers: dict[str, list[tuple[int, int]]] = {}
    stored: dict[str, int] = {}  # an op's weights placeable holds them whole; its reader reads what it reads
    for i, op in enumerate(graph.ops):
        for t in op.inputs:
            nbytes = graph.tensors[t].nbytes
            if t in producer:
                edges.append(Edge(t, producer[t], i, nbytes))
            elif t == stream_input:
                fixed_reads.append((i, nbytes))
            else:
                readers.setdefault(t, []).append((i, nbytes))
        weight_bytes = sum(graph.tensors[w].nbytes for w in op.weights)
        if weight_bytes:
            stored[f"weights:{op.name}"] = weight_bytes
            read_bytes = sum(graph.read_nbytes(op, w) for w in op.weights)  # a look-up: its rows only
            readers.setdefault(f"weights:{op.name}", []).append((i, read_bytes))
    placeables = []
    for name, reads in readers.items():
        nbytes = graph.tensors[name].nbytes if name in graph.tensors else stored[name]
        placeables.append(Placeable(name, nbytes, tuple(reads)))
    writes = []
    for i, op in enumerate(graph.ops):
        for t in op.outputs:
            uses = [index[c] for c in consumers.get(t, []) if c in index]
            is_output = graph.tensors[t].kind == "output" or not uses
            nbytes = graph.tensors[t].nbytes
            if is_output:  # written once; later sections read that copy
                writes.append((i, -1, nbytes))
            elif max(uses) > i:
                writes.append((i, max(uses), nbytes))
    tier_bytes = {"hbm": int(arch.hbm_gb * 1e9), "ddr": int(arch.ddr_gb * 1e9)}
    spill = "hbm" if tier_bytes["hbm"] > 0 else "ddr"
    if tier_bytes[spill] <= 0:
        raise MappingError("the RDU has neither HBM nor DDR (hbm_gb = ddr_gb = 0); activations need a spill tier")
    ps_per_byte = {
        "sram": 1000.0 / arch.noc_gbps,
        "hbm": 1000.0 / arch.hbm_gbps,
        "ddr": 1000.0 / arch.ddr_gbps,
    }
    prices, static_mw, compute_fj = energy_prices(arch, graph)
    problem = SectionProblem(
        graph=graph,
        arch=arch,
        objective=objective,
        names=[op.name for op in graph.ops],
        options=[_alloc_options(op, graph, arch) for op in graph.ops],
        edges=edges,
        writes=writes,
        fixed_reads=fixed_reads,
        placeables=placeables,
        tier_bytes=tier_bytes,
        tier_ps_per_byte=ps_per_byte,
        tier_fj_per_byte=prices,
        spill_tier=spill,
        reconfig_ps=int(round(arch.reconfig_us * 1e6)),
        static_mw=static_mw,
        compute_fj=compute_fj,
        flops=graph.flops,
    )
    for item in placeables:
        if not problem.allowed_tiers(item):
            raise MappingError(
                f"{item.name} ({item.nbytes / 1e9:.3f} GB) fits no tier: SRAM {arch.sram_bytes / 1e9:.3f} GB, "
                f"HBM {arch.hbm_gb:g} GB, DDR {arch.ddr_gb:g} GB; raise a capacity",
                node=item.name.removeprefix("weights:"),
            )
    return problem


def objective_weights(problem: SectionProblem, reference: PlanCost) -> tuple[int, int]:
    """Integer weights making latency and energy count equally at the reference (unfused) plan."""
    lat, energy = max(1, reference.latency_ps), max(1, reference.mapped_energy_fj)
    small = min(lat, energy)
    return max(1, round(energy / small)), max(1, round(lat / small))
