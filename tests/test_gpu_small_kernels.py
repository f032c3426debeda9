"""GPU small kernels (issue #29): a misaligned GEMM's slower kernels, operands warm in L2 across a measurement's
repeated calls, and fitted constants that stay where no row moves them."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from hwmodels.catalogs.gpu import PUBLISHED_GEMM_FRACTION
from hwmodels.catalogs.gpu_tuning import MISALIGNED_EFFICIENCY_DEFAULT, default_tuning, starting_tuning
from hwmodels.gpu.calibrate import (
    BEFORE_EFFECTS,
    EFFECTS,
    OP_KINDS,
    PARAMETERS,
    Measurement,
    family_cross_validate,
    fit,
    free_parameters,
    predict_seconds,
    read_llmcompass,
    read_measurements,
    warm_in_l2,
    with_tuning,
)
from hwmodels.gpu.cost import Gemm, Tile, aligned, gemm_cost
from templates.gpu import GpuTemplate

H100_GRAPH_FP16 = Path(__file__).resolve().parents[1] / "hwmodels" / "data" / "gpu_measured_h100_graph_fp16.csv"
NAMES = [name for name, _, _ in PARAMETERS]


def _arch(gpu: str = "h100_sxm", precision: str = "fp16", **tuning: float):
    base = GpuTemplate().instantiate({"gpu": gpu, "precision": precision})
    return with_tuning(base, replace(default_tuning(), **tuning))


def _row(m: int, n: int, k: int, method: str = "graph", name: str = "") -> Measurement:
    return Measurement("h100_sxm", "fp16", "gemm", m, n, k, 1, 1e-5, method, name=name or f"x_{m}x{n}x{k}")


def test_a_row_stride_off_16_bytes_streams_operands_at_the_misaligned_share() -> None:
    """K = 700 fp16 (1400-byte rows of A) misses cuBLAS's 128-bit loads, K = 704 does not: same tile, same
    k-iterations and math, but the operand panels come from L2 at ``misaligned_efficiency`` of the rate. Only K
    counts: it strides A and a linear layer's weight (an LM head's odd vocabulary N misaligns only C's stores)."""
    assert not aligned(Gemm(3000, 200, 700, 1), 2) and aligned(Gemm(3000, 200, 704, 1), 2)
    assert aligned(Gemm(1, 50257, 768, 1), 2) and not aligned(Gemm(1, 768, 50257, 1), 2)  # GPT-2's vocabulary
    assert aligned(Gemm(8, 8, 8, 1), 2) and not aligned(Gemm(8, 8, 8, 1), 1)  # int8 / fp8 need 16 elements
    arch = _arch(misaligned_efficiency=0.25)
    tile, kw = Tile(128, 128, 32), {"a_dram_bytes": 0.0, "b_dram_bytes": 0.0, "c_dram_bytes": 0.0}
    slow = gemm_cost(Gemm(3000, 200, 700, 1), tile, arch, **kw)
    fast = gemm_cost(Gemm(3000, 200, 704, 1), tile, arch, **kw)
    assert slow.compute_s == pytest.approx(fast.compute_s) and slow.bound == "l2"
    assert slow.l2_s / slow.l2_bytes == pytest.approx(4.0 * fast.l2_s / fast.l2_bytes)
    # a conv with a filter window keeps its own constants; a matrix-vector product (M = 1) runs gemv kernels and
    # CUDA-core GEMMs (fp32) no tensor-op kernels: none of them pays
    conv = gemm_cost(Gemm(3000, 200, 700, 1, conv=True), tile, arch, **kw)
    assert conv.l2_s / conv.l2_bytes == pytest.approx(fast.l2_s / fast.l2_bytes)
    gemv, gemv_even = (gemm_cost(Gemm(1, 64, k, 12), tile, arch, **kw) for k in (1025, 1032))  # decode: A.V
    assert gemv.l2_s / gemv.l2_bytes == pytest.approx(gemv_even.l2_s / gemv_even.l2_bytes)
    simt = _arch(precision="fp32", misaligned_efficiency=0.25)
    odd, even = (gemm_cost(Gemm(3000, 200, k, 1), tile, simt, **kw) for k in (700, 704))
    assert odd.l2_s / odd.l2_bytes == pytest.approx(even.l2_s / even.l2_bytes)
    assert 0.0 < MISALIGNED_EFFICIENCY_DEFAULT < 0.5  # measured: the K = 700 GEMM runs ~8x below its roof


def test_operands_that_fit_l2_are_read_from_it_on_repeated_calls() -> None:
    """A measured call repeats on the same tensors: a GEMV whose 32 MiB of weights fit the 50 MiB L2 streams
    them at ``warm_l2_ratio`` x DRAM bandwidth; a 96 MiB GEMM does not fit and stays cold; ratio 0 = cold."""
    gemv, big = _row(1, 4096, 4096), _row(4096, 4096, 4096)
    arch = _arch(warm_l2_ratio=1.5)
    assert warm_in_l2(gemv, arch) and not warm_in_l2(big, arch)
    warm, cold = predict_seconds(gemv, arch), predict_seconds(gemv, arch, warm_l2=False)
    launch = arch.tuning.launch_us * 1e-6
    assert (cold - launch) / (warm - launch) == pytest.approx(1.5 / arch.tuning.bandwidth_fraction, rel=0.02)
    assert predict_seconds(big, arch) == predict_seconds(big, arch, warm_l2=False)
    assert predict_seconds(gemv, _arch(warm_l2_ratio=0.0)) == pytest.approx(cold)


