"""GPU calibration (fit on measured kernels, cross-validated error), node baselines (NVLink all-reduce) and the
provenance of every GPU figure in `dse compare`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse import zoo
from dse.compare import baseline_names, calibration_notes, evaluate_baselines, format_table, summary_frame
from dse.errors import UserError
from hwmodels.catalogs import gpu as gpu_catalog
from hwmodels.catalogs.gpu_tuning import (
    CALIBRATION_JSON,
    CONV_EFFICIENCY_DEFAULT,
    CONV_FIXED_US_DEFAULT,
    ENERGY_CATALOG,
    ENERGY_MEASURED,
    GpuTuning,
    KernelPower,
    calibration_for,
    calibrations,
    default_tuning,
    with_kernel,
    write_calibration,
)
from hwmodels.gpu.calibrate import (
    OP_KINDS,
    Fit,
    Measurement,
    family_cross_validate,
    fit,
    mape_by_kind,
    predict_seconds,
    read_llmcompass,
    read_measurements,
    shape_family,
    with_tuning,
    write_measurements,
)
from hwmodels.gpu.calibrate_power import fit_power, power_errors, row_activity
from hwmodels.gpu.calibrate_report import evaluate
from hwmodels.gpu.cost import Gemm, KernelCost, Tile, allgather_seconds, allreduce_seconds, gemm_cost
from hwmodels.gpu.model import GpuModel, kernel_power_w
from mappers.gpu import GpuTileMapper, best_tile
from templates.base import TemplateError
from templates.gpu import CATALOG_ONLY, GpuTemplate

LLMCOMPASS = Path(__file__).resolve().parents[2] / "shared" / "data" / "gpu" / "llmcompass_a100"
H100_GRAPH_FP16 = Path(__file__).resolve().parents[1] / "hwmodels" / "data" / "gpu_measured_h100_graph_fp16.csv"


def _catalog_arch(gpu: str = "a100_80gb"):
    return with_tuning(GpuTemplate().instantiate({"gpu": gpu, "precision": "fp16"}), default_tuning())


def _gemm_like_convs(arch):
    """``arch`` with convs priced as the GEMMs they lower to (no conv constants): a start no conv row fixed."""
    return with_tuning(arch, replace(arch.tuning, conv_efficiency=1.0, conv_fixed_us=0.0))


def _synthetic_rows(truth, noise: float, seed: int, graph_every: int = 0) -> list[Measurement]:
    """'Measurements' of a GPU whose constants are ``truth``: GEMM, softmax, layernorm and GELU sweeps, timed
    eager; with ``graph_every`` n, every n-th shape also as a CUDA graph (device time alone)."""
    rng = np.random.default_rng(seed)
    shapes = [("gemm", m, n, k) for m in (64, 512, 4096) for n, k in ((12288, 12288), (1024, 4096), (256, 256))]
    shapes += [(op, r, c, 0) for op in ("softmax", "layernorm") for r, c in ((4096, 2**e) for e in range(5, 16, 2))]
    shapes += [(op, 2**e, 4096, 0) for op in ("softmax", "layernorm") for e in range(6, 16, 2)]
    shapes += [("gelu", 2**e, 1, 0) for e in range(10, 30, 2)]
    rows = []
    for i, (op, m, n, k) in enumerate(shapes):
        methods = ("eager synthetic", "graph synthetic") if graph_every and i % graph_every == 0 else ("eager",)
        for method in methods:
            row = Measurement("a100_80gb", "fp16", op, m, n, k, 1, 1.0, method, name=f"{op}_{i}")
            seconds = predict_seconds(row, truth) * float(rng.uniform(1 - noise, 1 + noise))
            rows.append(replace(row, seconds=seconds))
    return rows


# ------------------------------------------------------------------------------------------ the fit
def test_fit_recovers_known_constants_from_synthetic_measurements() -> None:
    catalog = _catalog_arch()
    tuning = replace(
        default_tuning(), compute_fraction=0.7, launch_us=4.0, overlap_exponent=2.5, long_row_bytes=16384.0
    )
    tuning = with_kernel(tuning, "softmax", bandwidth_fraction=0.5, host_us=12.0, long_row_passes=1.0)
    tuning = with_kernel(tuning, "layernorm", bandwidth_fraction=0.75, host_us=40.0, long_row_passes=2.0)
    tuning = with_kernel(tuning, "elementwise", bandwidth_fraction=0.8, host_us=30.0)
    truth = with_tuning(catalog, tuning)
    # graph twins of some shapes: the only rows that show the overlap exponent and the device's fixed cost
    result = fit(_synthetic_rows(truth, 0.01, 0, graph_every=4), catalog)
    got = result.tuning
    assert got.overlap_exponent == pytest.approx(2.5, rel=0.15) and got.launch_us == pytest.approx(4.0, rel=0.15)
    assert got.compute_fraction == pytest.approx(0.7, rel=0.05)
    assert got.long_row_bytes == 16384.0
    for kind, bandwidth, host in (("softmax", 0.5, 12.0), ("layernorm", 0.75, 40.0), ("elementwise", 0.8, 30.0)):
        assert got.kernel(kind).bandwidth_fraction == pytest.approx(bandwidth, rel=0.08), kind
        assert got.kernel(kind).host_us == pytest.approx(host, rel=0.15), kind
    assert got.kernel("layernorm").long_row_passes == pytest.approx(2.0, abs=0.3)
    assert max(result.fit_mape.values()) < 3.0


def test_constants_no_row_constrains_are_named() -> None:
    """Only large, compute-bound GEMMs, timed eager: nothing tells the GEMM bandwidth fraction (it takes the
    GELU rows' fitted DRAM share), nor the GEMM host cost (device time hides it: it follows the softmax one by
    the measured ratio), nor the device's fixed cost and the overlap (no CUDA-graph row: serial timing, p = 1);
    the fit says so for each."""
    catalog = _catalog_arch()
    serial = gpu_catalog.assumption("serial_overlap_exponent")
    truth = with_tuning(catalog, replace(default_tuning(), compute_fraction=0.85, overlap_exponent=serial))
    truth = with_tuning(truth, with_kernel(truth.tuning, "softmax", host_us=12.0))
    ratio = gpu_catalog.assumption("gemm_host_ratio")
    truth = with_tuning(truth, with_kernel(truth.tuning, "gemm", host_us=12.0 * ratio))
    rows = [r for r in _synthetic_rows(truth, 0.0, 1) if r.op != "gemm" or r.M * r.N * r.K > 1e10]
    result = fit(rows, catalog)
    assert result.tuning.compute_fraction == pytest.approx(0.85, rel=0.05)
    assert result.tuning.bandwidth_fraction == result.tuning.kernel("elementwise").bandwidth_fraction
    assert result.tuning.kernel("gemm").bandwidth_fraction == result.tuning.bandwidth_fraction
    assert any(note.startswith("bandwidth_fraction: no GEMM row streams from DRAM") for note in result.notes)
    assert "compute_fraction" not in result.unidentified
    got = result.tuning
    assert got.kernel("softmax").host_us == pytest.approx(12.0, rel=0.05)
    assert got.kernel("gemm").host_us == pytest.approx(ratio * got.kernel("softmax").host_us)
    assert any(note.startswith("gemm.host_us: no host-bound row") for note in result.notes)
    assert got.overlap_exponent == serial and got.launch_us == catalog.tuning.launch_us
    assert {"launch_us", "overlap_exponent"} <= set(result.unidentified)


def test_plain_measurement_csv_round_trips(tmp_path: Path) -> None:
    rows = [
        Measurement("a100_80gb", "fp16", "gemm", 64, 128, 256, 2, 1.5e-5, "eager cuda events", "unit", "g"),
        Measurement("a100_80gb", "fp16", "softmax", 32, 4096, 0, 1, 2.0e-5, "graph", "unit", "s"),
    ]
    path = write_measurements(tmp_path / "m.csv", rows, [{"device_name": "x"}, {"device_name": "y"}])
    assert list(pd.read_csv(path).columns)[:11] == [
        "gpu", "precision", "op", "M", "N", "K", "count", "latency_s", "method", "source", "name"
    ]  # fmt: skip
    assert read_measurements(path) == rows
    assert [m.kind for m in rows] == ["GEMM", "softmax"] and not rows[1].eager


def test_held_out_shape_families_are_never_seen_in_any_timing() -> None:
    """Leave-one-family-out: a GEMM family (its eager and graph twins alike, and both sides of the GPU's ridge
    point as two families) is predicted by a fit that saw none of its rows; other kinds always train."""
    arch = _catalog_arch("h100_sxm")
    rows = [
        Measurement("h100_sxm", "fp16", "gemm", 4096, 4096, 4096, 1, 2e-4, method, name="square_4096")
        for method in ("eager", "graph")
    ]
    rows += [Measurement("h100_sxm", "fp16", "gemm", 256, 256, 256, 1, 3e-6, name="square_256")]
    rows += [Measurement("h100_sxm", "fp16", "gemm", 1, 4096, 4096, 1, 1e-5, name="gemv_1x4096")]
    rows += [Measurement("h100_sxm", "fp16", "softmax", 4096, 1024, 0, 1, 1e-5, name="softmax_4096x1024")]
    assert [shape_family(m, arch) for m in rows] == [
        "square/compute-bound", "square/compute-bound", "square/bandwidth-bound", "gemv/bandwidth-bound",
        "softmax/softmax",
    ]  # fmt: skip
    seen: list[set[str]] = []

    def fitter(train: list[Measurement], start) -> Fit:
        seen.append({m.name for m in train})
        return Fit(start.tuning, {}, [], [])

    held = family_cross_validate(rows, arch, fitter=fitter)
    assert list(held) == ["gemv/bandwidth-bound", "square/bandwidth-bound", "square/compute-bound"]
    assert seen == [
        {"square_4096", "square_256", "softmax_4096x1024"},
        {"square_4096", "gemv_1x4096", "softmax_4096x1024"},
        {"square_256", "gemv_1x4096", "softmax_4096x1024"},
    ]
    assert [m.method for m, _ in held["square/compute-bound"]] == ["eager", "graph"]
    assert all(p == predict_seconds(m, arch) for pairs in held.values() for m, p in pairs)


def test_board_power_columns_fit_energy_per_kernel_kind(tmp_path: Path) -> None:
    """FORMAT TEST, not a measurement: a CSV with the power columns tools/gpu_measure.py --power writes, its
    watts made up from known constants; the reader keeps them, the fit finds the constants, the calibration
    entry carries them and the model's energy then uses them instead of the catalog estimate."""
    arch = _catalog_arch("h100_sxm")
    truth = {"gemm": (90.0, 520.0), "softmax": (85.0, 300.0)}
    rows = []
    for i, (op, m, n, k, call_s) in enumerate(
        [("gemm", 4096, 4096, 4096, 2.2e-4), ("gemm", 1024, 1024, 1024, 2e-5), ("gemm", 8, 4096, 4096, 3e-5)]
        + [("softmax", 4096, 4096, 0, 6e-5), ("softmax", 4096, 1024, 0, 2e-5), ("gelu", 2**20, 1, 0, 1e-5)]
    ):
        row = Measurement("h100_sxm", "fp16", op, m, n, k, 1, call_s, "graph synthetic", "format test", f"r{i}")
        row = replace(row, power_call_s=call_s, power_w=1.0)
        static, dynamic = truth.get(op, (0.0, 0.0))
        rows.append(replace(row, power_w=static + dynamic * row_activity(row, arch) if op in truth else 150.0))
    back = read_measurements(write_measurements(tmp_path / "power.csv", rows))
    assert back == rows and "power_w" in pd.read_csv(tmp_path / "power.csv").columns
    power = fit_power(back, arch)
    assert [p.kind for p in power] == ["gemm", "softmax"]  # one GELU row: no line, the catalog stays
    for p in power:
        assert (p.static_w, p.dynamic_w) == pytest.approx(truth[p.kind], rel=1e-6) and p.rows == 2 + (p.kind == "gemm")
    assert max(power_errors(back, arch, power).values()) < 1e-6
    cost = gemm_cost(
        Gemm(4096, 4096, 4096, 1), Tile(128, 128, 32), arch, a_dram_bytes=1, b_dram_bytes=1, c_dram_bytes=1
    )
    measured = with_tuning(arch, replace(arch.tuning, power=power))
    static, compute, memory = kernel_power_w(cost, measured, measured.peak_flops)
    assert static == pytest.approx(90.0) and compute + memory <= 520.0
    assert kernel_power_w(cost, arch, arch.peak_flops)[0] == pytest.approx(0.25 * arch.tdp_w)  # catalog share
    pool = replace(cost, kind="pool")  # an unmeasured kind (elementwise): the catalog estimate
    assert kernel_power_w(pool, measured, measured.peak_flops) == kernel_power_w(pool, arch, arch.peak_flops)
    assert isinstance(cost, KernelCost) and GpuTuning.from_dict(measured.tuning.to_dict()) == measured.tuning


