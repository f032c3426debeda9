"""The multicore scheduling problem: a graph cut into layers and tile groups, each priced on every core.

A *layer* is an array op (conv/matmul) with the vector ops that follow it in topological order (its
activation, residual add, pooling: they run on the same core's SIMD unit; a unary activation rides in the
array's output pipeline, as the fold mapper fuses it). With layer fusion a layer may be cut into ``tiles``
*tile groups*, each a band of output rows (Stream's computation nodes); a tile of a consumer depends on exactly
the producer tiles whose rows its receptive field reads. All tiles of a layer run on one core (Stream's
layer-core allocation).

Each (task, core) is priced by the systolic model: the tile's op is lowered by the fold mapper's
``lower_op`` and costed by ``gemm_cost`` / ``vector_op_cost`` on that core's ``SystolicArch``, energies by
``hwmodels.systolic.pricing``. Where data lives (the traffic model):

* weights are read from DRAM by a layer's first tile, and again by later tiles only when they do not fit
  the core's filter SRAM;
* a layer's output tile stays in its core's ofmap SRAM when it fits half of it (double-buffered) and, for
  a band of a fused layer, when its consumers read band by band too; else it is written to DRAM; graph
  inputs are read from and graph outputs written to DRAM; which layers are cut into how many bands:
  ``_fuse``;
* a consumer gets an on-chip input from its own core for free, from another core over the interconnect,
  and a spilled input from DRAM (a read-back by the consumer's DMA), before it starts: an edge's
  *activity* (``Problem.activity``), which depends on the pair of cores;
* contention: a task occupies the fraction of one DRAM channel its own traffic needs over its duration, a
  read-back one whole channel for its length; at most ``dram_channels`` channels' worth at any time. A
  transfer holds the bus (``bus``: one shared medium) or its source core's output port and its destination
  core's input port (``mesh``) while it serialises, then pays the hops' head latency. Edges whose
  activity is shorter than ``queue_min_cycles`` (1 % of the mean task) never queue: they are plain lags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from dse.graph import Graph, Op, OpKind
from hwmodels.multicore.cost import hop_cycles, link_cycles, readback_cycles, readback_energy_pj, transfer_energy_pj
from hwmodels.systolic.cost import gemm_cost, vector_op_cost
from hwmodels.systolic.pricing import Prices, conv_window, design_prices, gemm_energy_pj, vector_energy_pj
from mappers.base import MappingError
from mappers.systolic.fold import ARRAY_KINDS, VECTOR_KINDS, lower_op
from templates.multicore import MulticoreArch
from templates.systolic import SystolicArch

DEMAND_UNITS = 100  # one DRAM channel in the cumulative constraint
OBJECTIVES = ("latency", "throughput", "energy", "edp")


@dataclass(frozen=True)
class Layer:
    """Consecutive ops run on one core: an array op and the vector ops after it."""

    name: str
    ops: tuple[str, ...]
    model: str
    tiles: int
    rate: float = 1.0


@dataclass(frozen=True)
class Task:
    """One tile group of one layer."""

    index: int
    layer: int
    tile: int


@dataclass(frozen=True)
class TaskCost:
    """A task on one core: cycles, DRAM bytes, energy before leakage (pJ) and where its output goes."""

    cycles: int
    compute_cycles: float
    macs: int
    dram_read_bytes: float
    dram_write_bytes: float
    energy_pj: dict[str, float]
    output_on_chip: bool
    dram_demand: int  # DEMAND_UNITS = one channel busy for the whole task

    @property
    def energy_total_pj(self) -> float:
        return sum(self.energy_pj.values())


@dataclass(frozen=True)
class Edge:
    """Consumer task ``dst`` needs ``nbytes`` of producer task ``src``'s output."""

    src: int
    dst: int
    nbytes: float
    queued: bool = False  # its activity is long enough to be scheduled on its resource (else a plain lag)


@dataclass(frozen=True)
class EdgeActivity:
    """What bringing one edge's data from the producer's core to the consumer's occupies."""

    kind: str  # none (same core, on chip) | noc (interconnect transfer) | dram (read-back of a spilled tensor)
    cycles: int  # time it holds its resources (link ports, or one DRAM channel)
    after: int  # head latency after it (the hops) before the consumer may start
    resources: tuple[str, ...]  # unary link resources held: ('bus',) or ('out<a>', 'in<b>')
    dram_bytes: float
    energy_pj: float

    @property
    def lag(self) -> int:
        return self.cycles + self.after


