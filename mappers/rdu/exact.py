"""Section mapping by bounds: the proven lower bound's covers, realised exactly, give the plan and its gap.

Why: the latency is a sum over sections of the fixed op order, and the threshold bound of a section's compute
(``mappers.rdu.threshold``) is within a fraction of a percent of its optimum. So the covers that attain the
problem's lower bound (``mappers.rdu.bound.interval_duals``: one per max-section-PMU interval, at its best SRAM
price) are the plans to try: each of their sections gets its exact allocation (a knapsack over PCU counts per
threshold), the placed items go on chip by the latency they save per byte, and the plan is priced by
``plan_cost``. The reported gap is against the proven bound, so nothing rests on trust in the search.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.rdu.bound import IntervalDual, SectionBounds, interval_dual, interval_duals, rounded_bound
from mappers.rdu.heuristics import unfused_plan
from mappers.rdu.placement import place_by_gain, place_exact
from mappers.rdu.threshold import ThresholdBounds, exact_section

INITIAL_COVERS = 2  # covers of the least initial interval bounds realised before any split
SPLIT = 4  # an open PMU interval is cut into this many
EXACT_PLACE_WITHIN = 0.25  # a realised plan whose local-search placement is this close to the best gets CP-SAT's
FINAL_PLACE_TIME_S = 1.0  # CP-SAT deterministic time of the best plan's placement when the gap is still open
GAP_TOLERANCE = 0.01  # the stated gap a plan is proven within; 0 searches until the steps run out
STALL = 1e-6  # relative: a split that raises no child's bound by more stalls
MAX_STEPS = 24  # tightenings, price searches and splits: the deterministic work limit


@dataclass
class ExactSolution:
    plan: Plan
    cost: PlanCost
    lower_ps: float
    info: dict


@dataclass
class SectionAllocations:
    """Exact section allocations, computed once per section and reused across covers and PMU caps."""

    problem: SectionProblem
    bounds: ThresholdBounds

    def __post_init__(self) -> None:
        self._exact: dict[tuple[int, int, int], tuple[float, list[int], int]] = {}
        self._upper: dict[int, tuple] = {}
        self._by_shape: dict[tuple, tuple[float, list[int], int]] = {}
        ids: dict[tuple, int] = {}
        self._shape_ids = [ids.setdefault(tuple(opts), len(ids)) for opts in self.problem.options]

    def _knapsack_cap(self, pmu_cap: int) -> int:
        """Above half the PCUs in PMUs the knapsack runs over PCUs, and one run (at the chip's PMUs) serves every
        such cap."""
        return pmu_cap if 2 * pmu_cap <= self.problem.arch.pcus else self.problem.arch.pmus

    def _solve(self, first: int, last: int, pmu_cap: int) -> tuple[float, list[int], int]:
        key = (first, last, self._knapsack_cap(pmu_cap))
        if key not in self._exact:
            # sections of the same op shapes (a transformer's repeated layers) share one knapsack
            shape = (tuple(self._shape_ids[first : last + 1]), key[2])
            if shape not in self._by_shape:
                value, choice, _ = exact_section(self.problem, self.bounds, first, last, key[2])
                pmus = sum(self.problem.options[i][o].pmus for i, o in zip(range(first, last + 1), choice))
                self._by_shape[shape] = (value, choice, pmus)
            self._exact[key] = self._by_shape[shape]
        return self._exact[key]

    def is_exact(self, first: int, last: int, pmu_cap: int) -> bool:
        return (first, last, self._knapsack_cap(pmu_cap)) in self._exact

    def compute_lower(self, pmu_cap: int) -> np.ndarray:
        """The threshold bound of every section's compute within ``pmu_cap`` PMUs, raised to the knapsack
        optimum where one is known for a cap at least as large (the optimum only falls as the cap grows)."""
        table = self.bounds.lower(pmu_cap)
        known = [(a, b, v[0]) for (a, b, cap), v in self._exact.items() if cap >= pmu_cap]
        if known:
            table = table.copy()
            for a, b, value in known:
                table[a, b] = max(table[a, b], value)
        return table

    def choose(self, first: int, last: int, pmu_cap: int) -> list[int] | None:
        """The option per op of section [first, last] within ``pmu_cap`` PMUs (None: it cannot fit)."""
        value, choice, pmus = self._solve(first, last, pmu_cap)
        if math.isfinite(value) and pmus <= pmu_cap:
            return choice
        # the exact knapsack over PCUs broke the PMU cap: the Lagrangian allocation that fits both
        if pmu_cap not in self._upper:
            self._upper[pmu_cap] = self.bounds.upper(pmu_cap)
        upper, threshold, price = self._upper[pmu_cap]
        if not math.isfinite(upper[first, last]):
            return None
        return self.bounds.upper_choice(pmu_cap, first, last, int(threshold[first, last]), int(price[first, last]))

    def realise(self, starts: list[bool], pmu_cap: int, exact_below: float = math.inf) -> Plan | None:
        """The plan of the cover ``starts`` with every section allocated within ``pmu_cap`` PMUs and the items
        placed by ``place_by_gain``, then by ``place_exact`` when that plan is faster than ``exact_below`` ps
        (None: a section cannot fit)."""
        choice: list[int] = []
        for a, b in Plan(starts, [], {}).sections():
            part = self.choose(a, b, pmu_cap)
            if part is None:
                return None
            choice += part
        plan = Plan(list(starts), choice, {})
        plan.tiers = place_by_gain(self.problem, plan.starts, choice)
        if plan_cost(self.problem, plan).latency_ps < exact_below:
            plan.tiers = place_exact(self.problem, plan.starts, choice, plan.tiers)
        return plan


@dataclass
class CoverSearch:
    """What ``cover_plan`` and ``solve_exact`` share: the section tables, the covers realised so far and the best
    plan (the unfused baseline first). A cover's plan within ``place_within`` of the best gets the CP-SAT
    placement (< 0: none)."""

    problem: SectionProblem
    place_within: float = EXACT_PLACE_WITHIN

    def __post_init__(self) -> None:
        self.section_bounds = SectionBounds(self.problem)
        self.allocations = SectionAllocations(self.problem, ThresholdBounds(self.problem))
        baseline = unfused_plan(self.problem)
        self.best: tuple[PlanCost, Plan] = (plan_cost(self.problem, baseline), baseline)
        self.realised: set[tuple[tuple[bool, ...], int]] = set()

    def initial_duals(self) -> list[IntervalDual]:
        """The bound and cover of every PMU interval on the coarse SRAM-price grid."""
        return interval_duals(self.problem, self.section_bounds, self.allocations.compute_lower, refine=False)

    def realise(self, dual: IntervalDual) -> None:
        """Realise ``dual``'s cover at its interval's largest and least PMU cap; keep the fastest plan."""
        for cap in sorted({dual.hi, dual.lo}, reverse=True):
            key = (tuple(dual.starts), cap)
            if cap <= 0 or not any(dual.starts) or key in self.realised:
                continue
            self.realised.add(key)
            best = self.best[0]
            if self.place_within < 0:
                near = -math.inf
            else:
                near = best.latency_ps * (1 + self.place_within) if best.feasible else math.inf
            plan = self.allocations.realise(dual.starts, cap, near)
            if plan is None:
                continue
            cost = plan_cost(self.problem, plan)
            if cost.feasible and (not best.feasible or cost.latency_ps < best.latency_ps):
                self.best = (cost, plan)


def _solution(cost: PlanCost, plan: Plan, duals: list[IntervalDual], info: dict) -> ExactSolution:
    """The plan with the least bound of ``duals`` (rounded down) and its gap."""
    lower = rounded_bound(min((d.value for d in duals), default=math.inf))
    gap = max(0.0, (cost.latency_ps - lower) / cost.latency_ps) if cost.feasible and cost.latency_ps else math.inf
    return ExactSolution(plan, cost, lower, {**info, "gap": gap})


def cover_plan(
    problem: SectionProblem, covers: int = INITIAL_COVERS, place_within: float = EXACT_PLACE_WITHIN
) -> ExactSolution:
    """The first stage of ``solve_exact`` alone: the covers of the ``covers`` least PMU-interval bounds (a coarse
    SRAM-price grid, no refinement), each section allocated exactly, the items placed by ``place_by_gain`` and,
    for plans within ``place_within`` of the best so far (< 0: none), by the short CP-SAT ``place_exact``; the
    best of them and the unfused baseline, with the proven lower bound of the intervals.

    Why: ``solve_exact`` most often returns one of these plans (its refinement mostly tightens the bound), and
    ``place_by_gain`` alone is up to ~25 % slower than the exact placement of the same cover; so this is a close
    upper bound of the exact mapping at a fraction of its time (the RDU's closed form for surrogates)."""
    started = time.perf_counter()
    search = CoverSearch(problem, place_within)
    duals = search.initial_duals()
    for dual in sorted(duals, key=lambda d: d.value)[:covers]:
        search.realise(dual)
    info = {"covers": len(search.realised), "intervals": len(duals), "seconds": time.perf_counter() - started}
    return _solution(*search.best, duals, info)


def solve_exact(
    problem: SectionProblem,
    gap_tolerance: float = GAP_TOLERANCE,
    max_steps: int = MAX_STEPS,
    time_limit_s: float | None = None,
) -> ExactSolution:
    """The best realised cover (and the unfused baseline), with the proven lower bound and the gap.

    The PMU intervals whose bound is below the best plan (by more than ``gap_tolerance``) are split and their
    covers realised, least bound first, until the gap closes, no interval can be split or ``max_steps`` steps
    are done. The answer depends on nothing but the problem and these limits (every CP-SAT placement has a
    deterministic time limit and one worker); ``time_limit_s`` adds an optional wall-clock backstop, which makes
    the answer depend on the machine's load (None: none)."""
    started = time.perf_counter()
    search = CoverSearch(problem)
    section_bounds, allocations, realise = search.section_bounds, search.allocations, search.realise

    def target() -> float:
        best = search.best[0]
        return best.latency_ps * (1 - gap_tolerance) if best.feasible else math.inf

    duals = search.initial_duals()
    for dual in sorted(duals, key=lambda d: d.value)[:INITIAL_COVERS]:
        realise(dual)
    steps = 0
    settled: set[tuple[int, int, tuple[bool, ...]]] = set()  # intervals whose bound cannot rise further
    stalled: set[tuple[int, int]] = set()  # intervals whose split did not raise the bound: not split again
    while steps < max_steps and (time_limit_s is None or time.perf_counter() - started < time_limit_s):
        open_ = [d for d in duals if d.value < target() and (d.lo, d.hi, tuple(d.starts)) not in settled]
        if not open_:
            break
        worst = min(open_, key=lambda d: d.value)
        steps += 1
        loose = [(a, b) for a, b in Plan(worst.starts, [], {}).sections() if not allocations.is_exact(a, b, worst.hi)]
        if loose:  # tighten: the exact compute of the cover's sections, then the interval's bound again
            for a, b in loose:
                allocations.choose(a, b, worst.hi)
            parts = [(worst.lo, worst.hi)]
        elif not worst.refined:  # the SRAM price searched finely
            parts = [(worst.lo, worst.hi)]
        elif worst.hi - worst.lo > 1 and (worst.lo, worst.hi) not in stalled:  # split the interval
            edges = np.unique(np.linspace(worst.lo, worst.hi, SPLIT + 1).astype(int))
            parts = [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]
        else:
            settled.add((worst.lo, worst.hi, tuple(worst.starts)))
            continue
        duals.remove(worst)
        children = []
        for lo, hi in parts:
            dual = interval_dual(problem, section_bounds, lo, hi, allocations.compute_lower, target())
            if dual is not None:
                children.append(dual)
                if dual.value < target():
                    realise(dual)
        duals += children
        if len(parts) > 1 and min((c.value for c in children), default=math.inf) <= worst.value * (1 + STALL):
            stalled.update((c.lo, c.hi) for c in children)  # the bound does not depend on the cap here
    cost, plan = search.best
    lower_now = min((d.value for d in duals), default=math.inf)
    if cost.feasible and cost.latency_ps - lower_now > gap_tolerance * cost.latency_ps:
        # still open: the best plan's placement searched longer (the shared SRAM and HBM/DDR balance are
        # what the short searches leave)
        tiers = place_exact(problem, plan.starts, plan.choice, plan.tiers, FINAL_PLACE_TIME_S)
        better = plan_cost(problem, Plan(plan.starts, plan.choice, tiers))
        if better.feasible and better.latency_ps < cost.latency_ps:
            cost, plan = better, Plan(plan.starts, plan.choice, tiers)
    info = {
        "covers": len(search.realised),
        "intervals": len(duals),
        "steps": steps,
        "seconds": time.perf_counter() - started,
    }
    return _solution(cost, plan, duals, info)
