"""One feature contract for every template: what a design-level surrogate of any family sees.

A row per design point holds
- graph statistics (``GRAPH_FEATURES``: op count, MACs, FLOPs, weight and activation bytes, the MAC
  shares by op kind, the MAC-weighted loop dims of the lowered GEMMs), once per graph;
- the template's parameters (``param_features``: every ``Template.params()`` entry, numbers on a log
  scale, choices one-hot, free strings as a stable code), so a parameter a template gains later
  becomes a column without code here;
- the template's closed-form estimate (``closed_form_mapper``: the family's cheap mapper, named in the
  family table, through its own hardware model -- the systolic fold closed forms, the RDU's section lower
  bound with its best covers realised (``mappers.rdu.cover``), the GPU kernel cost, the FPGA analytical
  resources, the multicore scheduler's own seed schedule, load-balanced (``mappers.multicore.balanced``)):
  its metrics on a log scale and the per-layer shares of where its cycles go.

The surrogate learns ``log(truth / baseline)`` per metric: the truth is the expensive evaluator (CP-SAT
mapper, section solver, multicore scheduler, or a measurement), the baseline is what is cheap.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dse.graph import Graph, OpKind
from dse.registry import FAMILIES, family, make_mapper, mapper_option_names
from hwmodels.base import Metrics
from mappers.systolic.fold import ARRAY_KINDS, lower_op
from templates.base import Param, Template

CONTRACT_VERSION = 1

GRAPH_FEATURES = (
    "g_log_ops",
    "g_log_macs",
    "g_log_flops",
    "g_log_weight_bytes",
    "g_log_activation_bytes",
    "g_share_macs_conv",
    "g_share_macs_matmul",
    "g_share_ops_vector",
    "g_log_max_op_macs",
    "g_gemm_log_m",
    "g_gemm_log_k",
    "g_gemm_log_n",
    "g_gemm_log_count",
    "g_log_batch",
)
# metrics a closed form may give and a surrogate corrects (the first three are every family's)
CONTRACT_METRICS = (
    "latency_cycles",
    "latency_ms",
    "energy_mj",
    "area_mm2",
    "power_w",
    "throughput_ips",
    "lut",
    "ff",
    "dsp",
    "bram",
)
LAYER_FEATURES = ("b_share_array_cycles", "b_share_stall_cycles", "b_mean_utilization", "b_log_dram_bytes")


def closed_form_mapper(template_kind: str) -> str:
    """The cheap mapper whose mapping the family's own model prices: the closed-form estimate."""
    return family(template_kind).surrogates.closed_form


def supported_templates() -> tuple[str, ...]:
    """Every family: each names its closed form in the family table."""
    return tuple(FAMILIES)


# ----------------------------------------------------------------------------------------------- graph


def graph_statistics(graph: Graph) -> dict[str, float]:
    """``GRAPH_FEATURES`` of one graph (log2(x + 1) scales; GEMM dims MAC-weighted over array ops)."""
    macs = np.array([op.macs for op in graph.ops], dtype=float)
    flops = np.array([op.flops for op in graph.ops], dtype=float)
    total = max(macs.sum(), 1.0)
    gemm = np.zeros(4)
    weight_sum = 0.0
    for op, mac in zip(graph.ops, macs):
        if op.kind in ARRAY_KINDS and mac > 0:
            g = lower_op(op)
            gemm += mac * np.log2(np.array([g.M, g.K, g.N, g.count], dtype=float) + 1.0)
            weight_sum += mac
    gemm = gemm / max(weight_sum, 1.0)
    activation = sum(t.nbytes for t in graph.tensors.values() if t.kind != "weight")
    kinds = [op.kind for op in graph.ops]

    def log(x: float) -> float:
        return math.log2(max(x, 0.0) + 1.0)

    return {
        "g_log_ops": log(len(graph.ops)),
        "g_log_macs": log(macs.sum()),
        "g_log_flops": log(flops.sum()),
        "g_log_weight_bytes": log(graph.weight_bytes),
        "g_log_activation_bytes": log(activation),
        "g_share_macs_conv": float(macs[[k is OpKind.CONV for k in kinds]].sum() / total) if kinds else 0.0,
        "g_share_macs_matmul": float(macs[[k is OpKind.MATMUL for k in kinds]].sum() / total) if kinds else 0.0,
        "g_share_ops_vector": sum(k not in ARRAY_KINDS for k in kinds) / max(1, len(kinds)),
        "g_log_max_op_macs": log(macs.max() if len(macs) else 0.0),
        "g_gemm_log_m": float(gemm[0]),
        "g_gemm_log_k": float(gemm[1]),
        "g_gemm_log_n": float(gemm[2]),
        "g_gemm_log_count": float(gemm[3]),
        "g_log_batch": log(float(graph.meta.get("batch", 1) or 1)),
    }


# ----------------------------------------------------------------------------------------------- params


def param_feature_names(template: Template) -> list[str]:
    """The columns ``param_features`` gives for ``template`` (its parameters in declaration order)."""
    names = []
    for p in template.params():
        if p.type == "str" and p.choices:
            names.extend(f"p_{p.name}={c}" for c in p.choices)
        else:
            names.append(f"p_{p.name}")
    return names


def _param_value(p: Param, value: Any) -> list[float]:
    if p.type == "str" and p.choices:
        return [float(value == c) for c in p.choices]
    if value is None:
        return [-1.0]
    if p.type == "bool":
        return [float(bool(value))]
    if p.type == "str":  # a free string (a catalog part, a preset): a stable code trees can split on
        return [float(zlib.crc32(str(value).encode()) % 9973)]
    number = float(value)
    return [math.log2(number + 1.0) if number >= 0 else number]


