"""The GPU model's tuning constants: catalog defaults, or values fitted to measured kernels of one GPU.

Why a separate table: the datasheet numbers (``hwmodels.catalogs.gpu``) say what a GPU *has*; these constants
say how much of it real kernels *reach* — the achievable tensor and bandwidth fractions, the fixed cost of a
kernel on the device, the per-call cost of the host (an eager framework call) and how much of it overlaps
the device work, the extra passes a row-wise kernel makes over long rows. They start as ASSUMPTIONs
(``MODEL_ASSUMPTIONS``); ``hwmodels.gpu.calibrate`` fits them to measurements of one GPU and writes
``hwmodels/data/gpu_calibration.json``, which this module reads: a GPU with an entry there is *calibrated*
(the entry says on which measurements and with what cross-validated error), every other GPU is
*catalog-only*.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from dse.files import atomic_write_text
from hwmodels.catalogs.gpu import GPU_SOURCES_MD, PUBLISHED_GEMM_FRACTION, assumption, sources_markdown

CALIBRATION_JSON = Path(__file__).resolve().parent.parent / "data" / "gpu_calibration.json"
# Kernel kinds with their own tuning; any other memory-bound kernel (pool, fft, scan) uses "elementwise".
KERNEL_KINDS = ("gemm", "softmax", "layernorm", "elementwise")
ROW_KINDS = ("softmax", "layernorm")  # row-wise reductions: long rows may need an extra pass
# A convolution with a filter window is slower than the GEMM it lowers to (layout transforms around the
# kernel, im2col address math in the main loop). Where a GPU's calibration has no conv rows these are the
# values fitted on a real H100 SXM (hwmodels/data/gpu_measured_h100_graph_fp16.csv, cuDNN via PyTorch 2.11,
# ResNet-50 layer shapes: 0.303 and 7.87 us), ASSUMED to transfer to other GPUs: pricing convs as plain GEMMs
# there would make an uncalibrated GPU look ~3x faster on CNNs than the calibrated H100.
ENERGY_CATALOG = "catalog estimate from TDP and utilization (static share assumed), not measured"
CONV_EFFICIENCY_DEFAULT = 0.30
CONV_FIXED_US_DEFAULT = 7.9
# A tensor-core GEMM whose row strides (K for A, N for B and C, row-major) are not a multiple of 16 bytes cannot
# use cuBLAS's 128-bit aligned kernels (the cuBLAS guide's tensor-op alignment rule) and falls back to slower
# ones, which load operand tiles in narrower pieces. Where a GPU's calibration has no such row this is the share
# of the L2-to-SM operand rate fitted on a real H100 SXM's bf16 rows (hwmodels/data/gpu_measured_h100_graph_bf16.csv,
# the misaligned K = 700 GEMM, cuBLAS via PyTorch 2.11), ASSUMED to transfer to other GPUs and precisions.
MISALIGNED_EFFICIENCY_DEFAULT = 0.091


@dataclass(frozen=True)
class KernelTuning:
    """How one kind of kernel behaves: its share of DRAM bandwidth, the host's per-call cost in eager mode,
    and (row-wise kernels) the extra passes over the input once a row outgrows what one block keeps on chip."""

    kind: str
    bandwidth_fraction: float
    host_us: float
    long_row_passes: float = 0.0


@dataclass(frozen=True)
class KernelPower:
    """Board power of one kind of kernel, fitted to NVML readings taken while it ran back to back:
    ``static_w + dynamic_w x activity`` (activity = max(compute, DRAM) utilization, as the catalog estimate)."""

    kind: str
    static_w: float
    dynamic_w: float
    rows: int = 0  # measurements it was fitted on


@dataclass(frozen=True)
class GpuTuning:
    """Every tuning constant of the GPU model for one GPU (hashable: it is part of the GpuArch)."""

    compute_fraction: float
    bandwidth_fraction: float  # GEMM operand streaming
    launch_us: float  # device-side fixed cost of one kernel (launch gap, fill and tail)
    l2_bandwidth_ratio: float
    overlap_exponent: float  # eager mode: call time = (host^p + device^p)^(1/p); p=1 adds them, p->inf overlaps
    long_row_bytes: float  # a row longer than this makes row-wise kernels re-read their input
    # implicit-GEMM convolution: share of the GEMM main-loop rate it reaches, and its extra device time per call
    conv_efficiency: float = CONV_EFFICIENCY_DEFAULT
    conv_fixed_us: float = CONV_FIXED_US_DEFAULT
    # a GEMM with a row stride not a multiple of 16 bytes: share of the L2-to-SM operand rate it reaches
    misaligned_efficiency: float = MISALIGNED_EFFICIENCY_DEFAULT
    # a measured call repeated on operands that stay in L2 reads them at this multiple of DRAM bandwidth
    # (the measurement's condition, ``hwmodels.gpu.calibrate.warm_in_l2``; 0: as fast as from DRAM)
    warm_l2_ratio: float = 0.0
    kernels: tuple[KernelTuning, ...] = field(default_factory=tuple)
    # measured board power per kernel kind (empty: energy is the catalog estimate from TDP and utilization)
    power: tuple[KernelPower, ...] = ()

    def kernel(self, kind: str) -> KernelTuning:
        """The tuning of a kernel kind; unknown memory-bound kinds fall back to elementwise."""
        wanted = kind if kind in KERNEL_KINDS else "elementwise"
        for entry in self.kernels:
            if entry.kind == wanted:
                return entry
        raise KeyError(f"no tuning for kernel kind {kind!r}")

    def power_of(self, kind: str) -> KernelPower | None:
        """The measured power of a kernel kind (unknown memory-bound kinds: elementwise), None if unmeasured."""
        wanted = kind if kind in KERNEL_KINDS else "elementwise"
        return next((p for p in self.power if p.kind == wanted), None)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("kernels", "power")}
        out["kernels"] = {k.kind: {n: v for n, v in asdict(k).items() if n != "kind"} for k in self.kernels}
        if self.power:
            out["power"] = {p.kind: {n: v for n, v in asdict(p).items() if n != "kind"} for p in self.power}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuTuning:
        data = {
            "conv_efficiency": CONV_EFFICIENCY_DEFAULT,
            "conv_fixed_us": CONV_FIXED_US_DEFAULT,
            "misaligned_efficiency": MISALIGNED_EFFICIENCY_DEFAULT,
            "warm_l2_ratio": 0.0,
            **data,
        }
        scalars = {f.name: float(data[f.name]) for f in fields(cls) if f.name not in ("kernels", "power")}
        kernels = tuple(
            KernelTuning(kind, **{k: float(v) for k, v in data["kernels"][kind].items()}) for kind in KERNEL_KINDS
        )
        power = tuple(
            KernelPower(kind, float(v["static_w"]), float(v["dynamic_w"]), int(v.get("rows", 0)))
            for kind, v in data.get("power", {}).items()
        )
        return cls(**scalars, kernels=kernels, power=power)


def default_tuning() -> GpuTuning:
    """The catalog-only constants: the ASSUMPTIONs of ``MODEL_ASSUMPTIONS``, the same for every GPU."""
    bandwidth = assumption("bandwidth_fraction")
    host = assumption("host_overhead_us")
    return GpuTuning(
        compute_fraction=assumption("compute_fraction"),
        bandwidth_fraction=bandwidth,
        launch_us=assumption("launch_us"),
        l2_bandwidth_ratio=assumption("l2_bandwidth_ratio"),
        overlap_exponent=assumption("overlap_exponent"),
        long_row_bytes=assumption("long_row_bytes"),
        kernels=tuple(KernelTuning(kind, bandwidth, host) for kind in KERNEL_KINDS),
    )


def starting_tuning(gpu: str) -> GpuTuning:
    """Where a calibration of ``gpu`` starts: the catalog constants, with the compute fraction of a published
    large GEMM where the catalog has one (``PUBLISHED_GEMM_FRACTION``); a constant no row moves stays here."""
    published = PUBLISHED_GEMM_FRACTION.get(gpu)
    tuning = default_tuning()
    return tuning if published is None else replace(tuning, compute_fraction=published.value)


ENERGY_MEASURED = "measured board power (NVML), fitted per kernel kind"


def energy_source(tuning: GpuTuning) -> str:
    """Where a GPU's energy comes from: measured board power (some kernel kind has it) or the catalog."""
    return ENERGY_MEASURED if tuning.power else ENERGY_CATALOG


