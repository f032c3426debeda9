"""Mapping a graph onto a GPU: kernels, epilogue fusion, L2 residency and a threadblock tile per GEMM.

How a graph runs on a GPU, as this mapper decides it:

* **Kernels.** Every conv and matmul is one implicit-GEMM kernel (conv: M = N*P*Q output pixels,
  N = K/G filters, K = C/G*R*S, once per group); a depthwise conv (one channel per group) is a direct
  CUDA-core kernel. Every other op is its own memory-bound kernel.
* **Fusion (stated assumption).** An elementwise op whose input is the only use of a GEMM's output runs in
  that GEMM's epilogue, as cuBLASLt/cuDNN/TensorRT fuse bias, activation, scale and residual add: no kernel
  of its own, the intermediate never exists, its other input (a residual) is read by the GEMM kernel.
  Softmax and layernorm stay separate kernels (no flash-attention fusion). A KV-cache concat
  (``identity`` with an ``axis``) is an in-place append: it writes only the new rows.
* **L2 residency (assumption, ``l2_resident_fraction``).** An intermediate activation that fits, together with
  every other resident tensor alive at the same time, in that share of L2 is written and read in L2 and never
  reaches DRAM. Graph inputs, outputs, weights and KV caches always come from / go to DRAM.
* **Tensor parallelism (``gpus`` > 1, Megatron-style).** Weight GEMMs alternate: one whose input is whole is
  column-parallel (each GPU holds N/n of the weights; its output stays split), one whose input is split is
  row-parallel (K/n; each GPU holds a partial sum) and its output is all-reduced over NVLink (ring). Ops on a
  split tensor (attention's batched matmuls split by heads, softmax, GELU) run 1/n of the work with no
  communication; an op that needs the whole tensor (layernorm, a residual add with a whole operand, a graph
  output) first all-gathers it. On a transformer that is one all-reduce per attention block and one per MLP
  block — one per column/row matmul pair.
* **Threadblock tiles.** For each GEMM every tile (BM x BN x BK, split-K) that fits the SM's shared memory
  (double-buffered operand tiles) and register file (FP32 accumulators) is costed with
  :func:`gemm_cost` and the fastest is kept. The systolic tiler in ``mappers.systolic.tiling`` costs tiles with the
  systolic fold model, so it is not reused here; the enumeration is small (a few hundred tiles per shape)
  and cached per (shape, GPU).

:func:`~hwmodels.gpu.cost.gemm_cost` and :func:`~hwmodels.gpu.cost.memory_kernel_cost` are the single cost
formulas; ``hwmodels.gpu.model`` evaluates the chosen mapping with the same functions, so the mapper's choice and
the reported time agree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dse.graph import Graph, Op, OpKind
from hwmodels.catalogs.gpu import assumption
from hwmodels.gpu.cost import Gemm, Tile, compressed_weight_fraction, gemm_cost, sparse_gemm, tile_fits
from mappers.base import Mapping, MappingError, OpMapping
from mappers.payloads import GpuKernel, OpTraffic
from templates.gpu import GpuArch

GEMM_KINDS = (OpKind.CONV, OpKind.MATMUL)
MEMORY_KINDS = (OpKind.ELEMENTWISE, OpKind.POOL, OpKind.SOFTMAX, OpKind.LAYERNORM, OpKind.FFT, OpKind.SCAN)
TILE_M = (16, 32, 64, 128, 256)
TILE_N = (16, 32, 64, 128, 256)
SPLIT_K = (1, 2, 4, 8, 16, 32)


# ---------------------------------------------------------------------------------------------------
# GEMM lowering
# ---------------------------------------------------------------------------------------------------
def lower_gemm(op: Op) -> Gemm:
    d = op.dims
    if op.kind is OpKind.CONV:
        groups = d.get("G", 1)
        return Gemm(
            M=d["N"] * d["P"] * d["Q"],
            N=d["K"] // groups,
            K=(d["C"] // groups) * d["R"] * d["S"],
            count=groups,
            conv=d["R"] * d["S"] > 1,
        )
    if op.kind is OpKind.MATMUL:
        return Gemm(M=d["M"], N=d["N"], K=d["K"], count=d["B"])
    raise MappingError(f"op {op.name!r} ({op.kind.value}) is not a GEMM", node=op.name)


def is_direct_conv(op: Op) -> bool:
    """Depthwise-style convs (one input channel per group) have no GEMM to give the tensor cores."""
    return op.kind is OpKind.CONV and op.dims["C"] // op.dims.get("G", 1) == 1


# ---------------------------------------------------------------------------------------------------
# Tile search: every legal tile costed with hwmodels.gpu.cost
# ---------------------------------------------------------------------------------------------------
def _bk_choices(elem_bytes: int, tensor: bool) -> tuple[int, ...]:
    if not tensor:
        return (8, 16, 32)
    return (64, 128) if elem_bytes == 1 else (32, 64) if elem_bytes == 2 else (16, 32)


def tile_grid(arch: GpuArch) -> list[Tile]:
    """Every tile shape the search considers for ``arch``'s precision and math, fitting or not, in its order."""
    bks = _bk_choices(arch.elem_bytes, arch.uses_tensor_cores)
    return [Tile(bm, bn, bk, split) for bm in TILE_M for bn in TILE_N for bk in bks for split in SPLIT_K]


