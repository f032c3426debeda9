"""The multicore mapper: OR-Tools CP-SAT assigns every layer to a core and schedules every tile group.

Decision variables: ``x[l, c]`` (layer l runs on core c), a start per task, and for each pair of layers
joined by an edge a one-hot ``y[a, b]`` over the pair of cores they land on (so each edge's activity --
nothing on one core, an interconnect transfer between cores, a DRAM read-back when the producer spilled --
is linear in ``y``). Constraints: one interval per core per task, optional on ``x``; no overlap on a core;
tiles of a layer in order; the DRAM channels (a cumulative over the tasks' own traffic and the read-backs
of spilled tensors); the interconnect (``bus``: one no-overlap over every transfer; ``mesh``: one per
core's output port and one per input port); a consumer starts after its inputs' activities and their hop
latency. Short activities (``Problem.queue_min_cycles``) are plain lags. Objectives (``objective``
option), integer sums written once in ``mappers.multicore.schedule.score``:

* ``latency``: the makespan of one inference (of every model, for a multi-DNN workload);
* ``throughput``: several inferences in flight: minimise the pipelined period, the largest rate-weighted
  busy time of a core or of the DRAM -- a function of the assignment alone, so solved first as a small
  assignment model (``solve_period``, mostly proven optimal in well under a second) -- then ties broken
  by makespan: the full model with the period fixed, from the best list schedule at that period;
* ``energy``: tasks' energy + transfers and read-backs + every core's leakage over the makespan;
* ``edp``: energy x makespan (scaled to stay in 64 bits).

What keeps it fast: a hint (the best of the greedy round robin, an earliest-finish list schedule and, with
fusion, the layer-by-layer optimum's assignment list-scheduled over the tiles, improved by the local
searches of ``mappers.multicore.balance``: the solver never returns worse than them); the hint's makespan
as the upper bound (latency, and the throughput objective's makespan stage); critical-path bounds on every
start; load windows (each core's load after a layer's first start and before its last end) and the DRAM's
and links' loads as linear bounds of the makespan; identical cores on a bus taken in order of first use
(symmetry breaking); ``gap_limit``.

Deterministic (one worker, fixed seed, a deterministic time limit; the wall-clock limit is a far backstop,
so a loaded machine gives the same schedule, later). ``time_limit_s`` is in CP-SAT's deterministic units,
which on the full model run several times slower than wall-clock seconds. Status, objective value, bound,
gap and seconds are reported in ``Mapping.solver``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from dse.graph import Graph
from mappers.base import Mapping, MappingError, wall_backstop_s
from mappers.multicore.balance import improve, period, shorter_makespan
from mappers.multicore.greedy import earliest_finish, round_robin
from mappers.multicore.problem import DEMAND_UNITS, OBJECTIVES, Problem, build_problem, layer_by_layer
from mappers.multicore.schedule import (
    Schedule,
    dram_cycles,
    edp_scales,
    energy_bound,
    horizon,
    layer_weights,
    leakage_per_cycle,
    list_schedule,
    path_bounds,
    score,
    to_mapping,
)
from templates.multicore import MulticoreArch

SEED_SHARE = 0.3  # of the time limit, spent on the layer-by-layer problem that seeds a fused one
PERIOD_SHARE = 0.3  # of the rest, at most, on the throughput objective's period (mostly proven optimal sooner)
# then its makespan tie-break: a small share, as a deterministic unit of the full model (its LP) takes
# several wall-clock seconds (ResNet-18, 21 layers, 4 cores: 1.4 units = 12-20 s on a loaded 2-core
# machine) and the makespan gains < 1 % there over its start
MAKESPAN_SHARE = 0.1


@dataclass
class MulticoreOptions:
    """The options the CP-SAT mapper shares with the mappers that start from it (``balanced``): one default each."""

    name: str = "multicore"
    objective: str = "latency"  # latency | throughput | energy | edp
    time_limit_s: float = 10.0  # CP-SAT deterministic time units (module docstring)
    gap_limit: float = 0.01  # stop once the relative gap to the proven bound is at most this (0: prove optimality)
    fusion_tiles: int = 1  # 1 = layer by layer; N = each layer cut into N row bands (layer fusion)
    max_layers: int = 40  # neighbouring layers are merged down to this many (keeps the model small)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"objective {self.objective!r} is not known; choose one of: {', '.join(OBJECTIVES)}")
        if self.time_limit_s <= 0:
            raise MappingError(f"time_limit_s={self.time_limit_s} must be > 0")
        if not 0 <= self.gap_limit < 1:
            raise MappingError(f"gap_limit={self.gap_limit} must be in [0, 1)")


@dataclass
class MulticoreCpSatMapper(MulticoreOptions):
    """CP-SAT layer-to-core assignment and tile scheduling (module docstring)."""

    workers: int = 1
    seed: int = 0

    def map(self, graph: Graph, arch: MulticoreArch) -> Mapping:
        problem = build_problem(graph, arch, self.fusion_tiles, self.max_layers)
        schedule, facts = solve(problem, self.objective, self.time_limit_s, self.workers, self.seed, self.gap_limit)
        return to_mapping(schedule, self.name, facts)


def seed_schedule(
    problem: Problem,
    objective: str,
    time_limit_s: float,
    workers: int,
    seed: int,
    gap_limit: float = 0.0,
    local_search: bool = True,
) -> Schedule:
    """The hint: the best of the greedy round robin, the earliest-finish (HEFT) list schedule and, for a fused
    problem, the layer-by-layer optimum's assignment list-scheduled over the tiles; then improved by the
    local searches (``balance.improve``) so the solver never starts, nor ends, worse than them; identical
    cores relabelled in order of use."""
    candidates = [round_robin(problem), earliest_finish(problem)]
    if problem.fusion:
        coarse, _ = solve(layer_by_layer(problem), objective, time_limit_s, workers, seed, gap_limit)
        candidates.append(list_schedule(problem, coarse.layer_core))
    h = horizon(problem)
    e_bound = energy_bound(problem, h)
    best = min(candidates, key=lambda s: score(s, objective, h, e_bound))
    if local_search:
        best = min((best, improve(problem, best, objective)), key=lambda s: score(s, objective, h, e_bound))
    return canonical(problem, best)


def canonical(problem: Problem, schedule: Schedule) -> Schedule:
    """``schedule`` with interchangeable cores renamed in order of first use (the same figures)."""
    layer_core = canonical_cores(problem, schedule.layer_core)
    return schedule if layer_core == schedule.layer_core else list_schedule(problem, layer_core)


def interchangeable_cores(problem: Problem) -> list[list[int]]:
    """Groups of cores no schedule can tell apart: equal cores on a bus (every pair one hop apart)."""
    if problem.arch.interconnect != "bus":
        return []
    groups: dict = {}
    for c, core in enumerate(problem.arch.cores):
        groups.setdefault(core, []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def canonical_cores(problem: Problem, layer_core: tuple[int, ...]) -> tuple[int, ...]:
    """``layer_core`` with each group of interchangeable cores renamed in order of first use."""
    rename = {}
    for group in interchangeable_cores(problem):
        used = list(dict.fromkeys(c for c in layer_core if c in group))
        rename.update(zip(used, group))
    return tuple(rename.get(c, c) for c in layer_core)


def break_symmetry(model: cp_model.CpModel, x: list[list], groups: list[list[int]]) -> None:
    """Of interchangeable cores, a later one is first used by a later layer than an earlier one."""
    for group in groups:
        for c, d in zip(group, group[1:]):
            for li, row in enumerate(x):
                model.Add(row[d] <= sum(x[k][c] for k in range(li)))


def solve(
    problem: Problem,
    objective: str,
    time_limit_s: float = 10.0,
    workers: int = 1,
    seed: int = 0,
    gap_limit: float = 0.0,
) -> tuple[Schedule, dict]:
    """The best schedule CP-SAT finds within the limit (or once within ``gap_limit`` of its bound), and its
    facts (status, value, bound, gap, seconds)."""
    started = time.perf_counter()
    seed_limit = seed_stage_limit(problem, time_limit_s)
    hint = seed_schedule(problem, objective, seed_limit, workers, seed, gap_limit)
    limit = time_limit_s - seed_limit
    fallback = hint  # what is returned when CP-SAT finds nothing in time
    if objective == "throughput":
        # the period depends on the assignment alone: solved as an assignment problem, then the makespan
        # on the full model with the period fixed (a lexicographic optimum), from the best schedule known
        start, facts = period_schedule(
            problem, hint, period_stage_limit(problem, time_limit_s), workers, seed, gap_limit
        )
        best_period = period(problem, start.layer_core)
        built = _Model(problem, objective, start, upper=start.makespan)
        built.model.Add(built.primary <= best_period)
        solver, status = _run(built.model, built.makespan, limit * MAKESPAN_SHARE, workers, seed, gap_limit)
        facts["makespan_status"] = solver.StatusName(status)
        facts["start_score"] = [best_period, start.makespan]
        fallback = start
    elif objective == "edp":
        built = _Model(problem, objective, hint)
        # first the EDP alone, then the makespan with it fixed: a lexicographic optimum
        solver, status = _run(built.model, built.primary, limit * 0.7, workers, seed, gap_limit)
        facts = _facts(solver, status, built.primary)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            built.model.Add(built.primary <= int(solver.Value(built.primary)))
            built.hint_from(solver)
            solver2, status2 = _run(built.model, built.makespan, limit * 0.3, workers, seed, gap_limit)
            if status2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                solver, status = solver2, status2
                facts["makespan_status"] = solver.StatusName(status2)
    else:
        built = _Model(problem, objective, hint)
        solver, status = _run(built.model, built.primary, limit, workers, seed, gap_limit)
        facts = _facts(solver, status, built.primary)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        schedule = built.read(solver)
    else:  # nothing found in time: the hint, said so
        schedule = fallback
        facts["note"] = "no CP-SAT solution within the time limit; the hint schedule is returned"
    h = built.horizon
    greedy = round_robin(problem)
    facts.update(
        objective=objective,
        score=list(score(schedule, objective, h, built.energy_bound)),
        greedy_score=list(score(greedy, objective, h, built.energy_bound)),
        hint_score=list(score(hint, objective, h, built.energy_bound)),
        layers=len(problem.layers),
        tasks=len(problem.tasks),
        queued_edges=sum(e.queued for e in problem.edges),
        seconds=time.perf_counter() - started,
    )
    return schedule, facts


def seed_stage_limit(problem: Problem, time_limit_s: float) -> float:
    """The seed stage's share of the time limit: the layer-by-layer problem that seeds a fused one."""
    return SEED_SHARE * time_limit_s if problem.fusion else 0.0


