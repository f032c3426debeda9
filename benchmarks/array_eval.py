"""Exact ResNet-50 design points per second: the systolic array path against the scalar path, in one run.

The array path (``hwmodels.systolic.arrays.SystolicArrayEvaluator``: points -> ``instantiate_columns`` ->
``evaluate_designs`` -> the flat metrics the store keeps) and the scalar path (``PointEvaluator``: one
point at a time, instantiate -> fold mapper -> ``SystolicModel``) evaluate points of the same grid
(rows, cols, dataflow, SRAM, DRAM rate, clock; the default ``shared`` DRAM, int8, fold mapper). The
scalar path runs on a sample (it is thousands of times slower) with cold caches; every sampled point's
array figures are checked equal to its scalar ones (1e-12 relative) before a rate is printed.

Target: >= 100,000 array points/s on 2 cores.

``--backend cupy|torch`` (with ``--device``, e.g. ``cuda``) runs the array path a second time with its GEMM
cost kernel on that array namespace (``hwmodels.array_backend``; the optional ``gpu`` extra), prints its rate
beside numpy's and the largest relative difference between the two over every metric of every point.

    python benchmarks/array_eval.py [--points 200000] [--scalar-points 200] [--chunk 4096]
                                    [--backend numpy|cupy|torch] [--device cuda]
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
    from hwmodels.systolic.arrays import ArrayMetrics

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
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.islice(itertools.product(*axes.values()), n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=200_000, help="array-path points (default 200,000)")
    parser.add_argument("--scalar-points", type=int, default=200, help="scalar-path points (default 200)")
    parser.add_argument("--chunk", type=int, default=4096, help="designs priced together (default 4096)")
    parser.add_argument("--backend", choices=BACKENDS, default="numpy", help="array namespace of a second run")
    parser.add_argument("--device", default=None, help="its device (torch: cpu, cuda, cuda:1; cupy: 0, 1)")
    args = parser.parse_args()
    from hwmodels.array_backend import array_backend  # the project after the arguments: --help stays quick

    try:
        backend = array_backend(args.backend, args.device)  # checked before the long numpy run
    except ValueError as error:
        parser.error(str(error))

    from dse.evaluate import PointEvaluator
    from dse.zoo import build
    from hwmodels.systolic import arrays
    from hwmodels.systolic.arrays import SystolicArrayEvaluator
    from hwmodels.systolic.model import clear_layer_cache

    graph = build("resnet50")
    fixed = {"precision": "int8", "tech": "asic-28nm"}
    points = grid_points(args.points)
    arrays.CHUNK_DESIGNS = args.chunk
    array_eval = SystolicArrayEvaluator(graph, fixed, chunk=args.chunk)
    SystolicArrayEvaluator(graph, fixed).evaluate_points(points[:64])  # imports and catalogs, not the rate

    start, cpu = time.perf_counter(), time.process_time()
    metrics, index = array_eval.evaluate_points(points)
    evaluated, array_cpu = time.perf_counter() - start, time.process_time() - cpu
    rows = SystolicArrayEvaluator.flat_rows(metrics)
    with_rows = time.perf_counter() - start
    assert len(index) == len(points)

    stride = max(1, len(points) // args.scalar_points)
    sample = list(range(0, len(points), stride))[: args.scalar_points]
    scalar = PointEvaluator(graph, "systolic", fixed=fixed)
    clear_layer_cache()
    start, cpu = time.perf_counter(), time.process_time()
    expected = [dict(scalar(points[i]).flat()) for i in sample]
    scalar_s, scalar_cpu = time.perf_counter() - start, time.process_time() - cpu
    worst = 0.0
    for i, want in zip(sample, expected):
        for name, value in want.items():
            got = rows[i][name]
            worst = max(worst, abs(got - value) / abs(value) if value else abs(got))
    assert worst <= 1e-12, f"array path differs from the scalar path by {worst:.3g} relative"

    backend_line = ""
    if args.backend != "numpy":
        on_backend = SystolicArrayEvaluator(graph, fixed, chunk=args.chunk, backend=backend)
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
    print(f"ResNet-50, systolic fold mapper, shared DRAM, int8: {len(points):,} grid points (chunk {args.chunk})")
    print(f"array path : {array_rate:12,.0f} points/s  ({evaluated:.2f} s; with flat metric rows {with_rows:.2f} s)")
    print(f"scalar path: {scalar_rate:12,.0f} points/s  ({len(sample)} points, cold layer cache, {scalar_s:.2f} s)")
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
