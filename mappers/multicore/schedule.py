"""A multicore schedule (a core per layer, a start per task), what it scores, and the serial list scheduler
the greedy and brute-force mappers share.

``scores`` is the one place each objective's integer value is written; the CP-SAT model (``cpsat``)
states the same sums, and a test holds its optimum equal to the brute force's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mappers.base import Mapping, OpMapping
from mappers.multicore.problem import DEMAND_UNITS, OBJECTIVES, EdgeActivity, Problem
from mappers.payloads import CoreTask

WEIGHT_SCALE = 1000  # the fastest model's rate in the integer throughput weights


@dataclass(frozen=True)
class Schedule:
    """The layer -> core assignment and every task's start cycle."""

    problem: Problem
    layer_core: tuple[int, ...]
    start: tuple[int, ...]
    edge_start: tuple[int, ...]  # when each edge's activity (transfer or read-back) starts

    def core(self, task: int) -> int:
        return self.layer_core[self.problem.tasks[task].layer]

    def duration(self, task: int) -> int:
        return self.problem.costs[task][self.core(task)].cycles

    def end(self, task: int) -> int:
        return self.start[task] + self.duration(task)

    @property
    def makespan(self) -> int:
        return max((self.end(t) for t in range(len(self.start))), default=0)

    def activity(self, edge: int) -> EdgeActivity:
        e = self.problem.edges[edge]
        return self.problem.activity(e, self.core(e.src), self.core(e.dst))


def layer_weights(problem: Problem) -> list[int]:
    """Integer throughput weight of each layer: its model's rate relative to the fastest rate."""
    top = max(layer.rate for layer in problem.layers)
    return [max(1, round(WEIGHT_SCALE * layer.rate / top)) for layer in problem.layers]


def dram_cycles(problem: Problem, task: int, core: int) -> int:
    """Cycles the whole DRAM (all channels) needs for a task's own traffic."""
    cost = problem.costs[task][core]
    return math.ceil((cost.dram_read_bytes + cost.dram_write_bytes) / problem.arch.dram_bytes_per_cycle)


def layer_loads(problem: Problem) -> list[list[tuple[int, int]]]:
    """Per layer and core: the rate-weighted busy cycles the layer puts on that core and on the DRAM."""
    weights = layer_weights(problem)
    loads = [[(0, 0)] * problem.num_cores for _ in problem.layers]
    for t in problem.tasks:
        w = weights[t.layer]
        row = loads[t.layer]
        for c in range(problem.num_cores):
            busy, dram = row[c]
            row[c] = (busy + w * problem.costs[t.index][c].cycles, dram + w * dram_cycles(problem, t.index, c))
    return loads


def core_loads(problem: Problem, layer_core: Sequence[int], per_layer: list | None = None) -> list[int]:
    """Weighted busy cycles per core and, last, of the DRAM: the pipelined period is their maximum.
    ``per_layer``: ``layer_loads(problem)``, when the caller already has it."""
    per_layer = per_layer or layer_loads(problem)
    loads = [0] * (problem.num_cores + 1)
    for li, c in enumerate(layer_core):
        busy, dram = per_layer[li][c]
        loads[c] += busy
        loads[-1] += dram
    return loads


def energy_score(problem: Problem, layer_core: Sequence[int], makespan: int) -> int:
    """Energy in pJ, integer: tasks + edge transfers/spill reads + leakage of every core over the makespan."""
    total = sum(round(problem.costs[t.index][layer_core[t.layer]].energy_total_pj) for t in problem.tasks)
    for e in problem.edges:
        a, b = layer_core[problem.tasks[e.src].layer], layer_core[problem.tasks[e.dst].layer]
        total += round(problem.activity(e, a, b).energy_pj)
    return total + leakage_per_cycle(problem) * makespan


def leakage_per_cycle(problem: Problem) -> int:
    return round(problem.leakage_pj_per_cycle())


