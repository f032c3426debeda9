"""The CP-SAT section model: cuts, allocation and tiers in one model, the exact linearisation of ``plan_cost``.

The model is built in a fixed order of steps (decision variables, traffic terms, section resources, section
times, objective, hint): CP-SAT's search depends on the order of variables and constraints, so the same
problem always gives the same model and, with the deterministic limits below, the same plan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from hwmodels.rdu.cost import Plan, PlanCost, SectionProblem, plan_cost
from mappers.base import MappingError
from mappers.rdu.heuristics import heuristic_plans, unfused_plan
from mappers.rdu.problem import objective_weights

# per-op traffic picoseconds per tier: terms (constant, coefficient, literal) = constant + coefficient x literal
Terms = list[tuple[int, int, cp_model.IntVar | None]]


@dataclass
class SectionSolution:
    plan: Plan
    cost: PlanCost
    info: dict


@dataclass
class SectionModel:
    """The CP-SAT model and its decisions: where sections start, one option per op, one tier per placeable."""

    problem: SectionProblem
    m: cp_model.CpModel
    starts: list[cp_model.IntVar]
    x: list[list[cp_model.IntVar]]
    tier_var: dict[tuple[str, str], cp_model.IntVar]
    spill_cache: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)

    def opt_sum(self, i: int, attr: str) -> cp_model.LinearExpr:
        """Op ``i``'s chosen option's ``attr`` as a linear expression."""
        return sum(getattr(o, attr) * self.x[i][k] for k, o in enumerate(self.problem.options[i]))

    def spill(self, src: int, dst: int) -> cp_model.IntVar:
        """The literal 'a section starts anywhere in (src, dst]': the tensor goes through the spill tier."""
        key = (src, dst)
        if key not in self.spill_cache:
            var = self.m.NewBoolVar(f"spill{src}_{dst}")
            self.m.AddMaxEquality(var, self.starts[src + 1 : dst + 1])
            self.spill_cache[key] = var
        return self.spill_cache[key]

    def running(self, values: Sequence, bound: int, name: str) -> list[cp_model.IntVar]:
        """Running per-section sums of ``values``, reset where a section starts."""
        m, starts = self.m, self.starts
        acc = []
        for i, value in enumerate(values):
            var = m.NewIntVar(0, bound, f"{name}{i}")
            if i == 0:
                m.Add(var == value)
            else:
                m.Add(var == value).OnlyEnforceIf(starts[i])
                m.Add(var == value + acc[i - 1]).OnlyEnforceIf(starts[i].Not())
            acc.append(var)
        return acc


def solve_sections(
    problem: SectionProblem,
    time_limit_s: float = 10.0,
    workers: int = 1,
    hint: Plan | None = None,
    wall_limit_s: float | None = None,
    lower_bound: float = 0.0,
    fixed_cuts: Sequence[bool] | None = None,
) -> SectionSolution:
    """Cuts, allocation and tiers in one CP-SAT model; falls back to the hint (gap reported) on a timeout.

    ``time_limit_s`` is CP-SAT's deterministic time (reproducible), ``wall_limit_s`` an optional wall-clock
    backstop (None: none; one makes the answer depend on the machine's load); ``lower_bound`` (a proven
    bound on the objective, e.g. ``mappers.rdu.bound``'s) is added as a constraint and reported when it beats
    the solver's own. ``fixed_cuts`` pins the section starts
    (allocation and tiers only: a much smaller search, used to polish a plan's cuts); its bound then holds
    for those cuts only and is not reported as the problem's."""
    started = time.perf_counter()
    weights = objective_weights(problem, plan_cost(problem, unfused_plan(problem)))
    base_cost, baseline = _best_candidate(problem, weights, hint)
    model = _decision_variables(problem)
    if fixed_cuts is not None:
        for start, fixed in zip(model.starts, fixed_cuts):
            model.m.Add(start == int(bool(fixed)))
    terms, energy_terms, resident_terms = _traffic_terms(model)
    _limit_section_resources(model, resident_terms)
    section_ps, fills = _section_times(model, terms)
    _set_objective(model, section_ps, fills, terms, energy_terms, weights)
    if lower_bound > 0 and problem.objective == "latency":
        model.m.Add(sum(section_ps) + problem.reconfig_ps * sum(model.starts) >= int(math.floor(lower_bound)))
    _hint(model, baseline)
    solver, status = _solve(model, time_limit_s, workers, wall_limit_s)
    seconds = time.perf_counter() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.INFEASIBLE:
            raise MappingError(f"no section mapping of {problem.graph.name!r} fits the RDU (CP-SAT: INFEASIBLE)")
        info = {
            "status": "FEASIBLE",
            "value": float(base_cost.objective(problem.objective, weights)),
            "bound": float(lower_bound),
            "gap": max(
                0.0, 1.0 - float(lower_bound) / max(1.0, float(base_cost.objective(problem.objective, weights)))
            ),
            "seconds": seconds,
            "note": f"CP-SAT found no solution in {time_limit_s:g} s ({solver.StatusName(status)}); best plan kept",
        }
        return SectionSolution(baseline, base_cost, info)
    plan = _read_plan(model, solver)
    cost = plan_cost(problem, plan)
    note = ""
    if cost.objective(problem.objective, weights) > base_cost.objective(problem.objective, weights):
        plan, cost = baseline, base_cost  # the hint was better than what the time limit let CP-SAT reach
        note = "the heuristic hint beat the solver's incumbent within the time limit"
    value = float(cost.objective(problem.objective, weights))  # exact: plan_cost, not the solver's slack
    own_bound = float(solver.BestObjectiveBound()) if fixed_cuts is None else 0.0
    bound = max(own_bound, float(lower_bound))
    optimal = (status == cp_model.OPTIMAL and not note and fixed_cuts is None) or value <= bound
    gap = 0.0 if optimal else max(0.0, (value - bound) / max(abs(value), 1.0))
    info = {
        "status": "OPTIMAL" if optimal else "FEASIBLE",
        "value": value,
        "bound": bound,
        "gap": gap,
        "seconds": seconds,
        "objective": problem.objective,
        "weights": weights,
        **({"note": note} if note else {}),
    }
    return SectionSolution(plan, cost, info)


def _best_candidate(problem: SectionProblem, weights: tuple[int, int], hint: Plan | None) -> tuple[PlanCost, Plan]:
    """The best feasible heuristic plan (or the given hint): the solver's hint and its fallback."""
    candidates = [hint] if hint is not None else heuristic_plans(problem)
    scored = [(plan_cost(problem, p), p) for p in candidates]
    scored = [(c.objective(problem.objective, weights), c, p) for c, p in scored if c.feasible]
    if not scored:
        raise MappingError(f"no heuristic plan of {problem.graph.name!r} fits the RDU; cannot start the solver")
    _, base_cost, baseline = min(scored, key=lambda t: t[0])
    return base_cost, baseline


def _decision_variables(problem: SectionProblem) -> SectionModel:
    """Section starts, one allocation option per op, one tier per placeable within the HBM/DDR capacities."""
    m = cp_model.CpModel()
    starts = [m.NewBoolVar(f"start{i}") for i in range(problem.n)]
    m.Add(starts[0] == 1)
    x = [[m.NewBoolVar(f"x{i}_{k}") for k in range(len(opts))] for i, opts in enumerate(problem.options)]
    for row in x:
        m.AddExactlyOne(row)
    tier_var: dict[tuple[str, str], cp_model.IntVar] = {}
    for item in problem.placeables:
        allowed = problem.allowed_tiers(item)
        for tier in allowed:
            tier_var[item.name, tier] = m.NewBoolVar(f"tier_{item.name}_{tier}")
        m.AddExactlyOne([tier_var[item.name, t] for t in allowed])
    for tier in ("hbm", "ddr"):
        placed = [p.nbytes * tier_var[p.name, tier] for p in problem.placeables if (p.name, tier) in tier_var]
        if placed:
            m.Add(sum(placed) <= problem.tier_bytes[tier])
    return SectionModel(problem, m, starts, x, tier_var)


def _traffic_terms(model: SectionModel) -> tuple[list[dict[str, Terms]], list, list]:
    """Per op and tier, the traffic picoseconds as terms; the energy terms; the SRAM-resident bytes terms."""
    problem = model.problem
    spill_tier = problem.spill_tier
    terms: list[dict[str, Terms]] = [{"sram": [], "hbm": [], "ddr": []} for _ in range(problem.n)]
    energy_terms: list = []
    fj = problem.tier_fj_per_byte
    for op, nbytes in problem.fixed_reads:
        terms[op][spill_tier].append((problem.bytes_ps(spill_tier, nbytes), 0, None))
        energy_terms.append(nbytes * fj[spill_tier])
    for e in problem.edges:
        s = model.spill(e.src, e.dst)
        off, on = problem.bytes_ps(spill_tier, e.nbytes), problem.bytes_ps("sram", 2 * e.nbytes)
        terms[e.dst][spill_tier].append((0, off, s))
        terms[e.dst]["sram"].append((on, -on, s))
        energy_terms.append(e.nbytes * fj[spill_tier] * s + 2 * e.nbytes * fj["sram"] * (1 - s))
    for src, last, nbytes in problem.writes:
        cost_ps = problem.bytes_ps(spill_tier, nbytes)
        if last < 0:
            terms[src][spill_tier].append((cost_ps, 0, None))
            energy_terms.append(nbytes * fj[spill_tier])
        else:
            lit = model.spill(src, last)
            terms[src][spill_tier].append((0, cost_ps, lit))
            energy_terms.append(nbytes * fj[spill_tier] * lit)
    resident_terms = []
    for item in problem.placeables:
        for tier in problem.allowed_tiers(item):
            z = model.tier_var[item.name, tier]
            for op, nbytes in item.readers:
                terms[op][tier].append((0, problem.bytes_ps(tier, nbytes), z))
                energy_terms.append(nbytes * fj[tier] * z)
            if tier == "sram":
                resident_terms.append(item.nbytes * z)
    return terms, energy_terms, resident_terms


def _limit_section_resources(model: SectionModel, resident_terms: list) -> None:
    """Section PCUs and PMUs fit the chip, and SRAM-resident bytes leave room for the largest section's PMUs."""
    m, arch, n = model.m, model.problem.arch, model.problem.n
    # the running sums' upper bounds are the chip's capacities
    model.running([model.opt_sum(i, "pcus") for i in range(n)], arch.pcus, "pcus")
    acc_pmus = model.running([model.opt_sum(i, "pmus") for i in range(n)], arch.pmus, "pmus")
    max_pmus = m.NewIntVar(0, arch.pmus, "max_section_pmus")
    for var in acc_pmus:
        m.Add(max_pmus >= var)
    pmu_bytes = arch.pmu_bytes
    m.Add(sum(resident_terms) + max_pmus * pmu_bytes <= arch.pmus * pmu_bytes)


def _section_times(model: SectionModel, terms: list[dict[str, Terms]]) -> tuple[list[cp_model.IntVar], list]:
    """Each section's time, held at its last op: fill + slowest steady state, and at least every tier's traffic."""
    m, problem, starts = model.m, model.problem, model.starts
    n = problem.n
    fills = [model.opt_sum(i, "fill_ps") for i in range(n)]
    fill_bound = sum(max(o.fill_ps for o in opts) for opts in problem.options)
    acc_fill = model.running(fills, fill_bound, "fill")
    steady_bound = max(max(o.steady_ps for o in opts) for opts in problem.options)
    steady = []
    for i in range(n):
        var = m.NewIntVar(0, steady_bound, f"steady{i}")
        m.Add(var >= model.opt_sum(i, "steady_ps"))
        if i > 0:
            m.Add(var >= steady[i - 1]).OnlyEnforceIf(starts[i].Not())
        steady.append(var)
    tier_acc = {}
    for tier in ("sram", "hbm", "ddr"):
        values = [_linear(terms[i][tier]) for i in range(n)]
        bound = sum(_upper(terms[i][tier]) for i in range(n))
        tier_acc[tier] = model.running(values, bound, tier)
    horizon = fill_bound + steady_bound + sum(_upper(terms[i][t]) for i in range(n) for t in terms[i])
    section_ps = []
    for i in range(n):
        var = m.NewIntVar(0, horizon, f"section{i}")
        bounds = [acc_fill[i] + steady[i], *(tier_acc[tier][i] for tier in ("sram", "hbm", "ddr"))]
        for lower in bounds:
            if i == n - 1:
                m.Add(var >= lower)
            else:
                m.Add(var >= lower).OnlyEnforceIf(starts[i + 1])
        section_ps.append(var)
    return section_ps, fills


def _set_objective(
    model: SectionModel,
    section_ps: list[cp_model.IntVar],
    fills: list,
    terms: list[dict[str, Terms]],
    energy_terms: list,
    weights: tuple[int, int],
) -> None:
    """Redundant cuts that tighten the bound, then minimise latency, energy or their weighted sum."""
    m, problem, x = model.m, model.problem, model.x
    n = problem.n
    # redundant cuts for the bound: the sections together take at least every op's fill and every tier's traffic
    m.Add(sum(section_ps) >= sum(fills))
    # an op holds its PCUs for its whole section, which lasts at least the op's own time
    m.Add(
        problem.arch.pcus * sum(section_ps)
        >= sum(
            o.pcus * (o.fill_ps + o.steady_ps) * x[i][k]
            for i, opts in enumerate(problem.options)
            for k, o in enumerate(opts)
        )
    )
    for tier in ("sram", "hbm", "ddr"):
        m.Add(sum(section_ps) >= sum(_linear(terms[i][tier]) for i in range(n)))
    latency = sum(section_ps) + problem.reconfig_ps * sum(model.starts)
    energy = sum(energy_terms) + problem.static_mw * latency
    if problem.objective == "latency":
        m.Minimize(latency)
    elif problem.objective == "energy":
        m.Minimize(energy)
    else:
        m.Minimize(weights[0] * latency + weights[1] * energy)


def _hint(model: SectionModel, baseline: Plan) -> None:
    """Start the search from the best heuristic plan."""
    m, problem = model.m, model.problem
    for i in range(problem.n):
        m.AddHint(model.starts[i], int(baseline.starts[i]))
        for k in range(len(model.x[i])):
            m.AddHint(model.x[i][k], int(baseline.choice[i] == k))
    for item in problem.placeables:
        for tier in problem.allowed_tiers(item):
            m.AddHint(model.tier_var[item.name, tier], int(baseline.tiers[item.name] == tier))


def _solve(
    model: SectionModel, time_limit_s: float, workers: int, wall_s: float | None
) -> tuple[cp_model.CpSolver, int]:
    solver = cp_model.CpSolver()
    # Same spec + seed must give the same schedule: the limit is CP-SAT's deterministic time (work units,
    # about a second each) and the workers are interleaved deterministically; a wall-clock limit (opt-in)
    # would make the answer depend on the machine's load.
    solver.parameters.max_deterministic_time = float(time_limit_s)
    if wall_s is not None:
        solver.parameters.max_time_in_seconds = max(0.01, float(wall_s))
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    status = solver.Solve(model.m)
    return solver, status


def _read_plan(model: SectionModel, solver: cp_model.CpSolver) -> Plan:
    """The solver's plan: its cuts, the chosen option per op and the chosen tier per placeable."""
    problem = model.problem
    return Plan(
        starts=[bool(solver.Value(s)) for s in model.starts],
        choice=[next(k for k, v in enumerate(row) if solver.Value(v)) for row in model.x],
        tiers={
            item.name: next(t for t in problem.allowed_tiers(item) if solver.Value(model.tier_var[item.name, t]))
            for item in problem.placeables
        },
    )


def _linear(terms: Terms):
    return sum(const + (coef * lit if lit is not None else 0) for const, coef, lit in terms)


def _upper(terms: Terms) -> int:
    """Largest value of ``_linear(terms)``."""
    return sum(const + max(0, coef) for const, coef, _ in terms)
