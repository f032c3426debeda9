"""The sparse-datapath catalog: compressed-format metadata sizes and the energy/area of gating and skipping.

Sparseloop's taxonomy (Wu et al., "Sparseloop: An Analytical Approach to Sparse Tensor Accelerator
Modeling", MICRO 2022) splits a sparse accelerator into three choices, which the systolic template
takes as parameters: the compressed *format* of a tensor (bitmask, run-length, coordinate lists /
CSR, N:M block metadata), *gating* of ineffectual MACs (the PE idles for a cycle: energy saved, no
time) and *skipping* them (the cycle is not spent: time and energy saved, at the cost of the logic that
finds the effectual pairs). Numbers here are relative to the technology's own MAC energy and PE area
(``hwmodels.catalogs.tech``), so they hold across nodes; each names its source, and those that could not
be traced to a primary source are marked UNVERIFIED.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwmodels.catalogs.tech import UNVERIFIED, Sourced

SPARSELOOP = 'Y. N. Wu, P.-A. Tsai, A. Parashar, V. Sze, J. Emer, "Sparseloop", MICRO 2022 (arXiv:2205.05826)'
EYERISS = 'Y.-H. Chen et al., "Eyeriss: an energy-efficient reconfigurable accelerator for deep CNNs", JSSC 52(1) 2017'
MISHRA = 'A. Mishra et al., "Accelerating sparse deep neural networks", arXiv:2104.08378, 2021 (NVIDIA 2:4)'
SCALESIM_V3 = "SCALE-Sim 3.0.0, scalesim/compute/compression.py (metadata of ellpack_block, csr, csc)"
A100_WP_SPARSE = (
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Sec. 'Fine-grained structured sparsity': 2:4 "
    "sparse Tensor Core instructions skip the zeros for 2x the math throughput of dense; Table 1 lists each "
    "precision's peak dense and 'with sparsity' (twice dense)"
)

FORMATS = ("ellpack_block", "csr", "csc", "bitmask", "rle")

# Run-length code: Eyeriss packs three (5-bit run, 16-bit level) pairs and a flag into a 64-bit word.
RLE_RUN_BITS = Sourced(5, "bit per non-zero", f"{EYERISS}, Sec. V-C (5-bit run length per non-zero value)")
BITMASK_BITS = Sourced(1, "bit per element", f"{SPARSELOOP}, Table II 'B' (bitmask: one bit per coordinate)")
NM_INDEX = Sourced(
    1, "ceil(log2 M) bits per kept weight", f"{MISHRA}, Sec. 3 (2-bit index per non-zero for 2:4); {SCALESIM_V3}"
)

# A gated MAC still clocks its pipeline registers and the operand-zero detector; Eyeriss reports that
# gating zero activations cuts PE power by 45 % at about 50 % zeros, which leaves about 10 % of a MAC per
# gated operation. The 10 % is that reading, not a published per-operation figure.
GATED_MAC_FRACTION = Sourced(
    0.10,
    "of a MAC's energy",
    f"{UNVERIFIED}: read off {EYERISS} (zero gating saves 45 % of PE power); not a per-operation figure",
)
# Decoding N:M metadata steers each kept weight's activation through an M:1 multiplexer per PE row.
NM_MUX_AREA_FRACTION = Sourced(
    0.10,
    "of PE area",
    f"{UNVERIFIED}: an M:1 operand mux and index register per PE, about a tenth of an int8 MAC PE; "
    "N:M systolic designs (S2TA, HPCA 2022; VEGETA, HPCA 2023) report overheads of this order",
)
NM_DECODE_ENERGY_FRACTION = Sourced(
    0.05, "of a MAC's energy per kept weight", f"{UNVERIFIED}: the M:1 mux select, same basis as the area"
)
# Skipping unstructured zeros needs an intersection unit in front of every row (Sparseloop's
# "skipping" SAF): a priority encoder over the bitmask / coordinate list.
INTERSECT_AREA_FRACTION = Sourced(
    0.15, "of PE area", f"{UNVERIFIED}: intersection logic per PE (Sparseloop's skipping SAF), order of magnitude"
)
INTERSECT_ENERGY_FRACTION = Sourced(
    0.10, "of a MAC's energy per operand pair checked", f"{UNVERIFIED}: same basis as the intersection area"
)
# NVIDIA 2:4 sparse tensor cores (Ampere, Hopper, Ada): the datasheets' "with sparsity" peaks are exactly twice
# the dense peaks (hwmodels.catalogs.gpu holds the dense ones, halved from those figures where the vendor quotes
# only the sparse one), and the compressed weight is half the values plus a 2-bit index per kept value.
GPU_SPARSE_TENSOR_SPEEDUP = Sourced(
    2.0,
    "x the dense tensor peak",
    f"{A100_WP_SPARSE}; same ratio in the H100 whitepaper Table 3 and the L4/L40S sheets",
)
GPU_SPARSE_INDEX_BITS = Sourced(
    2, "bits per kept value", f"{MISHRA}, Sec. 3 (2:4 metadata: a 2-bit index per non-zero)"
)
GPU_SPARSE_PATTERN = (2, 4)


def fits_2_4(n: int, m: int) -> bool:
    """Whether an N:M pattern (blocks aligned along the reduction) has at most 2 non-zeros in every aligned
    block of 4, so 2:4 sparse tensor cores can run it (1:4, 2:8, 1:2 do; 4:8, 3:8, 3:4 do not)."""
    if not 1 <= n < m:
        return False
    if m % 4 == 0:
        return n <= 2
    return 4 % m == 0 and n * (4 // m) <= 2


GATE_AREA_FRACTION = Sourced(
    0.02, "of PE area", f"{UNVERIFIED}: a zero detector and clock gate per PE ({EYERISS} gates its PE datapath)"
)


@dataclass(frozen=True)
class FilterStorage:
    """A K x N filter (reduction x filters) stored in a format: data words and metadata bits."""

    data_words: int  # non-zero weights kept (padding included for N:M)
    metadata_bits: int
    dense_words: int

    def ratio(self, word_bits: int) -> float:
        """Stored bits over the dense filter's bits."""
        dense = self.dense_words * word_bits
        return (self.data_words * word_bits + self.metadata_bits) / dense if dense else 1.0


