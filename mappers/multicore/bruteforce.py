"""Exhaustive search for small problems: every layer -> core assignment and every topological activity
list (tasks and the transfers/read-backs that assignment queues), each list-scheduled. For regular
objectives the serial list scheduler over all activity lists reaches an optimal (active) schedule, so
this is the exact optimum the CP-SAT mapper is tested against, under the same cost semantics."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from mappers.base import MappingError
from mappers.multicore.problem import Problem
from mappers.multicore.schedule import Schedule, energy_bound, horizon, list_schedule, score

MAX_SCHEDULES = 300_000


def activity_lists(problem: Problem, layer_core: Sequence[int]) -> Iterator[list[int]]:
    """Every order of the tasks (ids 0..n-1) and of the queued edges that hold a resource under
    ``layer_core`` (ids n + edge index) that respects the edges and the tile order within a layer."""
    n = len(problem.tasks)
    preds: dict[int, set[int]] = {t: set() for t in range(n)}
    for i, e in enumerate(problem.edges):
        act = problem.activity(e, layer_core[problem.tasks[e.src].layer], layer_core[problem.tasks[e.dst].layer])
        if e.queued and act.kind != "none":
            preds[n + i] = {e.src}
            preds[e.dst].add(n + i)
        else:
            preds[e.dst].add(e.src)
    for a, b in zip(problem.tasks, problem.tasks[1:]):
        if a.layer == b.layer:
            preds[b.index].add(a.index)
    items = sorted(preds)

    def extend(order: list[int], done: set[int]) -> Iterator[list[int]]:
        if len(order) == len(items):
            yield list(order)
            return
        for a in items:
            if a not in done and preds[a] <= done:
                order.append(a)
                done.add(a)
                yield from extend(order, done)
                order.pop()
                done.discard(a)

    yield from extend([], set())


def brute_force(problem: Problem, objective: str) -> tuple[tuple[int, ...], Schedule]:
    """(best score, a schedule reaching it) over every assignment and activity list."""
    h = horizon(problem)
    e_bound = energy_bound(problem, h)
    best: tuple[tuple[int, ...], Schedule] | None = None
    tried = 0
    for layer_core in itertools.product(range(problem.num_cores), repeat=len(problem.layers)):
        for order in activity_lists(problem, layer_core):
            tried += 1
            if tried > MAX_SCHEDULES:
                raise MappingError(f"brute force over more than {MAX_SCHEDULES} schedules; give a smaller problem")
            schedule = list_schedule(problem, layer_core, order)
            value = score(schedule, objective, h, e_bound)
            if best is None or value < best[0]:
                best = (value, schedule)
    assert best is not None
    return best
