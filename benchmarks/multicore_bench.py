"""Multicore CP-SAT scheduling figures: ResNet-18 and MobileNetV1 on 4 heterogeneous cores.

Prints, per network: CP-SAT objective (the throughput objective: pipelined period, then makespan) against
its hint (the seed schedules after the local search, the surrogates' closed form), status, gap and solve time
for the latency and throughput objectives; latency
and pipelined throughput against the greedy round robin and against the best single core with the same
total MAC count (every rows x cols factorisation near square and every dataflow, same total SRAM, same
DRAM); then layer fusion (at most 8 or 16 row bands per layer) against layer by layer on the same cores
(DRAM traffic, latency, solve). Times are wall-clock seconds of the whole mapper call (problem build,
hint, CP-SAT), one worker.

    .venv/bin/python benchmarks/multicore_bench.py [--time-limit 6] [--nets resnet18 mobilenet_v1]
"""

from __future__ import annotations

import argparse
import time

from dse.evaluate import PointEvaluator
from dse.zoo import build

MIX = "32x32:ws:256+16x64:os:256+64x16:is:256+16x16:ws:128"
SINGLE_SHAPES = ((52, 64), (64, 52), (26, 128), (128, 26))  # 3328 MACs = 1024 + 1024 + 1024 + 256
COMMON = {"interconnect": "mesh", "link_gbps": 32.0, "dram_gbps": 25.6, "freq_mhz": 800.0}


def run(graph, point, mapper, options):
    """(mapping, metrics, seconds the mapper took) through the evaluator's stages, the mapper alone timed."""
    evaluator = PointEvaluator(graph, "multicore", mapper, fixed=COMMON, mapper_options=options)
    arch = evaluator.arch(point)
    started = time.perf_counter()
    mapping = evaluator.mapper.map(graph, arch)
    seconds = time.perf_counter() - started
    return mapping, evaluator.hwmodel.evaluate(mapping, arch), seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=6.0, help="CP-SAT deterministic seconds")
    ap.add_argument("--nets", nargs="+", default=["resnet18", "mobilenet_v1"])
    args = ap.parse_args()
    print(f"cores: {MIX}; {COMMON}; CP-SAT one worker, time limit {args.time_limit} s\n")
    for net in args.nets:
        graph = build(net)
        _, greedy, _ = run(graph, {"cores": MIX}, "greedy", {})
        singles = [
            (run(graph, {"cores": f"{r}x{c}:{df}:896"}, "multicore", {"time_limit_s": 2.0})[1], f"{r}x{c}:{df}")
            for r, c in SINGLE_SHAPES
            for df in ("ws", "os", "is")
        ]
        single = min(singles, key=lambda pair: pair[0]["latency_ms"])
        print(f"== {net}: {graph.summary()}")
        print(
            f"   greedy round robin: latency {greedy['latency_ms']:.3f} ms, throughput {greedy['throughput_ips']:.1f}/s"
        )
        print(
            f"   best single core {single[1]} (same MACs): latency {single[0]['latency_ms']:.3f} ms, "
            f"throughput {single[0]['throughput_ips']:.1f}/s"
        )
        for objective in ("latency", "throughput"):
            mapping, m, seconds = run(
                graph, {"cores": MIX}, "multicore", {"objective": objective, "time_limit_s": args.time_limit}
            )
            s = mapping.solver
            value, hint = s["score"], s["hint_score"]
            print(
                f"   CP-SAT {objective:10s}: objective {', '.join(map(str, value))} vs its hint "
                f"{', '.join(map(str, hint))} (x{value[0] / hint[0]:.4f}); "
                f"{s['status']:8s} gap {100 * s['gap']:.2f} % in {seconds:.2f} s "
                f"({s['layers']} layers, {s['tasks']} tasks); latency {m['latency_ms']:.3f} ms "
                f"(x{greedy['latency_ms'] / m['latency_ms']:.2f} vs greedy, "
                f"x{single[0]['latency_ms'] / m['latency_ms']:.2f} vs single), throughput {m['throughput_ips']:.1f}/s "
                f"(x{m['throughput_ips'] / greedy['throughput_ips']:.2f} "
                f"vs greedy, x{m['throughput_ips'] / single[0]['throughput_ips']:.2f} vs single); "
                f"core utilisation {', '.join(f'{u:.2f}' for u in m.info['core_utilization'])}"
            )
        for tiles in (1, 8, 16):
            mapping, m, seconds = run(
                graph, {"cores": MIX}, "multicore", {"fusion_tiles": tiles, "time_limit_s": args.time_limit}
            )
            label = "layer by layer" if tiles == 1 else f"fused, <= {tiles} row bands"
            banded = sum(layer.extra["tiles"] > 1 for layer in m.layers)
            print(
                f"   {label:22s}: DRAM {m['dram_mb']:.2f} MB, latency {m['latency_ms']:.3f} ms, "
                f"{mapping.solver['status']} gap {100 * mapping.solver['gap']:.2f} % in {seconds:.2f} s "
                f"({mapping.solver['tasks']} tasks, {banded} layers banded)"
            )
        print()


if __name__ == "__main__":
    main()
