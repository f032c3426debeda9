"""The greedy baseline: layers dealt to the cores round robin, tasks list-scheduled in graph order."""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph
from mappers.base import Mapping
from mappers.multicore.problem import Problem, build_problem
from mappers.multicore.schedule import Schedule, list_schedule, to_mapping, topological_order
from templates.multicore import MulticoreArch


def round_robin(problem: Problem) -> Schedule:
    """Layer i on core i mod K; every task at its earliest feasible start in graph order."""
    layer_core = tuple(li % problem.num_cores for li in range(len(problem.layers)))
    return list_schedule(problem, layer_core, topological_order(problem))


def earliest_finish(problem: Problem) -> Schedule:
    """Layers in graph order, each on the core where its last tile ends first given the layers before it
    (HEFT's rule), list-scheduled."""
    chosen: list[int] = []
    prefix: list[int] = []
    for li in range(len(problem.layers)):
        mine = [t.index for t in problem.tasks if t.layer == li]
        prefix += mine
        pad = [0] * (len(problem.layers) - li - 1)
        ends = [list_schedule(problem, [*chosen, c, *pad], prefix).end(mine[-1]) for c in range(problem.num_cores)]
        chosen.append(min(range(problem.num_cores), key=lambda c: (ends[c], c)))
    return list_schedule(problem, chosen)


@dataclass
class MulticoreGreedyMapper:
    """Layer-by-layer round robin over the cores (the baseline the CP-SAT mapper is measured against)."""

    name: str = "greedy"
    fusion_tiles: int = 1
    max_layers: int = 40

    def map(self, graph: Graph, arch: MulticoreArch) -> Mapping:
        problem = build_problem(graph, arch, self.fusion_tiles, self.max_layers)
        return to_mapping(round_robin(problem), self.name, {"note": "greedy round robin"})