# ------------------------------------------------------------------------------------------ the H100 data
def _h100_rows() -> list[Measurement]:
    return [m for m in read_measurements(H100_GRAPH_FP16, tuple(OP_KINDS)) if m.precision == "fp16"]


def test_fit_on_the_h100_graph_rows_is_not_worse_than_its_start() -> None:
    """CUDA-graph rows: the fit must improve on the catalog start it begins from (it used to get worse: an
    unmodelled conv dragged launch_us up, and host costs no graph row sees moved anyway)."""
    rows = _h100_rows()
    assert {m.kind for m in rows} == {"GEMM", "softmax", "layernorm", "GELU"} and not any(m.eager for m in rows)
    catalog = _gemm_like_convs(_catalog_arch("h100_sxm"))
    start = mape_by_kind(rows, [predict_seconds(m, catalog) for m in rows])
    result = fit(rows, catalog)
    for kind in ("all", "GEMM"):
        assert result.fit_mape[kind] < start[kind], kind
    assert result.fit_mape["all"] < 0.6 * start["all"]
    for kernel in result.tuning.kernels:  # graph rows say nothing about the host: kept, and said so
        assert kernel.host_us == default_tuning().kernel(kernel.kind).host_us
        assert f"{kernel.kind}.host_us" in result.unidentified
    assert result.tuning.overlap_exponent == default_tuning().overlap_exponent
    assert result.tuning.conv_efficiency < 0.7 and result.tuning.conv_fixed_us > 1.0  # convs: slower than GEMMs


