"""Time GEMM, conv, attention, softmax, layernorm and GELU calls with PyTorch and write a measurement CSV.

Why: the GPU model's tuning constants are assumptions until they are fitted to measured kernels. This script
measures on CUDA when present (CUDA events around each eager call, or with ``--graph-calls N`` around a
replayed CUDA graph of N calls: the device time without the host's per-call cost) and on the CPU otherwise
(so it always runs),
with warm-up, several repeats and the median, and writes the plain format ``hwmodels.gpu.calibrate`` reads
(GPU, precision, op, shape, latency, how it was taken) plus the device name, library versions and time of
the run in every row. ``--power`` (CUDA, NVML from nvidia-ml-py) also runs each call back to back for
``--power-seconds`` while a thread samples the board power, and writes the mean (``power_w``), the time per
call in that run (``power_call_s``) and the idle power before the run (``idle_w``): the calibration then fits
energy per kernel kind (``hwmodels.gpu.calibrate_power``). ``--fit GPU`` prints the calibration's
cross-validated error on the measurement; ``tools/gpu_calibrate.py --csv FILE --gpu GPU --write`` stores
the fitted constants.

    .venv/bin/python tools/gpu_measure.py --out hwmodels/data/gpu_measured_h100.csv --fit h100_sxm
    .venv/bin/python tools/gpu_measure.py --graph-calls 20 --out hwmodels/data/gpu_measured_h100_graph.csv
    .venv/bin/python tools/gpu_measure.py --power --out hwmodels/data/gpu_measured_h100_power.csv
    .venv/bin/python tools/gpu_measure.py --device cpu --quick --out /tmp/cpu.csv

Every GEMM-shaped row gives the GEMM the model sees (conv: M = N*P*Q, N = K, K = C*R*S; batched matmul:
``count`` independent GEMMs); softmax/layernorm rows are M rows of N, GELU rows M elements.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from hwmodels.gpu.calibrate import PLAIN_COLUMNS

ROOT = Path(__file__).resolve().parents[1]

# The plain measurement format of ``hwmodels.gpu.calibrate`` (GPU, precision, op, shape, latency, how it was
# taken) first, then what else this script records about the run.
COLUMNS = (
    *PLAIN_COLUMNS,
    "flops",
    "bytes",
    "min_s",
    "repeats",
    "elem_bytes",
    "power_w",
    "power_call_s",
    "power_samples",
    "idle_w",
    "device",
    "device_name",
    "torch",
    "cuda",
    "cudnn",
    "threads",
    "timestamp",
)

# (name, M, N, K, count): square, skinny (decode-like), and transformer-layer GEMMs.
GEMMS = (
    ("square_256", 256, 256, 256, 1),
    ("square_512", 512, 512, 512, 1),
    ("square_1024", 1024, 1024, 1024, 1),
    ("square_2048", 2048, 2048, 2048, 1),
    ("square_4096", 4096, 4096, 4096, 1),
    ("tall_4096x256", 4096, 256, 1024, 1),
    ("wide_256x4096", 256, 4096, 1024, 1),
    ("deep_k8192", 512, 512, 8192, 1),
    ("gemv_1x4096", 1, 4096, 4096, 1),
    ("gemv_8x4096", 8, 4096, 4096, 1),
    ("bert_qkv_b8", 1024, 768, 768, 1),
    ("bert_ffn_up_b8", 1024, 3072, 768, 1),
    ("bert_ffn_down_b8", 1024, 768, 3072, 1),
    ("gpt2_mlp_decode_b32", 32, 3072, 768, 1),
    ("batched_64x128x64", 128, 128, 64, 64),
    ("odd_1000x1000x1000", 1000, 1000, 1000, 1),
    ("odd_3000x200x700", 3000, 200, 700, 1),
)
QUICK_GEMMS = ("square_256", "square_512", "tall_4096x256", "gemv_1x4096", "bert_qkv_b8", "batched_64x128x64")

# (name, N, C, H, W, K, R, S, stride, pad): ResNet-50 layer shapes.
CONVS = (
    ("r50_conv1_b8", 8, 3, 224, 224, 64, 7, 7, 2, 3),
    ("r50_res2_3x3_b8", 8, 64, 56, 56, 64, 3, 3, 1, 1),
    ("r50_res2_1x1_b8", 8, 64, 56, 56, 256, 1, 1, 1, 0),
    ("r50_res3_3x3_b8", 8, 128, 28, 28, 128, 3, 3, 1, 1),
    ("r50_res4_3x3_b8", 8, 256, 14, 14, 256, 3, 3, 1, 1),
    ("r50_res5_3x3_b8", 8, 512, 7, 7, 512, 3, 3, 1, 1),
    ("r50_res5_1x1_b32", 32, 2048, 7, 7, 512, 1, 1, 1, 0),
    ("r50_res3_3x3_b1", 1, 128, 28, 28, 128, 3, 3, 1, 1),
)
QUICK_CONVS = ("r50_res4_3x3_b8", "r50_res3_3x3_b1")

# (name, batch*heads, seq, head_dim)
ATTENTION = (
    ("bert_b8_s128", 96, 128, 64),
    ("bert_b1_s512", 12, 512, 64),
    ("gpt2_decode_kv1024", 12, 1, 64),
)
QUICK_ATTENTION = ("bert_b8_s128",)

# (name, op, M rows or elements, N row length): the memory-bound kernels the calibration fits
MEMORY_OPS = (
    ("softmax_4096x1024", "softmax", 4096, 1024),
    ("softmax_4096x4096", "softmax", 4096, 4096),
    ("softmax_16384x4096", "softmax", 16384, 4096),
    ("layernorm_4096x768", "layernorm", 4096, 768),
    ("layernorm_4096x4096", "layernorm", 4096, 4096),
    ("layernorm_4096x16384", "layernorm", 4096, 16384),
    ("gelu_1M", "gelu", 2**20, 1),
    ("gelu_16M", "gelu", 2**24, 1),
    ("gelu_256M", "gelu", 2**28, 1),
)
QUICK_MEMORY_OPS = ("softmax_4096x1024", "layernorm_4096x768", "gelu_1M")
# CUDA device names -> catalog keys (the calibration is per catalog GPU)
DEVICE_GPUS = (
    ("H100 80GB HBM3", "h100_sxm"),
    ("H100 PCIe", "h100_pcie"),
    ("A100-SXM4-80GB", "a100_80gb"),
    ("A100-SXM4-40GB", "a100_40gb"),
    ("L40S", "l40s"),
    ("L4", "l4"),
    ("4090", "rtx_4090"),
)


@dataclass
class Row:
    op: str
    name: str
    M: int
    N: int
    K: int
    count: int
    dtype: str
    elem_bytes: int
    flops: float
    bytes: float
    median_s: float
    min_s: float
    repeats: int
    power_w: float = 0.0  # mean board power while the call ran back to back (0: not sampled)
    power_call_s: float = 0.0
    power_samples: int = 0


class PowerSampler:
    """Board power of GPU ``index`` read through NVML by a background thread while something runs. ``nvml`` is
    the ``pynvml`` module of nvidia-ml-py (passed in: a test hands a fake one). NVML's reading is an average
    over up to a second on recent GPUs, so only the samples of the second half of a run are kept."""

    def __init__(self, nvml, index: int = 0, interval_s: float = 0.01) -> None:
        nvml.nvmlInit()
        self.nvml, self.interval_s = nvml, interval_s
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def read_w(self) -> float:
        return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0  # milliwatts

    def mean_w_while(self, run: Callable[[], None]) -> tuple[float, int]:
        """(mean watts over the second half of ``run``, samples kept); (0, 0) if no sample was taken."""
        samples: list[float] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(self.read_w())
                stop.wait(self.interval_s)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            run()
        finally:
            stop.set()
            thread.join()
        kept = samples[len(samples) // 2 :]
        return (statistics.fmean(kept), len(kept)) if kept else (0.0, 0)


def load_nvml():
    """The pynvml module (pip install nvidia-ml-py), or None when it is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def back_to_back(fn: Callable[[], object], sync: Callable[[], None], seconds: float) -> float:
    """Run ``fn`` over and over for about ``seconds`` (a synchronize every 64 calls bounds the queue);
    returns the wall time per call."""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(64):
            fn()
        sync()
        calls += 64
    return (time.perf_counter() - start) / calls


