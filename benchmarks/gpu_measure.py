"""Time GEMM, conv and attention shapes with PyTorch on the available device and write a CSV.

Why: the GPU model's achievable fractions and launch overhead are assumptions until they are fitted to
measured kernels. This script measures on CUDA when present and on the CPU otherwise (so it always runs),
with warm-up, several repeats and the median, and records the device name and library versions in every
row. ``--fit GPU`` then fits ``hwmodels.gpu.calibrate`` (fractions, launch overhead and a gradient-boosting residual
model) on part of the GEMM/conv shapes and prints the error on the held-out ones.

    .venv/bin/python benchmarks/gpu_measure.py --out hwmodels/data/gpu_measured_h100.csv --fit h100_sxm
    .venv/bin/python benchmarks/gpu_measure.py --device cpu --quick --out /tmp/cpu.csv

Every GEMM-shaped row gives the GEMM the model sees (conv: M = N*P*Q, N = K, K = C*R*S; batched matmul:
``count`` independent GEMMs) so the CSV feeds ``hwmodels.gpu.read_measurements`` directly.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COLUMNS = (
    "kind",
    "name",
    "M",
    "N",
    "K",
    "count",
    "dtype",
    "elem_bytes",
    "flops",
    "bytes",
    "median_s",
    "min_s",
    "repeats",
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


@dataclass
class Row:
    kind: str
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


def time_call(fn: Callable[[], object], sync: Callable[[], None], warmup: int, repeats: int) -> tuple[float, float]:
    """(median, min) seconds of ``fn`` over ``repeats`` runs after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def measure(device: str, dtype_name: str, warmup: int, repeats: int, quick: bool) -> tuple[list[Row], dict[str, str]]:
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    eb = torch.tensor([], dtype=dtype).element_size()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.manual_seed(0)
    rows: list[Row] = []
    with torch.inference_mode():
        for name, m, n, k, count in GEMMS:
            if quick and name not in QUICK_GEMMS:
                continue
            a = torch.randn(count, m, k, device=device, dtype=dtype)
            b = torch.randn(count, k, n, device=device, dtype=dtype)
            fn = (lambda a=a, b=b: torch.bmm(a, b)) if count > 1 else (lambda a=a[0], b=b[0]: a @ b)
            med, low = time_call(fn, sync, warmup, repeats)
            traffic = (m * k + k * n + m * n) * count * eb
            rows.append(
                Row("gemm", name, m, n, k, count, dtype_name, eb, 2.0 * m * n * k * count, traffic, med, low, repeats)
            )
        for name, batch, c, h, w, kout, r, s, stride, pad in CONVS:
            if quick and name not in QUICK_CONVS:
                continue
            x = torch.randn(batch, c, h, w, device=device, dtype=dtype)
            weight = torch.randn(kout, c, r, s, device=device, dtype=dtype)
            p = (h + 2 * pad - r) // stride + 1
            q = (w + 2 * pad - s) // stride + 1
            med, low = time_call(
                lambda x=x, weight=weight, stride=stride, pad=pad: torch.nn.functional.conv2d(
                    x, weight, stride=stride, padding=pad
                ),
                sync,
                warmup,
                repeats,
            )
            gm, gn, gk = batch * p * q, kout, c * r * s
            traffic = (x.numel() + weight.numel() + batch * kout * p * q) * eb
            rows.append(
                Row("conv", name, gm, gn, gk, 1, dtype_name, eb, 2.0 * gm * gn * gk, traffic, med, low, repeats)
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

            med, low = time_call(attention, sync, warmup, repeats)
            flops = 4.0 * bh * seq * kv * d + 5.0 * bh * seq * kv
            traffic = (q_.numel() + k_.numel() + v_.numel() + bh * seq * d) * eb
            rows.append(Row("attention", name, seq, kv, d, bh, dtype_name, eb, flops, traffic, med, low, repeats))
    return rows, device_info(torch, device)


def write_csv(path: Path, rows: list[Row], info: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({**asdict(row), **info})
    return path


def fit_and_report(csv_path: Path, gpu: str, precision: str) -> None:
    """Fit the GPU model to the measured GEMM/conv rows and print held-out errors."""
    from hwmodels.gpu.calibrate import fit_calibration, read_measurements
    from templates.gpu import GpuTemplate

    arch = GpuTemplate().instantiate({"gpu": gpu, "precision": precision})
    measurements = read_measurements(csv_path)
    result = fit_calibration(measurements, arch)
    print(f"fit on {result.n_fit} shapes, held out {result.n_heldout} ({arch.display}, {precision})")
    print(
        f"  fitted compute_fraction={result.compute_fraction:.3f} bandwidth_fraction={result.bandwidth_fraction:.3f} "
        f"launch_us={result.launch_us:.2f}"
    )
    print(f"  MAPE on fitted shapes (model): {result.fit_mape:.1f} %")
    print(
        f"  MAPE on held-out shapes: model {result.heldout_mape_model:.1f} %, "
        f"model+GBM {result.heldout_mape_boosted:.1f} %"
    )
    for r in result.heldout:
        print(f"    {r['name']:<24} measured {r['measured_s'] * 1e6:10.1f} us  model {r['model_s'] * 1e6:10.1f} us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument(
        "--dtype", choices=("fp16", "bf16", "fp32"), default=None, help="default: fp16 on CUDA, fp32 on CPU"
    )
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a few small shapes only (seconds on a CPU)")
    parser.add_argument("--out", type=Path, default=Path("gpu_measure.csv"))
    parser.add_argument("--fit", metavar="GPU", help="fit hwmodels.gpu.calibrate for this catalog GPU on the measurement")
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
    rows, info = measure(device, dtype, args.warmup, args.repeats, args.quick)
    path = write_csv(args.out, rows, info)
    print(f"{info['device_name']} ({device}), torch {info['torch']}, {dtype}: {len(rows)} shapes -> {path}")
    for r in rows:
        achieved = r.flops / r.median_s / 1e12
        print(f"  {r.kind:<9} {r.name:<24} median {r.median_s * 1e6:11.1f} us  {achieved:8.3f} TFLOPS")
    if args.fit:
        fit_and_report(path, args.fit, dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
