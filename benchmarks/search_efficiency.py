"""Search efficiency: NSGA-II, TPE and GP hypervolume vs evaluations on the quick-start space.

The space of ``designs/quickstart.yaml`` (336 points, 3 objectives, area and power constraints) is
enumerated once with the grid strategy through ``dse.explore.explore``. Every later run is scored
against it with one normalisation (``dse.pareto.Normalisation`` over all feasible points of the
grid) and one reference point (1.1 in normalised units): the fraction of the exhaustive hypervolume
that the feasible points a run evaluated reach.

The samplers run as the explorer drives them (``make_strategy`` defaults, batches of
``batch_size(workers=2)``, ask -> evaluate -> tell) over the same 336 points: every range is
replaced by the values the grid visits (``sram_kib``'s log range by its 7 doublings), so
"10 % of the evaluations" means 34 of the 336 points. Answers come from the grid run, so the
figures measure the search, not the evaluator. Random search is the yardstick; "oracle" is
the fewest points any search could need (greedy on hypervolume gain over the grid's points).

Target: >= 98 % of the exhaustive hypervolume within 10 % of the evaluations.

Besides the curves it prints why the target is hard: the oracle's curve (how few points *could*
do it), the per-seed spread at the 10 % budget, and where each strategy's evaluations went (on the
exhaustive front, feasible but dominated, infeasible). ``--ablation`` runs the optuna settings
tried instead of the defaults (``dse.search.default_sampler`` lists the measured figures) through
the same ask/tell loop at the 10 % budget.

The GP sampler costs about a second per proposal in model fitting (a 100-point curve is ~3 minutes a
seed), so ``--strategies`` picks which to run.

    python benchmarks/search_efficiency.py [--seeds 10] [--budget 100] [--ablation] [--strategies random nsga2 tpe gp]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from dse.explore import explore_points
from dse.pareto import Normalisation, feasible_mask, hypervolume, objective_matrix
from dse.search import Observation, OptunaStrategy, default_population, default_startup_trials, make_strategy
from dse.session import build_evaluator
from dse.space import DesignSpace, Dimension
from dse.spec import load_spec

SPEC = Path(__file__).resolve().parents[1] / "designs" / "quickstart.yaml"
TARGET = 0.98
MARKS = (8, 17, 34, 50, 68, 100)
SamplerFactory = Callable[[int, int], Any]  # (seed, budget) -> optuna sampler


class Scorer:
    """Hypervolume of a set of evaluated points as a fraction of the exhaustive grid's, one scale for all."""

    def __init__(self, grid_points: Any, objectives: Sequence[Any], constraints: Sequence[Any]):

        self._objectives, self._constraints = list(objectives), list(constraints)
        self._feasible_mask, self._objective_matrix, self._hypervolume = feasible_mask, objective_matrix, hypervolume
        values = objective_matrix(grid_points, self._objectives)[feasible_mask(grid_points, self._constraints)]
        self.scale = Normalisation.from_values(values)
        self.exhaustive = hypervolume(self.scale.apply(values), self.scale.reference)

    def fraction(self, rows: Sequence[Mapping[str, Any]]) -> float:
        import pandas as pd

        if not rows:
            return 0.0
        frame = pd.DataFrame(list(rows)).assign(status="ok")
        feasible = self._feasible_mask(frame, self._constraints)
        values = self._objective_matrix(frame, self._objectives)[feasible]
        return self._hypervolume(self.scale.apply(values), self.scale.reference) / self.exhaustive

    def curve(self, rows: Sequence[Mapping[str, Any]]) -> list[float]:
        """Fraction after each evaluation (incremental: the front only grows)."""
        return [self.fraction(rows[: i + 1]) for i in range(len(rows))]


def grid_space(space: Any) -> Any:
    """The space the grid enumerates: every dimension reduced to the values the grid visits."""

    return DesignSpace(tuple(Dimension(d.name, d.ptype, values=tuple(d.grid_values())) for d in space.dims))


def run_strategy(
    name: str,
    seed: int,
    budget: int,
    space: Any,
    objectives: Sequence[Any],
    constraints: Sequence[Any],
    answer: Callable[[Mapping[str, Any]], dict[str, Any]],
    workers: int = 2,
    sampler: SamplerFactory | None = None,
) -> list[dict[str, Any]]:
    """The explorer's ask -> evaluate -> tell loop with ``make_strategy``'s defaults (or ``sampler(seed, budget)``
    in place of the default optuna sampler); distinct points in order."""

    if sampler is None:
        search = SimpleNamespace(strategy=name, budget=budget, seed=seed, population=None)
        strategy = make_strategy(SimpleNamespace(search=search), space, objectives, constraints)
    else:
        strategy = OptunaStrategy(name, space, objectives, constraints, budget, seed, sampler=sampler(seed, budget))
    seen: dict[tuple, dict[str, Any]] = {}
    proposed = 0
    while proposed < strategy.budget:
        proposals = strategy.ask(min(strategy.batch_size(workers), strategy.budget - proposed))
        if not proposals:
            break
        observations = []
        for proposal in proposals:
            key = tuple(sorted(proposal.point.items()))
            if key not in seen:
                seen[key] = answer(proposal.point)
            observations.append(Observation(ok=True, metrics=seen[key]))
        strategy.tell(proposals, observations)
        proposed += len(proposals)
    return list(seen.values())


