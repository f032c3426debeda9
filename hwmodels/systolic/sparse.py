"""Sparse systolic arrays: SCALE-Sim 3.0.0's sparsity mode, analytically, plus Sparseloop-style gating,
skipping and compressed formats priced from ``hwmodels.catalogs.sparse``.

SCALE-Sim 3 (``compute/operand_matrix.py``), for a layer whose topology row says N:M and with
``SparsitySupport`` on, keeps the first N of every M consecutive rows of the filter operand matrix
(window x filters), condenses each column to those rows (the last, partial block keeps min(rest, N)),
and drops the matching columns of the ifmap im2col matrix. The array then runs a dense GEMM with
reduction K' = floor(K/M) * N + min(K mod M, N) instead of K; cycles, SRAM and DRAM traffic are the
dense formulas on that GEMM. Its SPARSE_REPORT counts the filter storage: the dense K x N words, the
condensed words plus metadata, and the metadata alone (ellpack_block: ceil(log2 M) bits per kept weight,
in 32-bit words; csr / csc: index and pointer counts of the K x N pattern matrix).

The condensed GEMM keeps the dense machinery exact: where M divides the channel count (or the kernel is
1x1) the kept window columns are whole channels, so the condensed im2col is the im2col of a conv with
C' = C * N / M channels; otherwise the GEMM records the pattern (``LoweredGemm.window_pattern``) and the
CALC model replays SCALE-Sim's read buffer over the kept columns' true addresses.

Beyond SCALE-Sim (``sparse_mac``): ``skip`` runs the condensed GEMM (structured N:M; unstructured
zeros cannot be skipped without load balancing a systolic array lacks, so they run dense and their
MACs are skipped for energy only, behind an intersection unit); ``gate`` runs the dense GEMM and
clock-gates every MAC with a zero operand. Zero activations are gated in both. The filter travels
compressed in ``sparse_rep`` (DRAM and SRAM bytes = data + metadata).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dse.graph import OpSparsity
from hwmodels.catalogs.sparse import (
    GATE_AREA_FRACTION,
    GATED_MAC_FRACTION,
    INTERSECT_AREA_FRACTION,
    INTERSECT_ENERGY_FRACTION,
    NM_DECODE_ENERGY_FRACTION,
    NM_MUX_AREA_FRACTION,
    FilterStorage,
    filter_storage,
)
from hwmodels.systolic.compute import LoweredGemm
from templates.systolic import SystolicArch

SCALESIM_METADATA_WORD_BITS = 32  # SCALE-Sim's compression.py counts ellpack metadata in 32-bit words


def condensed_k(k: int, n: int, m: int) -> int:
    """Rows SCALE-Sim keeps of a K-row filter matrix under N:M: N of every full block of M, and
    min(rest, N) of the last partial block."""
    return (k // m) * n + min(k % m, n)


def condense(gemm: LoweredGemm, n: int, m: int) -> LoweredGemm:
    """SCALE-Sim's condensed GEMM of ``gemm`` under N:M (see the module docstring)."""
    if n >= m:
        return gemm
    g = gemm.geometry
    k_kept = condensed_k(gemm.K, n, m)
    if g.R * g.S == 1 or g.C % m == 0:  # whole channels kept: a conv with fewer channels
        c_kept = k_kept if g.R * g.S == 1 else g.C // m * n
        return replace(gemm, K=k_kept, geometry=replace(g, C=c_kept))
    return replace(gemm, K=k_kept, window_pattern=(n, m))


def optimized_gemm(gemm: LoweredGemm, block: int) -> LoweredGemm:
    """SCALE-Sim 3's optimized sparse mapping (ws): the filter is padded to a multiple of 2B rows and
    every pair of B-row blocks is packed into B rows (each column keeps at most B/2 of every B), so the
    array's reduction is ceil(K / 2B) * B. Compute cycles are exact; SCALE-Sim draws each column's
    N at random (its RandomNumberGeneratorSeed), so its traffic is approximated by keeping half the windows."""
    k_opt = math.ceil(gemm.K / (2 * block)) * block
    return replace(condense(gemm, block, 2 * block), K=k_opt)


@dataclass(frozen=True)
class ScaleSimSparseReport:
    """SCALE-Sim's SPARSE_REPORT fields for one GEMM copy, in its units (filter words; metadata as it counts it)."""

    original_filter_storage: float
    new_filter_storage: float
    filter_metadata_storage: float


