"""Training data: sample design points of a spec's space, evaluate them analytically, store features + targets.

One parquet row per (workload, design point, distinct op): the op's features (``features.FEATURES``),
its closed-form baselines (``features.PAIR_COLUMNS``), its multiplicity in the graph, the analytical
model's per-op targets (``cycles``, ``energy_pj``) and the whole design's figures (``design_*``
columns, repeated on every row of the design) so full-design accuracy can be measured from the same file.

Points are stratified: every combination of the categorical parameters gets an equal share and the
numeric ones are drawn uniformly (log-uniformly for log ranges). Evaluation runs on the explorer's
executors (serial, local processes, Dask).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.executors import make_executor
from dse.graph import Graph
from dse.registry import kinds_with_op_features, op_feature_set
from dse.workload import load_workload
from surrogates.contract.features import ClosedForm
from surrogates.contract.model import FEATURE_SET, ContractTask, contract_frame, is_contract
from surrogates.layer.model import is_layer
from surrogates.learning import DESIGN_TARGETS, PARAM_PREFIX
from surrogates.systolic import features as feat
from surrogates.truth.scalesim import ScaleSimTruth

OP_TARGETS = ("cycles", "energy_pj")


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload to sample on: a zoo name (or model file) with its build options."""

    model: str
    batch: int = 1
    precision: str = "int8"
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return self.model + (f"[{opts}]" if opts else "") + (f"@b{self.batch}" if self.batch != 1 else "")

    def build(self, base_dir: Path | None = None) -> Graph:
        return load_workload(
            self.model, batch=self.batch, precision=self.precision, base_dir=base_dir, **dict(self.options)
        )


def feature_set(template_kind: str, mapper: str | None) -> str:
    """The family's op-level set (op rows, the vectorised closed form) where it learns ``mapper``'s truth (the
    systolic fold model), else "contract"."""
    return op_feature_set(template_kind, mapper) or FEATURE_SET


