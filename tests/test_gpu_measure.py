"""The CPU path of tools/gpu_measure.py: it runs, times every quick shape and records how."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed; tools/gpu_measure.py needs it")

ROOT = Path(__file__).resolve().parents[1]


def _load_script():
    spec = importlib.util.spec_from_file_location("gpu_measure", ROOT / "tools" / "gpu_measure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_measure"] = module
    spec.loader.exec_module(module)
    return module


def test_cpu_measurement_writes_a_complete_csv(tmp_path: Path, capsys) -> None:
    script = _load_script()
    out = tmp_path / "cpu.csv"
    rc = script.main(["--device", "cpu", "--quick", "--repeats", "2", "--warmup", "1", "--out", str(out)])
    assert rc == 0
    frame = pd.read_csv(out)
    assert list(frame.columns) == list(script.COLUMNS)
    quick = (
        len(script.QUICK_GEMMS) + len(script.QUICK_CONVS) + len(script.QUICK_ATTENTION) + len(script.QUICK_MEMORY_OPS)
    )
    assert len(frame) == quick
    assert set(frame["op"]) == {"gemm", "conv", "attention", "softmax", "layernorm", "gelu"}
    assert (frame["latency_s"] > 0).all() and (frame["min_s"] <= frame["latency_s"]).all()
    assert (frame["precision"] == "fp32").all() and frame["method"].str.startswith("eager PyTorch call").all()
    assert (frame["device"] == "cpu").all() and frame["device_name"].str.len().min() > 0
    assert frame["torch"].iloc[0].startswith("2.")
    conv = frame[frame["name"] == "r50_res4_3x3_b8"].iloc[0]
    assert (conv["M"], conv["N"], conv["K"]) == (8 * 14 * 14, 256, 256 * 9)  # implicit-GEMM view
    gemm = frame[frame["name"] == "square_256"].iloc[0]
    assert gemm["flops"] == 2 * 256**3 and gemm["bytes"] == 3 * 256 * 256 * 4
    assert "shapes ->" in capsys.readouterr().out


def test_measured_csv_feeds_the_calibration_reader(tmp_path: Path) -> None:
    from hwmodels.gpu.calibrate import read_measurements

    script = _load_script()
    out = tmp_path / "cpu.csv"
    script.main(["--device", "cpu", "--quick", "--repeats", "1", "--warmup", "0", "--out", str(out)])
    measurements = read_measurements(out)
    assert len(measurements) == len(pd.read_csv(out))
    assert {m.kind for m in measurements} == {"GEMM", "attention", "softmax", "layernorm", "GELU"}
    batched = next(m for m in measurements if m.name == "batched_64x128x64")
    assert batched.count == 64 and batched.seconds > 0
    gelu = next(m for m in measurements if m.op == "gelu")
    assert (gelu.M, gelu.N) == (2**20, 1) and gelu.precision == "fp32"


def test_cuda_request_without_a_device_is_refused(tmp_path: Path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    script = _load_script()
    assert script.main(["--device", "cuda", "--out", str(tmp_path / "x.csv")]) == 2
    assert "no CUDA device" in capsys.readouterr().err


class _FakeNvml:
    """Stands in for pynvml: a board whose power reading climbs 100 mW per read (no GPU here)."""

    def __init__(self) -> None:
        self.reads = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        self.reads += 1
        return 100_000 + 100 * self.reads  # milliwatts


def test_power_sampler_averages_the_board_power_over_the_second_half_of_a_run() -> None:
    script = _load_script()
    nvml = _FakeNvml()
    sampler = script.PowerSampler(nvml, interval_s=0.001)
    calls = []
    watts, per_call, samples = script.sustained_power(lambda: calls.append(1), lambda: None, sampler, 0.05)
    assert samples >= 1 and nvml.reads >= 2 * samples - 1
    assert 100.0 + 0.1 * nvml.reads / 2 - 0.1 <= watts <= 100.0 + 0.1 * nvml.reads  # the later, higher reads
    assert len(calls) % 64 == 0 and per_call == pytest.approx(0.05 / len(calls), rel=1.0)


def test_power_needs_a_cuda_device_and_nvml(tmp_path: Path, capsys) -> None:
    script = _load_script()
    rc = script.main(["--device", "cpu", "--quick", "--power", "--out", str(tmp_path / "p.csv")])
    assert rc == 2 and "--power needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()