@dataclass
class Problem:
    graph: Graph
    arch: MulticoreArch
    layers: list[Layer]
    tasks: list[Task]
    costs: list[list[TaskCost]]  # [task][core]
    edges: list[Edge]
    prices: list[Prices]
    fusion: bool
    queue_min_cycles: int = 1
    _activities: dict = field(default_factory=dict, repr=False)

    @property
    def num_cores(self) -> int:
        return self.arch.num_cores

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(layer.model for layer in self.layers))

    def layer_edges(self) -> list[tuple[int, int]]:
        """Distinct (producer layer, consumer layer) pairs, in a fixed order."""
        return sorted({(self.tasks[e.src].layer, self.tasks[e.dst].layer) for e in self.edges})

    def activity(self, edge: Edge, a: int, b: int) -> EdgeActivity:
        """What bringing ``edge``'s data from core ``a`` to core ``b`` occupies and costs."""
        key = (edge.src, edge.dst, a, b)
        if key not in self._activities:
            self._activities[key] = _edge_activity(self, edge, a, b)
        return self._activities[key]

    def lag(self, edge: Edge, a: int, b: int) -> tuple[int, float, float]:
        """(cycles on an idle interconnect/DRAM, DRAM bytes read, energy pJ) of ``edge`` from core a to b."""
        act = self.activity(edge, a, b)
        return act.lag, act.dram_bytes, act.energy_pj

    def leakage_pj_per_cycle(self) -> float:
        """All cores leak for the whole schedule."""
        return sum(p.leakage_pj_per_cycle for p in self.prices)


def link_resources(arch: MulticoreArch, a: int, b: int) -> tuple[str, ...]:
    """The unary link resources a transfer from core ``a`` to core ``b`` holds while it serialises."""
    return ("bus",) if arch.interconnect == "bus" else (f"out{a}", f"in{b}")


def _edge_activity(problem: Problem, edge: Edge, a: int, b: int) -> EdgeActivity:
    arch = problem.arch
    if not problem.costs[edge.src][a].output_on_chip:  # spilled: the consumer's DMA reads it back
        cycles = readback_cycles(arch, edge.nbytes, b)
        return EdgeActivity("dram", cycles, 0, (), edge.nbytes, readback_energy_pj(problem.prices[b], edge.nbytes))
    if a == b or edge.nbytes <= 0:
        return EdgeActivity("none", 0, 0, (), 0.0, 0.0)
    energy = transfer_energy_pj(arch, edge.nbytes, a, b)
    return EdgeActivity("noc", link_cycles(arch, edge.nbytes), hop_cycles(arch, a, b), link_resources(arch, a, b),
                        0.0, energy)  # fmt: skip


def _mark_queued(problem: Problem) -> None:
    """Edges whose longest activity reaches ``queue_min_cycles`` (1 % of the mean task) are queued."""
    k = range(problem.num_cores)
    mean_task = sum(min(c.cycles for c in row) for row in problem.costs) / max(1, len(problem.costs))
    problem.queue_min_cycles = max(1, math.ceil(0.01 * mean_task))
    problem.edges = [
        replace(e, queued=max(problem.activity(e, a, b).cycles for a in k for b in k) >= problem.queue_min_cycles)
        for e in problem.edges
    ]


# ------------------------------------------------------------------------------------------ building
def build_problem(graph: Graph, arch: MulticoreArch, fusion_tiles: int = 1, max_layers: int = 48) -> Problem:
    """Layers (at most ``max_layers``, neighbours merged by least work), tiles, costs and edges."""
    if fusion_tiles < 1:
        raise MappingError(f"fusion_tiles={fusion_tiles} must be >= 1")
    layers = _merge_layers(graph, _split_layers(graph), max_layers)
    rates = graph.meta.get("model_rates", {})
    layers = [replace(layer, rate=float(rates.get(layer.model, 1.0))) for layer in layers]
    return assemble(graph, arch, _fuse(graph, arch, layers, fusion_tiles) if fusion_tiles > 1 else layers)


def layer_by_layer(problem: Problem) -> Problem:
    """The same layers, untiled: the fused problem's layer-by-layer counterpart (its solution seeds the
    fused search)."""
    return assemble(problem.graph, problem.arch, [replace(layer, tiles=1) for layer in problem.layers])