def test_a_conv_rows_price_uses_the_conv_constants() -> None:
    """A conv with a filter window costs its implicit GEMM at conv_efficiency plus conv_fixed_us; a 1x1 conv
    (im2col = its input) and a plain GEMM do not; the calibration sees the conv's input bytes, not im2col's."""
    base = _gemm_like_convs(_catalog_arch("h100_sxm"))
    slow = with_tuning(base, replace(default_tuning(), conv_efficiency=0.5, conv_fixed_us=6.0))
    tile = Tile(128, 128, 32)
    kw = {"a_dram_bytes": 1e6, "b_dram_bytes": 1e6, "c_dram_bytes": 1e6}
    big = Gemm(8192, 512, 4608, 1)
    plain = gemm_cost(big, tile, slow, **kw)
    conv = gemm_cost(replace(big, conv=True), tile, slow, **kw)
    assert conv.compute_s == pytest.approx(2.0 * plain.compute_s) and conv.launch_s == pytest.approx(
        plain.launch_s + 6e-6
    )
    assert gemm_cost(replace(big, conv=True), tile, base, **kw).seconds == pytest.approx(plain.seconds)
    # measured rows: r50_res4_3x3_b8 (3x3) and r50_res2_1x1_b8 (1x1, a plain GEMM)
    rows = {m.name: m for m in _h100_rows()}
    window, pointwise = rows["r50_res4_3x3_b8"], rows["r50_res2_1x1_b8"]
    assert predict_seconds(window, slow) > predict_seconds(window, base) + 6e-6
    assert predict_seconds(pointwise, slow) == pytest.approx(predict_seconds(pointwise, base))
    as_gemm = replace(window, op="gemm")  # same M, N, K read as a GEMM: im2col bytes, no conv constants
    a_input = window.traffic_bytes - 2 * (window.K * window.N + window.M * window.N)
    assert 0 < a_input < window.M * window.K * 2
    assert predict_seconds(as_gemm, base) != predict_seconds(window, base)


