"""The scheduling problem the CP-SAT, greedy and brute-force mappers share: a graph's units with their
tile candidates, the unit DAG, the tensors that may stay resident, a schedule's score, and the
Mapping a schedule becomes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dse.graph import Graph, OpKind
from hwmodels.systolic.compute import LoweredGemm
from hwmodels.systolic.pricing import design_prices
from hwmodels.systolic.reshape import reshape_for_array
from hwmodels.systolic.sparse import sparse_lowering
from mappers.base import Buffer, Mapping, MappingError, OpMapping
from mappers.payloads import OperandTraffic, TiledPlan
from mappers.systolic.fold import lower_op
from mappers.systolic.nest import ROLE_OUTPUT, ROLE_WEIGHT, TileTarget, Unit, build_units, larger_memory_hint, target_of
from mappers.systolic.objective import CostModel, cost_model, mode_cost, reuse_priced, unit_cost_model
from mappers.systolic.tiling import Candidates, candidates_for, has_tile_buffer, staged_operands
from templates.systolic import SystolicArch


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
    arch: SystolicArch
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


def build_problem(graph: Graph, arch: SystolicArch, objective: str = "dram", double_buffer: bool = True) -> Problem:
    """Units, their candidates under ``objective`` and the residency-eligible tensors of ``graph`` on ``arch``.

    The template's workload axes (DRACO widths, sparse layers) reshape ``graph`` first, as the fold mapper
    does; the problem (and so the mapping) holds the reshaped graph. Sparse execution is refused
    (``refuse_sparse_execution``): the tile candidates cost dense GEMM tiles only.
    """
    graph = reshape_for_array(graph, arch)
    refuse_sparse_execution(graph, arch)
    target = target_of(arch, 2 if double_buffer else 1)
    model = cost_model(arch, objective, double_buffer)
    units = build_units(graph)
    models = [model] * len(units)
    if reuse_priced(model, arch):
        prices = design_prices(arch)
        models = [unit_cost_model(model, arch, unit_gemm(graph, u), prices) for u in units]
    cands = [candidates_for(graph, u, target, m) for u, m in zip(units, models)]
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


def unit_gemm(graph: Graph, unit: Unit) -> LoweredGemm | None:
    """The GEMM a unit runs on the array (its head op lowered), None for a vector unit."""
    head = graph.op(unit.name)
    return lower_op(head) if head.kind in (OpKind.CONV, OpKind.MATMUL) else None


def refuse_sparse_execution(graph: Graph, arch: SystolicArch) -> None:
    """One clear error where the array would run an op sparse (``sparsity_support`` on, the op N:M or
    unstructured sparse): the tiling mappers cost dense tiles, and silently doing so would misreport it."""
    if not arch.sparsity_support:
        return
    for op in graph.ops:
        if op.kind in (OpKind.CONV, OpKind.MATMUL) and not op.sparsity.dense:
            if sparse_lowering(lower_op(op), op.sparsity, arch) is not None:
                raise MappingError(
                    f"op {op.name!r} is {op.sparsity.label} sparse and the array has sparsity_support: the cpsat "
                    "and greedy mappers tile dense GEMMs only; use mapper: fold (SCALE-Sim's sparse mode) or "
                    "sparsity_support: false (the op then runs dense)",
                    node=op.name,
                )


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
        operand_bytes: list[OperandTraffic] = []
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
                OperandTraffic(
                    tensor=o.tensor,
                    role=o.role,
                    resident=bool(mode[j]),
                    traffic=0 if mode[j] else traffic,
                    footprint=int(cands.footprint[j, c]),
                )
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
        plan = TiledPlan(
            unit="array" if is_array else "vector",
            dram_read_bytes=reads,
            dram_write_bytes=writes,
            compute_cycles=int(cands.cycles[c]),
            sram_words=int(cands.sram_words[c]),
            operands=tuple(operand_bytes),
            psum_read_bytes=0 if mode[-1] else int(cands.psum_reads[c]),
            position=first_index[u],
            fused_ops=tuple(unit.ops[1:]),
            gemm=lower_op(head) if is_array else None,
            double_buffered=target.overlapped,
        )
        ops[unit.name] = OpMapping(
            op=unit.name,
            tile=cands.tile(c),
            loop_order=cands.orders[c],
            dataflow=target.dataflow if is_array else "vector",
            resident_inputs=resident_inputs,
            resident_output=bool(mode[-1]),
            payload=plan,
        )
        for fused in unit.ops[1:]:
            src = graph.op(fused).inputs[0]
            ops[fused] = OpMapping(
                op=fused,
                tile={},
                dataflow="vector",
                resident_inputs=(src,),
                payload=TiledPlan(unit="vector", fused_into=unit.name),
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
    dram = sum(m.payload.dram_read_bytes + m.payload.dram_write_bytes for m in ops.values())
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
