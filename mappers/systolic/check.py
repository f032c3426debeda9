"""An independent validator for tiled schedules: replay the mapping and check every claim it makes.

It trusts nothing the scheduler computed. From the Mapping alone it checks that

* the order is a topological order holding every op once;
* every buffer lies inside its scratchpad, and buffers of one scratchpad whose lifetimes overlap do
  not overlap in address;
* every resident tensor has a buffer at least its size covering its producer (or first consumer) to
  its last consumer, and the ops reading or writing it say so;
* every operand that is not resident has a tile buffer, live while its op runs, at least as large as
  the tile the replay finds (doubled when the tile is reloaded while the op runs, unless the plans are
  single-buffered);
* the DRAM traffic recorded per op equals what a replay of the op's loop nest counts: the loops are
  walked tile by tile in the recorded order, an operand is fetched whenever its tile changes, an
  output tile is written back whenever the walk leaves it and read back when it returns to it.

``check_schedule`` raises ``ScheduleError`` listing every violation, or returns a summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dse.graph import Graph
from mappers.base import Mapping, OpMapping
from mappers.payloads import FoldPlan, TiledPlan
from mappers.systolic.nest import ROLE_OUTPUT, ROLE_WEIGHT, LoopNest, Operand, Unit, loop_nest, target_of

# Replays longer than this many tile steps are refused (no schedule the tiler emits comes close).
MAX_REPLAY_STEPS = 4_000_000


class ScheduleError(AssertionError):
    """A schedule breaks a rule; ``problems`` lists every violation found."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} schedule violation(s):\n  " + "\n  ".join(problems[:20]))
        self.problems = problems


@dataclass
class CheckReport:
    ops: int
    buffers: int
    dram_bytes: int
    peak_bytes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Replay:
    """What walking one operand's tiles found: bytes moved and the largest tile."""

    fetched: float  # bytes read (inputs, weights) or written back (output)
    reread: float  # output only: partial sums read back
    loads: int  # times the operand's tile changed
    largest: float  # bytes of the largest tile


