"""Mapping a graph onto an RDU: fused sections, PCU/PMU allocation and three-tier placement in one CP-SAT model.

How a graph runs on an RDU, as this mapper decides it:

* **Sections.** The ops (in graph order) are cut into runs of consecutive ops. A section is placed spatially
  at once: each op gets ``pcus`` PCUs (its parallelism) and ``pmus`` PMUs (its stream buffers), and the
  section's PCUs and PMUs must fit the chip. Activations between ops of one section stream through PMUs
  over the on-chip network; a tensor whose consumer sits in a later section is written to the spill tier
  (HBM, or DDR on a chip without HBM) and read back. Between sections the chip reconfigures
  (``reconfig_us``).
* **Section time.** Ops stream in chunks (rows/tokens). A pipeline of stages with per-chunk times t_i/C_i
  takes ``sum_i t_i/C_i + max_i t_i (1 - 1/C_i)``: the fill (first chunk through every stage) plus the
  steady state set by the slowest stage; with one chunk (a decode step) it is the plain sum. The section
  also cannot finish before its HBM, DDR and on-chip traffic has moved at each tier's bandwidth (tiers
  work in parallel, so the section takes the largest of these times).
* **Tiers.** Weights (per op) and persistent graph inputs (KV caches, constant filters: every graph input
  but the activation stream) are placed in SRAM, HBM or DDR by capacity. SRAM-resident data occupies PMUs
  that the largest section then cannot use: ``resident bytes + max section PMUs x PMU size <= SRAM``.
* **Op costs on PCUs.** GEMMs (matmul, conv) map lanes over the output (N / channels) and stages over the
  reduction; elementwise ops take one pass per ``stages`` FLOPs per element; softmax and layernorm take two
  passes (reduce, normalise); an FFT takes log2(L) butterfly levels, each a PCU pass plus, without the SSM
  extension, a permutation pass through a PMU (the PCU has no cross-lane shuffle); a selective scan is
  sequential along L (each step waits ``stages`` cycles for the recurrence) unless the SSM extension runs it
  as a parallel prefix scan (twice the work, log2(L) depth).

The CP-SAT model (:func:`solve_sections`) holds the cuts, the allocation choice per op and the tier of
every placed item together, with the objective latency, energy or their weighted sum; it reports status,
objective, bound and gap. The greedy one-op-per-section plan (:func:`unfused_plan`) is the unfused baseline;
it and a fused dynamic-programming plan (:func:`fused_plan`) are the candidates the best of which hints the
solver and is returned if the time limit leaves CP-SAT behind it, so the fused answer is never slower than
unfused. :func:`plan_cost` is the one cost
function: the CP-SAT model is its exact linearisation (same integer picoseconds), the hardware model and
the brute-force check call it too.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from dse.graph import Graph, Op, OpKind
from mappers.base import Mapping, MappingError, OpMapping
from templates.base import Arch

TIERS = ("sram", "hbm", "ddr")
OBJECTIVES = ("latency", "energy", "weighted")
PMU_PCUS_SERVED = 2  # one PMU feeds the operand streams of two PCUs (assumption: each op needs pcus/2 PMUs)
FEMTO = 1000  # energy coefficients in fJ so that per-byte prices below 1 pJ stay integers


# ---------------------------------------------------------------------------------------------------
# Per-op cost on PCUs
# ---------------------------------------------------------------------------------------------------
def _ceil(a: float, b: float) -> int:
    return int(math.ceil(a / b - 1e-12))


def op_work_items(op: Op, arch: Arch) -> tuple[int, int]:
    """(vector-pass items, minimum cycles) of ``op``: items spread over PCUs, one item per PCU cycle.

    The minimum is a latency floor that more PCUs cannot beat (a sequential scan's recurrence)."""
    lanes, stages = arch.pcu_lanes, arch.pcu_stages  # type: ignore[attr-defined]
    d = op.dims
    k = op.kind
    if k is OpKind.MATMUL:
        return d["B"] * d["M"] * _ceil(d["N"], lanes) * _ceil(d["K"], stages), 1
    if k is OpKind.CONV:
        per_group_in = d["C"] // d.get("G", 1)
        return d["N"] * d["P"] * d["Q"] * _ceil(d["K"], lanes) * _ceil(per_group_in * d["R"] * d["S"], stages), 1
    if k is OpKind.ELEMENTWISE:
        per_element = op.flops / max(1, d["N"])
        return _ceil(d["N"], lanes) * max(1, _ceil(per_element, stages)), 1
    if k in (OpKind.SOFTMAX, OpKind.LAYERNORM):
        return 2 * d["R"] * _ceil(d["L"], lanes), 1
    if k is OpKind.POOL:
        return _ceil(d["N"] * d["C"] * d["P"] * d["Q"], lanes) * _ceil(d["R"] * d["S"], stages), 1
    if k is OpKind.FFT:
        levels = max(1, math.ceil(math.log2(d["L"])))
        passes = 1 if arch.ssm_ext else 2  # type: ignore[attr-defined]  # permutation pass through a PMU without
        return d["B"] * _ceil(d["L"], lanes) * levels * passes, 1
    if k is OpKind.SCAN:
        return d["B"] * d["L"] * _ceil(d["D"] * d["S"], lanes) * _ceil(9, stages), 1
    raise MappingError(f"op {op.name!r}: the RDU mapper has no cost for {k.value}", node=op.name)


def op_cycles(op: Op, arch: Arch, pcus: int) -> int:
    """Cycles of ``op`` on ``pcus`` PCUs (at the precision's rate)."""
    items, floor = op_work_items(op, arch)
    rate = arch.rate  # type: ignore[attr-defined]
    if op.kind is OpKind.SCAN:
        d = op.dims
        stages = arch.pcu_stages  # type: ignore[attr-defined]
        per_step = _ceil(items / d["L"], pcus)
        sequential = d["L"] * max(per_step, stages)  # each step waits for the recurrence through the pipeline
        if not arch.ssm_ext:  # type: ignore[attr-defined]
            return int(math.ceil(sequential / rate))
        depth = stages * max(1, math.ceil(math.log2(d["L"])))
        parallel = _ceil(2 * items, pcus) + depth  # Blelloch up/down sweep over L on the scan interconnect
        return int(math.ceil(min(sequential, parallel) / rate))
    return int(math.ceil(max(floor, _ceil(items, pcus)) / rate))


def op_chunks(op: Op, graph: Graph) -> int:
    """How many chunks (rows, tokens, transforms) the op streams its output in: its pipelining depth."""
    d = op.dims
    k = op.kind
    if k is OpKind.MATMUL:
        return d["B"] * d["M"]
    if k is OpKind.CONV:
        return d["N"] * d["P"] * d["Q"]
    if k in (OpKind.SOFTMAX, OpKind.LAYERNORM):
        return d["R"]
    if k is OpKind.FFT:
        return d["B"]
    if k is OpKind.SCAN:
        return d["B"] * d["L"]
    if k is OpKind.POOL:
        return d["N"] * d["P"]
    shape = graph.tensors[op.outputs[0]].shape
    return max(1, math.prod(shape[:-1])) if len(shape) > 1 else 1


# ---------------------------------------------------------------------------------------------------
# The problem
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AllocOption:
    """One way to run an op: PCUs, PMUs, cycles; ``fill_ps`` is one chunk's time, ``steady_ps`` the rest."""

    pcus: int
    pmus: int
    cycles: int
    fill_ps: int
    steady_ps: int


@dataclass(frozen=True)
class Placeable:
    """Something placed in a tier: an op's weights or a persistent graph input (KV cache, constant filter)."""

    name: str
    nbytes: int
    readers: tuple[tuple[int, int], ...]  # (op index, bytes read)


@dataclass(frozen=True)
class Edge:
    """Activation ``tensor`` of ``nbytes`` produced by op ``src`` and read by op ``dst`` (src < dst)."""

    tensor: str
    src: int
    dst: int
    nbytes: int


@dataclass
class SectionProblem:
    """Everything the section mapper and ``plan_cost`` need, in integer picoseconds and femtojoules."""

    graph: Graph
    arch: Arch
    objective: str
    names: list[str]
    options: list[list[AllocOption]]
    edges: list[Edge]
    writes: list[tuple[int, int, int]]  # (producer, last consumer or -1 for a graph output, bytes)
    fixed_reads: list[tuple[int, int]]  # (op, bytes) read from the spill tier: the activation stream input
    placeables: list[Placeable]
    tier_bytes: dict[str, int]  # capacity of HBM and DDR (SRAM is bounded through PMUs)
    tier_ps_per_byte: dict[str, float]  # "sram": the on-chip network / PMU bandwidth
    tier_fj_per_byte: dict[str, int]  # per byte moved; a stream counts its PMU write and read
    spill_tier: str
    reconfig_ps: int
    static_mw: int  # static power in mW: mW x ps = fJ
    compute_fj: int  # fixed: every FLOP at the catalog price
    flops: int

    @property
    def n(self) -> int:
        return len(self.names)

    def allowed_tiers(self, item: Placeable) -> list[str]:
        tiers = ["sram"] if item.nbytes <= self.arch.sram_bytes else []  # type: ignore[attr-defined]
        tiers += [t for t in ("hbm", "ddr") if 0 < item.nbytes <= self.tier_bytes[t]]
        return tiers

    def bytes_ps(self, tier: str, nbytes: int) -> int:
        """Integer picoseconds to move ``nbytes`` through ``tier`` (rounded up per transfer)."""
        return int(math.ceil(nbytes * self.tier_ps_per_byte[tier])) if nbytes else 0


@dataclass
class Plan:
    """A mapping decision: where sections start, the option per op, the tier per placeable."""

    starts: list[bool]
    choice: list[int]
    tiers: dict[str, str]

    def sections(self) -> list[tuple[int, int]]:
        """(first, last) op index of every section."""
        out: list[tuple[int, int]] = []
        for i, s in enumerate(self.starts):
            if s or not out:
                out.append((i, i))
            else:
                out[-1] = (out[-1][0], i)
        return out


@dataclass
class SectionCost:
    first: int
    last: int
    pcus: int
    pmus: int
    compute_ps: int
    tier_ps: dict[str, int]
    seconds_ps: int  # the section's time, reconfiguration excluded


@dataclass
class PlanCost:
    latency_ps: int
    energy_fj: int  # incl. compute and static
    traffic: dict[str, int]  # bytes per tier (sram: SRAM-resident reads + on-chip streams)
    sections: list[SectionCost]
    op_ps: list[int]  # each op's own compute time on its allocation
    sram_resident_bytes: int
    feasible: bool
    why: str = ""
    energy_parts_fj: dict[str, int] = field(default_factory=dict)

    def objective(self, objective: str, weights: tuple[int, int] = (1, 1)) -> int:
        if objective == "latency":
            return self.latency_ps
        if objective == "energy":
            return self.mapped_energy_fj
        return weights[0] * self.latency_ps + weights[1] * self.mapped_energy_fj

    @property
    def mapped_energy_fj(self) -> int:
        """Energy the mapping decides: everything but the fixed compute energy."""
        return self.energy_fj - self.energy_parts_fj.get("compute", 0)


def _alloc_options(op: Op, graph: Graph, arch: Arch) -> list[AllocOption]:
    total_pcus, total_pmus = arch.pcus, arch.pmus  # type: ignore[attr-defined]
    chunks = max(1, op_chunks(op, graph))
    io_bytes = sum(graph.tensors[t].nbytes for t in (*op.inputs, *op.outputs))
    buffer_pmus = _ceil(2 * io_bytes / chunks, arch.pmu_bytes)  # type: ignore[attr-defined]  # double-buffered chunk
    ps_per_cycle = 1e6 / arch.clock_mhz  # type: ignore[attr-defined]
    counts = sorted({min(total_pcus, 2**e) for e in range(0, max(1, total_pcus).bit_length() + 1)} | {total_pcus})
    options: list[AllocOption] = []
    best_cycles = math.inf
    for p in counts:
        cycles = op_cycles(op, arch, p)
        if cycles >= best_cycles:
            continue  # dominated: more PCUs, no faster
        pmus = max(1, _ceil(p, PMU_PCUS_SERVED), buffer_pmus)
        if pmus > total_pmus:
            continue
        best_cycles = cycles
        total_ps = int(math.ceil(cycles * ps_per_cycle))
        fill = _ceil(total_ps, chunks)
        options.append(AllocOption(p, pmus, cycles, fill, max(0, total_ps - fill)))
    if not options:
        raise MappingError(
            f"op {op.name!r} needs {buffer_pmus} PMUs for its double-buffered stream chunk "
            f"({2 * io_bytes / chunks / 1024:.1f} KiB) but the RDU has {total_pmus} PMUs of "
            f"{arch.pmu_kib:g} KiB; raise pmus or pmu_kib",  # type: ignore[attr-defined]
            node=op.name,
        )
    return options


def _prices(arch: Arch, graph: Graph) -> tuple[dict[str, int], int, int]:
    """(fJ per byte per tier, static mW, compute fJ) from the technology catalog."""
    from hwmodels.catalogs.tech import dram_energy_pj, get_tech
    from hwmodels.rdu import compute_pj_per_flop, rdu_area_mm2

    tech = get_tech(arch.tech)  # type: ignore[attr-defined]
    sram_pj = tech.sram_energy_pj_per_byte(arch.pmu_kib)  # type: ignore[attr-defined]
    prices = {
        "sram": int(round(sram_pj * FEMTO)),  # per byte read or written in a PMU (streams count both)
        "hbm": int(round(dram_energy_pj(1, arch.hbm_kind) * FEMTO)),  # type: ignore[attr-defined]
        "ddr": int(round(dram_energy_pj(1, arch.ddr_kind) * FEMTO)),  # type: ignore[attr-defined]
    }
    static_mw = int(round(tech.leakage_w(rdu_area_mm2(arch)["total"]) * 1000))
    compute_fj = int(round(graph.flops * compute_pj_per_flop(arch) * FEMTO))
    return prices, static_mw, compute_fj


def build_problem(graph: Graph, arch: Arch, objective: str = "latency") -> SectionProblem:
    """The section-mapping problem of ``graph`` on ``arch``; raises MappingError for what cannot fit."""
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
            readers.setdefault(f"weights:{op.name}", []).append((i, weight_bytes))
    placeables = []
    for name, reads in readers.items():
        nbytes = graph.tensors[name].nbytes if name in graph.tensors else reads[0][1]
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
    tier_bytes = {"hbm": int(arch.hbm_gb * 1e9), "ddr": int(arch.ddr_gb * 1e9)}  # type: ignore[attr-defined]
    spill = "hbm" if tier_bytes["hbm"] > 0 else "ddr"
    if tier_bytes[spill] <= 0:
        raise MappingError("the RDU has neither HBM nor DDR (hbm_gb = ddr_gb = 0); activations need a spill tier")
    ps_per_byte = {
        "sram": 1000.0 / arch.noc_gbps,  # type: ignore[attr-defined]
        "hbm": 1000.0 / arch.hbm_gbps,  # type: ignore[attr-defined]
        "ddr": 1000.0 / arch.ddr_gbps,  # type: ignore[attr-defined]
    }
    prices, static_mw, compute_fj = _prices(arch, graph)
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
        reconfig_ps=int(round(arch.reconfig_us * 1e6)),  # type: ignore[attr-defined]
        static_mw=static_mw,
        compute_fj=compute_fj,
        flops=graph.flops,
    )
    for item in placeables:
        if not problem.allowed_tiers(item):
            raise MappingError(
                f"{item.name} ({item.nbytes / 1e9:.3f} GB) fits no tier: SRAM {arch.sram_bytes / 1e9:.3f} GB, "  # type: ignore[attr-defined]
                f"HBM {arch.hbm_gb:g} GB, DDR {arch.ddr_gb:g} GB; raise a capacity",  # type: ignore[attr-defined]
                node=item.name.removeprefix("weights:"),
            )
    return problem


