"""GEMM error on shape families held out of the GPU fit, per calibrated GPU, without and with small-kernel effects.

Why: the fit frees a host cost only where a host-bound row shows it and the device's fixed cost only where some
rows are device time alone (``hwmodels.gpu.calibrate.free_parameters``); what was left were the H100's CUDA-graph
misses: a K = 700 GEMM measured at 3.6x the model (its 1400-byte rows send cuBLAS to kernels that load operands
in narrow pieces) and GEMVs over-priced by ~30 % (a measurement repeats its call, so 32 MiB of weights stay in
the 50 MiB L2). The model of a row now prices both (``hwmodels.gpu.calibrate.RowEffects``): a misaligned K
streams operand tiles at ``misaligned_efficiency`` of the L2 rate, operands that fit the L2 are read at
``warm_l2_ratio`` x DRAM bandwidth; each constant is fitted only where a row shows it and stays at its start
elsewhere. This prints, per GPU and per held-out GEMM shape family (leave one family out: no shape of it is
fitted, in either timing), the mean absolute error without the two effects ('before') and with them ('after').

    .venv/bin/python benchmarks/gpu_small_kernels.py            # both calibrated GPUs
    .venv/bin/python benchmarks/gpu_small_kernels.py --rows     # every held-out row
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import numpy as np

from hwmodels.catalogs.gpu_tuning import starting_tuning
from hwmodels.gpu.calibrate import (
    BEFORE_EFFECTS,
    EFFECTS,
    OP_KINDS,
    Measurement,
    family_cross_validate,
    fit,
    predict_seconds,
    read_llmcompass,
    read_measurements,
    with_tuning,
)
from templates.gpu import GpuTemplate

ROOT = Path(__file__).resolve().parents[1]
LLMCOMPASS_A100 = ROOT.parent / "shared" / "data" / "gpu" / "llmcompass_a100"
H100_FILES = [ROOT / "hwmodels" / "data" / f"gpu_measured_h100_{kind}_fp16.csv" for kind in ("graph", "eager")]
SMALL_US = 100.0  # a 'small kernel': measured under this
# Issue #29's symptom: A100 80GB eager fp16 GEMMs, M = 8192, K = N <= 512, measured at 30-47 us (those rows are
# kept by the checker, not here): the model's price of these shapes with the fit on every row, before and after.
SYMPTOM_SHAPES = ("a100_80gb", 8192, (64, 128, 256, 512))


def datasets() -> list[tuple[str, list[Measurement]]]:
    """(GPU, rows) for every calibrated GPU whose measurements are here (the A100's live in ../shared)."""
    out = []
    if LLMCOMPASS_A100.is_dir():
        out.append(("a100_80gb", read_llmcompass(LLMCOMPASS_A100)))
    else:
        print(f"a100_80gb: skipped, its measurements are not at {LLMCOMPASS_A100}", file=sys.stderr)
    h100 = [m for path in H100_FILES for m in read_measurements(path, tuple(OP_KINDS))]
    out.append(("h100_sxm", [m for m in h100 if m.gpu == "h100_sxm" and m.precision == "fp16"]))
    return out


def mean_error(pairs: list[tuple[Measurement, float]]) -> float:
    return float(np.mean([abs(p / m.seconds - 1.0) * 100.0 for m, p in pairs])) if pairs else float("nan")


def summary(label: str, rule_rows: dict[str, list[tuple[Measurement, float]]]) -> None:
    """One line: the mean absolute error of ``label``'s held-out rows, before and after."""
    before, after = rule_rows["before"], rule_rows["after"]
    print(f"  {label:<30} {len(after):>5} {mean_error(before):>8.1f}% {mean_error(after):>8.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every held-out row")
    args = parser.parse_args(argv)
    for gpu, rows in datasets():
        arch = with_tuning(GpuTemplate().instantiate({"gpu": gpu, "precision": "fp16"}), starting_tuning(gpu))
        held: dict[str, dict[str, list[tuple[Measurement, float]]]] = {}
        full = {}
        rules = {"before": BEFORE_EFFECTS, "after": EFFECTS}
        for rule, effects in rules.items():
            full[rule] = fit(rows, arch, effects=effects).tuning  # the long-row threshold: picked once, here
            fitter = partial(fit, effects=effects, long_row_bytes=full[rule].long_row_bytes)
            held[rule] = family_cross_validate(rows, arch, ("gemm", "conv"), fitter, effects.warm_l2)
        print(f"{arch.display} (fp16, {len(rows)} rows): mean absolute error, each shape family held out")
        print(f"  {'family':<30} {'rows':>5} {'before':>9} {'after':>9}")
        for family in held["after"]:
            summary(family, {rule: held[rule][family] for rule in held})
        every = {rule: [pair for pairs in by_family.values() for pair in pairs] for rule, by_family in held.items()}
        for label, keep in (
            ("held-out GEMM (matmul) rows", lambda m: m.op == "gemm"),
            (f"  of them under {SMALL_US:g} us", lambda m: m.op == "gemm" and m.seconds * 1e6 < SMALL_US),
            ("  of them timed eager", lambda m: m.op == "gemm" and m.eager),
            ("held-out conv rows", lambda m: m.op == "conv"),
        ):
            rule_rows = {rule: [(m, p) for m, p in pairs if keep(m)] for rule, pairs in every.items()}
            if rule_rows["after"]:
                summary(label, rule_rows)
        if gpu == SYMPTOM_SHAPES[0]:
            m_rows, sizes = SYMPTOM_SHAPES[1:]
            print(f"  eager GEMMs M = {m_rows}, K = N (issue #29 reports 30-47 us measured), fit on every row:")
            for size in sizes:
                shape = Measurement(gpu, "fp16", "gemm", m_rows, size, size, 1, 1.0, "eager")
                priced = {
                    rule: predict_seconds(shape, with_tuning(arch, tuning), warm_l2=rules[rule].warm_l2) * 1e6
                    for rule, tuning in full.items()
                }
                print(f"    K = N = {size:<4} before {priced['before']:6.1f} us   after {priced['after']:6.1f} us")
        if args.rows:
            for (m, before), (_, after) in zip(every["before"], every["after"]):
                print(
                    f"    {m.name:<26} {m.method.split(',')[0][:18]:<18} measured {m.seconds * 1e6:9.1f} us  "
                    f"before {100 * (before / m.seconds - 1):+6.1f} %  after {100 * (after / m.seconds - 1):+6.1f} %"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