def oracle_curve(scorer: Scorer, rows: Sequence[Mapping[str, Any]], target: float) -> list[float]:
    """Fraction after each of the fewest points (greedy on hypervolume gain) whose hypervolume reaches ``target``."""
    chosen: list[Mapping[str, Any]] = []
    curve: list[float] = []
    remaining = list(rows)
    while remaining and (not curve or curve[-1] < target):
        best = max(range(len(remaining)), key=lambda i: scorer.fraction([*chosen, remaining[i]]))
        chosen.append(remaining.pop(best))
        curve.append(scorer.fraction(chosen))
    return curve


def where_they_went(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(on the exhaustive front, feasible but dominated, infeasible) among a run's evaluated points."""
    front = sum(bool(row["pareto"]) for row in rows)
    feasible = sum(bool(row["feasible"]) for row in rows)
    return front, feasible - front, len(rows) - feasible


@contextmanager
def quiet() -> Iterator[None]:
    """Silence optuna's experimental/deprecation notes for the settings the ablation passes on purpose."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


def ablation() -> list[tuple[str, str, SamplerFactory]]:
    """The optuna settings measured against the defaults: (label, strategy, sampler factory)."""
    import math

    import optuna
    from optuna.samplers.nsgaii import BLXAlphaCrossover, SBXCrossover

    def tpe(**overrides: Any) -> SamplerFactory:
        def make(seed: int, budget: int) -> Any:
            settings = {"seed": seed, "multivariate": True, "n_startup_trials": default_startup_trials(budget)}
            with quiet():
                return optuna.samplers.TPESampler(**{**settings, **overrides})

        return make

    def gp(**overrides: Any) -> SamplerFactory:
        def make(seed: int, budget: int) -> Any:
            settings = {"seed": seed, "n_startup_trials": default_startup_trials(budget)}
            settings["deterministic_objective"] = True
            with quiet():
                return optuna.samplers.GPSampler(**{**settings, **overrides})

        return make

    def genetic(cls: Any = optuna.samplers.NSGAIISampler, population: int | None = None, **overrides: Any):
        def make(seed: int, budget: int) -> Any:
            with quiet():
                return cls(population_size=population or default_population(budget), seed=seed, **overrides)

        return make

    with quiet():
        sbx, blx = SBXCrossover(), BLXAlphaCrossover()
    return [
        ("tpe as default", "tpe", tpe()),
        ("tpe gamma ceil(0.15 n)", "tpe", tpe(gamma=lambda n: math.ceil(0.15 * n))),
        ("tpe gamma ceil(0.3 n)", "tpe", tpe(gamma=lambda n: math.ceil(0.3 * n))),
        ("tpe prior_weight 0.5", "tpe", tpe(prior_weight=0.5)),
        ("tpe consider_endpoints", "tpe", tpe(consider_endpoints=True)),
        ("tpe n_ei_candidates 48", "tpe", tpe(n_ei_candidates=48)),
        ("tpe constant_liar off", "tpe", tpe(constant_liar=False)),
        ("tpe independent", "tpe", tpe(multivariate=False)),
        ("tpe start-up 6", "tpe", tpe(n_startup_trials=6)),
        ("tpe start-up 12", "tpe", tpe(n_startup_trials=12)),
        ("nsga2 as default", "nsga2", genetic()),
        ("nsga2 population 10", "nsga2", genetic(population=10)),
        ("nsga2 population 12", "nsga2", genetic(population=12)),
        ("nsga2 SBX crossover", "nsga2", genetic(crossover=sbx)),
        ("nsga2 BLX crossover", "nsga2", genetic(crossover=blx)),
        ("nsga2 mutation_prob 0.5", "nsga2", genetic(mutation_prob=0.5)),
        ("nsga3", "nsga2", genetic(optuna.samplers.NSGAIIISampler)),
        ("gp as default", "gp", gp()),
        ("gp noisy-objective model", "gp", gp(deterministic_objective=False)),
        ("gp on raw objective values", "tpe", gp()),  # strategy name tpe: told without LogScale
    ]


def first_reaching(curve: Sequence[float], target: float) -> int | None:
    return next((i + 1 for i, value in enumerate(curve) if value >= target - 1e-12), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="seeds per strategy (default 10)")
    ap.add_argument("--budget", type=int, default=100, help="evaluations per run for the curve (default 100)")
    ap.add_argument(
        "--ablation", action="store_true", help="also run the optuna settings tried instead of the defaults"
    )
    ap.add_argument("--strategies", nargs="+", default=["random", "nsga2", "tpe", "gp"], help="which to run")
    args = ap.parse_args()

    spec = load_spec(SPEC)
    objectives, constraints = spec.objective_list(), spec.constraint_list()
    _graph, evaluator = build_evaluator(spec)
    start = time.perf_counter()
    grid = explore_points(spec, evaluator, executor="local", workers=2)
    grid_seconds = time.perf_counter() - start
    points = grid.points
    space = grid_space(spec.design_space())
    free = [d.name for d in space.free]
    by_key = {tuple(row[n] for n in free): row for row in points.to_dict("records")}
    scorer = Scorer(points, objectives, constraints)

    def answer(point: Mapping[str, Any]) -> dict[str, Any]:
        return by_key[tuple(point[n] for n in free)]

    tenth = round(0.1 * len(points))
    feasible = int(points["feasible"].sum())
    print(
        f"{spec.name}: {len(points)} points ({feasible} feasible, {int(points['pareto'].sum())} on the front), "
        f"objectives {', '.join(spec.objectives)}; grid run {grid_seconds:.1f} s"
    )
    print(f"exhaustive hypervolume {scorer.exhaustive:.4f} (normalised over the feasible grid points, reference 1.1)")
    oracle = oracle_curve(scorer, points[points["feasible"]].to_dict("records"), TARGET)
    print(f"oracle: {len(oracle)} points reach 98 %; after 1..{len(oracle)}: " + " ".join(f"{v:.3f}" for v in oracle))
    print()
    marks = [m for m in MARKS if m <= args.budget]
    print(f"fraction of the exhaustive hypervolume after N evaluations, mean / worst of {args.seeds} seeds")
    print(f"{'strategy':<10}" + "".join(f"{'N=' + str(m):>15}" for m in marks) + f"{'N to 98 %':>16}")
    headline, spent = {}, {}
    for name in args.strategies:
        curves, to_target, at_tenth, went = [], [], [], []
        for seed in range(args.seeds):
            rows = run_strategy(name, seed, args.budget, space, objectives, constraints, answer)
            curve = scorer.curve(rows)
            curves.append(curve)
            to_target.append(first_reaching(curve, TARGET))
            if args.budget == tenth:  # the curve's run is the 10 % run
                short = rows
            else:
                short = run_strategy(name, seed, tenth, space, objectives, constraints, answer)  # budget = 10 %
            at_tenth.append(scorer.fraction(short))
            went.append(where_they_went(short))
        at_marks = [[c[min(m, len(c)) - 1] for c in curves] for m in marks]
        cells = "".join(f"{np.mean(values):>9.3f} /{min(values):.3f}" for values in at_marks)
        reached = sorted(n for n in to_target if n is not None)
        median = f"median {reached[len(reached) // 2]}" if len(reached) * 2 > len(to_target) else "not reached"
        print(f"{name:<10}{cells}{median:>16}")
        headline[name] = at_tenth
        spent[name] = np.mean(went, axis=0)
    print()
    print(f"with the budget set to 10 % of the space ({tenth} evaluations), fraction of the exhaustive hypervolume:")
    for name, values in headline.items():
        hits = sum(v >= TARGET for v in values)
        print(
            f"  {name:<7} mean {np.mean(values):.3f}  worst {min(values):.3f}  best {max(values):.3f}  "
            f"runs >= 98 %: {hits}/{len(values)}"
        )
    print("per seed, sorted:")
    for name, values in headline.items():
        print(f"  {name:<7} " + " ".join(f"{v:.3f}" for v in sorted(values)))
    front_size = int(points["pareto"].sum())
    print(
        f"where the {tenth} evaluations went (mean): on the exhaustive front (of {front_size}) / dominated / infeasible"
    )
    for name, (front, dominated, infeasible) in spent.items():
        print(f"  {name:<7} {front:5.1f} / {dominated:5.1f} / {infeasible:5.1f}")
    print("target: >= 0.98 within 10 % of the evaluations")
    if args.ablation:
        print()
        print(
            f"ablation at the 10 % budget ({tenth} evaluations), {args.seeds} seeds: settings tried instead of defaults"
        )
        for label, name, sampler in ablation():
            values = [
                scorer.fraction(
                    run_strategy(name, seed, tenth, space, objectives, constraints, answer, sampler=sampler)
                )
                for seed in range(args.seeds)
            ]
            hits = sum(v >= TARGET for v in values)
            print(
                f"  {label:<26} mean {np.mean(values):.3f}  worst {min(values):.3f}  runs >= 98 %: {hits}/{len(values)}"
            )


if __name__ == "__main__":
    main()
