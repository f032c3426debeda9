"""Real measurements as surrogate datasets, in the feature contract's format (``surrogates.contract.features``).

Each measured design becomes one contract row: the graph statistics of the network (or kernel) it ran,
the template parameters it was built with, the closed form's estimate for that design (the family's
analytical model) and, as the truth (``design_<metric>``), the measurement. ``dse surrogate train`` and
``dse surrogate eval`` then work on the file as on any contract dataset, learning ``log(measured / model)``.

Sources (``KIND:PATH``):

- ``wa-hls4ml:CSV`` -- Vivado HLS results of 2-layer hls4ml networks (``surrogates.truth.wa_hls4ml.read_wa_hls4ml``);
  workload = the network (``d_in-hidden-d_out``), designs = its (precision, ReuseFactor) points.
- ``reports:RUN_DIR`` -- the synthesis reports ``dse ingest-report`` stored in a run of ``dse explore``;
  workload = the run's network, designs = its exported points.
- ``gpu-csv:CSV`` -- timed kernels in ``tools/gpu_measure.py``'s format (``hwmodels.gpu.calibrate``);
- ``llmcompass:DIR`` -- LLMCompass's real-hardware kernel files; for both GPU sources workload = the
  kernel's shape, designs = the GPUs / precisions / execution modes it was timed on.

Every row carries ``source`` and ``family`` (what a held-out split groups by: the network for FPGA rows,
the shape family -- one sweep or one kind of shape -- for GPU kernels).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.choices import MEASURED_SOURCE_KINDS
from dse.errors import UserError
from dse.files import atomic_write
from dse.graph import Graph, GraphBuilder
from dse.registry import GPU_KIND, HLS4ML, kinds_exporting
from dse.rundir import open_run
from hwmodels.catalogs.fpga import HLS_REPORT_KEYS, HLS_REPORT_LEGACY_DSP_KEY
from hwmodels.gpu.calibrate import PLAIN_COLUMNS, Measurement, read_llmcompass
from surrogates.contract.features import ClosedForm, baseline_row
from surrogates.contract.model import contract_frame
from surrogates.dataset import workloads_from_args
from surrogates.truth.wa_hls4ml import read_wa_hls4ml
from templates.gpu import PART_PARAM

(HLS4ML_KIND,) = kinds_exporting(HLS4ML)  # the family hls4ml writes: wa-hls4ml runs and synthesis reports are its
# the hls4ml configuration of every wa-hls4ml run (README of ../shared/data/wa-hls4ml): Resource strategy,
# io_parallel, xcu250, data ap_fixed<16,6>, QKeras weights quantized_bits(prec, 0) = ap_fixed<prec,1>
WA_HLS4ML_FIXED = {
    "part": "xcu250",
    "io_type": "io_parallel",
    "strategy": "resource",
    "width": 16,
    "integer": 6,
    "weight_integer": 1,
}
GPU_REQUIRED = (PART_PARAM, "precision", "op", "M", "N", "K", "count", "latency_s")
GPU_OPS = ("gemm", "conv", "attention", "softmax", "layernorm", "gelu")
EXTRA_METRICS = ("ii_cycles",)  # measured and modelled, kept beside the contract's metrics


@dataclass(frozen=True)
class MeasuredSource:
    """One ``KIND:PATH`` argument."""

    kind: str
    path: Path

    @classmethod
    def parse(cls, text: str) -> MeasuredSource:
        kind, sep, path = str(text).partition(":")
        if not sep or kind not in MEASURED_SOURCE_KINDS or not path:
            raise UserError(
                f"measured source {text!r} must be KIND:PATH with KIND one of {', '.join(MEASURED_SOURCE_KINDS)}",
                where="KIND:PATH",
            )
        return cls(kind, Path(path))


@dataclass
class MeasuredDesign:
    """One measured design: its parameters and the measured metrics."""

    point: dict[str, Any]
    truth: dict[str, float]


# ----------------------------------------------------------------------------------------------- rows


def measured_frame(
    template_kind: str,
    graph: Graph,
    workload: str,
    fixed: Mapping[str, Any],
    designs: Sequence[MeasuredDesign],
    source: str,
    family: str,
) -> pd.DataFrame:
    """Contract rows of measured designs of one graph; the closed form prices each design's point."""
    closed = ClosedForm(graph, template_kind, dict(fixed))
    results, extra = [], []
    for d in designs:
        try:
            metrics = closed(d.point)
        except (ValueError, KeyError, ArithmeticError) as exc:
            raise UserError(
                f"{source}: the {template_kind} model cannot price measured design {d.point} of {workload}: {exc}",
                where=source,
            ) from None
        row, base = baseline_row(metrics)
        results.append((d.truth, row, base))
        extra.append({m: float(metrics.values.get(m, np.nan)) for m in EXTRA_METRICS})
    frame = contract_frame(template_kind, graph, workload, [d.point for d in designs], fixed, results)
    for m in EXTRA_METRICS:
        frame[f"base_{m}"] = [e[m] for e in extra]
        frame[f"design_{m}"] = [d.truth.get(m, np.nan) for d in designs]
    frame["source"] = source
    frame["family"] = family
    frame["truth"] = "measured"
    return frame


