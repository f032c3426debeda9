"""The RDU's mappers: fused sections by CP-SAT (the default) and the unfused baseline, as Mappings."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dse.graph import Graph
from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.base import Mapping, MappingError, OpMapping
from mappers.payloads import SectionPlan
from mappers.rdu.cpsat import SectionSolution, solve_sections
from mappers.rdu.exact import GAP_TOLERANCE, MAX_STEPS, solve_exact
from mappers.rdu.heuristics import unfused_plan
from mappers.rdu.problem import OBJECTIVES, build_problem
from templates.rdu import RduArch

PROVEN_GAP = 1e-6  # the bound is floored with a float margin: a gap this small is optimality
CPSAT_CLOSE_OPS = 32  # graphs up to this many ops get CP-SAT to close a gap above the tolerance


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
            payload=SectionPlan(
                section=section_of[i],
                pcus=option.pcus,
                pmus=option.pmus,
                cycles=option.cycles,
                tiers=tier_of_op.get(i, {}),
            ),
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
    """Fused sections, PCU/PMU allocation and tier placement (the RDU's default mapper).

    Latency (the default objective) is solved by bounds (``mappers.rdu.exact``): a proven lower bound over the
    cut positions of the op order, PMU intervals and SRAM prices, whose covers are realised exactly and refined
    until the best plan is within ``gap_tolerance`` of the bound or ``max_steps`` refinements (the
    deterministic limit) have passed. The energy and weighted objectives, and the CP-SAT closer of small
    graphs, use the CP-SAT model (``mappers.rdu.cpsat``) with ``time_limit_s`` as its deterministic time.
    Same graph, arch and options give the same plan whatever the machine's load: ``wall_limit_s`` (0: none)
    is an opt-in wall-clock backstop of both searches that gives that up."""

    name: str = "sections"
    objective: str = "latency"
    time_limit_s: float = 10.0
    wall_limit_s: float = 0.0
    gap_tolerance: float = GAP_TOLERANCE
    max_steps: int = MAX_STEPS
    workers: int = 1  # CP-SAT workers (energy/weighted): one is deterministic, measured as good as 8 and faster

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")
        for option in ("time_limit_s", "wall_limit_s", "gap_tolerance", "max_steps"):
            if getattr(self, option) < 0:
                raise MappingError(f"mapper option {option}={getattr(self, option)!r} must be >= 0")

    def map(self, graph: Graph, arch: RduArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective)
        limits = (self.time_limit_s, self.wall_limit_s or None, self.gap_tolerance, self.workers, self.max_steps)
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
    problem: SectionProblem,
    time_limit_s: float,
    wall_limit_s: float | None,
    gap_tolerance: float,
    workers: int,
    max_steps: int,
) -> SectionSolution:
    """Latency by bounds (``solve_exact``); energy and weighted by the CP-SAT model."""
    if problem.objective != "latency":
        return solve_sections(problem, time_limit_s, workers, wall_limit_s=wall_limit_s)
    exact = solve_exact(problem, gap_tolerance, max_steps, wall_limit_s)
    plan, cost, lower, gap = exact.plan, exact.cost, exact.lower_ps, exact.info["gap"]
    if not cost.feasible:
        raise MappingError(f"no feasible section plan of {problem.graph.name!r}: {cost.why}")
    info = dict(exact.info)
    if gap > max(gap_tolerance, PROVEN_GAP) and problem.n <= CPSAT_CLOSE_OPS:
        # a small graph: CP-SAT from the plan, with the bound as a constraint, proves or improves it
        closed = solve_sections(problem, time_limit_s, workers, hint=plan, wall_limit_s=wall_limit_s, lower_bound=lower)
        info["cpsat"] = closed.info["status"]
        if closed.cost.feasible and closed.cost.latency_ps <= cost.latency_ps:
            plan, cost = closed.plan, closed.cost
            lower = max(lower, float(closed.info.get("bound", lower)))
            gap = max(0.0, (cost.latency_ps - lower) / cost.latency_ps)
    if gap <= PROVEN_GAP:
        status = "OPTIMAL"
    elif gap <= gap_tolerance:
        status = "WITHIN_TOLERANCE"
    else:
        status = "FEASIBLE"
    info = {
        **info,
        "status": status,
        "value": float(cost.latency_ps),
        "bound": float(lower),
        "lower_bound_ps": float(lower),
        "gap": gap,
        "objective": "latency",
        "weights": (1, 1),
    }
    return SectionSolution(plan, cost, info)


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
