"""The hls4ml-style FPGA model over arrays of designs: one graph, N designs at once, every design-level metric of
``FpgaDataflowModel.evaluate`` (values and the power breakdown's energies) equal to it.

A design whose layers all run on engines of their own (``execution: dataflow``, no layer pinned to the shared
engine) is a sum over its layer groups, and a layer group's figures depend on a few of the design's knobs only:
that layer's ReuseFactor, strategy and number types, the width of the data it reads (the previous layer's result),
the IO type and the part. So each distinct (layer group, knobs) is priced once, on a design that has them, by the
scalar path's own functions (``mappers.fpga.plan_layer``, ``aux_cycles``, ``hwmodels.fpga.model.op_figures``), and
the designs gather their groups' figures as numpy columns; ``design_values``, the model's own function, turns the
totals into the metrics on columns.

A shared engine couples the layers (its size is the largest member's, hybrid execution picks members against the
pipeline's slowest stage), so such a design (``execution`` sequential or hybrid, or a layer pinned to the shared
engine) is evaluated exactly by the scalar mapper and model, once per distinct design. Per-layer rows are not
produced: the scalar path gives them for the designs anybody looks at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Graph, Op
from hwmodels.base import ArrayEvaluator, ArrayMetrics
from hwmodels.catalogs.fpga import get_part
from hwmodels.fpga.cost import MODEL_OVERHEAD_CYCLES, aux_cycles
from hwmodels.fpga.model import FpgaDataflowModel, design_values, op_figures
from hwmodels.systolic.arrays import distinct_rows
from mappers.base import MappingError
from mappers.fpga import FpgaDataflowMapper, layer_groups, plan_layer
from mappers.payloads import LayerGroupPlan
from templates.fpga_dataflow import FpgaDataflowTemplate, layer_knob_columns

RESOURCES = ("dsp", "lut", "ff", "bram")  # FpgaDataflowModel's resource totals, in its order
# what a layer group's figures depend on besides the design-level IO type, part and input width
GROUP_KNOBS = ("reuse_factor", "strategy", "weight_width", "weight_integer", "result_width", "result_integer")
CHUNK_DESIGNS = 8192  # points per call the explorer sends


@dataclass(frozen=True)
class _GroupTable:
    """One layer group's figures per distinct knob row (``_price_group``), and each design's row."""

    cycles: np.ndarray
    slowest_stage: np.ndarray
    resource_layer: np.ndarray
    resources: dict[str, np.ndarray]
    row: np.ndarray


def _codes(column: np.ndarray) -> np.ndarray:
    """Labels (strings, flags) as float codes, for ``distinct_rows``."""
    if column.dtype != object:
        return column.astype(float)
    return np.unique(column.astype(str), return_inverse=True)[1].astype(float).reshape(-1)


def evaluate_designs(
    graph: Graph, points: Sequence[Mapping[str, Any]], columns: dict[str, np.ndarray], fixed: Mapping[str, Any]
) -> ArrayMetrics:
    """``FpgaDataflowModel().evaluate(FpgaDataflowMapper().map(graph, arch), arch)`` for every design (``points``,
    all accepted by the template, and their ``instantiate_columns``), at once."""
    n = len(points)
    groups = layer_groups(graph)
    values: dict[str, np.ndarray] = {}
    energy: dict[str, np.ndarray] = {}

    def store(index: np.ndarray, got_values: dict[str, Any], got_energy: dict[str, Any]) -> None:
        for out, got in ((values, got_values), (energy, got_energy)):
            for name, column in got.items():
                out.setdefault(name, np.zeros(n))[index] = column

    shared = columns["execution"] == "hybrid"
    for g in range(len(groups)):
        shared |= layer_knob_columns(columns, g)["execution"] == "sequential"
    own = np.flatnonzero(~shared)
    if len(own):
        picked = {name: column[own] for name, column in columns.items()}
        _own_engines(graph, groups, [points[i] for i in own], picked, fixed, own, store)
    _shared_engines(graph, points, np.flatnonzero(shared), fixed, store)
    return ArrayMetrics(values, energy)


def _own_engines(
    graph: Graph,
    groups: list[list[Op]],
    points: Sequence[Mapping[str, Any]],
    columns: dict[str, np.ndarray],
    fixed: Mapping[str, Any],
    index: np.ndarray,
    store: Any,
) -> None:
    """Designs whose layers all have engines of their own: the layer groups' figures summed per design."""
    n = len(points)
    tables = []
    data_bits = columns["width"]
    design_codes = [_codes(columns["io_type"]), _codes(columns["part"])]
    for g, group in enumerate(groups):
        knobs = layer_knob_columns(columns, g)
        key = [*design_codes, data_bits, _codes(knobs["weight_given"].astype(object)), columns["accum_width"]]
        key += [_codes(knobs[name]) for name in GROUP_KNOBS]
        _, row = distinct_rows(key)
        first = np.unique(row, return_index=True)[1]
        priced = [_price_group(graph, g, group, {**fixed, **points[int(i)]}, float(data_bits[i])) for i in first]
        cycles, stage, resource_layer, resources = zip(*priced)
        tables.append(
            _GroupTable(
                np.array(cycles, dtype=float),
                np.array(stage, dtype=float),
                np.array(resource_layer, dtype=bool),
                {name: np.array([r[name] for r in resources]) for name in RESOURCES},
                row,
            )
        )
        data_bits = knobs["result_width"]
    latency = np.full(n, MODEL_OVERHEAD_CYCLES.value)
    slowest = np.full(n, -np.inf)
    resource_layers = np.zeros(n, dtype=bool)
    totals = {name: np.zeros(n) for name in RESOURCES}
    for table in tables:
        latency = latency + table.cycles[table.row]
        slowest = np.maximum(slowest, table.slowest_stage[table.row])
        resource_layers |= table.resource_layer[table.row]
        for name in RESOURCES:
            totals[name] = totals[name] + table.resources[name][table.row]
    pipelined = (columns["io_type"] == "io_stream") | ~resource_layers
    ops = 2.0 * sum(op.macs for op in graph.ops)
    parts = columns["part"]
    for part_name in dict.fromkeys(parts.tolist()):
        sel = np.flatnonzero(parts == part_name)
        got_values, got_energy = design_values(
            {name: totals[name][sel] for name in RESOURCES},
            latency[sel],
            slowest[sel],
            pipelined[sel],
            graph.batch,
            columns["clock_period_ns"][sel],
            get_part(part_name),
            ops,
        )
        store(index[sel], got_values, got_energy)


