"""The multicore hardware model: ``MulticoreModel.evaluate(mapping, arch) -> Metrics`` of a schedule.

The mapping (from ``mappers.multicore``) carries its schedule: every task's core, start and systolic-model
cost. Latency is the makespan; throughput is pipelined (several inferences in flight): the rate at which
the busiest resource -- a core or the shared DRAM -- can repeat its share of one inference (of the
rate-weighted mix, for several models). Energy is the tasks' systolic-model energy, the interconnect
transfers and DRAM read-backs, and every core's leakage over the makespan. Per-model figures go to
``Metrics.info["models"]``; per-layer rows carry the core, the task spans and incoming transfers (the
report's Gantt chart).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dse.graph import OpKind
from hwmodels.base import LayerMetrics, Metrics, design_figures, graph_batch
from hwmodels.multicore.cost import multicore_area_mm2
from mappers.base import Mapping
from mappers.multicore.problem import EdgeActivity
from mappers.multicore.schedule import Schedule, dram_cycles
from templates.multicore import MulticoreArch


@dataclass
class MulticoreModel:
    name: str = "multicore"

    def evaluate(self, mapping: Mapping, arch: MulticoreArch) -> Metrics:  # type: ignore[override]
        schedule: Schedule = mapping.solver["schedule"]
        p = schedule.problem
        freq_hz = arch.freq_mhz * 1e6
        makespan = schedule.makespan
        layer_core = schedule.layer_core
        rows = [_LayerAcc() for _ in p.layers]
        busy = [0.0] * arch.num_cores
        loads = [0.0] * (arch.num_cores + 1)  # rate-weighted busy cycles per core, then the DRAM's
        totals = {"mac": 0.0, "pe_storage": 0.0, "sram": 0.0, "dram": 0.0, "vector": 0.0, "noc": 0.0, "leakage": 0.0}
        for t in p.tasks:
            c = layer_core[t.layer]
            cost = p.costs[t.index][c]
            acc = rows[t.layer]
            acc.add_task(cost, schedule.start[t.index], schedule.end(t.index))
            busy[c] += cost.cycles
            rate = p.layers[t.layer].rate
            loads[c] += rate * cost.cycles
            loads[-1] += rate * dram_cycles(p, t.index, c)
            for k, v in cost.energy_pj.items():
                totals[k] += v
        for i, e in enumerate(p.edges):
            act = schedule.activity(i)
            if act.kind == "none":
                continue
            totals[act.kind] += act.energy_pj
            at = schedule.edge_start[i]
            rows[p.tasks[e.dst].layer].add_transfer(schedule.core(e.src), schedule.core(e.dst), at, act, e.nbytes)
        for prices in p.prices:
            totals["leakage"] += prices.leakage_pj_per_cycle * makespan
        layers = [self._layer(p, li, acc, layer_core[li], arch) for li, acc in enumerate(rows)]
        period = max(loads) if max(loads) > 0 else 1.0
        scale = freq_hz / period  # how many times per second the rate-weighted mix can run
        batch = graph_batch(p.graph)
        latency_s = makespan / freq_hz
        energy_pj = sum(totals.values())
        macs = sum(acc.macs for acc in rows)
        dram_bytes = sum(acc.dram_bytes for acc in rows)
        area = multicore_area_mm2(arch)
        models = self._models(p, schedule, layers, rows, scale, freq_hz)
        design = design_figures(
            seconds=latency_s,
            energy_pj=energy_pj,
            ops=2 * macs,
            batch=batch,
            throughput_ips=batch * scale * sum(m["rate"] for m in models.values()),  # pipelined
        )
        values = {
            "latency_cycles": float(makespan),
            "latency_ms": design.latency_ms,
            "throughput_ips": design.throughput_ips,
            "energy_mj": design.energy_mj,
            # EDP in its own rounding order ((energy_mj * latency_s) * 1e3): the same figure to the last bit;
            # design_figures' order would change stored values, so it stays until a review agrees
            "edp": energy_pj * 1e-9 * latency_s * 1e3,
            "area_mm2": sum(area.values()),
            "power_w": design.power_w,
            "utilization": macs / (makespan * arch.total_macs_per_cycle) if makespan else 0.0,
            "dram_mb": dram_bytes / 1e6,
            "tops_per_w": design.tops_per_w,
        }
        info: dict[str, Any] = {
            "mapper": mapping.mapper,
            "cores": arch.describe_cores(),
            "core_utilization": [b / makespan if makespan else 0.0 for b in busy],
            "pipelined_period_cycles": period,
            "area_breakdown_mm2": area,
            "models": models,
            "fusion_tiles": max(layer.tiles for layer in p.layers),
        }
        return Metrics(values=values, energy_breakdown_pj=totals, layers=layers, info=info)

    @staticmethod
    def _layer(p, li: int, acc: _LayerAcc, core: int, arch: MulticoreArch) -> LayerMetrics:
        layer = p.layers[li]
        head = p.graph.op(layer.name)
        leak = p.prices[core].leakage_pj_per_cycle * acc.cycles
        breakdown = {**acc.energy, "leakage": leak}
        peak = arch.cores[core].macs_per_cycle
        return LayerMetrics(
            layer=layer.name,
            kind=head.kind.value if head.kind is not OpKind.ELEMENTWISE else "vector",
            cycles=acc.cycles,
            compute_cycles=acc.compute,
            stall_cycles=max(0.0, acc.cycles - acc.compute),
            macs=acc.macs,
            utilization=acc.macs / (peak * acc.cycles) if acc.cycles else 0.0,
            dram_read_bytes=acc.rd,
            dram_write_bytes=acc.wr,
            energy_pj=sum(breakdown.values()),
            energy_breakdown_pj=breakdown,
            extra={
                "core": core,
                "model": layer.model,
                "tiles": layer.tiles,
                "start_cycle": min(s for s, _ in acc.spans),
                "end_cycle": max(e for _, e in acc.spans),
                "spans": acc.spans,
                "transfers_in": acc.transfers,
                "ops": len(layer.ops),
            },
        )

    @staticmethod
    def _models(
        p, schedule: Schedule, layers: list[LayerMetrics], rows: list[_LayerAcc], scale: float, freq_hz: float
    ) -> dict:
        """Per-model latency (its first start to its last end), energy and achievable rate."""
        out: dict[str, dict[str, float]] = {}
        for name in p.models:
            mine = [lm for lm, layer in zip(layers, p.layers) if layer.model == name]
            spans = [span for acc, layer in zip(rows, p.layers) if layer.model == name for span in acc.spans]
            rate = next(layer.rate for layer in p.layers if layer.model == name)
            first = min(start for start, _ in spans)
            last = max(end for _, end in spans)
            out[name or "model"] = {
                "latency_ms": (last - first) / freq_hz * 1e3,
                "energy_mj": sum(lm.energy_pj for lm in mine) * 1e-9,
                "rate": rate,
                "throughput_ips": scale * rate,
                "meets_rate": float(scale >= 1.0),
                "macs": float(sum(lm.macs for lm in mine)),
            }
        return out


class _LayerAcc:
    """Sums of one layer's tasks and incoming transfers."""

    def __init__(self) -> None:
        self.cycles = self.compute = self.rd = self.wr = 0.0
        self.macs = 0
        self.energy: dict[str, float] = {
            "mac": 0.0,
            "pe_storage": 0.0,
            "sram": 0.0,
            "dram": 0.0,
            "vector": 0.0,
            "noc": 0.0,
        }
        self.spans: list[list[int]] = []
        self.transfers: list[list[Any]] = []

    @property
    def dram_bytes(self) -> float:
        return self.rd + self.wr

    def add_task(self, cost, start: int, end: int) -> None:
        self.cycles += cost.cycles
        self.compute += cost.compute_cycles
        self.rd += cost.dram_read_bytes
        self.wr += cost.dram_write_bytes
        self.macs += cost.macs
        for k, v in cost.energy_pj.items():
            self.energy[k] += v
        self.spans.append([start, end])

    def add_transfer(self, a: int, b: int, at: int, act: EdgeActivity, nbytes: float) -> None:
        """An incoming transfer or read-back, drawn from its start to when the consumer may use it."""
        self.rd += act.dram_bytes
        self.energy[act.kind] += act.energy_pj
        self.transfers.append([a, b, at, at + act.lag, round(nbytes), act.kind])
