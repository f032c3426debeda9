"""Measured GPU kernel calls: the row type and the files they are read from and written to.

Why a module of its own: ``tools/gpu_measure.py`` writes these rows, ``hwmodels.gpu.calibrate`` fits the model to
them and the surrogate truth sources read them; the format is their contract. The plain CSV has
``PLAIN_COLUMNS`` (other columns are kept by the writer and ignored by the reader); LLMCompass's "real hardware"
files are read as published (``read_llmcompass``).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dse.files import atomic_write

PLAIN_COLUMNS = ("gpu", "precision", "op", "M", "N", "K", "count", "latency_s", "method", "source", "name")
# op as measured -> the report's op kind
OP_KINDS = {"gemm": "GEMM", "conv": "GEMM", "softmax": "softmax", "layernorm": "layernorm", "gelu": "GELU"}
ELEMENTWISE_FLOPS = {"softmax": 5.0, "layernorm": 8.0, "gelu": 8.0}  # per element, CUDA-core math
LLMCOMPASS_FILES = {"matmul": "gemm", "softmax": "softmax", "layernorm": "layernorm", "gelu": "gelu"}


@dataclass(frozen=True)
class Measurement:
    """One timed call. GEMM: C[M x N] = A[M x K] B[K x N], ``count`` times; softmax/layernorm: M rows of N;
    GELU: M elements. ``method`` says how it was taken ('eager ...' = one framework call per timing)."""

    gpu: str
    precision: str
    op: str
    M: int
    N: int
    K: int
    count: int
    seconds: float
    method: str = "eager"
    source: str = ""
    name: str = ""
    traffic_bytes: float = 0.0  # the file's ``bytes``: every operand once (a conv's real input, not im2col)
    power_w: float = 0.0  # mean board power (NVML) while the call ran back to back; 0 = not measured
    power_call_s: float = 0.0  # time per call during that power run

    @property
    def kind(self) -> str:
        return OP_KINDS.get(self.op, self.op)

    @property
    def eager(self) -> bool:
        return self.method.startswith("eager")


def operand_bytes(m: Measurement, eb: int) -> tuple[float, float, float]:
    """DRAM bytes of A, B, C. A conv reads its input tensor, not the R*S-times larger im2col matrix: its A is
    the row's total traffic less weights and output (as ``mappers.gpu`` counts it), when the file says it."""
    b, c = float(m.K * m.N * eb * m.count), float(m.M * m.N * eb * m.count)
    if m.op == "conv" and m.traffic_bytes > b + c:
        return m.traffic_bytes - b - c, b, c
    return float(m.M * m.K * eb * m.count), b, c


def row_work(m: Measurement, elem_bytes: int) -> tuple[float, float]:
    """(useful flops, DRAM bytes) of one measured call, as the model counts them."""
    if m.kind == "GEMM":
        return 2.0 * m.M * m.N * m.K * m.count, sum(operand_bytes(m, elem_bytes))
    elements = float(m.M * m.N * m.count)
    return ELEMENTWISE_FLOPS.get(m.op, 1.0) * elements, 2.0 * elements * elem_bytes


# ---------------------------------------------------------------------------------------------------
# Reading measurements
# ---------------------------------------------------------------------------------------------------
def read_measurements(path: str | Path, ops: Sequence[str] | None = None) -> list[Measurement]:
    """Rows of a plain measurement CSV (``PLAIN_COLUMNS``; other columns are ignored)."""
    rows = []
    with Path(path).open(newline="") as handle:
        for r in csv.DictReader(handle):
            if ops is not None and r["op"] not in ops:
                continue
            rows.append(
                Measurement(
                    gpu=r["gpu"],
                    precision=r["precision"],
                    op=r["op"],
                    M=int(r["M"]),
                    N=int(r["N"]),
                    K=int(r["K"]),
                    count=int(r["count"]),
                    seconds=float(r["latency_s"]),
                    method=r.get("method", "eager"),
                    source=r.get("source", ""),
                    name=r.get("name", ""),
                    traffic_bytes=float(r.get("bytes") or 0.0),
                    power_w=float(r.get("power_w") or 0.0),
                    power_call_s=float(r.get("power_call_s") or 0.0),
                )
            )
    return rows


def write_measurements(path: Path, rows: Sequence[Measurement], extra: Sequence[dict] | None = None) -> Path:
    """A plain measurement CSV: ``PLAIN_COLUMNS`` then any extra columns (same keys in every row)."""
    extra = list(extra) if extra is not None else [{} for _ in rows]
    power = ("power_w", "power_call_s") if any(m.power_w > 0 for m in rows) else ()
    names = [*PLAIN_COLUMNS, *power] + [k for k in (extra[0] if extra else {}) if k not in (*PLAIN_COLUMNS, *power)]

    def write(temporary: Path) -> None:
        with temporary.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=names)
            writer.writeheader()
            for m, more in zip(rows, extra):
                plain = dict(zip(PLAIN_COLUMNS, (m.gpu, m.precision, m.op, m.M, m.N, m.K, m.count)))
                plain.update(latency_s=repr(m.seconds), method=m.method, source=m.source, name=m.name)
                plain.update({column: repr(getattr(m, column)) for column in power})
                writer.writerow({**plain, **more})

    return atomic_write(path, write)


def _numbers(line: str) -> list[float]:
    return [float(cell.strip().removesuffix("ms").removesuffix("Tflops")) for cell in line.split(",") if cell.strip()]


def read_llmcompass(folder: str | Path, gpu: str = "a100_80gb") -> list[Measurement]:
    """LLMCompass's real-hardware files in ``folder`` (``matmul_*.csv``, ``softmax_*``, ``layernorm_*``,
    ``gelu_*``; fp16, PyTorch eager): latency from the file's own latency or throughput column."""
    folder = Path(folder)
    source = f"LLMCompass real-hardware measurements (ae/figure5/*/real_hardware, folder {folder.name})"
    method = "eager PyTorch call, fp16, LLMCompass run_on_gpu"
    rows: list[Measurement] = []
    for path in sorted(folder.glob("*.csv")):
        prefix = path.name.split("_", 1)[0]
        op = LLMCOMPASS_FILES.get(prefix)
        if op is None:
            continue
        for i, line in enumerate(path.read_text().splitlines()):
            if not line.strip():
                continue
            v = _numbers(line)
            name = f"{path.stem}:{i + 1}"
            if op == "gemm":  # M, N, K, latency ms, TFLOPS (K = N in every file)
                m, n, k, seconds = int(v[0]), int(v[1]), int(v[2]), v[3] * 1e-3
            elif op == "gelu":  # M elements, 1e9 elements/s
                m, n, k, seconds = int(v[0]), 1, 0, v[0] / (v[1] * 1e9)
            else:  # M rows, N columns, 1e9 elements/s
                m, n, k, seconds = int(v[0]), int(v[1]), 0, v[0] * v[1] / (v[2] * 1e9)
            rows.append(Measurement(gpu, "fp16", op, m, n, k, 1, seconds, method, source, name))
    return rows
