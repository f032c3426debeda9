"""2:4 sparse tensor cores in the GPU template: the datasheet 'with sparsity' peak for GEMMs whose weights carry
a 2:4-compatible pattern, compressed weights, and dense figures unchanged."""

from __future__ import annotations

import pytest

from dse.graph import GraphBuilder
from dse.importers.sparsity import parse_pattern, with_sparsity
from hwmodels.catalogs.gpu import GPUS
from hwmodels.catalogs.sparse import GPU_SPARSE_TENSOR_SPEEDUP, fits_2_4
from hwmodels.gpu.model import GpuModel
from mappers.gpu import GpuTileMapper
from templates.base import TemplateError
from templates.gpu import GpuTemplate


def _mlp(pattern: str | None, m: int = 4096):
    b = GraphBuilder("mlp")
    x = b.input("x", (m, 4096))
    h = b.linear(x, 8192, name="fc1", bias=False)
    b.linear(h, 4096, name="fc2", bias=False)
    g = b.build()
    return with_sparsity(g, {"fc1": parse_pattern(pattern), "fc2": parse_pattern(pattern)}) if pattern else g


def _run(graph, **point):
    arch = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16", **point})
    mapping = GpuTileMapper().map(graph, arch)
    return arch, mapping, GpuModel().evaluate(mapping, arch)


def test_sparse_peak_is_the_datasheet_with_sparsity_figure():
    dense = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16"})
    sparse = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16", "sparsity": "2:4"})
    assert dense.tensor_tflops == sparse.tensor_tflops == GPUS["h100_sxm"].fp16_tflops.value
    assert sparse.sparse_tensor_tflops == pytest.approx(2 * 989.4)  # H100 SXM5 FP16 with sparsity: 1978.9
    l4 = GpuTemplate().instantiate({"gpu": "l4", "precision": "int8", "sparsity": "2:4"})
    assert l4.sparse_tensor_tflops == pytest.approx(485)  # L4 datasheet: 485 INT8 TOPS with sparsity
    fp32 = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp32", "sparsity": "2:4"})
    assert fp32.sparse_tensor_tflops == fp32.tensor_tflops  # CUDA cores: no sparse path


def test_dense_figures_unchanged_by_the_option_or_by_sparse_weights_without_it():
    _, _, base = _run(_mlp(None))
    _, _, off = _run(_mlp("2:4"))  # weights 2:4, GPU option off: dense kernels
    _, _, on_dense = _run(_mlp(None), sparsity="2:4")  # option on, dense weights
    for metrics in (off, on_dense):
        assert metrics.values["latency_ms"] == base.values["latency_ms"]
        assert metrics.values["energy_mj"] == base.values["energy_mj"]


@pytest.mark.parametrize("pattern", ["2:4", "1:4", "2:8"])
def test_compute_bound_gemm_runs_near_twice_as_fast(pattern):
    _, dense_map, dense = _run(_mlp(pattern))
    _, sparse_map, sparse = _run(_mlp(pattern), sparsity="2:4")
    speedup = dense.values["latency_ms"] / sparse.values["latency_ms"]
    assert 1.5 < speedup <= GPU_SPARSE_TENSOR_SPEEDUP.value + 1e-9
    d, s = dense_map.ops["fc1"].payload, sparse_map.ops["fc1"].payload
    assert s.gemm.sparse_2_4 and not d.gemm.sparse_2_4
    assert s.b_dram == pytest.approx(d.b_dram * 0.5 * (1 + 2 / 16))  # fp16: half the values + 2-bit index
    assert sparse.values["dram_mb"] < dense.values["dram_mb"]


def test_incompatible_patterns_stay_dense():
    _, _, dense = _run(_mlp("4:8"))
    _, mapping, sparse = _run(_mlp("4:8"), sparsity="2:4")
    assert not mapping.ops["fc1"].payload.gemm.sparse_2_4
    assert sparse.values["latency_ms"] == dense.values["latency_ms"]
    assert [fits_2_4(n, m) for n, m in [(2, 4), (1, 4), (2, 8), (1, 2), (4, 8), (3, 4), (3, 8), (2, 3)]] == [
        True, True, True, True, False, False, False, False,
    ]  # fmt: skip


def test_unknown_sparsity_mode_is_one_clear_error():
    with pytest.raises(TemplateError, match="sparsity"):
        GpuTemplate().instantiate({"gpu": "h100_sxm", "sparsity": "1:4"})