# ---------------------------------------------------------------------------------------------------
# The one cost function
# ---------------------------------------------------------------------------------------------------
def _op_tier_terms(problem: SectionProblem, plan: Plan) -> tuple[list[dict[str, int]], dict[str, int], list[int]]:
    """Per op: picoseconds of traffic per tier ("sram" is on-chip: SRAM reads + streams); total bytes per
    tier; and the SRAM-resident bytes."""
    n = problem.n
    section_of = [0] * n
    for s, (a, b) in enumerate(plan.sections()):
        for i in range(a, b + 1):
            section_of[i] = s
    ps = [dict.fromkeys(("sram", "hbm", "ddr"), 0) for _ in range(n)]
    traffic = dict.fromkeys(("sram", "hbm", "ddr"), 0)
    spill = problem.spill_tier
    for op, nbytes in problem.fixed_reads:
        ps[op][spill] += problem.bytes_ps(spill, nbytes)
        traffic[spill] += nbytes
    for e in problem.edges:
        if section_of[e.src] != section_of[e.dst]:
            ps[e.dst][spill] += problem.bytes_ps(spill, e.nbytes)
            traffic[spill] += e.nbytes
        else:
            ps[e.dst]["sram"] += problem.bytes_ps("sram", 2 * e.nbytes)
            traffic["sram"] += 2 * e.nbytes
    for src, last, nbytes in problem.writes:
        if last < 0 or section_of[src] != section_of[last]:
            ps[src][spill] += problem.bytes_ps(spill, nbytes)
            traffic[spill] += nbytes
    resident = 0
    for item in problem.placeables:
        tier = plan.tiers[item.name]
        if tier == "sram":
            resident += item.nbytes
        for op, nbytes in item.readers:
            ps[op][tier] += problem.bytes_ps(tier, nbytes)
            traffic[tier] += nbytes
    return ps, traffic, [resident]


