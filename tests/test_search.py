"""Search strategies: dimension -> optuna mapping, grid/random lists, seeded optuna samplers, constraints, replay."""

from __future__ import annotations

import math

import optuna
import pytest
from explore_fixtures import FakeSearch, FakeSpec, toy_metrics, toy_space
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from dse.errors import UserError
from dse.search import ListStrategy, Observation, OptunaStrategy, distribution_for, make_strategy
from dse.space import DesignSpace, Dimension, dimension_from_spec
from templates.base import Param


def _spec(strategy: str, budget: int | None, seed: int = 0, population: int | None = None) -> FakeSpec:
    return FakeSpec(search=FakeSearch(strategy, budget, seed, population))


def _drive(strategy, batch: int = 4, fail_dataflow: str | None = None) -> list[dict]:
    """Run a strategy to its budget against the closed-form toy model; returns every proposed point."""
    proposed = []
    while len(proposed) < strategy.budget:
        proposals = strategy.ask(min(batch, strategy.budget - len(proposed)))
        if not proposals:
            break
        observations = [
            Observation(ok=False)
            if p.point["dataflow"] == fail_dataflow
            else Observation(ok=True, metrics=toy_metrics(p.point))
            for p in proposals
        ]
        strategy.tell(proposals, observations)
        proposed += [p.point for p in proposals]
    return proposed


def test_distribution_mapping():
    assert distribution_for(Dimension("df", "str", values=("ws", "os"))) == CategoricalDistribution(["ws", "os"])
    assert distribution_for(Dimension("rows", "int", values=(16, 8, 32))) == IntDistribution(0, 2)  # ordinal
    assert distribution_for(Dimension("on", "bool", values=(True, False))) == CategoricalDistribution([True, False])
    assert distribution_for(Dimension("s", "int", low=16, high=512, log=True)) == IntDistribution(16, 512, log=True)
    assert distribution_for(Dimension("b", "int", low=2, high=10, step=2)) == IntDistribution(2, 10, step=2)
    assert distribution_for(Dimension("f", "float", low=0.5, high=2.0, log=True)) == FloatDistribution(
        0.5, 2.0, log=True
    )
    assert distribution_for(Dimension("v", "float", low=0.5, high=1.0, step=0.1)) == FloatDistribution(
        0.5, 1.0, step=0.1
    )


def test_grid_is_truncated_to_budget_with_a_note():
    space = toy_space()
    strategy = make_strategy(_spec("grid", 10), space)
    assert isinstance(strategy, ListStrategy) and strategy.budget == 10
    points = _drive(strategy)
    assert points == list(space.grid())[:10]
    assert "first 10" in strategy.notes[0]
    assert make_strategy(_spec("grid", None), space).budget == space.grid_size()
    assert make_strategy(_spec("grid", 10_000), space).budget == space.grid_size()
    assert make_strategy(_spec("grid", None), space).notes == []


def test_random_uses_the_space_sampler():
    space = toy_space()
    points = _drive(make_strategy(_spec("random", 25, seed=3), space))
    assert points == space.sample(25, 3)
    assert all(p["freq_mhz"] == 500 for p in points)


@pytest.mark.parametrize(("name", "budget"), [("nsga2", 30), ("tpe", 30), ("gp", 6)])
def test_optuna_samplers_same_seed_same_points(name, budget):
    space = toy_space()
    population = 8 if name == "nsga2" else None
    first = _drive(make_strategy(_spec(name, budget, seed=11, population=population), space))
    second = _drive(make_strategy(_spec(name, budget, seed=11, population=population), space))
    other = _drive(make_strategy(_spec(name, budget, seed=12, population=population), space))
    assert first == second
    assert first != other
    assert len(first) == budget
    for point in first:
        assert space.contains(point), point
        assert point["freq_mhz"] == 500  # fixed params are merged into every proposal
        assert isinstance(point["sram_kib"], int) and 16 <= point["sram_kib"] <= 512


