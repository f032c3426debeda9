"""Measured board power (``tools/gpu_power_measure.py`` -> ``hwmodels/data/gpu_power_*.csv``) drives a GPU's energy
where a file covers it (``hwmodels.gpu.calibrate_board``); without a file the catalog estimate stays.

The CSVs here are FORMAT FIXTURES written by the tool's own writer in a temporary folder, not measurements."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from dse.graph import GraphBuilder
from hwmodels.gpu import calibrate_board
from hwmodels.gpu.calibrate_board import board_power, fit_line, power_rows, with_board_power
from hwmodels.gpu.model import ENERGY_MEASURED_NOTE, ENERGY_NOTE, GpuModel
from mappers.gpu import GpuTileMapper
from templates.gpu import GpuTemplate

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("gpu_power_measure", ROOT / "tools" / "gpu_power_measure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_power_measure"] = module
    spec.loader.exec_module(module)
    return module


def _write_power_csv(folder: Path, scale: float) -> Path:
    """Rows as the tool writes them for an H100: bf16 GEMMs and copies, board watts x ``scale``."""
    tool = _tool()
    rows = []
    for op, precision, m, n, k, seconds, watts in (
        ("gemm", "bf16", 1024, 1024, 1024, 9.0e-6, 420.0),
        ("gemm", "bf16", 4096, 4096, 4096, 2.2e-4, 640.0),
        ("gemm", "bf16", 8192, 8192, 8192, 1.7e-3, 690.0),
        ("gemm", "fp32", 4096, 4096, 4096, 3.0e-3, 500.0),  # another precision: not the bf16 design's line
        ("copy", "bf16", 64 * 2**20, 1, 0, 9.0e-5, 380.0),
        ("copy", "bf16", 512 * 2**20, 1, 0, 6.9e-4, 400.0),
        ("gemm", "bf16", 1024, 1024, 1024, 9.0e-6, 999.0),  # another GPU's row
    ):
        gpu = "a100_80gb" if watts == 999.0 else "h100_sxm"
        row = dict.fromkeys(tool.COLUMNS, "")
        row.update(gpu=gpu, precision=precision, op=op, M=m, N=n, K=k, count=1, latency_s=repr(seconds))
        row.update(power_w=repr(watts * scale), power_call_s=repr(seconds), samples=20, method="fixture")
        rows.append(row)
    return tool.write_csv(folder / "gpu_power_h100.csv", rows)


def _energy(graph, folder: Path) -> tuple[float, list[str]]:
    """Energy (mJ) and notes of the graph on an H100 in bf16 with the power CSVs of ``folder``."""
    calibrate_board.DATA_DIR = folder
    power_rows.cache_clear()
    arch = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "bf16"})
    metrics = GpuModel().evaluate(GpuTileMapper().map(graph, arch), arch)
    return metrics["energy_mj"], metrics.info["notes"]


def test_energy_follows_the_measured_power_csv(tmp_path: Path, monkeypatch) -> None:
    """Twice the measured watts, twice the energy (latency unchanged); no CSV: the catalog estimate."""
    monkeypatch.setattr(calibrate_board, "DATA_DIR", calibrate_board.DATA_DIR)
    b = GraphBuilder("ffn", elem_bytes=2)
    x = b.input("x", (2048, 4096))
    b.output(b.add(b.linear(x, 4096, bias=False), x))  # a GEMM and a residual add (DRAM-bound)
    graph = b.build()
    (tmp_path / "none").mkdir()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _write_power_csv(tmp_path / "one", 1.0)
    _write_power_csv(tmp_path / "two", 2.0)
    catalog, catalog_notes = _energy(graph, tmp_path / "none")
    measured, notes = _energy(graph, tmp_path / "one")
    doubled, _ = _energy(graph, tmp_path / "two")
    power_rows.cache_clear()
    assert ENERGY_NOTE in catalog_notes and ENERGY_MEASURED_NOTE in notes
    assert doubled == pytest.approx(2.0 * measured, rel=1e-12)
    assert abs(measured / catalog - 1.0) > 0.01
    arch = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "bf16"})
    kinds = {p.kind: p for p in board_power(arch, str(tmp_path / "one"))}
    assert set(kinds) == {"elementwise", "gemm"} and kinds["gemm"].rows == 3 and kinds["elementwise"].rows == 2
    assert with_board_power(arch, str(tmp_path / "none")) is arch
    fp16 = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": "fp16"})
    assert [p.kind for p in board_power(fp16, str(tmp_path / "one"))] == ["elementwise"]  # no fp16 GEMM rows


def test_fit_line_is_the_nonnegative_least_squares_line() -> None:
    """Exact on points of a line; a falling cloud keeps static >= 0 and dynamic >= 0 (the better of the two)."""
    assert fit_line([(0.1, 120.0), (0.5, 300.0), (0.9, 480.0)]) == pytest.approx((75.0, 450.0))
    static, dynamic = fit_line([(0.1, 400.0), (0.9, 300.0)])
    assert dynamic == 0.0 and static == pytest.approx(350.0)


def test_the_measured_h100_csv_fits_what_it_measured():
    """The committed H100 readings (hwmodels/data/gpu_power_h100.csv, NVML on the lent machine): each GEMM line
    and the copies' line put every row within 15 % of its watts; the copies, all near full DRAM rate, take the
    GEMMs' static watts and fit their dynamic ones (MIN_ACTIVITY_SPAN)."""
    from hwmodels.gpu.calibrate_board import DATA_DIR, row_activity

    rows = power_rows("h100_sxm", str(DATA_DIR))
    assert len(rows) >= 20, "the measured H100 power CSV is part of the project"
    for precision in ("bf16", "fp16"):
        arch = GpuTemplate().instantiate({"gpu": "h100_sxm", "precision": precision})
        fitted = {p.kind: p for p in board_power(arch)}
        assert fitted["elementwise"].static_w == fitted["gemm"].static_w > 0
        for m in rows:
            kind = "gemm" if m.kind == "GEMM" else "elementwise"
            if kind == "gemm" and m.precision != precision:
                continue
            size = 2 if kind == "elementwise" else None  # a copy row's elements are bf16
            predicted = fitted[kind].static_w + fitted[kind].dynamic_w * row_activity(m, arch, size)
            if m.power_call_s > 1e-4:  # below that the board's 50 ms samples see mostly launch gaps
                assert predicted == pytest.approx(m.power_w, rel=0.15), (m.op, m.precision, m.m, m.n, m.k)