def period_stage_limit(problem: Problem, time_limit_s: float) -> float:
    """The throughput objective's period stage: ``PERIOD_SHARE`` of what the seed stage leaves."""
    return (time_limit_s - seed_stage_limit(problem, time_limit_s)) * PERIOD_SHARE


def period_schedule(
    problem: Problem, hint: Schedule, limit_s: float, workers: int, seed: int, gap_limit: float = 0.0
) -> tuple[Schedule, dict]:
    """The throughput objective's first stage, and where its makespan stage starts: the least-period
    assignment (``solve_period``, from ``hint``'s) and the best schedule known at that period, its makespan
    shortened by the local search. The surrogates' closed form stops here."""
    assignment, facts = solve_period(problem, hint.layer_core, limit_s, workers, seed, gap_limit)
    best_period = min(period(problem, assignment), period(problem, hint.layer_core))
    known = (hint, list_schedule(problem, assignment))
    at_period = [s for s in known if period(problem, s.layer_core) <= best_period]
    return canonical(problem, shorter_makespan(problem, min(at_period, key=lambda s: s.makespan), best_period)), facts


def solve_period(
    problem: Problem, start: tuple[int, ...], limit_s: float, workers: int, seed: int, gap_limit: float = 0.0
) -> tuple[tuple[int, ...], dict]:
    """The assignment of least pipelined period (``schedule.core_loads``: rate-weighted core and DRAM busy
    cycles), hinted with ``start``: a small model (layers x cores booleans) that CP-SAT mostly proves
    optimal. Any assignment has a schedule, so this is the throughput objective's first term exactly."""
    m = cp_model.CpModel()
    cores = range(problem.num_cores)
    x = [[m.NewBoolVar(f"x{li}_{c}") for c in cores] for li in range(len(problem.layers))]
    for row in x:
        m.AddExactlyOne(row)
    break_symmetry(m, x, interchangeable_cores(problem))
    weights = layer_weights(problem)
    loads: list[list] = [[] for _ in range(problem.num_cores + 1)]
    for t in problem.tasks:
        for c in cores:
            loads[c].append(weights[t.layer] * problem.costs[t.index][c].cycles * x[t.layer][c])
            loads[-1].append(weights[t.layer] * dram_cycles(problem, t.index, c) * x[t.layer][c])
    upper = period(problem, start)
    target = m.NewIntVar(0, upper, "period")
    for load in loads:
        m.Add(target >= sum(load))
    for li, row in enumerate(x):
        for c, var in enumerate(row):
            m.AddHint(var, int(start[li] == c))
    solver, status = _run(m, target, limit_s, workers, seed, gap_limit)
    facts = _facts(solver, status, target)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return tuple(start), facts
    return tuple(next(c for c, v in enumerate(row) if solver.Value(v)) for row in x), facts