def replay_operand(nest: LoopNest, operand: Operand, tile: dict[str, int], order: tuple[str, ...]) -> Replay:
    """Walk the loop nest in ``order`` (outer to inner) and count ``operand``'s tile changes."""
    extents = {lp.name: lp.extent for lp in nest.loops}
    trips = [-(-extents[nm] // tile[nm]) for nm in order]
    steps = int(np.prod(trips)) if trips else 1
    if steps > MAX_REPLAY_STEPS:
        raise ScheduleError([f"op {nest.unit!r}: {steps} tile steps is too many to replay"])
    index = np.indices(trips).reshape(len(trips), -1).T if trips else np.zeros((1, 0), dtype=np.int64)
    mine = [k for k, nm in enumerate(order) if nm in operand.loops]
    sizes = np.full(len(index), float(operand.base))
    for k in mine:
        nm = order[k]
        t = tile[nm]
        start = index[:, k] * t
        stop = np.minimum(start + t, extents[nm])
        if operand.halo is not None and operand.halo.loop == nm:
            h = operand.halo
            lo = np.maximum(0, start * h.stride - h.pad)
            hi = np.minimum(h.size, (stop - 1) * h.stride - h.pad + h.kernel)
            sizes = sizes * np.maximum(0, hi - lo)
        else:
            sizes = sizes * (stop - start)
    ident = index[:, mine] if mine else np.zeros((len(index), 0), dtype=np.int64)
    changed = np.ones(len(index), dtype=bool)
    if len(index) > 1:
        changed[1:] = np.any(ident[1:] != ident[:-1], axis=1) if mine else False
    fetched = float(sizes[changed].sum())
    reread = 0.0
    if operand.role == ROLE_OUTPUT:
        runs = ident[changed]
        run_sizes = sizes[changed]
        if runs.shape[1]:
            _, first = np.unique(runs, axis=0, return_index=True)
            again = np.ones(len(runs), dtype=bool)
            again[first] = False  # a tile visited before holds partial sums that are read back
            reread = float(run_sizes[again].sum())
        else:
            reread = float(run_sizes[1:].sum())
    return Replay(fetched, reread, int(changed.sum()), float(sizes.max()))


def _fused_into(om: OpMapping) -> str | None:
    """The unit head an op runs fused into, as its (fold or tiled) systolic payload records it."""
    return om.payload.fused_into if isinstance(om.payload, (FoldPlan, TiledPlan)) else None


def _units_of(mapping: Mapping) -> list[Unit]:
    """Rebuild the scheduled units from the mapping's own fusion marks."""
    graph = mapping.graph
    tails: dict[str, list[str]] = {}
    for name, om in mapping.ops.items():
        head = _fused_into(om)
        if head:
            tails.setdefault(head, []).append(name)
    units = []
    for op in graph.ops:
        om = mapping.ops.get(op.name)
        if om is None or _fused_into(om):
            continue
        names = (op.name, *tails.get(op.name, []))
        out = graph.op(names[-1]).outputs[0]
        units.append(Unit(op.name, names, tuple(op.inputs), tuple(op.weights), out))
    return units


def check_schedule(mapping: Mapping) -> CheckReport:
    """Check ``mapping`` (from a tiling mapper) against the rules above; raise ScheduleError if any break."""
    graph: Graph = mapping.graph
    plans = [om.payload for om in mapping.ops.values() if isinstance(om.payload, TiledPlan)]
    buffering = {plan.double_buffered for plan in plans}
    target = target_of(mapping.arch, 2 if buffering != {False} else 1)
    wb = target.word_bytes
    caps = dict(target.capacities)
    problems: list[str] = []
    if len(buffering) > 1:
        problems.append("the ops disagree on double-buffering: one schedule buffers its tiles one way")

    # -- order ---------------------------------------------------------------------------------
    index = {name: i for i, name in enumerate(mapping.order)}
    if sorted(mapping.order) != sorted(op.name for op in graph.ops):
        problems.append("the order does not hold every op of the graph exactly once")
    producer_op = graph.producer()
    for op in graph.ops:
        for t in op.inputs:
            p = producer_op.get(t)
            if p is not None and op.name in index and p in index and index[p] >= index[op.name]:
                problems.append(f"op {op.name!r} runs before {p!r}, which produces its input {t!r}")

    # -- capacity and address overlap ----------------------------------------------------------
    peak: dict[str, int] = {}
    by_memory: dict[str, list] = {}
    for b in mapping.buffers:
        if b.memory not in caps:
            problems.append(f"buffer {b.tensor!r} is in unknown memory {b.memory!r}")
            continue
        if b.offset < 0 or b.offset + b.size > caps[b.memory]:
            problems.append(
                f"buffer {b.tensor!r} [{b.offset}, {b.offset + b.size}) lies outside "
                f"{b.memory} ({caps[b.memory]} bytes)"
            )
        if b.start > b.end:
            problems.append(f"buffer {b.tensor!r} ends (op {b.end}) before it starts (op {b.start})")
        by_memory.setdefault(b.memory, []).append(b)
    for memory, bufs in by_memory.items():
        for i, a in enumerate(bufs):
            for b in bufs[i + 1 :]:
                if (
                    a.start <= b.end
                    and b.start <= a.end
                    and a.offset < b.offset + b.size
                    and b.offset < a.offset + a.size
                ):
                    problems.append(
                        f"{memory}: {a.tensor!r} [{a.offset}, {a.offset + a.size}) ops {a.start}-{a.end} overlaps "
                        f"{b.tensor!r} [{b.offset}, {b.offset + b.size}) ops {b.start}-{b.end}"
                    )
        steps = max((b.end for b in bufs), default=-1) + 1
        live = np.zeros(max(steps, 1), dtype=np.int64)
        for b in bufs:
            live[b.start : b.end + 1] += b.size
        peak[memory] = int(live.max())

    # -- residency -----------------------------------------------------------------------------
    resident = {b.tensor: b for b in mapping.buffers if b.kind == "resident"}
    consumers = graph.consumers()
    for t, b in resident.items():
        nbytes = graph.tensors[t].numel * wb
        if b.size < nbytes:
            problems.append(f"resident {t!r} has {b.size} bytes of buffer for {nbytes} bytes of tensor")
        users = [index[c] for c in consumers.get(t, []) if c in index]
        first = index[producer_op[t]] if t in producer_op else min(users, default=0)
        if b.start > first or b.end < max(users, default=first):
            problems.append(f"resident {t!r} lives ops {b.start}-{b.end} but is used from op {first} to {max(users)}")

    # -- per unit: tiles, staging and traffic --------------------------------------------------
    dram = 0
    for unit in _units_of(mapping):
        om = mapping.ops[unit.name]
        nest = loop_nest(graph, unit, wb, target.vector_lanes)
        names = {lp.name for lp in nest.loops}
        if set(om.tile) != names or any(not 1 <= om.tile[n] <= nest.loop(n).extent for n in names):
            problems.append(f"op {unit.name!r}: tile {om.tile} does not tile loops {sorted(names)}")
            continue
        if sorted(om.loop_order) != sorted(names):
            problems.append(f"op {unit.name!r}: loop order {om.loop_order} is not an order of {sorted(names)}")
            continue
        pos = index[unit.name], index[unit.ops[-1]]
        reads = writes = 0.0
        slack = 0
        for o in nest.operands:
            is_output = o.role == ROLE_OUTPUT
            res = om.resident_output if is_output else (o.role != ROLE_WEIGHT and o.tensor in om.resident_inputs)
            if res and o.tensor not in resident:
                problems.append(f"op {unit.name!r} treats {o.tensor!r} as resident but no resident buffer holds it")
            rep = replay_operand(nest, o, om.tile, tuple(om.loop_order))
            slack += rep.loads
            if is_output or not res:
                need = int(np.ceil(rep.largest)) * (target.tile_copies if rep.loads > 1 else 1)
                memory = dict(target.role_memory)[o.role]
                have = [
                    b
                    for b in mapping.buffers
                    if b.kind == "tile"
                    and b.tensor == o.tensor
                    and b.memory == memory
                    and b.start <= pos[0]
                    and b.end >= pos[1]
                ]
                if not have or max(b.size for b in have) < need:
                    problems.append(
                        f"op {unit.name!r}: operand {o.tensor!r} needs a {need}-byte tile buffer in {memory} "
                        f"during ops {pos[0]}-{pos[1]}, found {[b.size for b in have]}"
                    )
            if is_output:
                if res:
                    writes += graph.tensors[o.tensor].numel * wb if graph.tensors[o.tensor].kind == "output" else 0
                else:
                    writes += rep.fetched
                    reads += rep.reread
            elif not res:
                reads += rep.fetched
            elif o.tensor not in producer_op and o.tensor in resident and resident[o.tensor].start == pos[0]:
                reads += graph.tensors[o.tensor].numel * wb  # a resident graph input's one load
        plan = om.payload if isinstance(om.payload, TiledPlan) else None
        got_r, got_w = (plan.dram_read_bytes, plan.dram_write_bytes) if plan else (None, None)
        if got_r is None or abs(got_r - reads) > slack + 1 or abs(got_w - writes) > slack + 1:
            problems.append(
                f"op {unit.name!r}: records {got_r} bytes read / {got_w} written, the replay counts "
                f"{reads:.0f} / {writes:.0f}"
            )
        dram += int(got_r or 0) + int(got_w or 0)
        for fused in unit.ops[1:]:
            fused_plan = mapping.ops[fused].payload
            if isinstance(fused_plan, TiledPlan) and (fused_plan.dram_read_bytes or fused_plan.dram_write_bytes):
                problems.append(f"fused op {fused!r} records DRAM traffic of its own")
    recorded = mapping.solver.get("dram_bytes")
    if recorded is not None and recorded != dram:
        problems.append(f"the mapping totals {recorded} DRAM bytes, its ops add up to {dram}")
    if problems:
        raise ScheduleError(problems)
    return CheckReport(ops=len(mapping.order), buffers=len(mapping.buffers), dram_bytes=dram, peak_bytes=peak)
