"""Operand sparsity on a graph: the spec's ``workload.sparsity``, SCALE-Sim v3's ``N:M`` column, an
ONNX file's measured zero weights.

A spec writes::

    workload: {model: mobilenet_v1, sparsity: {default: "2:4", layers: {conv1: dense, fc: 0.3}}}

Each value is ``dense``, an ``N:M`` pattern (at most N non-zeros in every M consecutive weights along
the reduction), or a number in (0, 1] (unstructured: the fraction of non-zero weights). ``sparsity:
"2:4"`` alone is the default for every layer; ``sparsity: measured`` takes the zero-weight density the
ONNX importer measured (``graph.meta["weight_density"]``); ``activations: 0.5`` sets the input
activations' density. Only ops with weights (conv, matmul with a weight operand) carry weight sparsity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from dse.graph import DENSE, Graph, GraphError, Op, OpKind, OpSparsity

SPARSITY_KEYS = ("default", "layers", "activations")
ALLOWED = 'allowed: "dense", an "N:M" pattern with 1 <= N <= M (e.g. "2:4", "1:4"), or a density in (0, 1]'


def parse_pattern(value: Any, where: str = "sparsity") -> OpSparsity:
    """``"2:4"`` / ``"dense"`` / ``0.3`` -> OpSparsity; GraphError naming ``where`` otherwise."""
    if isinstance(value, bool):
        raise GraphError(f"{where}: {value!r} is not a sparsity; {ALLOWED}", node=where)
    if isinstance(value, (int, float)):
        if not 0 < value <= 1:
            raise GraphError(f"{where}: density {value!r} is outside (0, 1]; {ALLOWED}", node=where)
        return OpSparsity(weight_density=float(value))
    text = str(value).strip().lower()
    if text in ("dense", "1:1"):
        return DENSE
    n_text, sep, m_text = text.partition(":")
    if sep and n_text.isdigit() and m_text.isdigit():
        n, m = int(n_text), int(m_text)
        if 1 <= n <= m:
            return DENSE if n == m else OpSparsity(n, m, n / m)
    raise GraphError(f"{where}: {value!r} is not a sparsity; {ALLOWED}", node=where)


def weighted_ops(graph: Graph) -> list[Op]:
    """The ops weight sparsity applies to: convs and matmuls with a weight operand."""
    return [op for op in graph.ops if op.kind in (OpKind.CONV, OpKind.MATMUL) and op.weights]


def with_sparsity(graph: Graph, by_op: Mapping[str, OpSparsity]) -> Graph:
    """A copy of ``graph`` whose named ops carry the given sparsity (dense ones lose theirs)."""
    ops = []
    for op in graph.ops:
        if op.name not in by_op:
            ops.append(op)
            continue
        attrs = {k: v for k, v in op.attrs.items() if k != "sparsity"}
        if not by_op[op.name].dense:
            attrs["sparsity"] = by_op[op.name]
        ops.append(replace(op, attrs=attrs))
    return Graph(graph.name, ops, dict(graph.tensors), dict(graph.meta))


def apply_spec_sparsity(graph: Graph, spec: Any) -> Graph:
    """The graph with a spec's ``workload.sparsity`` applied (see the module docstring)."""
    if spec is None:
        return graph
    if isinstance(spec, str) and spec.strip().lower() == "measured":
        measured = graph.meta.get("weight_density")
        if not measured:
            raise GraphError(
                "sparsity: measured needs an ONNX model with weight values (the importer measures their "
                "zeros); this model has none: give a pattern instead",
                node="sparsity",
            )
        return with_sparsity(graph, {name: OpSparsity(weight_density=d) for name, d in measured.items() if d < 1})
    if not isinstance(spec, Mapping):
        spec = {"default": spec}
    unknown = sorted(set(spec) - set(SPARSITY_KEYS))
    if unknown:
        raise GraphError(
            f"sparsity: unknown key {unknown[0]!r}; allowed keys: {', '.join(SPARSITY_KEYS)}", node="sparsity"
        )
    default = parse_pattern(spec.get("default", "dense"), "sparsity.default")
    layers = spec.get("layers") or {}
    if not isinstance(layers, Mapping):
        raise GraphError("sparsity.layers must be a mapping of layer name to a sparsity; " + ALLOWED, "sparsity")
    targets = {op.name for op in weighted_ops(graph)}
    for name in layers:
        if name not in targets:
            some = ", ".join(sorted(targets)[:8]) + (", ..." if len(targets) > 8 else "")
            raise GraphError(
                f"sparsity.layers: {name!r} is not a conv/matmul with weights in this model; such layers: {some}",
                node=str(name),
            )
    act = spec.get("activations", 1.0)
    act_density = parse_pattern(act, "sparsity.activations").weight_density if act != "dense" else 1.0
    if isinstance(act, str) and act.strip().lower() not in ("dense", "1:1"):
        raise GraphError(f"sparsity.activations: {act!r} must be a density in (0, 1] or dense", "sparsity")
    by_op = {}
    for op in graph.ops:
        if op.name in targets:
            chosen = parse_pattern(layers[op.name], f"sparsity.layers.{op.name}") if op.name in layers else default
            by_op[op.name] = replace(chosen, act_density=act_density)
        elif act_density < 1 and op.kind in (OpKind.CONV, OpKind.MATMUL):
            by_op[op.name] = OpSparsity(act_density=act_density)
    return with_sparsity(graph, by_op)


