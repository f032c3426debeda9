"""The network-level CP-SAT scheduler: tiles, operator order, residency and scratchpad addresses at once.

One OR-Tools CP-SAT model over the whole graph (any DAG: residual adds, concatenations, attention):

* ``x[u, c]`` — exactly one tile candidate ``c`` (``mappers.systolic.tiling``) per unit ``u``;
* ``pos[u]`` — the unit's slot in the execution order, all different, after its producers (domains
  cut to [ancestors, n - 1 - descendants], so a chain has no freedom left to search);
* ``r[t]`` — tensor ``t`` stays resident in the resident scratchpad (the ifmap SRAM of a split
  systolic arch, the one scratchpad of a unified arch) from its producer (or, for a graph input, its
  first consumer) to its last consumer; otherwise it spills to DRAM and reloads;
* addresses — every resident tensor and every unit's staging tiles get an offset; rectangles
  (time x address) of one scratchpad never overlap (``AddNoOverlap2D``) and stay under its
  capacity, with a redundant ``AddCumulative`` on the same intervals to strengthen the bound;
* the objective — DRAM bytes, latency (per unit max(compute, memory), summed) or energy: a unit's
  score depends on its candidate and on the residency of its operands, encoded per residency mode.

The greedy schedule (no residency) is the solver's hint, so a FEASIBLE answer is never worse than
greedy. Per slot, cardinality cuts say how many of the tensors that may be live there fit together,
and the slot model is solved without CP-SAT's presolve (see ``solve``): together they prove the
latency optimum on ResNet-50 in tenths of a second where the plain model stalled at a 2 % gap.
Solved schedules are cached per (graph, tiling target, prices, limits): an explorer that
revisits an arch's scratchpad sizes pays the solve once.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from dse.graph import Graph
from mappers.base import Mapping, MappingError, wall_backstop_s
from mappers.systolic.greedy import greedy_schedule
from mappers.systolic.objective import OBJECTIVES, mode_traffic
from mappers.systolic.problem import Problem, Schedule, build_problem, schedule_score, to_mapping, topological_bounds
from mappers.systolic.tiling import pareto_front
from templates.systolic import SystolicArch

_SCHEDULE_CACHE_SIZE = 256
MAX_LIMIT_S = 86_400.0  # a day: any longer limit is a typo, and CP-SAT would be left to run unbounded
_schedule_cache: OrderedDict[tuple, Schedule] = OrderedDict()


@dataclass
class CpSatMapper:
    """Optimal (or bounded-gap) whole-network schedule on a systolic arch, by CP-SAT."""

    name: str = "cpsat"
    objective: str = "dram"
    time_limit_s: float = 10.0  # CP-SAT deterministic time per point (reproducible: same spec, same schedule)
    workers: int = 1  # one CP-SAT worker: deterministic and, measured, fastest on these models
    use_cache: bool = True
    wall_time_limit_s: float = 0.0  # wall-clock backstop per point; 0: mappers.base.wall_backstop_s
    double_buffer: bool = True  # False: single-buffered tiles (twice the tile in the same SRAM, no overlap)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")
        for name, value in (("time_limit_s", self.time_limit_s), ("wall_time_limit_s", self.wall_time_limit_s or 1)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_LIMIT_S:
                raise MappingError(f"{name} must be a number of seconds in (0, {MAX_LIMIT_S:g}], got {value!r}")

    def map(self, graph: Graph, arch: SystolicArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective, self.double_buffer)
        limits = (self.time_limit_s, self.wall_time_limit_s)
        shares = tuple(c.array_sram_share for c in problem.cands)
        key = (graph_fingerprint(problem.graph), problem.target, problem.model, shares, limits, self.workers)
        schedule = _schedule_cache.get(key) if self.use_cache else None
        if schedule is None:
            schedule = solve(problem, self.time_limit_s, self.workers, self.wall_time_limit_s or None)
            if self.use_cache:
                _schedule_cache[key] = schedule
                while len(_schedule_cache) > _SCHEDULE_CACHE_SIZE:
                    _schedule_cache.popitem(last=False)
        else:
            _schedule_cache.move_to_end(key)
            schedule = Schedule(**{**schedule.__dict__, "info": {**schedule.info, "cached": True}})
        return to_mapping(problem, schedule, self.name)


def clear_schedule_cache() -> None:
    """Forget solved schedules (for timing the solver)."""
    _schedule_cache.clear()


def graph_fingerprint(graph: Graph) -> tuple:
    """What a schedule depends on in a graph: its ops (shape, wiring) and tensor sizes and kinds."""
    return _fingerprint(
        tuple((op.name, op.shape_key(), op.inputs, op.outputs, op.weights) for op in graph.ops),
        tuple(sorted((n, t.shape, t.kind) for n, t in graph.tensors.items())),
    )


@functools.lru_cache(maxsize=64)
def _fingerprint(ops: tuple, tensors: tuple) -> int:
    return hash((ops, tensors))


def solve(
    problem: Problem, time_limit_s: float = 10.0, workers: int = 1, wall_time_limit_s: float | None = None
) -> Schedule:
    """Solve ``problem``; the schedule's info says OPTIMAL or FEASIBLE, with the objective, the proven
    bound and the relative gap (FEASIBLE: a limit stopped the search; ``limit_hit`` says so). ``time_limit_s``
    is CP-SAT's deterministic time, ``wall_time_limit_s`` (default ``wall_backstop_s``: far past it) a backstop.

    Two stages keep it exact and fast. The slot model decides order, tiles and residency under the
    capacity of every time slot (a relaxation of address packing: live bytes <= capacity); then the
    addresses are packed with those lifetimes fixed (``AddNoOverlap2D``). When the packing succeeds the
    slot model's answer is optimal for the whole problem; when fragmentation defeats it, the full model
    (positions, residency, tiles and addresses together) is solved, hinted with the slot answer.
    """
    started = time.perf_counter()
    try:
        hint = greedy_schedule(problem)
    except MappingError:
        hint = None  # some unit fits only with residency: no residency-free schedule to start from
    wall_s = wall_backstop_s(time_limit_s) if wall_time_limit_s is None else float(wall_time_limit_s)
    slot = _SlotModel(problem, hint)
    solver = _solver(time_limit_s, workers, wall_s)
    # CP-SAT's presolve rewrites the one-option-per-unit objective through the residency equalities and
    # loses the per-unit floors; without it ResNet-50's latency model proves OPTIMAL in 0.2 s instead of
    # stalling at a 2 % gap after 30 s (benchmarks/cpsat_bench.py), and no benchmark model gets slower
    # than 1 s on ResNet-50
    solver.parameters.cp_model_presolve = False
    status = solver.Solve(slot.model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        schedule = slot.extract(solver)
        if problem.model.objective in ("dram", "latency"):
            schedule = _break_ties(problem, schedule)
        left = max(0.5, time_limit_s - (time.perf_counter() - started))
        if place_addresses(problem, schedule, left, workers, max(0.05, wall_s - (time.perf_counter() - started))):
            schedule.info = _facts(solver, status, started, "slots")
            return schedule
        full = _Model(problem, schedule)
        solver = _solver(left, workers, max(0.05, wall_s - (time.perf_counter() - started)))
        status = solver.Solve(full.model)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            schedule = full.extract(solver)
            schedule.info = _facts(solver, status, started, "full")
            return schedule
    if status == cp_model.INFEASIBLE:
        raise MappingError(_infeasible_reason(problem), node=_worst_unit(problem))
    name = solver.StatusName(status)
    if hint is not None:  # time limit hit before any solution: report greedy with the bound
        hint.info = {
            "status": "FEASIBLE",
            "value": float(hint.score),
            "bound": float(solver.BestObjectiveBound()),
            "gap": max(0.0, (hint.score - solver.BestObjectiveBound()) / max(abs(hint.score), 1.0)),
            "limit_hit": True,
            "seconds": time.perf_counter() - started,
            "note": f"CP-SAT found no solution in {time_limit_s:g} s ({name}); greedy schedule returned",
        }
        return hint
    raise MappingError(
        f"CP-SAT found no schedule of {problem.graph.name!r} in {time_limit_s:g} s ({name}); raise the time limit"
    )


def _break_ties(problem: Problem, schedule: Schedule) -> Schedule:
    """Tie-break of the DRAM and latency objectives: with the order and residency fixed, each unit
    takes, among the tiles that score no worse and still fit its slot, the one with the fewest compute
    cycles (DRAM objective) or the fewest DRAM bytes (latency objective: a compute-bound op's latency
    does not see its traffic).

    Separable per unit once residency is fixed, so exact for that residency and instant; without it
    any tile of equal score would do, however slowly it runs or however much it moves.
    """
    position = {u: i for i, u in enumerate(schedule.order)}
    room = problem.slot_room(schedule.order, schedule.resident)
    choice = list(schedule.choice)
    for u, cands in enumerate(problem.cands):
        mode = problem.mode_of(u, schedule.resident)
        cost = cands.costs(problem.target, problem.model, mode, problem.output_write_bytes(u))
        staged = cands.staging(problem.target, mode)
        if problem.model.objective == "dram":
            second = cands.cycles
        else:
            second = mode_traffic(cands.traffic, cands.psum_reads, cands.roles, mode, problem.output_write_bytes(u))
        now = choice[u]
        allowed = np.flatnonzero((cost <= cost[now]) & (staged <= room[position[u]]))
        best = allowed[np.lexsort((cost[allowed], second[allowed]))][0]
        if second[best] < second[now]:
            choice[u] = int(best)
    score = schedule_score(problem, schedule.order, choice, schedule.resident)
    return Schedule(schedule.order, choice, schedule.resident, {}, {}, score=score)


def _solver(time_limit_s: float, workers: int, wall_time_limit_s: float | None = None) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    # Deterministic: same spec + seed, same schedule (ties included). The limit is CP-SAT's deterministic
    # time and the workers are interleaved deterministically; wall-clock time is only a backstop.
    solver.parameters.max_deterministic_time = float(time_limit_s)
    wall = wall_backstop_s(time_limit_s) if wall_time_limit_s is None else float(wall_time_limit_s)
    solver.parameters.max_time_in_seconds = wall
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.interleave_search = int(workers) > 1
    solver.parameters.random_seed = 0
    return solver


def _facts(solver: cp_model.CpSolver, status: int, started: float, model: str) -> dict:
    bound = float(solver.BestObjectiveBound())
    value = float(solver.ObjectiveValue())
    gap = 0.0 if status == cp_model.OPTIMAL else max(0.0, (value - bound) / max(abs(value), 1.0))
    return {
        "status": solver.StatusName(status),
        "value": value,
        "bound": bound,
        "gap": gap,
        "limit_hit": status != cp_model.OPTIMAL,
        "seconds": time.perf_counter() - started,
        "model": model,
    }


def place_addresses(
    problem: Problem,
    schedule: Schedule,
    time_limit_s: float = 5.0,
    workers: int = 1,
    wall_time_limit_s: float | None = None,
) -> bool:
    """Give every resident tensor and staging block of the resident scratchpad an offset, lifetimes fixed.

    First fit, longest-lived first; if that overflows, an exact CP-SAT packing (``AddNoOverlap2D`` with
    fixed time intervals). Sets the schedule's offsets and returns True, or False when nothing fits.
    """
    cap = problem.capacity
    blocks = _blocks(problem, schedule)
    offsets = _first_fit(blocks, cap)
    if offsets is None:
        m = cp_model.CpModel()
        x_iv, y_iv, vars_ = [], [], []
        for i, (_, size, start, end) in enumerate(blocks):
            off = m.NewIntVar(0, cap - size, f"off{i}")
            x_iv.append(m.NewFixedSizeIntervalVar(start, end - start + 1, f"x{i}"))
            y_iv.append(m.NewFixedSizeIntervalVar(off, size, f"y{i}"))
            vars_.append(off)
        m.AddNoOverlap2D(x_iv, y_iv)
        solver = _solver(time_limit_s, workers, wall_time_limit_s)
        if solver.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return False
        offsets = [int(solver.Value(v)) for v in vars_]
    schedule.resident_offset = {}
    schedule.staging_offset = {}
    for (key, _, _, _), off in zip(blocks, offsets):
        if isinstance(key, str):
            schedule.resident_offset[key] = off
        else:
            schedule.staging_offset[key] = off
    return True


def _blocks(problem: Problem, schedule: Schedule) -> list[tuple[str | int, int, int, int]]:
    """(tensor name or unit index, bytes, first slot, last slot) of everything in the resident scratchpad."""
    position = {u: i for i, u in enumerate(schedule.order)}
    blocks: list[tuple[str | int, int, int, int]] = []
    for t in sorted(schedule.resident):
        start, end = problem.lifetime(t, position)
        blocks.append((t, problem.eligible[t], start, end))
    for u in schedule.order:
        mode = problem.mode_of(u, schedule.resident)
        size = int(problem.cands[u].staging(problem.target, mode)[schedule.choice[u]])
        if size:
            blocks.append((u, size, position[u], position[u]))
    return blocks


def _first_fit(blocks: list[tuple[str | int, int, int, int]], cap: int) -> list[int] | None:
    """Lowest free offset per block, longest-lived and largest first; None when one overflows."""
    order = sorted(range(len(blocks)), key=lambda i: (-(blocks[i][3] - blocks[i][2]), -blocks[i][1], blocks[i][2]))
    placed: list[tuple[int, int, int, int]] = []  # offset, size, start, end
    offsets = [0] * len(blocks)
    for i in order:
        _, size, start, end = blocks[i]
        busy = sorted((o, o + s) for o, s, a, b in placed if a <= end and start <= b)
        at = 0
        for lo, hi in busy:
            if at + size <= lo:
                break
            at = max(at, hi)
        if at + size > cap:
            return None
        offsets[i] = at
        placed.append((at, size, start, end))
    return offsets


class _SlotModel:
    """Order, tiles and residency with a capacity constraint per time slot (all linear).

    Per unit and residency mode only that mode's (staging, score) Pareto points are offered, as
    booleans ``y``; the modes of a unit are tied to the residency literals by linear equalities, which
    is the convex hull of the disjunction (a tight LP, unlike big-M). A unit whose slot the DAG leaves
    open gets one boolean per possible slot.
    """

    def __init__(self, problem: Problem, hint: Schedule | None):
        self.p = problem
        m = self.model = cp_model.CpModel()
        n = len(problem.units)
        cap = problem.capacity
        self.lo, self.hi = topological_bounds(problem)
        self.at: dict[tuple[int, int], cp_model.IntVar] = {}
        for u in range(n):
            if self.lo[u] < self.hi[u]:
                lits = [m.NewBoolVar(f"at{u}_{q}") for q in range(self.lo[u], self.hi[u] + 1)]
                m.AddExactlyOne(lits)
                for q, lit in zip(range(self.lo[u], self.hi[u] + 1), lits):
                    self.at[u, q] = lit
        for q in range(n):
            fixed = sum(1 for u in range(n) if self.lo[u] == self.hi[u] == q)
            free = [self.at[u, q] for u in range(n) if (u, q) in self.at]
            if free:
                m.Add(sum(free) == 1 - fixed)
        for u in range(n):
            for p in problem.preds[u]:
                if (self.lo[u] < self.hi[u]) or (self.lo[p] < self.hi[p]):
                    m.Add(self._pos(p) + 1 <= self._pos(u))
        self.res = {t: m.NewBoolVar(f"res[{t}]") for t in problem.eligible}

        self.y: list[list[tuple[cp_model.IntVar, int]]] = []  # per unit: (literal, candidate)
        objective = []
        staging = []
        for u, cands in enumerate(problem.cands):
            free = problem.free_operands(u)
            tensors = problem.operand_tensors(u)
            options: list[tuple[cp_model.IntVar, int]] = []
            by_operand: dict[int, list[cp_model.IntVar]] = {j: [] for j in free}
            cost_terms, stage_terms = [], []
            for bits in itertools.product((False, True), repeat=len(free)):
                chosen = dict(zip(free, bits))
                if any(chosen[i] != chosen[j] for i in free for j in free if tensors[i] == tensors[j]):
                    continue  # one tensor read twice is resident for both reads or neither
                flags = tuple(chosen.get(j, False) for j in range(len(tensors)))
                cost = cands.costs(problem.target, problem.model, flags, problem.output_write_bytes(u))
                staged = cands.staging(problem.target, flags)
                for c in pareto_front(staged, cost):
                    if staged[c] > cap:
                        continue
                    lit = m.NewBoolVar(f"y{u}_{len(options)}")
                    options.append((lit, int(c)))
                    cost_terms.append((lit, int(cost[c])))
                    stage_terms.append((lit, int(staged[c])))
                    for j, b in chosen.items():
                        if b:
                            by_operand[j].append(lit)
            m.AddExactlyOne([lit for lit, _ in options])
            for j, lits in by_operand.items():
                m.Add(sum(lits) == self.res[tensors[j]])
            self.y.append(options)
            # exactly one option: its cheapest cost is a constant and the rest a non-negative excess, so the
            # per-unit floors are part of the bound from the start (GPT-2 decode's latency proofs: ~2x faster)
            floor = min((w for _, w in cost_terms), default=0)
            objective.append(floor)
            objective.append(
                cp_model.LinearExpr.WeightedSum([v for v, _ in cost_terms], [w - floor for _, w in cost_terms])
            )
            staging.append((stage_terms, max((w for _, w in stage_terms), default=0)))
        for t in problem.eligible:
            load = problem.input_load_cost(t)
            if load:
                objective.append(load * self.res[t])

        for q in range(n):
            terms = []
            lives: list[tuple[int, cp_model.LinearExprT]] = []
            for t, size in problem.eligible.items():
                live = self._live(t, q)
                if live is not None:
                    terms.append(size * live)
                    lives.append((size, live))
            least_staged = sum(
                min((w for _, w in staging[u][0]), default=0) for u in range(n) if self.lo[u] == self.hi[u] == q
            )
            self._cover_cuts(lives, cap - least_staged)
            for u in range(n):
                if not (self.lo[u] <= q <= self.hi[u]):
                    continue
                stage_terms, top = staging[u]
                if top == 0:
                    continue
                expr = cp_model.LinearExpr.WeightedSum([v for v, _ in stage_terms], [w for _, w in stage_terms])
                if self.lo[u] == self.hi[u]:
                    terms.append(expr)
                else:
                    here = m.NewIntVar(0, top, f"stage{u}_{q}")
                    m.Add(here >= expr - top * (1 - self.at[u, q]))
                    terms.append(here)
            if terms:
                m.Add(sum(terms) <= cap)
        m.Minimize(sum(objective))
        if hint is not None:
            self._hint(hint)

    def _cover_cuts(self, lives: list[tuple[int, cp_model.LinearExprT]], room: int) -> None:
        """Cardinality cuts on the tensors that may be live in one slot: the LP of ``sum(size * live) <=
        room`` lets fractions of large tensors through (two 0.8-room tensors count as 1.6 of 2), so add
        that at most one tensor larger than half the room fits, and at most K of them all fit, K the
        most of the smallest sizes that fit together. Valid for every schedule; they close the bound
        where a few large activations compete for one slot (ResNet's residual adds)."""
        if len(lives) < 2:
            return
        big = [live for size, live in lives if 2 * size > room]
        if len(big) > 1:
            self.model.Add(sum(big) <= 1)
        fits, used = 0, 0
        for size in sorted(size for size, _ in lives):
            if used + size > room:
                break
            used += size
            fits += 1
        if fits < len(lives) and fits > 1:
            self.model.Add(sum(live for _, live in lives) <= fits)

    def _pos(self, u: int):
        if self.lo[u] == self.hi[u]:
            return self.lo[u]
        return sum(q * self.at[u, q] for q in range(self.lo[u], self.hi[u] + 1))

    def _before(self, u: int, q: int):
        """1 if unit u runs at or before slot q (a constant where the DAG decides it)."""
        if self.hi[u] <= q:
            return 1
        if self.lo[u] > q:
            return 0
        return sum(self.at[u, r] for r in range(self.lo[u], q + 1))

    def _after(self, u: int, q: int):
        if self.lo[u] >= q:
            return 1
        if self.hi[u] < q:
            return 0
        return sum(self.at[u, r] for r in range(q, self.hi[u] + 1))

    def _live(self, t: str, q: int):
        """An expression that is 1 when resident tensor t occupies slot q, or None if it never can."""
        p = self.p
        starters = [p.producer[t]] if t in p.producer else p.consumers[t]
        began = [self._before(s, q) for s in starters]
        going = [self._after(c, q) for c in p.consumers[t]]
        began = [b for b in began if not (isinstance(b, int) and b == 0)]
        going = [g for g in going if not (isinstance(g, int) and g == 0)]
        if not began or not going:
            return None
        if any(isinstance(b, int) for b in began) and any(isinstance(g, int) for g in going):
            return self.res[t]
        live = self.model.NewBoolVar(f"live[{t}]{q}")
        for b in began:
            for g in going:
                self.model.Add(live >= self.res[t] + b + g - 2)
        return live

    def _hint(self, hint: Schedule) -> None:
        m, p = self.model, self.p
        for i, u in enumerate(hint.order):
            for q in range(self.lo[u], self.hi[u] + 1):
                if (u, q) in self.at:
                    m.AddHint(self.at[u, q], int(q == i))
        for t, var in self.res.items():
            m.AddHint(var, int(t in hint.resident))
        for u, options in enumerate(self.y):
            mode = p.mode_of(u, hint.resident)
            cands = p.cands[u]
            staged = cands.staging(p.target, mode)
            cost = cands.costs(p.target, p.model, mode, p.output_write_bytes(u))
            limit = staged[hint.choice[u]]
            usable = [k for k, (_, c) in enumerate(options) if staged[c] <= limit and p.mode_of(u, hint.resident)]
            best = min(usable, key=lambda k: cost[options[k][1]], default=None)
            for k, (lit, _) in enumerate(options):
                m.AddHint(lit, int(k == best))

    def extract(self, solver: cp_model.CpSolver) -> Schedule:
        p = self.p
        choice = [next(c for lit, c in options if solver.Value(lit)) for options in self.y]
        pos = {
            u: self.lo[u]
            if self.lo[u] == self.hi[u]
            else next(q for (v, q), lit in self.at.items() if v == u and solver.Value(lit))
            for u in range(len(p.units))
        }
        order = sorted(pos, key=pos.get)
        resident = frozenset(t for t, var in self.res.items() if solver.Value(var))
        return Schedule(order, choice, resident, {}, {}, score=schedule_score(p, order, choice, resident))


def _worst_unit(problem: Problem) -> str | None:
    cap = problem.capacity
    for u, cands in enumerate(problem.cands):
        if int(cands.staging(problem.target, problem.mode_of(u, frozenset())).min()) > cap:
            return problem.units[u].name
    return None


def _infeasible_reason(problem: Problem) -> str:
    node = _worst_unit(problem)
    memory = problem.target.resident_memory
    if node is None:
        return f"no schedule of {problem.graph.name!r} fits {memory} ({problem.capacity} bytes)"
    u = [unit.name for unit in problem.units].index(node)
    need = int(problem.cands[u].staging(problem.target, problem.mode_of(u, frozenset())).min())
    return (
        f"op {node!r}: its smallest tile stages {need} bytes in {memory} ({problem.capacity} bytes) unless its "
        f"inputs stay resident, and no residency schedule makes room for them"
    )


class _Model:
    """The full model: positions as integers, residency, tiles (``x``) and addresses together, time x
    address rectangles under ``AddNoOverlap2D``. Used when the slot model's answer cannot be packed."""

    def __init__(self, problem: Problem, hint: Schedule | None):
        self.p = problem
        m = self.model = cp_model.CpModel()
        n = len(problem.units)
        cap = problem.capacity
        lo, hi = topological_bounds(problem)
        self.pos = [m.NewIntVar(lo[u], hi[u], f"pos{u}") for u in range(n)]
        if any(a < b for a, b in zip(lo, hi)):
            m.AddAllDifferent(self.pos)
            for u in range(n):
                for p in problem.preds[u]:
                    m.Add(self.pos[p] < self.pos[u])
        self.res = {t: m.NewBoolVar(f"res[{t}]") for t in problem.eligible}
        self.x = []
        for u, cands in enumerate(problem.cands):
            xs = [m.NewBoolVar(f"x{u}_{c}") for c in range(len(cands))]
            m.AddExactlyOne(xs)
            self.x.append(xs)

        x_iv, y_iv, demands = [], [], []
        self.res_off: dict[str, cp_model.IntVar] = {}
        for t, size in problem.eligible.items():
            users = problem.consumers[t]
            if t in problem.producer:
                start = self.pos[problem.producer[t]]
            elif len(users) == 1:
                start = self.pos[users[0]]
            else:
                start = m.NewIntVar(0, n - 1, f"first[{t}]")
                m.AddMinEquality(start, [self.pos[c] for c in users])
            if len(users) == 1:
                last = self.pos[users[0]]
            else:
                last = m.NewIntVar(0, n - 1, f"last[{t}]")
                m.AddMaxEquality(last, [self.pos[c] for c in users])
            duration = m.NewIntVar(1, n, f"life[{t}]")
            x_iv.append(m.NewOptionalIntervalVar(start, duration, last + 1, self.res[t], f"xr[{t}]"))
            off = m.NewIntVar(0, cap - size, f"off[{t}]")
            y_iv.append(m.NewOptionalFixedSizeIntervalVar(off, size, self.res[t], f"yr[{t}]"))
            demands.append(size)
            self.res_off[t] = off

        objective = []
        self.stage_off: dict[int, cp_model.IntVar] = {}
        for u, cands in enumerate(problem.cands):
            free = problem.free_operands(u)
            tensors = problem.operand_tensors(u)
            modes = []
            for bits in itertools.product((False, True), repeat=len(free)):
                flags = [False] * len(tensors)
                for j, b in zip(free, bits):
                    flags[j] = b
                flags_t = tuple(flags)
                lits = [self.res[tensors[j]] if b else self.res[tensors[j]].Not() for j, b in zip(free, bits)]
                cost = cands.costs(problem.target, problem.model, flags_t, problem.output_write_bytes(u))
                staged = cands.staging(problem.target, flags_t)
                modes.append((lits, cost, staged))
            objective.append(self._unit_cost(u, modes))
            size = self._staging_size(u, modes)
            if size is None:
                continue
            off = m.NewIntVar(0, cap, f"soff{u}")
            end = m.NewIntVar(0, cap, f"send{u}")
            x_iv.append(m.NewFixedSizeIntervalVar(self.pos[u], 1, f"xs{u}"))
            y_iv.append(m.NewIntervalVar(off, size, end, f"ys{u}"))
            demands.append(size)
            self.stage_off[u] = off
        if x_iv:
            m.AddNoOverlap2D(x_iv, y_iv)
            m.AddCumulative(x_iv, demands, cap)
        for t in problem.eligible:
            load = problem.input_load_cost(t)
            if load:
                objective.append(load * self.res[t])
        m.Minimize(sum(objective))
        if hint is not None:
            self._hint(hint)

    def _unit_cost(self, u: int, modes: list) -> cp_model.LinearExprT:
        m, xs = self.model, self.x[u]
        costs = [cost for _, cost, _ in modes]
        if len(xs) == 1 and len(modes) == 1:
            return int(costs[0][0])
        lo = int(min(c.min() for c in costs))
        hi = int(max(c.max() for c in costs))
        var = m.NewIntVar(lo, hi, f"cost{u}")
        # the cheapest mode of each candidate bounds the cost whatever the residency (a tight LP cut)
        floor = np.minimum.reduce(costs)
        m.Add(var >= cp_model.LinearExpr.WeightedSum(xs, [int(v) for v in floor]))
        for lits, cost, _ in modes:
            m.Add(var >= cp_model.LinearExpr.WeightedSum(xs, [int(v) for v in cost])).OnlyEnforceIf(lits)
        return var

    def _staging_size(self, u: int, modes: list):
        m, xs = self.model, self.x[u]
        hi = int(max(staged.max() for _, _, staged in modes))
        if hi == 0:
            return None
        if len(modes) == 1:
            lits, _, staged = modes[0]
            if len(set(staged.tolist())) == 1:
                return int(staged[0])
        var = m.NewIntVar(0, hi, f"stage{u}")
        for lits, _, staged in modes:
            m.Add(var == cp_model.LinearExpr.WeightedSum(xs, [int(v) for v in staged])).OnlyEnforceIf(lits)
        return var

    def _hint(self, hint: Schedule) -> None:
        m = self.model
        for u, c in enumerate(hint.choice):
            for k, var in enumerate(self.x[u]):
                m.AddHint(var, int(k == c))
        for i, u in enumerate(hint.order):
            m.AddHint(self.pos[u], i)
        for t, var in self.res.items():
            m.AddHint(var, int(t in hint.resident))
        for off in self.stage_off.values():
            m.AddHint(off, 0)

    def extract(self, solver: cp_model.CpSolver) -> Schedule:
        p = self.p
        choice = [next(k for k, var in enumerate(xs) if solver.Value(var)) for xs in self.x]
        order = sorted(range(len(p.units)), key=lambda u: solver.Value(self.pos[u]))
        resident = frozenset(t for t, var in self.res.items() if solver.Value(var))
        return Schedule(
            order=order,
            choice=choice,
            resident=resident,
            resident_offset={t: int(solver.Value(self.res_off[t])) for t in resident},
            staging_offset={u: int(solver.Value(off)) for u, off in self.stage_off.items()},
            score=schedule_score(p, order, choice, resident),
        )
