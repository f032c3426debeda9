"""The fold-level USER window walk (``hwmodels.systolic.user_mode_batch``) against the model's own
word-level walk (``hwmodels.systolic.user_mode``): the same reads, fill and read stalls where it
claims to be exact (the filter walks; the ifmap of layers without duplicate im2col copies or edge nulls),
the filter's figures and an upper bound on the ifmap's where the duplicates are left out."""

from __future__ import annotations

import random

import pytest

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm
from hwmodels.systolic.user_mode import user_mode_traffic_of
from hwmodels.systolic.user_mode_batch import user_mode_traffic_batch


def _case(rng: random.Random, kernel: int) -> tuple[LoweredGemm, int, int, str, tuple[int, int], float]:
    """A random layer (kernel x kernel, stride 1 or 2, edge nulls when the input is cropped), array,
    dataflow, SRAM words and DRAM words per cycle, small enough for the word-level walk."""
    stride = rng.choice([1, 2])
    p, q, c = rng.randint(1, 12), rng.randint(1, 12), rng.randint(1, 40)
    crop = rng.choice([0, kernel - 1]) if kernel > 1 else 0  # SCALE-Sim's 'same' layers hang over the edge
    h, w = (p - 1) * stride + kernel - crop, (q - 1) * stride + kernel - crop
    g = ConvGeometry(h, w, c, kernel, kernel, stride, stride, p, q)
    gemm = LoweredGemm(p * q, kernel * kernel * c, rng.randint(1, 90), 1, g)
    return (
        gemm,
        rng.randint(2, 20),
        rng.randint(2, 20),
        rng.choice(["os", "ws", "is"]),
        (rng.randint(200, 3000), rng.randint(200, 3000)),
        rng.choice([1.0, 2.4, 5.0]),
    )


@pytest.mark.parametrize("seed", range(2))
def test_reads_identical_without_duplicate_copies(seed):
    rng = random.Random(seed)
    stalled = 0
    for _ in range(40):
        gemm, rows, cols, df, words, bw = _case(rng, kernel=1)
        exact = user_mode_traffic_of(gemm, rows, cols, df, words, bw)
        assert user_mode_traffic_batch(gemm, rows, cols, df, words, bw) == exact, (gemm, rows, cols, df, words, bw)
        stalled += exact.read_stall_cycles > 0
    assert stalled >= 10  # the cases exercise the walk, not only operands that fit the window


@pytest.mark.parametrize("seed", range(2))
def test_filter_reads_identical_on_convolutions(seed):
    """3x3 layers: the ifmap's duplicate copies are left out, the filter walk is the scalar's."""
    rng = random.Random(100 + seed)
    ifmap_over = 0
    for _ in range(20):
        gemm, rows, cols, df, words, bw = _case(rng, kernel=3)
        exact = user_mode_traffic_of(gemm, rows, cols, df, words, bw)
        fast = user_mode_traffic_batch(gemm, rows, cols, df, words, bw)
        assert fast.filter_dram_reads == exact.filter_dram_reads, (gemm, rows, cols, df, words, bw)
        assert fast.fill_cycles == exact.fill_cycles
        ifmap_over += fast.ifmap_dram_reads >= exact.ifmap_dram_reads
    assert ifmap_over >= 18  # without the duplicates a word is found in the window no more often (mostly)


def test_memoised_and_bandwidth_rounded():
    rng = random.Random(7)
    gemm, rows, cols, df, words, _ = _case(rng, kernel=3)
    assert user_mode_traffic_batch(gemm, rows, cols, df, words, 2.4) is user_mode_traffic_batch(
        gemm, rows, cols, df, words, 2.0
    )