def sustained_power(
    fn: Callable[[], object], sync: Callable[[], None], sampler: PowerSampler, seconds: float
) -> tuple[float, float, int]:
    """(mean board watts, seconds per call, samples) of ``fn`` run back to back for ``seconds``."""
    per_call: list[float] = []
    watts, samples = sampler.mean_w_while(lambda: per_call.append(back_to_back(fn, sync, seconds)))
    return watts, per_call[0], samples


def catalog_gpu(device_name: str) -> str:
    """The catalog key of a CUDA device name, else the name itself in lower case (e.g. a CPU)."""
    for fragment, key in DEVICE_GPUS:
        if fragment.lower() in device_name.lower():
            return key
    return device_name.strip().lower().replace(" ", "_")


def device_info(torch, device: str) -> dict[str, str]:
    """Name of the device and versions of the libraries that produced the numbers."""
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        name = _cpu_name()
    return {
        "device": device,
        "device_name": name,
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda or ""),
        "cudnn": str(torch.backends.cudnn.version() or "") if device == "cuda" else "",
        "threads": str(torch.get_num_threads()),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def time_call(
    fn: Callable[[], object], sync: Callable[[], None], warmup: int, repeats: int, torch=None
) -> tuple[float, float]:
    """(median, min) seconds of one call of ``fn`` over ``repeats`` runs after ``warmup`` untimed ones: CUDA
    events around each call on a GPU (``torch`` given), the wall clock around a synchronised call otherwise."""
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        if torch is not None:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3)
        else:
            start_s = time.perf_counter()
            fn()
            sync()
            samples.append(time.perf_counter() - start_s)
    return statistics.median(samples), min(samples)


