"""Our multicore CP-SAT scheduler side by side with KU Leuven's Stream on the same workload and core mix.

The workload is a small CNN written as ONNX here (six 3x3 convolutions with ReLU, 56x56 input, strides
1/2 alternating, 3 -> 256 channels): both tools read the same file. The hardware is the benchmark's
heterogeneous mix (32x32 ws, 16x64 os, 64x16 is, 16x16 ws; SRAM split as our systolic template splits
it: a third weights, two thirds activations) on a 2x2 mesh, 32 GB/s links, 25.6 GB/s DRAM, 800 MHz, and
the same per-MAC, per-SRAM-byte and per-DRAM-byte energies (our catalog's, asic-28nm). Each tool runs
layer by layer and layer-fused (ours: ``fusion_tiles``; Stream: one computation node per output row,
``hint_loops=[('OY', 'all')]``). Printed: latency, energy and scheduling time of each.

Stream (``stream-dse`` 0.0.8, which needs ``zigzag-dse`` 2.x and plotly) is never a project dependency: it
runs in its own environment, found at ``$STREAM_PYTHON`` or /tmp/streamvenv/bin/python; when that is
missing the benchmark says so and skips Stream.

    .venv/bin/python benchmarks/multicore_stream_compare.py [--ga-generations 16 --ga-individuals 16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dse.evaluate import PointEvaluator
from dse.importers.onnx_import import load_onnx
from hwmodels.systolic.pricing import design_prices
from templates.multicore import MulticoreTemplate

MIX = "32x32:ws:256+16x64:os:256+64x16:is:256+16x16:ws:128"
COMMON = {"interconnect": "mesh", "link_gbps": 32.0, "dram_gbps": 25.6, "freq_mhz": 800.0, "tech": "asic-28nm"}
LAYERS = ((3, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2))  # (C, K, stride)
STREAM_SIDE = Path(__file__).with_name("stream_side.py")

DIFFERENCES = """\
Where the cost models differ:
 - per-layer cost: ours is the systolic model (SCALE-Sim-style folds of the lowered GEMM, fill/drain per
   fold, DRAM stalls from one channel's bandwidth); Stream asks ZigZag's LOMA for the best temporal
   mapping of each computation node on each core's memory hierarchy (registers, SRAM, DRAM ports), so
   its per-layer latency and energy follow the best loop order, not a fixed dataflow schedule;
 - spatial unrolling: our ws/os/is arrays map the lowered GEMM (reduction x filters, pixels x filters,
   reduction x pixels); in Stream the same arrays unroll C x K, OX x K, C x OX of the conv loop nest;
 - layer-core allocation: ours is exact CP-SAT (assignment and start times together, OPTIMAL or a gap);
   Stream's is a genetic algorithm over allocations, each scored by its list scheduler (no bound);
 - fusion granularity: Stream cuts every layer into one node per output row; ours cuts only layers whose
   output does not fit on chip into the fewest row bands that do (and their consumers);
 - interconnect: Stream routes a transfer over every link of its path, each link a resource; ours holds
   the source core's output port and the destination's input port (mesh) or the bus, plus a hop latency;
 - DRAM: Stream models one off-chip "core" whose port every transfer to or from DRAM holds; ours is a
   cumulative of ``dram_channels`` channels (a core's DMA drives one) where each task holds the share of
   a channel its own traffic needs over its duration and a read-back of a spilled tensor a whole channel;
 - vector work: Stream sends pooling/element-wise ops to separate pooling/SIMD cores (its examples' way);
   ours runs them on the core's SIMD lanes (here only ReLU, which rides in the array's output pipeline);
 - leakage: ours adds every core's leakage over the makespan; Stream has none.
"""


def write_onnx(path: Path, hw: int = 56) -> None:
    """The six-convolution chain, with shapes inferred (Stream reads the inferred shapes)."""
    nodes, weights, x, h = [], [], "input", hw
    for i, (c, k, stride) in enumerate(LAYERS):
        weights.append(numpy_helper.from_array(np.zeros((k, c, 3, 3), np.float32), f"w{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"conv{i}"], kernel_shape=[3, 3], strides=[stride] * 2,
                                      pads=[1] * 4, name=f"conv{i}"))  # fmt: skip
        nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"], name=f"relu{i}"))
        x, h = f"relu{i}", (h - 1) // stride + 1
    graph = helper.make_graph(
        nodes,
        "conv_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, LAYERS[0][0], hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, LAYERS[-1][1], h, h])],
        weights,
    )
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    onnx.save(model, str(path))


def stream_python() -> tuple[str | None, str]:
    """The Python of the Stream environment, or None and why not."""
    python = os.environ.get("STREAM_PYTHON", "/tmp/streamvenv/bin/python")
    if not Path(python).exists():
        return None, f"{python} does not exist (set STREAM_PYTHON, or: python -m venv /tmp/streamvenv && " \
                     "/tmp/streamvenv/bin/pip install stream-dse==0.0.8 'zigzag-dse==2.5.4' plotly)"  # fmt: skip
    probe = subprocess.run([python, "-c", "import stream.api"], capture_output=True, text=True)
    if probe.returncode:
        return None, f"{python} cannot import stream: {probe.stderr.strip().splitlines()[-1]}"
    return python, ""


def run_ours(onnx_path: Path, fusion_tiles: int, time_limit_s: float) -> dict:
    graph = load_onnx(onnx_path)
    options = {"fusion_tiles": fusion_tiles, "time_limit_s": time_limit_s}
    evaluator = PointEvaluator(graph, "multicore", "multicore", fixed=COMMON, mapper_options=options)
    arch = evaluator.arch({"cores": MIX})
    started = time.perf_counter()  # the mapper alone timed, as Stream's own search is
    mapping = evaluator.mapper.map(graph, arch)
    seconds = time.perf_counter() - started
    metrics = evaluator.hwmodel.evaluate(mapping, arch)
    s = mapping.solver
    note = f"{s['status']} gap {100 * s['gap']:.1f} %, {s['tasks']} tasks, DRAM {metrics['dram_mb']:.2f} MB"
    return {"latency_cycles": metrics["latency_cycles"], "energy_pj": metrics["energy_mj"] * 1e9, "seconds": seconds,
            "note": note}  # fmt: skip


def stream_config(onnx_path: Path, workdir: Path, fused: bool, args: argparse.Namespace) -> dict:
    arch = MulticoreTemplate().instantiate({**COMMON, "cores": MIX})
    prices = design_prices(arch.cores[0])
    cores = [
        {
            "rows": c.rows,
            "cols": c.cols,
            "dataflow": c.dataflow,
            "weight_kib": c.filter_sram_kib,
            "act_kib": c.ifmap_sram_kib + c.ofmap_sram_kib,
        }
        for c in arch.cores
    ]
    return {
        "onnx": str(onnx_path),
        "cores": cores,
        "mac_pj": prices.e_mac,
        "sram_pj_per_byte": prices.e_sram["ifmap"],
        "dram_pj_per_byte": prices.tech.dram_energy_pj(1.0),
        "dram_bits_per_cycle": arch.dram_bytes_per_cycle * 8,
        "link_bits_per_cycle": arch.link_bytes_per_cycle * 8,
        "mesh_rows": 2,
        "mesh_cols": 2,
        "fused": fused,
        "ga_generations": args.ga_generations,
        "ga_individuals": args.ga_individuals,
        "workdir": str(workdir),
    }


def run_stream(python: str, config: dict, tmp: Path, timeout_s: float) -> dict:
    path = tmp / f"stream_{'fused' if config['fused'] else 'lbl'}.json"
    path.write_text(json.dumps(config))
    done = subprocess.run([python, str(STREAM_SIDE), str(path)], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode:
        raise RuntimeError(f"Stream failed: {(done.stderr or done.stdout).strip().splitlines()[-1]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["note"] = f"GA {config['ga_generations']} generations x {config['ga_individuals']} individuals"
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ga-generations", type=int, default=16)
    ap.add_argument("--ga-individuals", type=int, default=16)
    ap.add_argument("--time-limit", type=float, default=10.0, help="our CP-SAT limit (deterministic seconds)")
    ap.add_argument("--fusion-tiles", type=int, default=8)
    ap.add_argument("--stream-timeout", type=float, default=1800.0)
    args = ap.parse_args()
    freq_hz = COMMON["freq_mhz"] * 1e6
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        onnx_path = tmp / "conv_chain.onnx"
        write_onnx(onnx_path)
        print(f"workload: {len(LAYERS)}-conv chain (ONNX, {load_onnx(onnx_path).summary()})")
        print(f"cores: {MIX}; {COMMON}\n")
        python, why = stream_python()
        rows = []
        for label, tiles, fused in (("layer by layer", 1, False), ("layer-fused", args.fusion_tiles, True)):
            rows.append((f"ours, {label}", run_ours(onnx_path, tiles, args.time_limit)))
            if python:
                config = stream_config(onnx_path, tmp / f"stream_{fused}", fused, args)
                rows.append((f"Stream, {label}", run_stream(python, config, tmp, args.stream_timeout)))
        print(f"{'':24s} {'latency (ms)':>12s} {'energy (uJ)':>12s} {'scheduling (s)':>15s}")
        for label, r in rows:
            print(f"{label:24s} {r['latency_cycles'] / freq_hz * 1e3:12.4f} {r['energy_pj'] * 1e-6:12.2f} "
                  f"{r['seconds']:15.2f}   {r['note']}")  # fmt: skip
        if not python:
            print(f"\nStream SKIPPED: {why}")
        print("\n" + DIFFERENCES)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
