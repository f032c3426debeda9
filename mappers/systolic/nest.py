"""The tiler's view of a systolic design and of a graph: loop nests, operands and units.

Every op (or a conv/matmul with the unary activation fused into its output pipeline: a *unit*) is
described as a loop nest over a few loops (``LoopNest``): batch, output rows / pixels, output
channels, reduction channels, groups, or one row loop for the vector ops. Each operand (input
activations, weights, the output) is indexed by some of these loops; ``mappers.systolic.tiling``
picks tile sizes and loop orders over them. ``TileTarget`` is what the tiler needs of an arch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dse.graph import Graph, OpKind
from mappers.base import MappingError
from mappers.systolic.fold import ARRAY_KINDS, VECTOR_KINDS
from templates.systolic import SystolicArch

ROLE_INPUT = "input"
ROLE_WEIGHT = "weight"
ROLE_OUTPUT = "output"


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
    from producer to last consumer) live in ``resident_memory``. ``tile_copies`` is how many copies of a tile
    that reloads while its op runs the scratchpad holds: 2 (double-buffered, the next tile loads while the
    array computes on this one) or 1 (single-buffered: twice the tile in the same bytes, transfers wait).
    """

    rows: int
    cols: int
    dataflow: str
    vector_lanes: int
    word_bytes: int
    capacities: tuple[tuple[str, int], ...]  # memory name -> bytes
    role_memory: tuple[tuple[str, str], ...]  # role -> memory name
    resident_memory: str
    tile_copies: int = 2

    @property
    def overlapped(self) -> bool:
        """Whether DMA transfers overlap compute (double-buffered tiles)."""
        return self.tile_copies > 1

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


def target_of(arch: SystolicArch, tile_copies: int = 2) -> TileTarget:
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
            rows=a.rows,
            cols=a.cols,
            dataflow=a.dataflow,
            vector_lanes=a.vector_lanes,
            word_bytes=a.word_bytes,
            capacities=((UNIFIED_MEMORY, int(round(a.scratchpad_kib * 1024))),),
            role_memory=tuple((role, UNIFIED_MEMORY) for role in (ROLE_INPUT, ROLE_WEIGHT, ROLE_OUTPUT)),
            resident_memory=UNIFIED_MEMORY,
            tile_copies=tile_copies,
        )
    caps = (
        ("ifmap_sram", int(a.ifmap_sram_kib * 1024)),
        ("filter_sram", int(a.filter_sram_kib * 1024)),
        ("ofmap_sram", int(a.ofmap_sram_kib * 1024)),
    )
    roles = ((ROLE_INPUT, "ifmap_sram"), (ROLE_WEIGHT, "filter_sram"), (ROLE_OUTPUT, "ofmap_sram"))
    return TileTarget(
        rows=a.rows,
        cols=a.cols,
        dataflow=a.dataflow,
        vector_lanes=a.vector_lanes,
        word_bytes=a.word_bytes,
        capacities=caps,
        role_memory=roles,
        resident_memory="ifmap_sram",
        tile_copies=tile_copies,
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
    a conv/matmul as ``mappers.systolic.fold`` does (the activation runs in the array's output pipeline),
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
        numel = graph.read_numel(op, t)  # a look-up reads its rows of a table, which stream with the output
        if op.kind is OpKind.SCAN:  # channels-last activations [B, L, D] and weights [D, ...] split by D
            shape = tensors[t].shape
            indexed = shape[-1] == extent if role == ROLE_INPUT else shape[:1] == (extent,)
        else:
            indexed = role == ROLE_INPUT or numel != tensors[t].numel
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
