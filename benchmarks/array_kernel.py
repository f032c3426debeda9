"""The systolic GEMM cost kernel alone on an array backend: ResNet-50's GEMMs x N designs, no de-duplication.

``benchmarks/array_eval.py`` measures whole points, where the kernel runs once per distinct (array shape, SRAM
words, DRAM rate) and so is a small share of the time. This one gives the kernel
(``hwmodels.systolic.batch.gemm_cost_arrays``, shared DRAM, exact mode) every (design, GEMM) pair of N random
int8 designs, ``--chunk`` designs at a time, on numpy and on ``--backend`` (cupy or torch on ``--device``), and
prints (design, GEMM) pairs per second for each and the largest relative difference between the two over every
figure of the first ``--check`` designs. numpy runs on ``--numpy-designs`` designs (it is the slow side).

    python benchmarks/array_kernel.py --backend torch --device cuda [--designs 1000000] [--chunk 131072]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

BACKENDS = ("numpy", "cupy", "torch")  # hwmodels.array_backend.BACKENDS


def random_designs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``n`` int8 designs as (n, 1) columns: array shape, the three SRAMs in words, DRAM words per cycle."""
    rng = np.random.default_rng(seed)
    rows = rng.choice([4, 8, 16, 32, 64, 128, 256], n).astype(float)
    cols = rng.choice([4, 8, 16, 32, 64, 128, 256], n).astype(float)
    words = [rng.choice([48, 96, 192, 384, 768, 1536, 3072], n) * 1024.0 for _ in range(3)]
    gbps = rng.choice([6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2], n)
    mhz = rng.choice([400.0, 700.0, 1000.0, 1500.0], n)
    columns = {"rows": rows, "cols": cols, "words_if": words[0], "words_f": words[1], "words_of": words[2]}
    columns["words_per_cycle"] = gbps * 1e3 / mhz  # one-byte words
    return {name: column[:, None] for name, column in columns.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=BACKENDS, default="numpy")
    parser.add_argument("--device", default=None, help="torch: cpu, cuda, cuda:1; cupy: 0, 1")
    parser.add_argument("--designs", type=int, default=1_000_000, help="designs on the backend (default 1M)")
    parser.add_argument("--numpy-designs", type=int, default=65_536, help="designs on numpy (default 65,536)")
    parser.add_argument("--chunk", type=int, default=131_072, help="designs per kernel call (default 131,072)")
    parser.add_argument("--check", type=int, default=65_536, help="designs compared with numpy (default 65,536)")
    parser.add_argument("--dataflow", choices=("ws", "os", "is"), default="ws")
    args = parser.parse_args()
    args.check = min(args.check, args.designs, args.numpy_designs)

    from dse.zoo import build
    from hwmodels.array_backend import NUMPY, array_backend
    from hwmodels.systolic.batch import GemmShapes, gemm_cost_arrays
    from mappers.systolic.fold import ARRAY_KINDS, lower_op

    gemms = [lower_op(op) for op in build("resnet50").ops if op.kind in ARRAY_KINDS]
    shapes = GemmShapes.of(gemms, [True] * len(gemms))
    designs = random_designs(max(args.designs, args.numpy_designs, args.check))
    try:
        backend = array_backend(args.backend, args.device)
    except ValueError as error:
        parser.error(str(error))

    def run(on, n: int, keep: int = 0) -> tuple[float, dict[str, np.ndarray]]:  # noqa: ANN001
        """Seconds for ``n`` designs in chunks on ``on``; the figures of the first ``keep`` designs."""
        kept: dict[str, list[np.ndarray]] = {}
        figures = tuple(designs)
        gemm_cost_arrays(shapes, args.dataflow, "shared", *(designs[f][:8] for f in figures), True, on)  # warm-up
        on.synchronize()
        start = time.perf_counter()
        for first in range(0, n, args.chunk):
            part = (designs[f][first : min(n, first + args.chunk)] for f in figures)
            cost = gemm_cost_arrays(shapes, args.dataflow, "shared", *part, exact=True, backend=on)
            total = cost["cycles"].sum()  # the reduction a caller makes, so that lazy work is done
            if first < keep:
                for name, value in cost.items():
                    kept.setdefault(name, []).append(on.to_numpy(value)[: keep - first])
            float(total)
        on.synchronize()
        return time.perf_counter() - start, {name: np.concatenate(parts) for name, parts in kept.items()}

    numpy_s, want = run(NUMPY, args.numpy_designs, args.check)
    pairs = len(gemms)
    print(
        f"ResNet-50: {pairs} GEMMs x designs, {args.dataflow}, shared DRAM, exact kernel; chunk {args.chunk:,} designs"
    )
    numpy_rate = args.numpy_designs / numpy_s
    print(f"numpy      : {numpy_rate:14,.0f} designs/s  {numpy_rate * pairs:16,.0f} pairs/s  ({numpy_s:.2f} s)")
    if not backend.is_numpy:
        backend_s, got = run(backend, args.designs, args.check)
        rate = args.designs / backend_s
        worst = 0.0
        for name, expected in want.items():
            a, b = got[name].astype(float), expected.astype(float)
            worst = max(worst, float(np.max(np.abs(a - b) / np.where(b != 0, np.abs(b), 1.0))))
        label = f"{args.backend} {args.device or ''}"
        print(f"{label:11s}: {rate:14,.0f} designs/s  {rate * pairs:16,.0f} pairs/s  ({backend_s:.2f} s)")
        print(f"speed-up   : {rate / numpy_rate:14.1f} x;  largest relative difference {worst:.2e} on {args.check:,}")


if __name__ == "__main__":
    main()
