"""The RDU performance, energy and area model: a section plan on an RduArch -> Metrics.

Latency, energy and traffic come from ``hwmodels.rdu.cost.plan_cost`` (the function the CP-SAT model
linearises), so the mapper's objective and the reported metrics agree exactly; energy prices and area are
``hwmodels.rdu.cost``'s (see its docstring).
"""

from __future__ import annotations

from typing import Any

from hwmodels.base import LayerMetrics, Metrics, design_figures, graph_batch
from hwmodels.catalogs.rdu import LINK_ENERGY_PJ_PER_BIT
from hwmodels.rdu.cost import plan_cost, rdu_area_mm2
from hwmodels.rdu.node import link_bytes, link_ps, throughput_factor
from hwmodels.rdu.serving import serving_metrics
from mappers.base import Mapping
from mappers.payloads import SectionPlan
from mappers.rdu.problem import build_problem
from templates.rdu import RduArch


class RduModel:
    """Section-pipeline latency, tiered traffic energy and Plasticine-scaled area for an RduArch."""

    name = "rdu_sections"

    def evaluate(self, mapping: Mapping, arch: RduArch) -> Metrics:
        problem = build_problem(mapping.graph, arch, mapping.solver.get("objective_name", "latency"))
        plan = mapping.solver["plan"]
        cost = plan_cost(problem, plan)
        link, link_parts = link_ps(mapping.graph, arch)
        seconds = (cost.latency_ps + link) * 1e-12
        in_flight = throughput_factor(arch)
        clock_hz = arch.clock_mhz * 1e6
        area = {k: v * arch.sockets for k, v in rdu_area_mm2(arch).items()}
        energy_pj = {k: v / 1000 for k, v in cost.energy_parts_fj.items()}
        if arch.sockets > 1:
            energy_pj["link"] = link_bytes(mapping.graph, arch) * 8 * LINK_ENERGY_PJ_PER_BIT.value
        design = design_figures(
            seconds=seconds,
            energy_pj=sum(energy_pj.values()),
            ops=mapping.graph.flops,
            batch=in_flight * graph_batch(mapping.graph),
        )
        energy_mj = design.energy_mj
        peak = arch.peak_tflops * 1e12 * arch.sockets
        flops = mapping.graph.flops
        busy = sum(s.pcus * (s.seconds_ps + problem.reconfig_ps) for s in cost.sections)
        pcu_occupancy = busy / (problem.arch.pcus * cost.latency_ps) if cost.latency_ps else 0.0
        # power in its own rounding order (energy_mj * 1e-3, not energy_pj * 1e-12): the same figure to the
        # last bit or two; design_figures' order would change stored values, so it stays until a review agrees
        power_w = energy_mj * 1e-3 / seconds if seconds > 0 else 0.0
        section_of = {i: s for s, sec in enumerate(cost.sections) for i in range(sec.first, sec.last + 1)}
        layers = []
        for i, op in enumerate(mapping.graph.ops):
            section = mapping.ops[op.name].payload_as(SectionPlan)
            op_s = cost.op_ps[i] * 1e-12
            util = op.flops / (op_s * 2 * section.pcus * arch.macs_per_pcu_cycle * clock_hz) if op_s > 0 else 0.0
            extra: dict[str, Any] = {
                "section": section_of[i],
                "pcus": section.pcus,
                "pmus": section.pmus,
                "tiers": ",".join(f"{k}={v}" for k, v in section.tiers.items()),
            }
            layers.append(
                LayerMetrics(
                    layer=op.name,
                    kind=op.kind.value,
                    cycles=cost.op_ps[i] * 1e-12 * clock_hz,
                    compute_cycles=cost.op_ps[i] * 1e-12 * clock_hz,
                    stall_cycles=0.0,
                    macs=op.macs,
                    utilization=min(1.0, util),
                    dram_read_bytes=0.0,
                    dram_write_bytes=0.0,
                    extra=extra,
                )
            )
        values = {
            "latency_ms": design.latency_ms,
            "latency_cycles": seconds * clock_hz,
            "throughput_ips": design.throughput_ips,
            "energy_mj": energy_mj,
            "edp": design.edp,
            "area_mm2": area["total"],
            "power_w": power_w,
            "utilization": flops / (peak * seconds) if seconds > 0 else 0.0,
            "dram_mb": (cost.traffic["hbm"] + cost.traffic["ddr"]) / 1e6,
            "tops_per_w": (flops / seconds / 1e12) / power_w if power_w > 0 else 0.0,
            **serving_metrics(problem, plan.tiers, seconds, in_flight),
        }
        info = {
            "mapper": mapping.mapper,
            "preset": arch.preset,
            "sections": len(cost.sections),
            "pcu_occupancy": pcu_occupancy,
            "sram_mb": cost.traffic["sram"] / 1e6,
            "hbm_mb": cost.traffic["hbm"] / 1e6,
            "ddr_mb": cost.traffic["ddr"] / 1e6,
            "sram_resident_mb": cost.sram_resident_bytes / 1e6,
            "reconfig_ms": problem.reconfig_ps * len(cost.sections) * 1e-9,
            "sockets": arch.sockets,
            "parallelism": arch.parallelism,
            "link_ms": {k: v * 1e-9 for k, v in link_parts.items()},
            "area_breakdown_mm2": area,
            "solver": {k: v for k, v in mapping.solver.items() if k != "plan"},
            "feasible": cost.feasible,
            "exact": mapping.solver.get("status") in ("OPTIMAL", "GREEDY"),
        }
        return Metrics(values=values, energy_breakdown_pj=energy_pj, layers=layers, info=info)
