"""The GPU model over arrays of designs: one graph, N designs at once, every design-level metric of
``GpuModel.evaluate`` on the tile mapper's mapping (values and the energy breakdown) equal to it.

Designs are grouped by what shapes the mapping (catalog part, precision and math, execution, GPUs per node,
sparsity, L2 size, tuning); a group is mapped once by ``GpuTileMapper`` (kernels, fusion, L2 residency, sharding
and operand traffic), and the numbers that vary inside it (SMs, clock, peaks, bandwidths, shared memory, TDP,
launch cost, achievable fractions, NVLink) become numpy columns of a ``GpuArch``.

The tile search, which depends on every one of those numbers, runs for all the designs and every tile at once:
``gemm_cost`` (the mapper's and the model's one formula) on a (designs x tiles) grid, ``tile_fits`` and
``tile_allowed`` for legality, and ``tile_rank``'s order (time, then the larger tile, then the first) for the
choice. The group's mapping is made with a stand-in tile (``GpuTileMapper(choose_tile=stand_in_tile)``), so no
scalar tile search runs. The kernels' figures are ``kernel_figures`` and the design's ``design_values``, the functions
``GpuModel.evaluate`` calls, summed in its order. Per-layer rows are not produced.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingType
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from dse.graph import Graph
from hwmodels.base import ArrayEvaluator, ArrayMetrics
from hwmodels.gpu.calibrate_board import with_board_power
from hwmodels.gpu.cost import Gemm, KernelCost, Tile, tile_fits
from hwmodels.gpu.model import collective_seconds, design_values, kernel_figures, memory_cost, tile_cost
from mappers.base import Mapping, MappingError
from mappers.gpu import GpuTileMapper, tile_allowed, tile_grid, tile_rank
from mappers.payloads import GpuKernel
from templates.base import TemplateError
from templates.gpu import GpuArch, GpuTemplate

# The GpuArch fields that vary inside a group, as numpy columns; every other field is one value per group.
NUMERIC_FIELDS = (
    "sms",
    "clock_mhz",
    "tensor_tflops",
    "fp32_tflops",
    "mem_gbps",
    "mem_gb",
    "smem_kib_per_sm",
    "tdp_w",
    "launch_us",
    "compute_fraction",
    "bandwidth_fraction",
    "nvlink_gbps",
)
TUNED_FIELDS = ("launch_us", "compute_fraction", "bandwidth_fraction")  # a point's overrides of its tuning
ENERGY_PARTS = ("static", "compute", "memory")  # GpuModel's energy breakdown, in its order
OPTIONAL_VALUES = ("area_mm2",)  # values a design has only where its GPU has a figure (NaN in a column elsewhere)
CHUNK_DESIGNS = 512  # designs whose tile search runs together: (designs x ~300 tiles) arrays of ~1 MB
BATCH_POINTS = 4096  # points per call the explorer sends


def group_key(arch: GpuArch) -> GpuArch:
    """What a group of designs shares: the arch with its numeric fields (and their copies in the tuning, the
    measured board power's watts among them) blanked."""
    power = tuple(replace(p, static_w=0.0, dynamic_w=0.0, rows=0) for p in arch.tuning.power)
    tuning = replace(arch.tuning, power=power, **dict.fromkeys(TUNED_FIELDS, 0.0))
    return replace(arch, display="", tuning=tuning, **dict.fromkeys(NUMERIC_FIELDS, 0))


def stand_in_tile(gemm: Gemm, arch: GpuArch, *operands: float) -> tuple[Tile, float]:
    """The tile search of a group's mapping: the first tile shape, unsearched (``fastest_tiles`` searches each
    design's)."""
    del gemm, operands
    return tile_grid(arch)[0], 0.0


def column_arch(archs: Sequence[GpuArch], shape: tuple[int, ...]) -> GpuArch:
    """The designs of one group as one GpuArch whose numeric fields are columns of ``shape``."""
    numeric = {name: np.array([getattr(a, name) for a in archs], dtype=float).reshape(shape) for name in NUMERIC_FIELDS}
    power = tuple(  # a group's designs measure the same kernel kinds; their fitted watts depend on each design
        replace(
            first,
            static_w=np.array([a.tuning.power[k].static_w for a in archs], dtype=float).reshape(shape),
            dynamic_w=np.array([a.tuning.power[k].dynamic_w for a in archs], dtype=float).reshape(shape),
        )
        for k, first in enumerate(archs[0].tuning.power)
    )
    return replace(archs[0], tuning=replace(archs[0].tuning, power=power), **numeric)


def evaluate_designs(graph: Graph, archs: Sequence[GpuArch]) -> tuple[ArrayMetrics, np.ndarray]:
    """``GpuModel().evaluate(GpuTileMapper().map(graph, arch), arch)`` for every design, at once; and which
    designs have a mapping (the others, where no tile fits or the mapper refuses the graph, are left out)."""
    archs = [with_board_power(arch) for arch in archs]  # as GpuModel.evaluate: a measured GPU's energy follows it
    n = len(archs)
    values: dict[str, np.ndarray] = {}
    energy: dict[str, np.ndarray] = {}
    mapped = np.zeros(n, dtype=bool)
    groups: dict[GpuArch, list[int]] = {}
    for i, arch in enumerate(archs):
        groups.setdefault(group_key(arch), []).append(i)
    for members in groups.values():
        try:  # the kernels, fusion, residency and traffic; every design's tiles are searched below
            mapping = GpuTileMapper(choose_tile=stand_in_tile).map(graph, archs[members[0]])
        except MappingError:
            continue
        for start in range(0, len(members), CHUNK_DESIGNS):
            index = np.array(members[start : start + CHUNK_DESIGNS])
            got_values, got_energy, fits = _evaluate_group(graph, mapping, [archs[i] for i in index])
            mapped[index] = fits
            for out, got in ((values, got_values), (energy, got_energy)):
                for name, column in got.items():
                    out.setdefault(name, np.full(n, np.nan))[index] = np.broadcast_to(column, (len(index),))
    return ArrayMetrics(values, energy), mapped


def _evaluate_group(
    graph: Graph, mapping: Mapping, archs: Sequence[GpuArch]
) -> tuple[dict[str, Any], dict[str, Any], np.ndarray]:
    """(values, energy breakdown, whether a tile fits every GEMM) of designs sharing ``mapping``'s kernels:
    ``GpuModel.evaluate``'s sums, kernel by kernel in its order, over columns."""
    n = len(archs)
    arch = column_arch(archs, (n,))
    grid_arch = column_arch(archs, (n, 1))
    totals: dict[str, Any] = {part: 0.0 for part in ENERGY_PARTS}
    seconds_total: Any = 0.0
    useful_macs = 0
    weighted_util: Any = 0.0
    dram_bytes: Any = 0.0
    fits = np.ones(n, dtype=bool)
    searched: dict[tuple, tuple[KernelCost, np.ndarray]] = {}
    for name in mapping.order:
        kernel = mapping.ops[name].payload_as(GpuKernel)
        if kernel.fused_into is not None:
            continue
        op = mapping.graph.op(name)
        if kernel.unit == "tensor" and kernel.gemm is not None and kernel.tile is not None:
            traffic = kernel.traffic
            assert traffic is not None
            key = (kernel.gemm, kernel.a_dram, kernel.b_dram, traffic.dram_write, kernel.extra_dram)
            if key not in searched:
                searched[key] = fastest_tiles(kernel, grid_arch)
            cost, found = searched[key]
            fits &= found
        else:
            cost = memory_cost(kernel, arch)
        figures = kernel_figures(cost, kernel, op.macs, arch, collective_seconds(mapping, name, arch))
        for part, value in figures.energy_pj.items():
            totals[part] += value
        seconds_total += figures.seconds
        useful_macs += figures.macs
        weighted_util += figures.utilization * figures.macs
        dram_bytes += figures.dram_bytes
    values = design_values(seconds_total, totals, weighted_util, useful_macs, dram_bytes, graph, arch)
    return values, totals, fits


def fastest_tiles(kernel: GpuKernel, arch: GpuArch) -> tuple[KernelCost, np.ndarray]:
    """The mapper's ``best_tile`` for every design of ``arch`` (columns of shape (designs, 1)) at once: the
    chosen tile's ``KernelCost`` as columns, and whether any tile fits each design."""
    assert kernel.gemm is not None
    tiles = [tile for tile in tile_grid(arch) if tile_allowed(kernel.gemm, tile)]
    grid = Tile(*(np.array([getattr(t, f.name) for t in tiles])[None, :] for f in fields(Tile)))
    cost = tile_cost(kernel, grid, arch)
    usable = np.broadcast_to(tile_fits(grid, arch), np.shape(cost.seconds))
    remaining = usable  # the tiles still tied for the best rank, key after key; then the first of them
    for key in tile_rank(cost.seconds, grid):
        masked = np.where(remaining, key, np.inf)
        remaining = remaining & (masked == masked.min(axis=1, keepdims=True))
    chosen = np.argmax(remaining, axis=1)[:, None]
    found = usable.any(axis=1)

    def pick(value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        return np.take_along_axis(np.broadcast_to(value, usable.shape), chosen, axis=1)[:, 0]

    return KernelCost(**{f.name: pick(getattr(cost, f.name)) for f in fields(KernelCost)}), found


@dataclass
class GpuArrayEvaluator(ArrayEvaluator):
    """Design points of one graph in, the scalar path's flat metrics out, a batch per call: the family table's
    ``array_evaluator`` for ``gpu`` (its default mapper, tile)."""

    batch_points: int = BATCH_POINTS  # points per call the explorer sends (ArrayExecutor)

    def evaluate_points(self, points: Sequence[MappingType[str, Any]]) -> tuple[ArrayMetrics, np.ndarray]:
        """(metrics of the points that have a design and a mapping, their indices in ``points``); the others are
        left to the scalar path, which raises the template's or the mapper's message for each."""
        template = GpuTemplate()
        archs, accepted = [], []
        for i, point in enumerate(points):
            try:
                archs.append(template.instantiate({**self.fixed, **point}))
            except TemplateError:
                continue
            accepted.append(i)
        metrics, mapped = evaluate_designs(self.graph, archs)
        keep = np.flatnonzero(mapped)
        picked = ArrayMetrics(
            {k: v[keep] for k, v in metrics.values.items()},
            {k: v[keep] for k, v in metrics.energy_breakdown_pj.items()},
        )
        return picked, np.array(accepted, dtype=np.int64)[keep]

    @staticmethod
    def flat_rows(metrics: ArrayMetrics) -> list[dict[str, float]]:
        """``Metrics.flat()`` of every design, one dict each; a value its GPU has no figure for (NaN in its column)
        left out, as the scalar ``flat()`` leaves it out."""
        rows = metrics.flat_rows()
        for row in rows:
            for name in OPTIONAL_VALUES:
                if name in row and row[name] != row[name]:
                    del row[name]
        return rows
