"""Tile candidates per op: the legal scratchpad-level tilings of an op's loop nest, with their costs.

Every op (or a conv/matmul with the unary activation fused into its output pipeline: a *unit*) is
described as a loop nest over a few loops (``LoopNest``): batch, output rows / pixels, output
channels, reduction channels, groups, or one row loop for the vector ops. Each operand (input
activations, weights, the output) is indexed by some of these loops. A *tile* picks a size per loop
and a *loop order* (outer to inner) says which operand stays on chip while the inner loops run:

* an operand is re-fetched for every iteration of the loops outside its innermost indexing loop
  that do not index it (the classic loop-nest reuse rule), so its DRAM traffic is
  ``|operand| x product(trips of those loops)``; a conv input adds the halo rows of every row tile;
* the output is written once per such iteration and read back in between (partial sums);
* an operand held for more than one load is double-buffered (footprint x 2) so DMA overlaps compute.

Compute cycles are those of the fold model of ``mappers.systolic`` summed over the tiles (a tile is
a smaller GEMM on the same array), so a whole-op tile costs exactly what the fold mapper says.

Candidates are enumerated on a grid of tile sizes x loop orders with numpy and pruned to the Pareto
set of (footprints, traffic per operand, cycles) the objective cares about. Caches sit at three
levels: the tile grid per distinct op shape, its compute cycles per array shape, the pruned
candidates per scratchpad sizes and prices; repeated layers and repeated design points are free, and
a new SRAM size only re-prunes.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from dse.graph import Graph, OpKind
from mappers.base import Buffer, Mapping, MappingError, OpMapping
from mappers.systolic import ARRAY_KINDS, VECTOR_KINDS
from templates.base import Arch

ROLE_INPUT = "input"
ROLE_WEIGHT = "weight"
ROLE_OUTPUT = "output"
OBJECTIVES = ("dram", "latency", "energy")

# Trip counts tried per loop (tile = ceil(extent / trips)); geometric past 8 so a loop offers ~20 sizes.
_TRIPS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192, 256, 512, 1024)
# Candidates whose compute cycles exceed the op's fastest tile by more than this factor are dropped.
CYCLE_SLACK = 1.5
# A vector op's tile is at least 1/256 of its tensors: shorter DMA bursts waste DRAM bandwidth.
_VECTOR_MAX_TRIPS = 256


@dataclass(frozen=True)
class Loop:
    name: str
    extent: int


@dataclass(frozen=True)
class Halo:
    """A loop whose input tile grows by a kernel window: output rows [a, b) read input rows
    [a*stride - pad, (b-1)*stride - pad + kernel) clipped to [0, size)."""

    loop: str
    stride: int
    kernel: int
    pad: int
    size: int

    def rows(self, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
        lo = np.maximum(0, start * self.stride - self.pad)
        hi = np.minimum(self.size, (stop - 1) * self.stride - self.pad + self.kernel)
        return np.maximum(0, hi - lo)


@dataclass(frozen=True)
class Operand:
    """One tensor an op touches: ``base`` bytes per unit of the tile product of ``loops``."""

    tensor: str
    role: str  # input | weight | output
    base: float
    loops: tuple[str, ...]
    halo: Halo | None = None


@dataclass(frozen=True)
class LoopNest:
    """An op's loops and operands as the tiler sees them; ``gemm`` maps loop tiles to the tile GEMM."""

    unit: str
    ops: tuple[str, ...]  # the head op, then ops fused into its output pipeline
    kind: str  # "array" | "vector"
    loops: tuple[Loop, ...]
    operands: tuple[Operand, ...]
    # GEMM axis -> (loops whose tile sizes multiply into it, constant factor); axes M, K, N, copies
    gemm: dict[str, tuple[tuple[str, ...], int]] = field(default_factory=dict)
    vector_cycles: int = 0

    def loop(self, name: str) -> Loop:
        return next(lp for lp in self.loops if lp.name == name)


@dataclass(frozen=True)
class TileTarget:
    """What the tiler needs of an arch: array shape, dataflow, word size and scratchpads.

    ``role_memory`` says which scratchpad stages each operand role; resident tensors (kept on chip
    from producer to last consumer) live in ``resident_memory``.
    """

    rows: int
    cols: int
    dataflow: str
    vector_lanes: int
    word_bytes: int
    capacities: tuple[tuple[str, int], ...]  # memory name -> bytes
    role_memory: tuple[tuple[str, str], ...]  # role -> memory name
    resident_memory: str

    def capacity(self, memory: str) -> int:
        return dict(self.capacities)[memory]

    def memory_of(self, role: str) -> str:
        return dict(self.role_memory)[role]


UNIFIED_MEMORY = "scratchpad"


def larger_memory_hint(memory: str) -> str:
    """How to ask for more of ``memory`` in the systolic template's terms (for error messages)."""
    if memory == UNIFIED_MEMORY:
        return "a larger scratchpad (sram_kib)"
    which = memory.replace("_sram", "")
    return f"a larger {which} SRAM ({which}_sram_kib, or sram_kib)"


def target_of(arch: Arch) -> TileTarget:
    """The tiler's view of a systolic arch.

    ``split`` (SCALE-Sim's organisation): three SRAMs; the ifmap SRAM stages inputs and holds resident
    tensors, because it is the only one feeding the array's input edge (the ofmap SRAM drains only to
    DRAM), while weights and outputs stage in their own SRAMs. ``unified``: one scratchpad every array
    port and the DMA reach, so every tile and every resident tensor shares its one address space.
    """
    needed = ("rows", "cols", "dataflow", "vector_lanes", "word_bytes", "ifmap_sram_kib", "filter_sram_kib")
    missing = [n for n in needed if not hasattr(arch, n)]
    if missing:
        raise MappingError(
            f"the tiling mappers need a systolic-style arch (rows, cols, dataflow, SRAMs); "
            f"{type(arch).__name__} lacks {', '.join(missing)}"
        )
    a = arch
    if getattr(a, "scratchpad", "split") == "unified":
        return TileTarget(
            rows=a.rows,  # type: ignore[attr-defined]
            cols=a.cols,  # type: ignore[attr-defined]
            dataflow=a.dataflow,  # type: ignore[attr-defined]
            vector_lanes=a.vector_lanes,  # type: ignore[attr-defined]
            word_bytes=a.word_bytes,  # type: ignore[attr-defined]
            capacities=((UNIFIED_MEMORY, int(round(a.scratchpad_kib * 1024))),),  # type: ignore[attr-defined]
            role_memory=tuple((role, UNIFIED_MEMORY) for role in (ROLE_INPUT, ROLE_WEIGHT, ROLE_OUTPUT)),
            resident_memory=UNIFIED_MEMORY,
        )
    caps = (
        ("ifmap_sram", int(a.ifmap_sram_kib * 1024)),  # type: ignore[attr-defined]
        ("filter_sram", int(a.filter_sram_kib * 1024)),  # type: ignore[attr-defined]
        ("ofmap_sram", int(a.ofmap_sram_kib * 1024)),  # type: ignore[attr-defined]
    )
    roles = ((ROLE_INPUT, "ifmap_sram"), (ROLE_WEIGHT, "filter_sram"), (ROLE_OUTPUT, "ofmap_sram"))
    return TileTarget(
        rows=a.rows,  # type: ignore[attr-defined]
        cols=a.cols,  # type: ignore[attr-defined]
        dataflow=a.dataflow,  # type: ignore[attr-defined]
        vector_lanes=a.vector_lanes,  # type: ignore[attr-defined]
        word_bytes=a.word_bytes,  # type: ignore[attr-defined]
        capacities=caps,
        role_memory=roles,
        resident_memory="ifmap_sram",
    )


