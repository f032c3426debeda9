"""The balanced multicore mapper: a cheap closed form of what the CP-SAT scheduler achieves, the schedule the
solver itself starts from, without its scheduling model (the surrogates' closed form for the multicore family;
``template.mapper: balanced``).

The CP-SAT mapper's throughput objective minimises the pipelined period (the most loaded core or the DRAM,
``mappers.multicore.schedule.core_loads``) and then the makespan; its latency objective the makespan. Its
hint is the best of its seed schedules (round robin, earliest finish) improved by the local searches of
``mappers.multicore.balance`` (load-balancing moves and swaps, then makespan-shortening moves), and the
solver never returns worse than its hint. For the throughput objective the period is a function of the
assignment alone: the mapper's first stage solves it as a small assignment model (``period_schedule``,
about 50 ms), and so does this closed form, with the same budget -- the same period, the same throughput;
what is left to learn, ``log(truth / this)``, is what the full scheduling model takes off the makespan.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph
from mappers.base import Mapping
from mappers.multicore.cpsat import MulticoreOptions, period_schedule, period_stage_limit, seed_schedule
from mappers.multicore.problem import Problem, build_problem
from mappers.multicore.schedule import Schedule, to_mapping
from templates.multicore import MulticoreArch


def balanced_schedule(problem: Problem, objective: str) -> Schedule:
    """The CP-SAT mapper's hint on ``problem``: its seeds improved by the local searches."""
    return seed_schedule(problem, objective, 0.0, 1, 0)


def closed_form_schedule(problem: Problem, objective: str, time_limit_s: float, gap_limit: float) -> Schedule:
    """The hint and, for the throughput objective, the mapper's period stage from it (its own budget)."""
    hint = balanced_schedule(problem, objective)
    if objective != "throughput":
        return hint
    return period_schedule(problem, hint, period_stage_limit(problem, time_limit_s), 1, 0, gap_limit)[0]


@dataclass
class MulticoreBalancedMapper(MulticoreOptions):
    """The solver's own hint (module docstring). Its options and their defaults are the CP-SAT mapper's:
    ``time_limit_s`` is the truth mapper's, so the period stage gets the share it gets there."""

    name: str = "balanced"

    def map(self, graph: Graph, arch: MulticoreArch) -> Mapping:
        problem = build_problem(graph, arch, self.fusion_tiles, self.max_layers)
        schedule = closed_form_schedule(problem, self.objective, self.time_limit_s, self.gap_limit)
        return to_mapping(schedule, self.name, {"status": "HEURISTIC"})
