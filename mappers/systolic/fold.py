"""The fold mapper: every op mapped as SCALE-Sim maps it.

Every conv/matmul is lowered to a GEMM on operand matrices the way SCALE-Sim builds them
(``compute/operand_matrix.py``; ``lower_op``) and folded onto the array (the dataflow table and the
fold formulas are in ``hwmodels.systolic.compute``, shared with the tiling mappers and the cost
model); the other ops run on the vector unit, a unary activation fused into the conv/matmul feeding it.
On an array with ``sparsity_support`` an N:M-sparse op runs SCALE-Sim's condensed GEMM
(``hwmodels.systolic.sparse``); the template's workload axes (DRACO) reshape the graph first
(``hwmodels.systolic.reshape``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dse.graph import Graph, Op, OpKind
from hwmodels.systolic.compute import ConvGeometry, LoweredGemm, compute_cycles, folds, spatial_dims
from hwmodels.systolic.reshape import reshape_for_array
from hwmodels.systolic.sparse import sparse_lowering
from mappers.base import Mapping, MappingError, OpMapping
from mappers.payloads import FoldPlan
from templates.systolic import SystolicArch

ARRAY_KINDS = (OpKind.CONV, OpKind.MATMUL)
VECTOR_KINDS = (OpKind.ELEMENTWISE, OpKind.POOL, OpKind.SOFTMAX, OpKind.LAYERNORM, OpKind.FFT, OpKind.SCAN)


def lower_op(op: Op) -> LoweredGemm:
    """The GEMM SCALE-Sim would run for ``op``.

    Depthwise and grouped convs (G > 1) are not modelled by SCALE-Sim; each group is lowered as its
    own small GEMM (K = R*S*C/G, N = K_out/G) and the G GEMMs run back to back. On a plain systolic
    array that is the truth: a depthwise conv fills one column per fold, so utilisation is poor.
    A batched matmul (B > 1) is B independent GEMMs; batch N of a conv is folded into the output
    pixels (M = N*P*Q), which is how an im2col lowering batches.
    """
    d = op.dims
    if op.kind is OpKind.CONV:
        g = d.get("G", 1)
        sh, sw = op.attrs.get("stride", (1, 1))
        c_per_group = d["C"] // g
        geom = ConvGeometry(d["H"], d["W"], c_per_group, d["R"], d["S"], int(sh), int(sw), d["P"], d["Q"])
        n = d.get("N", 1)
        if n > 1:
            geom = ConvGeometry(d["H"] * n, d["W"], c_per_group, d["R"], d["S"], int(sh), int(sw), d["P"] * n, d["Q"])
        return LoweredGemm(n * d["P"] * d["Q"], d["R"] * d["S"] * c_per_group, d["K"] // g, g, geom)
    if op.kind is OpKind.MATMUL:
        geom = ConvGeometry(1, d["M"], d["K"], 1, 1, 1, 1, 1, d["M"])
        return LoweredGemm(d["M"], d["K"], d["N"], d["B"], geom)
    raise MappingError(f"op {op.name!r} of kind {op.kind.value} does not run on the MAC array", node=op.name)


@dataclass
class SystolicFoldMapper:
    """Maps every op as SCALE-Sim does: MAC ops fold onto the array, the rest run on the vector unit."""

    name: str = "fold"

    def map(self, graph: Graph, arch: SystolicArch) -> Mapping:
        rows, cols, dataflow = arch.rows, arch.cols, arch.dataflow
        original = {op.name: op for op in graph.ops}
        graph = reshape_for_array(graph, arch)  # DRACO axes; the same graph when they are at their defaults
        ops: dict[str, OpMapping] = {}
        for op in graph.ops:
            if op.kind in ARRAY_KINDS:
                gemm = lower_op(op)
                sparse = sparse_lowering(gemm, op.sparsity, arch)
                if sparse is not None:
                    gemm = sparse.gemm
                before = original.get(op.name)
                changed = sparse is not None or (before is not None and before.dims != op.dims)
                sr, sc, t = spatial_dims(gemm, dataflow)
                rf, cf = folds(sr, sc, rows, cols)
                ops[op.name] = OpMapping(
                    op=op.name,
                    tile={"Sr": min(sr, rows), "Sc": min(sc, cols), "T": t},
                    loop_order=("col_fold", "row_fold", "T"),
                    dataflow=dataflow,
                    payload=FoldPlan(
                        unit="array",
                        gemm=gemm,
                        spatial_rows=sr,
                        spatial_cols=sc,
                        temporal=t,
                        row_folds=rf,
                        col_folds=cf,
                        compute_cycles=compute_cycles(gemm, rows, cols, dataflow),
                        sparse=sparse,
                        dense_shape_gemm=lower_op(before) if changed and before is not None else None,
                    ),
                )
            elif op.kind in VECTOR_KINDS:
                ops[op.name] = OpMapping(op=op.name, tile={}, dataflow="vector", payload=FoldPlan(unit="vector"))
            else:
                raise MappingError(f"op {op.name!r}: kind {op.kind.value} has no systolic mapping", node=op.name)
        _fuse_activations(graph, ops)
        return Mapping(graph=graph, arch=arch, ops=ops, order=[o.name for o in graph.ops], mapper=self.name)


def _fuse_activations(graph: Graph, ops: dict[str, OpMapping]) -> None:
    """Fuse a unary elementwise op (ReLU, GELU, ...) into the conv/matmul that feeds it.

    Every systolic accelerator applies the activation in the array's output pipeline (TPU v1's
    activation unit, Gemmini's accumulator scaling) instead of writing the raw outputs to DRAM and
    reading them back. The producer keeps its result on chip (``resident_output``), the activation
    reads it from there (``resident_inputs``) and adds no latency (``FoldPlan.fused_into``).
    Only done when the activation is the producer's only consumer, so no other op needs the raw values.
    """
    producer = graph.producer()
    consumers = graph.consumers()
    by_name = {op.name: op for op in graph.ops}
    for op in graph.ops:
        if op.kind is not OpKind.ELEMENTWISE or len(op.inputs) != 1 or op.weights:
            continue
        src = op.inputs[0]
        prod = producer.get(src)
        if prod is None or by_name[prod].kind not in ARRAY_KINDS or consumers.get(src) != [op.name]:
            continue
        if graph.tensors[src].kind == "output":
            continue
        ops[prod] = replace(ops[prod], resident_output=True)
        fused = ops[op.name]
        ops[op.name] = replace(fused, resident_inputs=(src,), payload=replace(fused.payload, fused_into=prod))
