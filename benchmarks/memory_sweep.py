"""Peak memory of a sweep against the number of points it evaluates, and of refusing a huge grid.

Each measurement runs in a fresh process (``--child``) so its peak RSS (``ru_maxrss``) is its own:
  * the refusal of the issue-19 grid (5 x 10^15 points, no budget) through ``dse explore``;
  * random sweeps of N points (serial executor, the jet-tagging MLP on a systolic array: a real
    evaluation of about a millisecond) through the explorer's own loop (strategy -> store -> tell),
    stopping before the output files, whose frames are O(N) by nature.
The slope (bytes per point) between the smallest and the largest sweep is what "flat" is judged by.

    python benchmarks/memory_sweep.py                   # 1k, 20k and 100k points (about 6 minutes)
    python benchmarks/memory_sweep.py --points 1000 10000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dse.cli import main as dse_main
from dse.context import RunContext
from dse.explore import run_sweep
from dse.flat import FlatMetricsEvaluator
from dse.session import build_evaluator
from dse.spec import parse_spec
from dse.store import Store

SWEEP_SPEC = """
name: memory-sweep
workload: {{model: jet_mlp, batch: 1}}
template:
  kind: systolic
  params:
    rows: {{range: [2, 512]}}
    cols: {{range: [2, 512]}}
    dataflow: [ws, os, is]
    sram_kib: {{range: [16, 8192]}}
objectives: [min latency_ms, min energy_mj]
search: {{strategy: random, budget: {budget}, seed: 0}}
"""
HUGE_GRID_SPEC = """
name: huge-grid
workload: {model: resnet18, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: {range: [1, 4096]}
    cols: {range: [1, 4096]}
    dataflow: [ws, os, is]
    sram_kib: {range: [3, 100000], step: 1}
    dram_gbps: {range: [1, 1000], step: 1}
search: {strategy: grid}
"""


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kibibytes


def child_sweep(points: int) -> dict:
    spec = parse_spec(SWEEP_SPEC.format(budget=points))
    graph, evaluator = build_evaluator(spec)
    context = RunContext.of(spec, graph=graph)
    baseline = peak_rss_mib()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Store.open(folder) as store:
        store.start_run(spec.name, "", context.fingerprint)
        run_sweep(context, store, FlatMetricsEvaluator(evaluator), "serial", None, False)
        stored = store.count()
    return {
        "points": points,
        "stored": stored,
        "seconds": time.perf_counter() - started,
        "rss_before_sweep_mib": baseline,
        "peak_rss_mib": peak_rss_mib(),
    }


def child_refusal() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "huge.yaml"
        spec.write_text(HUGE_GRID_SPEC)
        started = time.perf_counter()
        code = dse_main(["explore", str(spec), "-o", str(Path(folder) / "run"), "-q"])
        return {"exit": code, "seconds": time.perf_counter() - started, "peak_rss_mib": peak_rss_mib()}


def measure(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, nargs="+", default=[1000, 20_000, 100_000])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = child_refusal() if args.child[0] == "refusal" else child_sweep(int(args.child[0]))
        print(json.dumps(result))
        return
    refusal = measure(["refusal"])
    print(
        f"huge-grid refusal (5,033,064,136,704,000 points, no budget): exit {refusal['exit']}, "
        f"{refusal['seconds']:.2f} s, peak RSS {refusal['peak_rss_mib']:.0f} MiB (the whole process, imports included)"
    )
    rows = [measure([str(n)]) for n in sorted(args.points)]
    print(f"{'points':>9} {'stored':>9} {'seconds':>9} {'RSS before sweep MiB':>21} {'peak RSS MiB':>13}")
    for r in rows:
        print(
            f"{r['points']:>9,} {r['stored']:>9,} {r['seconds']:>9.1f} "
            f"{r['rss_before_sweep_mib']:>21.1f} {r['peak_rss_mib']:>13.1f}"
        )
    pairs = list(zip(rows, rows[1:]))
    if len(pairs) > 1:
        pairs.append((rows[0], rows[-1]))
    for low, high in pairs:  # early on the model's bounded layer cache (50,000 layers) fills; then the slope is flat
        slope = (high["peak_rss_mib"] - low["peak_rss_mib"]) * 2**20 / max(high["points"] - low["points"], 1)
        print(
            f"slope {low['points']:,} -> {high['points']:,} points: {slope:.0f} bytes of peak RSS per evaluated point "
            f"({high['peak_rss_mib'] - low['peak_rss_mib']:+.1f} MiB)"
        )


if __name__ == "__main__":
    main()