def test_nsga2_beats_its_own_first_generation():
    """NSGA-II must actually use the results: the later generations sit closer to the true front."""
    space = toy_space()
    strategy = make_strategy(_spec("nsga2", 120, seed=0, population=20), space)
    points = _drive(strategy, batch=4)

    def best_latency_under_area(chunk):
        feasible = [toy_metrics(p) for p in chunk if toy_metrics(p)["area_mm2"] <= 12.0]
        return min(m["latency_ms"] for m in feasible)

    assert best_latency_under_area(points[-40:]) <= best_latency_under_area(points[:20])


def test_constraints_and_failures_reach_the_study():
    space = toy_space()
    strategy = make_strategy(_spec("tpe", 12, seed=0), space)
    assert isinstance(strategy, OptunaStrategy)
    _drive(strategy, fail_dataflow="os")
    trials = strategy.study.trials
    assert len(trials) == 12
    for trial in trials:
        if trial.params["dataflow"] == "os":
            assert trial.state == TrialState.FAIL
            continue
        assert trial.state == TrialState.COMPLETE
        metrics = toy_metrics(strategy.point_of(trial))
        violation = max(0.0, (metrics["area_mm2"] - 12.0) / 12.0)
        assert list(trial.constraints.values()) == [pytest.approx(violation)]
        assert trial.user_attrs["constraints"] == [pytest.approx(violation)]
        assert trial.values == [pytest.approx(metrics["latency_ms"]), pytest.approx(metrics["energy_mj"])]


def test_gp_is_told_objectives_on_one_monotone_log_scale():
    """strategy gp: optuna's GPSampler, deterministic, told log1p(v / unit) with one unit per objective
    fixed by the first positive value; the order of values (so the front) is unchanged; constraints reach it."""
    from dse.search import LogScale

    space = toy_space()
    strategy = make_strategy(_spec("gp", 6, seed=0), space)
    assert isinstance(strategy.study.sampler, optuna.samplers.GPSampler)
    _drive(strategy)
    trials = strategy.study.trials
    first = toy_metrics(strategy.point_of(trials[0]))
    for trial in trials:
        metrics = toy_metrics(strategy.point_of(trial))
        told = [math.log1p(metrics[m] / (first[m] / 100)) for m in ("latency_ms", "energy_mj")]
        assert trial.values == [pytest.approx(v) for v in told]
        violation = max(0.0, (metrics["area_mm2"] - 12.0) / 12.0)
        assert list(trial.constraints.values()) == [pytest.approx(violation)]
    scale = LogScale()
    values = [0.0, 3e-4, 0.2, 0.2, 5.0, 7e3]
    assert scale(0.0) == 0.0 and scale.unit is None  # zero sets no unit
    told = [scale(v) for v in values]
    assert scale.unit == pytest.approx(3e-6)
    assert told == sorted(told) and told[2] == told[3]


def test_missing_objective_metric_is_told_as_fail():
    space = toy_space()
    strategy = make_strategy(_spec("nsga2", 2, seed=0), space)
    proposals = strategy.ask(2)
    strategy.tell(proposals, [Observation(ok=True, metrics={"latency_ms": 1.0}), Observation(ok=True, metrics={})])
    assert [t.state for t in strategy.study.trials] == [TrialState.FAIL, TrialState.FAIL]


def test_replay_feeds_history_into_a_fresh_study():
    space = toy_space()
    history_points = _drive(make_strategy(_spec("nsga2", 16, seed=5, population=8), space))
    history = [(p, Observation(ok=p["dataflow"] == "ws", metrics=toy_metrics(p))) for p in history_points]
    history.append(({**history_points[0], "sram_kib": 4096}, Observation(ok=True, metrics={})))  # outside the space
    resumed = make_strategy(_spec("nsga2", 32, seed=5, population=8), space)
    assert resumed.replay(history) == 16
    trials = resumed.study.trials
    assert [t.state for t in trials] == [
        TrialState.COMPLETE if p["dataflow"] == "ws" else TrialState.FAIL for p in history_points
    ]
    for trial in (t for t in trials if t.state == TrialState.COMPLETE):
        area = toy_metrics(resumed.point_of(trial))["area_mm2"]
        assert list(trial.constraints.values()) == [pytest.approx(max(0.0, (area - 12.0) / 12.0))]
    more = _drive(resumed)  # the sampler continues after the replayed trials, with points not seen before
    assert len(more) == 32
    keys = [tuple(sorted(p.items())) for p in history_points + more]
    assert len(set(keys)) == len(keys)
    assert len(resumed.study.trials) >= 16 + 32