def candidate_tiles(arch: GpuArch) -> list[Tile]:
    return [tile for tile in tile_grid(arch) if tile_fits(tile, arch)]


def tile_allowed(gemm: Gemm, tile: Tile) -> bool:
    """Whether ``tile`` may run ``gemm`` at all (whatever the GPU): each split of K must still run a pipelined
    main loop, and cuDNN's implicit-GEMM convs do not split K."""
    if tile.split_k > 1 and math.ceil(gemm.K / tile.split_k) < 2 * tile.bk:
        return False
    return not (tile.split_k > 1 and gemm.conv)


def tile_rank(seconds: Any, tile: Tile) -> tuple[Any, Any]:
    """What the tile search minimises, in order: the kernel's time, then minus the tile's area (ties go to the
    larger tile, fewer blocks); among equal ranks the first tile of ``tile_grid`` stays."""
    return seconds, -(tile.bm * tile.bn)


@functools.lru_cache(maxsize=4096)
def best_tile(
    gemm: Gemm, arch: GpuArch, a_dram: float, b_dram: float, c_dram: float, extra: float
) -> tuple[Tile, float]:
    """The fastest legal tile for ``gemm`` and its time (``tile_rank``)."""
    best: tuple[Any, Any, Tile] | None = None
    for tile in candidate_tiles(arch):
        if not tile_allowed(gemm, tile):
            continue
        cost = gemm_cost(
            gemm, tile, arch, a_dram_bytes=a_dram, b_dram_bytes=b_dram, c_dram_bytes=c_dram, extra_read_bytes=extra
        )
        key = (*tile_rank(cost.seconds, tile), tile)
        if best is None or key[:2] < best[:2]:
            best = key
    if best is None:
        raise MappingError(f"no threadblock tile fits {arch.smem_kib_per_sm:g} KiB of shared memory per SM")
    return best[2], best[0]


# ---------------------------------------------------------------------------------------------------
# Graph-level decisions
# ---------------------------------------------------------------------------------------------------
def is_append(op: Op) -> bool:
    """A concat into a KV cache (identity with an axis): written in place, only the new rows move."""
    return op.kind is OpKind.ELEMENTWISE and op.attrs.get("fn") == "identity" and "axis" in op.attrs


def fusion_plan(graph: Graph) -> dict[str, str]:
    """elementwise op -> the GEMM op whose epilogue runs it."""
    consumers = graph.consumers()
    producer = graph.producer()
    by_name = {op.name: op for op in graph.ops}
    root_of: dict[str, str] = {}
    for op in graph.ops:
        if op.kind is not OpKind.ELEMENTWISE or is_append(op) or not op.inputs:
            continue
        for src in op.inputs:
            head = producer.get(src)
            if head is None or consumers.get(src) != [op.name] or graph.tensors[src].kind == "output":
                continue
            head_op = by_name[head]
            if head_op.kind in GEMM_KINDS and not is_direct_conv(head_op):
                root_of[op.name] = head
                break
            if head in root_of:
                root_of[op.name] = root_of[head]
                break
    return root_of


