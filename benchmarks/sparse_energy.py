"""Energy per inference of one layer (a 3x3 conv, 56x56x128 -> 128, on a 32x32 ws array, 16 nm) against
weight density, for gating and skipping with bitmask / run-length / CSR formats. Sparseloop (Wu et al.,
MICRO 2022, Sec. VII) reports the same shape for comparable designs: savings grow as density falls,
gating saves compute energy only, and a format's metadata makes it cost more than dense storage above a
crossover density (bitmask pays off over a wider range than coordinate lists at moderate density).

    .venv/bin/python benchmarks/sparse_energy.py
"""

from __future__ import annotations

from dse.evaluate import PointEvaluator
from dse.graph import GraphBuilder, OpSparsity
from dse.importers.sparsity import with_sparsity

DENSITIES = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
DESIGNS = [("gate", "bitmask"), ("gate", "rle"), ("skip", "bitmask"), ("skip", "csr")]


def layer_energy_uj(density: float, mac: str | None, rep: str) -> float:
    b = GraphBuilder("layer")
    b.output(b.conv(b.input("x", (1, 128, 56, 56)), 128, 3, name="conv"))
    graph = with_sparsity(b.build(), {"conv": OpSparsity(weight_density=density)})
    point = {"rows": 32, "cols": 32, "dataflow": "ws", "sram_kib": 384, "tech": "asic-16nm"}
    if mac:
        point.update(sparsity_support=True, sparse_mac=mac, sparse_rep=rep)
    return PointEvaluator(graph, "systolic", "fold")(point).values["energy_mj"] * 1e3


def main() -> None:
    dense = layer_energy_uj(1.0, None, "")
    print(f"dense array: {dense:.1f} uJ")
    print(f"{'density':>8} " + " ".join(f"{m + '/' + r:>14}" for m, r in DESIGNS) + "   (energy / dense array)")
    for d in DENSITIES:
        row = [layer_energy_uj(d, m, r) / dense for m, r in DESIGNS]
        print(f"{d:>8.1f} " + " ".join(f"{x:>14.3f}" for x in row))


if __name__ == "__main__":
    main()
