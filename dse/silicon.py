"""The model against published silicon: area and power of the dse design that matches each chip in
``hwmodels.catalogs.chips``, measured the way the paper measured it.

Why here and not in the benchmark: the fast test runs the same comparison on one or two chips, and tests may
not import benchmarks. ``benchmarks/silicon_compare.py`` prints the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.importers.scalesim_csv import load_scalesim_csv
from dse.zoo import build
from hwmodels.base import Metrics
from hwmodels.catalogs.chips import CHIPS, PublishedChip

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class SiliconRow:
    """One chip: the model's figures next to the published ones (NaN where a figure is not compared)."""

    chip: PublishedChip
    area_mm2: float
    power_w: float
    latency_ms: float
    blocks: dict[str, tuple[float, float]]  # model block(s) -> (model mm^2, published mm^2)
    area_blocks: dict[str, float] = field(default_factory=dict)  # the model's area by block
    power_parts: dict[str, float] = field(default_factory=dict)  # 'switching' | 'leakage' -> W

    @property
    def area_error(self) -> float:
        return _error(self.area_mm2, self.chip.area_mm2.value if self.chip.area_mm2 else math.nan)

    @property
    def blocks_together(self) -> tuple[float, float]:
        """(ours, published) mm^2 of every block with a published figure, summed: the like-for-like area where
        the die's own figure also holds what the model has no block for."""
        return sum(o for o, _ in self.blocks.values()), sum(p for _, p in self.blocks.values())

    @property
    def power_error(self) -> float:
        return _error(self.power_w, self.chip.power_w.value if self.chip.power_w else math.nan)


def _error(ours: float, published: float) -> float:
    """Relative error of ``ours`` against ``published`` (NaN when either is missing)."""
    if math.isnan(ours) or math.isnan(published) or published == 0:
        return math.nan
    return ours / published - 1.0


def chip_graph(chip: PublishedChip) -> Graph:
    """The chip's workload: a zoo model, or a SCALE-Sim topology CSV named from the repository root."""
    w = chip.workload
    if w.model.endswith(".csv"):
        return load_scalesim_csv(ROOT / w.model, batch=w.batch, precision=w.precision)
    return build(w.model, batch=w.batch, precision=w.precision)


def chip_power_parts_w(chip: PublishedChip, metrics: Metrics) -> dict[str, float]:
    """The model's power as the paper measured it, from the energy components the published figure includes:
    ``switching``, the energy per MAC (or per inference) at the published MAC rate (or inference rate) when there
    is one, else over the model's own latency; ``leakage``, a power, taken over the model's latency either way."""
    included = {k: v for k, v in metrics.energy_breakdown_pj.items() if k not in chip.power_excludes}
    seconds = metrics["latency_ms"] * 1e-3
    if seconds <= 0:
        return {"switching": math.nan, "leakage": math.nan}
    leakage_w = included.pop("leakage", 0.0) * 1e-12 / seconds
    switching_pj = sum(included.values())
    if chip.rate_macs_per_s is not None:
        macs = sum(layer.macs for layer in metrics.layers)
        switching_w = switching_pj * 1e-12 / macs * chip.rate_macs_per_s.value if macs else math.nan
    elif chip.rate_ips is not None:
        switching_w = switching_pj * 1e-12 / chip.workload.batch * chip.rate_ips.value
    else:
        switching_w = switching_pj * 1e-12 / seconds
    return {"switching": switching_w, "leakage": leakage_w}


def chip_power_w(chip: PublishedChip, metrics: Metrics) -> float:
    """The model's power at the published operating point (``chip_power_parts_w`` summed)."""
    return sum(chip_power_parts_w(chip, metrics).values())


def compare_chip(chip: PublishedChip) -> SiliconRow:
    """Evaluate the chip's matching design on its workload; NaN figures where nothing is compared."""
    if chip.area_mm2 is None and chip.power_w is None:
        return SiliconRow(chip, math.nan, math.nan, math.nan, {})
    evaluator = PointEvaluator(chip_graph(chip), chip.family, fixed={"tech": chip.tech})
    metrics = evaluator(dict(chip.point))
    area = metrics.info.get("area_breakdown_mm2", {})
    blocks = {
        names: (sum(area.get(name, 0.0) for name in names.split("+")), published.value)
        for names, published in chip.blocks_mm2.items()
    }
    return SiliconRow(
        chip=chip,
        area_mm2=metrics["area_mm2"] if chip.area_mm2 is not None else math.nan,
        power_w=chip_power_w(chip, metrics) if chip.power_w is not None else math.nan,
        latency_ms=metrics["latency_ms"],
        blocks=blocks,
        area_blocks=dict(area),
        power_parts=chip_power_parts_w(chip, metrics) if chip.power_w is not None else {},
    )


def compare_all(names: list[str] | None = None) -> list[SiliconRow]:
    return [compare_chip(CHIPS[name]) for name in (names or list(CHIPS))]