@dataclass(frozen=True)
class Calibration:
    """One GPU's fitted constants and where they came from."""

    gpu: str
    precision: str  # the precision measured
    source: str  # which measurements
    method: str  # how fitted
    tuning: GpuTuning
    cv_mape: dict[str, float] = field(default_factory=dict)  # cross-validated error per op kind, fitted model
    uncalibrated_mape: dict[str, float] = field(default_factory=dict)  # same rows, catalog defaults
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """One line for tables: 'calibrated: <source> (<precision>)'."""
        return f"calibrated on {self.source} ({self.precision})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "source": self.source,
            "method": self.method,
            "rows": self.rows,
            "cv_mape": self.cv_mape,
            "uncalibrated_mape": self.uncalibrated_mape,
            "tuning": self.tuning.to_dict(),
        }


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Calibration]:
    file = Path(path)
    if not file.is_file():
        return {}
    raw = json.loads(file.read_text())
    return {
        gpu: Calibration(
            gpu=gpu,
            precision=entry["precision"],
            source=entry["source"],
            method=entry["method"],
            tuning=GpuTuning.from_dict(entry["tuning"]),
            cv_mape=dict(entry.get("cv_mape", {})),
            uncalibrated_mape=dict(entry.get("uncalibrated_mape", {})),
            rows=dict(entry.get("rows", {})),
        )
        for gpu, entry in raw.items()
    }


