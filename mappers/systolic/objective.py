"""How the tiling mappers score a schedule: the objective's prices (DRAM bytes, cycles or picojoules
at the catalog prices of ``hwmodels.systolic.pricing``) and the integer score of a unit's candidates
in one residency mode of its operands."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hwmodels.systolic.compute import LoweredGemm
from hwmodels.systolic.pricing import Prices, array_sram_share, design_prices, pe_words
from mappers.base import MappingError
from mappers.systolic.nest import ROLE_OUTPUT
from templates.systolic import SystolicArch

OBJECTIVES = ("dram", "latency", "energy")


@dataclass(frozen=True)
class CostModel:
    """How a unit's (candidate, residency) pair is scored: DRAM bytes, cycles or picojoules.

    Latency per unit is max(compute cycles, DRAM bytes / bytes per cycle) (double-buffered tiles
    overlap transfers with compute; single-buffered ones, ``overlapped`` False, add them); energy is DRAM + SRAM
    bytes at catalog prices plus leakage over that latency (MAC energy is the same for every schedule and left
    out). ``array_sram_share`` is what one unit's PE scratchpads leave of its array-side SRAM energy
    (``unit_cost_model``; 1 with registers only); the PE storage energy they add is the same for every schedule
    of the unit and left out, as the MACs are.
    """

    objective: str = "dram"
    bytes_per_cycle: float = 1.0
    dram_pj_per_byte: float = 0.0
    sram_pj_per_byte: float = 0.0
    leakage_pj_per_cycle: float = 0.0
    array_sram_share: float = 1.0
    overlapped: bool = True


def cost_model(arch: SystolicArch, objective: str, overlapped: bool = True) -> CostModel:
    """The objective's prices for ``arch`` (energy prices from the technology catalog)."""
    if objective not in OBJECTIVES:
        raise MappingError(f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    if objective == "dram":  # prices nothing of the arch: one cache entry serves every array shape
        return CostModel(objective)
    bpc = float(getattr(arch, "dram_bytes_per_cycle", 1.0))
    if objective == "latency":
        return CostModel(objective, bpc, overlapped=overlapped)
    prices = design_prices(arch)
    return CostModel(
        objective,
        bpc,
        dram_pj_per_byte=prices.e_dram_read,
        sram_pj_per_byte=prices.e_sram["ifmap"],
        leakage_pj_per_cycle=prices.leakage_pj_per_cycle,
        overlapped=overlapped,
    )


def reuse_priced(model: CostModel, arch: SystolicArch) -> bool:
    """Whether ``model`` differs from unit to unit (``unit_cost_model``): the energy objective on PE scratchpads."""
    return model.objective == "energy" and any(words != 1 for words in pe_words(arch).values())


def unit_cost_model(model: CostModel, arch: SystolicArch, gemm: LoweredGemm | None, prices: Prices) -> CostModel:
    """``model`` for one unit: its array-side SRAM bytes priced after the PE scratchpads' reuse on the unit's GEMM
    (``array_sram_share``, the model's own formula; ``prices``: ``design_prices(arch)``)."""
    share = 1.0 if gemm is None else array_sram_share(gemm, arch, prices)
    return model if share == 1.0 else replace(model, array_sram_share=share)


def mode_traffic(
    traffic: np.ndarray, psum: np.ndarray, roles: tuple[str, ...], resident: tuple[bool, ...], output_bytes: int
) -> np.ndarray:
    """DRAM bytes per candidate when the operands flagged in ``resident`` stay on chip.

    A resident input costs nothing (a resident graph input's one load is paid once, by the
    scheduler); a resident output costs nothing either, except a graph output's one write
    (``output_bytes``), and its partial sums accumulate on chip.
    """
    total = np.zeros(traffic.shape[1], dtype=np.int64)
    for j, role in enumerate(roles):
        if resident[j]:
            if role == ROLE_OUTPUT:
                total = total + output_bytes
            continue
        total = total + traffic[j]
        if role == ROLE_OUTPUT:
            total = total + psum
    return total


def mode_cost(
    traffic: np.ndarray, cycles: np.ndarray, sram_words: np.ndarray, word_bytes: int, model: CostModel
) -> np.ndarray:
    """Integer score per candidate under ``model`` given its DRAM bytes in one residency mode."""
    if model.objective == "dram":
        return traffic.astype(np.int64)
    transfers = np.ceil(traffic / model.bytes_per_cycle)
    latency = np.maximum(cycles, transfers) if model.overlapped else cycles + transfers
    if model.objective == "latency":
        return latency.astype(np.int64)
    energy = (
        traffic * model.dram_pj_per_byte
        + (sram_words * word_bytes * model.array_sram_share + traffic) * model.sram_pj_per_byte
        + latency * model.leakage_pj_per_cycle
    )
    return np.round(energy).astype(np.int64)
