"""What moving data between the cores of a multicore design costs (the cores' own work is priced by the
systolic model): interconnect transfers and DRAM read-backs of spilled tensors."""

from __future__ import annotations

import math

from hwmodels.systolic.pricing import Prices, design_prices
from templates.multicore import MulticoreArch


def link_cycles(arch: MulticoreArch, nbytes: float) -> int:
    """Cycles ``nbytes`` occupy a link (bus, or a mesh core's output and input port): serialisation."""
    return math.ceil(nbytes / arch.link_bytes_per_cycle) if nbytes > 0 else 0


def hop_cycles(arch: MulticoreArch, a: int, b: int) -> int:
    """Head latency from core ``a`` to core ``b`` (wormhole routing: only the head pays per hop)."""
    return arch.hops(a, b) * arch.hop_latency_cycles


def transfer_energy_pj(arch: MulticoreArch, nbytes: float, a: int, b: int) -> float:
    """Interconnect energy: bytes x hops x the per-byte-per-hop price."""
    return nbytes * arch.noc_pj_per_byte * arch.hops(a, b)


def readback_cycles(arch: MulticoreArch, nbytes: float, core: int) -> int:
    """Cycles core ``core``'s DMA needs to read ``nbytes`` back from DRAM (one channel)."""
    return math.ceil(nbytes / arch.cores[core].dram_bytes_per_cycle) if nbytes > 0 else 0


def readback_energy_pj(prices: Prices, nbytes: float) -> float:
    """A DRAM read plus the write into the consumer's ifmap SRAM."""
    return prices.dram_pj(nbytes) + nbytes * prices.sram_write("ifmap")


def multicore_area_mm2(arch: MulticoreArch) -> dict[str, float]:
    """Area per block summed over the cores (the interconnect's routers and wires are not counted)."""
    total: dict[str, float] = {}
    for core in arch.cores:
        for block, mm2 in design_prices(core).area_mm2.items():
            total[block] = total.get(block, 0.0) + mm2
    return total
