"""SCALE-Sim style lowering of ops onto a systolic array, and the per-fold compute formulas.

Every conv/matmul becomes a GEMM on operand matrices the way SCALE-Sim builds them
(``compute/operand_matrix.py``): the ifmap im2col matrix is (output pixels x window), the filter
matrix (window x filters), the ofmap (output pixels x filters). A dataflow picks which two GEMM
dimensions are laid on the array (Sr on rows, Sc on cols) and which one streams in time (T):

=========  ===============  ===========  ==========
dataflow   Sr (rows)        Sc (cols)    T (time)
=========  ===============  ===========  ==========
os         output pixels    filters      window
ws         window           filters      output pixels
is         window           out pixels   filters
=========  ===============  ===========  ==========

The array runs ceil(Sr/rows) x ceil(Sc/cols) folds one after another, each lasting
``T + rows + cols - 2`` cycles (os) or ``T + 2*rows + cols - 2`` (ws, is: the stationary operand is
loaded first), exactly the length of SCALE-Sim's demand matrices. These functions are shared with
any other systolic mapper (e.g. a CP-SAT tiler) so all of them count cycles alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dse.graph import Graph, Op, OpKind
from mappers.base import Mapping, MappingError, OpMapping
from templates.base import Arch

ARRAY_KINDS = (OpKind.CONV, OpKind.MATMUL)
VECTOR_KINDS = (OpKind.ELEMENTWISE, OpKind.POOL, OpKind.SOFTMAX, OpKind.LAYERNORM, OpKind.FFT, OpKind.SCAN)


def _covered(size: int, kernel: int, stride: int, outputs: int) -> int:
    """|union over o < outputs of [o*stride, o*stride + kernel) intersected with [0, size)|."""
    if stride < kernel:
        return max(1, min(size, (outputs - 1) * stride + kernel))
    full = min(outputs, max(0, (size - kernel) // stride + 1))
    covered = full * kernel
    o = full
    while o < outputs and o * stride < size:
        covered += min(kernel, size - o * stride)
        o += 1
    return max(1, covered)


def _uses(size: int, kernel: int, stride: int, outputs: int) -> int:
    """Number of (output, kernel offset) pairs whose input index lies inside [0, size)."""
    full = min(outputs, max(0, (size - kernel) // stride + 1))
    uses = full * kernel
    o = full
    while o < outputs and o * stride < size:
        uses += min(kernel, size - o * stride)
        o += 1
    return uses


@dataclass(frozen=True)
class ConvGeometry:
    """The ifmap side of a lowered GEMM (a matmul is a 1 x M 'image' with K channels and a 1x1 kernel)."""

    H: int
    W: int
    C: int  # channels per group
    R: int
    S: int
    stride_h: int
    stride_w: int
    P: int
    Q: int

    @property
    def used_rows(self) -> int:
        """Input rows any output window touches inside the image (windows hanging over an unpadded
        edge, as SCALE-Sim's ceil-sized outputs do, reference nothing there)."""
        return _covered(self.H, self.R, self.stride_h, self.P)

    @property
    def used_cols(self) -> int:
        return _covered(self.W, self.S, self.stride_w, self.Q)

    @property
    def row_uses(self) -> int:
        return _uses(self.H, self.R, self.stride_h, self.P)

    @property
    def col_uses(self) -> int:
        return _uses(self.W, self.S, self.stride_w, self.Q)

    @property
    def references(self) -> int:
        """In-image entries of the im2col matrix (the rest are SCALE-Sim's -1 padding)."""
        return self.row_uses * self.col_uses * self.C

    @property
    def unique_inputs(self) -> int:
        """Distinct ifmap elements the im2col matrix references (its DRAM footprint)."""
        return self.used_rows * self.used_cols * self.C


def im2col_address(g: ConvGeometry, pixel: np.ndarray, window: np.ndarray) -> np.ndarray:
    """SCALE-Sim's ifmap address of im2col entry (pixel, window) (``operand_matrix.calc_ifmap_elem_addr``);
    -1 where the window hangs over the unpadded edge."""
    oh, ow = np.divmod(pixel, g.Q)
    r, rest = np.divmod(window, g.S * g.C)
    s, ch = np.divmod(rest, g.C)
    row = oh * g.stride_h + r
    col = ow * g.stride_w + s
    return np.where((row < g.H) & (col < g.W), (row * g.W + col) * g.C + ch, -1)


@dataclass(frozen=True)
class LoweredGemm:
    """ifmap[M x K] @ filter[K x N] -> ofmap[M x N], run ``count`` times (groups x batch-matmuls)."""

    M: int  # output pixels (rows of the im2col matrix)
    K: int  # window size (reduction)
    N: int  # filters (output columns)
    count: int
    geometry: ConvGeometry

    @property
    def macs(self) -> int:
        return self.M * self.K * self.N * self.count


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


def spatial_dims(gemm: LoweredGemm, dataflow: str) -> tuple[int, int, int]:
    """(Sr, Sc, T) of SCALE-Sim's compute classes for one GEMM copy."""
    if dataflow == "os":
        return gemm.M, gemm.N, gemm.K
    if dataflow == "ws":
        return gemm.K, gemm.N, gemm.M
    if dataflow == "is":
        return gemm.K, gemm.M, gemm.N
    raise MappingError(f"unknown dataflow {dataflow!r}; allowed: os, ws, is")


def folds(sr: int, sc: int, rows: int, cols: int) -> tuple[int, int]:
    return math.ceil(sr / rows), math.ceil(sc / cols)


def fold_cycles(t: int, rows: int, cols: int, dataflow: str) -> int:
    """Cycles of one fold: stream T, fill and drain the array (ws/is also preload the stationary operand)."""
    if dataflow == "os":
        return t + rows + cols - 2
    return t + 2 * rows + cols - 2


def compute_cycles(gemm: LoweredGemm, rows: int, cols: int, dataflow: str) -> int:
    """Stall-free cycles of all folds of all copies; equals SCALE-Sim's 'Total Cycles' + 1 per layer
    (SCALE-Sim reports the index of the last cycle)."""
    sr, sc, t = spatial_dims(gemm, dataflow)
    rf, cf = folds(sr, sc, rows, cols)
    return gemm.count * rf * cf * fold_cycles(t, rows, cols, dataflow)


@dataclass
class SystolicFoldMapper:
    """Maps every op as SCALE-Sim does: MAC ops fold onto the array, the rest run on the vector unit."""

    name: str = "fold"

    def map(self, graph: Graph, arch: Arch) -> Mapping:
        rows, cols, dataflow = arch.rows, arch.cols, arch.dataflow  # type: ignore[attr-defined]
        ops: dict[str, OpMapping] = {}
        for op in graph.ops:
            if op.kind in ARRAY_KINDS:
                gemm = lower_op(op)
                sr, sc, t = spatial_dims(gemm, dataflow)
                rf, cf = folds(sr, sc, rows, cols)
                ops[op.name] = OpMapping(
                    op=op.name,
                    tile={"Sr": min(sr, rows), "Sc": min(sc, cols), "T": t},
                    loop_order=("col_fold", "row_fold", "T"),
                    dataflow=dataflow,
                    extra={
                        "unit": "array",
                        "gemm": gemm,
                        "Sr": sr,
                        "Sc": sc,
                        "T": t,
                        "row_folds": rf,
                        "col_folds": cf,
                        "compute_cycles": gemm.count * rf * cf * fold_cycles(t, rows, cols, dataflow),
                    },
                )
            elif op.kind in VECTOR_KINDS:
                ops[op.name] = OpMapping(op=op.name, tile={}, dataflow="vector", extra={"unit": "vector"})
            else:
                raise MappingError(f"op {op.name!r}: kind {op.kind.value} has no systolic mapping", node=op.name)
        _fuse_activations(graph, ops)
        return Mapping(graph=graph, arch=arch, ops=ops, order=[o.name for o in graph.ops], mapper=self.name)


def _fuse_activations(graph: Graph, ops: dict[str, OpMapping]) -> None:
    """Fuse a unary elementwise op (ReLU, GELU, ...) into the conv/matmul that feeds it.

    Every systolic accelerator applies the activation in the array's output pipeline (TPU v1's
    activation unit, Gemmini's accumulator scaling) instead of writing the raw outputs to DRAM and
    reading them back. The producer keeps its result on chip (``resident_output``), the activation
    reads it from there (``resident_inputs``) and adds no latency (``extra["fused_into"]``).
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
        ops[op.name] = replace(ops[op.name], resident_inputs=(src,), extra={**ops[op.name].extra, "fused_into": prod})
