"""Search strategies: which points to evaluate next.

``grid`` and ``random`` know their whole list up front. ``nsga2`` and ``tpe`` are
optuna's multi-objective samplers driven through ask/tell in batches (one batch
= one point per worker); constraint violations go to optuna as trial
constraints so infeasible designs rank below feasible ones, and failed points
are told as FAIL. On resume the strategy's earlier proposals are replayed into
the study from the store, so the sampler continues instead of starting over.
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from dse.errors import UserError
from dse.objectives import Constraint, Objective

STRATEGIES = ("grid", "random", "nsga2", "tpe")
DEFAULT_SEED = 0
MAX_VIOLATION = 1e12  # a missing constraint metric is an infinite violation; optuna wants finite numbers


@dataclass
class Proposal:
    """A point to evaluate; ``trial`` links it back to the optuna study when a sampler proposed it."""

    point: dict[str, Any]
    trial: optuna.trial.Trial | None = None


@dataclass
class Observation:
    """What came back for a point: ok with metrics, or failed."""

    ok: bool
    metrics: Mapping[str, float] = field(default_factory=dict)


class SearchStrategy(ABC):
    """Proposes points in batches and learns from what comes back."""

    name: str
    tag: str  # names this strategy's proposal log in the store
    budget: int
    notes: list[str]
    replays = False  # True when the strategy learns from results and must see its history again on resume

    def batch_size(self, workers: int) -> int:
        """Points per ask: one per worker, so a sampler learns from every finished batch."""
        return max(1, workers)

    @abstractmethod
    def ask(self, n: int) -> list[Proposal]:
        """Up to ``n`` new proposals; an empty list means the strategy is exhausted."""

    def tell(self, proposals: Sequence[Proposal], observations: Sequence[Observation]) -> None:  # noqa: B027
        """Results for earlier proposals, in proposal order. Fixed-list strategies ignore them."""

    def replay(self, history: Sequence[tuple[Mapping[str, Any], Observation]]) -> int:
        """Feed earlier proposals (point, observation) back in on resume; returns how many count toward budget."""
        return 0


class ListStrategy(SearchStrategy):
    """A fixed list of points (grid, random): resuming is simply skipping what the store already has."""

    def __init__(self, name: str, points: list[dict[str, Any]], budget: int, notes: list[str] | None = None):
        self.name = name
        self.tag = name
        self.budget = budget
        self.notes = notes or []
        self._points = points
        self._next = 0

    def batch_size(self, workers: int) -> int:
        """Nothing to learn between batches: keep every worker busy with a deep queue."""
        return max(1, workers) * 16

    def ask(self, n: int) -> list[Proposal]:
        batch = self._points[self._next : self._next + n]
        self._next += len(batch)
        return [Proposal(dict(point)) for point in batch]


def distribution_for(dim: Any) -> BaseDistribution:
    """Dimension -> optuna distribution: discrete values are categorical, ranges int or float (log if asked)."""
    if dim.values is not None:
        return CategoricalDistribution(list(dim.values))
    log = bool(getattr(dim, "log", False))
    step = getattr(dim, "step", None)
    if str(dim.ptype).lower() in ("int", "integer"):
        int_step = 1 if log or not step else int(step)
        return IntDistribution(int(dim.low), int(dim.high), log=log, step=int_step)
    return FloatDistribution(float(dim.low), float(dim.high), log=log, step=None if log or not step else float(step))


class OptunaStrategy(SearchStrategy):
    """optuna's NSGA-II or multivariate TPE over the free dimensions, driven by ask/tell."""

    replays = True

    def __init__(
        self,
        name: str,
        space: Any,
        objectives: Sequence[Objective],
        constraints: Sequence[Constraint],
        budget: int,
        seed: int | None,
        population: int | None = None,
    ):
        if not objectives:
            raise UserError(f"search strategy {name!r} needs at least one objective", where="objectives")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.name = name
        self.budget = budget
        self.notes = []
        self._objectives = list(objectives)
        self._constraints = list(constraints)
        self._fixed = dict(space.fixed)
        self._distributions = {dim.name: distribution_for(dim) for dim in space.free}
        seed = DEFAULT_SEED if seed is None else seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if name == "nsga2":
                population = population or default_population(budget)
                sampler: optuna.samplers.BaseSampler = optuna.samplers.NSGAIISampler(
                    population_size=population, seed=seed
                )
                self.tag = f"nsga2:seed={seed}"  # population may change between runs; the history still applies
            else:
                sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True)
                self.tag = f"tpe:seed={seed}"
        directions = ["minimize" if o.direction == "min" else "maximize" for o in objectives]
        self.study = optuna.create_study(directions=directions, sampler=sampler)

    def ask(self, n: int) -> list[Proposal]:
        proposals = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            for _ in range(n):
                trial = self.study.ask(self._distributions)
                proposals.append(Proposal({**self._fixed, **trial.params}, trial))
        return proposals

    def tell(self, proposals: Sequence[Proposal], observations: Sequence[Observation]) -> None:
        for proposal, observation in zip(proposals, observations):
            assert proposal.trial is not None, "an optuna strategy was told about a point it did not propose"
            values = self._objective_values(observation)
            if values is None:
                self.study.tell(proposal.trial, state=TrialState.FAIL)
                continue
            violations = self._violations(observation)
            proposal.trial.set_user_attr("constraints", violations)
            for constraint, violation in zip(self._constraints, violations):
                proposal.trial.set_constraint(str(constraint), violation)
            self.study.tell(proposal.trial, values)

    def replay(self, history: Sequence[tuple[Mapping[str, Any], Observation]]) -> int:
        replayed = 0
        for point, observation in history:
            params = {name: point.get(name) for name in self._distributions}
            if not all(_in_distribution(self._distributions[n], v) for n, v in params.items()):
                continue  # the spec's ranges changed since; this point is no longer in the space
            values = self._objective_values(observation)
            if values is None:
                trial = optuna.trial.create_trial(
                    state=TrialState.FAIL, params=params, distributions=self._distributions
                )
            else:
                violations = self._violations(observation)
                trial = optuna.trial.create_trial(
                    values=values,
                    params=params,
                    distributions=self._distributions,
                    user_attrs={"constraints": violations},
                    constraints={str(c): v for c, v in zip(self._constraints, violations)} or None,
                )
            self.study.add_trial(trial)
            replayed += 1
        return replayed

    def _objective_values(self, observation: Observation) -> list[float] | None:
        if not observation.ok:
            return None
        values = [observation.metrics.get(o.metric, math.nan) for o in self._objectives]
        if any(v is None or not math.isfinite(float(v)) for v in values):
            return None  # optuna cannot rank a design without all objective values
        return [float(v) for v in values]

    def _violations(self, observation: Observation) -> list[float]:
        return [min(c.violation(observation.metrics), MAX_VIOLATION) for c in self._constraints]


