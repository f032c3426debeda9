"""Layer-level contract: learn the expensive mapper's correction per layer, where its truth decomposes.

A design-level regressor trained on a handful of networks extrapolates on a new one. An expensive mapper whose
latency is a sum over layers (the systolic CP-SAT scheduler: per op, the exact tiling and which operands stay
resident) is learned one (design, layer) row at a time instead: the baseline is the family's *cheap mapper of
the same search* (the family table's ``layer_baselines``: the greedy schedule the CP-SAT solver starts from,
priced by the same hardware model), and the surrogate learns ``log(truth_layer / baseline_layer)`` from the
layer's loop dims, its tensor sizes over the on-chip capacity, the template's parameters and the baseline
layer's own figures. An op is an op whatever network it sits in, so the correction transfers to networks never
trained on. A design's cycles are the sum of its predicted layers; energy scales with them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.graph import Graph, OpKind
from dse.registry import family, layer_baseline, mapper_option_names
from hwmodels.base import Metrics
from mappers.systolic.fold import ARRAY_KINDS, lower_op
from surrogates.contract.features import param_feature_names, param_features
from surrogates.learning import DESIGN_TARGETS, from_target, make_regressor, save_model, to_target, versions

LAYER_SET = "layer"
LAYER_VERSION = 1
OP_FEATURES = (
    "l_is_conv",
    "l_is_matmul",
    "l_is_vector",
    "l_log_macs",
    "l_log_flops",
    "l_gemm_log_m",
    "l_gemm_log_k",
    "l_gemm_log_n",
    "l_gemm_log_count",
    "l_log_in_bytes",
    "l_log_weight_bytes",
    "l_log_out_bytes",
    "l_in_over_onchip",
    "l_weight_over_onchip",
    "l_out_over_onchip",
)
BASE_FEATURES = (
    "lb_log_cycles",
    "lb_log_compute_cycles",
    "lb_stall_share",
    "lb_utilization",
    "lb_log_dram_bytes",
    "lb_log_dram_per_cycle",
    "lb_log_energy_pj",
    "lb_cycle_share",
)


def baseline_evaluator(
    graph: Graph, template_kind: str, truth_mapper: str | None, fixed: Mapping[str, Any], options: Mapping[str, Any]
) -> PointEvaluator:
    """The baseline mapper through the family's model, given the truth's options it shares (the objective)."""
    name = layer_baseline(template_kind, truth_mapper)
    if name is None:
        raise UserError(f"template {template_kind!r} with mapper {truth_mapper!r} has no layer-level baseline")
    allowed = mapper_option_names(template_kind, name)
    shared = {k: v for k, v in options.items() if k in allowed}
    return PointEvaluator(graph, template_kind, name, dict(fixed), shared)


def onchip_bytes(arch: Any) -> float:
    """All on-chip buffer bytes of an arch: the sum of its ``*_kib`` fields (0 when it has none)."""
    kib = sum(
        float(getattr(arch, f.name))
        for f in dataclasses.fields(arch)
        if f.name.endswith("_kib") and isinstance(getattr(arch, f.name), (int, float))
    )
    return kib * 1024.0


def _log(x: float) -> float:
    return math.log2(max(float(x), 0.0) + 1.0)


def op_rows(graph: Graph, names: Sequence[str]) -> np.ndarray:
    """The capacity-free ``OP_FEATURES`` of each named layer (the over-onchip columns hold raw log bytes)."""
    rows = []
    for name in names:
        op = graph.op(name)
        gemm = [0.0] * 4
        if op.kind in ARRAY_KINDS and op.macs > 0:
            g = lower_op(op)
            gemm = [_log(g.M), _log(g.K), _log(g.N), _log(g.count)]
        in_bytes = sum(graph.read_nbytes(op, t) for t in op.inputs)
        weight_bytes = sum(graph.tensors[t].nbytes for t in op.weights)
        out_bytes = sum(graph.tensors[t].nbytes for t in op.outputs)
        logs = [_log(in_bytes), _log(weight_bytes), _log(out_bytes)]
        rows.append(
            [
                float(op.kind is OpKind.CONV),
                float(op.kind is OpKind.MATMUL),
                float(op.kind not in ARRAY_KINDS),
                _log(op.macs),
                _log(op.flops),
                *gemm,
                *logs,
                *logs,
            ]
        )
    return np.array(rows, dtype=float).reshape(len(names), len(OP_FEATURES))


def base_rows(metrics: Metrics) -> np.ndarray:
    """``BASE_FEATURES`` of each layer of the baseline's Metrics (in its layer order)."""
    total = max(sum(layer.cycles for layer in metrics.layers), 1.0)
    rows = []
    for layer in metrics.layers:
        dram = layer.dram_read_bytes + layer.dram_write_bytes
        rows.append(
            [
                _log(layer.cycles),
                _log(layer.compute_cycles),
                layer.stall_cycles / (layer.cycles + 1.0),
                float(layer.utilization),
                _log(dram),
                math.log2((dram + 1.0) / (layer.cycles + 1.0)),
                _log(layer.energy_pj),
                layer.cycles / total,
            ]
        )
    return np.array(rows, dtype=float).reshape(len(metrics.layers), len(BASE_FEATURES))


