"""The GPU catalog, template, threadblock-tile mapper, roofline model and its calibration."""

from __future__ import annotations

import pytest

from dse import zoo
from dse.graph import GraphBuilder
from hwmodels.catalogs import gpu as gpu_catalog
from hwmodels.catalogs import gpu_tuning
from hwmodels.gpu.cost import Gemm, Tile, gemm_cost, tile_efficiency, tile_fits
from hwmodels.gpu.model import GpuModel
from mappers.gpu import GpuTileMapper, best_tile, candidate_tiles
from templates.base import TemplateError
from templates.gpu import GpuTemplate


def _arch(**point):
    return GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16", **point})


def _run(graph, **point):
    arch = _arch(**point)
    mapping = GpuTileMapper().map(graph, arch)
    return mapping, GpuModel().evaluate(mapping, arch)


# ------------------------------------------------------------------------------------------ catalog
def test_catalog_has_every_required_gpu_with_a_source_for_every_number() -> None:
    required = {"h100_sxm", "h100_pcie", "a100_40gb", "a100_80gb", "l4", "l40s", "rtx_4090", "rtx_4070"}
    assert required | {"jetson_agx_orin"} == set(gpu_catalog.gpu_names())
    for spec in gpu_catalog.GPUS.values():
        for field_name, value in spec.rows():
            assert value.value > 0, (spec.name, field_name)
            assert len(value.source) > 20 and value.unit, (spec.name, field_name)


def test_catalog_peaks_agree_with_sms_times_clock() -> None:
    """Dense FP16 peak / (SMs x clock) must be a whole per-SM rate of the architecture (consistency check)."""
    per_sm = {"hopper": 4096, "ampere": 2048, "ada": (512, 1024)}
    for spec in gpu_catalog.GPUS.values():
        rate = spec.fp16_tflops.value * 1e12 / (spec.sms.value * spec.clock_mhz.value * 1e6)
        expected = per_sm[spec.architecture]
        options = expected if isinstance(expected, tuple) else (expected,)
        assert min(abs(rate - o) / o for o in options) < 0.02, (spec.name, rate)


def test_catalog_lookup_accepts_aliases_and_names_the_choices() -> None:
    assert gpu_catalog.canonical_gpu_name("H100") == "h100_sxm"
    assert gpu_catalog.canonical_gpu_name("A100-40GB") == "a100_40gb"
    assert gpu_catalog.get_gpu("orin").display.startswith("NVIDIA Jetson")
    with pytest.raises(gpu_catalog.UnknownGpuError, match="choose one of: h100_sxm"):
        gpu_catalog.get_gpu("b200")


def test_sources_markdown_lists_every_gpu_assumption_node_and_calibration() -> None:
    text = gpu_tuning.full_sources_markdown()
    for name in (*gpu_catalog.gpu_names(), *gpu_catalog.node_names()):
        assert f"## {name}" in text or f"| {name} |" in text
    assert "ASSUMPTION" in text and "launch_us" in text and "## Calibrated GPUs" in text
    assert gpu_catalog.GPU_SOURCES_MD.read_text() == text, "run python -m hwmodels.catalogs.gpu_tuning"


# ------------------------------------------------------------------------------------------ template
def test_template_resolves_catalog_entries_and_overrides() -> None:
    a100 = GpuTemplate().instantiate({"gpu": "a100", "precision": "int8"})
    assert a100.tensor_tflops == 624 and a100.mem_gbps == 2039 and a100.sms == 108
    doubled = _arch(sms=264)  # throughput follows SMs unless given
    assert doubled.tensor_tflops == pytest.approx(2 * _arch().tensor_tflops)
    assert _arch(mem_gbps=6700).mem_gbps == 6700 and "modified" in _arch(mem_gbps=6700).display
    assert _arch(precision="fp32").math == "fp32" and _arch(precision="fp32", tf32=True).math == "tf32"