def fpga_truth(latency: float, interval: float, clock_ns: float, resources: Mapping[str, float]) -> dict[str, float]:
    """The contract metrics of one synthesized design (latency and interval in cycles at ``clock_ns``)."""
    return {
        "latency_cycles": float(latency),
        "ii_cycles": float(interval),
        "latency_ms": float(latency) * clock_ns * 1e-6,
        "throughput_ips": 1e9 / (max(float(interval), 1.0) * clock_ns),
        **{k: float(v) for k, v in resources.items()},
    }


def dense_graph(widths: Sequence[int]) -> Graph:
    """A stack of dense layers ``widths[0] -> widths[1] -> ...`` (hls4ml data at 16 bits)."""
    b = GraphBuilder("dense_" + "_".join(map(str, widths)), elem_bytes=2)
    x = b.input("x", (1, int(widths[0])))
    for i, width in enumerate(widths[1:], start=1):
        x = b.linear(x, int(width), name=f"dense_{i}")
    return b.build()


def wa_hls4ml_rows(path: Path) -> pd.DataFrame:
    """Contract rows of the wa-hls4ml CSV: one workload per network, one design per synthesized point."""
    rows = read_wa_hls4ml(path)
    frames = []
    for network, group in rows.groupby("network", sort=True):
        widths = [int(w) for w in str(network).split("-")]
        designs = [
            MeasuredDesign(
                {
                    "reuse_factor": int(r.reuse_factor),
                    "weight_width": int(r.prec),
                    "clock_period_ns": r.clock_period_ns,
                },
                fpga_truth(
                    r.latency_cycles,
                    r.ii_cycles,
                    r.clock_period_ns,
                    {"lut": r.lut, "ff": r.ff, "dsp": r.dsp, "bram": r.bram},
                ),
            )
            for r in group.itertuples(index=False)
        ]
        frames.append(
            measured_frame(
                HLS4ML_KIND, dense_graph(widths), str(network), WA_HLS4ML_FIXED, designs, "wa-hls4ml", str(network)
            )
        )
    return pd.concat(frames, ignore_index=True)


def _report_number(synth: Mapping[str, Any], key: str, where: str) -> float:
    value = synth.get(key)
    if value is None and key == HLS_REPORT_KEYS["dsp"]:
        value = synth.get(HLS_REPORT_LEGACY_DSP_KEY)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UserError(f"its synthesis report has no number for {key} (got {value!r})", where=where) from None


