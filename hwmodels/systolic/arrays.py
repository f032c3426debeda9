"""The systolic model over arrays of designs: one graph, N designs of the fold mapper at once, every
design-level metric of ``SystolicModel.evaluate`` (values, energy breakdown, area breakdown) equal to it.

Designs are grouped by what changes the mapping or a code path (dataflow, DRAM mode, precision,
technology, scratchpad, the sparsity and DRACO axes, and ``cols`` where ``round_channels`` reshapes the
graph to it); a group is mapped once by ``SystolicFoldMapper`` on one of its designs, and the numbers
that vary inside it (array shape, SRAM sizes, DRAM rate, clock, lanes) become numpy columns.

Nothing here is a second copy of the model: the layer costs are ``hwmodels.systolic.batch.gemm_cost_arrays``
in its exact mode (the sequential parts, SCALE-Sim's CALC/USER replays and the os filter walk, are the
scalar model's own functions called once per distinct design), the prices are ``design_prices`` called on
a ``SystolicArch`` whose numeric fields are columns, and the charges are ``gemm_energy_pj``,
``vector_energy_pj`` and ``sparse_charges``, the functions ``SystolicModel`` calls per layer. Per-layer
rows are not produced: the scalar path gives them for the few designs anybody looks at.

Speed comes from evaluating each thing once: a GEMM cost once per distinct (rows, cols, SRAM words, DRAM
rate) of a group (a grid repeats them across clocks and lanes), a vector op's cycles once per (lanes, rate),
and, without sparse lowerings, the charges once per design on its layer-summed access counts (the charge
functions are linear in the counts); sums in another order than the scalar path's, so equal within ~1e-15.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from dse.graph import Graph
from hwmodels.array_backend import NUMPY, ArrayBackend
from hwmodels.base import ArrayEvaluator, ArrayMetrics, graph_batch
from hwmodels.systolic.batch import GemmShapes, gemm_cost_arrays
from hwmodels.systolic.compute import LoweredGemm
from hwmodels.systolic.cost import GemmCost, vector_busy_cycles
from hwmodels.systolic.model import sparse_charges, systolic_values, vector_tensor_words
from hwmodels.systolic.pricing import Prices, conv_window, design_prices, gemm_energy_pj, vector_energy_pj
from hwmodels.systolic.sparse import SparseLowering
from mappers.base import Mapping
from mappers.payloads import FoldPlan
from mappers.systolic.fold import SystolicFoldMapper
from templates.systolic import SystolicArch, SystolicTemplate, dram_words_per_cycle

# The SystolicArch fields that vary inside a group, as numpy columns; every other field is one value per group.
NUMERIC_FIELDS = (
    "rows",
    "cols",
    "ifmap_sram_kib",
    "filter_sram_kib",
    "ofmap_sram_kib",
    "dram_gbps",
    "freq_mhz",
    "vector_lanes",
)
# SystolicModel's energy_breakdown_pj, in its order
ENERGY_PARTS = ("mac", "pe_storage", "sram", "dram", "vector", "leakage")
CHUNK_DESIGNS = 4096  # designs priced together: (designs x distinct GEMMs) arrays of ~100 kB each


@dataclass(frozen=True)
class DesignColumns:
    """N systolic designs: one numpy column per ``SystolicArch`` field (numbers as floats, the rest objects)."""

    columns: dict[str, np.ndarray]

    @classmethod
    def of(cls, archs: Sequence[SystolicArch]) -> DesignColumns:
        names = [f.name for f in fields(SystolicArch)]
        columns = {}
        for name in names:
            values = [getattr(a, name) for a in archs]
            columns[name] = np.array(values, dtype=float if name in NUMERIC_FIELDS else object)
        return cls(columns)

    def __len__(self) -> int:
        return len(self.columns["rows"])

    def arch(self, i: int, numeric: dict[str, np.ndarray] | None = None) -> SystolicArch:
        """Design ``i`` as the scalar path's arch; ``numeric`` replaces the numeric fields (with columns)."""
        values = {name: column[i] for name, column in self.columns.items()}
        for name in ("rows", "cols", "vector_lanes", "sparsity_block_size"):
            values[name] = int(values[name])
        return SystolicArch(**{**values, **(numeric or {})})