def l2_resident_tensors(graph: Graph, arch: GpuArch, skip: set[str], divisor: dict[str, int] | None = None) -> set[str]:
    """Intermediate activations kept in L2 from producer to last consumer (greedy, in production order)."""
    capacity = arch.l2_mib * 2**20 * assumption("l2_resident_fraction")
    if capacity <= 0:
        return set()
    index = {op.name: i for i, op in enumerate(graph.ops)}
    last_use: dict[str, int] = {}
    for op in graph.ops:
        for t in (*op.inputs, *op.weights):
            last_use[t] = index[op.name]
    live = [0.0] * len(graph.ops)
    resident: set[str] = set()
    for op in graph.ops:
        if is_append(op):
            continue
        for t in op.outputs:
            tensor = graph.tensors[t]
            if tensor.kind != "activation" or t in skip or t not in last_use:
                continue
            start, end = index[op.name], last_use[t]
            nbytes = tensor.nbytes / (divisor.get(t, 1) if divisor else 1)
            if max(live[start : end + 1]) + nbytes <= capacity:
                resident.add(t)
                for i in range(start, end + 1):
                    live[i] += nbytes
    return resident


@dataclass
class ShardPlan:
    """How a graph splits over ``gpus`` GPUs: per-op role, per-tensor divisor, bytes each collective moves."""

    gpus: int
    role: dict[str, str]  # op -> column | row | split | whole
    divisor: dict[str, int]  # tensor -> n for split activations and sharded weights
    allreduce_bytes: dict[str, float]  # op -> bytes of its output all-reduced after it
    allgather_bytes: dict[str, float]  # op -> bytes of split inputs gathered before it


def _is_weight_gemm(op: Op) -> bool:
    return op.kind in GEMM_KINDS and bool(op.weights) and not is_direct_conv(op)


def tensor_parallel_plan(graph: Graph, gpus: int, elem_bytes: int) -> ShardPlan:
    """Megatron-style tensor parallelism (column- then row-parallel weight GEMMs, split ops between)."""
    plan = ShardPlan(gpus, {}, {}, {}, {})
    if gpus <= 1:
        return plan
    split: set[str] = set()
    row_kinds = (OpKind.LAYERNORM,)
    for op in graph.ops:
        inputs = [t for t in op.inputs if t in graph.tensors]
        split_in = [t for t in inputs if t in split]
        whole_in = [t for t in inputs if t not in split]
        role = "whole"
        if _is_weight_gemm(op):
            role = "row" if split_in else "column"
        elif split_in and is_append(op):  # a KV cache is sharded by heads like the rows appended to it
            role = "split"
            for t in whole_in:
                plan.divisor[t] = gpus
        elif split_in and op.kind not in row_kinds and not (whole_in and op.kind is OpKind.ELEMENTWISE):
            role = "split"
        elif split_in:
            plan.allgather_bytes[op.name] = sum(_tensor_bytes(graph, t, elem_bytes) for t in split_in)
        plan.role[op.name] = role
        if role in ("column", "row"):
            for w in op.weights:
                plan.divisor[w] = gpus
        if role == "row":
            plan.allreduce_bytes[op.name] = sum(_tensor_bytes(graph, t, elem_bytes) for t in op.outputs)
        if role in ("column", "split"):
            for t in op.outputs:
                split.add(t)
                plan.divisor[t] = gpus
    for op in graph.ops:  # a graph output left split is gathered where it is produced
        for t in op.outputs:
            if t in split and graph.tensors[t].kind == "output":
                plan.allgather_bytes[op.name] = plan.allgather_bytes.get(op.name, 0.0) + _tensor_bytes(
                    graph, t, elem_bytes
                )
    return plan


def shard_gemm(gemm: Gemm, role: str, gpus: int) -> Gemm:
    """One GPU's share of a GEMM: column-parallel N/n, row-parallel K/n, split by batch (or rows)."""
    if gpus <= 1 or role == "whole":
        return gemm
    if role == "column":
        return replace(gemm, N=math.ceil(gemm.N / gpus))
    if role == "row":
        return replace(gemm, K=math.ceil(gemm.K / gpus))
    if gemm.count >= gpus:
        return replace(gemm, count=math.ceil(gemm.count / gpus))
    return replace(gemm, M=math.ceil(gemm.M / gpus))


