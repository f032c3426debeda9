"""A 1,008,000-point ResNet-50 systolic grid explored end to end: evaluate, store, front, files, report.

``dse explore``'s own path (``dse.evaluators.prepare_run`` -> ``dse.explore.explore``): a grid sweep of the
systolic family runs as ``dse.column_sweep.ColumnSweep``, 32,768 points at a time as columns (keys, one look-up,
one array evaluation by ``dse.array_executor.ArrayExecutor``, one stored chunk in one transaction), then writes
points.parquet/csv, the front, the hypervolume and the HTML report. A second run in the same directory must answer
every point from the store.
Prints wall time (sweep and finish apart), peak memory and the re-run's counts.

Targets: the whole grid in <= 120 s with peak memory <= 2 GiB on 2 cores.

    python benchmarks/million_grid.py [--points 1008000] [--keep DIR] [--executor local --workers 2 --arrays]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

SPEC = """
name: resnet50-million-grid
workload: {model: resnet50, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [4, 8, 12, 16, 24, 32, 48, 64, 96, 128]
    cols: [4, 8, 12, 16, 24, 32, 48, 64, 96, 128]
    dataflow: [ws, os, is]
    sram_kib: [48, 96, 192, 384, 768, 1536, 3072]
    dram_gbps: [6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2]
    freq_mhz: [400, 500, 600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400, 1500]
    vector_lanes: [0, 16, 64, 256, 1024]
tech: asic-28nm
constraints: {area_mm2: {max: 20}}
objectives: [min latency_ms, min energy_mj, min area_mm2]
search: {strategy: grid, seed: 0, budget: BUDGET}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=1_008_000, help="first N grid points (default: all)")
    parser.add_argument("--keep", type=Path, default=None, help="run directory to keep (default: a temporary one)")
    parser.add_argument("--executor", default=None, help="local | dask | tcp://HOST:PORT (default: none)")
    parser.add_argument("--workers", type=int, default=None, help="the executor's workers (default: all cores)")
    parser.add_argument("--arrays", action="store_true", help="the array evaluation on the executor's workers")
    args = parser.parse_args()
    run = {"executor": args.executor, "workers": args.workers, "arrays": args.arrays}

    from dse.evaluators import prepare_run
    from dse.explore import explore
    from dse.spec import parse_spec

    spec = parse_spec(SPEC.replace("BUDGET", str(args.points)), "million_grid.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "run"
        start = time.perf_counter()
        context, evaluation = prepare_run(spec)
        first = explore(spec, out, evaluation, progress=False, context=context, **run)
        wall = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        again = explore(spec, out, evaluation, progress=False, context=context, **run)
        rerun = time.perf_counter() - start
        report_mb = first.report.stat().st_size / 1e6 if first.report else 0.0
    where = "array evaluation in process"
    if args.executor:
        path = "array evaluation" if args.arrays else "point by point"
        where = f"{path} on {args.executor}, {args.workers or 'all'} workers"
    print(f"ResNet-50 systolic grid, {args.points:,} points ({where}, grid strategy)")
    finish = first.seconds - first.sweep_seconds
    print(f"first run : {wall:8.1f} s wall (sweep {first.sweep_seconds:.1f} s, finish {finish:.1f} s)")
    print(f"            {first.evaluated:,} evaluated, {first.failed:,} failed, front {len(first.pareto):,} points")
    print(f"report    : {report_mb:8.1f} MB")
    print(f"load avg  : {os.getloadavg()[0]:8.1f} over the last minute on {os.cpu_count()} cores")
    print(f"peak RSS  : {peak_mib:8,.0f} MiB")
    print(f"re-run    : {rerun:8.1f} s wall, {again.reused:,} answered from the store, {again.evaluated:,} evaluated")


if __name__ == "__main__":
    main()
