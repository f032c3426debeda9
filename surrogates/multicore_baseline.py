"""A cheap closed form of what the multicore CP-SAT scheduler achieves: its own seed schedules improved by
a local search on the same objective, no solver.

The CP-SAT mapper's throughput objective minimises the pipelined period (the most loaded core or the DRAM,
``mappers.multicore.schedule.core_loads``) and then the makespan; its latency objective the makespan. The
round robin baseline ignores both and sits 20-60 % off; this one starts from the hint the solver itself
starts from (the best of round robin and earliest-finish list scheduling) and moves single layers between
cores while the objective improves -- the load balance is what the solver mostly finds, so the learned
residual ``log(truth / this)`` stays small and transfers across networks.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph
from mappers.base import Mapping
from mappers.multicore.cpsat import seed_schedule
from mappers.multicore.problem import Problem, build_problem
from mappers.multicore.schedule import Schedule, core_loads, layer_weights, list_schedule, to_mapping
from templates.multicore import MulticoreArch

MAX_PASSES = 8  # best-improvement steps; each looks at every move and swap (layers^2 load evaluations)


def _key(problem: Problem, layer_core: tuple[int, ...], objective: str) -> tuple[int, ...]:
    """The load part of the objective, cheap to evaluate (no list scheduling)."""
    loads = core_loads(problem, layer_core)
    if objective in ("throughput", "edp"):
        return (max(loads), sum(loads))
    return (sum(sorted(loads[:-1])[-1:]), max(loads))  # latency/energy: the busiest core bounds the makespan


def greedy_balance(problem: Problem) -> tuple[int, ...]:
    """Largest layer first onto the core whose weighted load (with the DRAM's) it raises least (LPT)."""
    weights = layer_weights(problem)
    work = [[0] * problem.num_cores for _ in problem.layers]
    for t in problem.tasks:
        for c in range(problem.num_cores):
            work[t.layer][c] += weights[t.layer] * problem.costs[t.index][c].cycles
    loads = [0] * problem.num_cores
    layer_core = [0] * len(problem.layers)
    for li in sorted(range(len(problem.layers)), key=lambda i: -min(work[i])):
        core = min(range(problem.num_cores), key=lambda c: (loads[c] + work[li][c], c))
        layer_core[li] = core
        loads[core] += work[li][core]
    return tuple(layer_core)


def _neighbours(layer_core: tuple[int, ...], cores: int):
    """Every single-layer move, then every swap of two layers on different cores."""
    n = len(layer_core)
    for li in range(n):
        for core in range(cores):
            if core != layer_core[li]:
                yield layer_core[:li] + (core,) + layer_core[li + 1 :]
    for a in range(n):
        for b in range(a + 1, n):
            if layer_core[a] != layer_core[b]:
                trial = list(layer_core)
                trial[a], trial[b] = layer_core[b], layer_core[a]
                yield tuple(trial)


def balanced_assignment(problem: Problem, start: tuple[int, ...], objective: str) -> tuple[int, ...]:
    """Best-improvement local search over moves and swaps of layers, from ``start`` and from the LPT
    assignment, on the objective's load key; the better of the two."""
    results = []
    for begin in (tuple(start), greedy_balance(problem)):
        best, best_key = begin, _key(problem, begin, objective)
        for _ in range(MAX_PASSES):
            step = min(((_key(problem, t, objective), t) for t in _neighbours(best, problem.num_cores)), default=None)
            if step is None or step[0] >= best_key:
                break
            best_key, best = step
        results.append((best_key, best))
    return min(results)[1]


def shorter_makespan(problem: Problem, schedule: Schedule, period: int) -> Schedule:
    """Single-layer moves that shorten the list-scheduled makespan without raising the period past ``period``
    (the CP-SAT mapper's second stage: the makespan with the period fixed)."""
    best = schedule
    for _ in range(MAX_PASSES // 2):
        improved = False
        for li in range(len(problem.layers)):
            for core in range(problem.num_cores):
                layer_core = best.layer_core
                if core == layer_core[li]:
                    continue
                trial = layer_core[:li] + (core,) + layer_core[li + 1 :]
                if max(core_loads(problem, trial)) > period:
                    continue
                candidate = list_schedule(problem, trial)
                if candidate.makespan < best.makespan:
                    best, improved = candidate, True
        if not improved:
            break
    return best


def balanced_schedule(problem: Problem, objective: str) -> Schedule:
    """The seed schedule, or its load-balanced assignment list-scheduled when that scores better; for the
    period objectives the makespan is then shortened at that period."""
    seed = seed_schedule(problem, objective, 0.0, 1, 0)
    balanced = list_schedule(problem, balanced_assignment(problem, seed.layer_core, objective))
    if objective in ("throughput", "edp"):
        best = min((seed, balanced), key=lambda s: (max(core_loads(problem, s.layer_core)), s.makespan))
        return shorter_makespan(problem, best, max(core_loads(problem, best.layer_core)))
    if objective in ("throughput", "edp"):
        return min((seed, balanced), key=lambda s: (max(core_loads(problem, s.layer_core)), s.makespan))
    return min((seed, balanced), key=lambda s: s.makespan)


@dataclass
class MulticoreBalancedMapper:
    """The multicore closed form for the surrogates: seed schedule + load balancing (module docstring)."""

    name: str = "balanced"
    objective: str = "latency"
    fusion_tiles: int = 1
    max_layers: int = 40

    def map(self, graph: Graph, arch: MulticoreArch) -> Mapping:
        problem = build_problem(graph, arch, self.fusion_tiles, self.max_layers)
        return to_mapping(balanced_schedule(problem, self.objective), self.name, {"status": "HEURISTIC"})
