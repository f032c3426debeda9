"""Calibrate the GPU model on measured kernels and print its error per op kind, before and after.

Why: every GPU baseline in ``dse compare`` rests on the model's tuning constants; this script fits them to
measurements of one GPU (``hwmodels.gpu.calibrate``) and prints, per op kind, the mean absolute error of the
model as shipped (catalog assumptions), of the catalog assumptions timed like the measurements (eager), of
the fit on all rows and of k-fold cross-validation. ``--write`` stores the constants in
``hwmodels/data/gpu_calibration.json`` (with their provenance; GPU_SOURCES.md is regenerated), so
``dse explore`` / ``dse compare`` use them for that GPU. ``--check`` predicts other measurement files with the
stored constants (shapes never fitted).

    .venv/bin/python tools/gpu_calibrate.py                      # A100 80GB, LLMCompass data in ../shared
    .venv/bin/python tools/gpu_calibrate.py --write
    .venv/bin/python tools/gpu_calibrate.py --csv hwmodels/data/gpu_measured_h100_graph_fp16.csv \
        --gpu h100_sxm --precision fp16 --write
    .venv/bin/python tools/gpu_calibrate.py --check path/to/more_llmcompass_files/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hwmodels.catalogs.gpu_tuning import calibration_for, write_calibration, write_sources
from hwmodels.gpu.calibrate import (
    OP_KINDS,
    Measurement,
    mape_by_kind,
    predict_seconds,
    read_llmcompass,
    read_measurements,
    with_tuning,
)
from hwmodels.gpu.calibrate_power import fit_power, power_errors
from hwmodels.gpu.calibrate_report import calibration_entry, evaluate
from templates.gpu import GpuTemplate

ROOT = Path(__file__).resolve().parents[1]

LLMCOMPASS_A100 = ROOT.parent / "shared" / "data" / "gpu" / "llmcompass_a100"
KINDS = ("GEMM", "softmax", "layernorm", "GELU", "all")


def load(paths: list[Path], gpu: str, precision: str) -> list[Measurement]:
    """Rows from LLMCompass folders and plain CSV files: those of ``gpu`` at ``precision``, of the op kinds the
    model prices as one kernel (``OP_KINDS``: a CSV's attention rows are several kernels, and are skipped)."""
    rows: list[Measurement] = []
    for path in paths:
        rows += read_llmcompass(path, gpu) if path.is_dir() else read_measurements(path, tuple(OP_KINDS))
    return [m for m in rows if m.gpu == gpu and m.precision == precision]


def print_table(title: str, columns: dict[str, dict[str, float]], counts: dict[str, int]) -> None:
    print(title)
    print(f"  {'op kind':<10} {'rows':>5} " + " ".join(f"{name:>22}" for name in columns))
    for kind in KINDS:
        if kind != "all" and kind not in counts:
            continue
        n = sum(counts.values()) if kind == "all" else counts[kind]
        cells = " ".join(f"{values.get(kind, float('nan')):>21.1f}%" for values in columns.values())
        print(f"  {kind:<10} {n:>5} {cells}")


def check(paths: list[Path], gpu: str, precision: str) -> int:
    entry = calibration_for(gpu)
    if entry is None:
        print(f"gpu_calibrate: {gpu} has no stored calibration; run with --write first", file=sys.stderr)
        return 2
    rows = load(paths, gpu, precision)
    if not rows:
        print(f"gpu_calibrate: no {gpu} rows in {', '.join(map(str, paths))}", file=sys.stderr)
        return 2
    arch = GpuTemplate().instantiate({"gpu": gpu, "precision": precision})
    calibrated = [predict_seconds(m, with_tuning(arch, entry.tuning)) for m in rows]
    counts: dict[str, int] = {}
    for m in rows:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    print_table(
        f"{arch.display}: stored constants ({entry.label}) on {len(rows)} rows never fitted",
        {"calibrated": mape_by_kind(rows, calibrated)},
        counts,
    )
    for m, p in zip(rows, calibrated):
        print(
            f"    {m.name:<28} {m.op:<9} M={m.M:<7} N={m.N:<6} K={m.K:<6} measured {m.seconds * 1e6:10.1f} us  "
            f"model {p * 1e6:10.1f} us  {100 * (p / m.seconds - 1):+6.1f} %"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", help="LLMCompass folder (default: ../shared A100)")
    parser.add_argument("--csv", type=Path, action="append", default=[], help="plain measurement CSV")
    parser.add_argument("--gpu", default="a100_80gb", help="catalog GPU the rows were measured on")
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="store the fitted constants in the project")
    parser.add_argument("--check", type=Path, action="append", help="predict these rows with the stored constants")
    parser.add_argument("--rows", action="store_true", help="print every row's held-out prediction")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.check, args.gpu, args.precision)
    folders = args.data if args.data else ([] if args.csv else [LLMCOMPASS_A100])
    missing = [p for p in [*folders, *args.csv] if not p.exists()]
    if missing:
        print(
            f"gpu_calibrate: {', '.join(map(str, missing))} not found (the shared data lives in ../shared)",
            file=sys.stderr,
        )
        return 2
    rows = load([*folders, *args.csv], args.gpu, args.precision)
    if not rows:
        print(f"gpu_calibrate: no rows measured on {args.gpu} at {args.precision}", file=sys.stderr)
        return 2
    arch = GpuTemplate().instantiate({"gpu": args.gpu, "precision": args.precision})
    report = evaluate(rows, arch, args.folds)
    print_table(
        f"{arch.display} ({args.precision}): mean absolute error of the GPU model on {len(rows)} measured calls",
        {
            "uncalibrated (shipped)": report.shipped,
            "catalog, eager timing": report.catalog,
            "fit on all rows": report.fitted,
            f"{args.folds}-fold CV, calibrated": report.cross_validated,
        },
        report.rows,
    )
    tuning = report.fit.tuning
    print(
        f"fitted: compute_fraction={tuning.compute_fraction:.3f} bandwidth_fraction={tuning.bandwidth_fraction:.3f} "
        f"launch_us={tuning.launch_us:.2f} overlap_exponent={tuning.overlap_exponent:.2f} "
        f"long_row_bytes={tuning.long_row_bytes:g} conv_efficiency={tuning.conv_efficiency:.3f} "
        f"conv_fixed_us={tuning.conv_fixed_us:.2f} misaligned_efficiency={tuning.misaligned_efficiency:.3f} "
        f"warm_l2_ratio={tuning.warm_l2_ratio:.3f}"
    )
    for k in tuning.kernels:
        print(
            f"  {k.kind:<12} bandwidth_fraction={k.bandwidth_fraction:.3f} host_us={k.host_us:6.1f} "
            f"long_row_passes={k.long_row_passes:.2f}"
        )
    for note in report.fit.notes:
        print(f"note: {note}")
    fitted = with_tuning(arch, tuning)
    power = fit_power(rows, fitted)
    errors = power_errors(rows, fitted, power)
    for p in power:
        print(
            f"  power {p.kind:<12} static {p.static_w:6.1f} W + dynamic {p.dynamic_w:6.1f} W x utilization "
            f"({p.rows} rows, mean abs. error {errors[p.kind]:.1f} %)"
        )
    if not power:
        print("energy: no row has board power (tools/gpu_measure.py --power); the catalog estimate stays")
    if args.rows:
        for m, p in zip(report.cv.rows, report.cv.predicted):
            print(f"    {m.name:<28} measured {m.seconds * 1e6:10.1f} us  held-out model {p * 1e6:10.1f} us")
    if args.write:
        source = ", ".join(sorted({m.source or "plain CSV" for m in rows}))
        files = ", ".join(
            p.resolve().relative_to(ROOT).as_posix() if p.resolve().is_relative_to(ROOT) else p.name
            for p in [*folders, *args.csv]
        )
        taken = f"{files}, measured as: " + " / ".join(sorted({m.method for m in rows}))
        entry = calibration_entry(report, arch.gpu, args.precision, source, args.folds, taken, power)
        print(f"wrote {write_calibration(entry)} and {write_sources()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