def edp_scales(problem: Problem, horizon: int, energy_bound: int) -> tuple[int, int]:
    """Divisors of energy and makespan so that their product stays within 2^62."""
    limit = 10**18
    s_e = max(1, energy_bound // 10**9)
    s_h = max(1, (energy_bound // s_e + 1) * (horizon + 1) // limit + 1)
    return s_e, s_h


def score(schedule: Schedule, objective: str, horizon: int, energy_bound: int) -> tuple[int, ...]:
    """The objective (lexicographic tuple) the CP-SAT model minimises, for any schedule."""
    p, mk = schedule.problem, schedule.makespan
    if objective == "latency":
        return (mk,)
    if objective == "throughput":
        return (max(core_loads(p, schedule.layer_core)), mk)
    energy = energy_score(p, schedule.layer_core, mk)
    if objective == "energy":
        return (energy,)
    if objective == "edp":
        s_e, s_h = edp_scales(p, horizon, energy_bound)
        return ((energy // s_e) * (mk // s_h), mk)
    raise ValueError(f"objective {objective!r}; choose one of: {', '.join(OBJECTIVES)}")


def horizon(problem: Problem) -> int:
    """An upper bound on any sensible makespan: every task at its slowest plus every edge at its slowest lag."""
    k = range(problem.num_cores)
    tasks = sum(max(problem.costs[t.index][c].cycles for c in k) for t in problem.tasks)
    lags = sum(max(problem.lag(e, a, b)[0] for a in k for b in k) for e in problem.edges)
    return tasks + lags + 1


def energy_bound(problem: Problem, horizon_cycles: int) -> int:
    k = range(problem.num_cores)
    tasks = sum(max(round(problem.costs[t.index][c].energy_total_pj) for c in k) for t in problem.tasks)
    edges = sum(max(round(problem.lag(e, a, b)[2]) for a in k for b in k) for e in problem.edges)
    return tasks + edges + leakage_per_cycle(problem) * horizon_cycles + 1


# ------------------------------------------------------------------------------------ list scheduling
def path_bounds(problem: Problem) -> tuple[list[int], list[int]]:
    """Per task, the earliest start and the least time from its end to the makespan on any assignment (every
    task on its fastest core, every edge at its shortest activity): redundant bounds for the CP-SAT model."""
    n, k = len(problem.tasks), range(problem.num_cores)
    fastest = [min(c.cycles for c in row) for row in problem.costs]
    arcs = [(e.src, e.dst, min(problem.activity(e, a, b).lag for a in k for b in k)) for e in problem.edges]
    arcs += [(a.index, b.index, 0) for a, b in zip(problem.tasks, problem.tasks[1:]) if a.layer == b.layer]
    arcs.sort()
    head, tail = [0] * n, [0] * n
    for src, dst, lag in arcs:  # tasks are numbered in a topological order: src < dst
        head[dst] = max(head[dst], head[src] + fastest[src] + lag)
    for src, dst, lag in sorted(arcs, reverse=True):
        tail[src] = max(tail[src], lag + fastest[dst] + tail[dst])
    return head, tail


def list_schedule(problem: Problem, layer_core: Sequence[int], order: Sequence[int] | None = None) -> Schedule:
    """Serial schedule generation: activities in ``order`` (a topological list of task ids 0..n-1 and queued
    edge ids n + edge index; default: the tasks in graph order), each at its earliest start that respects
    its inputs, its resources (its core, the bus or the mesh ports it holds; gaps may be filled) and the
    DRAM channels. A queued edge not in the list is placed just before its consumer; the other edges are
    plain lags from their producer's end."""
    n = len(problem.tasks)
    edges = problem.edges
    order = topological_order(problem) if order is None else order
    incoming: list[list[int]] = [[] for _ in range(n)]
    for i, e in enumerate(edges):
        incoming[e.dst].append(i)
    start, end = [0] * n, [0] * n
    edge_start: list[int | None] = [None] * len(edges)
    unary: dict[str, list[tuple[int, int]]] = {}
    dram: list[tuple[int, int, int]] = []
    capacity = DEMAND_UNITS * problem.arch.dram_channels
    core_of = [layer_core[t.layer] for t in problem.tasks]
    last_tile_end: dict[int, int] = {}

    def place_edge(i: int) -> None:  # a transfer or read-back, after its producer
        e = edges[i]
        act = problem.activity(e, core_of[e.src], core_of[e.dst])
        demand = DEMAND_UNITS if act.kind == "dram" else 0
        held = [unary.setdefault(r, []) for r in act.resources]
        edge_start[i] = _earliest(end[e.src], act.cycles, demand, held, dram, capacity)
        _occupy(edge_start[i], act.cycles, demand, held, dram)

    for item in order:
        if item >= n:
            place_edge(item - n)
            continue
        c = core_of[item]
        cost = problem.costs[item][c]
        ready = last_tile_end.get(problem.tasks[item].layer, 0)
        for i in incoming[item]:
            e = edges[i]
            if edge_start[i] is None:
                if e.queued:
                    place_edge(i)
                else:
                    edge_start[i] = end[e.src]
            ready = max(ready, edge_start[i] + problem.activity(e, core_of[e.src], c).lag)
        held = [unary.setdefault(f"core{c}", [])]
        s = _earliest(ready, cost.cycles, cost.dram_demand, held, dram, capacity)
        start[item], end[item] = s, s + cost.cycles
        _occupy(s, cost.cycles, cost.dram_demand, held, dram)
        last_tile_end[problem.tasks[item].layer] = s + cost.cycles
    # an edge into a task left out of a partial list starts when its producer ends
    edge_start = [end[e.src] if s is None else s for e, s in zip(edges, edge_start)]
    return Schedule(problem, tuple(layer_core), tuple(start), tuple(edge_start))


def _earliest(ready: int, dur: int, demand: int, held: list, dram: list, capacity: int) -> int:
    """The first start >= ready where every held unary resource is free and the DRAM has room."""
    candidates = {ready, *(b for spans in held for _, b in spans if b > ready), *(b for _, b, _ in dram if b > ready)}
    for s in sorted(candidates):
        if _fits(s, dur, demand, held, dram, capacity):
            return s
    raise AssertionError("the last end is always free")  # pragma: no cover


def _occupy(s: int, dur: int, demand: int, held: list, dram: list) -> None:
    if dur <= 0:
        return
    for spans in held:
        spans.append((s, s + dur))
    if demand:
        dram.append((s, s + dur, demand))


def _fits(s: int, dur: int, demand: int, held: list, dram: list, capacity: int) -> bool:
    if dur <= 0:
        return True
    e = s + dur
    if any(a < e and s < b for spans in held for a, b in spans):
        return False
    if not demand:
        return True
    points = [s, *(a for a, _, _ in dram if s < a < e)]
    return all(demand + sum(d for a, b, d in dram if a <= p < b) <= capacity for p in points)


def topological_order(problem: Problem) -> list[int]:
    """Tasks in layer order, tiles in order: the graph's own topological order."""
    return [t.index for t in problem.tasks]


# ------------------------------------------------------------------------------------------- mapping
def to_mapping(schedule: Schedule, mapper: str, solver: dict) -> Mapping:
    """The schedule as a Mapping: every op carries its layer, core and its layer's task spans."""
    p = schedule.problem
    ops: dict[str, OpMapping] = {}
    spans: dict[int, list[tuple[int, int]]] = {}
    for t in p.tasks:
        spans.setdefault(t.layer, []).append((schedule.start[t.index], schedule.end(t.index)))
    for li, layer in enumerate(p.layers):
        core = schedule.layer_core[li]
        for name in layer.ops:
            ops[name] = OpMapping(
                op=name,
                tile={"tiles": layer.tiles},
                dataflow=p.arch.cores[core].dataflow,
                payload=CoreTask(core=core, layer=layer.name, spans=tuple(spans[li])),
            )
    solver = {**solver, "schedule": schedule}
    return Mapping(p.graph, p.arch, ops, [o.name for o in p.graph.ops], mapper=mapper, solver=solver)
