"""Maps a chain network onto the fpga_dataflow template the way hls4ml would build it, plus engine sharing.

For every compute layer (Dense = a matmul with weights, Conv2D) the mapper resolves the layer's knobs
(model-level values overridden by ``layer<i>_*``), snaps the ReuseFactor to a legal value exactly as hls4ml's
``FPGABackend.get_valid_reuse_factors`` / ``get_closest_reuse_factor`` do (recording the request and the result),
derives the multiplier count (hls4ml's ``block_factor = ceil(n_in * n_out / RF)``), the per-sample cycle counts
of the layer's engine, and the engine it runs on: its own (dataflow) or the shared one (sequential). Activations,
pooling and softmax belong to the layer group of the compute layer before them.

Cycle rules (in ``hwmodels.fpga.cost``; per sample, validated for Resource dense layers against wa-hls4ml
Vivado HLS runs, where latency is exactly the sum of the layers' reuse factors plus one cycle per layer plus
one): a dense/conv engine needs RF cycles per output position (conv: P*Q positions with hls4ml's
ParallelizationFactor 1); an io_stream conv also cannot go faster than one input pixel per cycle.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import replace
from functools import lru_cache

from dse.graph import Graph, Op, OpKind
from hwmodels.fpga.cost import (
    ComputePlan,
    EnginePlan,
    LayerShape,
    aux_cycles,
    compute_cycles,
    per_sample,
    shared_cycles,
)
from mappers.base import Mapping, MappingError, OpMapping
from mappers.payloads import LayerGroupPlan
from templates.fpga_dataflow import FixedType, FpgaArch, LayerKnobs

UNARY_FUNCTIONS = ("relu", "relu6", "clip", "identity", "sigmoid", "tanh", "batchnorm")


def valid_reuse_factors(n_in: int, n_out: int) -> list[int]:
    """hls4ml 1.3 ``FPGABackend.get_valid_reuse_factors``: the divisors of n_in*n_out that its dense kernels accept."""
    return list(_valid_reuse_factors(n_in, n_out))


@lru_cache(maxsize=4096)
def _valid_reuse_factors(n_in: int, n_out: int) -> tuple[int, ...]:
    total = n_in * n_out
    divisors = set()
    for d in range(1, math.isqrt(total) + 1):
        if total % d == 0:
            divisors.update((d, total // d))
    out = []
    for rf in sorted(divisors):
        multiplier_limit = math.ceil(total / min(n_in, rf))
        ok = (multiplier_limit % n_out == 0) or rf >= n_in
        ok = ok and (rf % n_in == 0 or rf < n_in)
        if ok:
            out.append(rf)
    return tuple(out)


def closest_reuse_factor(valid: list[int] | tuple[int, ...], chosen: int) -> int:
    """hls4ml's ``get_closest_reuse_factor``: the nearest legal value, the smaller one on a tie."""
    pos = bisect_left(valid, chosen)
    if pos == 0:
        return valid[0]
    if pos == len(valid):
        return valid[-1]
    before, after = valid[pos - 1], valid[pos]
    return after if after - chosen < chosen - before else before


def layer_shape(op: Op, samples: int = 1) -> LayerShape:
    """The layer as hls4ml's templates see it for ONE sample: an hls4ml design streams a batch through its
    pipeline sample after sample, so the op's batch dimension (``samples`` inferences) is not part of a layer."""
    d = op.dims
    if op.kind is OpKind.CONV:
        return LayerShape(
            n_in=d["C"] * d["R"] * d["S"],
            n_out=d["K"],
            positions=per_sample(d["P"] * d["Q"] * d["N"], samples),
            in_height=d["H"],
            in_width=d["W"],
            in_channels=d["C"],
            kernel=(d["R"], d["S"]),
        )
    return LayerShape(n_in=d["K"], n_out=d["N"], positions=per_sample(d["M"] * d["B"], samples))


