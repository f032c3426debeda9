"""The multicore local search and the throughput objective's two stages: the solver never ends worse than
its hint (the closed form the surrogates use), the period stage is exact, and schedules are deterministic."""

from __future__ import annotations

import itertools
from dataclasses import fields

import pytest

from dse.registry import family, make_mapper
from dse.zoo import build
from mappers.multicore.balance import greedy_balance, improve, period
from mappers.multicore.balanced import MulticoreBalancedMapper, balanced_schedule, closed_form_schedule
from mappers.multicore.cpsat import MulticoreCpSatMapper, MulticoreOptions, seed_schedule, solve, solve_period
from mappers.multicore.greedy import round_robin
from mappers.multicore.problem import build_problem


def small_cnn_problem(num_cores: int = 3, **params):
    arch = family("multicore").template().instantiate({"num_cores": num_cores, "core1_cols": 64, **params})
    return build_problem(build("small_cnn"), arch)


def test_period_stage_is_the_exact_minimum_over_all_assignments():
    problem = small_cnn_problem(2, core1_dataflow="is")
    k, n = problem.num_cores, len(problem.layers)
    assert k**n <= 20_000
    best = min(period(problem, a) for a in itertools.product(range(k), repeat=n))
    assignment, facts = solve_period(problem, round_robin(problem).layer_core, 5.0, 1, 0)
    assert facts["status"] == "OPTIMAL" and period(problem, assignment) == best


@pytest.mark.parametrize("objective", ["throughput", "latency"])
def test_solver_never_worse_than_its_hint_nor_the_closed_form(objective):
    """The closed form is the solver's own start: CP-SAT's period and makespan are each at most its."""
    problem = small_cnn_problem(3)
    closed = closed_form_schedule(problem, objective, 0.5, 0.01)
    schedule, facts = solve(problem, objective, time_limit_s=0.5, gap_limit=0.01)
    assert tuple(facts["score"]) <= tuple(facts["hint_score"])
    assert schedule.makespan <= closed.makespan
    if objective == "throughput":
        assert period(problem, schedule.layer_core) <= period(problem, closed.layer_core)
        assert period(problem, closed.layer_core) <= period(problem, balanced_schedule(problem, objective).layer_core)


def test_local_search_improves_on_its_seeds():
    problem = small_cnn_problem(4)
    seed = round_robin(problem)
    better = improve(problem, seed, "throughput")
    assert period(problem, better.layer_core) <= min(
        period(problem, seed.layer_core), period(problem, greedy_balance(problem))
    )
    hinted = seed_schedule(problem, "throughput", 0.0, 1, 0)
    plain = seed_schedule(problem, "throughput", 0.0, 1, 0, local_search=False)
    assert period(problem, hinted.layer_core) <= period(problem, plain.layer_core)


def test_throughput_schedule_is_deterministic_when_the_limit_is_hit():
    """A deterministic time limit: the same schedule twice, though the makespan stage stops unproven."""
    graph = build("resnet18")
    arch = family("multicore").template().instantiate({"num_cores": 4, "core1_dataflow": "is", "dram_gbps": 25.6})
    problem = build_problem(graph, arch, max_layers=16)
    runs = [solve(problem, "throughput", time_limit_s=0.3) for _ in range(2)]
    (a, facts), (b, _) = runs
    assert facts["makespan_status"] == "FEASIBLE"  # stopped by the limit, not by a proof
    assert (a.layer_core, a.start) == (b.layer_core, b.start)
    mapping = MulticoreBalancedMapper(objective="throughput", max_layers=16).map(graph, arch)
    assert mapping.solver["status"] == "HEURISTIC"
    assert period(problem, a.layer_core) <= period(problem, mapping.solver["schedule"].layer_core)


def test_balanced_mapper_is_chosen_by_name_and_shares_the_cpsat_defaults():
    """One default per shared option (``MulticoreOptions``); a spec reaches the closed form as ``balanced``."""
    shared = {f.name: f.default for f in fields(MulticoreOptions) if f.name != "name"}
    for mapper in (MulticoreCpSatMapper, MulticoreBalancedMapper):
        assert {f.name: f.default for f in fields(mapper) if f.name in shared} == shared
    chosen = make_mapper("multicore", "balanced", {"objective": "throughput", "max_layers": 16})
    assert chosen == MulticoreBalancedMapper(objective="throughput", max_layers=16)
    assert family("multicore").surrogates.closed_form == "balanced"