def assemble(graph: Graph, arch: MulticoreArch, layers: list[Layer]) -> Problem:
    """Tasks, their costs on every core and the edges between them, for layers already cut into tiles."""
    pairs = [(li, j) for li, layer in enumerate(layers) for j in range(layer.tiles)]
    tasks = [Task(i, li, j) for i, (li, j) in enumerate(pairs)]
    first_task = {}
    for t in tasks:
        first_task.setdefault(t.layer, t.index)
    prices = [design_prices(core) for core in arch.cores]
    cache: dict = {}
    consumers = _layer_consumers(graph, layers)
    banded = [all(layers[q].tiles > 1 for q in consumers[li]) and bool(consumers[li]) for li in range(len(layers))]
    costs = [
        [
            _task_cost(graph, layers[t.layer], t.tile, core, prices[c], cache, banded[t.layer])
            for c, core in enumerate(arch.cores)
        ]
        for t in tasks
    ]
    edges = _edges(graph, layers, first_task)
    problem = Problem(graph, arch, layers, tasks, costs, edges, prices, any(la.tiles > 1 for la in layers))
    _mark_queued(problem)
    return problem


def _split_layers(graph: Graph) -> list[Layer]:
    layers: list[list[Op]] = []
    for op in graph.ops:
        if op.kind not in ARRAY_KINDS and op.kind not in VECTOR_KINDS:
            raise MappingError(f"op {op.name!r}: kind {op.kind.value} has no systolic mapping", node=op.name)
        model = _model_of(op)
        if op.kind in ARRAY_KINDS or not layers or _model_of(layers[-1][0]) != model:
            layers.append([op])
        else:
            layers[-1].append(op)
    return [Layer(ops[0].name, tuple(o.name for o in ops), _model_of(ops[0]), 1) for ops in layers]


def _model_of(op: Op) -> str:
    return str(op.attrs.get("model", ""))


