"""The hardware-model contract: ``evaluate(mapping, arch) -> Metrics``.

Metrics are plain numbers with fixed names and units, so the explorer, the
store and the report can treat every template alike; ``design_figures`` derives
the whole-design ones from a design's totals the same way for every model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dse.graph import Graph
from hwmodels.columns import rate
from mappers.base import Mapping
from templates.base import Arch

# name -> (unit, better direction, description); objectives and constraints name these.
METRICS: dict[str, tuple[str, str, str]] = {
    "latency_ms": ("ms", "min", "end-to-end latency of one inference (one batch)"),
    "latency_cycles": ("cycles", "min", "end-to-end latency in clock cycles"),
    "throughput_ips": ("inferences/s", "max", "batch / latency"),
    "energy_mj": ("mJ", "min", "energy of one inference (one batch)"),
    "edp": ("mJ*ms", "min", "energy-delay product"),
    "area_mm2": ("mm^2", "min", "silicon area"),
    "power_w": ("W", "min", "average power while running the workload"),
    "utilization": ("fraction", "max", "MAC-weighted utilization of the compute array"),
    "dram_mb": ("MB", "min", "DRAM (off-chip) traffic, reads + writes"),
    "tops_per_w": ("TOPS/W", "max", "effective arithmetic throughput per watt"),
    # LLM serving (RDU family; workloads with an llm phase)
    "tokens_per_s": ("tokens/s", "max", "tokens generated (decode) or processed (prefill) per second"),
    "ttft_ms": ("ms", "min", "time to first token: one prefill step"),
    "tpot_ms": ("ms", "min", "time per output token: one decode step"),
    "footprint_sram_mb": ("MB", "min", "bytes resident in on-chip SRAM"),
    "footprint_hbm_gb": ("GB", "min", "bytes resident in HBM"),
    "footprint_ddr_gb": ("GB", "min", "bytes resident in DDR (all experts for a Composition of Experts)"),
    "switch_ms": ("ms", "min", "Composition of Experts: time to copy one expert into HBM"),
    "coe_tokens_per_s": ("tokens/s", "max", "Composition of Experts: tokens/s under the request mix, with switches"),
    # FPGA resources (fpga_dataflow template)
    "dsp": ("DSP slices", "min", "DSP slices used"),
    "lut": ("LUTs", "min", "lookup tables used"),
    "ff": ("FFs", "min", "flip-flops used"),
    "bram": ("BRAM18K", "min", "18 Kb block RAMs used"),
    "ii_cycles": ("cycles", "min", "initiation interval: cycles between successive inputs"),
    "dsp_util": ("fraction", "min", "DSP slices used / available on the target part"),
    "lut_util": ("fraction", "min", "LUTs used / available on the target part"),
    "ff_util": ("fraction", "min", "flip-flops used / available on the target part"),
    "bram_util": ("fraction", "min", "BRAM18K used / available on the target part"),
    "fpga_util": ("fraction", "min", "largest of the DSP/LUT/FF/BRAM utilisations (constrain it to fit the part)"),
    # accuracy of the quantized network on workload.data (hwmodels.accuracy; needs a trained .onnx model)
    "accuracy": ("fraction", "max", "top-1 accuracy (R^2 for regression) of the quantized network on workload.data"),
    "accuracy_drop": ("fraction", "min", "float network's accuracy minus the quantized network's"),
    "argmax_agreement": ("fraction", "max", "share of samples whose quantized argmax equals the float network's"),
    "max_abs_error": ("value", "min", "largest |quantized - float| over every output of every sample"),
}


@dataclass
class LayerMetrics:
    """Per-op figures. Energies in pJ, traffic in bytes."""

    layer: str
    kind: str
    cycles: float
    compute_cycles: float
    stall_cycles: float
    macs: int
    utilization: float
    dram_read_bytes: float
    dram_write_bytes: float
    sram_read_bytes: float = 0.0
    sram_write_bytes: float = 0.0
    energy_pj: float = 0.0
    energy_breakdown_pj: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        # A shallow copy, not dataclasses.asdict: asdict's deep copy cost more than evaluating the op.
        d = {name: value for name, value in vars(self).items() if name not in ("energy_breakdown_pj", "extra")}
        d.update({f"energy_{k}_pj": v for k, v in self.energy_breakdown_pj.items()})
        d.update(self.extra)
        return d


@dataclass
class Metrics:
    """Whole-workload figures for one design. ``values`` holds the METRICS names that apply."""

    values: dict[str, float]
    energy_breakdown_pj: dict[str, float] = field(default_factory=dict)
    layers: list[LayerMetrics] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # mapper/solver facts, notes

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def flat(self) -> dict[str, float]:
        """Scalar metrics plus the energy breakdown as ``energy_<component>_mj`` columns and the area breakdown
        (``info["area_breakdown_mm2"]``, where the model gives one) as ``area_<block>_mm2`` columns."""
        out = dict(self.values)
        out.update({f"energy_{k}_mj": v * 1e-9 for k, v in self.energy_breakdown_pj.items()})
        out.update({f"area_{k}_mm2": v for k, v in area_blocks_mm2(self.info).items()})
        return out


AREA_TOTAL = "total"  # the area breakdown's sum entry, not a block of its own


@dataclass(frozen=True)
class ArrayMetrics:
    """``Metrics`` of N designs of one graph without the per-layer rows (what a family's array evaluator gives):
    each entry a column over the designs, or one number for all of them."""

    values: dict[str, Any]
    energy_breakdown_pj: dict[str, Any]
    area_breakdown_mm2: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.values.values()))) if self.values else 0

    def flat_columns(self) -> dict[str, np.ndarray]:
        """``Metrics.flat()`` of every design as float columns, in its order: the values, ``energy_<part>_mj``,
        then ``area_<block>_mm2``."""
        columns = dict(self.values)
        columns.update({f"energy_{k}_mj": v * 1e-9 for k, v in self.energy_breakdown_pj.items()})
        blocks = self.area_breakdown_mm2.items()
        columns.update({f"area_{k}_mm2": v for k, v in blocks if k != AREA_TOTAL})
        n = len(self)
        return {
            name: np.broadcast_to(np.asarray(v, dtype=float).reshape(-1), (n,)).copy() for name, v in columns.items()
        }

    def flat_rows(self) -> list[dict[str, float]]:
        """``flat_columns`` as one dict per design."""
        columns = self.flat_columns()
        return [dict(zip(columns, row)) for row in zip(*(c.tolist() for c in columns.values()))]


@dataclass
class ArrayEvaluator:
    """What every family's array evaluator shares: the graph, the spec's fixed parameters (as in
    ``PointEvaluator``) and its metrics flattened as ``Metrics.flat()`` flattens the scalar path's. A family adds
    ``evaluate_points`` and ``batch_points``."""

    graph: Graph
    fixed: dict

    @staticmethod
    def flat_columns(metrics: ArrayMetrics) -> dict[str, np.ndarray]:
        """``Metrics.flat()`` of every design as columns (``ArrayMetrics.flat_columns``)."""
        return metrics.flat_columns()

    @staticmethod
    def flat_rows(metrics: ArrayMetrics) -> list[dict[str, float]]:
        """``Metrics.flat()`` of every design, one dict each."""
        return metrics.flat_rows()


def area_blocks_mm2(info: dict[str, Any]) -> dict[str, float]:
    """The area per block a model put in its ``info`` (without a ``total`` entry), or nothing."""
    blocks = info.get("area_breakdown_mm2") or {}
    return {block: float(mm2) for block, mm2 in blocks.items() if block != AREA_TOTAL}


@dataclass(frozen=True)
class DesignFigures:
    """The whole-design metrics every hardware model derives from its totals (``design_figures``)."""

    latency_ms: float
    throughput_ips: float
    energy_mj: float
    edp: float
    power_w: float
    tops_per_w: float


def design_figures(
    *,
    seconds: float,
    energy_pj: float,
    ops: float,
    batch: float,
    throughput_ips: float | None = None,
    interval_seconds: float | None = None,
) -> DesignFigures:
    """Latency, throughput, energy, EDP, power and TOPS/W of one evaluation of a design from its totals.

    One formula for every hardware model, so a metric means the same in every family; a zero latency gives
    zero rates rather than a division error. ``seconds`` and ``energy_pj``: one evaluation's latency and
    energy; ``ops``: its arithmetic operations (2 x MACs, or the graph's flops); ``batch``: the inferences it
    completes (times the evaluations in flight); ``throughput_ips``: the sustained rate of a design that
    pipelines evaluations, in place of ``batch / seconds``; ``interval_seconds``: for such a design, the time
    between the starts of successive evaluations, over which ``energy_pj`` is spent (power, ops/s and the default
    throughput use it in place of the latency; the EDP keeps the latency).
    """
    busy = seconds if interval_seconds is None else interval_seconds
    energy_mj = energy_pj * 1e-9
    latency_ms = seconds * 1e3
    power_w = rate(energy_pj * 1e-12, busy)
    ops_per_s = rate(ops, busy)
    if throughput_ips is None:
        throughput_ips = rate(batch, busy)
    return DesignFigures(
        latency_ms=latency_ms,
        throughput_ips=throughput_ips,
        energy_mj=energy_mj,
        edp=energy_mj * latency_ms,
        power_w=power_w,
        tops_per_w=rate(ops_per_s / 1e12, power_w),
    )


def graph_batch(graph: Graph) -> int:
    """The inferences one evaluation of ``graph`` runs: its workload batch (1 where it has none)."""
    return graph.batch


class HwModel(Protocol):
    name: str

    def evaluate(self, mapping: Mapping, arch: Arch) -> Metrics: ...
