"""Local search over layer -> core assignments: what the CP-SAT mapper starts from, and the multicore
closed form the surrogates use (``mappers.multicore.balanced``) without a solver.

The throughput objective's first term, the pipelined period, is a function of the assignment alone (the
most loaded core or the DRAM, ``schedule.core_loads``): a min-max assignment problem. Largest layer first
onto the least loaded core (LPT) and best-improvement moves and swaps of single layers reach or come
close to its optimum. The makespan (the latency objective, and the throughput objective's tie-break) needs
list scheduling: single-layer moves that shorten the list-scheduled makespan, at a period no worse than
a given one.
"""

from __future__ import annotations

from collections.abc import Iterator

from mappers.multicore.problem import Problem
from mappers.multicore.schedule import Schedule, core_loads, layer_loads, list_schedule

MAX_PASSES = 8  # best-improvement steps of the load search; each looks at every move and swap
MAKESPAN_PASSES = 4  # first-improvement sweeps of the makespan search; each list-schedules every move


def load_key(loads: list[int], objective: str) -> tuple[int, ...]:
    """The load part of the objective (``core_loads``: cores, then the DRAM), cheap to evaluate."""
    if objective in ("throughput", "edp"):
        return (max(loads), sum(loads))
    return (max(loads[:-1]), max(loads))  # latency/energy: the busiest core bounds the makespan


def period(problem: Problem, layer_core: tuple[int, ...]) -> int:
    """The rate-weighted pipelined period of an assignment (the throughput objective's first term)."""
    return max(core_loads(problem, layer_core))


def greedy_balance(problem: Problem) -> tuple[int, ...]:
    """Largest layer first onto the core whose weighted load it leaves least (LPT)."""
    work = [[busy for busy, _ in row] for row in layer_loads(problem)]
    loads = [0] * problem.num_cores
    layer_core = [0] * len(problem.layers)
    for li in sorted(range(len(problem.layers)), key=lambda i: (-min(work[i]), i)):
        core = min(range(problem.num_cores), key=lambda c: (loads[c] + work[li][c], c))
        layer_core[li] = core
        loads[core] += work[li][core]
    return tuple(layer_core)


def neighbours(layer_core: tuple[int, ...], cores: int) -> Iterator[tuple[tuple[int, int], ...]]:
    """Every single-layer move, then every swap of two layers on different cores, as (layer, new core)
    changes."""
    n = len(layer_core)
    for li in range(n):
        for core in range(cores):
            if core != layer_core[li]:
                yield ((li, core),)
    for a in range(n):
        for b in range(a + 1, n):
            if layer_core[a] != layer_core[b]:
                yield ((a, layer_core[b]), (b, layer_core[a]))


def _moved(per_layer: list, loads: list[int], layer_core: tuple[int, ...], changes) -> list[int]:
    """``loads`` after the (layer, core) ``changes``: only the cores involved and the DRAM change."""
    out = list(loads)
    for li, core in changes:
        busy, dram = per_layer[li][layer_core[li]]
        out[layer_core[li]] -= busy
        out[-1] -= dram
        busy, dram = per_layer[li][core]
        out[core] += busy
        out[-1] += dram
    return out


def balanced_assignment(problem: Problem, start: tuple[int, ...], objective: str) -> tuple[int, ...]:
    """Best-improvement local search over moves and swaps on the objective's load key, from ``start`` and
    from the LPT assignment; the better of the two (ties: ``start``'s). Loads are updated per move, not
    recomputed."""
    per_layer = layer_loads(problem)
    results = []
    for rank, begin in enumerate((tuple(start), greedy_balance(problem))):
        best, loads = begin, core_loads(problem, begin, per_layer)
        best_key = load_key(loads, objective)
        for _ in range(MAX_PASSES):
            step = min(
                (
                    (load_key(trial, objective), changes, trial)
                    for changes in neighbours(best, problem.num_cores)
                    for trial in (_moved(per_layer, loads, best, changes),)
                ),
                default=None,
            )
            if step is None or step[0] >= best_key:
                break
            best_key, changes, loads = step
            moved = list(best)
            for li, core in changes:
                moved[li] = core
            best = tuple(moved)
        results.append((best_key, rank, best))
    return min(results)[2]


def shorter_makespan(problem: Problem, schedule: Schedule, max_period: int | None = None) -> Schedule:
    """Single-layer moves that shorten the list-scheduled makespan, keeping the period at most
    ``max_period`` (None: any period), swept in layer order until a sweep finds none."""
    best = schedule
    for _ in range(MAKESPAN_PASSES):
        improved = False
        for li in range(len(problem.layers)):
            for core in range(problem.num_cores):
                layer_core = best.layer_core
                if core == layer_core[li]:
                    continue
                trial = layer_core[:li] + (core,) + layer_core[li + 1 :]
                if max_period is not None and period(problem, trial) > max_period:
                    continue
                candidate = list_schedule(problem, trial)
                if candidate.makespan < best.makespan:
                    best, improved = candidate, True
        if not improved:
            break
    return best


def improve(problem: Problem, seed: Schedule, objective: str) -> Schedule:
    """``seed`` improved by the local searches on ``objective``: the load-balanced assignment when it
    scores better, then shorter makespans (at the period reached, for the period objectives)."""
    balanced = list_schedule(problem, balanced_assignment(problem, seed.layer_core, objective))
    if objective in ("throughput", "edp"):
        best = min((seed, balanced), key=lambda s: (period(problem, s.layer_core), s.makespan))
        return shorter_makespan(problem, best, period(problem, best.layer_core))
    return shorter_makespan(problem, min((seed, balanced), key=lambda s: s.makespan))