def test_the_model_prices_a_networks_windowed_convs_with_the_conv_constants() -> None:
    """Through the mapper and GpuModel: 3x3/7x7 convs are marked, run without split-K, and slow down with
    conv_efficiency; 1x1 convs are plain GEMMs."""
    graph = zoo.build("resnet50", batch=8, precision="fp16")
    base = _gemm_like_convs(_catalog_arch("h100_sxm"))
    slow = with_tuning(base, replace(default_tuning(), conv_efficiency=0.5, conv_fixed_us=6.0))
    mapping = GpuTileMapper().map(graph, base)
    convs = [o for o in graph.ops if o.kind.value == "conv" and mapping.ops[o.name].payload.gemm is not None]
    windowed = [o for o in convs if o.dims["R"] * o.dims["S"] > 1]
    assert windowed and len(windowed) < len(convs)
    for op in convs:
        gemm = mapping.ops[op.name].payload.gemm
        assert gemm.conv == (op in windowed)
        assert mapping.ops[op.name].payload.tile.split_k == 1 or not gemm.conv
    fast_layers = {m.layer: m for m in GpuModel().evaluate(mapping, base).layers}
    slow_layers = {m.layer: m for m in GpuModel().evaluate(GpuTileMapper().map(graph, slow), slow).layers}
    for op in convs:
        if op in windowed:
            assert slow_layers[op.name].cycles > fast_layers[op.name].cycles
        else:
            assert slow_layers[op.name].cycles == pytest.approx(fast_layers[op.name].cycles)
    deep = Gemm(392, 512, 4608, 1)  # r50 res5 3x3: the GEMM of its shape splits K, the conv does not
    assert best_tile(deep, base, 1e6, 1e6, 1e6, 0.0)[0].split_k > 1
    assert best_tile(replace(deep, conv=True), base, 1e6, 1e6, 1e6, 0.0)[0].split_k == 1


