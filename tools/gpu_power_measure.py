"""Board power of GEMMs and a memory-bound copy on a CUDA GPU: the measurement behind the GPU model's energy.

Why: without it, a GPU design's energy is the catalog estimate (a static share of TDP plus the rest by
utilization). Here each kernel runs back to back for ``--seconds`` while a thread samples the board
(NVML through nvidia-ml-py's ``pynvml``, else ``nvidia-smi --query-gpu=... -lms``): power, SM and memory
clocks, temperature, utilization. NVML's power reading averages over up to a second on recent GPUs, so only
the samples of the run's second half count. The idle board power is sampled once, before the kernels.

Each row is a plain measurement row (``hwmodels.gpu.calibrate_rows.PLAIN_COLUMNS``: gpu, precision, op, M, N,
K, count, latency_s, method, source, name) with ``power_w`` (mean board power while it ran) and
``power_call_s`` (time per call in that run, = latency_s), then idle_power_w, energy_per_call_j (board power x
time per call), samples, the mean clocks, temperature and utilization, device_name and timestamp. GEMM rows:
C[M x N] = A[M x K] B[K x N] in bf16, fp16, fp32 (CUDA cores: TF32 off) and int8 (``torch._int_mm``, int32
out) where torch has it; copy rows: a tensor of M elements copied into another (N = 1, K = 0).
``hwmodels.gpu.calibrate_board`` reads ``hwmodels/data/gpu_power_*.csv`` so that the GPU model's energy of
the measured GPU follows it.

    python tools/gpu_power_measure.py --out hwmodels/data/gpu_power_h100.csv [--seconds 2.5] [--budget-s 150]
    python tools/gpu_power_measure.py --quick --out /tmp/power.csv      # a few shapes, 1 s each
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FIELDS = ("power.draw", "clocks.sm", "clocks.mem", "temperature.gpu", "utilization.gpu")
COLUMNS = (
    "gpu",
    "precision",
    "op",
    "M",
    "N",
    "K",
    "count",
    "latency_s",
    "method",
    "source",
    "name",
    "power_w",
    "power_call_s",
    "idle_power_w",
    "energy_per_call_j",
    "samples",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "utilization_pct",
    "device_name",
    "timestamp",
)
# (M, N, K): square from small to 8192^3, and two transformer-like shapes
GEMM_SHAPES = (
    (256, 256, 256),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 3072, 768),
    (1024, 8192, 8192),
)
QUICK_SHAPES = ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192))
PRECISIONS = ("bf16", "fp16", "fp32", "int8")
COPY_ELEMENTS = (64 * 2**20, 512 * 2**20)  # 2-byte elements: 128 MiB (above the 50 MB L2) and 1 GiB
DEVICE_GPUS = (("H100 80GB HBM3", "h100_sxm"), ("H100 PCIe", "h100_pcie"), ("H200", "h200"), ("A100", "a100_80gb"))


@dataclass(frozen=True)
class Reading:
    """One sample of the board: watts, SM and memory clocks (MHz), temperature (C), utilization (%)."""

    power_w: float
    sm_mhz: float
    mem_mhz: float
    temperature_c: float
    utilization_pct: float


def mean_reading(samples: list[Reading]) -> Reading:
    """The field-by-field mean of some samples (zeros where there are none)."""
    if not samples:
        return Reading(0.0, 0.0, 0.0, 0.0, 0.0)
    return Reading(*(statistics.fmean(getattr(s, f) for s in samples) for f in Reading.__dataclass_fields__))


def parse_smi_line(line: str) -> Reading | None:
    """A line of ``nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits`` ('[N/A]' cells read as 0)."""
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) != len(FIELDS):
        return None
    try:
        return Reading(*(float(cell) if cell.replace(".", "", 1).isdigit() else 0.0 for cell in cells))
    except ValueError:
        return None


class NvmlSampler:
    """Samples GPU ``index`` through NVML (``pynvml``, passed in so a test can hand a fake one)."""

    method = "NVML (nvidia-ml-py) in a thread"

    def __init__(self, nvml, index: int = 0, interval_s: float = 0.05) -> None:  # noqa: ANN001
        nvml.nvmlInit()
        self.nvml, self.interval_s = nvml, interval_s
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def read(self) -> Reading:
        n, h = self.nvml, self.handle
        return Reading(
            n.nvmlDeviceGetPowerUsage(h) / 1000.0,
            float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            float(n.nvmlDeviceGetUtilizationRates(h).gpu),
        )

    def while_running(self, run: Callable[[], None]) -> list[Reading]:
        """The samples taken while ``run`` ran."""
        samples: list[Reading] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(self.read())
                stop.wait(self.interval_s)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            run()
        finally:
            stop.set()
            thread.join()
        return samples


class SmiSampler:
    """Samples GPU ``index`` with ``nvidia-smi ... -lms`` in a child process (when NVML is not importable)."""

    def __init__(self, index: int = 0, interval_ms: int = 50) -> None:
        self.index, self.interval_ms = index, interval_ms
        self.method = f"nvidia-smi --query-gpu={','.join(FIELDS)} -lms {interval_ms}"

    def while_running(self, run: Callable[[], None]) -> list[Reading]:
        command = ["nvidia-smi", f"--id={self.index}", f"--query-gpu={','.join(FIELDS)}"]
        command += ["--format=csv,noheader,nounits", f"-lms={self.interval_ms}"]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            run()
        finally:
            child.terminate()
            out, _ = child.communicate(timeout=10)
        return [r for r in map(parse_smi_line, out.splitlines()) if r is not None]


def make_sampler(interval_ms: int):  # noqa: ANN201
    """NVML when pynvml imports, else nvidia-smi when it is on the PATH, else None."""
    try:
        import pynvml

        return NvmlSampler(pynvml, interval_s=interval_ms / 1000.0)
    except Exception:  # noqa: BLE001 (not installed, or no driver: try the command line tool)
        pass
    return SmiSampler(interval_ms=interval_ms) if shutil.which("nvidia-smi") else None


def back_to_back(fn: Callable[[], object], sync: Callable[[], None], seconds: float) -> tuple[float, int]:
    """Run ``fn`` over and over for about ``seconds`` (a synchronize every batch bounds the queue): (seconds
    per call, calls)."""
    batch, calls = 1, 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn()
        sync()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls, calls
        batch = max(1, min(256, int(0.2 * calls / elapsed)))  # about 0.2 s a batch: the end overshoots little


def sustained(
    fn: Callable[[], object], sync: Callable[[], None], sampler, seconds: float
) -> tuple[float, Reading, int]:  # noqa: ANN001
    """(seconds per call, mean board reading over the second half of the run, samples kept)."""
    per_call: list[float] = []
    samples = sampler.while_running(lambda: per_call.append(back_to_back(fn, sync, seconds)[0]))
    kept = samples[len(samples) // 2 :]
    return per_call[0], mean_reading(kept), len(kept)


def gemm_kernel(torch, precision: str, m: int, n: int, k: int, device: str) -> Callable[[], object]:  # noqa: ANN001
    """One GEMM call of that precision on random operands (zeros would draw less power)."""
    gen = torch.Generator(device=device).manual_seed(0)
    if precision == "int8":
        a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device=device, generator=gen)
        b = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=device, generator=gen).t()
        return lambda: torch._int_mm(a, b)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[precision]
    a = torch.randn(m, k, dtype=dtype, device=device, generator=gen)
    b = torch.randn(k, n, dtype=dtype, device=device, generator=gen)
    return lambda: torch.matmul(a, b)


def copy_kernel(torch, elements: int, device: str) -> Callable[[], object]:  # noqa: ANN001
    """A bf16 tensor of ``elements`` copied into another: DRAM-bound, 4 bytes moved per element."""
    src = torch.randn(elements, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def catalog_gpu(device_name: str) -> str:
    """The catalog key of a CUDA device name, else the name in lower case."""
    for fragment, key in DEVICE_GPUS:
        if fragment.lower() in device_name.lower():
            return key
    return device_name.strip().lower().replace(" ", "_")


def measure(args: argparse.Namespace, torch, sampler, device: str) -> list[dict]:  # noqa: ANN001
    """Every row: the idle board, then each kernel for ``args.seconds``, within ``args.budget_s`` in all."""
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    gpu = args.gpu or catalog_gpu(device_name)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    started = time.perf_counter()
    idle = mean_reading(sampler.while_running(lambda: time.sleep(args.idle_seconds)))
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    source = f"tools/gpu_power_measure.py on {device_name}, torch {torch.__version__} {stamp}"
    method = (
        f"board power by {sampler.method} every {args.interval_ms} ms, mean of the second half of a "
        f"{args.seconds:g} s back-to-back run (synchronised in batches) after warm-up; latency = run time / calls"
    )
    shapes = QUICK_SHAPES if args.quick else GEMM_SHAPES
    plan: list[tuple[str, str, int, int, int]] = [
        ("copy", "bf16", e, 1, 0) for e in COPY_ELEMENTS[: 1 if args.quick else 2]
    ]
    plan += [("gemm", p, m, n, k) for p in args.precisions for m, n, k in shapes]
    rows: list[dict] = []
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 rows: CUDA cores, as the model's fp32 precision
    for op, precision, m, n, k in plan:
        if time.perf_counter() - started > args.budget_s:
            print(f"gpu_power_measure: {args.budget_s:g} s budget spent; {op} {precision} {m}x{n}x{k} on skipped")
            break
        name = f"{op}_{precision}_{m}x{n}x{k}" if op == "gemm" else f"copy_{m * 2 // 2**20}MiB"
        try:
            fn = gemm_kernel(torch, precision, m, n, k, device) if op == "gemm" else copy_kernel(torch, m, device)
            back_to_back(fn, sync, args.warmup_seconds)
            seconds, reading, samples = sustained(fn, sync, sampler, args.seconds)
        except (RuntimeError, NotImplementedError) as error:  # a precision or size this GPU or torch lacks
            print(f"gpu_power_measure: {name} skipped: {str(error).splitlines()[0][:160]}")
            continue
        finally:
            fn = None
            if device == "cuda":
                torch.cuda.empty_cache()
        rows.append(
            {
                "gpu": gpu, "precision": precision, "op": op, "M": m, "N": n, "K": k, "count": 1,
                "latency_s": repr(seconds), "method": method, "source": source, "name": name,
                "power_w": f"{reading.power_w:.3f}", "power_call_s": repr(seconds),
                "idle_power_w": f"{idle.power_w:.3f}", "energy_per_call_j": repr(reading.power_w * seconds),
                "samples": samples, "sm_clock_mhz": f"{reading.sm_mhz:.0f}", "mem_clock_mhz": f"{reading.mem_mhz:.0f}",
                "temperature_c": f"{reading.temperature_c:.1f}", "utilization_pct": f"{reading.utilization_pct:.1f}",
                "device_name": device_name, "timestamp": stamp,
            }
        )  # fmt: skip
        flops = 2.0 * m * n * k if op == "gemm" else 0.0
        rate = f"{flops / seconds / 1e12:8.1f} TFLOPS" if flops else f"{4.0 * m / seconds / 1e9:8.0f} GB/s  "
        print(
            f"  {name:<28} {seconds * 1e6:10.1f} us/call {rate} {reading.power_w:6.1f} W "
            f"(idle {idle.power_w:.0f} W) {reading.sm_mhz:5.0f} MHz {samples:3d} samples"
        )
    return rows


def write_csv(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the CSV to write")
    parser.add_argument("--gpu", default="", help="catalog key of the GPU (default: from the device name)")
    parser.add_argument("--precisions", type=lambda s: tuple(s.split(",")), default=PRECISIONS)
    parser.add_argument("--seconds", type=float, default=2.5, help="back-to-back run per kernel (default 2.5)")
    parser.add_argument("--warmup-seconds", type=float, default=0.3, help="untimed run first (default 0.3)")
    parser.add_argument("--idle-seconds", type=float, default=2.0, help="idle board sampled first (default 2)")
    parser.add_argument("--interval-ms", type=int, default=50, help="sampling period (default 50 ms)")
    parser.add_argument("--budget-s", type=float, default=150.0, help="stop starting kernels after this (default 150)")
    parser.add_argument("--quick", action="store_true", help="three GEMM sizes and one copy, 1 s each")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 1.0)
    unknown = set(args.precisions) - set(PRECISIONS)
    if unknown:
        print(
            f"gpu_power_measure: unknown precision {sorted(unknown)}; allowed: {', '.join(PRECISIONS)}", file=sys.stderr
        )
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gpu_power_measure: needs a CUDA device (board power is read from the GPU)", file=sys.stderr)
        return 2
    sampler = make_sampler(args.interval_ms)
    if sampler is None:
        print("gpu_power_measure: needs NVML (pip install nvidia-ml-py) or nvidia-smi", file=sys.stderr)
        return 2
    rows = measure(args, torch, sampler, "cuda")
    path = write_csv(args.out, rows)
    print(f"gpu_power_measure: {len(rows)} rows -> {path}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