def _in_distribution(distribution: BaseDistribution, value: Any) -> bool:
    try:
        internal = distribution.to_internal_repr(value)
    except (ValueError, TypeError):
        return False
    return distribution._contains(internal)


def default_population(budget: int) -> int:
    """NSGA-II generation size when the spec gives none: about a quarter of the budget, between 8 and 50."""
    return max(8, min(50, budget // 4))


def make_strategy(
    spec: Any,
    space: Any,
    objectives: Sequence[Objective] | None = None,
    constraints: Sequence[Constraint] | None = None,
) -> SearchStrategy:
    """The strategy ``spec.search`` names, over ``space``, limited to ``spec.search.budget`` points."""
    search = spec.search
    name = str(search.strategy).lower()
    objectives = list(objectives if objectives is not None else spec.objective_list())
    constraints = list(constraints if constraints is not None else spec.constraint_list())
    seed = getattr(search, "seed", None)
    budget = getattr(search, "budget", None)
    if name == "grid":
        size = space.grid_size()
        budget = size if budget is None else min(int(budget), size)
        notes = []
        if budget < size:
            notes.append(f"grid has {size} points; the budget of {budget} evaluates the first {budget} in grid order")
        return ListStrategy("grid", [dict(p) for p in islice(space.grid(), budget)], budget, notes)
    if budget is None:
        raise UserError(f"search strategy {name!r} needs a budget (number of points)", where="search.budget")
    budget = int(budget)
    if name == "random":
        seed = DEFAULT_SEED if seed is None else seed
        return ListStrategy("random", [dict(p) for p in space.sample(budget, seed)], budget)
    if name in ("nsga2", "tpe"):
        return OptunaStrategy(name, space, objectives, constraints, budget, seed, getattr(search, "population", None))
    raise UserError(f"unknown search strategy {search.strategy!r}; allowed: {', '.join(STRATEGIES)}", "search.strategy")
