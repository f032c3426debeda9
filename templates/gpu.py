"""The GPU template: a catalog GPU (H100, A100, L4, ...) or a hypothetical one built from custom parameters.

Why a template and not just a table: users compare every accelerator design against the GPUs they would
otherwise buy, and sometimes against a GPU that does not exist ("an H100 with twice the bandwidth"). So a
point names a catalog entry (``gpu``) and may override any of its numbers; overriding the SM count or clock
without a throughput rescales the catalog's per-SM-per-clock throughput. ``gpu: custom`` builds one from
scratch and then every number must be given.

Tuning constants (achievable fractions, per-kernel fixed cost, host overhead, ...) are the GPU's fitted values
when ``hwmodels/data/gpu_calibration.json`` has them (``calibration`` says on which measurements), else the
catalog's assumptions ("catalog-only"); ``compute_fraction``, ``bandwidth_fraction`` and ``launch_us`` may
still be set per point. ``execution: eager`` adds the host's per-call cost of an eager framework (PyTorch);
the default ``graph`` is a captured CUDA graph / TensorRT engine, where only the device's fixed cost remains.

``gpus`` > 1 is one node of that many GPUs running the workload tensor-parallel over NVLink
(``nvlink_gbps``, one direction per GPU; the catalog's for SXM parts): see ``mappers.gpu``.

Precision is the workload's (it picks the tensor-core math: fp16/bf16, fp8, int8; fp32 runs on the CUDA
cores unless ``tf32`` is on). Batch is the workload's too: the graph is built at the spec's batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar

from hwmodels.catalogs import gpu as gpu_catalog
from hwmodels.catalogs.gpu_tuning import GpuTuning, calibration_for, default_tuning
from hwmodels.catalogs.sparse import GPU_SPARSE_TENSOR_SPEEDUP
from templates.base import Arch, Param, Template, TemplateError

PRECISIONS = ("fp16", "bf16", "fp8", "int8", "fp32")
PRECISION_BYTES = {"fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "fp32": 4}
CUSTOM = "custom"
EXECUTIONS = ("graph", "eager")
SPARSITY_MODES = ("dense", "2:4")  # 2:4: the sparse tensor cores run GEMMs whose weights carry a 2:4-compatible pattern
CATALOG_ONLY = "catalog-only (assumed constants, no measurements)"
DEFAULT_GPU = "h100_sxm"
PART_PARAM = "gpu"  # the parameter naming the catalog part (and the column of measured kernel tables)
# Parameters a catalog entry supplies and a point may override; ``gpu: custom`` needs every one.
OVERRIDABLE = (
    "sms",
    "clock_mhz",
    "tensor_tflops",
    "fp32_tflops",
    "mem_gbps",
    "mem_gb",
    "l2_mib",
    "smem_kib_per_sm",
    "tdp_w",
)


@dataclass(frozen=True)
class GpuArch(Arch):
    """One GPU, resolved to plain numbers. ``tensor_tflops`` is the dense peak of ``math`` (the GEMM path)."""

    kind: ClassVar[str] = "gpu"

    gpu: str  # catalog key, or "custom"
    display: str
    precision: str
    math: str  # fp16 | bf16 | fp8 | int8 | tf32 | fp32 (what GEMMs run on)
    sms: int
    clock_mhz: float
    tensor_tflops: float
    fp32_tflops: float
    mem_gbps: float
    mem_gb: float
    l2_mib: float
    smem_kib_per_sm: float
    regs_kib_per_sm: float
    max_blocks_per_sm: int
    tdp_w: float
    die_mm2: float
    launch_us: float
    compute_fraction: float
    bandwidth_fraction: float
    tuning: GpuTuning = field(default_factory=default_tuning)
    calibration: str = CATALOG_ONLY
    execution: str = "graph"
    gpus: int = 1
    nvlink_gbps: float = 0.0
    sparsity: str = "dense"  # dense | 2:4 (SPARSITY_MODES)

    @property
    def sparse_tensor_tflops(self) -> float:
        """Peak of a 2:4-sparse GEMM (dense-equivalent operations): the datasheets' 'with sparsity' figure,
        twice the dense peak; the dense peak where the option is off or GEMMs run on CUDA cores."""
        if self.sparsity == "2:4" and self.uses_tensor_cores:
            return self.tensor_tflops * GPU_SPARSE_TENSOR_SPEEDUP.value
        return self.tensor_tflops

    @property
    def calibrated(self) -> bool:
        return self.calibration != CATALOG_ONLY

    @property
    def elem_bytes(self) -> int:
        return PRECISION_BYTES[self.precision]

    @property
    def uses_tensor_cores(self) -> bool:
        return self.math != "fp32"

    @property
    def flops_per_clk_per_sm(self) -> float:
        """Dense GEMM-path operations per clock per SM (an FMA counts 2)."""
        return self.tensor_tflops * 1e12 / (self.sms * self.clock_mhz * 1e6)

    @property
    def peak_flops(self) -> float:
        return self.tensor_tflops * 1e12

    @property
    def bytes_per_s(self) -> float:
        return self.mem_gbps * 1e9


class GpuTemplate(Template):
    kind: ClassVar[str] = "gpu"

    def params(self) -> list[Param]:
        return list(_params())

    def instantiate(self, point: Mapping[str, Any]) -> GpuArch:
        v = self.resolve(point)
        precision = v["precision"]
        math = "tf32" if precision == "fp32" and v["tf32"] else precision
        if v["gpu"] == CUSTOM:
            return self._custom(v, math)
        try:
            name = gpu_catalog.canonical_gpu_name(v["gpu"])
        except gpu_catalog.UnknownGpuError as err:
            raise TemplateError(
                f"gpu={v['gpu']!r} is not in the GPU catalog; {err.message} or 'custom'", "gpu"
            ) from None
        spec = gpu_catalog.GPUS[name]
        base_sms, base_clock = spec.sms.value, spec.clock_mhz.value
        sms = v["sms"] if v["sms"] is not None else int(base_sms)
        clock = v["clock_mhz"] if v["clock_mhz"] is not None else base_clock
        scale = (sms / base_sms) * (clock / base_clock)  # throughput follows SMs x clock unless given
        catalog_peak = spec.peak_tflops("fp32" if math == "fp32" else math)
        if catalog_peak is None and v["tensor_tflops"] is None:
            supported = [p for p in PRECISIONS if spec.peak_tflops(p) is not None]
            raise TemplateError(
                f"{spec.display} has no {precision.upper()} tensor cores; use a precision it supports "
                f"({', '.join(supported)}) or give tensor_tflops for a hypothetical part",
                "precision",
            )
        tensor = v["tensor_tflops"] if v["tensor_tflops"] is not None else catalog_peak * scale
        fp32 = v["fp32_tflops"] if v["fp32_tflops"] is not None else spec.fp32_tflops.value * scale

        def pick(param: str, sourced) -> float:
            return float(v[param]) if v[param] is not None else float(sourced.value)

        return GpuArch(
            gpu=name,
            display=spec.display + (" (modified)" if any(v[p] is not None for p in OVERRIDABLE) else ""),
            precision=precision,
            math=math,
            sms=int(sms),
            clock_mhz=float(clock),
            tensor_tflops=float(tensor),
            fp32_tflops=float(fp32),
            mem_gbps=pick("mem_gbps", spec.mem_gbps),
            mem_gb=pick("mem_gb", spec.mem_gb),
            l2_mib=pick("l2_mib", spec.l2_mib),
            smem_kib_per_sm=pick("smem_kib_per_sm", spec.smem_kib_per_sm),
            regs_kib_per_sm=spec.regs_kib_per_sm.value,
            max_blocks_per_sm=int(spec.max_blocks_per_sm.value),
            tdp_w=pick("tdp_w", spec.tdp_w),
            die_mm2=spec.die_mm2.value if spec.die_mm2 is not None else float("nan"),
            **_tuned(v, name),
            **_node(v, name),
        )

    def _custom(self, v: dict[str, Any], math: str) -> GpuArch:
        missing = [p for p in OVERRIDABLE if v[p] is None and not (p == "tensor_tflops" and math == "fp32")]
        if missing:
            raise TemplateError(
                f"gpu=custom needs every GPU number; missing: {', '.join(missing)} "
                "(or name a catalog GPU and override only what differs)",
                missing[0],
            )
        fp32 = float(v["fp32_tflops"])
        return GpuArch(
            gpu=CUSTOM,
            display="custom GPU",
            precision=v["precision"],
            math=math,
            sms=int(v["sms"]),
            clock_mhz=float(v["clock_mhz"]),
            tensor_tflops=fp32 if math == "fp32" else float(v["tensor_tflops"]),
            fp32_tflops=fp32,
            mem_gbps=float(v["mem_gbps"]),
            mem_gb=float(v["mem_gb"]),
            l2_mib=float(v["l2_mib"]),
            smem_kib_per_sm=float(v["smem_kib_per_sm"]),
            regs_kib_per_sm=256.0,
            max_blocks_per_sm=32,
            tdp_w=float(v["tdp_w"]),
            die_mm2=float("nan"),
            **_tuned(v, CUSTOM),
            **_node(v, CUSTOM),
        )


@lru_cache(maxsize=1)
def _params() -> tuple[Param, ...]:
    """The template's parameters, built once: ``resolve`` asks for them at every point."""
    names = (*gpu_catalog.gpu_names(), CUSTOM)
    assumption = gpu_catalog.assumption
    return (
        Param(
            PART_PARAM,
            "str",
            DEFAULT_GPU,
            "catalog GPU (or an alias such as h100, a100) or 'custom'; " + ", ".join(names),
        ),
        Param("precision", "str", "fp16", "operand precision (from the workload)", choices=PRECISIONS),
        Param("tf32", "bool", False, "run fp32 GEMMs on TF32 tensor cores (else on CUDA cores)"),
        Param("sms", "int", None, "streaming multiprocessors (default: the catalog's)", low=1, high=4096),
        Param("clock_mhz", "float", None, "SM clock used for the peaks", low=100, high=5000, unit=" MHz"),
        Param(
            "tensor_tflops",
            "float",
            None,
            "dense peak of the GEMM math at this precision",
            low=0.01,
            unit=" TFLOPS",
        ),
        Param("fp32_tflops", "float", None, "FP32 CUDA-core peak (elementwise, depthwise)", low=0.01, unit=" TFLOPS"),
        Param("mem_gbps", "float", None, "DRAM bandwidth", low=1, unit=" GB/s"),
        Param("mem_gb", "float", None, "DRAM capacity", low=0.1, unit=" GB"),
        Param("l2_mib", "float", None, "L2 cache", low=0.0, unit=" MiB"),
        Param(
            "smem_kib_per_sm",
            "float",
            None,
            "shared memory per SM (threadblock tiles live here)",
            low=16,
            unit=" KiB",
        ),
        Param("tdp_w", "float", None, "thermal design power", low=1, unit=" W"),
        Param(
            "launch_us",
            "float",
            None,
            f"device fixed cost per kernel (default: fitted, else {assumption('launch_us'):g})",
            low=0.0,
            unit=" us",
        ),
        Param(
            "compute_fraction",
            "float",
            None,
            f"achievable share of tensor peak (default: fitted, else {assumption('compute_fraction'):g})",
            low=0.05,
            high=1.0,
        ),
        Param(
            "bandwidth_fraction",
            "float",
            None,
            f"achievable share of DRAM bandwidth for GEMMs (default: fitted, else "
            f"{assumption('bandwidth_fraction'):g})",
            low=0.05,
            high=1.0,
        ),
        Param(
            "execution",
            "str",
            "graph",
            "graph: CUDA graph / TensorRT (device fixed cost only); eager: plus the host's per-call cost",
            choices=EXECUTIONS,
        ),
        Param("gpus", "int", 1, "GPUs per node, tensor parallel over NVLink", low=1, high=64),
        Param(
            "sparsity",
            "str",
            "dense",
            "2:4: GEMMs whose weights carry a 2:4-compatible pattern (workload sparsity) run on the sparse "
            "tensor cores at the datasheet 'with sparsity' peak (2x dense), weights stored compressed",
            choices=SPARSITY_MODES,
        ),
        Param("nvlink_gbps", "float", None, "NVLink bandwidth per GPU, one direction", low=1, unit=" GB/s"),
    )


