"""Evaluation rate: full ResNet-50 networks per second over the systolic space, default mapper.

Two figures, both printed:

* the raw evaluator rate: serial ``PointEvaluator`` calls in one fresh process, first over
  points it has never seen (cold caches), then over the same points again (warm caches);
* the explorer rate: ``dse.explore.explore`` with the local process pool (``--workers``,
  default 2) on a grid of the space, in a fresh temporary run directory, split into the
  sweep (propose, evaluate, commit to SQLite) and the finish (frames, files, report).

Target: >= 100 full-network points/s on 2 cores.

    python benchmarks/eval_rate.py [--workers 2] [--raw-points 200]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

# dse is imported inside the functions: spawned pool workers re-import this script, and
# should pay for what a worker of the `dse` command pays for, not for the explorer's imports.

SPEC = """
name: resnet50-systolic-rate
workload: {model: resnet50, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [8, 16, 32, 64, 128]
    cols: [8, 16, 32, 64, 128]
    dataflow: [ws, os, is]
    sram_kib: {log_range: [64, 4096]}
    dram_gbps: 25.6
    freq_mhz: 800
tech: asic-28nm
constraints: {area_mm2: {max: 8}, power_w: {max: 1.5}}
objectives: [min latency_ms, min energy_mj, min area_mm2]
search: {strategy: grid, seed: 0}
"""


def raw_rates(points: int, queue: multiprocessing.Queue) -> None:
    """In a fresh process: serial evaluator rate over unseen points, then over the same points again."""
    from dse.session import build_evaluator
    from dse.spec import parse_spec

    spec = parse_spec(SPEC, "eval_rate.yaml")
    space = spec.design_space()
    sample = space.sample(points, seed=1)
    graph, evaluator = build_evaluator(spec)
    rates = []
    for _ in ("cold", "warm"):
        start = time.perf_counter()
        for point in sample:
            evaluator(point)
        rates.append(len(sample) / (time.perf_counter() - start))
    queue.put((len(graph.ops), evaluator.mapper_name, rates[0], rates[1]))


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    from dse.explore import explore
    from dse.session import build_evaluator
    from dse.spec import parse_spec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="local process-pool workers (default 2)")
    ap.add_argument("--raw-points", type=int, default=200, help="points for the serial evaluator rate")
    args = ap.parse_args()

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=raw_rates, args=(args.raw_points, queue))
    child.start()
    ops, mapper, cold, warm = queue.get()
    child.join()
    print(f"ResNet-50 ({ops} ops) on systolic, mapper {mapper!r}")
    rates = f"cold {cold:7.1f} points/s, warm {warm:7.1f} points/s"
    print(f"raw evaluator, serial, 1 core, {args.raw_points} points: {rates}")

    spec = parse_spec(SPEC, "eval_rate.yaml")
    _graph, evaluator = build_evaluator(spec)
    with tempfile.TemporaryDirectory(prefix="dse-eval-rate-") as tmp:
        run_dir = Path(tmp) / "run"
        workers_cpu, main_cpu = children_cpu_seconds(), time.process_time()
        result = explore(spec, run_dir, evaluator, executor="local", workers=args.workers, progress=False)
        workers_cpu, main_cpu = children_cpu_seconds() - workers_cpu, time.process_time() - main_cpu
        n = len(result.points)
        sweep_s = result.sweep_seconds
        print(
            f"explorer, local pool, {args.workers} workers, grid of {n} points "
            f"({result.evaluated} evaluated, {result.failed} failed):"
        )
        print(f"  sweep (propose + evaluate + store): {sweep_s:6.2f} s  {n / sweep_s:7.1f} points/s")
        print(f"  finish (frames, files, report):     {result.seconds - sweep_s:6.2f} s")
        print(f"  end to end:                         {result.seconds:6.2f} s  {n / result.seconds:7.1f} points/s")
        cpu_per_point = (workers_cpu + main_cpu) / n
        print(
            f"  CPU per point: workers {1e3 * workers_cpu / n:.2f} ms (incl. their start-up), explorer process "
            f"{1e3 * main_cpu / n:.2f} ms (incl. finish); {args.workers} idle cores would sustain "
            f"{args.workers / cpu_per_point:.1f} points/s end to end"
        )
        resumed = explore(spec, run_dir, evaluator, executor="local", workers=args.workers, progress=False)
        print(
            f"  resume of the finished run: {resumed.reused} answered from the store, {resumed.evaluated} evaluated, "
            f"{resumed.seconds:.2f} s"
        )
    print("target: >= 100 full-network points/s on 2 cores")


if __name__ == "__main__":
    main()