def report_rows(run_dir: Path) -> pd.DataFrame:
    """Contract rows of the synthesis reports ``dse ingest-report`` stored in ``run_dir``."""
    with open_run(run_dir) as (store, spec):
        stored = store.synthesis()
        by_id = {r.point_id: r for r in store.records()}
    if spec.template.kind != HLS4ML_KIND:
        raise UserError(
            f"explores {spec.template.kind}; synthesis reports come from {HLS4ML_KIND} runs", where=str(run_dir)
        )
    if not stored:
        raise UserError(
            "holds no synthesis report; run `dse export`, synthesize, then `dse ingest-report`", where=str(run_dir)
        )
    (workload,) = workloads_from_args(spec, [])
    fixed = spec.fixed_params()
    designs = []
    for entry in stored:
        where = f"{run_dir} point {entry['point_id']}"
        record = by_id.get(entry["point_id"])
        synth = entry["report"].get("CSynthesisReport")
        if record is None or not synth:
            what = "is not a stored point" if record is None else f"has no CSynthesisReport ({entry['backend']})"
            raise UserError(f"{what}; only Vivado/Vitis C-synthesis reports can be read", where=where)
        point = dict(record.params)
        clock = float(synth.get("TargetClockPeriod") or {**fixed, **point}.get("clock_period_ns", 5.0))
        numbers = {ours: _report_number(synth, theirs, where) for ours, theirs in HLS_REPORT_KEYS.items()}
        resources = {k: numbers[k] for k in ("lut", "ff", "dsp", "bram")}
        designs.append(
            MeasuredDesign(point, fpga_truth(numbers["latency_cycles"], numbers["ii_cycles"], clock, resources))
        )
    graph = workload.build(spec.base_dir)
    return measured_frame(HLS4ML_KIND, graph, workload.label, fixed, designs, f"reports:{run_dir}", workload.label)


# ----------------------------------------------------------------------------------------------- GPU kernels


def kernel_graph(m: Measurement) -> Graph:
    """The graph of one timed call (GEMM and conv rows as their GEMM, attention as QK^T, softmax, PV)."""
    eb = 4 if m.precision in ("fp32", "tf32") else 1 if m.precision in ("int8", "fp8") else 2
    b = GraphBuilder(f"{m.op}_{m.M}x{m.N}x{m.K}x{m.count}", elem_bytes=eb)
    batch = (m.count,) if m.count > 1 else ()
    if m.op in ("gemm", "conv"):
        b.matmul(b.input("a", (*batch, m.M, m.K)), b.input("b", (*batch, m.K, m.N)))
    elif m.op == "attention":  # M queries, N keys, K head dim, count heads
        q, k, v = (b.input(n, (m.count, rows, m.K)) for n, rows in (("q", m.M), ("k", m.N), ("v", m.N)))
        b.matmul(b.softmax(b.matmul(q, k, transpose_b=True)), v)
    elif m.op in ("softmax", "layernorm"):
        getattr(b, m.op)(b.input("x", (*batch, m.M, m.N)))
    else:  # gelu: M elements (times N, 1 in both formats)
        b.elementwise("gelu", b.input("x", (*batch, m.M * max(m.N, 1))))
    return b.build()


def read_gpu_csv(path: Path) -> tuple[list[Measurement], list[str]]:
    """Rows of a measurement CSV (``PLAIN_COLUMNS``) and their shape families (a ``family`` column, else the op
    and the first word of the row's name: ``square_1024`` -> ``gemm/square``); a bad cell is one UserError."""
    if not path.is_file():
        raise UserError(f"GPU measurement CSV not found (looked for {path.resolve()})", where=str(path))
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot be read as a CSV ({type(exc).__name__})", where=str(path)) from None
    missing = [c for c in GPU_REQUIRED if c not in raw.columns]
    if missing:
        raise UserError(
            f"is not a GPU measurement CSV (missing columns: {', '.join(missing)}; the format is "
            f"{', '.join(PLAIN_COLUMNS)}, as tools/gpu_measure.py writes it)",
            where=str(path),
        )
    rows, families = [], []
    for i, r in enumerate(raw.to_dict("records"), start=2):
        where = f"{path}:{i}"
        if r["op"] not in GPU_OPS:
            raise UserError(f"op {r['op']!r} is not one of {', '.join(GPU_OPS)}", where=where)
        try:
            dims = {k: int(float(r[k])) for k in ("M", "N", "K", "count")}
            seconds = float(r["latency_s"])
        except ValueError:
            raise UserError("M, N, K, count and latency_s must be numbers", where=where) from None
        if seconds <= 0 or min(dims["M"], dims["N"], dims["count"]) < 1:
            raise UserError("latency_s must be > 0 and M, N, count >= 1", where=where)
        name = r.get("name", "")
        families.append(r.get("family") or (f"{r['op']}/{name.split('_')[0]}" if name else r["op"]))
        method = r.get("method") or "eager"
        part = r[PART_PARAM]
        rows.append(Measurement(part, r["precision"], r["op"], **dims, seconds=seconds, method=method, name=name))
    return rows, families