def _bits(count: int) -> int:
    return max(1, math.ceil(math.log2(max(2, count))))


def filter_storage(fmt: str, k: int, n: int, kept: int, nm_m: int) -> FilterStorage:
    """Storage of a K x N filter with ``kept`` non-zeros in ``fmt`` (physical bits, not SCALE-Sim's word counts).

    ellpack_block: ceil(log2 M) bits per kept weight (1 when unstructured: no pattern to index);
    csr: a filter-column index per non-zero plus K+1 row pointers; csc: a reduction index per
    non-zero plus N+1 column pointers; bitmask: one bit per weight; rle: a run length per non-zero.
    """
    if fmt == "ellpack_block":
        meta = kept * math.ceil(math.log2(nm_m)) if nm_m > 1 else kept * _bits(k)
    elif fmt == "csr":
        meta = kept * _bits(n) + (k + 1) * _bits(kept + 1)
    elif fmt == "csc":
        meta = kept * _bits(k) + (n + 1) * _bits(kept + 1)
    elif fmt == "bitmask":
        meta = k * n * int(BITMASK_BITS.value)
    elif fmt == "rle":
        meta = kept * int(RLE_RUN_BITS.value)
    else:
        raise ValueError(f"unknown sparse format {fmt!r}; allowed: {', '.join(FORMATS)}")
    return FilterStorage(kept, int(meta), k * n)


def sources() -> dict[str, Sourced]:
    """Every number of this catalog by name (for SOURCES listings and tests)."""
    return {name: value for name, value in globals().items() if isinstance(value, Sourced)}
