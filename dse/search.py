"""Search strategies: which points to evaluate next.

``grid`` and ``random`` know their whole list up front. ``nsga2``, ``tpe`` and ``gp`` are
optuna's multi-objective samplers (NSGA-II, multivariate TPE, Gaussian-process Bayesian
optimisation) driven through ask/tell in batches (one batch = one point per worker);
constraint violations go to optuna as trial constraints so infeasible designs rank
below feasible ones, and failed points are told as FAIL. On resume the strategy's earlier proposals are replayed into
the study from the store, so the sampler continues instead of starting over.
"""

from __future__ import annotations

import importlib.util
import math
import random
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from dse.errors import UserError
from dse.objectives import Constraint, Objective
from dse.space_columns import Columns, grid_columns

STRATEGIES = ("grid", "random", "nsga2", "tpe", "gp")
SAMPLERS = ("nsga2", "tpe", "gp")  # the strategies optuna drives
DEFAULT_SEED = 0
MAX_GRID = 1_000_000  # default search.max_grid: the largest grid evaluated whole without a budget
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
    """A fixed sequence of points (grid, random), streamed: resuming is simply skipping what the store has.

    ``points`` may be any iterable (a generator over a space of any size): it is read one batch at a
    time and never listed, so memory stays flat in the number of points.
    """

    def __init__(self, name: str, points: Iterable[dict[str, Any]], budget: int, notes: list[str] | None = None):
        self.name = name
        self.tag = name
        self.budget = budget
        self.notes = notes or []
        self._points = iter(points)

    def batch_size(self, workers: int) -> int:
        """Nothing to learn between batches: keep every worker busy with a deep queue."""
        return max(1, workers) * 16

    def ask(self, n: int) -> list[Proposal]:
        return [Proposal(dict(point)) for point in islice(self._points, n)]


class GridStrategy(ListStrategy):
    """The grid in ``DesignSpace.grid`` order. A chunked sweep asks it for columns (``ask_columns``), computed
    from the points' grid index; ``ask`` walks the same points one dict at a time."""

    def __init__(self, space: Any, budget: int, notes: list[str] | None = None):
        super().__init__("grid", (), budget, notes)
        self.space = space
        self._next = 0  # grid index of the next point
        self._walk: Iterator[dict[str, Any]] | None = None

    def ask_columns(self, n: int) -> Columns | None:
        """The next ``n`` points as columns ({} when the grid is done); None when the grid cannot be
        indexed as arrays (a dimension too large to list), and the sweep asks point by point instead."""
        n = min(n, self.budget - self._next)
        if n <= 0:
            return {}
        columns = grid_columns(self.space, self._next, n)
        if columns is not None:
            self._next += n
        return columns

    def ask(self, n: int) -> list[Proposal]:
        if self._walk is None:
            self._walk = islice(self.space.grid(), self._next, self.budget)
        proposals = [Proposal(dict(point)) for point in islice(self._walk, n)]
        self._next += len(proposals)
        return proposals


def ordinal_values(dim: Any) -> tuple | None:
    """The sorted numbers of a discrete numeric dimension (e.g. rows: [16, 32, 64]); None for anything else.

    Listed numbers are ordered quantities: the samplers see their index in this tuple as an integer,
    so TPE's kernels carry what it learned about 32 rows over to 16 and 64, which a categorical cannot.
    """
    values = getattr(dim, "values", None)
    if values is None or len(values) < 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return tuple(sorted(values))


def distribution_for(dim: Any) -> BaseDistribution:
    """Dimension -> optuna distribution: listed numbers are an ordinal index (see ``ordinal_values``), other
    listed values categorical, ranges int or float (log if asked)."""
    ordinal = ordinal_values(dim)
    if ordinal is not None:
        return IntDistribution(0, len(ordinal) - 1)
    if dim.values is not None:
        return CategoricalDistribution(list(dim.values))
    log = bool(getattr(dim, "log", False))
    step = getattr(dim, "step", None)
    if str(dim.ptype).lower() in ("int", "integer"):
        int_step = 1 if log or not step else int(step)
        return IntDistribution(int(dim.low), int(dim.high), log=log, step=int_step)
    return FloatDistribution(float(dim.low), float(dim.high), log=log, step=None if log or not step else float(step))