def calibrations(path: Path = CALIBRATION_JSON) -> dict[str, Calibration]:
    """Every calibrated GPU (catalog key -> Calibration) in the project's calibration file."""
    return _load(str(path))


def calibration_for(gpu: str, path: Path = CALIBRATION_JSON) -> Calibration | None:
    """The calibration of a catalog GPU, or None when it is catalog-only."""
    return calibrations(path).get(gpu)


def write_calibration(entry: Calibration, path: Path = CALIBRATION_JSON) -> Path:
    """Add or replace one GPU's entry in the calibration file (other GPUs' entries are kept)."""
    raw = json.loads(path.read_text()) if path.is_file() else {}
    raw[entry.gpu] = entry.to_dict()
    atomic_write_text(path, json.dumps(dict(sorted(raw.items())), indent=2) + "\n")
    _load.cache_clear()
    return path


def with_kernel(tuning: GpuTuning, kind: str, **changes: float) -> GpuTuning:
    """``tuning`` with one kernel kind's constants changed."""
    kernels = tuple(replace(k, **changes) if k.kind == kind else k for k in tuning.kernels)
    return replace(tuning, kernels=kernels)


def calibration_markdown(path: Path = CALIBRATION_JSON) -> str:
    """The provenance of every fitted constant: data, method, cross-validated error before and after."""
    lines = ["## Calibrated GPUs", ""]
    entries = calibrations(path)
    if not entries:
        return "\n".join([*lines, "None: every GPU is catalog-only (the assumptions above).", ""])
    lines.append("Every other GPU is catalog-only: it uses the assumptions above.")
    for entry in entries.values():
        lines += ["", f"### {entry.gpu} — {entry.label}", "", f"Fitted: {entry.method}", ""]
        lines += [
            "| op kind | rows | CV mean abs. error, calibrated | same rows, catalog defaults |",
            "|---|---|---|---|",
        ]
        for kind, error in entry.cv_mape.items():
            before = entry.uncalibrated_mape.get(kind, float("nan"))
            lines.append(f"| {kind} | {entry.rows.get(kind, 0)} | {error:.1f} % | {before:.1f} % |")
        lines += ["", "| constant | fitted value |", "|---|---|"]
        tuning = entry.tuning.to_dict()
        for name, value in tuning.items():
            if name not in ("kernels", "power"):
                lines.append(f"| {name} | {value:.4g} |")
        for kind, values in tuning["kernels"].items():
            for name, value in values.items():
                lines.append(f"| {kind}.{name} | {value:.4g} |")
        for kind, values in tuning.get("power", {}).items():
            for name, value in values.items():
                lines.append(f"| power.{kind}.{name} | {value:.4g} |")
        lines += ["", f"Energy: {energy_source(entry.tuning)}."]
    return "\n".join(lines) + "\n"


def full_sources_markdown(path: Path = CALIBRATION_JSON) -> str:
    """GPU_SOURCES.md: the catalog with its sources, then the calibrations with their provenance."""
    return sources_markdown() + "\n" + calibration_markdown(path)


def write_sources(path: Path = GPU_SOURCES_MD) -> Path:
    return atomic_write_text(path, full_sources_markdown())


if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {write_sources()}")
