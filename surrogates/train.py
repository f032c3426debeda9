"""Training with honest accuracy: a held-out-workload split, a random split and cross-validation.

Every figure is measured on designs the measuring model never saw: the held-out split trains on some
networks and tests on another, the random split holds out whole designs (never single ops of a
design the model saw), and cross-validation folds by workload when there are three or more,
else by design. The model that is saved is then refitted on all the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from surrogates.evaluate import baseline_accuracy, design_accuracy
from surrogates.protocol import fit_surrogate


def design_keys(data: pd.DataFrame) -> pd.Series:
    return data["workload"].astype(str) + "#" + data["design"].astype(str)


def heldout_split(data: pd.DataFrame, holdout: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train on every workload except ``holdout``, test on ``holdout``."""
    known = sorted(data["workload"].unique())
    unknown = [w for w in holdout if w not in known]
    if unknown:
        raise UserError(
            f"--holdout {unknown[0]!r} is not a workload of the dataset; choose from: {', '.join(known)}",
            where="--holdout",
        )
    test = data["workload"].isin(list(holdout))
    if test.all():
        raise UserError(
            "--holdout names every workload of the dataset; leave at least one to train on", where="--holdout"
        )
    return data[~test], data[test]


def random_split(data: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out ``fraction`` of the designs (all of each held-out design's ops)."""
    keys = design_keys(data)
    unique = keys.unique()
    rng = np.random.default_rng(seed)
    test_keys = set(rng.choice(unique, size=max(1, int(round(fraction * len(unique)))), replace=False))
    test = keys.isin(test_keys)
    return data[~test], data[test]


def cross_validate(data: pd.DataFrame, kind: str, folds: int, seed: int, level: str = "op") -> dict[str, Any]:
    """Mean and spread of the per-fold latency/energy/area/power accuracy."""
    workloads = sorted(data["workload"].unique())
    if len(workloads) >= 3:
        groups = {w: i % folds for i, w in enumerate(workloads)}
        fold_of = data["workload"].map(groups).to_numpy()
        by = "workload"
    else:
        keys = design_keys(data)
        unique = keys.unique()
        rng = np.random.default_rng(seed)
        assignment = dict(zip(unique, rng.permutation(len(unique)) % folds))
        fold_of = keys.map(assignment).to_numpy()
        by = "design"
    per_fold = []
    for k in range(folds):
        test = fold_of == k
        if not test.any() or test.all():
            continue
        model = fit_surrogate(data[~test], kind, seed, level)
        per_fold.append(design_accuracy(model, data[test]))
    summary: dict[str, Any] = {"folds": len(per_fold), "grouped_by": by}
    for target in per_fold[0] if per_fold else []:
        for stat in ("r2", "mape"):
            values = [f[target][stat] for f in per_fold]
            summary[f"{target}_{stat}_mean"] = float(np.mean(values))
            summary[f"{target}_{stat}_std"] = float(np.std(values))
    return summary


def train(
    data: pd.DataFrame,
    kind: str = "gb",
    *,
    holdout: Sequence[str] | None = None,
    test_fraction: float = 0.2,
    cv_folds: int = 0,
    seed: int = 0,
    level: str = "op",
) -> Any:
    """Measure accuracy on the splits, then fit the returned model on all of ``data``."""
    metrics: dict[str, Any] = {}
    workloads = sorted(data["workload"].unique())
    if holdout is None and len(workloads) > 1:
        holdout = [workloads[-1]]
    if holdout:
        train_part, test_part = heldout_split(data, holdout)
        model = fit_surrogate(train_part, kind, seed, level)
        metrics["heldout_workload"] = {
            "test_workloads": list(holdout),
            "train_workloads": sorted(train_part["workload"].unique()),
            "designs": design_accuracy(model, test_part),
            "baseline_only": baseline_accuracy(test_part),
        }
    train_part, test_part = random_split(data, test_fraction, seed)
    model = fit_surrogate(train_part, kind, seed, level)
    metrics["random_split"] = {"test_fraction": test_fraction, "designs": design_accuracy(model, test_part)}
    if cv_folds >= 2:
        metrics["cross_validation"] = cross_validate(data, kind, cv_folds, seed, level)
    final = fit_surrogate(data, kind, seed, level)
    final.metrics = metrics
    return final