@dataclass(frozen=True)
class Axis:
    """One free dimension as optuna sees it, and the translation between optuna's values and the point's."""

    name: str
    distribution: BaseDistribution
    ordinal: tuple | None = None  # the numbers an ordinal index stands for

    @classmethod
    def of(cls, dim: Any) -> Axis:
        return cls(dim.name, distribution_for(dim), ordinal_values(dim))

    def decode(self, raw: Any) -> Any:
        return raw if self.ordinal is None else self.ordinal[int(raw)]

    def encode(self, value: Any) -> Any:
        """The optuna value for a point's value; None when the value is not in this dimension."""
        if self.ordinal is None:
            return value if _in_distribution(self.distribution, value) else None
        for index, allowed in enumerate(self.ordinal):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isclose(value, allowed):
                return index
        return None


RESAMPLE_TRIES = 24  # asks per proposal before a sampler stuck on seen points gets a random unseen one


class OptunaStrategy(SearchStrategy):
    """optuna's NSGA-II, multivariate TPE or GP sampler over the free dimensions, driven by ask/tell.

    Every proposal is a point this study has not proposed before, so the budget counts distinct
    designs: when the sampler asks for a seen point, that trial is told the known result (or, while
    the point is still being evaluated, told together with it) and the sampler is asked again.

    The GP sampler is told each objective on a log scale (``LogScale``): latency, energy and area span
    decades across a space, and a Gaussian process fitted to the raw values sees only the largest
    designs. The transform is monotone, so which designs dominate which is unchanged.
    """

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
        sampler: optuna.samplers.BaseSampler | None = None,
    ):
        """``sampler`` replaces ``default_sampler``'s choice (benchmarks compare optuna settings through it)."""
        if not objectives:
            raise UserError(f"search strategy {name!r} needs at least one objective", where="objectives")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.name = name
        self.budget = budget
        self.notes = []
        self._objectives = list(objectives)
        self._constraints = list(constraints)
        self._fixed = dict(space.fixed)
        self._axes = [Axis.of(dim) for dim in space.free]
        self._distributions = {axis.name: axis.distribution for axis in self._axes}
        self._space_size = space.sample_space_size() if hasattr(space, "sample_space_size") else None
        self._results: dict[tuple, Observation | None] = {}  # every proposed point: its result, None while pending
        self._twins: dict[tuple, list[optuna.trial.Trial]] = {}  # repeat asks of a pending point, told with it
        seed = DEFAULT_SEED if seed is None else seed
        self._rng = random.Random(seed)
        self._scales = [LogScale() for _ in self._objectives] if name == "gp" else None
        self.tag = f"{name}:seed={seed}"  # NSGA-II's population may change between runs; the history still applies
        if sampler is None:
            sampler = default_sampler(name, budget, seed, population)
        directions = ["minimize" if o.direction == "min" else "maximize" for o in objectives]
        self.study = optuna.create_study(directions=directions, sampler=sampler)

    def ask(self, n: int) -> list[Proposal]:
        proposals = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            while len(proposals) < n and not self._exhausted():
                trial, key = self._ask_unseen()
                self._results[key] = None
                proposals.append(Proposal(self.point_of(trial), trial))
        return proposals

    def tell(self, proposals: Sequence[Proposal], observations: Sequence[Observation]) -> None:
        for proposal, observation in zip(proposals, observations):
            assert proposal.trial is not None, "an optuna strategy was told about a point it did not propose"
            key = self._key(proposal.point)
            self._results[key] = observation
            for trial in [proposal.trial, *self._twins.pop(key, [])]:
                self._finish(trial, observation)

    def replay(self, history: Sequence[tuple[Mapping[str, Any], Observation]]) -> int:
        replayed = 0
        for point, observation in history:
            params = {axis.name: axis.encode(point.get(axis.name)) for axis in self._axes}
            if any(value is None for value in params.values()):
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
            self._results[self._key(point)] = observation
            replayed += 1
        return replayed

    def point_of(self, trial: optuna.trial.FrozenTrial | optuna.trial.Trial) -> dict[str, Any]:
        """The design point a trial of this study stands for (its params decoded, fixed params merged)."""
        return {**self._fixed, **self._decode(trial.params)}

    def _ask_unseen(self) -> tuple[optuna.trial.Trial, tuple]:
        """A trial at a point not proposed before; repeats are answered (now or with their twin) and re-asked."""
        for _ in range(RESAMPLE_TRIES):
            trial = self.study.ask(self._distributions)
            key = self._key(self._decode(trial.params))
            if key not in self._results:
                return trial, key
            known = self._results[key]
            if known is None:
                self._twins.setdefault(key, []).append(trial)
            else:
                self._finish(trial, known)
        unseen = self._random_unseen()
        if unseen is not None:
            self.study.enqueue_trial(unseen)
        trial = self.study.ask(self._distributions)
        return trial, self._key(self._decode(trial.params))

    def _random_unseen(self) -> dict[str, Any] | None:
        """Optuna params of a random point not proposed yet (None if random draws keep hitting seen ones)."""
        for _ in range(1000):
            params = {axis.name: _draw(axis.distribution, self._rng) for axis in self._axes}
            if self._key(self._decode(params)) not in self._results:
                return params
        return None

    def _exhausted(self) -> bool:
        return self._space_size is not None and len(self._results) >= self._space_size

    def _decode(self, params: Mapping[str, Any]) -> dict[str, Any]:
        by_name = {axis.name: axis for axis in self._axes}
        return {name: by_name[name].decode(value) for name, value in params.items()}

    def _key(self, point: Mapping[str, Any]) -> tuple:
        return tuple(point.get(axis.name) for axis in self._axes)

    def _finish(self, trial: optuna.trial.Trial, observation: Observation) -> None:
        values = self._objective_values(observation)
        if values is None:
            self.study.tell(trial, state=TrialState.FAIL)
            return
        violations = self._violations(observation)
        trial.set_user_attr("constraints", violations)
        for constraint, violation in zip(self._constraints, violations):
            trial.set_constraint(str(constraint), violation)
        self.study.tell(trial, values)

    def _objective_values(self, observation: Observation) -> list[float] | None:
        if not observation.ok:
            return None
        values = [observation.metrics.get(o.metric, math.nan) for o in self._objectives]
        if any(v is None or not math.isfinite(float(v)) for v in values):
            return None  # optuna cannot rank a design without all objective values
        if self._scales is not None:
            return [scale(float(v)) for scale, v in zip(self._scales, values)]
        return [float(v) for v in values]

    def _violations(self, observation: Observation) -> list[float]:
        return [min(c.violation(observation.metrics), MAX_VIOLATION) for c in self._constraints]