def plan_cost(problem: SectionProblem, plan: Plan) -> PlanCost:
    """Latency, energy and traffic of ``plan``; ``feasible`` is False (with ``why``) when it breaks a capacity."""
    arch = problem.arch
    ps, traffic, (resident,) = _op_tier_terms(problem, plan)
    sections: list[SectionCost] = []
    why = ""
    max_pmus = 0
    for a, b in plan.sections():
        opts = [problem.options[i][plan.choice[i]] for i in range(a, b + 1)]
        pcus = sum(o.pcus for o in opts)
        pmus = sum(o.pmus for o in opts)
        max_pmus = max(max_pmus, pmus)
        if pcus > arch.pcus and not why:  # type: ignore[attr-defined]
            why = f"section {problem.names[a]}..{problem.names[b]} uses {pcus} PCUs > {arch.pcus}"  # type: ignore[attr-defined]
        if pmus > arch.pmus and not why:  # type: ignore[attr-defined]
            why = f"section {problem.names[a]}..{problem.names[b]} uses {pmus} PMUs > {arch.pmus}"  # type: ignore[attr-defined]
        compute = sum(o.fill_ps for o in opts) + max(o.steady_ps for o in opts)
        tier_ps = {t: sum(ps[i][t] for i in range(a, b + 1)) for t in ("sram", "hbm", "ddr")}
        sections.append(SectionCost(a, b, pcus, pmus, compute, tier_ps, max(compute, *tier_ps.values())))
    pmu_bytes = arch.pmu_bytes  # type: ignore[attr-defined]
    if resident + max_pmus * pmu_bytes > arch.pmus * pmu_bytes and not why:  # type: ignore[attr-defined]
        why = f"SRAM-resident {resident / 1e6:.1f} MB + {max_pmus} section PMUs exceed the {arch.pmus} PMUs"  # type: ignore[attr-defined]
    for tier in ("hbm", "ddr"):
        placed = sum(item.nbytes for item in problem.placeables if plan.tiers[item.name] == tier)
        if placed > problem.tier_bytes[tier] and not why:
            why = f"{tier.upper()} holds {placed / 1e9:.2f} GB > {problem.tier_bytes[tier] / 1e9:.2f} GB"
    latency = sum(s.seconds_ps for s in sections) + problem.reconfig_ps * len(sections)
    parts = {
        "compute": problem.compute_fj,
        "sram": traffic["sram"] * problem.tier_fj_per_byte["sram"],
        "hbm": traffic["hbm"] * problem.tier_fj_per_byte["hbm"],
        "ddr": traffic["ddr"] * problem.tier_fj_per_byte["ddr"],
        "static": problem.static_mw * latency,
    }
    op_ps = [
        int(math.ceil(problem.options[i][plan.choice[i]].cycles * 1e6 / arch.clock_mhz))  # type: ignore[attr-defined]
        for i in range(problem.n)
    ]
    return PlanCost(
        latency_ps=latency,
        energy_fj=sum(parts.values()),
        traffic=traffic,
        sections=sections,
        op_ps=op_ps,
        sram_resident_bytes=resident,
        feasible=not why,
        why=why,
        energy_parts_fj=parts,
    )