def _run(model: cp_model.CpModel, target, limit_s: float, workers: int, seed: int, gap_limit: float = 0.0):
    """Minimise ``target`` within a deterministic time limit (same inputs, same answer, however loaded the
    machine); the wall-clock limit is only a backstop far beyond it."""
    model.Minimize(target)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = max(0.01, float(limit_s))
    solver.parameters.max_time_in_seconds = wall_backstop_s(limit_s)
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.interleave_search = int(workers) > 1
    solver.parameters.random_seed = int(seed)
    solver.parameters.relative_gap_limit = float(gap_limit)
    status = solver.Solve(model)
    return solver, status


def _facts(solver: cp_model.CpSolver, status: int, target) -> dict:
    """Status, value, bound and gap; a solve stopped at the gap limit says FEASIBLE (CP-SAT says OPTIMAL)."""
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    value = float(solver.ObjectiveValue()) if found else float("nan")
    bound = float(solver.BestObjectiveBound()) if found else float("nan")
    gap = max(0.0, (value - bound) / max(abs(value), 1.0)) if found else 1.0
    name = "FEASIBLE" if status == cp_model.OPTIMAL and gap > 0 else solver.StatusName(status)
    return {"status": name, "value": value, "bound": bound, "gap": gap, "limit_hit": name != "OPTIMAL"}


