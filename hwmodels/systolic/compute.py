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
loaded first), exactly the length of SCALE-Sim's demand matrices. These functions are shared by the fold
mapper, the tiling mappers (a tile is a smaller GEMM on the same array), the cost model and its batch
form, so all of them count cycles alike. Lowering an op into a ``LoweredGemm`` is the fold mapper's
(``mappers.systolic.fold.lower_op``); the data types live here, below all of their users.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


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
    # SCALE-Sim sparse mode where the N:M pattern cuts across input channels (``hwmodels.systolic.sparse``):
    # (n, m) such that window column j of this condensed GEMM is window (j // n) * m + j % n of the geometry.
    window_pattern: tuple[int, int] | None = None

    @property
    def macs(self) -> int:
        return self.M * self.K * self.N * self.count


def original_window(window: np.ndarray, pattern: tuple[int, int] | None) -> np.ndarray:
    """The geometry's window index of a condensed GEMM's window column (identity when dense)."""
    if pattern is None:
        return window
    n, m = pattern
    return (window // n) * m + window % n


def spatial_axes(m: Any, k: Any, n: Any, dataflow: str) -> tuple[Any, Any, Any]:
    """(Sr, Sc, T) of a GEMM M x K x N (numbers or arrays) under ``dataflow`` (the table above)."""
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    if dataflow == "is":
        return k, m, n
    raise ValueError(f"unknown dataflow {dataflow!r}; allowed: os, ws, is")


def spatial_dims(gemm: LoweredGemm, dataflow: str) -> tuple[int, int, int]:
    """(Sr, Sc, T) of SCALE-Sim's compute classes for one GEMM copy."""
    return spatial_axes(gemm.M, gemm.K, gemm.N, dataflow)


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


def array_sram_reads(dataflow: str, sr: Any, sc: Any, t: Any, rf: Any, cf: Any) -> tuple[Any, Any]:
    """(ifmap, filter) SRAM reads of the array for one GEMM copy (numbers or arrays): the streamed operand
    is read once per fold of the other side, the stationary one once."""
    if dataflow == "os":
        return sr * t * cf, t * sc * rf
    if dataflow == "ws":
        return t * sr * cf, sr * sc
    return sr * sc, t * sr * cf


def array_writes(m: Any, n: Any, rf: Any, dataflow: str) -> Any:
    """Ofmap words the array emits for one GEMM copy (numbers or arrays): once under os, once per row
    fold (partial sums) under ws and is, as SCALE-Sim does."""
    return m * n * (1 if dataflow == "os" else rf)


def tile_fold_cost(
    m: np.ndarray, k: np.ndarray, n: np.ndarray, rows: int, cols: int, dataflow: str
) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, array-side SRAM words) of one GEMM copy of each tile shape: the fold formulas above over
    arrays of tile GEMMs (the tiling mappers' compute cost)."""
    sr, sc, t = spatial_axes(m, k, n, dataflow)
    rf = np.ceil(sr / rows)
    cf = np.ceil(sc / cols)
    cycles = np.where(m * k * n > 0, rf * cf * fold_cycles(t, rows, cols, dataflow), 0)
    reads_if, reads_f = array_sram_reads(dataflow, sr, sc, t, rf, cf)
    return cycles, reads_if + reads_f + array_writes(m, n, rf, dataflow)
