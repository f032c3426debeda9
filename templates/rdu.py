"""The RDU template: a reconfigurable dataflow unit with PCUs, PMUs and a three-tier memory (SRAM/HBM/DDR).

Why a template: SN40L-class chips run a graph as a sequence of *sections*, each a spatial pipeline of
operators on pattern compute units (PCUs: ``lanes`` SIMD lanes x ``stages`` pipeline stages) fed by pattern
memory units (PMUs: banked scratchpads), with the chip reconfigured between sections. A point names a preset
(``sn40l`` or ``plasticine``, every number from ``hwmodels.catalogs.rdu`` with its source) and may override any
number: PCU/PMU counts, PMU size (or the total ``sram_mb``), clock, network, tier capacities and bandwidths,
section switch time. ``sockets`` > 1 makes a node of identical sockets joined by links (``link_gbps``,
``link_latency_us``) running the graph with ``tensor`` or ``pipeline`` parallelism (``hwmodels.rdu.node``);
the ``sn40l_node`` preset is the 8-socket SN40L node. ``ssm_ext`` adds SSM-RDU's FFT/scan interconnect
(spatial butterflies and parallel scan).

Precision is the workload's: the preset's ``native_precision`` runs at the full PCU rate, a wider one at
native_bits/bits of it (fp32 on a bf16 PCU: half), a narrower one at the native rate (no packing assumed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from hwmodels.catalogs import rdu as rdu_catalog
from hwmodels.catalogs.actions import price_names
from templates.base import Arch, Param, Template, TemplateError

PRECISION_BITS = {"int8": 8, "int16": 16, "fp16": 16, "bf16": 16, "int32": 32, "fp32": 32}
DEFAULT_PRESET = "sn40l"
# Parameters a preset supplies and a point may override.
OVERRIDABLE = (
    "pcus",
    "pcu_lanes",
    "pcu_stages",
    "pmus",
    "pmu_kib",
    "clock_mhz",
    "noc_gbps",
    "hbm_gb",
    "hbm_gbps",
    "ddr_gb",
    "ddr_gbps",
    "reconfig_us",
    "sockets",
    "link_gbps",
    "link_latency_us",
)
PARALLELISM = ("tensor", "pipeline")


@dataclass(frozen=True)
class RduArch(Arch):
    """One RDU, resolved to plain numbers."""

    kind: ClassVar[str] = "rdu"

    preset: str
    pcus: int
    pcu_lanes: int
    pcu_stages: int
    pmus: int
    pmu_kib: float
    clock_mhz: float
    noc_gbps: float
    hbm_gb: float
    hbm_gbps: float
    ddr_gb: float
    ddr_gbps: float
    reconfig_us: float
    precision: str
    native_precision: str
    ssm_ext: bool
    tech: str
    hbm_kind: str
    ddr_kind: str
    sockets: int = 1
    link_gbps: float = 100.0
    link_latency_us: float = 2.0
    parallelism: str = "tensor"

    @property
    def elem_bytes(self) -> int:
        return max(1, PRECISION_BITS[self.precision] // 8)

    @property
    def rate(self) -> float:
        """Share of the native per-FU rate this precision runs at (1 for native or narrower)."""
        return min(1.0, PRECISION_BITS[self.native_precision] / PRECISION_BITS[self.precision])

    @property
    def macs_per_pcu_cycle(self) -> float:
        return self.pcu_lanes * self.pcu_stages * self.rate

    @property
    def peak_tflops(self) -> float:
        return 2 * self.pcus * self.macs_per_pcu_cycle * self.clock_mhz * 1e6 / 1e12

    @property
    def pmu_bytes(self) -> int:
        return int(self.pmu_kib * 1024)

    @property
    def sram_bytes(self) -> int:
        return self.pmus * self.pmu_bytes


class RduTemplate(Template):
    kind: ClassVar[str] = "rdu"

    def params(self) -> list[Param]:
        presets = rdu_catalog.preset_names()
        return [
            Param("preset", "str", DEFAULT_PRESET, "reference RDU whose numbers are the defaults", choices=presets),
            Param("pcus", "int", None, "pattern compute units (default: the preset's)", low=1, high=100_000),
            Param("pcu_lanes", "int", None, "SIMD lanes per PCU", low=1, high=1024),
            Param("pcu_stages", "int", None, "pipeline stages per PCU", low=1, high=64),
            Param("pmus", "int", None, "pattern memory units", low=1, high=100_000),
            Param("pmu_kib", "float", None, "scratchpad per PMU", low=1, unit=" KiB"),
            Param("sram_mb", "float", None, "total on-chip SRAM (split over the PMUs; not with pmu_kib)", low=0.01),
            Param("clock_mhz", "float", None, "PCU/PMU clock", low=50, high=10_000, unit=" MHz"),
            Param("noc_gbps", "float", None, "on-chip network / PMU bandwidth, aggregate", low=1, unit=" GB/s"),
            Param("hbm_gb", "float", None, "HBM capacity (0: no HBM tier)", low=0.0, unit=" GB"),
            Param("hbm_gbps", "float", None, "HBM bandwidth", low=0.001, unit=" GB/s"),
            Param("ddr_gb", "float", None, "DDR capacity (0: no DDR tier)", low=0.0, unit=" GB"),
            Param("ddr_gbps", "float", None, "DDR bandwidth", low=0.001, unit=" GB/s"),
            Param("reconfig_us", "float", None, "section switch (reconfiguration) time", low=0.0, unit=" us"),
            Param("precision", "str", "bf16", "operand precision (from the workload)", choices=tuple(PRECISION_BITS)),
            Param("ssm_ext", "bool", False, "SSM-RDU FFT/scan interconnect extensions (spatial FFT, parallel scan)"),
            Param("tech", "str", None, "technology for area/energy (default: the preset's)"),
            Param("sockets", "int", None, "RDU sockets in the node (default: the preset's)", low=1, high=64),
            Param("link_gbps", "float", None, "socket-to-socket link bandwidth per socket", low=0.001, unit=" GB/s"),
            Param("link_latency_us", "float", None, "socket-to-socket latency per hop", low=0.0, unit=" us"),
            Param(
                "parallelism",
                "str",
                "tensor",
                "how sockets share the graph: tensor (every op split, all-reduce on the link) or pipeline "
                "(consecutive layers per socket)",
                choices=PARALLELISM,
            ),
        ]

    def instantiate(self, point: Mapping[str, Any]) -> RduArch:
        v = self.resolve(point)
        spec = rdu_catalog.preset(v["preset"])
        if v["precision"] not in spec.precisions:
            raise TemplateError(
                f"precision={v['precision']!r} is not supported by the {spec.display}; "
                f"choose one of: {', '.join(spec.precisions)}",
                "precision",
            )
        if v["sram_mb"] is not None and v["pmu_kib"] is not None:
            raise TemplateError("give either sram_mb (split over the PMUs) or pmu_kib, not both", "sram_mb")

        def pick(name: str) -> float:
            return v[name] if v[name] is not None else getattr(spec, name).value

        pmus = int(pick("pmus"))
        pmu_kib = v["sram_mb"] * 1e6 / pmus / 1024 if v["sram_mb"] is not None else float(pick("pmu_kib"))
        if pmu_kib < 1:
            raise TemplateError(
                f"sram_mb={v['sram_mb']:g} over {pmus} PMUs leaves {pmu_kib:.2f} KiB per PMU; each needs >= 1 KiB",
                "sram_mb",
            )
        tech = v["tech"] if v["tech"] is not None else spec.tech
        names = list(price_names())
        if tech not in names:
            raise TemplateError(
                f"tech={tech!r} is neither a catalog node nor an action table; choose one of: {', '.join(names)}",
                "tech",
            )
        return RduArch(
            preset=spec.name,
            pcus=int(pick("pcus")),
            pcu_lanes=int(pick("pcu_lanes")),
            pcu_stages=int(pick("pcu_stages")),
            pmus=pmus,
            pmu_kib=float(pmu_kib),
            clock_mhz=float(pick("clock_mhz")),
            noc_gbps=float(pick("noc_gbps")),
            hbm_gb=float(pick("hbm_gb")),
            hbm_gbps=float(pick("hbm_gbps")),
            ddr_gb=float(pick("ddr_gb")),
            ddr_gbps=float(pick("ddr_gbps")),
            reconfig_us=float(pick("reconfig_us")),
            precision=v["precision"],
            native_precision=spec.native_precision,
            ssm_ext=bool(v["ssm_ext"]),
            tech=tech,
            hbm_kind=spec.hbm_kind,
            ddr_kind=spec.ddr_kind,
            sockets=int(pick("sockets")),
            link_gbps=float(pick("link_gbps")),
            link_latency_us=float(pick("link_latency_us")),
            parallelism=v["parallelism"],
        )