def _price_group(
    graph: Graph, g: int, group: list[Op], point: Mapping[str, Any], data_bits: float
) -> tuple[int, float, bool, dict[str, float]]:
    """(per-sample cycles, slowest own stage, has a Resource layer, resources) of layer group ``g`` of the design
    at ``point`` on an engine of its own, reading ``data_bits`` wide inputs: the mapper's and the model's own
    functions, in the model's order over the group's ops."""
    arch = FpgaDataflowTemplate().instantiate(point)
    part = get_part(arch.part)
    plan = plan_layer(g, group[0], arch, graph.batch)
    cycles, stage, resource_layer = 0, -np.inf, False
    totals = dict.fromkeys(RESOURCES, 0.0)
    bits = int(data_bits)
    for op in group:
        if op is group[0]:
            member = LayerGroupPlan(group=g, plan=plan)
        else:
            latency, interval = aux_cycles(op, arch.io_type, graph)
            member = LayerGroupPlan(group=g, cycles=latency, interval=interval)
        figures = op_figures(op, member, graph, arch, part, bits)
        bits = figures.data_bits
        cycles += figures.cycles
        if figures.own_stage:
            stage = max(stage, figures.interval)
        resource_layer |= figures.resource_layer
        for name in RESOURCES:
            totals[name] += getattr(figures.resources, name)
    return cycles, stage, resource_layer, totals


def _shared_engines(
    graph: Graph, points: Sequence[Mapping[str, Any]], index: np.ndarray, fixed: Mapping[str, Any], store: Any
) -> None:
    """Designs with a shared engine: the scalar mapper and model, once per distinct design."""
    template, mapper, model = FpgaDataflowTemplate(), FpgaDataflowMapper(), FpgaDataflowModel()
    seen: dict[Any, Any] = {}
    for i in index.tolist():
        arch = template.instantiate({**fixed, **points[i]})
        if arch not in seen:
            metrics = model.evaluate(mapper.map(graph, arch), arch)
            seen[arch] = (metrics.values, metrics.energy_breakdown_pj)
        store(np.array([i]), *seen[arch])


@dataclass
class FpgaArrayEvaluator(ArrayEvaluator):
    """Design points of one graph in, the scalar path's flat metrics out, a batch per call: the family table's
    ``array_evaluator`` for ``fpga_dataflow`` (its default mapper, hls4ml)."""

    batch_points: int = CHUNK_DESIGNS  # points per call the explorer sends (ArrayExecutor)

    def evaluate_points(self, points: Sequence[dict]) -> tuple[ArrayMetrics, np.ndarray]:
        """(metrics of the points ``instantiate`` accepts, their indices in ``points``); the refused ones (and
        every point of a graph the mapper refuses) are left to the scalar path, which raises their message."""
        columns, accepted = FpgaDataflowTemplate().instantiate_columns(points, self.fixed)
        index = np.flatnonzero(accepted)
        picked = {name: column[index] for name, column in columns.items()}
        try:
            metrics = evaluate_designs(self.graph, [points[i] for i in index], picked, self.fixed)
        except MappingError:
            return ArrayMetrics({}, {}), np.zeros(0, dtype=np.int64)
        return metrics, index