class FpgaDataflowMapper:
    """hls4ml-style mapping of a chain of Dense/Conv2D/activation/pool/softmax ops onto FPGA engines."""

    name = "hls4ml"

    def map(self, graph: Graph, arch: FpgaArch) -> Mapping:
        groups = layer_groups(graph)
        plans = [plan_layer(i, group[0], arch, graph.batch) for i, group in enumerate(groups)]
        aux = {op.name: aux_cycles(op, arch.io_type, graph) for group in groups for op in group[1:]}
        bottleneck = max([p.interval for p in plans] + [ii for _, ii in aux.values()])
        plans, engine = _assign_engines(plans, arch, bottleneck)
        ops: dict[str, OpMapping] = {}
        for i, group in enumerate(groups):
            plan = plans[i]
            ops[plan.op] = OpMapping(
                op=plan.op,
                tile={"n_in": plan.shape.n_in, "n_out": plan.shape.n_out, "mults": plan.mults},
                dataflow=plan.engine,
                payload=LayerGroupPlan(group=i, plan=plan),
            )
            for op in group[1:]:
                lat, ii = aux[op.name]
                ops[op.name] = OpMapping(op=op.name, tile={}, payload=LayerGroupPlan(group=i, cycles=lat, interval=ii))
        notes = [
            f"layer{p.index} ({p.op}): ReuseFactor {p.requested_reuse} is not legal for n_in={p.shape.n_in}, "
            f"n_out={p.shape.n_out}; using {p.reuse_factor} (hls4ml's closest legal value)"
            for p in plans
            if p.requested_reuse != p.reuse_factor
        ]
        return Mapping(
            graph=graph,
            arch=arch,
            ops=ops,
            order=[op.name for op in graph.ops],
            mapper=self.name,
            solver={"status": "rule-based", "engine": engine, "notes": notes, "layer_names": [p.op for p in plans]},
        )


def layer_groups(graph: Graph) -> list[list[Op]]:
    """The network's layer groups in order: each compute layer (Dense, Conv2D) with the activation, pooling and
    softmax ops after it; refuses (``MappingError``, naming the op) what the mapper cannot express."""
    _check_chain(graph)
    groups: list[list[Op]] = []
    for op in graph.ops:
        if _is_compute(op):
            groups.append([op])
        elif not groups:
            raise MappingError(
                f"op {op.name!r} ({op.kind.value}) comes before any Dense/Conv layer; the fpga_dataflow mapper "
                "needs the network to start with a compute layer",
                node=op.name,
            )
        else:
            groups[-1].append(op)
    return groups


def plan_layer(index: int, op: Op, arch: FpgaArch, samples: int) -> ComputePlan:
    """Compute layer ``index`` (op ``op``) of ``arch`` on an engine of its own: its knobs, its legal ReuseFactor
    (hls4ml's closest), multipliers and per-sample cycles (``samples``: the graph's batch)."""
    knobs = imported_weight_type(arch.layer(index), op, arch.override(index))
    shape = layer_shape(op, samples)
    valid = _valid_reuse_factors(shape.n_in, shape.n_out)
    rf = closest_reuse_factor(valid, knobs.reuse_factor)
    kind = "conv" if op.kind is OpKind.CONV else "dense"
    cycles, interval = compute_cycles(shape, rf, knobs.strategy, arch.io_type, kind)
    return ComputePlan(
        index=index,
        op=op.name,
        kind=kind,
        shape=shape,
        knobs=knobs,
        requested_reuse=knobs.reuse_factor,
        reuse_factor=rf,
        mults=math.ceil(shape.n_in * shape.n_out / rf),
        engine="own",
        cycles=cycles,
        interval=interval,
    )


def imported_weight_type(knobs: LayerKnobs, op: Op, override: dict) -> LayerKnobs:
    """A layer quantized in its model (QONNX/Brevitas ``Quant``: ``op.attrs['weight_fixed']``) keeps the weight type
    it was trained at, as hls4ml's QONNX front end sets it; only ``layer<i>_weight_width``/``_integer`` replace it."""
    fixed = op.attrs.get("weight_fixed")
    if fixed is None or "weight_width" in override or "weight_integer" in override:
        return knobs
    return replace(knobs, weight=FixedType(int(fixed[0]), int(fixed[1])))