# ---------------------------------------------------------------------------------------------------
# Units: ops with their fused activations
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Unit:
    """What the scheduler places: one op, or a conv/matmul with the activation fused into it."""

    name: str
    ops: tuple[str, ...]
    inputs: tuple[str, ...]  # activation tensors read (operand order)
    weights: tuple[str, ...]
    output: str


def build_units(graph: Graph) -> list[Unit]:
    """Fuse a unary elementwise op into the op feeding it when it is that tensor's only consumer: into
    a conv/matmul as ``mappers.systolic`` does (the activation runs in the array's output pipeline),
    and into a vector op (a residual add's ReLU) as a second instruction of the same SIMD pass."""
    consumers = graph.consumers()
    producer = graph.producer()
    by_name = {op.name: op for op in graph.ops}
    fused_into: dict[str, str] = {}
    for op in graph.ops:
        if op.kind is not OpKind.ELEMENTWISE or len(op.inputs) != 1 or op.weights:
            continue
        src = op.inputs[0]
        head = producer.get(src)
        if head is None or consumers.get(src) != [op.name]:
            continue
        if graph.tensors[src].kind == "output" or head in fused_into.values():
            continue
        fused_into[op.name] = head
    units: list[Unit] = []
    tail_of = {head: op for op, head in fused_into.items()}
    for op in graph.ops:
        if op.name in fused_into:
            continue
        if op.kind not in ARRAY_KINDS and op.kind not in VECTOR_KINDS:
            raise MappingError(f"op {op.name!r}: kind {op.kind.value} has no tiling", node=op.name)
        if len(op.outputs) != 1:
            raise MappingError(f"op {op.name!r} writes {len(op.outputs)} tensors; the tiler needs one", node=op.name)
        ops = (op.name,)
        out = op.outputs[0]
        if op.name in tail_of:
            act = by_name[tail_of[op.name]]
            ops = (op.name, act.name)
            out = act.outputs[0]
        units.append(Unit(op.name, ops, tuple(op.inputs), tuple(op.weights), out))
    return units


# ---------------------------------------------------------------------------------------------------
# Loop nests per op kind
# ---------------------------------------------------------------------------------------------------
def loop_nest(graph: Graph, unit: Unit, word_bytes: int, vector_lanes: int) -> LoopNest:
    """The loop nest of ``unit`` with tensor names filled in (see the module docstring)."""
    op = graph.op(unit.name)
    d = op.dims
    wb = word_bytes
    tensors = graph.tensors
    if op.kind is OpKind.CONV:
        g = d.get("G", 1)
        n, k, c, h, w, p, q, r, s = (d[x] for x in ("N", "K", "C", "H", "W", "P", "Q", "R", "S"))
        sh, _ = op.attrs.get("stride", (1, 1))
        pad_top = int(op.attrs.get("pad", (0, 0, 0, 0))[0])
        halo = Halo("p", int(sh), r, pad_top, h)
        extra_w = [Operand(t, ROLE_WEIGHT, tensors[t].numel * wb, ()) for t in unit.weights[1:]]  # bias
        if g == 1:
            loops = (Loop("b", n), Loop("p", p), Loop("k", k), Loop("c", c))
            operands = (
                Operand(unit.inputs[0], ROLE_INPUT, w * wb, ("b", "p", "c"), halo),
                Operand(unit.weights[0], ROLE_WEIGHT, r * s * wb, ("k", "c")),
                *extra_w,
                Operand(unit.output, ROLE_OUTPUT, q * wb, ("b", "p", "k")),
            )
            gemm = {"M": (("b", "p"), q), "K": (("c",), r * s), "N": (("k",), 1), "copies": ((), 1)}
        else:
            cg, kg = c // g, k // g
            loops = (Loop("b", n), Loop("p", p), Loop("g", g))
            operands = (
                Operand(unit.inputs[0], ROLE_INPUT, w * cg * wb, ("b", "p", "g"), halo),
                Operand(unit.weights[0], ROLE_WEIGHT, kg * cg * r * s * wb, ("g",)),
                *extra_w,
                Operand(unit.output, ROLE_OUTPUT, q * kg * wb, ("b", "p", "g")),
            )
            gemm = {"M": (("b", "p"), q), "K": ((), cg * r * s), "N": ((), kg), "copies": (("g",), 1)}
        return LoopNest(unit.name, unit.ops, "array", _drop_unit_loops(loops), operands, gemm)
    if op.kind is OpKind.MATMUL:
        loops = (Loop("b", d["B"]), Loop("m", d["M"]), Loop("n", d["N"]), Loop("k", d["K"]))
        if unit.weights:
            second = Operand(unit.weights[0], ROLE_WEIGHT, wb, ("k", "n"))
            extra_w = [Operand(t, ROLE_WEIGHT, tensors[t].numel * wb, ()) for t in unit.weights[1:]]
        else:  # activation x activation (attention): the second operand is staged like a weight
            second = Operand(unit.inputs[1], ROLE_INPUT, wb, ("b", "k", "n"))
            extra_w = []
        operands = (
            Operand(unit.inputs[0], ROLE_INPUT, wb, ("b", "m", "k")),
            second,
            *extra_w,
            Operand(unit.output, ROLE_OUTPUT, wb, ("b", "m", "n")),
        )
        gemm = {"M": (("m",), 1), "K": (("k",), 1), "N": (("n",), 1), "copies": (("b",), 1)}
        return LoopNest(unit.name, unit.ops, "array", _drop_unit_loops(loops), operands, gemm)
    flops = sum(graph.op(name).flops for name in unit.ops)
    cycles = math.ceil(flops / vector_lanes) if flops else 0
    if op.kind is OpKind.POOL:
        n, c, h, w, p, q, r = (d[x] for x in ("N", "C", "H", "W", "P", "Q", "R"))
        sh, _ = op.attrs.get("stride", (1, 1))
        pad_top = int(op.attrs.get("pad", (0, 0, 0, 0))[0])
        halo = Halo("p", int(sh), r, pad_top, h)
        loops = (Loop("b", n), Loop("c", c), Loop("p", p))
        operands = (
            Operand(unit.inputs[0], ROLE_INPUT, w * wb, ("b", "c", "p"), halo),
            Operand(unit.output, ROLE_OUTPUT, q * wb, ("b", "c", "p")),
        )
        return LoopNest(unit.name, unit.ops, "vector", _drop_unit_loops(loops), operands, vector_cycles=cycles)
    extent = {
        OpKind.ELEMENTWISE: d.get("N", 1),
        OpKind.SOFTMAX: d.get("R", 1),
        OpKind.LAYERNORM: d.get("R", 1),
        OpKind.FFT: d.get("B", 1),
        OpKind.SCAN: d.get("D", 1),
    }[op.kind]
    operands_list: list[Operand] = []
    for t, role in [(t, ROLE_INPUT) for t in unit.inputs] + [(t, ROLE_WEIGHT) for t in unit.weights]:
        numel = tensors[t].numel
        if op.kind is OpKind.SCAN:  # channels-last activations [B, L, D] and weights [D, ...] split by D
            shape = tensors[t].shape
            indexed = shape[-1] == extent if role == ROLE_INPUT else shape[:1] == (extent,)
        else:
            indexed = role == ROLE_INPUT
        if indexed:
            operands_list.append(Operand(t, role, numel * wb / extent, ("r",)))
        else:
            operands_list.append(Operand(t, role, numel * wb, ()))
    out_numel = tensors[unit.output].numel
    operands_list.append(Operand(unit.output, ROLE_OUTPUT, out_numel * wb / extent, ("r",)))
    loops = _drop_unit_loops((Loop("r", extent),))
    return LoopNest(unit.name, unit.ops, "vector", loops, tuple(operands_list), vector_cycles=cycles)