def test_template_errors_name_the_parameter_and_the_choices() -> None:
    with pytest.raises(TemplateError, match="no FP8 tensor cores") as err:
        GpuTemplate().instantiate({"gpu": "a100_80gb", "precision": "fp8"})
    assert err.value.param == "precision"
    with pytest.raises(TemplateError, match="not in the GPU catalog") as err:
        GpuTemplate().instantiate({"gpu": "voodoo5"})
    assert err.value.param == "gpu"
    with pytest.raises(TemplateError, match="missing: .*clock_mhz"):
        GpuTemplate().instantiate({"gpu": "custom", "sms": 100})


def test_custom_gpu_needs_and_uses_every_number() -> None:
    point = dict(
        gpu="custom",
        sms=100,
        clock_mhz=2000,
        tensor_tflops=800,
        fp32_tflops=50,
        mem_gbps=4000,
        mem_gb=96,
        l2_mib=64,
        smem_kib_per_sm=228,
        tdp_w=600,
    )
    arch = GpuTemplate().instantiate(point)
    assert arch.tensor_tflops == 800 and arch.flops_per_clk_per_sm == pytest.approx(800e12 / (100 * 2e9))


# ------------------------------------------------------------------------------------------ tiles
def test_tiles_respect_shared_memory_and_registers() -> None:
    arch = _arch(smem_kib_per_sm=48)
    tiles = candidate_tiles(arch)
    assert tiles and all(tile_fits(t, arch) for t in tiles)
    assert all(2 * (t.bm + t.bn) * t.bk * 2 <= 48 * 1024 for t in tiles)
    assert Tile(256, 256, 64) not in tiles  # 128 KiB of operand tiles, 256 KiB of accumulators


def test_thin_tiles_are_shared_memory_bound_and_tile_choice_matters() -> None:
    arch = _arch()
    assert tile_efficiency(Tile(128, 128, 64), arch) == 1.0
    assert tile_efficiency(Tile(16, 256, 64), arch) < 0.6
    gemm = Gemm(4096, 4096, 4096, 1)
    operand = 4096 * 4096 * 2.0
    times = [
        gemm_cost(gemm, t, arch, a_dram_bytes=operand, b_dram_bytes=operand, c_dram_bytes=operand).seconds
        for t in candidate_tiles(arch)
    ]
    assert max(times) / min(times) > 2.0  # GPPerf: tile choice alone moves GEMM runtime up to 3.2x


def test_large_gemm_reaches_the_achievable_fraction_of_peak() -> None:
    arch = _arch()
    gemm = Gemm(8192, 8192, 8192, 1)
    operand = 8192 * 8192 * 2.0
    tile, seconds = best_tile(gemm, arch, operand, operand, operand, 0.0)
    achieved = gemm.flops / seconds / arch.peak_flops
    assert 0.7 * arch.compute_fraction < achieved <= arch.compute_fraction


def test_wave_quantization_one_block_more_than_the_sms_doubles_compute() -> None:
    arch = _arch()
    tile = Tile(128, 128, 64)
    full = Gemm(128 * arch.sms, 128, 4096, 1)
    over = Gemm(128 * (arch.sms + 1), 128, 4096, 1)
    kw = dict(a_dram_bytes=0.0, b_dram_bytes=0.0, c_dram_bytes=0.0)
    assert gemm_cost(over, tile, arch, **kw).compute_s == pytest.approx(2 * gemm_cost(full, tile, arch, **kw).compute_s)


def test_split_k_rescues_a_gemm_with_too_few_output_tiles() -> None:
    arch = _arch()
    gemm = Gemm(64, 64, 65536, 1)
    tile, _ = best_tile(gemm, arch, 64 * 65536 * 2.0, 64 * 65536 * 2.0, 64 * 64 * 2.0, 0.0)
    assert tile.split_k > 1


