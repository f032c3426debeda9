"""The trained surrogate: per-op regressors for cycles and energy, a per-design regressor for area.

Per-op models generalise across networks (an op is an op, whatever network it sits in); a design's
latency and energy are the sums over its ops, its power is energy / latency. Targets are logs of
ratios to the closed-form baselines of ``surrogates.features`` so one model spans decades and learns
only what the closed forms miss.

A saved model carries its feature schema, the library versions it was trained with and the
accuracy measured on data it never saw; loading refuses a model whose schema does not match.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dse
from dse.errors import UserError
from dse.files import atomic_write
from surrogates import features as feat

MODEL_KINDS = ("gb", "rf")
LEVELS = ("op", "design")
FORMAT = "dse-surrogate"


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


def op_targets(data: pd.DataFrame) -> np.ndarray:
    """log ratios of the true per-op cycles and energy to their closed-form baselines."""
    return np.column_stack(
        [
            feat.to_log_ratio(data["cycles"].to_numpy(), data["est_cycles"].to_numpy()),
            feat.to_log_ratio(data["energy_pj"].to_numpy(), data["est_energy_pj"].to_numpy()),
        ]
    )


def op_weights(data: pd.DataFrame) -> np.ndarray:
    """Weight each op by its share of its design's baseline cycles and energy (times its multiplicity):
    a design's error is the share-weighted sum of its ops' errors."""
    keys = [data["workload"].to_numpy(), data["design"].to_numpy()]
    count = data["op_count"].to_numpy()
    shares = []
    for column in ("est_cycles", "est_energy_pj"):
        part = data[column].to_numpy() * count
        total = pd.Series(part).groupby(keys).transform("sum").to_numpy()
        shares.append(part / np.maximum(total, 1e-30))
    return 0.02 + (shares[0] + shares[1]) / 2


def area_target(designs: pd.DataFrame) -> np.ndarray:
    """log of the design's area over the sum of its catalog building blocks."""
    return np.log(designs["design_area_mm2"].to_numpy()) - designs["log_area_floor_mm2"].to_numpy() * np.log(2.0)


def area_from(model: Any, area_x: np.ndarray) -> np.ndarray:
    floor_column = feat.AREA_FEATURES.index("log_area_floor_mm2")
    return np.exp(model.predict(area_x) + area_x[:, floor_column] * np.log(2.0))


def versions() -> dict[str, str]:
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "pandas": pd.__version__,
        "dse": dse.__version__,
    }


