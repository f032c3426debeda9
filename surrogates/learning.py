"""What every surrogate family learns with: the learned target, the regressors, the model file.

The three families (``surrogates.systolic.model`` per op or per design, ``surrogates.contract.model`` per
design, ``surrogates.layer.model`` per layer) all learn a value as a log ratio to a cheap estimate of the
same value (a closed form, or a cheap mapper), so one model spans decades and learns only what the
estimate misses. That target, the regressors that learn it and the file a fitted model is saved in are
defined here once.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dse
from dse.errors import UserError
from dse.files import atomic_write

MODEL_KINDS = ("gb", "rf")
FORMAT = "dse-surrogate"
# dataset columns of a design's template parameters (``param_<name>``), kept to re-evaluate its point
PARAM_PREFIX = "param_"
# the whole-design figures a dataset stores as the truth (``design_<metric>``) of every design
DESIGN_TARGETS = ("latency_cycles", "latency_ms", "energy_mj", "area_mm2", "power_w")
TINY = 1e-30


def to_target(value: Any, base: Any, offset: Any = 1.0) -> np.ndarray:
    """The learned target: ``log((value + offset) / (base + offset))``, a value as a log ratio to its cheap
    estimate. ``offset`` keeps zeros finite (1 for cycles, energy and FPGA DSPs; 0 for the contract's
    metrics, which are never 0 where they exist); below ``TINY`` a side is clamped, and where both sides are
    0 (a metric the design does not have) the target is 0."""
    value = np.asarray(value, dtype=float) + offset
    base = np.asarray(base, dtype=float) + offset
    both_zero = (value <= 0) & (base <= 0)
    return np.where(both_zero, 0.0, np.log(np.maximum(value, TINY) / np.maximum(base, TINY)))


def from_target(target: Any, base: Any, offset: Any = 1.0) -> np.ndarray:
    """Invert ``to_target``: the value a predicted target gives on a (non-negative) estimate, clipped at zero."""
    return np.maximum((np.maximum(base, 0.0) + offset) * np.exp(target) - offset, 0.0)


def _boosting(
    seed: int,
    max_iter: int,
    learning_rate: float,
    max_leaf_nodes: int,
    min_samples_leaf: int = 8,
    l2_regularization: float = 1e-3,
) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        max_iter=max_iter,
        learning_rate=learning_rate,
        max_leaf_nodes=max_leaf_nodes,
        min_samples_leaf=min_samples_leaf,
        l2_regularization=l2_regularization,
        early_stopping=False,
        random_state=seed,
    )


def _forest(seed: int, n_estimators: int) -> Any:
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(
        n_estimators=n_estimators, min_samples_leaf=2, max_features=0.6, n_jobs=2, random_state=seed
    )


def _unknown_kind(kind: str) -> UserError:
    return UserError(f"unknown model kind {kind!r}; choose one of: {', '.join(MODEL_KINDS)}", where="--model")


def make_regressor(kind: str, multi_output: bool, seed: int = 0) -> Any:
    """The op-level regressor. gb: one HistGradientBoosting per target (wrapped for several); rf: one
    multi-output forest."""
    from sklearn.multioutput import MultiOutputRegressor

    if kind == "gb":
        gb = _boosting(seed, max_iter=400, learning_rate=0.08, max_leaf_nodes=63)
        return MultiOutputRegressor(gb) if multi_output else gb
    if kind == "rf":
        return _forest(seed, 64)
    raise _unknown_kind(kind)


def make_area_regressor(kind: str, seed: int = 0) -> Any:
    """Area is the catalog floor times a smooth overhead of a few design features: a small model suffices."""
    if kind == "gb":
        return _boosting(seed, 40, 0.2, 15, min_samples_leaf=20, l2_regularization=0.0)
    if kind == "rf":  # as many trees as the op-level forest: uncertainty pairs them up tree by tree
        return _forest(seed, 64)
    raise _unknown_kind(kind)


def make_design_regressor(kind: str, seed: int = 0) -> Any:
    """The design-level regressor of the two log ratios: one tree walk per design, kept small for speed."""
    from sklearn.multioutput import MultiOutputRegressor

    if kind == "gb":
        return MultiOutputRegressor(_boosting(seed, max_iter=30, learning_rate=0.2, max_leaf_nodes=31))
    if kind == "rf":
        return _forest(seed, 32)
    raise _unknown_kind(kind)


def versions() -> dict[str, str]:
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "pandas": pd.__version__,
        "dse": dse.__version__,
    }


def save_model(model: Any, path: str | Path) -> Path:
    """Write any surrogate (joblib, compressed) with the format tag ``read_model_file`` checks."""
    import joblib

    payload = {"format": FORMAT, "model": model}
    return atomic_write(path, lambda temporary: joblib.dump(payload, temporary, compress=3))


def read_model_file(path: str | Path) -> Any:
    """The surrogate stored in ``path``; one clear error for a missing, corrupt or foreign file."""
    import joblib

    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"surrogate model file not found (looked for {path.resolve()}); train one with "
            "`dse surrogate train DATA -o MODEL.joblib`",
            where=str(path),
        )
    try:
        payload = joblib.load(path)
    except Exception as exc:  # a corrupt or foreign file: say which, not a traceback
        raise UserError(f"cannot be read as a surrogate model ({type(exc).__name__}: {exc})", where=str(path)) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise UserError("is not a dse surrogate model; train one with `dse surrogate train`", where=str(path))
    return payload["model"]
