"""Heuristic section plans: the unfused baseline and fused dynamic-programming plans (the CP-SAT model's hints)."""

from __future__ import annotations

import math

import numpy as np

from hwmodels.rdu.cost import TIERS, Edge, Plan, SectionProblem
from mappers.base import MappingError


# ---------------------------------------------------------------------------------------------------
# The unfused baseline
# ---------------------------------------------------------------------------------------------------
def place_greedily(problem: SectionProblem, max_section_pmus: int) -> dict[str, str]:
    """Tiers by capacity, smallest items first (the most of them on chip): SRAM (what a section of
    ``max_section_pmus`` PMUs leaves), then HBM, then DDR."""
    arch = problem.arch
    room = {
        "sram": (arch.pmus - max_section_pmus) * arch.pmu_bytes,
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


# ---------------------------------------------------------------------------------------------------
# Fused plans
# ---------------------------------------------------------------------------------------------------
_PRICE_GRID = np.concatenate(([0.0], np.logspace(-3, 15, 73)))  # picoseconds per PCU, for the DP's allocations


def fused_plan(problem: SectionProblem, section_pmu_share: float = 0.5) -> Plan:
    """A fused heuristic plan (the CP-SAT model's hint): tiers greedily with ``section_pmu_share`` of the PMUs
    kept for sections, then an exact dynamic programme over the cut positions where each candidate section
    allocates PCUs by a Lagrangian price (each op takes the option minimising time + price x PCUs; the
    cheapest price that fits the section wins)."""
    arch = problem.arch
    n = problem.n
    pmu_cap = max(1, int(arch.pmus * section_pmu_share))
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
            fits = (sum_pcus <= arch.pcus) & (sum_pmus <= pmu_cap)
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