def _drop_unit_loops(loops: tuple[Loop, ...]) -> tuple[Loop, ...]:
    """Loops of extent 1 never change anything; keep the rest."""
    return tuple(lp for lp in loops if lp.extent > 1)


def tile_values(extent: int, max_trips: int | None = None, limit: int = 16) -> list[int]:
    """Distinct tile sizes ceil(extent / t) over a geometric set of trip counts t (1 and extent always),
    thinned evenly to at most ``limit`` sizes."""
    vals = {math.ceil(extent / t) for t in _TRIPS if t <= extent and (max_trips is None or t <= max_trips)}
    if max_trips is None:
        vals.add(1)
    vals.add(extent)
    out = sorted(vals)
    if len(out) > limit:
        picks = np.unique(np.round(np.linspace(0, len(out) - 1, limit)).astype(int))
        out = [out[i] for i in picks]
    return out


# Values per loop by loop count: ~20^3 x 6 orders, 9^4 x 24 orders, 7^5 x 120 orders grid points.
_VALUES_PER_LOOP = {0: 1, 1: 24, 2: 24, 3: 20, 4: 9, 5: 6}


# ---------------------------------------------------------------------------------------------------
# Costs
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostModel:
    """How a unit's (candidate, residency) pair is scored: DRAM bytes, cycles or picojoules.

    Latency per unit is max(compute cycles, DRAM bytes / bytes per cycle) (double-buffered tiles
    overlap transfers with compute); energy is DRAM + SRAM bytes at catalog prices plus leakage over
    that latency (MAC energy is the same for every schedule and left out).
    """

    objective: str = "dram"
    bytes_per_cycle: float = 1.0
    dram_pj_per_byte: float = 0.0
    sram_pj_per_byte: float = 0.0
    leakage_pj_per_cycle: float = 0.0