def _objective_weights(problem: SectionProblem, reference: PlanCost) -> tuple[int, int]:
    """Integer weights making latency and energy count equally at the reference (unfused) plan."""
    lat, energy = max(1, reference.latency_ps), max(1, reference.mapped_energy_fj)
    small = min(lat, energy)
    return max(1, round(energy / small)), max(1, round(lat / small))


# ---------------------------------------------------------------------------------------------------
# The unfused baseline
# ---------------------------------------------------------------------------------------------------
def place_greedily(problem: SectionProblem, max_section_pmus: int) -> dict[str, str]:
    """Tiers by capacity, smallest items first (the most of them on chip): SRAM (what a section of
    ``max_section_pmus`` PMUs leaves), then HBM, then DDR."""
    arch = problem.arch
    room = {
        "sram": (arch.pmus - max_section_pmus) * arch.pmu_bytes,  # type: ignore[attr-defined]
        "hbm": problem.tier_bytes["hbm"],
        "ddr": problem.tier_bytes["ddr"],
    }
    tiers: dict[str, str] = {}
    for item in sorted(problem.placeables, key=lambda p: p.nbytes):
        for tier in TIERS:
            if item.nbytes <= room[tier] and (tier == "sram" or item.nbytes > 0):
                tiers[item.name] = tier
                room[tier] -= item.nbytes
                break
        else:
            raise MappingError(
                f"{item.name} ({item.nbytes / 1e9:.3f} GB) fits in no tier after the others were placed",
                node=item.name.removeprefix("weights:"),
            )
    return tiers


