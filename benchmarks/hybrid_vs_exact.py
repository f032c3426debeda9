"""Hybrid vs exact on a space small enough to enumerate: how much of the exact Pareto front the
hybrid evaluator recovers, and what fraction of the points it evaluated exactly.

Target: >= 95 % of the exact front with <= 20 % of the evaluations; the wall time of each hybrid run is
printed as a share of the exact run's. Spaces: designs/resnet18_hybrid.yaml (fold closed form),
designs/resnet18_cpsat_hybrid.yaml (CP-SAT mapper as the truth), designs/rdu_hybrid.yaml (RDU section solver).

    python benchmarks/hybrid_vs_exact.py [--spec designs/resnet18_cpsat_hybrid.yaml] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from dse.explore import explore  # noqa: E402
from dse.session import build_evaluator  # noqa: E402
from dse.spec import load_spec, parse_spec  # noqa: E402
from surrogates.hybrid import wrap_evaluator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def front_keys(points: pd.DataFrame, params: list[str]) -> set[tuple]:
    front = points[points["pareto"]]
    return {tuple(str(row[p]) for p in params) for _, row in front.iterrows()}


def with_evaluator(spec_path: Path, evaluator: str, seed: int):
    import yaml

    data = yaml.safe_load(spec_path.read_text())
    data["evaluator"] = evaluator
    data.setdefault("search", {})["seed"] = seed
    return parse_spec(yaml.safe_dump(data, sort_keys=False), spec_path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "designs" / "resnet18_hybrid.yaml"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    spec_path = Path(args.spec)
    base = load_spec(spec_path)
    params = [d.name for d in base.design_space().free]
    with tempfile.TemporaryDirectory() as tmp:
        exact_spec = with_evaluator(spec_path, "analytical", 0)
        _graph, exact_eval = build_evaluator(exact_spec)
        start = time.perf_counter()
        exact = explore(exact_spec, Path(tmp) / "exact", exact_eval, workers=args.workers, progress=False)
        exact_s = time.perf_counter() - start
        truth = front_keys(exact.points, params)
        print(f"{base.name}: {len(exact.points)} points, exact front {len(truth)} points ({exact_s:.1f} s exact)")
        print("target: >= 95 % of the exact front with <= 20 % of the evaluations")
        print(
            f"{'seed':>4} {'exact evals':>12} {'fraction':>9} {'front found':>12} {'recovered':>10} {'seconds':>8} "
            f"{'wall vs exact':>14}"
        )
        for seed in args.seeds:
            spec = with_evaluator(spec_path, "hybrid", seed)
            graph, exact_eval = build_evaluator(spec)
            evaluator = wrap_evaluator(spec, graph, exact_eval)
            start = time.perf_counter()
            result = explore(spec, Path(tmp) / f"hybrid{seed}", evaluator, workers=args.workers, progress=False)
            seconds = time.perf_counter() - start
            n_exact = int(result.points["exact"].astype(bool).sum())
            found = front_keys(result.points, params)
            recovered = len(found & truth) / max(1, len(truth))
            fraction = n_exact / max(1, len(result.points))
            print(
                f"{seed:>4} {n_exact:>12} {fraction:>8.1%} {len(found):>12} {recovered:>9.1%} {seconds:>8.1f} "
                f"{seconds / exact_s:>13.1%}"
            )


if __name__ == "__main__":
    main()