def test_optuna_logging_is_quiet():
    make_strategy(_spec("tpe", 5), toy_space())
    assert optuna.logging.get_verbosity() <= optuna.logging.WARNING


def test_bad_strategy_settings_are_user_errors():
    space = toy_space()
    with pytest.raises(UserError, match="allowed: grid, random, nsga2, tpe"):
        make_strategy(_spec("annealing", 10), space)
    with pytest.raises(UserError, match="needs a budget"):
        make_strategy(_spec("random", None), space)
    with pytest.raises(UserError, match="at least one objective"):
        spec = _spec("nsga2", 10)
        spec.objectives = []
        make_strategy(spec, space)


def test_float_ranges_are_sampled_as_floats():
    from dse.space import DesignSpace

    space = DesignSpace((Dimension("x", "float", low=0.1, high=10.0, log=True), Dimension("dataflow", "str", ("ws",))))
    strategy = OptunaStrategy("tpe", space, FakeSpec().objectives, [], budget=6, seed=0)
    points = [p.point for p in strategy.ask(6)]
    assert all(isinstance(p["x"], float) and 0.1 <= p["x"] <= 10.0 for p in points)
    assert all(p["dataflow"] == "ws" for p in points)
    assert len({math.log(p["x"]) for p in points}) == 6


def _small_space():
    from dse.space import DesignSpace

    return DesignSpace(
        (
            Dimension("rows", "int", values=(8, 16, 32)),
            Dimension("cols", "int", values=(8, 16)),
            Dimension("dataflow", "str", values=("ws", "os")),
            Dimension("sram_kib", "int", values=(64,)),
            Dimension("freq_mhz", "int", values=(500,)),
        )
    )


@pytest.mark.parametrize("name", ["nsga2", "tpe"])
def test_samplers_propose_each_point_once_and_stop_when_the_space_is_spent(name):
    space = _small_space()  # 12 points
    strategy = make_strategy(_spec(name, 40, seed=3, population=4), space)
    points = _drive(strategy, batch=3)
    keys = [tuple(sorted(p.items())) for p in points]
    assert len(keys) == len(set(keys)) == 12
    assert sorted(keys) == sorted(tuple(sorted(p.items())) for p in space.grid())
    assert strategy.ask(2) == []
    assert all(t.state != TrialState.RUNNING for t in strategy.study.trials)  # repeats were answered, none hang


def test_listed_numbers_are_ordinal_for_the_sampler_and_decoded_in_points():
    space = _small_space()
    strategy = make_strategy(_spec("tpe", 6, seed=0), space)
    proposals = strategy.ask(6)
    for proposal in proposals:
        assert proposal.point["rows"] in (8, 16, 32) and proposal.point["cols"] in (8, 16)
        assert proposal.trial.params["rows"] in (0, 1, 2)  # the index into the sorted values
        assert strategy.point_of(proposal.trial) == proposal.point


def test_a_repeat_of_a_pending_point_is_told_with_it():
    space = _small_space()
    strategy = make_strategy(_spec("tpe", 12, seed=0), space)
    (first,) = strategy.ask(1)
    key = tuple(first.point[name] for name in ("rows", "cols", "dataflow"))
    twin = strategy.study.ask(strategy._distributions)  # what a sampler stuck on the pending point would give
    strategy._twins.setdefault(key, []).append(twin)
    strategy.tell([first], [Observation(ok=True, metrics=toy_metrics(first.point))])
    states = {t.number: t.state for t in strategy.study.trials}
    assert states[first.trial.number] == states[twin.number] == TrialState.COMPLETE


def test_default_population_and_startup_follow_the_budget():
    from dse.search import default_population, default_startup_trials

    assert [default_population(b) for b in (10, 34, 100, 300, 5000)] == [8, 8, 10, 30, 50]
    assert [default_startup_trials(b) for b in (8, 34, 100)] == [4, 8, 10]


