"""Re-derive the catalog's SRAM macro efficiencies (``hwmodels.catalogs.tech_data.SRAM_MACRO_EFFICIENCY``) with CACTI 7.

Why a tool: the shares are outside numbers; this runs the same CACTI configurations that produced them, so a reader
can check them or extend the table (another width, another node) instead of trusting a copied figure. CACTI is not
a dependency of the project: point ``--cacti`` at a folder holding a built ``cacti`` binary (for instance the
sources bundled in the ``hwcomponents-cacti`` 1.0.40 wheel, built with ``make opt``).

    python tools/cacti_sram_table.py --cacti /path/to/cacti [--tech-um 0.065] [--check]

Prints one line per (width, capacity): CACTI's "Area efficiency (Memory cell area/Total area)" of a 1-bank,
1-port RAM in its area-optimal organisation. ``--check`` exits 1 when a catalog entry differs by more than 0.001.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from hwmodels.catalogs.tech import SRAM_MACRO_EFFICIENCY

# The configuration of the runs behind the catalog (hwcomponents-cacti 1.0.40's default_cfg.cfg with the
# objective, cell types and organisation below).
CONFIG = """-Array Power Gating - "false"
-WL Power Gating - "false"
-CL Power Gating - "false"
-Bitline floating - "false"
-Interconnect Power Gating - "false"
-Power Gating Performance Loss "default"
-exclusive read port 0
-exclusive write port 0
-single ended read ports 0
-page size (bits) 0
-burst length 8
-internal prefetch width 8
-operating temperature (K) 300
-NUCAdesign objective (weight delay, dynamic power, leakage power, cycle time, area) 100:100:0:0:100
-NUCAdeviate (delay, dynamic power, leakage power, cycle time, area) 10:10000:10000:10000:10000
-Cache model (NUCA, UCA)  - "UCA"
-NUCA bank count 0
-Wire signaling (fullswing, lowswing, default) - "Global_30"
-Wire inside mat - "semi-global"
-Wire outside mat - "semi-global"
-Interconnect projection - "normal"
-Core count 1
-Add ECC - "false"
-Print level (DETAILED, CONCISE) - "DETAILED"
-Print input parameters - "true"
-Force cache config - "false"
-Ndwl 1
-Ndbl 1
-Nspd 0
-Ndcm 1
-Ndsam1 0
-Ndsam2 0
-dram_type "DDR3"
-io state "WRITE"
-addr_timing 1.0
-mem_density 4 Gb
-bus_freq 800 MHz
-duty_cycle 1.0
-activity_dq 1.0
-activity_ca 0.5
-num_dq 72
-num_dqs 18
-num_ca 25
-num_clk  2
-num_mem_dq 2
-mem_data_width 8
-rtt_value 10000
-ron_value 34
-tflight_value
-num_bobs 1
-capacity 80
-num_channels_per_bob 1
-first metric "Cost"
-second metric "Bandwidth"
-third metric "Energy"
-DIMM model "ALL"
-mirror_in_bob "F"
-design objective (weight delay, dynamic power, leakage power, cycle time, area) 0:0:0:0:100
-deviate (delay, dynamic power, leakage power, cycle time, area) 100000:100000:100000:100000:1000000
-Optimize ED or ED^2 (ED, ED^2, NONE): "NONE"
-Data array cell type - "itrs-hp"
-Data array peripheral type - "itrs-hp"
-Tag array cell type - "itrs-hp"
-Tag array peripheral type - "itrs-hp"
-access mode (normal, sequential, fast) - "normal"
-size (bytes) {size}
-read-write port 1
-block size (bytes) {block}
-technology (u) {tech_um}
-output/input bus width {bus_bits}
-UCA bank count 1
-cache type "ram"
-tag size (b) "default"
-associativity 1
"""
EFFICIENCY = re.compile(r"Area efficiency \(Memory cell area/Total area\) - ([\d.]+) %")


def cacti_efficiency(cacti_dir: Path, size: int, width_bits: int, tech_um: float) -> float:
    """CACTI 7's bitcell share of a ``size``-byte RAM read ``width_bits`` at a time."""
    block = width_bits // 8
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as cfg:
        cfg.write(CONFIG.format(size=size, block=block, tech_um=tech_um, bus_bits=width_bits))
    out = subprocess.run(
        ["./cacti", "-infile", cfg.name], cwd=cacti_dir, capture_output=True, text=True, timeout=600
    ).stdout
    Path(cfg.name).unlink()
    match = EFFICIENCY.search(out)
    if match is None:
        raise SystemExit(
            f"cacti_sram_table: CACTI gave no area efficiency for {size} B x {width_bits} b:\n{out[-2000:]}"
        )
    return float(match.group(1)) / 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cacti", required=True, type=Path, help="folder holding a built cacti binary")
    ap.add_argument("--tech-um", type=float, default=0.065, help="CACTI technology node in um (default 0.065)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the catalog differs by more than 0.001")
    args = ap.parse_args()
    if not (args.cacti / "cacti").is_file():
        raise SystemExit(f"cacti_sram_table: no cacti binary in {args.cacti}")
    worst = 0.0
    for width, rows in SRAM_MACRO_EFFICIENCY.items():
        for size, catalog in rows:
            share = cacti_efficiency(args.cacti, size, width, args.tech_um)
            worst = max(worst, abs(share - catalog.value))
            print(f"{width:>4} bits {size:>8} B: CACTI {share:.5f}, catalog {catalog.value:.5f}")
    print(f"largest difference from the catalog: {worst:.5f}")
    if args.check and worst > 1e-3:
        sys.exit(1)


if __name__ == "__main__":
    main()