def evaluate_designs(
    graph: Graph, designs: DesignColumns, chunk: int = CHUNK_DESIGNS, backend: ArrayBackend = NUMPY
) -> ArrayMetrics:
    """``SystolicModel().evaluate(SystolicFoldMapper().map(graph, arch), arch)`` for every design, at once.
    ``backend`` runs the GEMM cost kernel on another array namespace (``hwmodels.array_backend``)."""
    n = len(designs)
    values: dict[str, np.ndarray] = {}
    energy: dict[str, np.ndarray] = {}
    area: dict[str, np.ndarray] = {}
    for members in _groups(designs):
        mapped = _MappedGroup.of(graph, designs.arch(int(members[0])))
        for start in range(0, len(members), chunk):
            index = members[start : start + chunk]
            got_values, got_energy, got_area = mapped.evaluate(designs, index, backend)
            for out, got in ((values, got_values), (energy, got_energy), (area, got_area)):
                for name, column in got.items():
                    out.setdefault(name, np.zeros(n))[index] = column
    return ArrayMetrics(values, energy, area)


def _groups(designs: DesignColumns) -> list[np.ndarray]:
    """Indices of the designs that share a mapping and a code path, one array per group (in order of the
    first member)."""
    n = len(designs)
    if n == 0:
        return []
    code = np.zeros(n, dtype=np.int64)
    for name, column in designs.columns.items():
        if name in NUMERIC_FIELDS:
            continue
        values = column.tolist()
        distinct = {value: i for i, value in enumerate(dict.fromkeys(values))}
        if len(distinct) == 1:
            continue
        inverse = np.fromiter(map(distinct.__getitem__, values), dtype=np.int64, count=n)
        code = code * len(distinct) + inverse
        code = np.unique(code, return_inverse=True)[1]  # keep the mixed radix small
    # round_channels rounds hidden widths to a multiple of cols: the graph differs per cols
    rounds = designs.columns["round_channels"].astype(bool)
    if rounds.any():
        cols = np.where(rounds, designs.columns["cols"], 0.0)
        _, cols_code = np.unique(cols, return_inverse=True)
        code = np.unique(code * (int(cols_code.max()) + 1) + cols_code, return_inverse=True)[1]
    order = np.argsort(code, kind="stable")
    bounds = np.flatnonzero(np.diff(code[order])) + 1
    groups = np.split(order, bounds)
    return sorted(groups, key=lambda g: int(g[0]))


@dataclass(frozen=True)
class _ArrayLayers:
    """A group's array ops: the distinct (GEMM, written output, sparse lowering) and how often each occurs."""

    shapes: GemmShapes
    multiplicity: np.ndarray
    macs: np.ndarray
    sparse: tuple[SparseLowering | None, ...]
    window: tuple[np.ndarray, np.ndarray, np.ndarray]  # (S, Q, stride) of each GEMM's rows (``conv_window``)


@dataclass(frozen=True)
class _VectorLayers:
    """A group's vector ops: flops, DRAM words read and written, whether fused (no latency of its own)."""

    flops: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    fused: np.ndarray
    multiplicity: np.ndarray