def stratified_points(space: Any, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` points: categorical combinations in equal shares (round robin), numeric values drawn at random."""
    if n < 1:
        raise UserError(f"-n must be at least 1, got {n}", where="-n")
    rng = np.random.default_rng(seed)
    categorical = [d for d in space.free if d.values is not None and d.ptype in ("str", "bool")]
    combos = list(itertools.product(*(d.values for d in categorical))) or [()]
    order = rng.permutation(len(combos))
    points: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    attempts = 0
    while len(points) < n and attempts < 50 * n:
        attempts += 1
        combo = combos[order[len(points) % len(combos)]]
        chosen = dict(zip((d.name for d in categorical), combo))
        point = {}
        for d in space.dims:
            if d.name in chosen:
                point[d.name] = chosen[d.name]
            elif d.is_fixed:
                point[d.name] = d.values[0]
            else:
                point[d.name] = d.sample(rng)
        key = tuple(sorted((k, str(v)) for k, v in point.items()))
        if key in seen:
            continue
        seen.add(key)
        points.append(point)
    return points


@dataclass
class LayerTargets:
    """Picklable task for the executors: evaluate one point, keep per-op targets and design figures."""

    evaluator: Any  # dse.evaluate.PointEvaluator
    members: list[list[str]]  # the op names each op row stands for (features.OpTable.members)

    def __call__(self, point: Mapping[str, Any]) -> tuple[np.ndarray, dict[str, float]]:
        metrics = self.evaluator(point)
        by_name = {layer.layer: layer for layer in metrics.layers}
        # the mean over a row's members: a mapper that prices equal ops differently (CP-SAT's residency
        # depends on the neighbours) keeps its design total
        per_op = np.array(
            [
                np.mean([[by_name[name].cycles, by_name[name].energy_pj] for name in names], axis=0)
                for names in self.members
            ],
            dtype=float,
        ).reshape(len(self.members), 2)
        return per_op, {name: float(metrics.values[name]) for name in DESIGN_TARGETS}


def build_dataset(
    template_kind: str,
    space: Any,
    fixed: Mapping[str, Any],
    workloads: Sequence[WorkloadSpec],
    n: int,
    *,
    seed: int = 0,
    mapper: str | None = None,
    mapper_options: Mapping[str, Any] | None = None,
    executor: str | None = "serial",
    workers: int | None = None,
    base_dir: Path | None = None,
    features: str | None = None,
    scalesim: ScaleSimTruth | None = None,
) -> pd.DataFrame:
    """Sample ``n`` points per workload and evaluate them; failed points are left out (and counted).

    The truth is the spec's mapper through the family's model, or with ``scalesim`` real SCALE-Sim on
    every MAC-array layer (``surrogates.truth.scalesim``; systolic only). The systolic template with its
    closed-form fold mapper gets op rows (``surrogates.systolic.features``); every other (template, mapper)
    gets one row per design under the feature contract (``surrogates.contract.features``), the closed form as
    the baseline."""
    frames = []
    contract = (features or feature_set(template_kind, mapper)) == FEATURE_SET
    if scalesim is not None and (template_kind not in kinds_with_op_features() or contract):
        raise UserError(
            f"--truth scalesim simulates systolic arrays with the fold mapping, not template {template_kind!r} "
            f"with mapper {mapper!r}",
            where="template.kind",
        )
    with make_executor(executor, workers) as pool:
        for w_index, workload in enumerate(workloads):
            graph = workload.build(base_dir)
            points = stratified_points(space, n, seed + 7919 * w_index)
            if contract:
                truth = PointEvaluator(graph, template_kind, mapper, dict(fixed), dict(mapper_options or {}))
                task = ContractTask(truth, ClosedForm(graph, template_kind, dict(fixed)))
                done = {o.index: o.value for o in pool.map(task, points) if o.ok}
                if not done:
                    raise UserError(
                        f"every sampled point of {workload.label} failed to evaluate", where="template.params"
                    )
                kept = sorted(done)
                frames.append(
                    contract_frame(
                        template_kind, graph, workload.label, [points[i] for i in kept], fixed, [done[i] for i in kept]
                    )
                )
                continue
            ops = feat.op_table(graph)
            evaluator = PointEvaluator(graph, template_kind, mapper, dict(fixed), dict(mapper_options or {}))
            results: dict[int, tuple[np.ndarray, dict[str, float]]] = {}
            if scalesim is not None:
                results = scalesim.targets(pool, evaluator, ops.members, points)
            else:
                for outcome in pool.map(LayerTargets(evaluator, ops.members), points):
                    if outcome.ok:
                        results[outcome.index] = outcome.value
            kept = sorted(results)
            if not kept:
                raise UserError(f"every sampled point of {workload.label} failed to evaluate", where="template.params")
            frames.append(
                design_rows(
                    template_kind, graph, workload, ops, [points[i] for i in kept], fixed, [results[i] for i in kept]
                )
            )
    return pd.concat(frames, ignore_index=True)


def design_rows(
    template_kind: str,
    graph: Graph,
    workload: WorkloadSpec,
    ops: feat.OpTable,
    points: list[dict[str, Any]],
    fixed: Mapping[str, Any],
    results: list[tuple[np.ndarray, dict[str, float]]],
) -> pd.DataFrame:
    archs = feat.arch_table(template_kind, points, fixed)
    cross = feat.cross_features(ops, archs)
    frame = pd.DataFrame(cross.matrix(), columns=list(feat.FEATURES))
    nd, no = cross.n_designs, cross.n_ops
    frame.insert(0, "workload", workload.label)
    frame.insert(1, "design", np.repeat(np.arange(nd), no))
    frame.insert(2, "op", np.tile(np.array(ops.names, dtype=object), nd))
    frame.insert(3, "op_count", np.tile(ops.count, nd))
    for name in feat.PAIR_COLUMNS:
        if name not in frame:
            frame[name] = cross.column(name).reshape(-1)
    per_op = np.concatenate([r[0] for r in results])
    frame["cycles"] = per_op[:, 0]
    frame["energy_pj"] = per_op[:, 1]
    for name in DESIGN_TARGETS:
        frame[f"design_{name}"] = np.repeat([r[1][name] for r in results], no)
    for name in feat.AREA_FEATURES:
        if name not in frame:
            frame[name] = np.repeat(archs.columns[name], no)
    frame["freq_mhz"] = np.repeat(archs.columns["_freq"], no)
    for name in points[0]:
        values = [p[name] for p in points]
        frame[PARAM_PREFIX + name] = np.repeat(np.array(values, dtype=object), no)
    frame["template"] = template_kind
    return frame


def workloads_from_args(spec: Any, extra: Sequence[str]) -> list[WorkloadSpec]:
    """The spec's own workload, or the ``--workload`` list (zoo names, ``name:key=value,...`` for options)."""
    w = spec.workload
    if not extra:
        return [WorkloadSpec(w.model, w.batch, w.precision, tuple(sorted(w.options.items())))]
    out = []
    for text in extra:
        name, _, rest = text.partition(":")
        options: dict[str, Any] = {}
        batch = w.batch
        for item in filter(None, rest.split(",")):
            key, eq, value = item.partition("=")
            if not eq:
                raise UserError(f"--workload {text!r}: option {item!r} must be key=value", where="--workload")
            import yaml

            parsed = yaml.safe_load(value)
            if key == "batch":
                batch = int(parsed)
            else:
                options[key] = parsed
        out.append(WorkloadSpec(name.strip(), batch, w.precision, tuple(sorted(options.items()))))
    return out


def design_frame(data: pd.DataFrame) -> pd.DataFrame:
    """One row per design of a dataset: workload, design index and the ``design_*`` figures."""
    names = [c for c in data.columns if c.startswith("design_")] if is_contract(data) else DESIGN_TARGETS
    cols = ["workload", "design"] + [c if c.startswith("design_") else f"design_{c}" for c in names]
    return data.groupby(["workload", "design"], sort=False)[cols[2:]].first().reset_index()


def check_dataset(data: pd.DataFrame, path: str) -> None:
    """Refuse a file that is not a dataset of this schema, naming what is missing."""
    if is_contract(data) or is_layer(data):  # design rows, or layer rows (surrogates.layer.model)
        needed = ["workload", "design", "template", *(f"design_{m}" for m in ("latency_ms", "latency_cycles"))]
        missing = [c for c in needed if c not in data.columns]
        if not missing:
            return
    needed = ["workload", "design", "op_count", *feat.FEATURES, *feat.PAIR_COLUMNS, *OP_TARGETS]
    missing = [c for c in needed if c not in data.columns]
    if missing:
        shown = ", ".join(missing[:6]) + (" ..." if len(missing) > 6 else "")
        raise UserError(
            f"is not a surrogate dataset of this version (missing columns: {shown}); "
            "build one with `dse surrogate dataset SPEC -n N -o DATA.parquet`",
            where=path,
        )