# ------------------------------------------------------------------------------------------ mapping + model
def test_epilogue_fusion_and_l2_residency_on_resnet50() -> None:
    graph = zoo.build("resnet50", batch=1, precision="fp16")
    mapping, metrics = _run(graph)
    fused = [n for n, om in mapping.ops.items() if om.payload.fused_into is not None]
    assert len(fused) == sum(1 for op in graph.ops if op.kind.value == "elementwise")
    assert metrics.info["kernels"] == len(graph.ops) - len(fused)
    # batch-1 activations stay in L2: DRAM traffic is the weights plus the image, not more
    weights = graph.weight_bytes
    assert weights <= metrics["dram_mb"] * 1e6 <= weights * 1.1
    for layer in metrics.layers:
        if layer.extra.get("unit") == "epilogue":
            assert layer.cycles == 0


def test_decode_is_memory_bound_and_batching_amortises_weights() -> None:
    one = zoo.build("gpt2", batch=1, precision="fp16", phase="decode")
    many = zoo.build("gpt2", batch=16, precision="fp16", phase="decode")
    _, m1 = _run(one)
    _, m16 = _run(many)
    bounds = {layer.extra.get("bound") for layer in m1.layers if layer.kind == "matmul"}
    assert "compute" not in bounds
    assert m16["latency_ms"] < 4 * m1["latency_ms"]  # 16x the tokens for far less than 16x the time
    assert m16["throughput_ips"] > 4 * m1["throughput_ips"]


def test_faster_memory_and_more_sms_help_where_they_should() -> None:
    decode = zoo.build("gpt2", batch=1, precision="fp16", phase="decode")
    b = GraphBuilder("big_gemm", elem_bytes=4)  # FP32 on the CUDA cores: compute bound, not L2 bound
    b.output(b.linear(b.input("x", (8192, 8192)), 8192, bias=False))
    big_gemm = b.build()
    base_decode = _run(decode)[1]["latency_ms"]
    assert _run(decode, mem_gbps=2 * 3350)[1]["latency_ms"] < 0.95 * base_decode
    assert _run(decode, sms=264)[1]["latency_ms"] == pytest.approx(base_decode, rel=0.05)
    base_gemm = _run(big_gemm, precision="fp32")[1]["latency_ms"]
    assert _run(big_gemm, precision="fp32", sms=264)[1]["latency_ms"] < 0.6 * base_gemm
    assert _run(big_gemm, precision="fp32", mem_gbps=6700)[1]["latency_ms"] == pytest.approx(base_gemm, rel=0.05)


def test_metrics_are_consistent_and_energy_sits_between_static_and_tdp() -> None:
    graph = zoo.build("bert_base", batch=8, precision="fp16")
    _, m = _run(graph)
    seconds = m["latency_ms"] * 1e-3
    assert m["throughput_ips"] == pytest.approx(8 / seconds)
    assert 0.25 * 700 <= m["power_w"] <= 700
    assert m["energy_mj"] == pytest.approx(m["power_w"] * seconds * 1e3)
    assert sum(layer.energy_pj for layer in m.layers) == pytest.approx(m["energy_mj"] * 1e9)
    assert 0 < m["utilization"] <= 1 and m["area_mm2"] == 814


def test_precision_without_gemms_of_its_own_runs_the_cuda_cores() -> None:
    b = GraphBuilder("dw", elem_bytes=2)
    x = b.input("x", (1, 64, 56, 56))
    y = b.conv(x, 64, 3, pad=1, groups=64, name="dw")
    b.output(y)
    mapping, metrics = _run(b.build())
    assert mapping.ops["dw"].payload.unit == "cuda_cores"
    assert metrics.layers[0].macs == 0


def test_a_newer_gpu_is_faster_and_an_edge_gpu_draws_less_power() -> None:
    graph = zoo.build("resnet50", batch=32, precision="int8")
    h100 = _run(graph, gpu="h100_sxm", precision="int8")[1]
    a100 = _run(graph, gpu="a100_80gb", precision="int8")[1]
    l4 = _run(graph, gpu="l4", precision="int8")[1]
    assert h100["latency_ms"] < a100["latency_ms"] < l4["latency_ms"]
    assert l4["power_w"] < 72 < h100["power_w"] <= 700
