"""The RDU's mappers: fused sections by CP-SAT (the default) and the unfused baseline, as Mappings."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dse.graph import Graph
from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.base import Mapping, MappingError, OpMapping
from mappers.rdu.cpsat import SectionSolution, solve_sections
from mappers.rdu.heuristics import unfused_plan
from mappers.rdu.problem import OBJECTIVES, build_problem
from templates.rdu import RduArch


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

    def map(self, graph: Graph, arch: RduArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective)
        solution = _solve_cached(problem, self.time_limit_s, self.workers)
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
