"""Re-checks the explored front of designs/digits_mlp_fpga.yaml in hls4ml's C simulation (g++).

Explores the spec (the emulator gives every point its accuracy), then exports every feasible Pareto design with
``dse export --csim``: hls4ml compiles it and runs the held-out digits; the script prints, per design, the C-sim
accuracy, its drop against the float model, whether it meets the spec's accuracy_drop bound, and how many output
values differ between the emulator and the C simulation.

    .venv/bin/python benchmarks/quant_front_csim.py [--budget 600] [--limit N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from dse.cli import main as dse_main
from dse.export import export_point
from dse.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def ensure_digits(out_dir: Path) -> Path:
    """The trained digits MLP and its data in ``out_dir``, written by the demo's trainer when missing."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train_digits.py"), str(out_dir)], check=True, stdout=subprocess.DEVNULL
    )
    return out_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--limit", type=int, default=None, help="check only the first N front designs")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    ensure_digits(folder / "workloads")
    text = (ROOT / "designs" / "digits_mlp_fpga.yaml").read_text().replace("budget: 600", f"budget: {args.budget}")
    (folder / "spec.yaml").write_text(text)
    bound = load_spec(folder / "spec.yaml").constraints["accuracy_drop"].max
    run = folder / "run"
    assert dse_main(["explore", str(folder / "spec.yaml"), "-o", str(run), "-q"]) == 0
    points = pd.read_parquet(run / "points.parquet")
    front = points[points["pareto"] & points["feasible"]].sort_values("lut")
    if args.limit:
        front = front.head(args.limit)
    print(f"{len(points)} points explored, {len(front)} feasible Pareto designs re-checked in C-sim (bound {bound})")
    print(
        f"{'point':10s} {'emu acc':>8s} {'csim acc':>8s} {'drop':>7s} {'meets':>5s} {'mismatch':>8s}"
        f" {'lut':>9s} {'dsp':>6s}"
    )
    ok = exact = 0
    for _, row in front.iterrows():
        report = export_point(run, row["point_id"], folder / "export" / row["point_id"], csim=True)
        c = report["csim"]
        drop = c["float_accuracy"] - c["accuracy"]
        ok += drop <= bound + 1e-12
        exact += c["emulator_mismatches"] == 0
        print(
            f"{row['point_id'][:10]:10s} {row['accuracy']:8.4f} {c['accuracy']:8.4f} {drop:7.4f} "
            f"{'yes' if drop <= bound + 1e-12 else 'NO':>5s} {c['emulator_mismatches']:8d}"
            f" {row['lut']:9.0f} {row['dsp']:6.0f}"
        )
    print(f"meets the accuracy constraint in C-sim: {ok}/{len(front)}; emulator bit-exact: {exact}/{len(front)}")


if __name__ == "__main__":
    main()