def test_default_sampler_follows_the_strategy_and_budget():
    from dse.search import default_population, default_sampler, default_startup_trials

    tpe = default_sampler("tpe", 34, seed=1)
    assert isinstance(tpe, optuna.samplers.TPESampler)
    assert tpe._n_startup_trials == default_startup_trials(34) and tpe._multivariate is True
    nsga2 = default_sampler("nsga2", 100, seed=1)
    assert isinstance(nsga2, optuna.samplers.NSGAIISampler)
    assert nsga2._population_size == default_population(100)
    assert default_sampler("nsga2", 100, seed=1, population=12)._population_size == 12


def test_a_given_sampler_replaces_the_default_and_keeps_distinct_points():
    def run(seed: int) -> list[dict]:
        sampler = optuna.samplers.RandomSampler(seed=seed)
        strategy = OptunaStrategy("tpe", _small_space(), FakeSpec().objectives, [], budget=12, seed=0, sampler=sampler)
        assert strategy.study.sampler is sampler and strategy.tag == "tpe:seed=0"
        return _drive(strategy, batch=3)

    points = run(4)
    keys = [tuple(sorted(p.items())) for p in points]
    assert len(set(keys)) == len(keys) == 12  # the whole small space, each point once
    assert points == run(4)
    assert points != run(5)


def test_gp_without_pytorch_is_one_clear_user_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(UserError, match=r"strategy gp needs PyTorch .*pip install 'dse\[gp\]'"):
        make_strategy(_spec("gp", 6), toy_space())


# -- bounded: huge spaces are sized exactly, refused or streamed, never listed ------------------------------


def _huge_space():
    """The issue-19 grid: 4096 x 4096 x 3 x 99,998 x 1000 points (about 5 x 10^15)."""

    def dim(name: str, raw, ptype: str = "int"):
        choices = ("ws", "os", "is") if ptype == "str" else None
        return dimension_from_spec(name, raw, Param(name, ptype, 1 if ptype == "int" else "ws", choices=choices))

    return DesignSpace(
        (
            dim("rows", {"range": [1, 4096]}),
            dim("cols", {"range": [1, 4096]}),
            dim("dataflow", ["ws", "os", "is"], "str"),
            dim("sram_kib", {"range": [3, 100000], "step": 1}),
            dim("dram_gbps", {"range": [1, 1000], "step": 1}),
        )
    )


def test_a_huge_grid_without_budget_is_refused_with_its_exact_size() -> None:
    space = _huge_space()
    assert space.grid_size() == 4096 * 4096 * 3 * 99_998 * 1000  # exact big integer, nothing listed
    with pytest.raises(UserError) as info:
        make_strategy(_spec("grid", None), space)
    message = str(info.value)
    assert "5,033,064,136,704,000 points" in message and "search.max_grid (1,000,000)" in message
    assert "budget" in message and "random" in message and "\n" not in message


def test_max_grid_is_configurable() -> None:
    space = toy_space()
    spec = _spec("grid", None)
    spec.search.max_grid = space.grid_size() - 1
    with pytest.raises(UserError, match="more than search.max_grid"):
        make_strategy(spec, space)
    spec.search.max_grid = space.grid_size()
    assert make_strategy(spec, space).budget == space.grid_size()


def test_huge_grid_with_a_budget_streams_its_first_points() -> None:
    space = _huge_space()
    strategy = make_strategy(_spec("grid", 5), space)
    first = [p.point for p in strategy.ask(10)]
    assert len(first) == 5 and first[0] == {"rows": 1, "cols": 1, "dataflow": "ws", "sram_kib": 3, "dram_gbps": 1}
    assert [p["dram_gbps"] for p in first] == [1, 2, 3, 4, 5]  # the last dimension varies fastest
    assert strategy.ask(10) == []


def test_random_on_a_huge_space_streams_distinct_points() -> None:
    strategy = make_strategy(_spec("random", 2000, seed=3), _huge_space())
    points = [p.point for p in strategy.ask(5000)]
    assert len(points) == 2000 and len({tuple(p.values()) for p in points}) == 2000
    again = make_strategy(_spec("random", 2000, seed=3), _huge_space())
    assert [p.point for p in again.ask(5000)] == points  # deterministic for the seed
