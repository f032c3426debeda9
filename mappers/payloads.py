"""What each family's mapper hands its hardware model per op: one frozen dataclass per family.

A mapper decides how an op runs; these payloads carry the decisions the hardware model (and the exporters,
the schedule writer and the surrogates) read back. They sit at the mapper layer because only mappers write
them and only layers above read them; the cost-model types they hold (``LoweredGemm``, ``Gemm``, ``Tile``,
``ComputePlan``, ...) come from the hardware cost models below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwmodels.fpga.cost import ComputePlan
from hwmodels.gpu.cost import Gemm, Tile
from hwmodels.systolic.compute import LoweredGemm
from hwmodels.systolic.sparse import SparseLowering


@dataclass(frozen=True)
class FoldPlan:
    """A systolic op as SCALE-Sim folds it (the fold mapper).

    ``unit`` says where it runs: an ``"array"`` op carries its lowered GEMM (and its sparse lowering, and the
    dense unreshaped GEMM where the mapper changed the op) from which the model computes cycles and traffic;
    a ``"vector"`` op runs on the vector unit, with no latency of its own when ``fused_into`` names the
    conv/matmul whose output pipeline applies it."""

    unit: str
    gemm: LoweredGemm | None = None
    spatial_rows: int = 0  # Sr: the GEMM dimension laid along the array's rows
    spatial_cols: int = 0  # Sc: along its columns
    temporal: int = 0  # T: streamed through time
    row_folds: int = 0
    col_folds: int = 0
    compute_cycles: int = 0
    sparse: SparseLowering | None = None
    dense_shape_gemm: LoweredGemm | None = None  # the op as the workload gave it: the report's "before" utilisation
    fused_into: str | None = None


@dataclass(frozen=True)
class OperandTraffic:
    """One operand of a tiled op: its DRAM traffic and the scratchpad footprint of its tile."""

    tensor: str
    role: str  # "input", "weight" or "output"
    resident: bool
    traffic: int  # DRAM bytes moved for it (0 when resident)
    footprint: int  # bytes of its tile buffer


@dataclass(frozen=True)
class TiledPlan:
    """A systolic op under a tiling mapper (cpsat, greedy): it brings its own DRAM bytes and compute cycles.

    The model prices ``dram_read_bytes`` / ``dram_write_bytes`` and ``compute_cycles`` (validated by
    ``mappers.systolic.check``), adds the fill/drain stalls of ``operands`` by DRAM mode and charges SRAM by
    ``sram_words``. An activation fused into its producer's unit (``fused_into``) moves nothing of its own."""

    unit: str  # "array" or "vector"
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    compute_cycles: int = 0
    sram_words: int = 0
    operands: tuple[OperandTraffic, ...] = ()
    psum_read_bytes: int = 0
    position: int = 0  # the op's index in the mapping's order
    fused_ops: tuple[str, ...] = ()  # activations run in this op's output pass
    gemm: LoweredGemm | None = None  # array ops: the GEMM the array runs
    fused_into: str | None = None
    double_buffered: bool = True  # False: one copy of each reloading tile, transfers do not overlap compute


@dataclass(frozen=True)
class SectionPlan:
    """An op of an RDU section: the model reads its PCU/PMU allocation, its cycles and its tensors' tiers."""

    section: int
    pcus: int
    pmus: int
    cycles: int
    tiers: dict[str, str] = field(default_factory=dict)  # tensor -> memory tier it is placed in


@dataclass(frozen=True)
class CoreTask:
    """An op of a multicore schedule: the core its layer runs on and the (start, end) cycles of its tiles."""

    core: int
    layer: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class LayerGroupPlan:
    """An op of an FPGA layer group (hls4ml's layer and the activations after it).

    The compute layer carries its ``plan`` (reuse factor, multipliers, engine, cycles); the others their
    per-sample ``cycles`` and ``interval``. The exporter reads ``group`` for a non-compute op's precision."""

    group: int
    plan: ComputePlan | None = None
    cycles: int = 0
    interval: int = 0


@dataclass(frozen=True)
class OpTraffic:
    """Bytes a GPU kernel moves: per operand from DRAM, and what stays in L2."""

    dram_read: float
    dram_write: float
    l2: float


@dataclass(frozen=True)
class GpuKernel:
    """A GPU kernel rooted at an op, or (``fused_into`` set) an op run in another kernel's epilogue.

    The model prices a ``"tensor"`` kernel with ``gemm_cost`` (its ``gemm``, ``tile`` and operand DRAM bytes)
    and a ``"cuda_cores"`` one with ``memory_kernel_cost`` (``traffic``, ``flops``, ``kernel_kind``,
    ``row_bytes``); ``allreduce_bytes`` / ``allgather_bytes`` price its NVLink collectives."""

    unit: str = ""  # "tensor", "cuda_cores"; "" for an epilogue op
    fused_into: str | None = None
    fused: tuple[str, ...] = ()  # epilogue ops this kernel runs
    traffic: OpTraffic | None = None
    output: str = ""
    kernel_kind: str = "elementwise"
    flops: float = 0.0
    row_bytes: float = 0.0
    shard: str = "whole"  # tensor-parallel role: "whole", "column", "row", "split"
    allreduce_bytes: float = 0.0
    allgather_bytes: float = 0.0
    gemm: Gemm | None = None
    tile: Tile | None = None
    a_dram: float = 0.0
    b_dram: float = 0.0
    extra_dram: float = 0.0


OpPayload = FoldPlan | TiledPlan | SectionPlan | CoreTask | LayerGroupPlan | GpuKernel