def test_stored_h100_constants_reproduce_the_graph_measurements() -> None:
    """Fast check of the committed H100 calibration (CUDA-graph fp16 rows): it is used for h100_sxm."""
    h100 = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16"})
    stored = calibration_for("h100_sxm")
    assert stored is not None and h100.calibrated and h100.tuning == stored.tuning
    rows = _h100_rows()
    errors = mape_by_kind(rows, [predict_seconds(m, h100) for m in rows])
    assert errors["GEMM"] <= 25.0 and errors["all"] <= 20.0
    assert stored.cv_mape["GEMM"] < stored.uncalibrated_mape["GEMM"]


def test_tuning_without_conv_constants_reads_with_the_default_conv_constants() -> None:
    """Calibration files written before the conv constants existed still load, with the default conv constants
    (the H100's fit, assumed where a GPU has no conv measurements)."""
    raw = default_tuning().to_dict()
    del raw["conv_efficiency"], raw["conv_fixed_us"]
    tuning = GpuTuning.from_dict(raw)
    assert tuning == default_tuning()
    assert (tuning.conv_efficiency, tuning.conv_fixed_us) == (CONV_EFFICIENCY_DEFAULT, CONV_FIXED_US_DEFAULT)
    assert 0.0 < CONV_EFFICIENCY_DEFAULT < 1.0 and CONV_FIXED_US_DEFAULT > 0.0  # convs are slower than GEMMs


# ------------------------------------------------------------------------------------------ the shared A100 data
needs_a100_data = pytest.mark.skipif(
    not LLMCOMPASS.is_dir(), reason=f"shared A100 measurements not found at {LLMCOMPASS} (kept outside the project)"
)


@needs_a100_data
def test_llmcompass_rows_are_read_with_their_latencies() -> None:
    rows = read_llmcompass(LLMCOMPASS)
    kinds = {m.kind for m in rows}
    assert kinds == {"GEMM", "softmax", "layernorm", "GELU"} and len(rows) >= 70
    gemm = next(m for m in rows if m.op == "gemm" and m.M == 64)
    assert (gemm.N, gemm.K) == (12288, 12288) and gemm.seconds == pytest.approx(0.19e-3)
    gelu = next(m for m in rows if m.op == "gelu" and m.M == 1024)
    assert gelu.seconds == pytest.approx(1024 / 0.021262214336633663e9)