@dataclass(frozen=True)
class _MappedGroup:
    """One group's mapping, tabulated for the columns of its designs."""

    template: SystolicArch
    array: _ArrayLayers | None
    vector: _VectorLayers | None
    batch: int

    @classmethod
    def of(cls, graph: Graph, arch: SystolicArch) -> _MappedGroup:
        mapping: Mapping = SystolicFoldMapper().map(graph, arch)
        distinct: dict[tuple, int] = {}
        gemms: list[LoweredGemm] = []
        written: list[bool] = []
        lowerings: list[SparseLowering | None] = []
        counts: list[int] = []
        vector_ops: Counter[tuple] = Counter()  # (flops, words read, words written, fused) -> occurrences
        ops = {op.name: op for op in mapping.graph.ops}
        for name in mapping.order:
            om, op = mapping.ops[name], ops[name]
            plan = om.payload_as(FoldPlan)
            if plan.unit == "array" and plan.gemm is not None:
                key = (plan.gemm, not om.resident_output, plan.sparse)
                if key not in distinct:
                    distinct[key] = len(gemms)
                    gemms.append(plan.gemm)
                    written.append(not om.resident_output)
                    lowerings.append(plan.sparse)
                    counts.append(0)
                counts[distinct[key]] += 1
            else:
                words = vector_tensor_words(op, mapping)
                vector_ops[(op.flops, *words, bool(plan.fused_into))] += 1
        array = None
        if gemms:
            array = _ArrayLayers(
                GemmShapes.of(gemms, written),
                np.array(counts, dtype=float),
                np.array([g.macs for g in gemms], dtype=float),
                tuple(lowerings),
                tuple(np.array(column, dtype=float)[None, :] for column in zip(*map(conv_window, gemms))),
            )
        vector = None
        if vector_ops:
            flops, reads, writes, fused = (np.array(x) for x in zip(*vector_ops))
            vector = _VectorLayers(
                flops.astype(float),
                reads.astype(float),
                writes.astype(float),
                fused.astype(bool),
                np.array(list(vector_ops.values()), dtype=float),
            )
        return cls(arch, array, vector, graph_batch(mapping.graph))

    def evaluate(
        self, designs: DesignColumns, index: np.ndarray, backend: ArrayBackend = NUMPY
    ) -> tuple[dict, dict, dict]:
        """(values, energy breakdown, area breakdown) of the designs at ``index`` (all of this group)."""
        numeric = {name: designs.columns[name][index][:, None] for name in NUMERIC_FIELDS}
        arch = designs.arch(int(index[0]), numeric)  # the group's fields, the designs' numbers as (N, 1) columns
        prices = design_prices(arch)
        wb = arch.word_bytes
        bw = dram_words_per_cycle(arch.dram_gbps, arch.freq_mhz, wb)
        cycle_s = 1e-6 / arch.freq_mhz
        leak_w = prices.leakage_w
        shape = (len(index), 1)
        totals = {part: np.zeros(shape) for part in ENERGY_PARTS}
        sums = {name: np.zeros(shape) for name in ("cycles", "macs", "mac_cycles", "dram_bytes")}
        if self.array is not None:
            self._array_layers(arch, prices, bw, cycle_s, leak_w, totals, sums, backend)
        if self.vector is not None:
            self._vector_layers(arch, prices, bw, cycle_s, leak_w, totals, sums)
        total_cycles = sums["cycles"]
        total_macs = sums["macs"]
        area_total = sum(prices.area_mm2.values())
        utilization = np.divide(sums["mac_cycles"], total_macs, out=np.zeros(shape), where=total_macs > 0)
        values = systolic_values(
            total_cycles, total_macs, totals, area_total, utilization, sums["dram_bytes"], cycle_s, self.batch
        )

        def flat(d: dict) -> dict[str, np.ndarray]:
            return {k: np.broadcast_to(np.asarray(v, dtype=float), shape)[:, 0] for k, v in d.items()}

        return flat(values), flat(totals), flat(prices.area_mm2)

    def _array_layers(  # noqa: ANN001
        self, arch, prices: Prices, bw, cycle_s, leak_w, totals: dict, sums: dict, backend: ArrayBackend = NUMPY
    ) -> None:
        """The array ops: ``SystolicModel._fold_core`` for every (design, distinct GEMM) pair.

        The GEMM costs depend on six design figures only (rows, cols, the three SRAMs in words, the DRAM
        rate in words per cycle): they are evaluated once per distinct six, then summed over the layers.
        Without sparse lowerings and PE scratchpads every charge is a price of the design times an access count
        (``gemm_energy_pj`` is linear in the counts), so the design pays its prices on the counts summed
        over its layers; a sparse lowering, or a scratchpad whose reuse depends on each GEMM's folds and conv
        window (``pe_reuse``), charges per layer and takes every (design, GEMM) pair."""
        layers = self.array
        assert layers is not None
        wb = arch.word_bytes
        words = [
            np.floor_divide(kib * 1024, wb) for kib in (arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib)
        ]
        figures, inverse = distinct_rows((arch.rows, arch.cols, *words, bw))
        rows, cols = figures[0], figures[1]
        c = gemm_cost_arrays(layers.shapes, arch.dataflow, arch.dram_mode, *figures, exact=True, backend=backend)
        c = {name: backend.to_numpy(value) for name, value in c.items()}
        cost = GemmCost(**{f.name: c[f.name] for f in fields(GemmCost)})  # (distinct figures, GEMMs)
        cycles = cost.total_cycles
        util = np.divide(layers.macs, rows * cols * cycles, out=np.zeros(cycles.shape), where=cycles != 0)
        times = layers.multiplicity
        registers_only = all(np.all(np.asarray(words) == 1) for words in prices.pe_words)
        if registers_only and all(low is None for low in layers.sparse):
            summed = GemmCost(
                **{f.name: layer_sums(getattr(cost, f.name), times)[inverse][:, None] for f in fields(GemmCost)}
            )
            layer_cycles = layer_sums(cycles, times)[inverse][:, None]
            breakdown = gemm_energy_pj(summed, float(layers.macs @ times), prices, wb, arch.dataflow)
            breakdown["leakage"] = leak_w * layer_cycles * cycle_s * 1e12
            for part in ENERGY_PARTS:
                totals[part] += breakdown[part]
            sums["cycles"] += layer_cycles
            sums["macs"] += float(layers.macs @ times)
            sums["mac_cycles"] += layer_sums(util * layers.macs, times)[inverse][:, None]
            reads = summed.ifmap_dram_reads + summed.filter_dram_reads
            sums["dram_bytes"] += reads * wb + summed.ofmap_dram_writes * wb
            return
        cost = GemmCost(**{f.name: getattr(cost, f.name)[inverse] for f in fields(GemmCost)})  # every design
        cycles, util = cycles[inverse], util[inverse]
        rd = (cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
        wr = cost.ofmap_dram_writes * wb
        sram_rd = (cost.ifmap_sram_reads + cost.filter_sram_reads + cost.ofmap_dram_writes) * wb
        sram_wr = (cost.ofmap_sram_writes + cost.ifmap_dram_reads + cost.filter_dram_reads) * wb
        breakdown = gemm_energy_pj(cost, layers.macs, prices, wb, arch.dataflow, layers.window)
        breakdown = {k: np.array(np.broadcast_to(v, cycles.shape)) for k, v in breakdown.items()}
        for j, low in enumerate(layers.sparse):  # written column by column
            if low is None:
                continue
            one = GemmCost(**{f.name: getattr(cost, f.name)[:, j : j + 1] for f in fields(GemmCost)})
            part = {k: v[:, j : j + 1] for k, v in breakdown.items()}
            new_rd, _, _, _ = sparse_charges(
                low, one, prices, wb, rd[:, j : j + 1], sram_rd[:, j : j + 1], sram_wr[:, j : j + 1], part
            )
            rd[:, j : j + 1] = new_rd
            for k, v in part.items():
                breakdown[k][:, j : j + 1] = v
        breakdown["leakage"] = leak_w * cycles * cycle_s * 1e12
        for part in ENERGY_PARTS:
            totals[part] += _weighted_sum(breakdown[part], times, cycles.shape)
        sums["cycles"] += _weighted_sum(cycles, times, cycles.shape)
        sums["macs"] += float(layers.macs @ times)
        sums["mac_cycles"] += _weighted_sum(util * layers.macs, times, cycles.shape)
        sums["dram_bytes"] += _weighted_sum(rd + wr, times, cycles.shape)

    def _vector_layers(self, arch, prices: Prices, bw, cycle_s, leak_w, totals: dict, sums: dict) -> None:  # noqa: ANN001
        """The vector ops: ``SystolicModel._fold_core``'s vector branch for every (design, op) pair. Their
        cycles depend on the lanes and the DRAM rate only (evaluated once per distinct pair); their charges
        are the design's prices times design-independent counts (``vector_energy_pj`` is linear in them)."""
        layers = self.vector
        assert layers is not None
        wb = arch.word_bytes
        (lanes, rate), inverse = distinct_rows((arch.vector_lanes, bw))
        compute = np.where(layers.flops > 0, np.ceil(layers.flops / lanes), 0.0)
        busy = vector_busy_cycles(compute, layers.reads, layers.writes, rate, arch.dram_mode)
        times = layers.multiplicity
        cycles = layer_sums(np.where(layers.fused, 0.0, busy), times)[inverse][:, None]
        rd, wr = float((layers.reads * wb) @ times), float((layers.writes * wb) @ times)
        breakdown = vector_energy_pj(float(layers.flops @ times), rd, wr, prices)
        breakdown["leakage"] = leak_w * cycles * cycle_s * 1e12
        for part in ENERGY_PARTS:
            totals[part] += breakdown[part]
        sums["cycles"] += cycles
        sums["dram_bytes"] += rd + wr


def distinct_rows(columns: Sequence[np.ndarray | float]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of some (designs, 1) columns (or numbers), as (distinct, 1) columns, and the row of
    each design among them: what depends on these figures alone is evaluated once per distinct row."""
    arrays = [a.reshape(-1) for a in np.broadcast_arrays(*(np.asarray(c, dtype=float) for c in columns))]
    code, radix = np.zeros(len(arrays[0]), dtype=np.int64), 1
    for column in arrays:  # one integer per row, a digit per column (1-D sorts, not a sort of whole rows)
        _, digit = np.unique(column, return_inverse=True)
        base = int(digit.max()) + 1 if len(digit) else 1
        if radix * base >= 2**62:  # renumber the rows seen so far before the code overflows
            _, code = np.unique(code, return_inverse=True)
            radix = int(code.max()) + 1
        code, radix = code * base + digit, radix * base
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return [column[first][:, None] for column in arrays], inverse.reshape(-1)


def layer_sums(matrix: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Each design's (row's) sum over layers weighted by ``times``: an elementwise product summed row by row, so a
    design's figure never depends on which other designs share its batch (a BLAS product's order does, in the
    last bit), and a chunk split over workers gives the figures the whole chunk gives."""
    return (np.asarray(matrix, dtype=float) * times).sum(axis=1)


def _weighted_sum(value: np.ndarray | float, times: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum over layers (the last axis) of ``value`` x its occurrences, as a (designs, 1) column."""
    value = np.asarray(value, dtype=float)
    if value.ndim < 2 or value.shape[0] == 1:  # the same for every design
        return np.full((shape[0], 1), float(np.broadcast_to(value, shape)[0] @ times))
    return layer_sums(np.broadcast_to(value, shape), times)[:, None]


@dataclass
class SystolicArrayEvaluator(ArrayEvaluator):
    """Design points of one graph in, the scalar path's flat metrics out, a batch per call: the family
    table's ``array_evaluator`` for ``systolic`` (its default mapper, fold)."""

    batch_points: int = CHUNK_DESIGNS  # points per call the explorer sends (ArrayExecutor)
    chunk: int = CHUNK_DESIGNS  # designs priced together (``evaluate_designs``)
    backend: ArrayBackend = NUMPY  # where the GEMM cost kernel runs (numpy unless a benchmark asks otherwise)

    def evaluate_points(self, points: Sequence[dict]) -> tuple[ArrayMetrics, np.ndarray]:
        """(metrics of the points ``instantiate`` accepts, their indices in ``points``); the refused ones are
        left to the scalar path, which raises the template's message for each."""
        columns, accepted = SystolicTemplate().instantiate_columns(points, self.fixed)
        index = np.flatnonzero(accepted)
        designs = DesignColumns({name: column[index] for name, column in columns.items()})
        return evaluate_designs(self.graph, designs, self.chunk, self.backend), index
