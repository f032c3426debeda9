"""Hybrid vs exact on a space small enough to enumerate: how much of the exact Pareto front the
hybrid evaluator recovers, with what share of the exact evaluations, in what share of the wall time.

Definitions (all measured inside one run of this script, so a change in the exact evaluator's speed
moves both sides):
- exact evals: points the hybrid evaluated exactly, as a share of the points of the space (the exact
  run's point count);
- front (key): share of the exact run's Pareto points that are Pareto points of the hybrid run (same
  design parameters);
- front (0.5 %): share of the exact run's Pareto points whose objective vector is matched, every
  objective within 0.5 % (relative), by a Pareto point of the hybrid run -- designs with equal
  objectives are interchangeable on a front;
- HV ratio: hypervolume of the hybrid run's front over that of the exact front, both normalised on
  the exact run's feasible points (reference 1.1 x the worst, dse.pareto.Normalisation);
- pred on front: predicted (exact = false) points on the hybrid run's front; must be 0 (the front the
  hybrid reports is made of exactly evaluated points only);
- wall vs exact: hybrid explore() wall time over the exact explore() wall time, same workers.

Target: front >= 95 % with exact evals <= 20 %. Spaces: designs/resnet18_cpsat_hybrid.yaml (CP-SAT
mapper as the truth), designs/rdu_hybrid.yaml (the RDU's exact section mapper, 288 points, latency vs
area under a power cap), designs/resnet18_hybrid.yaml (fold closed form). The load average is printed:
on a shared machine the wall-time ratio moves with the other jobs (both runs are inside this one).

    python benchmarks/hybrid_vs_exact.py --spec designs/resnet18_cpsat_hybrid.yaml --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from dse.explore import explore  # noqa: E402
from dse.pareto import Normalisation, hypervolume, objective_matrix  # noqa: E402
from dse.session import build_evaluator  # noqa: E402
from dse.spec import Spec, load_spec, parse_spec  # noqa: E402
from surrogates.explorer.hybrid import wrap_evaluator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MATCH_TOLERANCE = 0.005


def front_keys(points: pd.DataFrame, params: list[str]) -> set[tuple]:
    front = points[points["pareto"]]
    return {tuple(str(row[p]) for p in params) for _, row in front.iterrows()}


def matched_share(truth: np.ndarray, found: np.ndarray, tolerance: float = MATCH_TOLERANCE) -> float:
    """Share of ``truth`` rows matched by some ``found`` row, every column within ``tolerance`` (relative)."""
    if len(truth) == 0:
        return 1.0
    if len(found) == 0:
        return 0.0
    scale = np.maximum(np.abs(truth), 1e-300)[:, None, :]
    close = np.all(np.abs(truth[:, None, :] - found[None, :, :]) <= tolerance * scale, axis=2)
    return float(close.any(axis=1).mean())


def with_evaluator(spec_path: Path, evaluator: str, seed: int) -> Spec:
    data = yaml.safe_load(spec_path.read_text())
    data["evaluator"] = evaluator
    data.setdefault("search", {})["seed"] = seed
    return parse_spec(yaml.safe_dump(data, sort_keys=False), spec_path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "designs" / "resnet18_cpsat_hybrid.yaml"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    spec_path = Path(args.spec)
    base = load_spec(spec_path)
    params = [d.name for d in base.design_space().free]
    objectives = list(base.objective_list())
    with tempfile.TemporaryDirectory() as tmp:
        exact_spec = with_evaluator(spec_path, "analytical", 0)
        _graph, exact_eval = build_evaluator(exact_spec)
        start = time.perf_counter()
        exact = explore(exact_spec, Path(tmp) / "exact", exact_eval, workers=args.workers, progress=False)
        exact_s = time.perf_counter() - start
        space_size = len(exact.points)
        truth = front_keys(exact.points, params)
        truth_values = objective_matrix(exact.points[exact.points["pareto"]], objectives)
        norm = Normalisation.from_values(objective_matrix(exact.points[exact.points["feasible"]], objectives))
        truth_hv = hypervolume(norm.apply(truth_values), norm.reference)
        print(f"{base.name}: {space_size} points, exact front {len(truth)} points ({exact_s:.1f} s exact)")
        print("target: front >= 95 % with exact evals <= 20 % of the space")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (1 min) at the exact run's end")
        header = ("seed", "exact evals", "share", "front", "key", "0.5 %", "HV ratio", "pred on front", "s", "wall")
        print("{:>4} {:>11} {:>6} {:>6} {:>6} {:>6} {:>8} {:>13} {:>6} {:>6}".format(*header))
        rows = []
        for seed in args.seeds:
            spec = with_evaluator(spec_path, "hybrid", seed)
            graph, exact_eval = build_evaluator(spec)
            evaluator = wrap_evaluator(spec, graph, exact_eval)
            start = time.perf_counter()
            result = explore(spec, Path(tmp) / f"hybrid{seed}", evaluator, workers=args.workers, progress=False)
            seconds = time.perf_counter() - start
            points = result.points
            n_exact = int(points["exact"].astype(bool).sum())
            front = points[points["pareto"]]
            predicted_on_front = int((~front["exact"].astype(bool)).sum())
            found_values = objective_matrix(front, objectives)
            row = {
                "share": n_exact / max(1, space_size),
                "key": len(front_keys(points, params) & truth) / max(1, len(truth)),
                "match": matched_share(truth_values, found_values),
                "hv": hypervolume(norm.apply(found_values), norm.reference) / truth_hv if truth_hv > 0 else 1.0,
                "wall": seconds / exact_s,
            }
            rows.append(row)
            print(
                f"{seed:>4} {n_exact:>11} {row['share']:>6.1%} {len(front):>6} {row['key']:>6.1%} "
                f"{row['match']:>6.1%} {row['hv']:>8.4f} {predicted_on_front:>13} {seconds:>6.1f} {row['wall']:>6.1%}"
            )
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
        worst = {k: float(np.min([r[k] for r in rows])) for k in ("key", "match", "hv")}
        print(
            f"mean over {len(rows)} seeds: exact evals {mean['share']:.1%}, front (key) {mean['key']:.1%} "
            f"(worst {worst['key']:.1%}), front (0.5 %) {mean['match']:.1%} (worst {worst['match']:.1%}), "
            f"HV ratio {mean['hv']:.4f} (worst {worst['hv']:.4f}), wall vs exact {mean['wall']:.1%}"
        )


if __name__ == "__main__":
    main()
