"""Brute force over every section plan of a small graph: the CP-SAT answer's reference."""

from __future__ import annotations

import itertools
import math

from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.base import MappingError
from mappers.rdu.heuristics import unfused_plan
from mappers.rdu.problem import objective_weights


def brute_force(problem: SectionProblem, max_plans: int = 2_000_000) -> tuple[Plan, PlanCost]:
    """Every cut pattern x allocation x tier placement; the best feasible plan by the problem's objective."""
    n = problem.n
    allowed = [problem.allowed_tiers(item) for item in problem.placeables]
    count = 2 ** (n - 1) * math.prod(len(o) for o in problem.options) * math.prod(len(a) for a in allowed)
    if count > max_plans:
        raise ValueError(f"{count} plans is too many to enumerate (limit {max_plans})")
    weights = objective_weights(problem, plan_cost(problem, unfused_plan(problem)))
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