@needs_a100_data
def test_stored_constants_reproduce_the_a100_measurements() -> None:
    """Fast check of the committed calibration: its constants predict the rows they were fitted on."""
    rows = read_llmcompass(LLMCOMPASS)
    a100 = GpuTemplate().instantiate({"gpu": "a100_80gb", "precision": "fp16"})
    assert a100.calibrated
    errors: dict[str, list[float]] = {}
    for m in rows:
        errors.setdefault(m.kind, []).append(abs(predict_seconds(m, a100) / m.seconds - 1) * 100)
    assert np.mean(errors["GEMM"]) <= 10.0
    assert all(np.mean(errors[kind]) <= 15.0 for kind in ("softmax", "layernorm", "GELU"))


@pytest.mark.slow
@needs_a100_data
def test_cross_validated_error_meets_the_targets_and_matches_the_stored_calibration() -> None:
    rows = read_llmcompass(LLMCOMPASS)
    report = evaluate(rows, GpuTemplate().instantiate({"gpu": "a100_80gb", "precision": "fp16"}))
    cv = report.cross_validated
    assert cv["GEMM"] <= 10.0
    assert cv["softmax"] <= 15.0 and cv["layernorm"] <= 15.0 and cv["GELU"] <= 15.0
    for kind in ("softmax", "layernorm", "GELU"):
        assert report.shipped[kind] > 3 * cv[kind]  # the uncalibrated model misses the per-call cost
    stored = calibration_for("a100_80gb")
    assert stored is not None, "run tools/gpu_calibrate.py --write"
    for kind, error in stored.cv_mape.items():
        assert error == pytest.approx(cv[kind], abs=0.5), kind
    assert stored.tuning.compute_fraction == pytest.approx(report.fit.tuning.compute_fraction, rel=0.02)


# ------------------------------------------------------------------------------------------ the project uses it
def test_a_calibrated_gpu_uses_its_constants_and_the_others_the_catalog(tmp_path: Path) -> None:
    stored = calibration_for("a100_80gb")
    assert stored is not None and set(calibrations()) == {"a100_80gb", "h100_sxm"}
    a100 = GpuTemplate().instantiate({"gpu": "a100_80gb", "precision": "fp16"})
    assert a100.calibrated and a100.tuning == stored.tuning and a100.compute_fraction == stored.tuning.compute_fraction
    assert "LLMCompass" in a100.calibration
    l4 = GpuTemplate().instantiate({"gpu": "l4", "precision": "fp16"})
    assert not l4.calibrated and l4.calibration == CATALOG_ONLY and l4.tuning == default_tuning()
    h100 = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16"})
    assert h100.calibrated and "H100" in h100.calibration and "(fp16)" in h100.calibration
    forced = GpuTemplate().instantiate({"gpu": "a100_80gb", "compute_fraction": 0.5})
    assert forced.compute_fraction == 0.5 and forced.tuning.compute_fraction == 0.5
    eager = GpuTemplate().instantiate({"gpu": "a100_80gb", "execution": "eager"})
    graph = zoo.build("bert_base", batch=1, precision="fp16")
    t_graph = GpuModel().evaluate(GpuTileMapper().map(graph, a100), a100)["latency_ms"]
    t_eager = GpuModel().evaluate(GpuTileMapper().map(graph, eager), eager)["latency_ms"]
    assert t_eager > t_graph  # the host's per-call cost only in eager execution
    other = tmp_path / "cal.json"
    write_calibration(replace(stored, gpu="l4"), other)
    assert set(calibrations(other)) == {"l4"} and CALIBRATION_JSON.is_file()


# ------------------------------------------------------------------------------------------ nodes
def test_ring_allreduce_cost_formula() -> None:
    link = 450e9
    share = gpu_catalog.assumption("nvlink_fraction")
    step = gpu_catalog.assumption("allreduce_step_us") * 1e-6
    nbytes = 64e6
    assert allreduce_seconds(nbytes, 8, link) == pytest.approx(2 * 7 / 8 * nbytes / (link * share) + 14 * step)
    assert allreduce_seconds(nbytes, 2, link) == pytest.approx(nbytes / (link * share) + 2 * step)
    assert allgather_seconds(nbytes, 8, link) == pytest.approx(7 / 8 * nbytes / (link * share) + 7 * step)
    assert allreduce_seconds(nbytes, 1, link) == 0.0 and allreduce_seconds(0.0, 8, link) == 0.0


