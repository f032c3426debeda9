"""The multicore template: K systolic cores (each its own rows, cols, dataflow and SRAM: heterogeneous
mixes allowed), an on-chip interconnect between them and one shared DRAM.

Every core is a ``templates.systolic.SystolicArch``, so a layer's cost on a core is the systolic model's
(``hwmodels.systolic.cost.gemm_cost``); this template only adds what several cores share:

- the interconnect: ``bus`` (every pair of cores one hop apart, one shared medium) or ``mesh`` (a 2-D mesh
  of ``mesh_cols`` columns, XY routing, hops = Manhattan distance), each link ``link_gbps`` wide, a hop
  costing ``hop_latency_cycles`` and ``noc_pj_per_byte`` per byte;
- the DRAM: ``dram_gbps`` in total over ``dram_channels`` channels; a core's DMA drives one channel at a
  time, so one core sees ``dram_gbps / dram_channels`` and at most ``dram_channels`` cores stream at once.

The core mix is given either as one ``cores`` string (searchable as a list of mixes), e.g.
``"32x32:ws:256+16x64:os:128"`` = ROWSxCOLS:DATAFLOW[:SRAM_KIB] per core joined by ``+``, or, when
``cores`` is empty, by ``num_cores`` and per-slot parameters ``core0_rows``, ``core0_cols``,
``core0_dataflow``, ``core0_sram_kib``, ... (each searchable on its own).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from hwmodels.catalogs.noc import NOC_PJ_PER_BYTE_HOP
from templates.base import Arch, Param, Template, TemplateError
from templates.systolic import DATAFLOWS, PE_SCRATCHPADS, PRECISIONS, SystolicArch, SystolicTemplate

MAX_CORES = 8
INTERCONNECTS = ("bus", "mesh")
DEFAULT_CORE_SRAM_KIB = 192.0
SLOT_FIELDS = ("rows", "cols", "dataflow", "sram_kib")
_CORE_RE = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*:\s*(ws|os|is)\s*(?::\s*(\d+(?:\.\d+)?)\s*)?$")
CORES_FORMAT = "ROWSxCOLS:DATAFLOW[:SRAM_KIB] per core joined by '+', e.g. '32x32:ws:256+16x64:os'"


@dataclass(frozen=True)
class MulticoreArch(Arch):
    """K systolic cores on an interconnect with one shared DRAM (see the module docstring)."""

    kind: ClassVar[str] = "multicore"

    cores: tuple[SystolicArch, ...]
    interconnect: str
    mesh_cols: int
    link_gbps: float
    hop_latency_cycles: int
    noc_pj_per_byte: float
    dram_gbps: float
    dram_channels: int
    freq_mhz: float
    precision: str
    tech: str

    @property
    def num_cores(self) -> int:
        return len(self.cores)

    @property
    def word_bytes(self) -> int:
        return self.cores[0].word_bytes

    @property
    def link_bytes_per_cycle(self) -> float:
        return self.link_gbps * 1e3 / self.freq_mhz

    @property
    def dram_bytes_per_cycle(self) -> float:
        """All channels together, bytes per clock."""
        return self.dram_gbps * 1e3 / self.freq_mhz

    @property
    def total_macs_per_cycle(self) -> int:
        return sum(c.macs_per_cycle for c in self.cores)

    def hops(self, a: int, b: int) -> int:
        """Links a transfer from core ``a`` to core ``b`` crosses (0 on the same core)."""
        if a == b:
            return 0
        if self.interconnect == "bus":
            return 1
        return abs(a // self.mesh_cols - b // self.mesh_cols) + abs(a % self.mesh_cols - b % self.mesh_cols)

    def describe_cores(self) -> str:
        """The mix in the ``cores`` notation."""
        return "+".join(f"{c.rows}x{c.cols}:{c.dataflow}:{c.scratchpad_kib:g}" for c in self.cores)


def parse_cores(text: str) -> list[dict[str, Any]]:
    """``'32x32:ws:256+16x64:os'`` -> one dict per core (rows, cols, dataflow, sram_kib or None)."""
    cores = []
    for i, part in enumerate(text.split("+")):
        m = _CORE_RE.match(part)
        if not m:
            raise TemplateError(f"cores: core {i} {part.strip()!r} is not {CORES_FORMAT}", "cores")
        rows, cols, df, sram = m.groups()
        cores.append({"rows": int(rows), "cols": int(cols), "dataflow": df, "sram_kib": float(sram) if sram else None})
    if len(cores) > MAX_CORES:
        raise TemplateError(f"cores lists {len(cores)} cores; at most {MAX_CORES}", "cores")
    return cores


class MulticoreTemplate(Template):
    kind: ClassVar[str] = "multicore"

    def params(self) -> list[Param]:
        slots = []
        for i in range(MAX_CORES):
            slots += [
                Param(f"core{i}_rows", "int", 32, f"PE rows of core {i}", low=1, high=4096),
                Param(f"core{i}_cols", "int", 32, f"PE columns of core {i}", low=1, high=4096),
                Param(f"core{i}_dataflow", "str", "os", f"dataflow of core {i}", choices=DATAFLOWS),
                Param(f"core{i}_sram_kib", "float", DEFAULT_CORE_SRAM_KIB, f"SRAM of core {i}", low=3, unit=" KiB"),
            ]
        return [
            Param("cores", "str", "", f"the core mix in one string ({CORES_FORMAT}); empty: num_cores + slots"),
            Param("num_cores", "int", 4, "cores when 'cores' is empty (slots core0_* ...)", low=1, high=MAX_CORES),
            *slots,
            Param("interconnect", "str", "mesh", "bus (one hop, shared) or 2-D mesh (XY hops)", choices=INTERCONNECTS),
            Param("mesh_cols", "int", 0, "columns of the mesh (0 = ceil(sqrt(cores)))", low=0, high=MAX_CORES),
            Param("link_gbps", "float", 64.0, "bandwidth of one interconnect link", low=1e-3, unit=" GB/s"),
            Param("hop_latency_cycles", "int", 2, "router + wire latency of one hop", low=0, high=10_000),
            Param(
                "noc_pj_per_byte",
                "float",
                NOC_PJ_PER_BYTE_HOP.value,
                "interconnect energy per byte per hop (" + NOC_PJ_PER_BYTE_HOP.source + ")",
                low=0,
                unit=" pJ",
            ),
            Param("dram_gbps", "float", 25.6, "shared DRAM bandwidth, all channels", low=1e-3, unit=" GB/s"),
            Param("dram_channels", "int", 1, "DRAM channels (cores streaming at once)", low=1, high=64),
            Param("freq_mhz", "float", 1000.0, "clock of every core and the interconnect", low=1, high=10000),
            Param("precision", "str", "int8", "operand precision", choices=tuple(PRECISIONS)),
            Param(
                "tech", "str", "asic-28nm", "technology: a catalog node, or a per-action table (tpu-v4, eyeriss-65nm)"
            ),
            Param("vector_lanes", "int", 0, "SIMD lanes per core (0 = its cols)", low=0, high=65536),
            *(
                Param(
                    f"pe_{role}_words",
                    "int",
                    1,
                    f"{role} words each PE of every core keeps (1 = a register; deeper: a scratchpad, as systolic)",
                    low=1,
                    high=65536,
                )
                for role in PE_SCRATCHPADS
            ),
        ]

    def instantiate(self, point: Mapping[str, Any]) -> MulticoreArch:
        v = self.resolve(point)
        if v["cores"].strip():
            given = [n for n in point if n.startswith("core") and n[4:5].isdigit() or n == "num_cores"]
            if given:
                raise TemplateError(
                    "give the core mix either as 'cores' or as num_cores/core<i>_* slots, not both "
                    f"(also got {given[0]})",
                    given[0],
                )
            mix = parse_cores(v["cores"])
        else:
            mix = [{f: v[f"core{i}_{f}"] for f in SLOT_FIELDS} for i in range(v["num_cores"])]
        systolic = SystolicTemplate()
        cores = []
        for i, core in enumerate(mix):
            sub = {
                "rows": core["rows"],
                "cols": core["cols"],
                "dataflow": core["dataflow"],
                "sram_kib": core["sram_kib"] or DEFAULT_CORE_SRAM_KIB,
                "dram_gbps": v["dram_gbps"] / v["dram_channels"],
                "freq_mhz": v["freq_mhz"],
                "precision": v["precision"],
                "tech": v["tech"],
                "vector_lanes": v["vector_lanes"],
                **{f"pe_{role}_words": v[f"pe_{role}_words"] for role in PE_SCRATCHPADS},
            }
            try:
                cores.append(systolic.instantiate(sub))
            except TemplateError as err:
                name = "cores" if v["cores"].strip() else f"core{i}_{err.param}"
                raise TemplateError(f"core {i}: {err}", name) from None
        mesh_cols = v["mesh_cols"] or math.ceil(math.sqrt(len(cores)))
        return MulticoreArch(
            cores=tuple(cores),
            interconnect=v["interconnect"],
            mesh_cols=mesh_cols,
            link_gbps=v["link_gbps"],
            hop_latency_cycles=v["hop_latency_cycles"],
            noc_pj_per_byte=v["noc_pj_per_byte"],
            dram_gbps=v["dram_gbps"],
            dram_channels=v["dram_channels"],
            freq_mhz=v["freq_mhz"],
            precision=v["precision"],
            tech=v["tech"],
        )