def baseline_result(baseline: PointEvaluator, point: Mapping[str, Any]) -> dict[str, Any]:
    """The cheap mapper's side of one point's layer rows: its per-layer figures and design metrics."""
    trace = baseline.trace(point)
    base = trace.metrics
    return {
        "names": [layer.layer for layer in base.layers],
        "base": base_rows(base),
        "onchip": onchip_bytes(trace.arch),
        "base_layer": np.array([[la.cycles, la.energy_pj] for la in base.layers], dtype=float).reshape(-1, 2),
        "base_design": {m: float(base.values.get(m, np.nan)) for m in DESIGN_TARGETS},
        "truth_layer": np.full((len(base.layers), 2), np.nan),
        "design": dict.fromkeys(DESIGN_TARGETS, np.nan),
    }


@dataclass
class LayerTask:
    """Picklable executor task: truth and baseline of one point, per layer (the baseline's layer order)."""

    truth: PointEvaluator
    baseline: PointEvaluator

    def __call__(self, point: Mapping[str, Any]) -> dict[str, Any]:
        truth = self.truth(point)
        result = baseline_result(self.baseline, point)
        by_name = {layer.layer: layer for layer in truth.layers}
        names = result["names"]
        if sorted(by_name) != sorted(names):
            raise ValueError(f"truth and baseline layers differ: {sorted(set(by_name) ^ set(names))[:3]}")
        result["truth_layer"] = np.array([[by_name[n].cycles, by_name[n].energy_pj] for n in names], dtype=float)
        result["design"] = {m: float(truth.values.get(m, np.nan)) for m in DESIGN_TARGETS}
        return result


def feature_names(template_kind: str) -> list[str]:
    return param_feature_names(family(template_kind).template()) + list(OP_FEATURES) + list(BASE_FEATURES)


def layer_features(
    template_kind: str,
    graph: Graph,
    points: Sequence[Mapping[str, Any]],
    fixed: Mapping[str, Any],
    results: Sequence[dict[str, Any]],
) -> list[np.ndarray]:
    """The ``feature_names`` matrix (layers, features) of each design, from ``baseline_result``s."""
    params = param_features(family(template_kind).template(), points, fixed)
    over = [OP_FEATURES.index(f"l_{k}_over_onchip") for k in ("in", "weight", "out")]
    ops_of: dict[tuple[str, ...], np.ndarray] = {}  # the op rows of a layer list: one per graph
    out = []
    for design, result in enumerate(results):
        names = tuple(result["names"])
        if names not in ops_of:
            ops_of[names] = op_rows(graph, names)
        ops = ops_of[names].copy()
        ops[:, over] -= math.log2(result["onchip"] + 1.0)
        out.append(np.hstack([np.tile(params[design], (len(names), 1)), ops, result["base"]]))
    return out


def layer_frame(
    template_kind: str,
    graph: Graph,
    workload: str,
    points: Sequence[Mapping[str, Any]],
    fixed: Mapping[str, Any],
    results: Sequence[dict[str, Any]],
    baseline: PointEvaluator | None = None,
) -> pd.DataFrame:
    """Dataset rows, one per (design, layer), from ``LayerTask`` results; ``baseline`` (the cheap mapper and
    its options) is recorded so a model trained on the rows can price new designs the same way."""
    matrices = layer_features(template_kind, graph, points, fixed, results)
    counts = [len(r["names"]) for r in results]
    design = np.repeat(np.arange(len(results)), counts)
    frame = pd.DataFrame(np.vstack(matrices), columns=feature_names(template_kind))
    columns: dict[str, Any] = {
        "workload": workload,
        "design": design,
        "layer": np.concatenate([np.asarray(r["names"], dtype=object) for r in results]),
    }
    base_layer = np.vstack([r["base_layer"] for r in results])
    truth_layer = np.vstack([r["truth_layer"] for r in results])
    columns["base_cycles"], columns["base_energy_pj"] = base_layer[:, 0], base_layer[:, 1]
    columns["cycles"], columns["energy_pj"] = truth_layer[:, 0], truth_layer[:, 1]
    for m in DESIGN_TARGETS:
        columns[f"design_{m}"] = np.array([r["design"][m] for r in results], dtype=float)[design]
        columns[f"base_{m}"] = np.array([r["base_design"][m] for r in results], dtype=float)[design]
    columns["template"] = template_kind
    columns["feature_set"] = LAYER_SET
    if baseline is not None:
        columns["baseline_mapper"] = baseline.mapper_name
        columns["baseline_options"] = json.dumps(baseline.mapper_options, sort_keys=True)
    out = pd.concat([pd.DataFrame(columns, index=frame.index), frame], axis=1)
    first = ["workload", "design", "layer"]
    return out[first + [c for c in out.columns if c not in first]]