def test_the_new_constants_are_free_only_where_a_row_shows_them() -> None:
    """On the H100's CUDA-graph rows the misaligned K = 700 GEMM frees ``misaligned_efficiency`` and the warm
    GEMVs free ``warm_l2_ratio``; without those shapes (or with the effects off) neither can move."""
    rows = [m for m in read_measurements(H100_GRAPH_FP16, tuple(OP_KINDS)) if m.op == "gemm"]
    arch = _arch()
    free = {NAMES[i] for i in free_parameters(rows, arch)}
    assert {"misaligned_efficiency", "warm_l2_ratio"} <= free
    aligned_cold = [m for m in rows if not m.name.startswith(("odd_3000", "gemv"))]
    held = {NAMES[i] for i in free_parameters(aligned_cold, arch)}
    assert "misaligned_efficiency" not in held
    before = {NAMES[i] for i in free_parameters(rows, arch, effects=BEFORE_EFFECTS)}
    assert not {"misaligned_efficiency", "warm_l2_ratio"} & before


def test_a_constant_no_row_moves_stays_at_its_start() -> None:
    """Only compute-bound GEMMs and softmax rows: nothing streams from DRAM, so the GEMM bandwidth share keeps
    its start exactly (the solver used to walk such a constant to a bound), the misaligned share its measured
    default, and warm reads price as cold (0); a calibration of the A100 starts at its published GEMM rate."""
    truth = _arch(compute_fraction=0.85)
    rows = [
        replace(r, seconds=predict_seconds(r, truth))
        for r in (_row(8192, 8192, 8192, name=f"sq_{i}") for i in range(2))
    ]
    rows += [replace(_row(4096, 8192, 8192, name="half"), seconds=predict_seconds(_row(4096, 8192, 8192), truth))]
    rows += [
        replace(r, seconds=predict_seconds(r, truth))
        for r in (Measurement("h100_sxm", "fp16", "softmax", 4096, 2**e, 0, 1, 1.0, "graph") for e in (10, 12, 14))
    ]
    start = _arch()
    result = fit(rows, start)
    assert result.tuning.compute_fraction == pytest.approx(0.85, rel=0.02)
    assert result.tuning.bandwidth_fraction == start.tuning.bandwidth_fraction
    assert "bandwidth_fraction" in result.unidentified
    assert result.tuning.misaligned_efficiency == MISALIGNED_EFFICIENCY_DEFAULT
    assert result.tuning.warm_l2_ratio == 0.0
    assert starting_tuning("a100_80gb").compute_fraction == pytest.approx(297.0 / 312.0)
    assert starting_tuning("l4") == default_tuning() and "a100_80gb" in PUBLISHED_GEMM_FRACTION


LLMCOMPASS = Path(__file__).resolve().parents[2] / "shared" / "data" / "gpu" / "llmcompass_a100"


def _held_out_gemm_error(gpu: str, rows: list[Measurement], effects) -> dict[str, float]:
    """Mean absolute error of every GEMM shape family held out of the fit (benchmarks/gpu_small_kernels.py)."""
    arch = with_tuning(GpuTemplate().instantiate({"gpu": gpu, "precision": "fp16"}), starting_tuning(gpu))
    full = fit(rows, arch, effects=effects).tuning
    fitter = partial(fit, effects=effects, long_row_bytes=full.long_row_bytes)
    held = family_cross_validate(rows, arch, ("gemm",), fitter, effects.warm_l2)
    errors = {family: [abs(p / m.seconds - 1.0) * 100.0 for m, p in pairs] for family, pairs in held.items()}
    out = {family: float(np.mean(values)) for family, values in errors.items()}
    out["all"] = float(np.mean([e for values in errors.values() for e in values]))
    return out


@pytest.mark.slow
def test_held_out_gemm_families_are_within_ten_percent_on_every_calibrated_gpu() -> None:
    """Issue #29's target, leave one shape family out: <= 10 % mean absolute error on held-out GEMM rows on the
    H100 (eager and CUDA-graph rows) and the A100 (LLMCompass, when ../shared has it); the misaligned and the
    L2-resident families are the ones the two effects fix (default tests cover the pieces: the ones above)."""
    h100 = [
        m
        for kind in ("graph", "eager")
        for m in read_measurements(H100_GRAPH_FP16.with_name(f"gpu_measured_h100_{kind}_fp16.csv"), tuple(OP_KINDS))
    ]
    after, before = (_held_out_gemm_error("h100_sxm", h100, effects) for effects in (EFFECTS, BEFORE_EFFECTS))
    assert after["all"] <= 10.0 < before["all"]
    assert after["odd/bandwidth-bound"] < 0.5 * before["odd/bandwidth-bound"]
    assert after["gemv/bandwidth-bound"] < 0.5 * before["gemv/bandwidth-bound"]
    if LLMCOMPASS.is_dir():
        assert _held_out_gemm_error("a100_80gb", read_llmcompass(LLMCOMPASS), EFFECTS)["all"] <= 10.0
