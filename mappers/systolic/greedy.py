"""The greedy baseline: per op the largest tile that fits, in graph order, nothing kept resident.

Every tensor between two ops is written to DRAM and read back, and each op takes the tile candidate
with the largest total footprint that fits its scratchpads on its own (ties: the better score). It
is the baseline the CP-SAT scheduler is measured against and the solver's starting hint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.graph import Graph
from mappers.base import Mapping, MappingError
from mappers.systolic.nest import larger_memory_hint
from mappers.systolic.objective import OBJECTIVES
from mappers.systolic.problem import Problem, Schedule, build_problem, schedule_score, to_mapping
from templates.systolic import SystolicArch


def greedy_schedule(problem: Problem) -> Schedule:
    """Largest fitting tile per unit, graph order, no residency; MappingError names a unit that cannot
    stage its tiles without residency."""
    cap = problem.capacity
    memory = problem.target.resident_memory
    choice = []
    nothing: frozenset[str] = frozenset()
    for u, cands in enumerate(problem.cands):
        mode = problem.mode_of(u, nothing)
        staged = cands.staging(problem.target, mode)
        fits = np.flatnonzero(staged <= cap)
        if len(fits) == 0:
            name = problem.units[u].name
            raise MappingError(
                f"op {name!r}: its smallest tile stages {int(staged.min())} bytes in {memory}, which holds "
                f"{cap} bytes; without residency no tile fits (give it {larger_memory_hint(memory)})",
                node=name,
            )
        total = cands.footprint.sum(axis=0)[fits]
        score = cands.costs(problem.target, problem.model, mode, problem.output_write_bytes(u))[fits]
        choice.append(int(fits[np.lexsort((score, -total))[0]]))
    order = list(range(len(problem.units)))
    return Schedule(
        order=order,
        choice=choice,
        resident=nothing,
        resident_offset={},
        staging_offset={u: 0 for u in order},
        score=schedule_score(problem, order, choice, nothing),
        info={"status": "HEURISTIC"},
    )


@dataclass
class GreedyMapper:
    """Largest tile that fits, per op, no residency (the baseline)."""

    name: str = "greedy"
    objective: str = "dram"
    double_buffer: bool = True  # False: single-buffered tiles (twice the tile in the same SRAM, no overlap)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")

    def map(self, graph: Graph, arch: SystolicArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective, self.double_buffer)
        return to_mapping(problem, greedy_schedule(problem), self.name)