def param_features(template: Template, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]) -> np.ndarray:
    """(designs, len(param_feature_names)) from the points merged over ``fixed`` and the defaults."""
    params = template.params()
    rows = []
    for point in points:
        merged = {**fixed, **point}
        row: list[float] = []
        for p in params:
            row.extend(_param_value(p, merged.get(p.name, p.default)))
        rows.append(row)
    return np.array(rows, dtype=float).reshape(len(points), -1)


# ----------------------------------------------------------------------------------------------- baseline


@dataclass
class ClosedForm:
    """The family's closed-form evaluator (``closed_form_mapper``) on one graph: point -> Metrics.

    ``options`` are the truth mapper's options; the closed form takes those it shares (the objective)."""

    graph: Graph
    template_kind: str
    fixed: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        fam = family(self.template_kind)
        self._template = fam.template()
        shared = baseline_options(self.template_kind, self.options)
        self._mapper = make_mapper(self.template_kind, fam.surrogates.closed_form, shared)
        self._hwmodel = fam.hwmodel()

    def __call__(self, point: Mapping[str, Any]) -> Metrics:
        arch = self._template.instantiate({**self.fixed, **point})
        mapping = self._mapper.map(self.graph, arch)
        metrics = self._hwmodel.evaluate(mapping, arch)
        metrics.info.setdefault("solver", dict(mapping.solver))
        return metrics


def baseline_options(template_kind: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The truth mapper's options the family's closed-form mapper also has (its objective, its layer cap)."""
    allowed = mapper_option_names(template_kind, closed_form_mapper(template_kind))
    return {k: v for k, v in options.items() if k in allowed}


def baseline_feature_names() -> list[str]:
    return [f"b_log_{m}" for m in CONTRACT_METRICS] + list(LAYER_FEATURES) + ["b_log_bound_ratio"]


def baseline_row(metrics: Metrics) -> tuple[list[float], dict[str, float]]:
    """(feature values, the baseline's metric values) of one design's closed-form Metrics."""
    values = {m: float(metrics.values[m]) for m in CONTRACT_METRICS if m in metrics.values}
    logs = [math.log2(max(values[m], 0.0) + 1e-12) if m in values else float("nan") for m in CONTRACT_METRICS]
    cycles = np.array([layer.cycles for layer in metrics.layers], dtype=float)
    total = max(float(cycles.sum()), 1e-12)
    array = np.array([layer.kind in {k.value for k in ARRAY_KINDS} for layer in metrics.layers], dtype=bool)
    stall = np.array([layer.stall_cycles for layer in metrics.layers], dtype=float)
    util = np.array([layer.utilization for layer in metrics.layers], dtype=float)
    dram = sum(layer.dram_read_bytes + layer.dram_write_bytes for layer in metrics.layers)
    solver = metrics.info.get("solver", {})
    bound = float(solver.get("bound", float("nan")) or float("nan"))
    value = float(solver.get("value", float("nan")) or float("nan"))
    layer = [
        float(cycles[array].sum() / total) if len(cycles) else 0.0,
        float(stall.sum() / total) if len(cycles) else 0.0,
        float((util * cycles).sum() / total) if len(cycles) else 0.0,
        math.log2(dram + 1.0),
    ]
    ratio = math.log2(value / bound) if bound > 0 and value > 0 else 0.0
    return logs + layer + [ratio], values


@dataclass
class ContractRows:
    """Features of a batch of designs under the contract, plus the closed form's metric values."""

    names: list[str]
    matrix: np.ndarray  # (designs, features)
    baseline: dict[str, np.ndarray]  # metric -> (designs,), NaN where the closed form does not give it
    failed: np.ndarray  # (designs,) bool: the closed form refused the point


def contract_features(
    graph: Graph,
    template_kind: str,
    points: Sequence[Mapping[str, Any]],
    fixed: Mapping[str, Any],
    stats: Mapping[str, float] | None = None,
    baseline: ClosedForm | None = None,
    options: Mapping[str, Any] | None = None,
) -> ContractRows:
    """Contract rows of ``points`` on ``graph``: graph statistics, parameters and the closed form."""
    template = family(template_kind).template()
    stats = stats if stats is not None else graph_statistics(graph)
    baseline = baseline or ClosedForm(graph, template_kind, dict(fixed), dict(options or {}))
    n = len(points)
    base_rows, failed = [], np.zeros(n, dtype=bool)
    values = {m: np.full(n, np.nan) for m in CONTRACT_METRICS}
    for i, point in enumerate(points):
        try:
            row, got = baseline_row(baseline(point))
        except (ValueError, KeyError, ArithmeticError):  # a point the closed form refuses: no row
            failed[i] = True
            row, got = [float("nan")] * len(baseline_feature_names()), {}
        base_rows.append(row)
        for m, v in got.items():
            values[m][i] = v
    graph_block = np.tile(np.array([stats[name] for name in GRAPH_FEATURES], dtype=float), (n, 1))
    matrix = np.hstack([graph_block, param_features(template, points, fixed), np.array(base_rows).reshape(n, -1)])
    names = list(GRAPH_FEATURES) + param_feature_names(template) + baseline_feature_names()
    return ContractRows(names, matrix, values, failed)


def contract_schema(template_kind: str) -> dict[str, Any]:
    """What a contract model's inputs are for one template: saved with it and compared on load."""
    template = family(template_kind).template()
    return {
        "contract": CONTRACT_VERSION,
        "template": template_kind,
        "features": list(GRAPH_FEATURES) + param_feature_names(template) + baseline_feature_names(),
        "baseline_mapper": closed_form_mapper(template_kind),
    }
