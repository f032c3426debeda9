"""The RDU's mappers: fused sections by CP-SAT (the default) and the unfused baseline, as Mappings."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from dse.graph import Graph
from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.base import Mapping, MappingError, OpMapping
from mappers.rdu.bound import latency_lower_bound
from mappers.rdu.cpsat import SectionSolution, solve_sections
from mappers.rdu.heuristics import heuristic_plans, unfused_plan
from mappers.rdu.problem import OBJECTIVES, build_problem
from templates.rdu import RduArch

POLISH_SHARE = 0.5  # of the time limit: CP-SAT with the best plan's cuts fixed, before the full model


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
    """Fused sections, PCU/PMU allocation and tier placement by CP-SAT (the RDU's default mapper).

    For the latency objective a proven lower bound (``mappers.rdu.bound``: shortest path over cut positions
    with relaxed sections) is computed first; CP-SAT runs only when the best heuristic plan is more than
    ``gap_tolerance`` above it: first with that plan's cuts fixed (allocation and tiers only, half the time),
    then the full model from the polished plan with the bound as a constraint; the reported bound/gap is the
    better of the two bounds. ``time_limit_s`` is CP-SAT's deterministic time (reproducible),
    ``wall_limit_s`` a wall-clock backstop (0: 4 x the deterministic limit)."""

    name: str = "sections"
    objective: str = "latency"
    time_limit_s: float = 10.0
    wall_limit_s: float = 0.0
    gap_tolerance: float = 0.0
    workers: int = 1  # one CP-SAT worker: deterministic; measured as good as 8 interleaved and faster

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")
        for option in ("time_limit_s", "wall_limit_s", "gap_tolerance"):
            if getattr(self, option) < 0:
                raise MappingError(f"mapper option {option}={getattr(self, option)!r} must be >= 0")

    def map(self, graph: Graph, arch: RduArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective)
        limits = (self.time_limit_s, self.wall_limit_s or None, self.gap_tolerance, self.workers)
        solution = _solve_cached(problem, limits)
        return to_mapping(problem, solution.plan, solution.cost, self.name, solution.info)


@dataclass
class RduUnfusedMapper:
    """The unfused baseline: one op per section, fastest allocation each, tiers greedily by capacity."""

    name: str = "unfused"

    def map(self, graph: Graph, arch: RduArch) -> Mapping:
        problem = build_problem(graph, arch, "latency")
        plan = unfused_plan(problem)
        cost = plan_cost(problem, plan)
        if not cost.feasible:
            raise MappingError(f"the unfused plan of {graph.name!r} does not fit: {cost.why}")
        info = {"status": "GREEDY", "value": float(cost.latency_ps), "bound": float("nan"), "gap": float("nan")}
        return to_mapping(problem, plan, cost, self.name, {**info, "seconds": 0.0})


_SOLUTION_CACHE: dict[tuple, SectionSolution] = {}


def _solve_cached(problem: SectionProblem, limits: tuple) -> SectionSolution:
    """Solutions per (graph, arch, objective, limits): an explorer revisiting a point pays the solve once."""
    key = (_graph_key(problem.graph), problem.arch, problem.objective, limits)
    if key not in _SOLUTION_CACHE:
        if len(_SOLUTION_CACHE) > 128:
            _SOLUTION_CACHE.clear()
        _SOLUTION_CACHE[key] = _solve(problem, *limits)
    return _SOLUTION_CACHE[key]


def _solve(
    problem: SectionProblem, time_limit_s: float, wall_limit_s: float | None, gap_tolerance: float, workers: int
) -> SectionSolution:
    """Bound first (latency); CP-SAT only when the best heuristic plan is not proven within the tolerance."""
    if problem.objective != "latency":
        return solve_sections(problem, time_limit_s, workers, wall_limit_s=wall_limit_s)
    started = time.perf_counter()
    lower = latency_lower_bound(problem)
    best = min(
        ((plan_cost(problem, p), p) for p in heuristic_plans(problem)),
        key=lambda t: (not t[0].feasible, t[0].latency_ps),
    )
    cost, plan = best
    if cost.feasible:
        gap = max(0.0, (cost.latency_ps - lower) / cost.latency_ps)
        if gap <= gap_tolerance:
            info = {
                "status": "OPTIMAL" if gap == 0 else "WITHIN_TOLERANCE",
                "value": float(cost.latency_ps),
                "bound": float(lower),
                "gap": gap,
                "seconds": time.perf_counter() - started,
                "objective": "latency",
                "weights": (1, 1),
                "note": "heuristic plan proven by the section lower bound; CP-SAT not needed",
            }
            return SectionSolution(plan, cost, info)
    # polish: allocation and tiers for the best plan's cuts (a far smaller search), then the full model
    polish_s = POLISH_SHARE * time_limit_s
    hint = plan if cost.feasible else None
    if hint is not None and polish_s > 0:
        polished = solve_sections(
            problem, polish_s, workers, hint=hint, wall_limit_s=_share(wall_limit_s), fixed_cuts=hint.starts
        )
        if polished.cost.feasible and polished.cost.latency_ps < cost.latency_ps:
            hint, cost = polished.plan, polished.cost
            gap = max(0.0, (cost.latency_ps - lower) / cost.latency_ps)
            if gap <= gap_tolerance:
                info = {**polished.info, "status": "OPTIMAL" if gap == 0 else "WITHIN_TOLERANCE", "gap": gap}
                info.update(bound=float(lower), seconds=time.perf_counter() - started, lower_bound_ps=float(lower))
                return SectionSolution(hint, cost, info)
    solution = solve_sections(
        problem,
        time_limit_s - polish_s if hint is not None else time_limit_s,
        workers,
        hint=hint,
        wall_limit_s=_share(wall_limit_s),
        lower_bound=lower,
    )
    solution.info["seconds"] = time.perf_counter() - started
    solution.info["lower_bound_ps"] = float(lower)
    return solution


def _share(wall_limit_s: float | None) -> float | None:
    """Half of the wall-clock backstop for each of the two CP-SAT runs."""
    return None if wall_limit_s is None else wall_limit_s / 2


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