def check_spec_sparsity(spec: Any) -> None:
    """Check a spec's ``workload.sparsity`` without its model (layer names are checked once the graph
    exists): GraphError with one clear message otherwise."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "measured"):
        return
    if not isinstance(spec, Mapping):
        parse_pattern(spec, "sparsity")
        return
    unknown = sorted(set(spec) - set(SPARSITY_KEYS))
    if unknown:
        raise GraphError(f"sparsity: unknown key {unknown[0]!r}; allowed keys: {', '.join(SPARSITY_KEYS)}", "sparsity")
    parse_pattern(spec.get("default", "dense"), "sparsity.default")
    layers = spec.get("layers") or {}
    if not isinstance(layers, Mapping):
        raise GraphError("sparsity.layers must be a mapping of layer name to a sparsity; " + ALLOWED, "sparsity")
    for name, value in layers.items():
        parse_pattern(value, f"sparsity.layers.{name}")
    act = spec.get("activations", 1.0)
    if isinstance(act, str) and act.strip().lower() != "dense":
        raise GraphError(f"sparsity.activations: {act!r} must be a density in (0, 1] or dense", "sparsity")
    if not isinstance(act, str):
        parse_pattern(act, "sparsity.activations")


def measured_weight_density(graph: Graph, model: Any) -> dict[str, float]:
    """Fraction of non-zero weights of each conv/matmul, read from an ONNX model's initializers.

    The IR renames weights, so the model's Conv/Gemm/MatMul nodes with a stored weight are paired with
    the graph's weighted ops in order, and a pair counts only when the weight sizes agree (ops without
    stored values, or that the pairing cannot place, are left out)."""
    from onnx import numpy_helper  # heavy third-party import, deferred

    stored = {init.name: init for init in model.graph.initializer}
    arrays = []
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm", "MatMul") and len(node.input) > 1 and node.input[1] in stored:
            try:
                arrays.append(numpy_helper.to_array(stored[node.input[1]]))
            except (OSError, ValueError):  # external data absent: shapes only
                arrays.append(np.zeros(0))
    out: dict[str, float] = {}
    for op, array in zip(weighted_ops(graph), arrays):
        if array.size and array.size == graph.tensors[op.weights[0]].numel:
            out[op.name] = round(float((array != 0).mean()), 6)
    return out