def is_layer(data: pd.DataFrame) -> bool:
    return "feature_set" in data.columns and bool((data["feature_set"] == LAYER_SET).all())


def layer_targets(data: pd.DataFrame) -> np.ndarray:
    """log((truth + 1) / (baseline + 1)) of each layer's cycles and energy."""
    return np.column_stack(
        [
            to_target(data[t].to_numpy(float), data[b].to_numpy(float))
            for t, b in (("cycles", "base_cycles"), ("energy_pj", "base_energy_pj"))
        ]
    )


def layer_weights(data: pd.DataFrame) -> np.ndarray:
    """A layer weighs its share of its design's baseline cycles and energy: design errors are sums."""
    keys = [data["workload"].to_numpy(), data["design"].to_numpy()]
    shares = []
    for column in ("base_cycles", "base_energy_pj"):
        part = data[column].to_numpy(float)
        total = pd.Series(part).groupby(keys).transform("sum").to_numpy()
        shares.append(part / np.maximum(total, 1e-30))
    return 0.02 + (shares[0] + shares[1]) / 2


def layer_schema(template_kind: str) -> dict[str, Any]:
    return {"layer_contract": LAYER_VERSION, "template": template_kind, "features": feature_names(template_kind)}


@dataclass
class LayerSurrogate:
    """A regressor of the per-layer log ratios truth / cheap mapper; designs are sums of their layers."""

    kind: str
    template_kind: str
    regressor: Any
    schema: dict[str, Any]
    level: str = "layer"
    metric_names: list[str] = field(default_factory=lambda: list(DESIGN_TARGETS))
    versions: dict[str, str] = field(default_factory=versions)
    trained_on: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    baseline_mapper: str | None = None  # the cheap mapper the layers are corrected from, and its options
    baseline_options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fit(cls, data: pd.DataFrame, kind: str = "rf", seed: int = 0, regressor: Any = None) -> LayerSurrogate:
        kinds = sorted(data["template"].unique())
        if len(kinds) != 1:
            raise UserError(f"a layer dataset must hold one template, this one holds {', '.join(kinds)}")
        schema = layer_schema(kinds[0])
        regressor = regressor if regressor is not None else make_regressor(kind, multi_output=True, seed=seed)
        x = np.nan_to_num(data[schema["features"]].to_numpy(float), nan=-1.0)
        regressor.fit(x, layer_targets(data), sample_weight=layer_weights(data))
        model = cls(kind, kinds[0], regressor, schema, trained_on=sorted(data["workload"].unique()))
        if "baseline_mapper" in data.columns:
            model.baseline_mapper = str(data["baseline_mapper"].iloc[0])
            model.baseline_options = json.loads(data["baseline_options"].iloc[0])
        return model

    def predict_frame(self, data: pd.DataFrame) -> pd.DataFrame:
        """Per-design metrics for a layer dataset (designs in order of first appearance)."""
        x = np.nan_to_num(data[self.schema["features"]].to_numpy(float), nan=-1.0)
        ratios = np.asarray(self.regressor.predict(x)).reshape(len(data), 2)
        frame = data[["workload", "design"]].copy()
        for i, (pred, base) in enumerate((("p_cycles", "base_cycles"), ("p_energy", "base_energy_pj"))):
            b = data[base].to_numpy(float)
            frame[pred] = from_target(ratios[:, i], b)
            frame[base] = b
        sums = frame.groupby(["workload", "design"], sort=False).sum().reset_index()
        firsts = data.groupby(["workload", "design"], sort=False)[[f"base_{m}" for m in DESIGN_TARGETS]].first()
        return design_values(sums, firsts.reset_index())

    def tree_design_metrics(self, data: pd.DataFrame) -> dict[str, np.ndarray]:
        """Per-tree design metrics (metric -> (trees, designs)) of a forest, designs numbered 0..n-1 in
        ``data["design"]``: the hybrid's uncertainty, each tree's layers summed into its own design."""
        x = np.nan_to_num(data[self.schema["features"]].to_numpy(float), nan=-1.0)
        design = data["design"].to_numpy(int)
        n = int(design.max()) + 1 if len(design) else 0
        base_cycles, base_energy = data["base_cycles"].to_numpy(float), data["base_energy_pj"].to_numpy(float)
        firsts = data.groupby("design", sort=True)[[f"base_{m}" for m in DESIGN_TARGETS]].first()
        base = {m: firsts[f"base_{m}"].to_numpy(float) for m in DESIGN_TARGETS}
        sums_base = [np.bincount(design, weights=b, minlength=n) for b in (base_cycles, base_energy)]
        trees = []
        for tree in self.regressor.estimators_:
            ratios = np.asarray(tree.predict(x)).reshape(len(data), 2)
            p_cycles = from_target(ratios[:, 0], base_cycles)
            p_energy = from_target(ratios[:, 1], base_energy)
            sums = [np.bincount(design, weights=p, minlength=n) for p in (p_cycles, p_energy)]
            trees.append(design_metrics(sums[0], sums_base[0], sums[1], sums_base[1], base))
        return {m: np.stack([t[m] for t in trees]) for m in DESIGN_TARGETS}

    def predict_designs(
        self, graph: Graph, template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Any, ops: Any = None
    ) -> pd.DataFrame:
        """Metrics of whole designs (one row per point): the cheap mapper per point, corrected per layer."""
        if template_kind != self.template_kind or self.baseline_mapper is None:
            raise UserError(f"this layer surrogate prices {self.template_kind} designs from a recorded baseline")
        baseline = PointEvaluator(graph, template_kind, self.baseline_mapper, dict(fixed), dict(self.baseline_options))
        results = [baseline_result(baseline, point) for point in points]
        frame = layer_frame(template_kind, graph, "_", points, fixed, results)
        return self.predict_frame(frame)[list(DESIGN_TARGETS)]

    def save(self, path: str | Path) -> Path:
        return save_model(self, path)

    def check_schema(self, where: str) -> None:
        if self.schema != layer_schema(self.template_kind):
            raise UserError(
                "its layer feature contract does not match this version of dse; retrain it on a dataset built "
                "with this version",
                where=where,
            )