@dataclass
class SurrogateModel:
    """Fitted regressors plus what they were fitted on and how accurate they are."""

    kind: str
    op_model: Any  # level "op": per-op regressor of the two log ratios; level "design": None
    area_model: Any
    level: str = "op"
    design_model: Any = None  # level "design": regressor of the design's log ratios to the baseline totals
    schema: dict[str, Any] = field(default_factory=feat.schema)
    versions: dict[str, str] = field(default_factory=versions)
    trained_on: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------- fitting
    @classmethod
    def fit(cls, data: pd.DataFrame, kind: str = "gb", seed: int = 0, level: str = "op") -> SurrogateModel:
        """Fit on a dataset frame (``surrogates.dataset``); area on one row per design.

        level "op": a regressor per (design, op) pair, summed per design. level "design": the closed-form
        baseline summed per design, then one regressor per design on the design features and what its ops
        add up to -- one tree walk per design instead of one per op, so batch prediction is tens of
        times faster.
        """
        if level not in LEVELS:
            raise UserError(f"unknown surrogate level {level!r}; choose one of: {', '.join(LEVELS)}", where="--level")
        designs = data.drop_duplicates(["workload", "design"])
        area_model = make_area_regressor(kind, seed)
        area_model.fit(designs[list(feat.AREA_FEATURES)].to_numpy(), area_target(designs))
        trained_on = sorted(data["workload"].unique())
        if level == "op":
            op_model = make_regressor(kind, multi_output=True, seed=seed)
            op_model.fit(data[list(feat.FEATURES)].to_numpy(), op_targets(data), sample_weight=op_weights(data))
            return cls(kind, op_model, area_model, trained_on=trained_on)
        rows, base_cycles, base_energy, index = frame_design_features(data)
        truth = index.merge(
            data.groupby(["workload", "design"], sort=False)[["design_latency_cycles", "design_energy_mj"]]
            .first()
            .reset_index(),
            on=["workload", "design"],
            how="left",
        )
        targets = np.column_stack(
            [
                feat.to_log_ratio(truth["design_latency_cycles"].to_numpy(), base_cycles),
                feat.to_log_ratio(truth["design_energy_mj"].to_numpy() * 1e9, base_energy),
            ]
        )
        design_model = make_design_regressor(kind, seed)
        design_model.fit(rows, targets)
        return cls(kind, None, area_model, level="design", design_model=design_model, trained_on=trained_on)

    # ------------------------------------------------------------------------------------- predicting
    def predict_frame(self, data: pd.DataFrame) -> pd.DataFrame:
        """Per-design predictions for every design of a dataset frame (same order as ``design_frame``)."""
        firsts = data.groupby(["workload", "design"], sort=False)[[*feat.AREA_FEATURES, "freq_mhz"]].first()
        area = area_from(self.area_model, firsts[list(feat.AREA_FEATURES)].to_numpy())
        if self.level == "design":
            rows, base_cycles, base_energy, index = frame_design_features(data)
            cycles, energy = _from_ratios(self.design_model.predict(rows), base_cycles, base_energy)
            sums = index.assign(cycles=cycles, energy_pj=energy)
            sums = firsts.reset_index()[["workload", "design"]].merge(sums, on=["workload", "design"], how="left")
        else:
            ratios = self.op_model.predict(data[list(feat.FEATURES)].to_numpy())
            cycles, energy = _from_ratios(ratios, data["est_cycles"].to_numpy(), data["est_energy_pj"].to_numpy())
            count = data["op_count"].to_numpy()
            frame = pd.DataFrame(
                {
                    "workload": data["workload"].to_numpy(),
                    "design": data["design"].to_numpy(),
                    "cycles": cycles * count,
                    "energy_pj": energy * count,
                }
            )
            sums = frame.groupby(["workload", "design"], sort=False)[["cycles", "energy_pj"]].sum().reset_index()
        return _design_metrics(
            sums["cycles"].to_numpy(),
            sums["energy_pj"].to_numpy(),
            area,
            firsts["freq_mhz"].to_numpy(),
            sums[["workload", "design"]],
        )

    def predict_designs(
        self,
        graph: Any,
        template_kind: str,
        points: Sequence[Mapping[str, Any]],
        fixed: Mapping[str, Any],
        ops: feat.OpTable | None = None,
    ) -> pd.DataFrame:
        """Metrics of whole designs (one row per point) for ``graph``: latency, energy, area, power."""
        ops = ops or feat.op_table(graph)
        archs = feat.arch_table(template_kind, points, fixed)
        ((cycles, energy),) = self._design_totals(ops, archs, [self._regressor])
        area = area_from(self.area_model, feat.area_matrix(archs))
        batch = int(getattr(graph, "meta", {}).get("batch", 1) or 1)
        return _design_metrics(cycles, energy, area, archs.columns["_freq"], batch=batch)

    def tree_predictions(
        self,
        graph: Any,
        template_kind: str,
        points: Sequence[Mapping[str, Any]],
        fixed: Mapping[str, Any],
        ops: feat.OpTable | None = None,
    ) -> np.ndarray:
        """Per-tree whole-design (latency_cycles, energy_pj, area) of a forest: (trees, points, 3).

        The spread across trees is the model's uncertainty; gradient boosting has none (raises).
        """
        if self.kind != "rf":
            raise UserError(f"uncertainty needs a random forest surrogate (kind rf), not {self.kind}")
        ops = ops or feat.op_table(graph)
        archs = feat.arch_table(template_kind, points, fixed)
        area_x = feat.area_matrix(archs)
        totals = self._design_totals(ops, archs, self._regressor.estimators_)
        return np.stack(
            [
                np.column_stack([cycles, energy, area_from(area_tree, area_x)])
                for (cycles, energy), area_tree in zip(totals, self.area_model.estimators_)
            ]
        )

    @property
    def _regressor(self) -> Any:
        """The cycle/energy regressor of this model's level."""
        return self.design_model if self.level == "design" else self.op_model

    def _design_totals(
        self, ops: feat.OpTable, archs: feat.ArchTable, regressors: Sequence[Any]
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Whole-design (cycles, energy) once per regressor (the model's, or each tree of its forest);
        the features are built once for all of them."""
        if self.level == "design":
            rows, base_cycles, base_energy = feat.batch_design_features(ops, archs)
            return [_from_ratios(regressor.predict(rows), base_cycles, base_energy) for regressor in regressors]
        cross = feat.cross_features(ops, archs)
        matrix = cross.matrix()
        shape = (cross.n_designs, cross.n_ops)
        totals = []
        for regressor in regressors:
            cycles, energy = _from_ratios(regressor.predict(matrix), cross.baseline_cycles, cross.baseline_energy_pj)
            totals.append(
                ((cycles.reshape(shape) * ops.count).sum(axis=1), (energy.reshape(shape) * ops.count).sum(axis=1))
            )
        return totals

    # ------------------------------------------------------------------------------------- files
    def save(self, path: str | Path) -> Path:
        return save_model(self, path)

    @classmethod
    def load(cls, path: str | Path) -> SurrogateModel:
        """Load a saved model; refuse files that are not one, or whose feature schema differs from this code's."""
        model = read_model_file(path)
        if not isinstance(model, SurrogateModel):
            raise UserError("is a contract surrogate, not a systolic op/design one", where=str(path))
        model.check_schema(str(path))
        return model

    def check_schema(self, where: str) -> None:
        expected = feat.schema()
        if self.schema != expected:
            diff = _schema_difference(self.schema, expected)
            raise UserError(
                f"its feature schema does not match this version of dse ({diff}); retrain it on a "
                "dataset built with this version",
                where=where,
            )


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


def _schema_difference(saved: dict[str, Any], expected: dict[str, Any]) -> str:
    if saved.get("version") != expected["version"]:
        return f"schema version {saved.get('version')} vs {expected['version']}"
    for key in ("features", "area_features", "design_features", "templates"):
        old, new = list(saved.get(key, [])), list(expected[key])
        if old != new:
            gone = [f for f in old if f not in new]
            added = [f for f in new if f not in old]
            return (
                f"{key}: "
                + "; ".join(
                    part for part in (f"unknown {gone}" if gone else "", f"missing {added}" if added else "") if part
                )
                or f"{key} in a different order"
            )
    return "differs"


def frame_design_features(data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
    """``features.design_features`` over a dataset frame, workload by workload (rows are design-major)."""
    parts, cycles, energy, index = [], [], [], []
    for workload, frame in data.groupby("workload", sort=False):
        no = int(pd.unique(frame["op"]).size)
        if len(frame) % no:
            raise UserError(f"dataset rows of {workload} are not whole designs (each design needs all {no} ops)")
        nd = len(frame) // no
        count = frame["op_count"].to_numpy()[:no]

        def pairs(name: str, frame: pd.DataFrame = frame, nd: int = nd, no: int = no) -> np.ndarray:
            return frame[name].to_numpy(dtype=float).reshape(nd, no)

        totals = feat.design_totals(pairs, count)
        arch = {name: frame[name].to_numpy(dtype=float)[::no] for name in feat.ARCH_FEATURES}
        ops = {name: frame[name].to_numpy(dtype=float)[:no] for name in ("op_is_conv", "op_is_matmul", "log_macs")}
        rows, c, e = feat.design_features(totals, arch, ops, count)
        parts.append(rows)
        cycles.append(c)
        energy.append(e)
        index.append(pd.DataFrame({"workload": workload, "design": frame["design"].to_numpy()[::no]}))
    return np.vstack(parts), np.concatenate(cycles), np.concatenate(energy), pd.concat(index, ignore_index=True)


def _from_ratios(ratios: np.ndarray, cycles_base: np.ndarray, energy_base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cycles and energy from predicted log ratios to their closed-form baselines (per op, or per design)."""
    ratios = np.asarray(ratios).reshape(len(cycles_base), 2)
    return feat.from_log_ratio(ratios[:, 0], cycles_base), feat.from_log_ratio(ratios[:, 1], energy_base)


def _design_metrics(
    cycles: np.ndarray,
    energy_pj: np.ndarray,
    area: np.ndarray,
    freq_mhz: np.ndarray,
    index: pd.DataFrame | None = None,
    batch: int = 1,
) -> pd.DataFrame:
    frame = pd.DataFrame(metrics_from_totals(cycles, energy_pj, area, freq_mhz, batch))
    if index is not None:
        frame = pd.concat([index.reset_index(drop=True), frame], axis=1)
    return frame


def metrics_from_totals(
    cycles: np.ndarray, energy_pj: np.ndarray, area: np.ndarray, freq_mhz: np.ndarray, batch: int = 1
) -> dict[str, np.ndarray]:
    """Whole-design metrics (arrays of any matching shape) from cycle, energy and area totals."""
    latency_s = cycles / (freq_mhz * 1e6)
    safe = np.where(latency_s > 0, latency_s, np.nan)
    energy_mj = energy_pj * 1e-9
    return {
        "latency_cycles": cycles,
        "latency_ms": latency_s * 1e3,
        "energy_mj": energy_mj,
        "area_mm2": area,
        "power_w": energy_pj * 1e-12 / safe,
        "edp": energy_mj * latency_s * 1e3,
        "throughput_ips": batch / safe,
    }
