"""The RDU cover mapper: a cheap closed form of what the section mapper returns, the proven bound's best
covers realised once (the surrogates' closed form for the RDU family; ``template.mapper: bound_cover``).

The exact mapper (``mappers.rdu.exact.solve_exact``) computes a lower bound per PMU interval whose attaining
covers are the plans it tries, then refines the open intervals for up to ``MAX_STEPS`` steps. Its answer is
within a few percent of the bound, and most often it is the realisation of the first cover: so this closed
form stops there (``mappers.rdu.exact.cover_plan``: the cover of the least interval bound on a coarse SRAM-price
grid, exact section knapsacks, a short deterministic CP-SAT placement), a fraction of an exact mapping's time
(``benchmarks/rdu_solver_bench.py --grid designs/rdu_hybrid.yaml --closed-form`` measures both). Its latency
is an upper bound of the truth and its ``bound`` a proven lower bound, so the hybrid evaluator floors predicted
latencies at that bound; the learned residual ``log(truth / this)`` is what the refinement adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph
from mappers.base import Mapping
from mappers.rdu.exact import cover_plan
from mappers.rdu.problem import build_problem
from mappers.rdu.sections import to_mapping
from templates.rdu import RduArch

COVERS = 1  # interval bounds whose covers are realised (a second changed no plan on 12 points of rdu_hybrid.yaml)


@dataclass
class RduCoverMapper:
    """The bound's covers realised (module docstring): the RDU closed form of the surrogates. Its ``solver``
    facts carry the plan's latency (``value``) and the proven lower bound (``bound``), in ps."""

    name: str = "bound_cover"

    def map(self, graph: Graph, arch: RduArch) -> Mapping:
        problem = build_problem(graph, arch, "latency")
        solution = cover_plan(problem, COVERS)
        info = {
            **solution.info,
            "status": "BOUND_COVER",
            "value": float(solution.cost.latency_ps),
            "bound": float(solution.lower_ps),
        }
        return to_mapping(problem, solution.plan, solution.cost, self.name, info)
