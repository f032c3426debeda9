"""Exact design points per second: a family's array path against its scalar path, in one run.

The array path (``hwmodels.systolic.arrays.SystolicArrayEvaluator``: points -> ``instantiate_columns`` ->
``evaluate_designs`` -> the flat metrics the store keeps) and the scalar path (``PointEvaluator``: one
point at a time, instantiate -> fold mapper -> ``SystolicModel``) evaluate points of the same grid
(rows, cols, dataflow, SRAM, DRAM rate, clock; the default ``shared`` DRAM, int8, fold mapper). The
scalar path runs on a sample (it is thousands of times slower) with cold caches; every sampled point's
array figures are checked equal to its scalar ones (1e-12 relative) before a rate is printed.

Target: >= 100,000 array points/s on 2 cores.

``--template fpga_dataflow`` times ``hwmodels.fpga.arrays`` on a grid of the jet-tagging MLP (ReuseFactor,
strategy, IO type, widths, clock, part, a per-layer ReuseFactor); ``--template gpu`` times ``hwmodels.gpu.arrays``
on a grid of ResNet-50 at fp16 over catalog GPUs and their numbers (SMs, clock, bandwidth, shared memory, TDP,
execution). Same checks, same figures.

``--backend cupy|torch`` (with ``--device``, e.g. ``cuda``; systolic) runs the array path a second time with its
GEMM cost kernel on that array namespace (``hwmodels.array_backend``; the optional ``gpu`` extra), prints its rate
beside numpy's and the largest relative difference between the two over every metric of every point.

    python benchmarks/array_eval.py [--template systolic|fpga_dataflow|gpu] [--points N] [--scalar-points N]
                                    [--chunk 4096] [--backend numpy|cupy|torch] [--device cuda]
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hwmodels.base import ArrayMetrics

BACKENDS = ("numpy", "cupy", "torch")  # hwmodels.array_backend.BACKENDS, without importing the project here


def grid_points(n: int) -> list[dict]:
    """The first ``n`` points of a 7-axis ResNet-50 systolic grid (1,008,000 points in all)."""
    axes = {
        "rows": [4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
        "cols": [4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
        "dataflow": ["ws", "os", "is"],
        "sram_kib": [48.0, 96.0, 192.0, 384.0, 768.0, 1536.0, 3072.0],
        "dram_gbps": [6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2],
        "freq_mhz": [400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0, 1100.0, 1200.0, 1300.0, 1400.0, 1500.0],
        "vector_lanes": [0, 16, 64, 256, 1024],
    }
    return _product(axes, n)


def fpga_points(n: int) -> list[dict]:
    """The first ``n`` points of an 8-axis jet-MLP fpga_dataflow grid (276,480 points in all)."""
    axes = {
        "part": ["xcu250", "xcvu9p", "xc7z020"],
        "io_type": ["io_parallel", "io_stream"],
        "strategy": ["latency", "resource"],
        "width": [8, 10, 12, 14, 16, 18],
        "weight_width": [6, 8, 10, 12, 14, 16],
        "layer0_reuse_factor": [1, 2, 4, 8, 16, 32, 64, 128],
        "reuse_factor": [1, 2, 4, 8, 16, 32, 64, 128],
        "clock_period_ns": [2.5, 3.0, 3.3, 4.0, 5.0, 6.0, 8.0, 10.0, 12.5, 15.0],
    }
    return _product(axes, n)


def gpu_points(n: int) -> list[dict]:
    """The first ``n`` points of a 7-axis ResNet-50 gpu grid (17,280 points in all)."""
    axes = {
        "gpu": ["h100_sxm", "a100_80gb", "l40s"],
        "execution": ["graph", "eager"],
        "sms": [48, 64, 80, 96, 108, 120, 132, 144],
        "clock_mhz": [1200.0, 1410.0, 1600.0, 1755.0, 1980.0],
        "mem_gbps": [864.0, 1555.0, 2039.0, 3350.0, 4800.0, 8000.0],
        "smem_kib_per_sm": [64.0, 100.0, 164.0, 228.0],
        "tdp_w": [300.0, 400.0, 700.0],
    }
    return _product(axes, n)


def _product(axes: dict[str, list], n: int) -> list[dict]:
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.islice(itertools.product(*axes.values()), n)]


# template -> (workload model, its build options, fixed parameters, grid, default array points, what it is)
BENCHES = {
    "systolic": ("resnet50", {}, {"precision": "int8", "tech": "asic-28nm"}, grid_points, 200_000, "fold mapper, int8"),
    "fpga_dataflow": ("jet_mlp", {}, {"integer": 4}, fpga_points, 200_000, "hls4ml mapper, ap_fixed<W,4>"),
    "gpu": ("resnet50", {"precision": "fp16"}, {"precision": "fp16"}, gpu_points, 17_280, "tile mapper, fp16"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", choices=sorted(BENCHES), default="systolic", help="family (default systolic)")
    parser.add_argument("--points", type=int, default=None, help="array-path points (default per template)")
    parser.add_argument("--scalar-points", type=int, default=200, help="scalar-path points (default 200)")
    parser.add_argument("--chunk", type=int, default=4096, help="systolic: designs priced together (default 4096)")
    parser.add_argument("--backend", choices=BACKENDS, default="numpy", help="systolic: array namespace of a 2nd run")
    parser.add_argument("--device", default=None, help="its device (torch: cpu, cuda, cuda:1; cupy: 0, 1)")
    args = parser.parse_args()
    from hwmodels.array_backend import array_backend  # the project after the arguments: --help stays quick

    try:
        backend = array_backend(args.backend, args.device)  # checked before the long numpy run
    except ValueError as error:
        parser.error(str(error))
    if args.backend != "numpy" and args.template != "systolic":
        parser.error("--backend runs the systolic array path's GEMM kernel: use it with --template systolic")

    from dse.evaluate import PointEvaluator
    from dse.registry import family
    from dse.zoo import build
    from hwmodels.systolic.model import clear_layer_cache
    from mappers.gpu import best_tile

    model, options, fixed, grid, default_points, what = BENCHES[args.template]
    graph = build(model, **options)
    points = grid(args.points or default_points)
    evaluator_class = family(args.template).array_evaluator
    options = {"chunk": args.chunk} if args.template == "systolic" else {}
    array_eval = evaluator_class(graph, fixed, **options)
    evaluator_class(graph, fixed).evaluate_points(points[:64])  # imports and catalogs, not the rate

    start, cpu = time.perf_counter(), time.process_time()
    metrics, index = array_eval.evaluate_points(points)
    evaluated, array_cpu = time.perf_counter() - start, time.process_time() - cpu
    rows = array_eval.flat_rows(metrics)
    with_rows = time.perf_counter() - start
    assert len(index) == len(points)

    stride = max(1, len(points) // args.scalar_points)
    sample = list(range(0, len(points), stride))[: args.scalar_points]
    scalar = PointEvaluator(graph, args.template, fixed=fixed)
    clear_layer_cache()
    best_tile.cache_clear()
    start, cpu = time.perf_counter(), time.process_time()
    expected = [dict(scalar(points[i]).flat()) for i in sample]
    scalar_s, scalar_cpu = time.perf_counter() - start, time.process_time() - cpu
    worst = 0.0
    for i, want in zip(sample, expected):
        assert list(rows[i]) == list(want), (list(rows[i]), list(want))
        for name, value in want.items():
            got = rows[i][name]
            worst = max(worst, abs(got - value) / abs(value) if value else abs(got))
    assert worst <= 1e-12, f"array path differs from the scalar path by {worst:.3g} relative"

    backend_line = ""
    if args.backend != "numpy":
        on_backend = evaluator_class(graph, fixed, chunk=args.chunk, backend=backend)
        on_backend.evaluate_points(points[:64])  # the namespace's import and first kernels, not the rate
        backend.synchronize()
        start = time.perf_counter()
        got, got_index = on_backend.evaluate_points(points)
        backend.synchronize()
        backend_s = time.perf_counter() - start
        assert list(got_index) == list(index)
        differs = max_relative_difference(got, metrics)
        backend_line = (
            f"{args.backend + ' ' + str(args.device or ''):11s}: {len(points) / backend_s:12,.0f} points/s  "
            f"({backend_s:.2f} s; {len(points) / evaluated / (len(points) / backend_s):.2f}x numpy's time);  "
            f"largest relative difference to numpy {differs:.2e}"
        )

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    array_rate = len(points) / evaluated
    scalar_rate = len(sample) / scalar_s
    print(f"{graph.name}, {args.template} ({what}): {len(points):,} grid points")
    print(f"array path : {array_rate:12,.0f} points/s  ({evaluated:.2f} s; with flat metric rows {with_rows:.2f} s)")
    print(f"scalar path: {scalar_rate:12,.0f} points/s  ({len(sample)} points, cold caches, {scalar_s:.2f} s)")
    if backend_line:
        print(backend_line)
    print(f"ratio      : {array_rate / scalar_rate:12,.0f} x;  worst relative difference {worst:.2e} on the sample")
    print(  # on a loaded machine the wall rates fall with the load; the CPU-time rates show the code's own cost
        f"per CPU s  : array {len(points) / array_cpu:,.0f} points/s, scalar {len(sample) / scalar_cpu:,.0f} points/s"
    )
    print(f"load avg   : {os.getloadavg()[0]:12.1f} over the last minute on {os.cpu_count()} cores")
    print(f"peak RSS   : {peak_mib:,.0f} MiB")


def max_relative_difference(got: ArrayMetrics, want: ArrayMetrics) -> float:
    """The largest relative difference between two evaluations over every metric column of every design."""
    worst = 0.0
    for part in ("values", "energy_breakdown_pj", "area_breakdown_mm2"):
        for name, expected in getattr(want, part).items():
            a = np.asarray(getattr(got, part)[name], dtype=float)
            b = np.broadcast_to(np.asarray(expected, dtype=float), a.shape)
            scale = np.where(b != 0, np.abs(b), 1.0)
            worst = max(worst, float(np.max(np.abs(a - b) / scale, initial=0.0)))
    return worst


if __name__ == "__main__":
    main()