def unfused_plan(problem: SectionProblem) -> Plan:
    """One op per section, each on its fastest allocation; tiers placed greedily by capacity."""
    choice = [min(range(len(opts)), key=lambda k: (opts[k].cycles, opts[k].pcus)) for opts in problem.options]
    max_pmus = max(problem.options[i][k].pmus for i, k in enumerate(choice))
    return Plan([True] * problem.n, choice, place_greedily(problem, max_pmus))


_PRICE_GRID = np.concatenate(([0.0], np.logspace(-3, 15, 73)))  # picoseconds per PCU, for the DP's allocations


def fused_plan(problem: SectionProblem, section_pmu_share: float = 0.5) -> Plan:
    """A fused heuristic plan (the CP-SAT model's hint): tiers greedily with ``section_pmu_share`` of the PMUs
    kept for sections, then an exact dynamic programme over the cut positions where each candidate section
    allocates PCUs by a Lagrangian price (each op takes the option minimising time + price x PCUs; the
    cheapest price that fits the section wins)."""
    arch = problem.arch
    n = problem.n
    pmu_cap = max(1, int(arch.pmus * section_pmu_share))  # type: ignore[attr-defined]
    tiers = place_greedily(problem, pmu_cap)
    # per-price option choice per op
    grid = _PRICE_GRID
    choice = np.zeros((len(grid), n), dtype=np.int64)
    for i, opts in enumerate(problem.options):
        total = np.array([o.fill_ps + o.steady_ps for o in opts], dtype=float)
        pcus = np.array([o.pcus for o in opts], dtype=float)
        choice[:, i] = np.argmin(total[None, :] + grid[:, None] * pcus[None, :], axis=1)

    def table(attr: str) -> np.ndarray:
        values = np.array([[getattr(problem.options[i][k], attr) for i, k in enumerate(row)] for row in choice])
        return values.astype(float)

    pcus, pmus, fill, steady = table("pcus"), table("pmus"), table("fill_ps"), table("steady_ps")
    # traffic that does not depend on the cuts: fixed reads, graph-output writes, placed items
    fixed = np.zeros((3, n))
    tier_row = {"sram": 0, "hbm": 1, "ddr": 2}
    spill = tier_row[problem.spill_tier]
    for op, nbytes in problem.fixed_reads:
        fixed[spill, op] += problem.bytes_ps(problem.spill_tier, nbytes)
    for src, last, nbytes in problem.writes:
        if last < 0:
            fixed[spill, src] += problem.bytes_ps(problem.spill_tier, nbytes)
    for item in problem.placeables:
        for op, nbytes in item.readers:
            fixed[tier_row[tiers[item.name]], op] += problem.bytes_ps(tiers[item.name], nbytes)
    incoming: list[list[Edge]] = [[] for _ in range(n)]
    for e in problem.edges:
        incoming[e.dst].append(e)
    writes_of: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for src, last, nbytes in problem.writes:
        if last >= 0:
            writes_of[src].append((last, problem.bytes_ps(problem.spill_tier, nbytes)))

    best = [math.inf] * (n + 1)
    best[0] = 0.0
    back: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (section start, price index)
    for a in range(n):
        if best[a] == math.inf:
            continue
        sum_pcus, sum_pmus, sum_fill = np.zeros(len(grid)), np.zeros(len(grid)), np.zeros(len(grid))
        max_steady = np.zeros(len(grid))
        traffic = np.zeros(3)
        pending: dict[int, float] = {}
        for b in range(a, n):
            sum_pcus += pcus[:, b]
            sum_pmus += pmus[:, b]
            sum_fill += fill[:, b]
            np.maximum(max_steady, steady[:, b], out=max_steady)
            traffic += fixed[:, b]
            for e in incoming[b]:
                if e.src < a:
                    traffic[spill] += problem.bytes_ps(problem.spill_tier, e.nbytes)
                else:
                    traffic[0] += problem.bytes_ps("sram", 2 * e.nbytes)
            for last, ps in writes_of[b]:
                pending[last] = pending.get(last, 0.0) + ps
            traffic[spill] += sum(ps for last, ps in writes_of[b])
            if b in pending:  # its producers' writes are internal after all: the last consumer is in the section
                traffic[spill] -= pending.pop(b)
            fits = (sum_pcus <= arch.pcus) & (sum_pmus <= pmu_cap)  # type: ignore[attr-defined]
            if not fits.any():
                break
            compute = np.where(fits, sum_fill + max_steady, np.inf)
            g = int(np.argmin(compute))
            section = max(float(compute[g]), float(traffic.max()))
            total = best[a] + problem.reconfig_ps + section
            if total < best[b + 1]:
                best[b + 1] = total
                back[b + 1] = (a, g)
    if best[n] == math.inf:
        return unfused_plan(problem)
    starts = [False] * n
    plan_choice = [0] * n
    b = n
    while b > 0:
        a, g = back[b]
        starts[a] = True
        for i in range(a, b):
            plan_choice[i] = int(choice[g, i])
        b = a
    return Plan(starts, plan_choice, tiers)


def heuristic_plans(problem: SectionProblem) -> list[Plan]:
    """The unfused plan and fused DP plans at three PMU reserves: the candidates the solver starts from."""
    return [unfused_plan(problem), *(fused_plan(problem, share) for share in (0.25, 0.5, 1.0))]


