"""The RDU cost model: per-op PCU costs, the cost of a section plan, and the chip's energy prices and area.

What the section mapper queries and the hardware model reports, so the two agree exactly.

* **Op costs on PCUs.** GEMMs (matmul, conv) map lanes over the output (N / channels) and stages over the
  reduction; elementwise ops take one pass per ``stages`` FLOPs per element; softmax and layernorm take two
  passes (reduce, normalise); an FFT takes log2(L) butterfly levels, each a PCU pass plus, without the SSM
  extension, a permutation pass through a PMU (the PCU has no cross-lane shuffle); a selective scan is
  sequential along L (each step waits ``stages`` cycles for the recurrence) unless the SSM extension runs it
  as a parallel prefix scan (twice the work, log2(L) depth).
* **Plans.** :func:`plan_cost` is the one cost function of a section plan (``SectionProblem`` + ``Plan``): the
  CP-SAT model in ``mappers.rdu.cpsat`` is its exact linearisation (same integer picoseconds), the hardware model
  and the brute-force check call it too.
* **Energy.** Every FLOP at the technology catalog's MAC price (a MAC = 2 FLOPs), every byte at its tier's price
  (PMU SRAM by PMU size, HBM/DDR per bit from the DRAM table), plus leakage of the whole die over the latency.
* **Area.** Plasticine's published per-tile areas at 28 nm (``hwmodels.catalogs.rdu``), a PCU scaled by its
  lanes x stages over Plasticine's 16 x 6, a PMU split into its SRAM (re-sized with the catalog's bitcell
  area) and the rest, the rest of the die (switches, address generators) as Plasticine's per-tile share,
  and all logic carried to the target node with the catalog's area scaling. The SSM extension adds SSM-RDU's
  < 1 % (taken as 1 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dse.graph import Graph, Op, OpKind
from hwmodels.catalogs.actions import area_node
from hwmodels.catalogs.rdu import (
    PLASTICINE_NODE,
    PLASTICINE_PCU_AREA_MM2,
    PLASTICINE_PCU_LANES_X_STAGES,
    PLASTICINE_PMU_AREA_MM2,
    PLASTICINE_PMU_KIB,
    PLASTICINE_TILES,
    PLASTICINE_TOTAL_AREA_MM2,
    SSM_EXTENSION_AREA_FRACTION,
)
from hwmodels.catalogs.tech import get_tech
from hwmodels.systolic.pricing import action_prices, dram_pj_per_byte, sram_prices
from templates.rdu import PRECISION_BITS, RduArch

TIERS = ("sram", "hbm", "ddr")
FEMTO = 1000  # energy coefficients in fJ so that per-byte prices below 1 pJ stay integers
# the op kinds the PCU cost below covers
PCU_OP_KINDS = (
    OpKind.MATMUL,
    OpKind.CONV,
    OpKind.ELEMENTWISE,
    OpKind.SOFTMAX,
    OpKind.LAYERNORM,
    OpKind.POOL,
    OpKind.FFT,
    OpKind.SCAN,
)


# ---------------------------------------------------------------------------------------------------
# Per-op cost on PCUs
# ---------------------------------------------------------------------------------------------------
def ceil_div(a: float, b: float) -> int:
    """ceil(a / b) for integer counts, robust to float rounding just above an integer."""
    return int(math.ceil(a / b - 1e-12))


def op_work_items(op: Op, arch: RduArch) -> tuple[int, int]:
    """(vector-pass items, minimum cycles) of ``op``: items spread over PCUs, one item per PCU cycle.

    The minimum is a latency floor that more PCUs cannot beat (a sequential scan's recurrence)."""
    lanes, stages = arch.pcu_lanes, arch.pcu_stages
    d = op.dims
    k = op.kind
    if k is OpKind.MATMUL:
        return d["B"] * d["M"] * ceil_div(d["N"], lanes) * ceil_div(d["K"], stages), 1
    if k is OpKind.CONV:
        per_group_in = d["C"] // d.get("G", 1)
        return d["N"] * d["P"] * d["Q"] * ceil_div(d["K"], lanes) * ceil_div(per_group_in * d["R"] * d["S"], stages), 1
    if k is OpKind.ELEMENTWISE:
        per_element = op.flops / max(1, d["N"])
        return ceil_div(d["N"], lanes) * max(1, ceil_div(per_element, stages)), 1
    if k in (OpKind.SOFTMAX, OpKind.LAYERNORM):
        return 2 * d["R"] * ceil_div(d["L"], lanes), 1
    if k is OpKind.POOL:
        return ceil_div(d["N"] * d["C"] * d["P"] * d["Q"], lanes) * ceil_div(d["R"] * d["S"], stages), 1
    if k is OpKind.FFT:
        levels = max(1, math.ceil(math.log2(d["L"])))
        passes = 1 if arch.ssm_ext else 2  # permutation pass through a PMU without
        return d["B"] * ceil_div(d["L"], lanes) * levels * passes, 1
    if k is OpKind.SCAN:
        return d["B"] * d["L"] * ceil_div(d["D"] * d["S"], lanes) * ceil_div(9, stages), 1
    raise ValueError(f"op {op.name!r}: the RDU mapper has no cost for {k.value}")


def op_cycles(op: Op, arch: RduArch, pcus: int) -> int:
    """Cycles of ``op`` on ``pcus`` PCUs (at the precision's rate)."""
    items, floor = op_work_items(op, arch)
    rate = arch.rate
    if op.kind is OpKind.SCAN:
        d = op.dims
        stages = arch.pcu_stages
        per_step = ceil_div(items / d["L"], pcus)
        sequential = d["L"] * max(per_step, stages)  # each step waits for the recurrence through the pipeline
        if not arch.ssm_ext:
            return int(math.ceil(sequential / rate))
        depth = stages * max(1, math.ceil(math.log2(d["L"])))
        parallel = ceil_div(2 * items, pcus) + depth  # Blelloch up/down sweep over L on the scan interconnect
        return int(math.ceil(min(sequential, parallel) / rate))
    return int(math.ceil(max(floor, ceil_div(items, pcus)) / rate))


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
# The section problem and its plans
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
    arch: RduArch
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
        tiers = ["sram"] if item.nbytes <= self.arch.sram_bytes else []
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
        if pcus > arch.pcus and not why:
            why = f"section {problem.names[a]}..{problem.names[b]} uses {pcus} PCUs > {arch.pcus}"
        if pmus > arch.pmus and not why:
            why = f"section {problem.names[a]}..{problem.names[b]} uses {pmus} PMUs > {arch.pmus}"
        compute = sum(o.fill_ps for o in opts) + max(o.steady_ps for o in opts)
        tier_ps = {t: sum(ps[i][t] for i in range(a, b + 1)) for t in ("sram", "hbm", "ddr")}
        sections.append(SectionCost(a, b, pcus, pmus, compute, tier_ps, max(compute, *tier_ps.values())))
    pmu_bytes = arch.pmu_bytes
    if resident + max_pmus * pmu_bytes > arch.pmus * pmu_bytes and not why:
        why = f"SRAM-resident {resident / 1e6:.1f} MB + {max_pmus} section PMUs exceed the {arch.pmus} PMUs"
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
    op_ps = [int(math.ceil(problem.options[i][plan.choice[i]].cycles * 1e6 / arch.clock_mhz)) for i in range(problem.n)]
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


# ---------------------------------------------------------------------------------------------------
# Energy prices and area
# ---------------------------------------------------------------------------------------------------
def energy_prices(arch: RduArch, graph: Graph) -> tuple[dict[str, int], int, int]:
    """(fJ per byte per tier, static mW, compute fJ) from the systolic pricing (``hwmodels.systolic.pricing``:
    the catalog node or the published table ``arch.tech`` names)."""
    read, _ = sram_prices(arch.tech, {"ifmap": arch.pmu_kib}, action_prices(arch.tech, 16, "fp"))
    prices = {
        "sram": int(round(read["ifmap"] * FEMTO)),  # per byte read or written in a PMU (streams count both)
        "hbm": int(round(dram_pj_per_byte(arch.tech, arch.hbm_kind) * FEMTO)),
        "ddr": int(round(dram_pj_per_byte(arch.tech, arch.ddr_kind) * FEMTO)),
    }
    static_mw = int(round(area_node(arch.tech).leakage_w(rdu_area_mm2(arch)["total"]) * 1000))
    compute_fj = int(round(graph.flops * compute_pj_per_flop(arch) * FEMTO))
    return prices, static_mw, compute_fj


def compute_pj_per_flop(arch: RduArch) -> float:
    """Half a MAC at the arch's precision and node (bf16 priced as fp16), from the systolic pricing."""
    bits = PRECISION_BITS[arch.precision]
    if arch.precision in ("fp16", "bf16"):
        return action_prices(arch.tech, 16, "fp")["mac"] / 2
    if arch.precision == "fp32":
        return action_prices(arch.tech, 32, "fp")["mac"] / 2
    return action_prices(arch.tech, min(bits, 16), "int")["mac"] / 2


def rdu_area_mm2(arch: RduArch) -> dict[str, float]:
    """Area by component (mm^2) and ``total``, from Plasticine's 28 nm breakdown scaled to ``arch``."""
    base, tech = get_tech(PLASTICINE_NODE), area_node(arch.tech)
    logic_scale = tech.area_scale.value / base.area_scale.value
    pcu = PLASTICINE_PCU_AREA_MM2.value * (arch.pcu_lanes * arch.pcu_stages / PLASTICINE_PCU_LANES_X_STAGES)
    pmu_logic = PLASTICINE_PMU_AREA_MM2.value - base.sram_area_mm2(PLASTICINE_PMU_KIB)
    tiles = PLASTICINE_TILES * (PLASTICINE_PCU_AREA_MM2.value + PLASTICINE_PMU_AREA_MM2.value)
    other = (PLASTICINE_TOTAL_AREA_MM2.value - tiles) / PLASTICINE_TILES  # switches, address generators, per tile
    parts = {
        "pcu": arch.pcus * pcu * logic_scale,
        "pmu_sram": arch.pmus * tech.sram_area_mm2(arch.pmu_kib),
        "pmu_logic": arch.pmus * pmu_logic * logic_scale,
        "interconnect": max(arch.pcus, arch.pmus) * other * logic_scale,
    }
    if arch.ssm_ext:
        parts["ssm_ext"] = SSM_EXTENSION_AREA_FRACTION.value * (parts["pcu"] + parts["pmu_sram"] + parts["pmu_logic"])
    parts["total"] = sum(parts.values())
    return parts