def _merge_layers(graph: Graph, layers: list[Layer], max_layers: int) -> list[Layer]:
    """Merge neighbouring layers of one model (least MACs first) until at most ``max_layers`` remain."""
    if max_layers < 1:
        raise MappingError(f"max_layers={max_layers} must be >= 1")
    macs = {op.name: op.macs + op.flops // 2 for op in graph.ops}
    layers = list(layers)
    while len(layers) > max_layers:
        pairs = [
            (sum(macs[o] for o in layers[i].ops + layers[i + 1].ops), i)
            for i in range(len(layers) - 1)
            if layers[i].model == layers[i + 1].model
        ]
        if not pairs:
            break
        _, i = min(pairs)
        a, b = layers[i], layers[i + 1]
        layers[i : i + 2] = [Layer(a.name, a.ops + b.ops, a.model, 1)]
    return layers


def _rows(op: Op) -> int:
    """Output rows an op can be cut into (1: it cannot)."""
    d = op.dims
    if op.kind is OpKind.CONV:
        return d["P"]
    if op.kind is OpKind.MATMUL:
        return d["M"]
    if op.kind is OpKind.POOL:
        return 1 if op.attrs.get("is_global") else d["P"]
    return 0  # elementwise & co. follow their producer's rows


def _row_extent(graph: Graph, layer: Layer) -> int:
    rows = [r for r in (_rows(graph.op(n)) for n in layer.ops) if r]
    return max(1, min(rows)) if rows else 1


def _layer_consumers(graph: Graph, layers: list[Layer]) -> list[set[int]]:
    """For each layer, the other layers that read its outputs."""
    layer_of = {name: li for li, layer in enumerate(layers) for name in layer.ops}
    readers = graph.consumers()
    return [
        {layer_of[r] for n in layer.ops for t in graph.op(n).outputs for r in readers.get(t, [])} - {li}
        for li, layer in enumerate(layers)
    ]


def _leaving_bytes(graph: Graph, layer: Layer) -> tuple[float, bool]:
    """Bytes of the tensors a layer hands to other layers, and whether one of them is a graph output."""
    readers = graph.consumers()
    leaving = [
        graph.tensors[t]
        for n in layer.ops
        for t in graph.op(n).outputs
        if graph.tensors[t].kind == "output" or any(r not in layer.ops for r in readers.get(t, []))
    ]
    return sum(t.nbytes for t in leaving), any(t.kind == "output" for t in leaving)


def _fuse(graph: Graph, arch: MulticoreArch, layers: list[Layer], max_tiles: int) -> list[Layer]:
    """Row bands per layer for layer fusion. A layer whose output does not fit a core's ofmap SRAM (half of
    it: double-buffered) whole, but does in at most ``max_tiles`` bands, is cut into the fewest such bands,
    when keeping them on chip saves more DRAM traffic (the output's write and read-back) than re-reading
    its weights once per band costs (weights beyond the filter SRAM); its consumers are cut into as many
    bands, so that they read the bands as they come. Every other layer stays whole."""
    room = max(core.sram_words("ofmap") * core.word_bytes / 2 for core in arch.cores)
    filter_room = max(core.sram_words("filter") * core.word_bytes for core in arch.cores)
    consumers = _layer_consumers(graph, layers)

    def rereads(li: int, bands: int) -> float:
        weights = sum(graph.read_nbytes(op, t) for op in map(graph.op, layers[li].ops) for t in op.weights)
        return (bands - 1) * weights if weights > filter_room else 0.0

    tiles = [1] * len(layers)
    for li, layer in enumerate(layers):
        out, is_output = _leaving_bytes(graph, layer)
        bands = math.ceil(out / room) if room > 0 else 0
        readers = consumers[li]
        if is_output or not readers or not 1 < bands <= min(max_tiles, _row_extent(graph, layer)):
            continue
        if any(_row_extent(graph, layers[q]) < bands for q in readers):
            continue
        cost = rereads(li, bands) * (tiles[li] < bands) + sum(rereads(q, bands) for q in readers if tiles[q] < bands)
        if 2 * out > cost:  # the write and the read-back it saves
            for q in (li, *readers):
                tiles[q] = max(tiles[q], bands)
    return [replace(layer, tiles=t) for layer, t in zip(layers, tiles)]


def _fraction(j: int, tiles: int) -> tuple[float, float]:
    return j / tiles, (j + 1) / tiles


def _tile_op(op: Op, j: int, tiles: int) -> tuple[Op, float]:
    """Op restricted to tile ``j``'s output rows, and the fraction of its output that tile is."""
    if tiles == 1:
        return op, 1.0
    rows = _rows(op)
    lo, hi = _fraction(j, tiles)
    d = dict(op.dims)
    if not rows or rows == 1:
        row_dim = {OpKind.ELEMENTWISE: "N", OpKind.SOFTMAX: "R", OpKind.LAYERNORM: "R"}.get(op.kind)
        if row_dim:  # follows the tile's rows
            n = d[row_dim]
            part = max(1, round(n * (hi - lo)))
            return replace(op, dims={**d, row_dim: part}), part / n
        return (op, 1.0) if j == tiles - 1 else (replace(op, dims={**d}), 0.0)
    a, b = math.floor(lo * rows), math.ceil(hi * rows) if j == tiles - 1 else math.floor(hi * rows)
    b = max(b, a + 1)
    if op.kind in (OpKind.CONV, OpKind.POOL):
        sh = int(op.attrs.get("stride", (1, 1))[0])
        d["H"] = min(d["H"], (b - a - 1) * sh + d["R"])
        d["P"] = b - a
    elif op.kind is OpKind.MATMUL:
        d["M"] = b - a
    return replace(op, dims=d), (b - a) / rows


def _task_cost(
    graph: Graph, layer: Layer, j: int, core: SystolicArch, prices: Prices, cache: dict, banded: bool
) -> TaskCost:
    """A tile on a core. Its output stays on chip when it fits half the ofmap SRAM and, for a band of a
    fused layer, when every consumer is banded too (reads it band by band; else the whole output would
    have to be held)."""
    key = (layer.ops, j, layer.tiles, id(core), banded)
    if key in cache:
        return cache[key]
    ops = [graph.op(n) for n in layer.ops]
    consumers = graph.consumers()
    producer = graph.producer()
    wb = core.word_bytes
    cycles = compute = rd = wr = 0.0
    macs = 0
    energy = {"mac": 0.0, "pe_storage": 0.0, "sram": 0.0, "dram": 0.0, "vector": 0.0}
    tiled = [(op, *_tile_op(op, j, layer.tiles)) for op in ops]
    leaving = {
        t
        for op in ops
        for t in op.outputs
        if graph.tensors[t].kind == "output" or any(r not in layer.ops for r in consumers.get(t, []))
    }
    out_bytes = sum(graph.tensors[t].nbytes * share for op, _, share in tiled for t in op.outputs if t in leaving)
    graph_output = any(graph.tensors[t].kind == "output" for t in leaving)
    on_chip = out_bytes <= core.sram_words("ofmap") * wb / 2 and not graph_output and (layer.tiles == 1 or banded)
    for op, tile_op, share in tiled:
        writes_dram = any(t in leaving for t in op.outputs) and not on_chip
        from_dram = any(graph.tensors[t].kind == "input" for t in op.inputs)
        if op.kind in ARRAY_KINDS:
            weight_words = sum(graph.tensors[t].numel for t in op.weights)
            reread = j == 0 or weight_words > core.sram_words("filter")
            if share == 0.0:
                continue
            gemm = lower_op(tile_op)
            c = gemm_cost(gemm, core, write_output=writes_dram, read_input=from_dram, read_filter=reread)
            cycles += c.total_cycles
            compute += c.compute_cycles
            rd += (c.ifmap_dram_reads + c.filter_dram_reads) * wb
            wr += c.ofmap_dram_writes * wb
            macs += tile_op.macs
            for k, v in gemm_energy_pj(c, tile_op.macs, prices, wb, core.dataflow, conv_window(gemm)).items():
                energy[k] += v
        else:
            if share == 0.0:
                continue
            reads = sum(graph.tensors[t].numel * share for t in op.inputs if graph.tensors[t].kind == "input")
            reads += sum(graph.read_numel(op, t) for t in op.weights) if j == 0 else 0  # a look-up: its rows
            writes = sum(graph.tensors[t].numel * share for t in op.outputs) if writes_dram else 0.0
            busy, r_words, w_words = vector_op_cost(tile_op, core, (reads, writes))
            src = producer.get(op.inputs[0]) if len(op.inputs) == 1 else None
            pipelined = (
                src in layer.ops and graph.op(src).kind in ARRAY_KINDS and consumers.get(op.inputs[0]) == [op.name]
            )
            if not pipelined:  # an activation in the array's output pipeline adds no time
                cycles += busy
                compute += math.ceil(tile_op.flops / core.vector_lanes) if tile_op.flops else 0
            rd += r_words * wb
            wr += w_words * wb
            for k, v in vector_energy_pj(tile_op.flops, r_words * wb, w_words * wb, prices).items():
                energy[k] += v
    cycles_int = max(1, math.ceil(cycles))
    demand = min(DEMAND_UNITS, math.ceil(DEMAND_UNITS * (rd + wr) / (cycles_int * core.dram_bytes_per_cycle)))
    cost = TaskCost(cycles_int, compute, macs, rd, wr, energy, on_chip, demand)
    cache[key] = cost
    return cost


def _needed_rows(graph: Graph, reader: Op, tensor: str, j: int, tiles: int) -> tuple[float, float]:
    """Fraction [lo, hi) of ``tensor``'s rows that tile ``j`` of the layer holding ``reader`` reads."""
    if tiles == 1:
        return 0.0, 1.0
    rows = _rows(reader)
    lo, hi = _fraction(j, tiles)
    if reader.kind in (OpKind.CONV, OpKind.POOL) and rows > 1:
        d = reader.dims
        sh = int(reader.attrs.get("stride", (1, 1))[0])
        pad = int(reader.attrs.get("pad", (0, 0, 0, 0))[0])
        a, b = math.floor(lo * rows), math.ceil(hi * rows) if j == tiles - 1 else math.floor(hi * rows)
        first = max(0, a * sh - pad)
        last = min(d["H"], max(b, a + 1) * sh - pad + d["R"] - sh)
        return first / d["H"], max(last, first + 1) / d["H"]
    if rows == 1 or (reader.kind is OpKind.MATMUL and len(reader.inputs) > 1 and tensor != reader.inputs[0]):
        return 0.0, 1.0  # a global op, or the second operand of an activation x activation matmul
    return lo, hi


def _edges(graph: Graph, layers: list[Layer], first_task: dict[int, int]) -> list[Edge]:
    layer_of = {name: li for li, layer in enumerate(layers) for name in layer.ops}
    producer = graph.producer()
    edges: dict[tuple[int, int], float] = {}
    for li, layer in enumerate(layers):
        for name in layer.ops:
            reader = graph.op(name)
            for tensor in reader.inputs:
                src_op = producer.get(tensor)
                if src_op is None or layer_of[src_op] == li:
                    continue
                pl = layer_of[src_op]
                p_tiles = layers[pl].tiles
                nbytes = graph.tensors[tensor].nbytes
                for j in range(layer.tiles):
                    n0, n1 = _needed_rows(graph, reader, tensor, j, layer.tiles)
                    for i in range(p_tiles):
                        f0, f1 = _fraction(i, p_tiles)
                        overlap = min(n1, f1) - max(n0, f0)
                        if overlap > 1e-12:
                            key = (first_task[pl] + i, first_task[li] + j)
                            edges[key] = edges.get(key, 0.0) + nbytes * overlap
    return [Edge(s, d, b) for (s, d), b in sorted(edges.items())]