# ---------------------------------------------------------------------------------------------------
# CP-SAT
# ---------------------------------------------------------------------------------------------------
@dataclass
class SectionSolution:
    plan: Plan
    cost: PlanCost
    info: dict


def solve_sections(
    problem: SectionProblem, time_limit_s: float = 10.0, workers: int = 1, hint: Plan | None = None
) -> SectionSolution:
    """Cuts, allocation and tiers in one CP-SAT model; falls back to the hint (gap reported) on a timeout."""
    started = time.perf_counter()
    arch = problem.arch
    n = problem.n
    weights = _objective_weights(problem, plan_cost(problem, unfused_plan(problem)))
    candidates = [hint] if hint is not None else heuristic_plans(problem)
    scored = [(plan_cost(problem, p), p) for p in candidates]
    scored = [(c.objective(problem.objective, weights), c, p) for c, p in scored if c.feasible]
    if not scored:
        raise MappingError(f"no heuristic plan of {problem.graph.name!r} fits the RDU; cannot start the solver")
    _, base_cost, baseline = min(scored, key=lambda t: t[0])
    m = cp_model.CpModel()
    starts = [m.NewBoolVar(f"start{i}") for i in range(n)]
    m.Add(starts[0] == 1)
    x = [[m.NewBoolVar(f"x{i}_{k}") for k in range(len(opts))] for i, opts in enumerate(problem.options)]
    for row in x:
        m.AddExactlyOne(row)

    def opt_sum(i: int, attr: str) -> cp_model.LinearExpr:
        return sum(getattr(o, attr) * x[i][k] for k, o in enumerate(problem.options[i]))

    # spill literals: a cut anywhere in (src, dst]
    spill_cache: dict[tuple[int, int], cp_model.IntVar] = {}

    def spill(src: int, dst: int) -> cp_model.IntVar:
        key = (src, dst)
        if key not in spill_cache:
            var = m.NewBoolVar(f"spill{src}_{dst}")
            m.AddMaxEquality(var, starts[src + 1 : dst + 1])
            spill_cache[key] = var
        return spill_cache[key]

    tier_var: dict[tuple[str, str], cp_model.IntVar] = {}
    for item in problem.placeables:
        allowed = problem.allowed_tiers(item)
        for tier in allowed:
            tier_var[item.name, tier] = m.NewBoolVar(f"tier_{item.name}_{tier}")
        m.AddExactlyOne([tier_var[item.name, t] for t in allowed])
    for tier in ("hbm", "ddr"):
        placed = [p.nbytes * tier_var[p.name, tier] for p in problem.placeables if (p.name, tier) in tier_var]
        if placed:
            m.Add(sum(placed) <= problem.tier_bytes[tier])

    # per-op traffic picoseconds per tier: terms (constant, coefficient, literal) = constant + coefficient x literal
    spill_tier = problem.spill_tier
    terms: list[dict[str, list[tuple[int, int, cp_model.IntVar | None]]]] = [
        {"sram": [], "hbm": [], "ddr": []} for _ in range(n)
    ]
    energy_terms: list = []
    fj = problem.tier_fj_per_byte
    for op, nbytes in problem.fixed_reads:
        terms[op][spill_tier].append((problem.bytes_ps(spill_tier, nbytes), 0, None))
        energy_terms.append(nbytes * fj[spill_tier])
    for e in problem.edges:
        s = spill(e.src, e.dst)
        off, on = problem.bytes_ps(spill_tier, e.nbytes), problem.bytes_ps("sram", 2 * e.nbytes)
        terms[e.dst][spill_tier].append((0, off, s))
        terms[e.dst]["sram"].append((on, -on, s))
        energy_terms.append(e.nbytes * fj[spill_tier] * s + 2 * e.nbytes * fj["sram"] * (1 - s))
    for src, last, nbytes in problem.writes:
        cost_ps = problem.bytes_ps(spill_tier, nbytes)
        if last < 0:
            terms[src][spill_tier].append((cost_ps, 0, None))
            energy_terms.append(nbytes * fj[spill_tier])
        else:
            lit = spill(src, last)
            terms[src][spill_tier].append((0, cost_ps, lit))
            energy_terms.append(nbytes * fj[spill_tier] * lit)
    resident_terms = []
    for item in problem.placeables:
        for tier in problem.allowed_tiers(item):
            z = tier_var[item.name, tier]
            for op, nbytes in item.readers:
                terms[op][tier].append((0, problem.bytes_ps(tier, nbytes), z))
                energy_terms.append(nbytes * fj[tier] * z)
            if tier == "sram":
                resident_terms.append(item.nbytes * z)

    # running per-section sums (reset where a section starts) and the section time at its last op
    def running(values: Sequence, bound: int, name: str) -> list[cp_model.IntVar]:
        acc = []
        for i, value in enumerate(values):
            var = m.NewIntVar(0, bound, f"{name}{i}")
            if i == 0:
                m.Add(var == value)
            else:
                m.Add(var == value).OnlyEnforceIf(starts[i])
                m.Add(var == value + acc[i - 1]).OnlyEnforceIf(starts[i].Not())
            acc.append(var)
        return acc

    # section PCUs and PMUs: the running sums' upper bounds are the chip's capacities
    running([opt_sum(i, "pcus") for i in range(n)], arch.pcus, "pcus")  # type: ignore[attr-defined]
    acc_pmus = running([opt_sum(i, "pmus") for i in range(n)], arch.pmus, "pmus")  # type: ignore[attr-defined]
    max_pmus = m.NewIntVar(0, arch.pmus, "max_section_pmus")  # type: ignore[attr-defined]
    for var in acc_pmus:
        m.Add(max_pmus >= var)
    pmu_bytes = arch.pmu_bytes  # type: ignore[attr-defined]
    m.Add(sum(resident_terms) + max_pmus * pmu_bytes <= arch.pmus * pmu_bytes)  # type: ignore[attr-defined]

    fills = [opt_sum(i, "fill_ps") for i in range(n)]
    fill_bound = sum(max(o.fill_ps for o in opts) for opts in problem.options)
    acc_fill = running(fills, fill_bound, "fill")
    steady_bound = max(max(o.steady_ps for o in opts) for opts in problem.options)
    steady = []
    for i in range(n):
        var = m.NewIntVar(0, steady_bound, f"steady{i}")
        m.Add(var >= opt_sum(i, "steady_ps"))
        if i > 0:
            m.Add(var >= steady[i - 1]).OnlyEnforceIf(starts[i].Not())
        steady.append(var)
    tier_acc = {}
    for tier in ("sram", "hbm", "ddr"):
        values = [_linear(terms[i][tier]) for i in range(n)]
        bound = sum(_upper(terms[i][tier]) for i in range(n))
        tier_acc[tier] = running(values, bound, tier)
    horizon = fill_bound + steady_bound + sum(_upper(terms[i][t]) for i in range(n) for t in terms[i])
    section_ps = []
    for i in range(n):
        var = m.NewIntVar(0, horizon, f"section{i}")
        bounds = [acc_fill[i] + steady[i], *(tier_acc[tier][i] for tier in ("sram", "hbm", "ddr"))]
        for lower in bounds:
            if i == n - 1:
                m.Add(var >= lower)
            else:
                m.Add(var >= lower).OnlyEnforceIf(starts[i + 1])
        section_ps.append(var)
    # redundant cuts for the bound: the sections together take at least every op's fill and every tier's traffic
    m.Add(sum(section_ps) >= sum(fills))
    # an op holds its PCUs for its whole section, which lasts at least the op's own time
    m.Add(
        arch.pcus * sum(section_ps)  # type: ignore[attr-defined]
        >= sum(
            o.pcus * (o.fill_ps + o.steady_ps) * x[i][k]
            for i, opts in enumerate(problem.options)
            for k, o in enumerate(opts)
        )
    )
    for tier in ("sram", "hbm", "ddr"):
        m.Add(sum(section_ps) >= sum(_linear(terms[i][tier]) for i in range(n)))
    latency = sum(section_ps) + problem.reconfig_ps * sum(starts)
    energy = sum(energy_terms) + problem.static_mw * latency
    if problem.objective == "latency":
        m.Minimize(latency)
    elif problem.objective == "energy":
        m.Minimize(energy)
    else:
        m.Minimize(weights[0] * latency + weights[1] * energy)

    # hint: the best heuristic plan
    for i in range(n):
        m.AddHint(starts[i], int(baseline.starts[i]))
        for k in range(len(x[i])):
            m.AddHint(x[i][k], int(baseline.choice[i] == k))
    for item in problem.placeables:
        for tier in problem.allowed_tiers(item):
            m.AddHint(tier_var[item.name, tier], int(baseline.tiers[item.name] == tier))

    solver = cp_model.CpSolver()
    # Same spec + seed must give the same schedule: the limit is CP-SAT's deterministic time (work units,
    # about a second each) and the workers are interleaved deterministically; the wall-clock limit is
    # only a backstop against a pathological model.
    solver.parameters.max_deterministic_time = float(time_limit_s)
    solver.parameters.max_time_in_seconds = 4.0 * float(time_limit_s)
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    status = solver.Solve(m)
    seconds = time.perf_counter() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.INFEASIBLE:
            raise MappingError(f"no section mapping of {problem.graph.name!r} fits the RDU (CP-SAT: INFEASIBLE)")
        info = {
            "status": "FEASIBLE",
            "value": float(base_cost.objective(problem.objective, weights)),
            "bound": float(solver.BestObjectiveBound()),
            "gap": 1.0,
            "seconds": seconds,
            "note": f"CP-SAT found no solution in {time_limit_s:g} s ({solver.StatusName(status)}); unfused plan",
        }
        return SectionSolution(baseline, base_cost, info)
    plan = Plan(
        starts=[bool(solver.Value(s)) for s in starts],
        choice=[next(k for k, v in enumerate(row) if solver.Value(v)) for row in x],
        tiers={
            item.name: next(t for t in problem.allowed_tiers(item) if solver.Value(tier_var[item.name, t]))
            for item in problem.placeables
        },
    )
    cost = plan_cost(problem, plan)
    note = ""
    if cost.objective(problem.objective, weights) > base_cost.objective(problem.objective, weights):
        plan, cost = baseline, base_cost  # the hint was better than what the time limit let CP-SAT reach
        note = "the heuristic hint beat the solver's incumbent within the time limit"
    value = float(cost.objective(problem.objective, weights))  # exact: plan_cost, not the solver's slack
    bound = float(solver.BestObjectiveBound())
    gap = 0.0 if status == cp_model.OPTIMAL and not note else max(0.0, (value - bound) / max(abs(value), 1.0))
    info = {
        "status": solver.StatusName(status),
        "value": value,
        "bound": bound,
        "gap": gap,
        "seconds": seconds,
        "objective": problem.objective,
        "weights": weights,
        **({"note": note} if note else {}),
    }
    return SectionSolution(plan, cost, info)


