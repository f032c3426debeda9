"""Search efficiency: NSGA-II and TPE hypervolume vs evaluations on the quick-start space.

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

    python benchmarks/search_efficiency.py [--seeds 10] [--budget 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SPEC = Path(__file__).resolve().parents[1] / "designs" / "quickstart.yaml"
TARGET = 0.98
MARKS = (8, 17, 34, 50, 68, 100)


class Scorer:
    """Hypervolume of a set of evaluated points as a fraction of the exhaustive grid's, one scale for all."""

    def __init__(self, grid_points: Any, objectives: Sequence[Any], constraints: Sequence[Any]):
        from dse.pareto import Normalisation, feasible_mask, hypervolume, objective_matrix

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
    from dse.space import DesignSpace, Dimension

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
) -> list[dict[str, Any]]:
    """The explorer's ask -> evaluate -> tell loop with ``make_strategy``'s defaults; distinct points in order."""
    from dse.search import Observation, make_strategy

    search = SimpleNamespace(strategy=name, budget=budget, seed=seed, population=None)
    strategy = make_strategy(SimpleNamespace(search=search), space, objectives, constraints)
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


def oracle_points(scorer: Scorer, rows: Sequence[Mapping[str, Any]], target: float) -> int:
    """Fewest points (greedy on hypervolume gain) whose hypervolume reaches ``target``."""
    chosen: list[Mapping[str, Any]] = []
    remaining = list(rows)
    while remaining and scorer.fraction(chosen) < target:
        best = max(range(len(remaining)), key=lambda i: scorer.fraction([*chosen, remaining[i]]))
        chosen.append(remaining.pop(best))
    return len(chosen)


def first_reaching(curve: Sequence[float], target: float) -> int | None:
    return next((i + 1 for i, value in enumerate(curve) if value >= target - 1e-12), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="seeds per strategy (default 10)")
    ap.add_argument("--budget", type=int, default=100, help="evaluations per run for the curve (default 100)")
    args = ap.parse_args()

    from dse.cli import build_evaluator
    from dse.explore import explore
    from dse.spec import load_spec

    spec = load_spec(SPEC)
    objectives, constraints = spec.objective_list(), spec.constraint_list()
    _graph, evaluator = build_evaluator(spec)
    with tempfile.TemporaryDirectory(prefix="dse-search-eff-") as tmp:
        start = time.perf_counter()
        grid = explore(spec, Path(tmp) / "grid", evaluator, executor="local", workers=2, progress=False)
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
    print(f"oracle: {oracle_points(scorer, points[points['feasible']].to_dict('records'), TARGET)} points reach 98 %")
    print()
    marks = [m for m in MARKS if m <= args.budget]
    print(f"fraction of the exhaustive hypervolume after N evaluations, mean / worst of {args.seeds} seeds")
    print(f"{'strategy':<10}" + "".join(f"{'N=' + str(m):>15}" for m in marks) + f"{'N to 98 %':>16}")
    headline = {}
    for name in ("random", "nsga2", "tpe"):
        curves, to_target, at_tenth = [], [], []
        for seed in range(args.seeds):
            rows = run_strategy(name, seed, args.budget, space, objectives, constraints, answer)
            curve = scorer.curve(rows)
            curves.append(curve)
            to_target.append(first_reaching(curve, TARGET))
            short = run_strategy(name, seed, tenth, space, objectives, constraints, answer)  # budget = 10 %
            at_tenth.append(scorer.fraction(short))
        at_marks = [[c[min(m, len(c)) - 1] for c in curves] for m in marks]
        cells = "".join(f"{np.mean(values):>9.3f} /{min(values):.3f}" for values in at_marks)
        reached = sorted(n for n in to_target if n is not None)
        median = f"median {reached[len(reached) // 2]}" if len(reached) * 2 > len(to_target) else "not reached"
        print(f"{name:<10}{cells}{median:>16}")
        headline[name] = at_tenth
    print()
    print(f"with the budget set to 10 % of the space ({tenth} evaluations), fraction of the exhaustive hypervolume:")
    for name, values in headline.items():
        hits = sum(v >= TARGET for v in values)
        print(
            f"  {name:<7} mean {np.mean(values):.3f}  worst {min(values):.3f}  best {max(values):.3f}  "
            f"runs >= 98 %: {hits}/{len(values)}"
        )
    print("target: >= 0.98 within 10 % of the evaluations")


if __name__ == "__main__":
    main()
