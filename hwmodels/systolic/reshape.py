"""Workload-side axes (DRACO): reshape a network to the array it runs on, and pick its sparse layers.

DRACO (Jha et al., "DRACO: Co-Optimizing Hardware Utilization, and Performance of DNNs on Systolic
Accelerator", ISVLSI 2020, arXiv:2006.15103) shows that changing a network's channel counts so they
fill the PE array raises utilisation as much as changing the hardware. The systolic template's
``width_multiplier`` scales every hidden layer's output channels, ``round_channels`` rounds them up to
a multiple of the array's columns (the dimension filters fold onto under os and ws), and
``sparse_layers`` + ``sparse_pattern`` choose which conv/matmul layers are pruned to which pattern.
The network's outputs (the classifier) keep their size; channel changes flow to every consumer
(depthwise convs, pools, adds, the next layer's input channels). Applied by the fold mapper, so the
mapping, the metrics and the per-layer report describe the reshaped network (its MACs included).
"""

from __future__ import annotations

import math
from dataclasses import replace

from dse.graph import Graph, Op, OpKind, OpSparsity, Tensor
from dse.importers.sparsity import parse_pattern, weighted_ops, with_sparsity
from templates.systolic import SystolicArch


def reshape_for_array(graph: Graph, arch: SystolicArch) -> Graph:
    """The graph the array runs: widths scaled/rounded and sparse layers chosen per ``arch`` (unchanged
    when the template's workload axes are at their defaults)."""
    if not arch.reshapes_workload:
        return graph
    if arch.width_multiplier != 1.0 or arch.round_channels:
        graph = scale_widths(graph, arch.width_multiplier, arch.cols if arch.round_channels else 1)
    if arch.sparse_layers != "workload":
        graph = choose_sparse_layers(graph, arch.sparse_layers, arch.sparse_pattern)
    return graph


def _target(channels: int, multiplier: float, multiple: int) -> int:
    scaled = max(1, math.ceil(channels * multiplier - 1e-9))
    return math.ceil(scaled / multiple) * multiple


def _scaled_shape(shape: tuple[int, ...], old: int, new: int) -> tuple[int, ...]:
    """``shape`` with its channel axis (axis 1 of NCHW, else the last axis) changed from ``old`` to ``new``."""
    if old == new or not shape:
        return shape
    axis = 1 if len(shape) == 4 and shape[1] == old else len(shape) - 1
    if shape[axis] != old:
        return shape
    return (*shape[:axis], new, *shape[axis + 1 :])


def scale_widths(graph: Graph, multiplier: float, multiple: int) -> Graph:
    """Every hidden conv/matmul's output channels times ``multiplier``, rounded up to ``multiple``."""
    outputs = {name for name, t in graph.tensors.items() if t.kind == "output"}
    channels: dict[str, tuple[int, int]] = {}  # tensor -> (old channels, new channels)
    tensors = dict(graph.tensors)
    ops: list[Op] = []
    for op in graph.ops:
        old_in, new_in = channels.get(op.inputs[0], (1, 1)) if op.inputs else (1, 1)
        ratio = new_in / old_in
        d = dict(op.dims)
        out_old = out_new = None
        if op.kind is OpKind.CONV:
            groups = d.get("G", 1)
            c_new = round(d["C"] * ratio)
            if groups > 1 and groups == d["C"]:  # depthwise: follows its input
                out_old, out_new = d["K"], c_new * (d["K"] // groups)
                d.update(C=c_new, G=c_new, K=out_new)
            elif groups == 1:
                out_old = d["K"]
                out_new = out_old if op.outputs[0] in outputs else _target(out_old, multiplier, multiple)
                d.update(C=c_new, K=out_new)
        elif op.kind is OpKind.MATMUL and op.weights:
            out_old = d["N"]
            out_new = out_old if op.outputs[0] in outputs else _target(out_old, multiplier, multiple)
            d.update(K=round(d["K"] * ratio), N=out_new)
        elif op.kind is OpKind.ELEMENTWISE:
            d["N"] = round(d["N"] * ratio)
        elif op.kind is OpKind.POOL:
            d["C"] = round(d["C"] * ratio)
        if out_old is None and op.inputs and op.kind in (OpKind.ELEMENTWISE, OpKind.POOL):
            out_old, out_new = old_in, new_in
        for w in op.weights:
            t = tensors[w]
            numel_new = _weight_numel(op.kind, d, t)
            tensors[w] = replace(t, shape=_weight_shape(t.shape, numel_new))
        for out in op.outputs:
            if out_old is not None:
                channels[out] = (out_old, out_new)
                tensors[out] = replace(tensors[out], shape=_scaled_shape(tensors[out].shape, out_old, out_new))
        ops.append(replace(op, dims=d))
    return Graph(graph.name, ops, tensors, dict(graph.meta))


def _weight_numel(kind: OpKind, d: dict[str, int], t: Tensor) -> int:
    if kind is OpKind.CONV:
        return d["K"] * (d["C"] // d.get("G", 1)) * d["R"] * d["S"]
    if kind is OpKind.MATMUL:
        return d["K"] * d["N"]
    return t.numel


def _weight_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """A weight's shape holding ``numel`` values (its leading axis absorbs the change; bias-like 1-D too)."""
    rest = math.prod(shape[1:]) if len(shape) > 1 else 1
    if rest and numel % rest == 0:
        return (numel // rest, *shape[1:])
    return (numel,)


def choose_sparse_layers(graph: Graph, which: str, pattern: str) -> Graph:
    """``pattern`` on the conv/matmul layers ``which`` selects, every other one dense:
    none | all | pointwise (1x1 convs and matmuls) | spatial (kxk convs, depthwise included) |
    inner (all but the first and the last, which pruning usually keeps dense)."""
    try:
        chosen = parse_pattern(float(pattern), "sparse_pattern")
    except ValueError:
        chosen = parse_pattern(pattern, "sparse_pattern")
    candidates = weighted_ops(graph)
    by_op: dict[str, OpSparsity] = {}
    for i, op in enumerate(candidates):
        d = op.dims
        pointwise = op.kind is OpKind.MATMUL or d.get("R", 1) * d.get("S", 1) == 1
        pick = {
            "none": False,
            "all": True,
            "pointwise": pointwise,
            "spatial": not pointwise,
            "inner": 0 < i < len(candidates) - 1,
        }[which]
        keep_act = op.sparsity.act_density
        by_op[op.name] = replace(chosen, act_density=keep_act) if pick else OpSparsity(act_density=keep_act)
    return with_sparsity(graph, by_op)