def sweep_families(rows: Sequence[Measurement]) -> list[str]:
    """Shape family of each LLMCompass row: one per sweep of a file. Softmax and layernorm files sweep the row
    length N at their first M, then the row count M (a new sweep starts where M first changes)."""
    out, stem, first_m, rows_swept = [], "", 0, False
    for m in rows:
        if m.name.split(":")[0] != stem:
            stem, first_m, rows_swept = m.name.split(":")[0], m.M, False
        rows_swept = rows_swept or m.M != first_m or m.op not in ("softmax", "layernorm")
        out.append(f"{m.op} (M varies)" if rows_swept else f"{m.op} (M={first_m}, N varies)")
    return out


def gpu_rows(measurements: Sequence[Measurement], families: Sequence[str], source: str) -> pd.DataFrame:
    """Contract rows of timed kernels: one workload per shape, one design per (GPU, precision, execution)."""
    shapes: dict[tuple, list[int]] = {}  # a shape timed in two sweeps is a workload of each family
    for i, m in enumerate(measurements):
        shapes.setdefault((m.op, m.M, m.N, m.K, m.count, families[i]), []).append(i)
    frames, labels = [], set()
    for (op, mm, n, k, count, family), index in shapes.items():
        label = f"{op}_{mm}x{n}x{k}x{count}"
        label = label if label not in labels else f"{label} [{family}]"
        labels.add(label)
        designs = [
            MeasuredDesign(
                {
                    PART_PARAM: measurements[i].gpu,
                    "precision": measurements[i].precision,
                    "execution": "eager" if measurements[i].eager else "graph",
                },
                {"latency_ms": measurements[i].seconds * 1e3},
            )
            for i in index
        ]
        graph = kernel_graph(measurements[index[0]])
        frames.append(measured_frame(GPU_KIND, graph, label, {}, designs, source, family))
    return pd.concat(frames, ignore_index=True)


def _gpu_source(source: MeasuredSource) -> pd.DataFrame:
    if source.kind == "gpu-csv":
        rows, families = read_gpu_csv(source.path)
        return gpu_rows(rows, families, f"gpu-csv:{source.path}")
    if not source.path.is_dir():
        raise UserError(f"LLMCompass folder not found (looked for {source.path.resolve()})", where=str(source.path))
    try:
        rows = read_llmcompass(source.path)
    except (ValueError, IndexError) as exc:
        raise UserError(f"a file is not in LLMCompass's format ({exc})", where=str(source.path)) from None
    if not rows:
        raise UserError("holds no matmul_/softmax_/layernorm_/gelu_ CSV of LLMCompass", where=str(source.path))
    return gpu_rows(rows, sweep_families(rows), f"llmcompass:{source.path}")


# ----------------------------------------------------------------------------------------------- dataset


def measured_dataset(sources: Sequence[str | MeasuredSource]) -> pd.DataFrame:
    """One contract dataset from measured sources (all of one template)."""
    if not sources:
        raise UserError("give at least one measured source KIND:PATH", where="KIND:PATH")
    frames = []
    for s in sources:
        source = s if isinstance(s, MeasuredSource) else MeasuredSource.parse(s)
        if source.kind == "wa-hls4ml":
            frames.append(wa_hls4ml_rows(source.path))
        elif source.kind == "reports":
            frames.append(report_rows(source.path))
        else:
            frames.append(_gpu_source(source))
    templates = sorted({t for f in frames for t in f["template"].unique()})
    if len(templates) > 1:
        raise UserError(
            f"the sources give designs of templates {', '.join(templates)}; write one dataset per template",
            where="KIND:PATH",
        )
    data = pd.concat(frames, ignore_index=True)
    data["design"] = data.groupby("workload", sort=False).cumcount()  # unique when sources share a workload
    return data


def cmd_measured(args: argparse.Namespace) -> int:
    data = measured_dataset(args.sources)
    out = atomic_write(args.output, lambda path: data.to_parquet(path, index=False))
    print(
        f"wrote {len(data)} measured designs of {data['workload'].nunique()} workloads "
        f"({data['family'].nunique()} families, template {data['template'].iloc[0]}) to {out}"
    )
    return 0