@dataclass
class LogScale:
    """A monotone, log-like view of one objective for a sampler that models values (the GP).

    ``log1p(max(v, 0) / unit)`` with ``unit`` a hundredth of the first positive value told: log-shaped
    over the decades a design space spans (values above the unit), defined at zero (a design with no
    DSPs) and fixed once set, so every trial of a study (and its replay on resume) is told on one scale.
    """

    unit: float | None = None

    def __call__(self, value: float) -> float:
        if self.unit is None and value > 0:
            self.unit = value / 100.0
        return math.log1p(max(value, 0.0) / self.unit) if self.unit else max(value, 0.0)


def _draw(distribution: BaseDistribution, rng: random.Random) -> Any:
    """One uniform value of an optuna distribution (log-uniform for log ranges)."""
    if isinstance(distribution, CategoricalDistribution):
        return rng.choice(distribution.choices)
    low, high = distribution.low, distribution.high
    if isinstance(distribution, IntDistribution):
        if distribution.log:
            return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high))))))
        return low + distribution.step * rng.randrange((high - low) // distribution.step + 1)
    assert isinstance(distribution, FloatDistribution)
    if distribution.log:
        return math.exp(rng.uniform(math.log(low), math.log(high)))
    if distribution.step is not None:
        return low + distribution.step * rng.randrange(round((high - low) / distribution.step) + 1)
    return rng.uniform(low, high)


def _in_distribution(distribution: BaseDistribution, value: Any) -> bool:
    try:
        internal = distribution.to_internal_repr(value)
    except (ValueError, TypeError):
        return False
    return distribution._contains(internal)


def default_sampler(name: str, budget: int, seed: int, population: int | None = None) -> optuna.samplers.BaseSampler:
    """What ``strategy: nsga2``, ``tpe`` or ``gp`` gets: NSGA-II with ``default_population``; multivariate
    TPE (parameters sampled jointly, so it can learn how they interact) with ``default_startup_trials``;
    or optuna's GPSampler with ``default_startup_trials`` and ``deterministic_objective=True`` (an
    analytical evaluator gives the same figures for the same point, so the GP interpolates instead of
    smoothing) -- all seeded, everything else optuna's defaults.

    The GP (``benchmarks/search_efficiency.py``, same 34-of-336 budget): 0.991 mean over 20 seeds
    (median 0.998, 18/20 >= 98 %, worst 0.915; TPE 0.974 on the same seeds) with objectives on
    ``LogScale``; over 10 seeds, on raw values 0.975 (5/10), and without ``deterministic_objective``
    see ``--ablation``. It costs about a second of model fitting per proposal, which an evaluation
    of seconds or more amortises.

    Why optuna's defaults: on the quick-start space (336 points, 3 objectives, 2 constraints) with a budget of
    34 points (10 %), the mean fraction of the exhaustive hypervolume over 40 seeds (``benchmarks/
    search_efficiency.py --seeds 40 --ablation``; * = 20 seeds, measured the same way; SE about 0.003) is
    0.972 for TPE as here, and no alternative beats it: gamma ceil(0.15 n) 0.971, ceil(0.3 n) 0.952*,
    ceil(0.05 n) 0.958*, the size of the current front 0.915*; prior_weight 0.5 0.970, 0.25 0.969*;
    n_ei_candidates 48 0.969; constant_liar off 0.970; consider_endpoints 0.963; independent TPE 0.950;
    start-up 6 / 12 trials 0.963 / 0.962; old-MOTPE hypervolume-contribution weights 0.966*; seen points masked
    out of the acquisition 0.969*; a Sobol, Latin-hypercube or corner start design 0.961 / 0.968 / 0.953-0.971*;
    listed numbers as categoricals 0.949* or as log-int over the values 0.961* instead of an ordinal index.
    NSGA-II: population 8 0.928, 10 0.934, 12 0.922; SBX / BLX crossover 0.927 / 0.929; mutation_prob 0.5 0.920;
    NSGA-III 0.933; random search 0.917. optuna 4.9 also deprecated gamma, prior_weight and consider_endpoints.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if name == "nsga2":
            return optuna.samplers.NSGAIISampler(population_size=population or default_population(budget), seed=seed)
        if name == "gp":
            return gp_sampler(seed, default_startup_trials(budget))
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=default_startup_trials(budget))


def gp_sampler(seed: int, startup_trials: int) -> optuna.samplers.BaseSampler:
    """optuna's GPSampler; it fits its Gaussian process with PyTorch, which this strategy alone needs."""
    if importlib.util.find_spec("torch") is None:
        raise UserError(
            "strategy gp needs PyTorch (optuna's GPSampler fits its model with it); install it with "
            "`pip install 'dse[gp]'` (or the CPU build of torch), or use strategy tpe",
            where="search.strategy",
        )
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup_trials, deterministic_objective=True)