def scalesim_sparse_report(dense: LoweredGemm, n: int, m: int, rep: str) -> ScaleSimSparseReport:
    """What SCALE-Sim 3.0.0 writes to SPARSE_REPORT for one layer (``compression.py``, non-optimized mapping)."""
    k, f = dense.K, dense.N
    kept = condensed_k(k, n, m) * f
    if rep == "ellpack_block":
        meta = kept * math.ceil(math.log2(m)) / SCALESIM_METADATA_WORD_BITS if m > 1 else 0.0
        return ScaleSimSparseReport(k * f, kept + meta, meta)
    if rep == "csr":
        meta = kept + k + 1
        return ScaleSimSparseReport(k * f, 2 * kept + k + 1, meta)
    if rep == "csc":
        meta = kept + f + 1
        return ScaleSimSparseReport(k * f, 2 * kept + f + 1, meta)
    raise ValueError(f"SCALE-Sim reports sparsity only for ellpack_block, csr and csc, not {rep!r}")


@dataclass(frozen=True)
class SparseLowering:
    """How one op runs on a sparse array: the GEMM the array executes and what its zeros save."""

    gemm: LoweredGemm  # what the array runs (condensed under skip + N:M)
    dense: LoweredGemm  # the op's dense GEMM
    pattern: OpSparsity
    mode: str  # skip | gate
    storage: FilterStorage  # one copy's filter in the array's format
    issued_macs: int  # MACs the array spends cycles on (all copies)
    effectual_macs: float  # of those, with both operands non-zero
    skipped_intersections: float  # operand pairs an intersection unit checks (unstructured skip)

    @property
    def gated_macs(self) -> float:
        return self.issued_macs - self.effectual_macs

    def filter_bytes_per_word(self, word_bytes: int) -> float:
        """Bytes that travel for every filter word the GEMM streams: the data word plus its share of the
        format's metadata (a dense-run GEMM streams every weight; the compressed form replaces them)."""
        streamed = self.gemm.K * self.gemm.N
        stored_bits = self.storage.data_words * word_bytes * 8 + self.storage.metadata_bits
        return stored_bits / 8 / streamed if streamed else float(word_bytes)


def sparse_lowering(gemm: LoweredGemm, sp: OpSparsity, arch: SystolicArch) -> SparseLowering | None:
    """The sparse execution of ``gemm`` on ``arch``; None where nothing changes (dense op, or an array
    without ``sparsity_support``, which computes on the zeros like any dense array)."""
    if not arch.sparsity_support or sp.dense:
        return None
    n, m = (sp.n, sp.m) if sp.structured else (1, 1)
    skip = arch.sparse_mac == "skip"
    run = condense(gemm, n, m) if skip and sp.structured else gemm
    if skip and sp.structured and arch.sparsity_optimized_mapping:
        run = optimized_gemm(gemm, arch.sparsity_block_size)
    kept = condensed_k(gemm.K, n, m) * gemm.N if sp.structured else round(sp.weight_density * gemm.K * gemm.N)
    storage = filter_storage(arch.sparse_rep, gemm.K, gemm.N, kept, m)
    issued = run.macs
    if skip and sp.structured:
        effectual = issued * sp.act_density  # every kept weight is non-zero; zero activations are gated
        intersections = 0.0
    elif skip:  # unstructured: zero weights skipped for energy behind an intersection unit
        effectual = issued * sp.weight_density * sp.act_density
        intersections = float(issued)
    else:
        effectual = issued * sp.weight_density * sp.act_density
        intersections = 0.0
    return SparseLowering(run, gemm, sp, arch.sparse_mac, storage, issued, effectual, intersections)


def sparse_mac_energy_pj(low: SparseLowering, e_mac: float) -> float:
    """MAC energy of a sparse op: effectual MACs in full, gated ones at the gated fraction, skipped ones
    (unstructured skip) not at all but each checked by the intersection unit, N:M decode per kept weight."""
    if low.skipped_intersections:
        gated = 0.0
        overhead = low.skipped_intersections * INTERSECT_ENERGY_FRACTION.value
    else:
        gated = low.gated_macs * GATED_MAC_FRACTION.value
        overhead = low.issued_macs * NM_DECODE_ENERGY_FRACTION.value if low.pattern.structured else 0.0
    return e_mac * (low.effectual_macs + gated + overhead)


def sparse_area_fraction(arch: SystolicArch) -> float:
    """Extra PE-array area of the sparse datapath, as a fraction of the PE array (0 without support)."""
    if not arch.sparsity_support:
        return 0.0
    extra = GATE_AREA_FRACTION.value
    if arch.sparse_mac == "skip":
        extra += NM_MUX_AREA_FRACTION.value
        if arch.sparse_rep in ("csr", "csc", "bitmask", "rle"):
            extra += INTERSECT_AREA_FRACTION.value
    return extra