def _tuned(v: dict[str, Any], gpu: str) -> dict[str, Any]:
    """The tuning constants of a point: the GPU's fitted ones (or the assumptions), then the point's overrides."""
    entry = calibration_for(gpu)
    tuning = entry.tuning if entry is not None else default_tuning()
    overrides = {k: float(v[k]) for k in ("launch_us", "compute_fraction", "bandwidth_fraction") if v[k] is not None}
    tuning = replace(tuning, **overrides)
    return {
        "launch_us": tuning.launch_us,
        "compute_fraction": tuning.compute_fraction,
        "bandwidth_fraction": tuning.bandwidth_fraction,
        "tuning": tuning,
        "calibration": entry.label if entry is not None else CATALOG_ONLY,
        "execution": v["execution"],
        "sparsity": v["sparsity"],
    }


def _node(v: dict[str, Any], gpu: str) -> dict[str, Any]:
    """GPUs per node and their NVLink bandwidth (the catalog's for NVLink parts; needed otherwise)."""
    gpus = int(v["gpus"])
    link = v["nvlink_gbps"]
    if link is None and gpus > 1:
        sourced = gpu_catalog.NVLINK_GBPS.get(gpu)
        if sourced is None:
            raise TemplateError(
                f"gpus={gpus} needs nvlink_gbps: the catalog has no NVLink figure for gpu={gpu!r} (it has one for "
                f"{', '.join(gpu_catalog.NVLINK_GBPS)}); give the GPU-to-GPU bandwidth per direction in GB/s",
                "nvlink_gbps",
            )
        link = sourced.value
    return {"gpus": gpus, "nvlink_gbps": float(link) if link is not None else 0.0}