def design_values(sums: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Design metrics from the predicted and baseline layer sums (``design_metrics``), as a frame."""
    out = sums[["workload", "design"]].copy()
    values = design_metrics(
        sums["p_cycles"].to_numpy(float),
        sums["base_cycles"].to_numpy(float),
        sums["p_energy"].to_numpy(float),
        sums["base_energy_pj"].to_numpy(float),
        {m: base[f"base_{m}"].to_numpy(float) for m in DESIGN_TARGETS},
    )
    for m in DESIGN_TARGETS:
        out[m] = values[m]
    return out


def design_metrics(
    p_cycles: np.ndarray,
    base_cycles: np.ndarray,
    p_energy: np.ndarray,
    base_energy: np.ndarray,
    base: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Design metrics from the predicted and baseline layer sums: cycles shift by what the layers gained
    (the baseline's cycles outside its layers kept), time and energy scale with their layer sums."""
    energy_scale = (p_energy + 1.0) / (base_energy + 1.0)
    cycles = base["latency_cycles"] + (p_cycles - base_cycles)
    time_scale = cycles / np.maximum(base["latency_cycles"], 1e-30)
    latency_ms = base["latency_ms"] * np.where(np.isfinite(time_scale), time_scale, 1.0)
    energy_mj = base["energy_mj"] * energy_scale
    return {
        "latency_cycles": cycles,
        "latency_ms": latency_ms,
        "energy_mj": energy_mj,
        "area_mm2": np.asarray(base["area_mm2"], dtype=float),
        "power_w": energy_mj / np.maximum(latency_ms, 1e-30),
    }


def baseline_layer_accuracy(data: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(truth, cheap mapper) per design metric of a layer dataset."""
    designs = data.groupby(["workload", "design"], sort=False).first()
    return {m: (designs[f"design_{m}"].to_numpy(float), designs[f"base_{m}"].to_numpy(float)) for m in DESIGN_TARGETS}
