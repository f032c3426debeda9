"""Area and power of the dse design matching each published accelerator, next to the paper's figures.

For every chip in ``hwmodels.catalogs.chips``: the matching design (a template point at the published operating
point), its area and power as the paper measured them (core or die; busy, busy minus idle, with or without DRAM),
the published figures with what they include, the error, and for a figure that cannot be compared the precise
reason. Published block areas (TPU v1's floor plan) are set against the model's blocks.

    python benchmarks/silicon_compare.py [--chips tpu_v1,eyeriss]

Target: within 30 % on area and power. Exit status 0 always: this is a report, the fast test
(tests/test_silicon.py) holds the bounds.
"""

from __future__ import annotations

import argparse
import math

from dse.silicon import SiliconRow, compare_all
from hwmodels.catalogs.chips import CHIPS

TARGET = 0.30


def _num(value: float, unit: str) -> str:
    return "-" if math.isnan(value) else f"{value:.3g} {unit}"


def _err(value: float) -> str:
    if math.isnan(value):
        return "-"
    mark = "" if abs(value) <= TARGET else "  (outside 30 %)"
    return f"{value:+.0%}{mark}"


def print_row(row: SiliconRow) -> None:
    chip = row.chip
    point = ", ".join(f"{k}={v}" for k, v in chip.point.items())
    print(f"== {chip.name}  [{chip.family}, {chip.tech}]  {chip.paper}")
    print(f"   design: {point}")
    print(
        f"   workload: {chip.workload.model} batch {chip.workload.batch} {chip.workload.precision} "
        f"({chip.workload.note})"
    )
    if chip.area_mm2 is not None:
        print(
            f"   area : ours {_num(row.area_mm2, 'mm^2')}, published {_num(chip.area_mm2.value, 'mm^2')}, "
            f"error {_err(row.area_error)}"
        )
        print(f"          published figure: {chip.area_includes}")
        if row.area_blocks:
            parts = ", ".join(f"{name} {mm2:.3g}" for name, mm2 in row.area_blocks.items())
            print(f"          ours by block (mm^2): {parts}")
    for blocks, (ours, published) in row.blocks.items():
        print(
            f"          block {blocks}: ours {ours:.3g} mm^2, published {published:.3g} mm^2 "
            f"({ours / published - 1:+.0%})"
        )
    if len(row.blocks) > 1:
        ours, published = row.blocks_together
        print(
            f"          like for like, the blocks above together: ours {ours:.3g} mm^2, published "
            f"{published:.3g} mm^2, error {_err(ours / published - 1)}"
        )
    if chip.power_w is not None:
        rate = " over the model's latency"
        if chip.rate_ips is not None:
            rate = f" at the published {chip.rate_ips.value:g} inf/s"
        elif chip.rate_macs_per_s is not None:
            rate = f" at the published {chip.rate_macs_per_s.value / 1e12:g} TMAC/s"
        print(
            f"   power: ours {_num(row.power_w, 'W')}{rate}, published {_num(chip.power_w.value, 'W')}, "
            f"error {_err(row.power_error)}"
        )
        if row.power_parts:
            print(
                f"          ours: switching {row.power_parts['switching']:.3g} W + leakage "
                f"{row.power_parts['leakage']:.3g} W"
            )
        print(f"          published figure: {chip.power_includes}")
        print(f"          left out of ours: {', '.join(chip.power_excludes) or 'nothing'}")
    for what, reason in chip.not_comparable.items():
        print(f"   {what} not compared: {reason}")
    for what, reason in chip.misses.items():
        error = {"area": row.area_error, "power": row.power_error}.get(what, math.nan)
        if math.isnan(error) or abs(error) > TARGET:
            print(f"   why {what} misses: {reason}")
    if not math.isnan(row.latency_ms):
        print(f"   model latency: {row.latency_ms:.4g} ms per evaluation")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chips", default=",".join(CHIPS), help=f"comma-separated, from {', '.join(CHIPS)}")
    args = ap.parse_args()
    names = [n.strip() for n in args.chips.split(",") if n.strip()]
    unknown = [n for n in names if n not in CHIPS]
    if unknown:
        raise SystemExit(f"silicon_compare: unknown chip(s) {', '.join(unknown)}; known: {', '.join(CHIPS)}")
    rows = compare_all(names)
    for row in rows:
        print_row(row)
        print()
    print(
        f"{'chip':<26} {'area ours':>11} {'published':>11} {'error':>7}   "
        f"{'power ours':>11} {'published':>11} {'error':>7}"
    )
    for row in rows:
        chip = row.chip
        pub_area = chip.area_mm2.value if chip.area_mm2 else math.nan
        pub_power = chip.power_w.value if chip.power_w else math.nan
        print(
            f"{chip.name:<26} {_num(row.area_mm2, 'mm2'):>11} {_num(pub_area, 'mm2'):>11} "
            f"{_err(row.area_error).split()[0]:>7}   {_num(row.power_w, 'W'):>11} {_num(pub_power, 'W'):>11} "
            f"{_err(row.power_error).split()[0]:>7}"
        )


if __name__ == "__main__":
    main()
