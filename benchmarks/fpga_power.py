"""FPGA power of the fpga_dataflow model (hwmodels.fpga.power) beside published Vivado power figures.

What was looked for: Vivado ``report_power`` figures (total on-chip, dynamic, static) of hls4ml or FINN designs
published with the design's resources, part and clock, so that our estimate could be priced on the same
resources and its error printed. The search tool (docs and pages corpora: hls4ml, FINN, MLPerf Tiny on
Pynq-Z2 / Arty A7, SNL vs hls4ml on ZCU102, wa-hls4ml) found **no hls4ml or FINN design with a published Vivado
power report**: the hls4ml papers found report resources and latency only, and the MLPerf Tiny submissions
(Borras et al., arXiv 2206.11791) report board energy per inference measured with the EnergyRunner, not
Vivado's on-chip power, without the per-design resource table in the excerpts available.

So the script prints, for every design in ``designs/*fpga*.yaml``, our power, its breakdown and the energy per
inference over the design's points (the fastest, the median-power and the leanest point), and one sanity row:
the only Vivado power report with resources, clock and a 7-series part that the search found (a small
streaming image-processing accelerator, not an hls4ml/FINN design: taegonhibbitts.com "LK optical flow
accelerator" project findings: 515 LUT, 459 FF, 1 DSP48E1, 1 BRAM, 100 MHz; Vivado total 114 mW, dynamic
42 mW of which I/O 24 mW, static 72 mW). The part is not named there; we price it on the catalog's only 7-series
part (xc7z020) and do not model I/O power, so its error is indicative only.

    python benchmarks/fpga_power.py
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dse.explore import explore_points
from dse.session import build_evaluator
from dse.spec import load_spec
from hwmodels.catalogs.fpga import get_part
from hwmodels.fpga.power import POWER_COMPONENTS, design_power

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "taegonhibbitts.com/static/projects/lk-optical-accel/files/Project Findings.txt (Vivado report_power, active)"


@dataclass(frozen=True)
class PublishedPower:
    """A design's Vivado power report and the resources and clock it was reported at."""

    name: str
    part: str
    clock_mhz: float
    resources: dict[str, float]
    total_w: float
    dynamic_w: float
    static_w: float
    io_w: float  # Vivado's I/O power, which our model does not price
    source: str


PUBLISHED: tuple[PublishedPower, ...] = (
    PublishedPower(
        name="LK optical-flow accelerator (not hls4ml; part unnamed, priced on xc7z020)",
        part="xc7z020",
        clock_mhz=100.0,
        resources={"dsp": 1.0, "lut": 515.0, "ff": 459.0, "bram": 2.0},  # 1 BRAM (36 Kb) = 2 BRAM18K
        total_w=0.114,
        dynamic_w=0.042,
        static_w=0.072,
        io_w=0.024,
        source=SOURCE,
    ),
)


def published_rows() -> pd.DataFrame:
    """Ours beside each published Vivado figure, with the relative error (ours / Vivado - 1)."""
    rows = []
    for design in PUBLISHED:
        ours = design_power(get_part(design.part), design.resources, design.clock_mhz)
        rows.append(
            {
                "design": design.name,
                "vivado_total_w": design.total_w,
                "ours_total_w": ours.total_w,
                "total_error": ours.total_w / design.total_w - 1,
                "vivado_static_w": design.static_w,
                "ours_static_w": ours.watts["static"],
                "vivado_dynamic_core_w": design.dynamic_w - design.io_w,
                "ours_dynamic_w": ours.dynamic_w,
                "dynamic_error": ours.dynamic_w / (design.dynamic_w - design.io_w) - 1,
            }
        )
    return pd.DataFrame(rows)


def design_rows(spec_path: Path) -> pd.DataFrame:
    """Power and energy of a design file's points: the fastest, the median-power and the leanest."""
    spec = load_spec(spec_path)
    _, evaluator = build_evaluator(spec)
    points = explore_points(spec, evaluator, executor="serial").points
    points = points[points["ok"]] if "ok" in points else points
    if points.empty:
        return pd.DataFrame()
    ordered = points.sort_values("power_w", kind="stable")
    picks = {
        "fastest": points.sort_values("latency_ms", kind="stable").iloc[0],
        "median power": ordered.iloc[len(ordered) // 2],
        "leanest": ordered.iloc[0],
    }
    rows = []
    for label, row in picks.items():
        energy = {k: row.get(f"energy_{k}_mj", 0.0) for k in POWER_COMPONENTS}
        total = sum(energy.values())
        rows.append(
            {
                "design": f"{spec_path.stem} ({label})",
                "part": row.get("part", ""),
                "clock_ns": row.get("clock_period_ns", float("nan")),
                "dsp": row["dsp"],
                "lut": row["lut"],
                "ff": row["ff"],
                "bram": row["bram"],
                "power_w": row["power_w"],
                "energy_uj_per_inf": row["energy_mj"] * 1e3,
                "inf_per_j": row["throughput_ips"] / row["power_w"],
                "static_share": energy["static"] / total if total else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print("Published Vivado power reports priced with our model (error = ours / Vivado - 1):")
        print(published_rows().to_string(index=False))
        print("\nno hls4ml or FINN design with a published Vivado power report was found (see the docstring)")
        print("\nOur power for the designs in designs/*fpga*.yaml:")
        frames = [design_rows(path) for path in sorted((ROOT / "designs").glob("*fpga*.yaml"))]
        print(pd.concat(frames, ignore_index=True).to_string(index=False))


if __name__ == "__main__":
    main()