def _linear(terms: list[tuple[int, int, cp_model.IntVar | None]]):
    return sum(const + (coef * lit if lit is not None else 0) for const, coef, lit in terms)


def _upper(terms: list[tuple[int, int, cp_model.IntVar | None]]) -> int:
    """Largest value of ``_linear(terms)``."""
    return sum(const + max(0, coef) for const, coef, _ in terms)


# ---------------------------------------------------------------------------------------------------
# Brute force (small graphs): the CP-SAT answer's reference
# ---------------------------------------------------------------------------------------------------
def brute_force(problem: SectionProblem, max_plans: int = 2_000_000) -> tuple[Plan, PlanCost]:
    """Every cut pattern x allocation x tier placement; the best feasible plan by the problem's objective."""
    n = problem.n
    allowed = [problem.allowed_tiers(item) for item in problem.placeables]
    count = 2 ** (n - 1) * math.prod(len(o) for o in problem.options) * math.prod(len(a) for a in allowed)
    if count > max_plans:
        raise ValueError(f"{count} plans is too many to enumerate (limit {max_plans})")
    weights = _objective_weights(problem, plan_cost(problem, unfused_plan(problem)))
    best: tuple[int, Plan, PlanCost] | None = None
    for cuts in itertools.product((False, True), repeat=n - 1):
        for choice in itertools.product(*(range(len(o)) for o in problem.options)):
            for tiers in itertools.product(*allowed):
                plan = Plan([True, *cuts], list(choice), {p.name: t for p, t in zip(problem.placeables, tiers)})
                cost = plan_cost(problem, plan)
                if not cost.feasible:
                    continue
                value = cost.objective(problem.objective, weights)
                if best is None or value < best[0]:
                    best = (value, plan, cost)
    if best is None:
        raise MappingError("no feasible plan")
    return best[1], best[2]