def _assign_engines(plans: list[ComputePlan], arch: FpgaArch, bottleneck: int) -> tuple[list[ComputePlan], EnginePlan]:
    """Which layers share the one sequential engine: pinned ones, all (sequential), or hybrid's choice."""
    shared = [p for p in plans if p.knobs.execution == "sequential"]
    if arch.execution == "hybrid":
        candidates = sorted((p for p in plans if not p.knobs.pinned_execution), key=lambda p: (p.mults, p.index))
        for candidate in candidates:
            trial = [*shared, candidate]
            if _occupancy(trial, arch.io_type) <= bottleneck:
                shared = trial
        if len(shared) < 2 and not any(p.knobs.pinned_execution for p in shared):
            shared = []  # one layer alone on the "shared" engine saves nothing
    names = {p.op for p in shared}
    engine = EnginePlan()
    if shared:
        engine.mults = max(p.mults for p in shared)
        engine.members = [p.op for p in plans if p.op in names]
        engine.occupancy = _occupancy(shared, arch.io_type)
    out = []
    for p in plans:
        if p.op in names:
            cycles, interval = shared_cycles(p, engine.mults, arch.io_type)
            p = ComputePlan(**{**p.__dict__, "engine": "shared", "cycles": cycles, "interval": interval})
        out.append(p)
    return out, engine


def _occupancy(members: list[ComputePlan], io_type: str) -> int:
    mults = max(p.mults for p in members)
    return sum(shared_cycles(p, mults, io_type)[0] for p in members)


def _is_compute(op: Op) -> bool:
    return op.kind is OpKind.CONV or (op.kind is OpKind.MATMUL and bool(op.weights))


def _check_chain(graph: Graph) -> None:
    """Refuse what hls4ml-style chain export and this model cannot express, naming the op."""
    produced_by_prev = None
    for op in graph.ops:
        if op.kind is OpKind.MATMUL and not op.weights:
            raise MappingError(
                f"op {op.name!r} multiplies two activations; the fpga_dataflow mapper supports Dense (matmul with "
                "weights), Conv2D, element-wise activations, pooling and softmax",
                node=op.name,
            )
        if op.kind is OpKind.CONV and op.dims.get("G", 1) != 1:
            raise MappingError(
                f"conv {op.name!r} has groups={op.dims['G']}; the fpga_dataflow mapper supports only groups=1",
                node=op.name,
            )
        if op.kind is OpKind.CONV and (op.attrs.get("dilation", 1) != 1):
            raise MappingError(f"conv {op.name!r} is dilated; only dilation 1 is supported", node=op.name)
        if op.kind is OpKind.ELEMENTWISE and (
            op.attrs.get("arity", 1) != 1 or op.attrs.get("fn", "relu") not in UNARY_FUNCTIONS
        ):
            raise MappingError(
                f"op {op.name!r} ({op.attrs.get('fn')}, {op.attrs.get('arity', 1)} inputs) is not supported; the "
                f"fpga_dataflow mapper takes single-input activations: {', '.join(UNARY_FUNCTIONS)}",
                node=op.name,
            )
        if op.kind not in (OpKind.CONV, OpKind.MATMUL, OpKind.ELEMENTWISE, OpKind.POOL, OpKind.SOFTMAX):
            raise MappingError(
                f"op {op.name!r} is a {op.kind.value}; the fpga_dataflow mapper supports dense, conv, element-wise "
                "activations, pooling and softmax",
                node=op.name,
            )
        if len(op.inputs) != 1 or (produced_by_prev is not None and op.inputs[0] != produced_by_prev):
            raise MappingError(
                f"op {op.name!r} does not read the previous op's output; the fpga_dataflow mapper supports chain "
                "networks only (no skip connections or branches)",
                node=op.name,
            )
        produced_by_prev = op.outputs[0]
