"""Accuracy-emulator throughput on the digits MLP over all 1,797 images (designs/digits_mlp_fpga.yaml's space).

Evaluates random points of the spec's space with ``workload.data`` = all 1,797 digits: the emulator alone (its
per-layer cache warm, as in a run), the emulator with every cache cleared before each point (cold), and the
whole evaluator (mapper + FPGA model + accuracy) in 1 process and in 2 worker processes.

    .venv/bin/python benchmarks/quant_throughput.py [--points 600]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from dse.session import build_evaluator
from dse.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def ensure_digits(out_dir: Path) -> Path:
    """The trained digits MLP and its data in ``out_dir``, written by the demo's trainer when missing."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train_digits.py"), str(out_dir)], check=True, stdout=subprocess.DEVNULL
    )
    return out_dir


_EVALUATOR = None


def _init(spec_path: str) -> None:
    global _EVALUATOR
    _EVALUATOR = build_evaluator(load_spec(spec_path))[1]


def _chunk(points: list[dict]) -> int:
    for p in points:
        _EVALUATOR(p)
    return len(points)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=600)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    ensure_digits(folder / "workloads")
    text = (ROOT / "designs" / "digits_mlp_fpga.yaml").read_text().replace("digits_val.npz", "digits_all.npz")
    spec_path = folder / "spec.yaml"
    spec_path.write_text(text)
    spec = load_spec(spec_path)
    _, evaluator = build_evaluator(spec)
    space = spec.design_space()
    strategy_points = [dict(p) for p in space.sample(args.points, seed=0)]
    probe = evaluator.accuracy
    prepared = probe.prepare()
    print(f"digits MLP 64-32-16-10, {len(prepared.x)} samples, {len(strategy_points)} random points of the space")
    configs = [
        probe.config(evaluator.arch(p), evaluator.mapper.map(evaluator.graph, evaluator.arch(p)))
        for p in strategy_points
    ]
    t = time.perf_counter()
    for cfg in configs:
        prepared.emulator.run(prepared.x, cfg, input_key="all")
    warm = len(configs) / (time.perf_counter() - t)
    t = time.perf_counter()
    for cfg in configs[:200]:
        prepared.emulator.clear()
        prepared.emulator.run(prepared.x, cfg, input_key="all")
    cold = min(200, len(configs)) / (time.perf_counter() - t)
    _init(str(spec_path))
    t = time.perf_counter()
    _chunk(strategy_points)
    serial = len(strategy_points) / (time.perf_counter() - t)
    half = len(strategy_points) // 2
    with ProcessPoolExecutor(2, initializer=_init, initargs=(str(spec_path),)) as pool:
        list(pool.map(_chunk, [strategy_points[:1], strategy_points[1:2]]))  # start both workers first
        t = time.perf_counter()
        done = sum(pool.map(_chunk, [strategy_points[:half], strategy_points[half:]]))
        parallel = done / (time.perf_counter() - t)
    print(f"emulator, per-layer cache warm (as in a run): {warm:8.1f} design points/s")
    print(f"emulator, cold (every cache cleared):          {cold:8.1f} design points/s")
    print(f"full evaluator (map + model + accuracy), 1 process:   {serial:8.1f} design points/s")
    print(f"full evaluator (map + model + accuracy), 2 processes: {parallel:8.1f} design points/s  (target >= 200)")


if __name__ == "__main__":
    main()