def kernel_kind(op: Op) -> str:
    """The tuning kind of a memory-bound kernel (softmax, layernorm; everything else elementwise)."""
    return op.kind.value if op.kind in (OpKind.SOFTMAX, OpKind.LAYERNORM) else "elementwise"


def _tensor_bytes(graph: Graph, name: str, elem_bytes: int, divisor: dict[str, int] | None = None) -> float:
    """Bytes of a tensor on one GPU (a split activation or sharded weight holds 1/n of it)."""
    share = divisor.get(name, 1) if divisor else 1
    return float(graph.tensors[name].numel * elem_bytes) / share


def _weight_read_bytes(graph: Graph, reader: Op, name: str, elem_bytes: int, divisor: dict[str, int]) -> float:
    """DRAM bytes ``reader`` reads of a weight on one GPU: a look-up reads its rows only (``Graph.read_numel``)."""
    return float(graph.read_numel(reader, name) * elem_bytes) / divisor.get(name, 1)


def kernel_inputs(graph: Graph, root: Op, fused: list[Op]) -> tuple[list[str], list[tuple[Op, str]], str]:
    """Activation inputs, (reader op, weight) pairs and final output of a kernel of ``root`` plus its epilogue."""
    internal = {t for op in (root, *fused) for t in op.outputs}
    inputs = list(root.inputs)
    weights = [(root, w) for w in root.weights]
    for op in fused:
        inputs += [t for t in op.inputs if t not in internal]
        weights += [(op, w) for w in op.weights]
    output = (fused[-1] if fused else root).outputs[0]
    return inputs, weights, output