def test_tensor_parallel_bert_has_one_allreduce_per_attention_and_mlp_block() -> None:
    graph = zoo.build("bert_base", batch=128, precision="fp16")  # at batch 8 the all-reduces outweigh 8x compute
    one = GpuTemplate().instantiate({"gpu": "h100_sxm"})
    node = GpuTemplate().instantiate({"gpu": "h100_sxm", "gpus": 8})
    assert node.nvlink_gbps == gpu_catalog.NVLINK_GBPS["h100_sxm"].value
    mapping = GpuTileMapper().map(graph, node)
    layers = sum(1 for op in graph.ops if op.kind.value == "layernorm") // 2
    assert mapping.solver["allreduces"] == 2 * layers
    roles = {om.payload.shard for om in mapping.ops.values() if om.payload.fused_into is None}
    assert {"column", "row", "split"} <= roles
    m1 = GpuModel().evaluate(GpuTileMapper().map(graph, one), one)
    m8 = GpuModel().evaluate(mapping, node)
    comm = sum(layer.extra.get("collective_s", 0.0) for layer in m8.layers)
    assert comm > 0 and m8["latency_ms"] < m1["latency_ms"]
    assert m8["energy_mj"] > m1["energy_mj"] * 0.5  # 8 GPUs drawing power: no free lunch
    slow = GpuTemplate().instantiate({"gpu": "h100_sxm", "gpus": 8, "nvlink_gbps": 25})
    assert GpuModel().evaluate(GpuTileMapper().map(graph, slow), slow)["latency_ms"] > m8["latency_ms"]


def test_gpus_on_a_part_without_nvlink_need_a_link_bandwidth() -> None:
    with pytest.raises(TemplateError, match="needs nvlink_gbps") as err:
        GpuTemplate().instantiate({"gpu": "l4", "gpus": 2})
    assert err.value.param == "nvlink_gbps"
    assert GpuTemplate().instantiate({"gpu": "l4", "gpus": 2, "nvlink_gbps": 32}).gpus == 2


# ------------------------------------------------------------------------------------------ compare
def test_node_presets_and_provenance_in_the_comparison() -> None:
    assert baseline_names(["dgx_h100", "DGX-A100", "a100"]) == ["dgx_h100", "dgx_a100", "a100_80gb"]
    with pytest.raises(UserError, match="dgx_h100"):
        baseline_names(["dgx_b200"])
    graph = zoo.build("bert_base", batch=128, precision="fp16")
    gpus, _ = evaluate_baselines(graph, ["dgx_h100", "dgx_a100", "a100", "h100"], "fp16")
    assert [b.arch.gpus for b in gpus] == [8, 8, 1, 1]
    summary = summary_frame(pd.DataFrame(columns=["point_id"]), gpus, "fp16")
    calibration = dict(zip(summary["name"], summary["calibration"]))
    assert calibration["NVIDIA A100 SXM4 80GB"].startswith("calibrated on LLMCompass")
    assert calibration["NVIDIA DGX A100 (8x A100 SXM4 80GB, NVLink 3)"].startswith("calibrated")
    assert calibration["NVIDIA H100 SXM5 80GB"].startswith("calibrated on benchmarks/gpu_measure.py")
    table = format_table(summary)
    assert "calibrated" in table
    notes = calibration_notes(gpus)
    assert any("DGX H100" in n and "all-reduce" in n and "calibrated" in n for n in notes)
    # H100s have board power measured on the device (hwmodels/data/gpu_power_h100.csv), A100s do not
    assert [("H100" in n, f"energy: {ENERGY_CATALOG}" in n) for n in notes] == [
        (True, False), (False, True), (False, True), (True, False)
    ]  # fmt: skip
    assert all("energy: measured board power" in n for n in notes if "H100" in n)
    measured = replace(gpus[2], arch=replace(gpus[2].arch, tuning=replace(gpus[2].arch.tuning, power=(
        KernelPower("gemm", 60.0, 300.0, 3),
    ))))  # fmt: skip
    assert calibration_notes([measured])[0].endswith(f"energy: {ENERGY_MEASURED}")
    latency = dict(zip(summary["name"], summary["latency_ms"]))
    assert latency["NVIDIA DGX H100 (8x H100 SXM5, NVLink 4)"] < latency["NVIDIA H100 SXM5 80GB"]
