"""CP-SAT network scheduler vs the greedy baseline (issue 3 figures).

For ResNet-50, MobileNetV1, one BERT-base layer and one GPT-2 (small) decode step at 256 KiB, 1 MiB and
4 MiB of on-chip SRAM (the systolic template's ``sram_kib``) in both memory organisations of the template
(``scratchpad=split``: SCALE-Sim's ifmap/filter/ofmap SRAMs of a third each, resident tensors in the ifmap
SRAM, the only one feeding the array's input edge; ``scratchpad=unified``: one banked scratchpad that every
array port and the DMA reach, tiles and resident tensors sharing its address space), a 32x32
output-stationary int8 array: candidate enumeration time (cold cache), CP-SAT solve time (2 workers),
status and gap, DRAM bytes and non-compulsory DRAM bytes (total minus weights, graph inputs and outputs
once) against greedy on the same arch and, for unified, against greedy on the split arch of the same
size. Every schedule is checked by the independent validator. Targets: ResNet-50 proven OPTIMAL in < 1 s;
>= 50 % less non-compulsory traffic than greedy on ResNet-50 at 1 MiB.

Then cpsat's per-point cost on ResNet-50 in a design-space sweep (array shapes x SRAM sizes, every point
new to the mapper): the first point pays the cold tile grids, later points only what their array shape
or SRAM size changes.

    python benchmarks/cpsat_bench.py [--objective dram] [--workers 2] [--time-limit 30] [--skip-table]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dse.zoo import build
from mappers.systolic.check import check_schedule
from mappers.systolic.cpsat import CpSatMapper, clear_schedule_cache, solve
from mappers.systolic.greedy import greedy_schedule
from mappers.systolic.problem import build_problem, to_mapping
from mappers.systolic.tiling import clear_candidate_cache
from templates.systolic import SystolicTemplate

WORKLOADS = {
    "resnet50": {},
    "mobilenet_v1": {},
    "bert_base (1 layer)": {"name": "bert_base", "num_layers": 1},
    "gpt2 decode step": {"name": "gpt2", "phase": "decode"},
}
SIZES_KIB = (256, 1024, 4096)
ORGANISATIONS = ("split", "unified")
SWEEP_ARRAYS = ((16, 16), (32, 32), (64, 64), (32, 16))


def arch_of(kib: int, scratchpad: str, rows: int = 32, cols: int = 32):
    point = {"rows": rows, "cols": cols, "dataflow": "os", "sram_kib": kib, "scratchpad": scratchpad}
    return SystolicTemplate().instantiate(point)


def table(objective: str, workers: int, time_limit: float) -> None:
    header = (
        f"{'workload':<20} {'SRAM':>6} {'memory':<8} {'cand s':>7} {'solve s':>8} {'status':<9} {'gap':>6} "
        f"{'DRAM MB':>9} {'greedy':>9} {'nc MB':>8} {'greedy':>8} {'nc cut':>7} {'vs split':>8}  resident/spilled"
    )
    print(f"objective={objective}, workers={workers}, 32x32 os int8 array")
    print(header)
    for label, opts in WORKLOADS.items():
        opts = dict(opts)
        graph = build(opts.pop("name", label), **opts)
        for kib in SIZES_KIB:
            split_greedy_nc = None
            for scratchpad in ORGANISATIONS:
                arch = arch_of(kib, scratchpad)
                clear_candidate_cache()
                clear_schedule_cache()
                t0 = time.perf_counter()
                problem = build_problem(graph, arch, objective)
                t_cand = time.perf_counter() - t0
                schedule = solve(problem, time_limit, workers)
                mapping = to_mapping(problem, schedule, "cpsat")
                greedy = to_mapping(problem, greedy_schedule(problem), "greedy")
                check_schedule(mapping)
                check_schedule(greedy)
                s, g = mapping.solver, greedy.solver
                nc, g_nc = s["noncompulsory_bytes"], g["noncompulsory_bytes"]
                if scratchpad == "split":
                    split_greedy_nc = g_nc
                cut = 1 - nc / g_nc if g_nc else 0.0
                vs_split = f"{1 - nc / split_greedy_nc:.1%}" if split_greedy_nc else "-"
                print(
                    f"{label:<20} {kib:>5}K {scratchpad:<8} {t_cand:>7.2f} {s['seconds']:>8.3f} {s['status']:<9} "
                    f"{s['gap']:>6.1%} {s['dram_bytes'] / 1e6:>9.2f} {g['dram_bytes'] / 1e6:>9.2f} "
                    f"{nc / 1e6:>8.2f} {g_nc / 1e6:>8.2f} {cut:>7.1%} {vs_split:>8}  "
                    f"{len(s['resident'])}/{len(s['spills'])}"
                )


def per_point_cost(workers: int, time_limit: float) -> None:
    """cpsat's time per design point on ResNet-50 over a sweep where every point is new to the mapper."""
    graph = build("resnet50")
    clear_candidate_cache()
    clear_schedule_cache()
    mapper = CpSatMapper(time_limit_s=time_limit, workers=workers)
    times = []
    for rows, cols in SWEEP_ARRAYS:
        for kib in SIZES_KIB:
            arch = arch_of(kib, "split", rows, cols)
            t0 = time.perf_counter()
            mapping = mapper.map(graph, arch)
            times.append(time.perf_counter() - t0)
            check_schedule(mapping)
    rest = times[1:]
    print(
        f"\ncpsat per-point cost, ResNet-50, {len(times)} new points ({len(SWEEP_ARRAYS)} array shapes x "
        f"{len(SIZES_KIB)} SRAM sizes, split, dram objective): first point {times[0]:.2f} s, later points "
        f"median {statistics.median(rest):.2f} s (min {min(rest):.2f}, max {max(rest):.2f}), "
        f"sweep total {sum(times):.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objective", default="dram", choices=("dram", "latency", "energy"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--skip-table", action="store_true", help="only the per-point cost sweep")
    args = ap.parse_args()
    if not args.skip_table:
        table(args.objective, args.workers, args.time_limit)
    per_point_cost(args.workers, args.time_limit)


if __name__ == "__main__":
    main()