def cost_model(arch: Arch, objective: str) -> CostModel:
    """The objective's prices for ``arch`` (energy prices from the technology catalog)."""
    if objective not in OBJECTIVES:
        raise MappingError(f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    if objective == "dram":  # prices nothing of the arch: one cache entry serves every array shape
        return CostModel(objective)
    bpc = float(getattr(arch, "dram_bytes_per_cycle", 1.0))
    if objective == "latency":
        return CostModel(objective, bpc)
    from hwmodels.catalogs.tech import get_tech
    from hwmodels.systolic import sram_bank_kib, systolic_area_mm2

    tech = get_tech(arch.tech)  # type: ignore[attr-defined]
    kib = sram_bank_kib(arch)["ifmap"]  # type: ignore[arg-type]
    leak_w = tech.leakage_w(sum(systolic_area_mm2(arch).values()))  # type: ignore[arg-type]
    return CostModel(
        objective,
        bpc,
        dram_pj_per_byte=tech.dram_energy_pj(1.0),
        sram_pj_per_byte=tech.sram_energy_pj_per_byte(kib),
        leakage_pj_per_cycle=leak_w * 1e12 / (arch.freq_mhz * 1e6),  # type: ignore[attr-defined]
    )


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
    latency = np.maximum(cycles, np.ceil(traffic / model.bytes_per_cycle))
    if model.objective == "latency":
        return latency.astype(np.int64)
    energy = (
        traffic * model.dram_pj_per_byte
        + (sram_words * word_bytes + traffic) * model.sram_pj_per_byte
        + latency * model.leakage_pj_per_cycle
    )
    return np.round(energy).astype(np.int64)


# ---------------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidates:
    """The pruned tilings of one loop nest. Arrays are per candidate; bytes are integers.

    ``footprint[i]`` / ``traffic[i]`` belong to ``nest.operands[i]``; for the output, ``traffic`` is
    its DRAM writes and ``psum_reads`` the partial sums read back.
    """

    nest: LoopNest
    loop_names: tuple[str, ...]
    tiles: np.ndarray  # [n, loops]
    orders: tuple[tuple[str, ...], ...]  # per candidate, outer -> inner
    footprint: np.ndarray  # [operands, n]
    traffic: np.ndarray  # [operands, n]
    psum_reads: np.ndarray  # [n]
    cycles: np.ndarray  # [n] compute cycles, all tiles
    sram_words: np.ndarray  # [n] array-side SRAM accesses (reads + ofmap writes), words

    def __len__(self) -> int:
        return int(self.tiles.shape[0])

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(o.role for o in self.nest.operands)

    def tile(self, i: int) -> dict[str, int]:
        return {name: int(v) for name, v in zip(self.loop_names, self.tiles[i])}

    def staging(self, target: TileTarget, resident: tuple[bool, ...]) -> np.ndarray:
        """Bytes each candidate stages in the resident scratchpad (operands not resident)."""
        total = np.zeros(len(self), dtype=np.int64)
        for j in staged_operands(self.nest, target, resident):
            total = total + self.footprint[j]
        return total

    def costs(self, target: TileTarget, model: CostModel, resident: tuple[bool, ...], output_bytes: int) -> np.ndarray:
        traffic = mode_traffic(self.traffic, self.psum_reads, self.roles, resident, output_bytes)
        return mode_cost(traffic, self.cycles, self.sram_words, target.word_bytes, model)


def has_tile_buffer(role: str, resident: bool) -> bool:
    """A resident input is read in place; every other operand has a tile buffer (an output keeps its
    accumulator tile even when the finished tensor stays resident)."""
    return role == ROLE_OUTPUT or not resident


def staged_operands(nest: LoopNest, target: TileTarget, resident: tuple[bool, ...]) -> list[int]:
    """Operands whose tile buffers sit in the resident scratchpad in this residency mode."""
    return [
        j
        for j, o in enumerate(nest.operands)
        if has_tile_buffer(o.role, resident[j]) and target.memory_of(o.role) == target.resident_memory
    ]


def residency_modes(nest: LoopNest) -> list[tuple[bool, ...]]:
    """Every combination of activation operands (inputs and the output) being resident."""
    free = [j for j, o in enumerate(nest.operands) if o.role != ROLE_WEIGHT]
    modes = []
    for bits in itertools.product((False, True), repeat=len(free)):
        flags = [False] * len(nest.operands)
        for j, b in zip(free, bits):
            flags[j] = b
        modes.append(tuple(flags))
    return modes


def _halo_tables(halo: Halo, extent: int, values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(sum of input rows over all tiles, max input rows of one tile) per tile size."""
    sums, maxes = [], []
    for t in values:
        starts = np.arange(0, extent, t)
        rows = halo.rows(starts, np.minimum(starts + t, extent))
        sums.append(int(rows.sum()))
        maxes.append(int(rows.max()))
    return np.array(sums, dtype=np.float64), np.array(maxes, dtype=np.float64)


def _fold_cost(
    m: np.ndarray, k: np.ndarray, n: np.ndarray, rows: int, cols: int, dataflow: str
) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, array-side SRAM words) of one GEMM copy of each tile shape (``mappers.systolic``)."""
    if dataflow == "os":
        sr, sc, t = m, n, k
    elif dataflow == "ws":
        sr, sc, t = k, n, m
    else:
        sr, sc, t = k, m, n
    rf = np.ceil(sr / rows)
    cf = np.ceil(sc / cols)
    fold = t + rows + cols - 2 if dataflow == "os" else t + 2 * rows + cols - 2
    cycles = np.where(m * k * n > 0, rf * cf * fold, 0)
    if dataflow == "os":
        reads = sr * t * cf + t * sc * rf
        writes = m * n
    elif dataflow == "ws":
        reads = t * sr * cf + sr * sc
        writes = m * n * rf
    else:
        reads = sr * sc + t * sr * cf
        writes = m * n * rf
    return cycles, reads + writes


def _front_2d(size: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Indices on the (size, cost) Pareto front, both minimised (one per distinct point)."""
    order = np.lexsort((cost, size))
    best = np.minimum.accumulate(cost[order])
    improves = np.empty(len(order), dtype=bool)
    improves[0] = True
    improves[1:] = cost[order][1:] < best[:-1]
    return order[improves]


@dataclass(frozen=True)
class _GridTables:
    """The arch-independent part of a nest's enumeration: tile sizes per grid point and, per operand,
    the bytes of one sweep (halo rows included) and of its largest tile."""

    names: tuple[str, ...]
    values: tuple[tuple[int, ...], ...]
    grid: np.ndarray  # [count, loops] index into values
    tile: dict[str, np.ndarray]
    trips: dict[str, np.ndarray]
    sweep: tuple[np.ndarray, ...]
    one: tuple[np.ndarray, ...]
    orders: tuple[tuple[str, ...], ...]

    @property
    def count(self) -> int:
        return int(self.grid.shape[0])


@dataclass(frozen=True)
class _Columns:
    """(grid point, loop order) columns with their costs; ordered loop-order-major, then grid point."""

    grid_of: np.ndarray
    order_of: np.ndarray
    footprint: np.ndarray  # [operands, n] float
    traffic: np.ndarray  # [operands, n] float
    psum: np.ndarray
    cycles: np.ndarray
    sram: np.ndarray


@functools.lru_cache(maxsize=1024)
def _grid_tables_cached(key: _NestKey) -> _GridTables:
    nest = key.nest()
    names = tuple(lp.name for lp in nest.loops)
    max_trips = _VECTOR_MAX_TRIPS if nest.kind == "vector" else None
    per_loop = _VALUES_PER_LOOP.get(len(names), 5)
    values = [tile_values(lp.extent, max_trips, per_loop) for lp in nest.loops]
    if names:
        grid = np.array(list(itertools.product(*[range(len(v)) for v in values])), dtype=np.int64)
    else:
        grid = np.zeros((1, 0), dtype=np.int64)
    count = grid.shape[0]
    tile = {nm: np.array(v, dtype=np.float64)[grid[:, i]] for i, (nm, v) in enumerate(zip(names, values))}
    extent = {lp.name: lp.extent for lp in nest.loops}
    trips = {nm: np.ceil(extent[nm] / tile[nm]) for nm in names}
    sweep, one = [], []
    for o in nest.operands:
        tot = np.full(count, float(o.base))
        big = np.full(count, float(o.base))
        for nm in o.loops:
            if nm not in extent:
                continue
            idx = names.index(nm)
            if o.halo is not None and o.halo.loop == nm:
                sums, maxes = _halo_tables(o.halo, extent[nm], values[idx])
                tot = tot * sums[grid[:, idx]]
                big = big * maxes[grid[:, idx]]
            else:
                tot = tot * extent[nm]
                big = big * tile[nm]
        sweep.append(np.ceil(tot))
        one.append(np.ceil(big))
    orders = tuple(itertools.permutations(names)) or ((),)
    return _GridTables(names, tuple(map(tuple, values)), grid, tile, trips, tuple(sweep), tuple(one), orders)


@functools.lru_cache(maxsize=4096)
def _grid_cycles_cached(
    key: _NestKey, rows: int, cols: int, dataflow: str, word_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Compute cycles and array-side SRAM words per grid point of a nest shape on one array."""
    nest = key.nest()
    tables = _grid_tables_cached(key)
    extent = {lp.name: lp.extent for lp in nest.loops}
    return _grid_cycles(nest, (rows, cols, dataflow, word_bytes), tables.names, extent, tables.tile, list(tables.sweep))


def _expand(nest: LoopNest, tables: _GridTables, points: np.ndarray, cycles: np.ndarray, sram: np.ndarray) -> _Columns:
    """Cost every loop order of the grid points ``points``: footprints (doubled when a tile reloads)
    and traffic (one sweep times the re-fetch factor of the loops outside it that do not index it)."""
    count = len(points)
    trips = {nm: t[points] for nm, t in tables.trips.items()}
    n_orders = len(tables.orders)
    n_ops = len(nest.operands)
    out_idx = [j for j, o in enumerate(nest.operands) if o.role == ROLE_OUTPUT][0]
    fp = np.zeros((n_ops, count * n_orders))
    tr = np.zeros((n_ops, count * n_orders))
    psum = np.zeros(count * n_orders)
    one = [v[points] for v in tables.one]
    sweep = [v[points] for v in tables.sweep]
    for order_id, order in enumerate(tables.orders):
        at = slice(order_id * count, (order_id + 1) * count)
        for j, o in enumerate(nest.operands):
            # the operand's tile changes with its innermost indexing loop that takes more than one
            # trip; every loop outside that one which does not index it re-fetches it
            outer_other = np.ones(count)
            outer_all = np.ones(count)
            refetch = np.ones(count)
            loads = np.ones(count)
            for nm in order:
                if nm in o.loops:
                    moves = trips[nm] > 1
                    refetch = np.where(moves, outer_other, refetch)
                    loads = np.where(moves, outer_all * trips[nm], loads)
                else:
                    outer_other = outer_other * trips[nm]
                outer_all = outer_all * trips[nm]
            fp[j, at] = one[j] * np.where(loads > 1, 2, 1)
            tr[j, at] = sweep[j] * refetch
            if j == out_idx:
                psum[at] = sweep[j] * (refetch - 1)
    grid_of = np.tile(points, n_orders)
    order_of = np.repeat(np.arange(n_orders), count)
    return _Columns(grid_of, order_of, fp, tr, psum, cycles[grid_of], sram[grid_of])


def _own_memory_fits(nest: LoopNest, target: TileTarget, footprint: np.ndarray) -> np.ndarray:
    """Columns whose weight and output tiles fit their own scratchpads (those not shared with residents)."""
    ok = np.ones(footprint.shape[1], dtype=bool)
    for role in (ROLE_WEIGHT, ROLE_OUTPUT):
        memory = target.memory_of(role)
        rows = [j for j, o in enumerate(nest.operands) if o.role == role]
        if rows and memory != target.resident_memory:
            ok &= footprint[rows].sum(axis=0) <= target.capacity(memory)
    return ok


def enumerate_candidates(nest: LoopNest, target: TileTarget, model: CostModel) -> Candidates:
    """Every tile x loop order on the grid, costed in closed form, then pruned.

    A candidate survives if, in some residency mode of its activation operands, no other candidate
    both stages fewer bytes in the resident scratchpad and scores better; every other candidate is
    dominated in every mode, so dropping it never loses an optimum. Candidates whose weight or output
    tile cannot fit its own scratchpad are dropped (nothing else ever shares those).

    Only tiles within ``CYCLE_SLACK`` of the fastest compete on the fronts, so the loop orders are
    costed for those grid points alone (a few per cent of the grid); the whole grid is costed only
    when a mode needs its last-resort smallest tile. The grid and the per-tile cycles are cached per
    nest shape and per array, so a new scratchpad size re-prunes and nothing else.
    """
    key = _NestKey.of(_nameless(nest))
    tables = _grid_tables_cached(key)
    cycles, sram = _grid_cycles_cached(key, target.rows, target.cols, target.dataflow, target.word_bytes)
    # a tile fits its own scratchpads in some loop order only if its single (not double) buffers do
    once = np.vstack(tables.one) if tables.one else np.zeros((0, tables.count))
    can_fit = _own_memory_fits(nest, target, once)
    if not can_fit.any():
        full = _expand(nest, tables, np.arange(tables.count), cycles, sram)
        _raise_unfit(nest, target, full.footprint)
    floor = cycles[can_fit].min()
    while True:  # at most twice: the fastest fitting column may be slower than the fastest single-buffer fit
        points = np.flatnonzero(can_fit & (cycles <= CYCLE_SLACK * floor))
        cols = _expand(nest, tables, points, cycles, sram)
        ok = _own_memory_fits(nest, target, cols.footprint)
        if not ok.any():
            cols = _expand(nest, tables, np.arange(tables.count), cycles, sram)
            ok = _own_memory_fits(nest, target, cols.footprint)
            if not ok.any():
                _raise_unfit(nest, target, cols.footprint)
            break
        fastest = cols.cycles[ok].min()
        if fastest <= floor:
            break
        floor = fastest
    fast_cols = _take(cols, np.flatnonzero(ok))
    fast = np.flatnonzero(fast_cols.cycles <= CYCLE_SLACK * fast_cols.cycles.min())
    fast_cols = _take(fast_cols, fast)
    roles = tuple(o.role for o in nest.operands)
    cap = target.capacity(target.resident_memory)
    picks: list[_Columns] = []
    chosen: set[int] = set()
    fp_i = fast_cols.footprint.astype(np.int64)
    full_cols: _Columns | None = None
    for mode in residency_modes(nest):
        staged = _staged(nest, target, mode, fp_i)
        rank = _rank(fast_cols, roles, mode, target, model)
        chosen.update(int(i) for i in _front_2d(staged, rank))
        if staged.min() > cap:
            # a tile that slows the op's compute more than CYCLE_SLACK-fold is offered only as the last
            # resort, when no faster tile fits the scratchpad in this mode: no schedule should buy DRAM
            # bytes with an array that mostly fills and drains, but a tight scratchpad must get a tile
            if full_cols is None:
                every = _expand(nest, tables, np.arange(tables.count), cycles, sram)
                full_cols = _take(every, np.flatnonzero(_own_memory_fits(nest, target, every.footprint)))
            staged_all = _staged(nest, target, mode, full_cols.footprint.astype(np.int64))
            rank_all = _rank(full_cols, roles, mode, target, model)
            smallest = np.flatnonzero(staged_all == staged_all.min())
            picks.append(_take(full_cols, smallest[[np.argmin(rank_all[smallest])]]))
    picks.insert(0, _take(fast_cols, np.array(sorted(chosen), dtype=np.int64)))
    merged = _dedupe(_concat(picks), tables.count)
    fp = merged.footprint.astype(np.int64)
    tr = merged.traffic.astype(np.int64)
    cyc = merged.cycles.astype(np.int64)
    order = np.lexsort((cyc, tr.sum(axis=0)))
    rows_grid = tables.grid[merged.grid_of[order]]
    tiles = np.zeros((len(order), len(tables.names)), dtype=np.int64)
    for i, sizes in enumerate(tables.values):
        tiles[:, i] = np.asarray(sizes, dtype=np.int64)[rows_grid[:, i]]
    return Candidates(
        nest=nest,
        loop_names=tables.names,
        tiles=tiles,
        orders=tuple(tables.orders[k] for k in merged.order_of[order]),
        footprint=fp[:, order],
        traffic=tr[:, order],
        psum_reads=merged.psum[order].astype(np.int64),
        cycles=cyc[order],
        sram_words=merged.sram[order].astype(np.int64),
    )


def _staged(nest: LoopNest, target: TileTarget, mode: tuple[bool, ...], footprint: np.ndarray) -> np.ndarray:
    staged = np.zeros(footprint.shape[1], dtype=np.int64)
    for j in staged_operands(nest, target, mode):
        staged = staged + footprint[j]
    return staged


def _rank(cols: _Columns, roles: tuple[str, ...], mode: tuple[bool, ...], target: TileTarget, model: CostModel):
    """Each column's place in (score, then fewer cycles, then less traffic) order in one residency mode."""
    traffic = mode_traffic(cols.traffic.astype(np.int64), cols.psum.astype(np.int64), roles, mode, 0)
    cyc = cols.cycles.astype(np.int64)
    score = mode_cost(traffic, cyc, cols.sram.astype(np.int64), target.word_bytes, model)
    tie = np.lexsort((traffic, cyc, score))
    rank = np.empty(len(tie), dtype=np.int64)
    rank[tie] = np.arange(len(tie))
    return rank


def _take(cols: _Columns, idx: np.ndarray) -> _Columns:
    return _Columns(
        cols.grid_of[idx],
        cols.order_of[idx],
        cols.footprint[:, idx],
        cols.traffic[:, idx],
        cols.psum[idx],
        cols.cycles[idx],
        cols.sram[idx],
    )


def _concat(parts: list[_Columns]) -> _Columns:
    return _Columns(
        np.concatenate([p.grid_of for p in parts]),
        np.concatenate([p.order_of for p in parts]),
        np.concatenate([p.footprint for p in parts], axis=1),
        np.concatenate([p.traffic for p in parts], axis=1),
        np.concatenate([p.psum for p in parts]),
        np.concatenate([p.cycles for p in parts]),
        np.concatenate([p.sram for p in parts]),
    )


def _dedupe(cols: _Columns, count: int) -> _Columns:
    """One column per (grid point, loop order), in loop-order-major then grid-point order."""
    _, first = np.unique(cols.order_of * count + cols.grid_of, return_index=True)
    return _take(cols, first)


def _grid_cycles(
    nest: LoopNest,
    array: tuple[int, int, str, int],
    names: tuple[str, ...],
    extent: dict[str, int],
    tile: dict[str, np.ndarray],
    sweep: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Compute cycles and array-side SRAM words per grid point: the fold model summed over the
    full and edge tile shapes of every loop (vector ops: lanes-limited, independent of the tile).
    ``array`` is (rows, cols, dataflow, word bytes)."""
    rows, cols, dataflow, word_bytes = array
    count = len(sweep[0]) if sweep else 1
    if nest.kind != "array":
        sram = np.zeros(count)
        for tot in sweep:
            sram += tot / word_bytes
        return np.full(count, float(nest.vector_cycles)), sram
    cycles = np.zeros(count)
    sram = np.zeros(count)
    for edge in itertools.product((False, True), repeat=len(names)):
        weight = np.ones(count)
        size: dict[str, np.ndarray] = {}
        for nm, is_edge in zip(names, edge):
            full = np.floor(extent[nm] / tile[nm])
            rem = extent[nm] - full * tile[nm]
            weight = weight * ((rem > 0) if is_edge else full)
            size[nm] = rem if is_edge else tile[nm]

        def axis(a: str, size: dict[str, np.ndarray] = size) -> np.ndarray:
            loops, const = nest.gemm[a]
            val = np.full(count, float(const))
            for nm in loops:
                if nm in size:
                    val = val * size[nm]
            return val

        c, s = _fold_cost(axis("M"), axis("K"), axis("N"), rows, cols, dataflow)
        copies = axis("copies")
        cycles += weight * copies * c
        sram += weight * copies * s
    return cycles, sram


def _raise_unfit(nest: LoopNest, target: TileTarget, fp: np.ndarray) -> None:
    for role in (ROLE_WEIGHT, ROLE_OUTPUT):
        memory = target.memory_of(role)
        rows = [j for j, o in enumerate(nest.operands) if o.role == role]
        if not rows:
            continue
        need = int(fp[rows].sum(axis=0).min())
        if need > target.capacity(memory):
            tensors = ", ".join(nest.operands[j].tensor for j in rows)
            raise MappingError(
                f"op {nest.unit!r}: its smallest {role} tile ({tensors}) needs {need} bytes of {memory}, "
                f"which holds {target.capacity(memory)} bytes; give it {larger_memory_hint(memory)}",
                node=nest.unit,
            )
    raise MappingError(f"op {nest.unit!r}: no tile fits the scratchpads", node=nest.unit)


def _nameless(nest: LoopNest) -> LoopNest:
    """The nest with tensor and op names blanked, so equal shapes share one cache entry."""
    operands = tuple(Operand(f"#{i}", o.role, o.base, o.loops, o.halo) for i, o in enumerate(nest.operands))
    return LoopNest("", (), nest.kind, nest.loops, operands, dict(nest.gemm), nest.vector_cycles)


@dataclass(frozen=True)
class _NestKey:
    """A hashable stand-in for a nameless LoopNest (its gemm dict made a tuple)."""

    kind: str
    loops: tuple[Loop, ...]
    operands: tuple[Operand, ...]
    gemm: tuple[tuple[str, tuple[tuple[str, ...], int]], ...]
    vector_cycles: int

    @classmethod
    def of(cls, nest: LoopNest) -> _NestKey:
        return cls(nest.kind, nest.loops, nest.operands, tuple(sorted(nest.gemm.items())), nest.vector_cycles)

    def nest(self) -> LoopNest:
        return LoopNest("", (), self.kind, self.loops, self.operands, dict(self.gemm), self.vector_cycles)


@functools.lru_cache(maxsize=4096)
def _candidate_cache(key: _NestKey, target: TileTarget, model: CostModel) -> Candidates:
    return enumerate_candidates(key.nest(), target, model)


def candidates_for(graph: Graph, unit: Unit, target: TileTarget, model: CostModel | None = None) -> Candidates:
    """Pruned candidates of ``unit``, cached per distinct loop-nest shape, tiling target and prices."""
    model = model or CostModel()
    nest = loop_nest(graph, unit, target.word_bytes, target.vector_lanes)
    try:
        cached = _candidate_cache(_NestKey.of(_nameless(nest)), target, model)
    except MappingError as exc:
        raise MappingError(str(exc).replace("op ''", f"op {unit.name!r}"), node=unit.name) from None
    return Candidates(
        nest=nest,
        loop_names=cached.loop_names,
        tiles=cached.tiles,
        orders=cached.orders,
        footprint=cached.footprint,
        traffic=cached.traffic,
        psum_reads=cached.psum_reads,
        cycles=cached.cycles,
        sram_words=cached.sram_words,
    )


def clear_candidate_cache() -> None:
    """Forget cached candidates, tile grids and per-array cycles (for timing a cold enumeration)."""
    _candidate_cache.cache_clear()
    _grid_tables_cached.cache_clear()
    _grid_cycles_cached.cache_clear()


# ---------------------------------------------------------------------------------------------------
# Tensor facts the schedulers share
# ---------------------------------------------------------------------------------------------------
def tensor_bytes(graph: Graph, tensor: str, word_bytes: int) -> int:
    return graph.tensors[tensor].numel * word_bytes


def compulsory_bytes(graph: Graph, word_bytes: int) -> int:
    """DRAM bytes no schedule avoids: every weight read once, graph inputs read once, outputs written once."""
    used = {t for op in graph.ops for t in (*op.inputs, *op.weights, *op.outputs)}
    total = 0
    for name, t in graph.tensors.items():
        if name in used and t.kind in ("weight", "input", "output"):
            total += t.numel * word_bytes
    return total


# ---------------------------------------------------------------------------------------------------
# Scheduling problems and their solutions (shared by the CP-SAT, greedy and brute-force mappers)
# ---------------------------------------------------------------------------------------------------
@dataclass
class Problem:
    """A graph's units with their candidates, the unit DAG and which tensors may stay resident."""

    graph: Graph
    arch: Arch
    target: TileTarget
    model: CostModel
    units: list[Unit]
    cands: list[Candidates]
    eligible: dict[str, int]  # tensor -> bytes, for tensors that may stay resident
    producer: dict[str, int]  # tensor -> unit index
    consumers: dict[str, list[int]]  # tensor -> unit indices reading it
    preds: list[set[int]]
    succs: list[set[int]]

    @property
    def capacity(self) -> int:
        return self.target.capacity(self.target.resident_memory)

    def operand_tensors(self, u: int) -> list[str]:
        return [o.tensor for o in self.cands[u].nest.operands]

    def mode_of(self, u: int, resident: set[str] | frozenset[str]) -> tuple[bool, ...]:
        """Residency flags of unit ``u``'s operands for a set of resident tensors."""
        return tuple(
            o.role != ROLE_WEIGHT and o.tensor in self.eligible and o.tensor in resident
            for o in self.cands[u].nest.operands
        )

    def free_operands(self, u: int) -> list[int]:
        """Operand indices of unit ``u`` whose residency is a decision."""
        return [
            j for j, o in enumerate(self.cands[u].nest.operands) if o.role != ROLE_WEIGHT and o.tensor in self.eligible
        ]

    def output_write_bytes(self, u: int) -> int:
        """What a resident output still costs: one write when it is also a graph output."""
        out = self.units[u].output
        return self.eligible.get(out, 0) if self.graph.tensors[out].kind == "output" else 0

    def input_load_cost(self, tensor: str) -> int:
        """Score of loading a resident graph input once (0 for tensors some unit produces)."""
        if tensor in self.producer:
            return 0
        nbytes = np.array([self.eligible[tensor]], dtype=np.int64)
        return int(
            mode_cost(nbytes, np.zeros(1), nbytes / self.target.word_bytes, self.target.word_bytes, self.model)[0]
        )

    def lifetime(self, tensor: str, position: dict[int, int]) -> tuple[int, int]:
        """First and last unit positions (inclusive) a resident tensor occupies."""
        cons = [position[c] for c in self.consumers[tensor]]
        start = position[self.producer[tensor]] if tensor in self.producer else min(cons)
        return start, max(cons)

    def slot_room(self, order: list[int], resident: frozenset[str] | set[str]) -> list[int]:
        """Scratchpad bytes left at each position of ``order`` once the ``resident`` tensors take theirs."""
        position = {u: i for i, u in enumerate(order)}
        room = [self.capacity] * len(order)
        for t in resident:
            start, end = self.lifetime(t, position)
            for q in range(start, end + 1):
                room[q] -= self.eligible[t]
        return room


def build_problem(graph: Graph, arch: Arch, objective: str = "dram") -> Problem:
    """Units, their candidates under ``objective`` and the residency-eligible tensors of ``graph`` on ``arch``."""
    target = target_of(arch)
    model = cost_model(arch, objective)
    units = build_units(graph)
    cands = [candidates_for(graph, u, target, model) for u in units]
    producer = {u.output: i for i, u in enumerate(units)}
    consumers: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        for t in dict.fromkeys(u.inputs):
            consumers.setdefault(t, []).append(i)
    cap = target.capacity(target.resident_memory)
    eligible = {}
    for t in consumers:
        nbytes = tensor_bytes(graph, t, target.word_bytes)
        if graph.tensors[t].kind != "weight" and nbytes <= cap:
            eligible[t] = nbytes
    preds: list[set[int]] = [set() for _ in units]
    succs: list[set[int]] = [set() for _ in units]
    for t, users in consumers.items():
        if t in producer:
            for c in users:
                preds[c].add(producer[t])
                succs[producer[t]].add(c)
    problem = Problem(graph, arch, target, model, units, cands, eligible, producer, consumers, preds, succs)
    _check_stageable(problem)
    return problem


def _check_stageable(problem: Problem) -> None:
    """Every unit must have a tile whose staging fits the resident scratchpad with all its eligible
    operands resident (the most any schedule can do for it); otherwise name the op and the need."""
    cap = problem.capacity
    memory = problem.target.resident_memory
    for u, cands in enumerate(problem.cands):
        flags = tuple(j in problem.free_operands(u) for j in range(len(cands.nest.operands)))
        need = int(cands.staging(problem.target, flags).min())
        if need > cap:
            unit = problem.units[u]
            staged = [cands.nest.operands[j].tensor for j in staged_operands(cands.nest, problem.target, flags)]
            raise MappingError(
                f"op {unit.name!r}: its smallest tile stages {need} bytes ({', '.join(staged)}) in {memory}, "
                f"which holds {cap} bytes; no tiling of this op fits (give it a larger "
                f"{larger_memory_hint(memory)})",
                node=unit.name,
            )


def topological_bounds(problem: Problem) -> tuple[list[int], list[int]]:
    """Earliest and latest position of every unit in any topological order (ancestor/descendant counts)."""
    n = len(problem.units)
    anc: list[set[int]] = [set() for _ in range(n)]
    for u in range(n):  # units are in graph (topological) order
        for p in problem.preds[u]:
            anc[u] |= anc[p] | {p}
    desc_count = [0] * n
    for u in range(n):
        for a in anc[u]:
            desc_count[a] += 1
    return [len(a) for a in anc], [n - 1 - d for d in desc_count]


@dataclass
class Schedule:
    """A solution: unit order, candidate per unit, resident tensors and scratchpad offsets."""

    order: list[int]  # unit indices in execution order
    choice: list[int]  # candidate index per unit
    resident: frozenset[str]
    resident_offset: dict[str, int]  # tensor -> offset in the resident scratchpad
    staging_offset: dict[int, int]  # unit -> offset of its staging block in the resident scratchpad
    score: int = 0
    info: dict = field(default_factory=dict)  # status, bound, gap, seconds


def schedule_score(problem: Problem, order: list[int], choice: list[int], resident: frozenset[str]) -> int:
    """The objective of a schedule, from the candidates' closed-form costs."""
    total = 0
    for u in order:
        cands = problem.cands[u]
        cost = cands.costs(problem.target, problem.model, problem.mode_of(u, resident), problem.output_write_bytes(u))
        total += int(cost[choice[u]])
    for t in resident:
        total += problem.input_load_cost(t)
    return total


def to_mapping(problem: Problem, schedule: Schedule, mapper: str) -> Mapping:
    """Turn a schedule into the pipeline's Mapping: per-op tiles and traffic, order, buffers, solver facts."""
    from mappers.systolic import lower_op

    graph, target = problem.graph, problem.target
    order_ops: list[str] = []
    first_index: dict[int, int] = {}
    last_index: dict[int, int] = {}
    for u in schedule.order:
        first_index[u] = len(order_ops)
        order_ops.extend(problem.units[u].ops)
        last_index[u] = len(order_ops) - 1
    ops: dict[str, OpMapping] = {}
    buffers: list[Buffer] = []
    loaded: set[str] = set()
    resident = schedule.resident
    spills: list[str] = []
    for u in schedule.order:
        unit = problem.units[u]
        cands = problem.cands[u]
        c = schedule.choice[u]
        mode = problem.mode_of(u, resident)
        reads = writes = 0
        staged_at = {memory: 0 for memory, _ in target.capacities}
        staged_at[target.resident_memory] = schedule.staging_offset.get(u, 0)
        operand_bytes: list[dict] = []
        for j, o in enumerate(cands.nest.operands):
            traffic = int(cands.traffic[j, c])
            if o.role == ROLE_OUTPUT:
                if mode[j]:
                    writes += problem.output_write_bytes(u)
                else:
                    writes += traffic
                    reads += int(cands.psum_reads[c])
            elif mode[j]:
                if o.tensor not in problem.producer and o.tensor not in loaded:
                    reads += problem.eligible[o.tensor]  # a resident graph input's one load
                    loaded.add(o.tensor)
            else:
                reads += traffic
            operand_bytes.append(
                {
                    "tensor": o.tensor,
                    "role": o.role,
                    "resident": bool(mode[j]),
                    "traffic": 0 if mode[j] else traffic,
                    "footprint": int(cands.footprint[j, c]),
                }
            )
            if has_tile_buffer(o.role, mode[j]):
                memory = target.memory_of(o.role)
                size = int(cands.footprint[j, c])
                buffers.append(
                    Buffer(o.tensor, memory, staged_at[memory], size, first_index[u], last_index[u], kind="tile")
                )
                staged_at[memory] += size
        head = graph.op(unit.name)
        is_array = head.kind in (OpKind.CONV, OpKind.MATMUL)
        resident_inputs = tuple(t for j, t in enumerate(problem.operand_tensors(u)) if mode[j] and t in unit.inputs)
        extra = {
            "unit": "array" if is_array else "vector",
            "tiling": True,
            "fused_ops": unit.ops[1:],
            "dram_read_bytes": reads,
            "dram_write_bytes": writes,
            "compute_cycles": int(cands.cycles[c]),
            "sram_words": int(cands.sram_words[c]),
            "operands": operand_bytes,
            "psum_read_bytes": 0 if mode[-1] else int(cands.psum_reads[c]),
            "position": first_index[u],
        }
        if is_array:
            extra["gemm"] = lower_op(head)
        ops[unit.name] = OpMapping(
            op=unit.name,
            tile=cands.tile(c),
            loop_order=cands.orders[c],
            dataflow=target.dataflow if is_array else "vector",
            resident_inputs=resident_inputs,
            resident_output=bool(mode[-1]),
            extra=extra,
        )
        for fused in unit.ops[1:]:
            src = graph.op(fused).inputs[0]
            ops[fused] = OpMapping(
                op=fused,
                tile={},
                dataflow="vector",
                resident_inputs=(src,),
                extra={
                    "unit": "vector",
                    "fused_into": unit.name,
                    "tiling": True,
                    "dram_read_bytes": 0,
                    "dram_write_bytes": 0,
                },
            )
        if unit.output in problem.consumers and unit.output not in resident:
            spills.append(unit.output)
    unit_pos = {u: i for i, u in enumerate(schedule.order)}
    for t in sorted(resident):
        start, end = problem.lifetime(t, unit_pos)
        buffers.append(
            Buffer(
                t,
                target.resident_memory,
                schedule.resident_offset[t],
                problem.eligible[t],
                first_index[schedule.order[start]],
                last_index[schedule.order[end]],
                kind="resident",
            )
        )
    dram = sum(m.extra["dram_read_bytes"] + m.extra["dram_write_bytes"] for m in ops.values())
    compulsory = compulsory_bytes(graph, target.word_bytes)
    solver = {
        "objective": problem.model.objective,
        "score": schedule.score,
        "dram_bytes": dram,
        "compulsory_bytes": compulsory,
        "noncompulsory_bytes": dram - compulsory,
        "resident": sorted(resident),
        "spills": spills,
        "units": len(problem.units),
        "candidates": sum(len(c) for c in problem.cands),
        **schedule.info,
    }
    return Mapping(
        graph=graph, arch=problem.arch, ops=ops, order=order_ops, buffers=buffers, mapper=mapper, solver=solver
    )