def default_population(budget: int) -> int:
    """NSGA-II generation size when the spec gives none: about ten generations in the budget, 8 to 50 designs.

    Measured on the quick-start space (benchmarks/search_efficiency.py): 8 beat 4, 6, 10, 12 and 16 at a
    34-point budget, and at 100 points 8-10 beat 25; too few generations leave NSGA-II a random search.
    """
    return max(8, min(50, budget // 10))


def default_startup_trials(budget: int) -> int:
    """TPE's random start-up trials: a quarter of the budget, 4 to 10 (optuna's default is 10).

    A short budget cannot afford ten blind points; fewer than four leave the first model nothing to fit.
    """
    return max(4, min(10, budget // 4))


def check_grid_size(size: int, budget: int | None, max_grid: int | None) -> None:
    """Refuse a whole grid larger than ``search.max_grid`` (default ``MAX_GRID``) when no budget caps it.

    The size is exact (a Python int), computed before any point is listed, so a space of 10^20 points
    is refused in microseconds instead of exhausting memory.
    """
    limit = MAX_GRID if max_grid is None else int(max_grid)
    if budget is None and size > limit:
        raise UserError(
            f"the grid has {size:,} points, more than search.max_grid ({limit:,}); give search.budget: N to "
            "evaluate the first N grid points, use a sampling strategy with a budget (random, tpe, nsga2, gp), "
            "or raise search.max_grid",
            where="search",
        )


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
        check_grid_size(size, budget, getattr(search, "max_grid", None))
        budget = size if budget is None else min(int(budget), size)
        notes = []
        if budget < size:
            notes.append(f"grid has {size} points; the budget of {budget} evaluates the first {budget} in grid order")
        return GridStrategy(space, budget, notes)
    if budget is None:
        raise UserError(f"search strategy {name!r} needs a budget (number of points)", where="search.budget")
    budget = int(budget)
    if name == "random":
        seed = DEFAULT_SEED if seed is None else seed
        return ListStrategy("random", space.iter_sample(budget, seed), budget)
    if name in SAMPLERS:
        return OptunaStrategy(name, space, objectives, constraints, budget, seed, getattr(search, "population", None))
    raise UserError(f"unknown search strategy {search.strategy!r}; allowed: {', '.join(STRATEGIES)}", "search.strategy")