def time_graph(fn: Callable[[], object], warmup: int, repeats: int, torch, calls: int) -> tuple[float, float]:
    """(median, min) seconds of one call of ``fn`` on the device alone: ``calls`` calls captured in one CUDA
    graph, replayed ``repeats`` times between CUDA events, each replay's time over ``calls``. The host's
    per-call cost (tens of us in a VM, which an eager timing of a small kernel is mostly made of) is gone;
    what is left is the kernel and the gap between kernels, what the model's ``launch_us`` stands for."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as graph capture requires
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3 / calls)
    del graph
    torch.cuda.empty_cache()
    return statistics.median(samples), min(samples)


def measure(
    device: str,
    dtype_name: str,
    warmup: int,
    repeats: int,
    quick: bool,
    graph_calls: int = 0,
    sampler: PowerSampler | None = None,
    power_seconds: float = 2.0,
) -> tuple[list[Row], dict[str, str]]:
    """Time every shape (``quick``: a few); ``graph_calls`` > 0 (CUDA only) times them as CUDA graphs of that
    many calls (``time_graph``), else one eager call at a time (``time_call``); with ``sampler`` each call
    also runs back to back for ``power_seconds`` under the board-power sampler (``sustained_power``)."""
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    eb = torch.tensor([], dtype=dtype).element_size()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    events = torch if device == "cuda" else None

    def time_call_or_graph(fn: Callable[[], object]) -> tuple[float, float, dict[str, float]]:
        if graph_calls > 0:
            med, low = time_graph(fn, warmup, repeats, torch, graph_calls)
        else:
            med, low = time_call(fn, sync, warmup, repeats, events)
        if sampler is None:
            return med, low, {}
        watts, per_call, samples = sustained_power(fn, sync, sampler, power_seconds)
        return med, low, {"power_w": watts, "power_call_s": per_call, "power_samples": samples}

    torch.manual_seed(0)
    idle_w = sampler.mean_w_while(lambda: time.sleep(max(0.5, power_seconds / 2)))[0] if sampler else 0.0
    rows: list[Row] = []
    with torch.inference_mode():
        for name, m, n, k, count in GEMMS:
            if quick and name not in QUICK_GEMMS:
                continue
            a = torch.randn(count, m, k, device=device, dtype=dtype)
            b = torch.randn(count, k, n, device=device, dtype=dtype)
            fn = (lambda a=a, b=b: torch.bmm(a, b)) if count > 1 else (lambda a=a[0], b=b[0]: a @ b)
            med, low, power = time_call_or_graph(fn)
            traffic = (m * k + k * n + m * n) * count * eb
            rows.append(
                Row(
                    "gemm",
                    name,
                    m,
                    n,
                    k,
                    count,
                    dtype_name,
                    eb,
                    2.0 * m * n * k * count,
                    traffic,
                    med,
                    low,
                    repeats,
                    **power,
                )
            )
        for name, batch, c, h, w, kout, r, s, stride, pad in CONVS:
            if quick and name not in QUICK_CONVS:
                continue
            x = torch.randn(batch, c, h, w, device=device, dtype=dtype)
            weight = torch.randn(kout, c, r, s, device=device, dtype=dtype)
            p = (h + 2 * pad - r) // stride + 1
            q = (w + 2 * pad - s) // stride + 1
            med, low, power = time_call_or_graph(
                lambda x=x, weight=weight, stride=stride, pad=pad: torch.nn.functional.conv2d(
                    x, weight, stride=stride, padding=pad
                )
            )
            gm, gn, gk = batch * p * q, kout, c * r * s
            traffic = (x.numel() + weight.numel() + batch * kout * p * q) * eb
            rows.append(
                Row(
                    "conv", name, gm, gn, gk, 1, dtype_name, eb, 2.0 * gm * gn * gk, traffic, med, low, repeats, **power
                )
            )
        for name, bh, seq, d in ATTENTION:
            if quick and name not in QUICK_ATTENTION:
                continue
            kv = 1024 if seq == 1 else seq
            q_ = torch.randn(bh, seq, d, device=device, dtype=dtype)
            k_ = torch.randn(bh, kv, d, device=device, dtype=dtype)
            v_ = torch.randn(bh, kv, d, device=device, dtype=dtype)

            def attention(q_=q_, k_=k_, v_=v_, d=d):
                scores = torch.softmax((q_ @ k_.transpose(1, 2)) / d**0.5, dim=-1)
                return scores @ v_

            med, low, power = time_call_or_graph(attention)
            flops = 4.0 * bh * seq * kv * d + 5.0 * bh * seq * kv
            traffic = (q_.numel() + k_.numel() + v_.numel() + bh * seq * d) * eb
            rows.append(
                Row("attention", name, seq, kv, d, bh, dtype_name, eb, flops, traffic, med, low, repeats, **power)
            )
        for name, op, m, n in MEMORY_OPS:
            if quick and name not in QUICK_MEMORY_OPS:
                continue
            x = (
                torch.randn(m, n, device=device, dtype=dtype)
                if op != "gelu"
                else torch.randn(m, device=device, dtype=dtype)
            )
            kernel = {
                "softmax": lambda x=x: torch.softmax(x, dim=-1),
                "layernorm": lambda x=x, n=n: torch.nn.functional.layer_norm(x, (n,)),
                "gelu": lambda x=x: torch.nn.functional.gelu(x),
            }[op]
            med, low, power = time_call_or_graph(kernel)
            rows.append(
                Row(op, name, m, n, 0, 1, dtype_name, eb, 5.0 * m * n, 2.0 * m * n * eb, med, low, repeats, **power)
            )
    return rows, {**device_info(torch, device), "idle_w": repr(idle_w) if sampler else ""}


def write_csv(path: Path, rows: list[Row], info: dict[str, str], gpu: str, warmup: int, graph_calls: int = 0) -> Path:
    """The plain measurement format (``COLUMNS``): one row per timed call; ``method`` says how (an 'eager'
    method pays the host's per-call cost in ``hwmodels.gpu.calibrate``, a 'CUDA graph' one does not)."""
    timer = "CUDA events" if info["device"] == "cuda" else "wall clock around a synchronised call"
    source = f"tools/gpu_measure.py on {info['device_name']}, torch {info['torch']} {info['timestamp']}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            fields = asdict(row)
            if not row.power_samples:  # not sampled: blank, not a 0 W reading
                fields.update(power_w="", power_call_s="", power_samples="")
            method = (
                f"CUDA graph of {graph_calls} PyTorch calls, {timer} around each replay over {graph_calls}, "
                f"median of {row.repeats} replays after {warmup} warm-up calls"
                if graph_calls > 0
                else f"eager PyTorch call, {timer}, median of {row.repeats} after {warmup} warm-up"
            )
            writer.writerow(
                {
                    "gpu": gpu,
                    "precision": fields.pop("dtype"),
                    "latency_s": repr(fields.pop("median_s")),
                    "method": method,
                    "source": source,
                    **fields,
                    **info,
                }
            )
    return path


def fit_and_report(csv_path: Path, gpu: str, precision: str) -> None:
    """Fit the GPU model's tuning constants to the measured rows and print the error per op kind."""
    from hwmodels.gpu.calibrate import read_measurements
    from hwmodels.gpu.calibrate_report import evaluate
    from templates.gpu import GpuTemplate

    arch = GpuTemplate().instantiate({"gpu": gpu, "precision": precision})
    rows = [m for m in read_measurements(csv_path) if m.op in ("gemm", "conv", "softmax", "layernorm", "gelu")]
    report = evaluate(rows, arch, k=min(5, max(2, len(rows) // 4)))
    print(f"fit on {len(rows)} calls ({arch.display}, {precision}); mean absolute error per op kind:")
    for kind, error in report.cross_validated.items():
        print(
            f"  {kind:<10} uncalibrated {report.shipped.get(kind, float('nan')):6.1f} %   "
            f"cross-validated {error:6.1f} %"
        )
    print("store the constants with: tools/gpu_calibrate.py --csv", csv_path, "--gpu", gpu, "--write")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument(
        "--dtype", choices=("fp16", "bf16", "fp32"), default=None, help="default: fp16 on CUDA, fp32 on CPU"
    )
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a few small shapes only (seconds on a CPU)")
    parser.add_argument(
        "--graph-calls",
        type=int,
        default=0,
        metavar="N",
        help="CUDA only: time N calls captured in a CUDA graph (device time, no host cost); 0 = eager calls",
    )
    parser.add_argument(
        "--power", action="store_true", help="CUDA only: sample board power (NVML, nvidia-ml-py) for every call"
    )
    parser.add_argument("--power-seconds", type=float, default=2.0, help="back-to-back run per call with --power")
    parser.add_argument("--out", type=Path, default=Path("gpu_measure.csv"))
    parser.add_argument("--gpu", help="catalog GPU written in the gpu column (default: from the device name)")
    parser.add_argument(
        "--fit", metavar="GPU", help="fit hwmodels.gpu.calibrate for this catalog GPU on the measurement"
    )
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_measure: PyTorch is not installed (pip install torch)", file=sys.stderr)
        return 2
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu_measure: --device cuda but no CUDA device is available", file=sys.stderr)
        return 2
    dtype = args.dtype or ("fp16" if device == "cuda" else "fp32")
    if args.graph_calls > 0 and device != "cuda":
        print("gpu_measure: --graph-calls needs a CUDA device", file=sys.stderr)
        return 2
    sampler = None
    if args.power:
        nvml = load_nvml() if device == "cuda" else None
        if nvml is None:
            reason = "a CUDA device" if device != "cuda" else "NVML: pip install nvidia-ml-py"
            print(f"gpu_measure: --power needs {reason}", file=sys.stderr)
            return 2
        sampler = PowerSampler(nvml)
    rows, info = measure(
        device, dtype, args.warmup, args.repeats, args.quick, args.graph_calls, sampler, args.power_seconds
    )
    gpu = args.gpu or catalog_gpu(info["device_name"])
    path = write_csv(args.out, rows, info, gpu, args.warmup, args.graph_calls)
    print(f"{info['device_name']} ({device}), torch {info['torch']}, {dtype}: {len(rows)} shapes -> {path}")
    for r in rows:
        achieved = r.flops / r.median_s / 1e12
        print(f"  {r.op:<9} {r.name:<24} median {r.median_s * 1e6:11.1f} us  {achieved:8.3f} TFLOPS")
    if args.fit:
        fit_and_report(path, args.fit, dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