class _Model:
    """The CP-SAT model of one problem and objective, hinted with (and, for latency, bounded by) ``hint``."""

    def __init__(self, problem: Problem, objective: str, hint: Schedule, upper: int | None = None):
        self.problem = p = problem
        self.model = m = cp_model.CpModel()
        cores = range(p.num_cores)
        self.horizon = horizon(p)
        self.energy_bound = energy_bound(p, self.horizon)
        if upper is None:  # no better schedule is longer than the hint (latency)
            upper = hint.makespan if objective == "latency" else self.horizon
        h = upper
        head, tail = path_bounds(p)
        self.x = [[m.NewBoolVar(f"x{li}_{c}") for c in cores] for li in range(len(p.layers))]
        for row in self.x:
            m.AddExactlyOne(row)
        break_symmetry(m, self.x, interchangeable_cores(p))
        self.makespan = m.NewIntVar(0, h, "makespan")
        self.start, self.end = [], []
        on_core: list[list] = [[] for _ in cores]
        self.dram_iv, self.dram_demand, self.dram_work = [], [], []
        self.link_work: dict[str, list] = {}
        for t in p.tasks:
            x = self.x[t.layer]
            dur = [p.costs[t.index][c].cycles for c in cores]
            start = m.NewIntVar(head[t.index], max(head[t.index], h - tail[t.index] - min(dur)), f"s{t.index}")
            end = m.NewIntVar(0, h, f"e{t.index}")
            m.Add(end == start + sum(d * x[c] for c, d in enumerate(dur)))
            m.Add(self.makespan >= end + tail[t.index])
            self.start.append(start)
            self.end.append(end)
            for c in cores:
                iv = m.NewOptionalFixedSizeIntervalVar(start, dur[c], x[c], f"i{t.index}_{c}")
                on_core[c].append(iv)
                demand = p.costs[t.index][c].dram_demand
                if demand:
                    self.dram_iv.append(iv)
                    self.dram_demand.append(demand)
                    self.dram_work.append(demand * dur[c] * x[c])
        for ivs in on_core:
            m.AddNoOverlap(ivs)
        for a, b in zip(p.tasks, p.tasks[1:]):  # tiles of one layer in order
            if a.layer == b.layer:
                m.Add(self.start[b.index] >= self.end[a.index])
        self._load_windows()
        self.y = {}
        for lp, lq in p.layer_edges():
            y = [[m.NewBoolVar(f"y{lp}_{lq}_{a}_{b}") for b in cores] for a in cores]
            for a in cores:
                m.Add(sum(y[a]) == self.x[lp][a])
            for b in cores:
                m.Add(sum(y[a][b] for a in cores) == self.x[lq][b])
            self.y[(lp, lq)] = y
        self.links: dict[str, list] = {}
        self.edge_start: dict[int, cp_model.IntVar] = {}
        edge_energy = []
        for i, e in enumerate(p.edges):
            y = self.y[(p.tasks[e.src].layer, p.tasks[e.dst].layer)]
            acts = {(a, b): p.activity(e, a, b) for a in cores for b in cores}
            edge_energy += [round(acts[a, b].energy_pj) * y[a][b] for a in cores for b in cores]
            if e.queued:
                self._queued_edge(i, y, acts, h)
            else:
                lag = sum(acts[a, b].lag * y[a][b] for a in cores for b in cores)
                m.Add(self.start[e.dst] >= self.end[e.src] + lag)
        for ivs in self.links.values():
            m.AddNoOverlap(ivs)
        for name in self.links:  # redundant: a link's load bounds the makespan
            m.Add(self.makespan >= sum(self.link_work[name]))
        if self.dram_iv:
            capacity = DEMAND_UNITS * p.arch.dram_channels
            m.AddCumulative(self.dram_iv, self.dram_demand, capacity)
            m.Add(capacity * self.makespan >= sum(self.dram_work))  # redundant: the DRAM's work
        self.primary = self._objective(objective, edge_energy)
        self._hint(hint)

    def _load_windows(self) -> None:
        """Redundant cuts: every task of a layer's descendants runs after the layer's first tile starts, and
        every task of its ancestors ends before its last tile ends, so on each core the makespan exceeds the
        layer's first start plus the load its descendants (and itself) put there, and its last end exceeds
        the load of its ancestors (and itself). Without a layer: each core's whole load."""
        p, m = self.problem, self.model
        n = len(p.layers)
        load = [[sum(p.costs[t.index][c].cycles for t in p.tasks if t.layer == li) for c in range(p.num_cores)]
                for li in range(n)]  # fmt: skip
        first = {t.layer: t.index for t in reversed(p.tasks)}
        last = {t.layer: t.index for t in p.tasks}
        below: list[set[int]] = [{li} for li in range(n)]
        for lp, lq in sorted(p.layer_edges(), reverse=True):  # layers are numbered in a topological order
            below[lp] |= below[lq]
        above: list[set[int]] = [{li} for li in range(n)]
        for lp, lq in sorted(p.layer_edges()):
            above[lq] |= above[lp]
        for c in range(p.num_cores):
            m.Add(self.makespan >= sum(load[li][c] * self.x[li][c] for li in range(n)))
            for li in range(n):
                if len(below[li]) > 1 and li:
                    m.Add(self.makespan >= self.start[first[li]] + sum(load[q][c] * self.x[q][c] for q in below[li]))
                if len(above[li]) > 1 and li < n - 1:
                    m.Add(self.end[last[li]] >= sum(load[q][c] * self.x[q][c] for q in above[li]))

    def _queued_edge(self, i: int, y: list, acts: dict, h: int) -> None:
        """An edge whose transfer or read-back is scheduled on its resources (module docstring)."""
        p, m, cores = self.problem, self.model, range(self.problem.num_cores)
        e = p.edges[i]
        lp = p.tasks[e.src].layer
        s = m.NewIntVar(0, h, f"t{i}")
        m.Add(s >= self.end[e.src])
        self.edge_start[i] = s
        spilled = [a for a in cores if acts[a, a].kind == "dram"]
        readback = max((acts[a, b].cycles for a in spilled for b in cores), default=0)  # one value: same channels
        serial = max((acts[a, b].cycles for (a, b), act in acts.items() if act.kind == "noc"), default=0)
        occupied = []
        if spilled and readback:
            r = m.NewBoolVar(f"r{i}")
            m.Add(r == sum(self.x[lp][a] for a in spilled))
            self.dram_iv.append(m.NewOptionalFixedSizeIntervalVar(s, readback, r, f"rb{i}"))
            self.dram_demand.append(DEMAND_UNITS)
            self.dram_work.append(DEMAND_UNITS * readback * r)
            occupied.append(readback * r)
        if serial:
            pairs = [(a, b) for (a, b), act in acts.items() if act.kind == "noc"]
            moving = m.NewBoolVar(f"n{i}")
            m.Add(moving == sum(y[a][b] for a, b in pairs))
            occupied.append(serial * moving)
            ports: dict[str, list] = {}
            for a, b in pairs:
                for name in acts[a, b].resources:
                    ports.setdefault(name, []).append(y[a][b])
            for name, uses in ports.items():
                held = moving if len(uses) == len(pairs) else m.NewBoolVar(f"n{i}_{name}")
                if held is not moving:
                    m.Add(held == sum(uses))
                self.links.setdefault(name, []).append(
                    m.NewOptionalFixedSizeIntervalVar(s, serial, held, f"l{i}{name}")
                )
                self.link_work.setdefault(name, []).append(serial * held)
        hops = sum(acts[a, b].after * y[a][b] for a in cores for b in cores)
        m.Add(self.start[e.dst] >= s + sum(occupied) + hops)

    def _objective(self, objective: str, edge_energy: list):
        p, m, cores = self.problem, self.model, range(self.problem.num_cores)
        if objective == "latency":
            return self.makespan
        if objective == "throughput":
            weights = layer_weights(p)
            loads = [[] for _ in range(p.num_cores + 1)]
            for t in p.tasks:
                w, x = weights[t.layer], self.x[t.layer]
                for c in cores:
                    loads[c].append(w * p.costs[t.index][c].cycles * x[c])
                    loads[-1].append(w * dram_cycles(p, t.index, c) * x[c])
            top = max(weights) * self.horizon * (len(p.tasks) + 1)
            period = m.NewIntVar(0, top, "period")
            for load in loads:
                m.Add(period >= sum(load))
            return period
        tasks = [round(p.costs[t.index][c].energy_total_pj) * self.x[t.layer][c] for t in p.tasks for c in cores]
        energy = m.NewIntVar(0, self.energy_bound, "energy")
        m.Add(energy == sum(tasks) + sum(edge_energy) + leakage_per_cycle(p) * self.makespan)
        if objective == "energy":
            return energy
        s_e, s_h = edp_scales(p, self.horizon, self.energy_bound)
        e_q = m.NewIntVar(0, self.energy_bound // s_e, "energy_q")
        m_q = m.NewIntVar(0, self.horizon // s_h, "makespan_q")
        m.AddDivisionEquality(e_q, energy, s_e)
        m.AddDivisionEquality(m_q, self.makespan, s_h)
        edp = m.NewIntVar(0, (self.energy_bound // s_e) * (self.horizon // s_h), "edp")
        m.AddMultiplicationEquality(edp, [e_q, m_q])
        return edp

    def _hint(self, schedule: Schedule) -> None:
        for li, row in enumerate(self.x):
            for c, var in enumerate(row):
                self.model.AddHint(var, int(schedule.layer_core[li] == c))
        for t, var in enumerate(self.start):
            self.model.AddHint(var, schedule.start[t])
        for i, var in self.edge_start.items():
            self.model.AddHint(var, schedule.edge_start[i])

    def hint_from(self, solver: cp_model.CpSolver) -> None:
        self.model.ClearHints()
        self._hint(self.read(solver))

    def read(self, solver: cp_model.CpSolver) -> Schedule:
        layer_core = tuple(next(c for c, v in enumerate(row) if solver.Value(v)) for row in self.x)
        start = tuple(int(solver.Value(s)) for s in self.start)
        edge_start = tuple(
            int(solver.Value(self.edge_start[i] if i in self.edge_start else self.end[e.src]))
            for i, e in enumerate(self.problem.edges)
        )
        return Schedule(self.problem, layer_core, start, edge_start)