class GpuTileMapper:
    """Kernels with epilogue fusion, L2 residency and the fastest legal threadblock tile per GEMM.

    ``choose_tile`` is the tile search (``best_tile``'s arguments and result); the array evaluation
    (``hwmodels.gpu.arrays``) maps a group of designs once with a stand-in and searches every design's tiles itself.
    It is not a mapper option: a spec cannot set it."""

    name = "tile"

    def __init__(self, choose_tile: Callable[..., tuple[Tile, float]] = best_tile):
        self.choose_tile = choose_tile

    def map(self, graph: Graph, arch: GpuArch) -> Mapping:
        if getattr(arch, "kind", "") != "gpu":
            raise MappingError(f"the gpu tile mapper needs a GpuArch, got {type(arch).__name__}")
        eb = arch.elem_bytes
        gpus = int(getattr(arch, "gpus", 1))
        plan = tensor_parallel_plan(graph, gpus, eb)
        div = plan.divisor
        root_of = fusion_plan(graph)
        fused_by_root: dict[str, list[Op]] = {}
        for op in graph.ops:
            if op.name in root_of:
                fused_by_root.setdefault(root_of[op.name], []).append(op)
        # tensors passed from a GEMM to its epilogue ops exist only in registers: never in L2 or DRAM
        producer = graph.producer()
        chain = {root: {root, *(f.name for f in fused)} for root, fused in fused_by_root.items()}
        internal = {
            t for name, root in root_of.items() for t in graph.op(name).inputs if producer.get(t) in chain[root]
        }
        resident = l2_resident_tensors(graph, arch, skip=internal, divisor=div)
        ops: dict[str, OpMapping] = {}
        for op in graph.ops:
            if op.kind not in GEMM_KINDS and op.kind not in MEMORY_KINDS:
                raise MappingError(f"op {op.name!r}: kind {op.kind.value} has no GPU kernel", node=op.name)
            if op.name in root_of:
                ops[op.name] = OpMapping(
                    op=op.name, tile={}, dataflow="epilogue", payload=GpuKernel(fused_into=root_of[op.name])
                )
                continue
            fused = fused_by_root.get(op.name, [])
            inputs, weights, output = kernel_inputs(graph, op, fused)
            traffic = self._traffic(graph, op, inputs, weights, output, resident, eb, div)
            role = plan.role.get(op.name, "whole")
            kernel = GpuKernel(
                unit="cuda_cores",
                fused=tuple(f.name for f in fused),
                traffic=traffic,
                output=output,
                kernel_kind=kernel_kind(op),
                flops=float(op.flops) / (gpus if role == "split" else 1),
                row_bytes=float(op.dims["L"] * eb) if op.kind in (OpKind.SOFTMAX, OpKind.LAYERNORM) else 0.0,
                shard=role,
                allreduce_bytes=sum(plan.allreduce_bytes.get(o.name, 0.0) for o in (op, *fused)),
                allgather_bytes=sum(plan.allgather_bytes.get(o.name, 0.0) for o in (op, *fused)),
            )
            tile: dict[str, int] = {}
            if op.kind in GEMM_KINDS and not is_direct_conv(op):
                gemm = sparse_gemm(shard_gemm(lower_gemm(op), role, gpus), op.sparsity, arch)
                a_dram, b_dram, extra_dram = self._gemm_operand_dram(graph, op, inputs, weights, resident, eb, div)
                if gemm.sparse_2_4 and op.weights:  # 2:4-compressed weights: half the values + 2-bit indices
                    b_dram *= compressed_weight_fraction(eb)
                chosen, _ = self.choose_tile(gemm, arch, a_dram, b_dram, traffic.dram_write, extra_dram)
                tile = {"BM": chosen.bm, "BN": chosen.bn, "BK": chosen.bk, "split_k": chosen.split_k}
                kernel = replace(
                    kernel, unit="tensor", gemm=gemm, tile=chosen, a_dram=a_dram, b_dram=b_dram, extra_dram=extra_dram
                )
            ops[op.name] = OpMapping(
                op=op.name,
                tile=tile,
                dataflow="gemm" if tile else "memory",
                resident_inputs=tuple(t for t in inputs if t in resident),
                resident_output=output in resident,
                payload=kernel,
            )
        return Mapping(
            graph=graph,
            arch=arch,
            ops=ops,
            order=[op.name for op in graph.ops],
            mapper=self.name,
            solver={
                "status": "enumerated",
                "resident_tensors": len(resident),
                "fused_ops": len(root_of),
                "gpus": gpus,
                "allreduces": len(plan.allreduce_bytes),
                "allgathers": len(plan.allgather_bytes),
            },
        )

    @staticmethod
    def _traffic(
        graph: Graph,
        op: Op,
        inputs: list[str],
        weights: list[tuple[Op, str]],
        output: str,
        resident: set[str],
        eb: int,
        div: dict[str, int],
    ) -> OpTraffic:
        if is_append(op):
            new_rows = min(_tensor_bytes(graph, t, eb, div) for t in op.inputs)
            return OpTraffic(dram_read=new_rows, dram_write=new_rows, l2=0.0)
        read = sum(_tensor_bytes(graph, t, eb, div) for t in inputs if t not in resident)
        read += sum(_weight_read_bytes(graph, reader, t, eb, div) for reader, t in weights)
        l2 = sum(_tensor_bytes(graph, t, eb, div) for t in inputs if t in resident)
        out_bytes = _tensor_bytes(graph, output, eb, div)
        write = 0.0 if output in resident else out_bytes
        return OpTraffic(dram_read=read, dram_write=write, l2=l2 + (out_bytes if output in resident else 0.0))

    @staticmethod
    def _gemm_operand_dram(
        graph: Graph,
        op: Op,
        inputs: list[str],
        weights: list[tuple[Op, str]],
        resident: set[str],
        eb: int,
        div: dict[str, int],
    ) -> tuple[float, float, float]:
        """DRAM bytes of the A operand, the B operand (weights or second input) and epilogue extras."""

        def dram(t: str) -> float:
            return 0.0 if t in resident else _tensor_bytes(graph, t, eb, div)

        a = dram(op.inputs[0])
        if op.weights:
            b = sum(_weight_read_bytes(graph, op, t, eb, div) for t in op.weights)
        else:
            b = dram(op.inputs[1]) if len(op.inputs) > 1 else 0.0
        own = set(op.inputs[:2]) | set(op.weights)
        extra = sum(dram(t) for t in inputs if t not in own)
        extra += sum(_weight_read_bytes(graph, reader, t, eb, div) for reader, t in weights if t not in own)
        return a, b, extra