# ---------------------------------------------------------------------------------------------------
# Mappers
# ---------------------------------------------------------------------------------------------------
def to_mapping(problem: SectionProblem, plan: Plan, cost: PlanCost, mapper: str, info: dict) -> Mapping:
    ops: dict[str, OpMapping] = {}
    tier_of_op = {}
    for item in problem.placeables:
        for op, _ in item.readers:
            tier_of_op.setdefault(op, {})[item.name] = plan.tiers[item.name]
    section_of = {}
    for s, (a, b) in enumerate(plan.sections()):
        for i in range(a, b + 1):
            section_of[i] = s
    for i, name in enumerate(problem.names):
        option = problem.options[i][plan.choice[i]]
        ops[name] = OpMapping(
            op=name,
            tile={},
            dataflow="spatial",
            extra={
                "section": section_of[i],
                "pcus": option.pcus,
                "pmus": option.pmus,
                "cycles": option.cycles,
                "tiers": tier_of_op.get(i, {}),
            },
        )
    solver = {
        **info,
        "plan": plan,
        "objective_name": problem.objective,
        "sections": len(cost.sections),
        "latency_ps": cost.latency_ps,
    }
    return Mapping(problem.graph, problem.arch, ops, list(problem.names), [], mapper, solver)


@dataclass
class RduSectionMapper:
    """Fused sections, PCU/PMU allocation and tier placement by CP-SAT (the RDU's default mapper)."""

    name: str = "sections"
    objective: str = "latency"
    time_limit_s: float = 10.0
    workers: int = 1  # one CP-SAT worker: deterministic; measured as good as 8 interleaved and faster

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")

    def map(self, graph: Graph, arch: Arch) -> Mapping:
        problem = build_problem(graph, arch, self.objective)
        solution = _solve_cached(problem, self.time_limit_s, self.workers)
        return to_mapping(problem, solution.plan, solution.cost, self.name, solution.info)


@dataclass
class RduUnfusedMapper:
    """The unfused baseline: one op per section, fastest allocation each, tiers greedily by capacity."""

    name: str = "unfused"

    def map(self, graph: Graph, arch: Arch) -> Mapping:
        problem = build_problem(graph, arch, "latency")
        plan = unfused_plan(problem)
        cost = plan_cost(problem, plan)
        if not cost.feasible:
            raise MappingError(f"the unfused plan of {graph.name!r} does not fit: {cost.why}")
        info = {"status": "GREEDY", "value": float(cost.latency_ps), "bound": float("nan"), "gap": float("nan")}
        return to_mapping(problem, plan, cost, self.name, {**info, "seconds": 0.0})


_SOLUTION_CACHE: dict[tuple, SectionSolution] = {}


def _solve_cached(problem: SectionProblem, time_limit_s: float, workers: int) -> SectionSolution:
    """Solutions per (graph, arch, objective, limits): an explorer revisiting a point pays the solve once."""
    key = (_graph_key(problem.graph), problem.arch, problem.objective, time_limit_s, workers)
    if key not in _SOLUTION_CACHE:
        if len(_SOLUTION_CACHE) > 128:
            _SOLUTION_CACHE.clear()
        _SOLUTION_CACHE[key] = solve_sections(problem, time_limit_s, workers)
    return _SOLUTION_CACHE[key]


def clear_cache() -> None:
    _SOLUTION_CACHE.clear()


@functools.lru_cache(maxsize=64)
def _graph_key_cached(ops: tuple, tensors: tuple) -> int:
    return hash((ops, tensors))


def _graph_key(graph: Graph) -> int:
    return _graph_key_cached(
        tuple((op.name, op.shape_key(), op.inputs, op.outputs, op.weights) for op in graph.ops),
        tuple(sorted((n, t.shape, t.kind, t.elem_bytes) for n, t in graph.tensors.items())),
    )
