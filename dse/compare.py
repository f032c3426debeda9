"""GPU baselines: the Pareto designs of a run next to the GPUs a user would otherwise buy.

Why: an accelerator design is only interesting relative to an H100 or an L4 running the same workload.
For each Pareto design and each baseline GPU (``baselines: [h100, a100]`` in the spec, or
``dse compare DIR --baselines ...``) this module gives latency, throughput, energy per inference,
performance per watt and the ratio to the best GPU, per workload and per layer, plus the roofline of the
best GPU and of the knee design side by side; a design's perf/W comes from its modelled ``power_w`` (for an
FPGA design, ``hwmodels.fpga.power``). GPU figures come from ``hwmodels.gpu.model`` (catalog numbers;
tuning constants fitted to measurements for a calibrated GPU, assumed for a catalog-only one — the
``calibration`` column says which; energy an estimate from TDP and utilization). A baseline may be a
multi-GPU node (``dgx_h100``, ``dgx_a100``): its GPUs run the workload tensor-parallel over NVLink.

``dse compare DIR`` prints the table and writes ``compare.csv`` and ``compare_layers.csv`` into DIR; the
explorer calls :func:`compare_run` when the spec lists baselines and the report shows the result.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dse.errors import UserError
from dse.files import atomic_write
from dse.graph import PRECISION_BYTES, Graph
from dse.pareto import knee_point_id
from dse.registry import FAMILIES, GPU_KIND, family, make_mapper
from dse.rundir import open_run, stops_when_disk_full
from dse.session import build_graph
from hwmodels.catalogs.gpu import NODES, UnknownGpuError, canonical_baseline_name, get_gpu
from hwmodels.catalogs.gpu_tuning import energy_source
from hwmodels.fpga.model import FpgaDataflowModel
from hwmodels.fpga.power import POWER_NOTE as FPGA_POWER_NOTE
from hwmodels.gpu.calibrate_board import with_board_power
from hwmodels.gpu.model import ENERGY_MEASURED_NOTE, ENERGY_NOTE
from mappers.payloads import GpuKernel
from templates.base import TemplateError
from templates.gpu import PART_PARAM

DEFAULT_BASELINES = ("h100_sxm", "a100_80gb")
MAX_DESIGNS = 20
# Precision a GPU runs when it lacks the workload's (the closest format its tensor cores have).
_FALLBACK = {"int4": "int8", "int16": "fp16", "int32": "fp32", "fp8": "fp16", "bf16": "fp16"}
SUMMARY_COLUMNS = (
    "name",
    "kind",
    "precision",
    "calibration",
    "latency_ms",
    "throughput_ips",
    "energy_mj",
    "power_w",
    "inferences_per_j",
    "latency_vs_best_gpu",
    "throughput_vs_best_gpu",
    "energy_vs_best_gpu",
    "perf_per_watt_vs_best_gpu",
)


@dataclass
class GpuBaseline:
    """One GPU evaluated on the workload."""

    name: str
    display: str
    precision: str
    arch: Any
    metrics: Any
    mapping: Any  # the tile mapper's Mapping: which ops run in another kernel's epilogue (GpuKernel.fused_into)


@dataclass
class Comparison:
    """Designs vs GPUs: ``summary`` one row per design or GPU, ``layers`` one row per layer."""

    workload: str
    summary: pd.DataFrame
    layers: pd.DataFrame
    figures: list[tuple[str, go.Figure]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# Baselines
# ---------------------------------------------------------------------------------------------------
def baseline_names(names: Sequence[str]) -> list[str]:
    """Catalog keys (GPUs or node presets) for user-written names (aliases allowed); UserError naming the bad one."""
    out = []
    for name in names:
        try:
            key = canonical_baseline_name(name)
        except UnknownGpuError as err:
            raise UserError(
                f"unknown baseline GPU {name!r}; {err.message.split('; ', 1)[1]}", where="--baselines"
            ) from None
        if key not in out:
            out.append(key)
    return out


def gpu_precision(gpu: str, precision: str) -> str:
    """The workload precision if the GPU's tensor cores have it, else the closest one they do."""
    spec = get_gpu(gpu)
    candidate = precision
    for _ in range(4):
        if candidate in ("fp16", "bf16", "fp8", "int8", "fp32") and spec.peak_tflops(candidate) is not None:
            return candidate
        candidate = _FALLBACK.get(candidate, "fp16")
    return "fp16"


def evaluate_baselines(graph: Graph, names: Sequence[str], precision: str) -> tuple[list[GpuBaseline], list[str]]:
    """Each named GPU on ``graph`` (stored at ``precision``), with a note for every precision fallback."""
    gpu = family(GPU_KIND)
    template, mapper, model = gpu.template(), make_mapper(GPU_KIND), gpu.hwmodel()
    baselines, notes = [], []
    for name in baseline_names(names):
        node = NODES.get(name)
        gpu_name = node.gpu if node is not None else name
        run_at = gpu_precision(gpu_name, precision)
        g = graph if run_at == precision else graph.with_elem_bytes(PRECISION_BYTES[run_at])
        point: dict[str, Any] = {PART_PARAM: gpu_name, "precision": run_at}
        if node is not None:
            point.update(gpus=int(node.gpus.value), nvlink_gbps=node.nvlink_gbps.value)
        arch = template.instantiate(point)
        display = node.display if node is not None else arch.display
        if run_at != precision:
            notes.append(f"{display} has no {precision} tensor math; it runs the workload at {run_at}")
        mapping = mapper.map(g, arch)
        metrics = model.evaluate(mapping, arch)
        baselines.append(GpuBaseline(name, display, run_at, arch, metrics, mapping))
    return baselines, notes


# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------
def _per_joule(throughput: float, power: float) -> float:
    return throughput / power if power and power > 0 else math.nan


def _design_label(row: pd.Series, param_names: Sequence[str]) -> str:
    params = ", ".join(f"{p}={row[p]}" for p in param_names if p in row.index)
    return f"design {str(row['point_id'])[:8]}" + (f" ({params})" if params else "")


def _short_label(name: str) -> str:
    """'design 1b2738c1 (rows=...)' -> 'design 1b2738c1'; 'NVIDIA H100 SXM5 80GB' -> 'H100 SXM5 80GB'."""
    return name.split(" (", 1)[0].removeprefix("NVIDIA ")


def summary_frame(
    designs: pd.DataFrame, baselines: Sequence[GpuBaseline], precision: str, param_names: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per design and per GPU, with ratios to the best GPU on each figure (>1 = better than it
    for throughput and perf/W; <1 = better for latency and energy)."""
    rows = []
    for b in baselines:
        v = b.metrics.values
        rows.append(
            {
                "name": b.display,
                "kind": GPU_KIND,
                "precision": b.precision,
                "calibration": b.arch.calibration,
                "latency_ms": v["latency_ms"],
                "throughput_ips": v["throughput_ips"],
                "energy_mj": v["energy_mj"],
                "power_w": v["power_w"],
                "inferences_per_j": _per_joule(v["throughput_ips"], v["power_w"]),
            }
        )
    for _, row in designs.head(MAX_DESIGNS).iterrows():
        power = row.get("power_w", math.nan)
        if (power is None or not np.isfinite(power)) and row.get("latency_ms", 0):
            power = row.get("energy_mj", math.nan) / row["latency_ms"]
        rows.append(
            {
                "name": _design_label(row, param_names),
                "kind": "design",
                "precision": precision,
                "calibration": "",
                "latency_ms": row.get("latency_ms", math.nan),
                "throughput_ips": row.get("throughput_ips", math.nan),
                "energy_mj": row.get("energy_mj", math.nan),
                "power_w": power,
                "inferences_per_j": _per_joule(row.get("throughput_ips", math.nan), power),
            }
        )
    frame = pd.DataFrame(rows)
    gpus = frame[frame["kind"] == GPU_KIND]
    if not gpus.empty:
        frame["latency_vs_best_gpu"] = frame["latency_ms"] / gpus["latency_ms"].min()
        frame["throughput_vs_best_gpu"] = frame["throughput_ips"] / gpus["throughput_ips"].max()
        frame["energy_vs_best_gpu"] = frame["energy_mj"] / gpus["energy_mj"].min()
        frame["perf_per_watt_vs_best_gpu"] = frame["inferences_per_j"] / gpus["inferences_per_j"].max()
    return frame.reindex(columns=list(SUMMARY_COLUMNS))


def _design_seconds_per_cycle(design: pd.Series) -> float:
    cycles = design.get("latency_cycles", math.nan)
    if cycles and np.isfinite(cycles) and cycles > 0:
        return design["latency_ms"] * 1e-3 / cycles
    return math.nan


def layers_frame(
    design: pd.Series | None, design_layers: pd.DataFrame | None, baselines: Sequence[GpuBaseline]
) -> pd.DataFrame:
    """Per-layer latency (us) of one design and every GPU, and the design's ratio to the fastest GPU.

    An op fused into a GPU kernel's epilogue shows 0 us on that GPU: its work is in the kernel named
    in ``gpu_epilogue_of``.
    """
    if not baselines:
        return pd.DataFrame()
    base = pd.DataFrame([layer.row() for layer in baselines[0].metrics.layers])[["layer", "kind"]]
    columns = []
    fused_into: dict[str, str] = {}
    for b in baselines:
        column = f"{b.name}_us"
        columns.append(column)
        clock = b.arch.clock_mhz * 1e6
        base[column] = [layer.cycles / clock * 1e6 for layer in b.metrics.layers]
        for layer in b.metrics.layers:
            op = b.mapping.ops.get(layer.layer)
            kernel = op.payload if op is not None else None
            if isinstance(kernel, GpuKernel) and kernel.fused_into:
                fused_into.setdefault(layer.layer, kernel.fused_into)
    base["gpu_epilogue_of"] = base["layer"].map(fused_into).fillna("")
    base["best_gpu_us"] = base[columns].min(axis=1)
    if design is not None and design_layers is not None and not design_layers.empty:
        per_cycle = _design_seconds_per_cycle(design)
        times = design_layers.set_index("layer")["cycles"] * per_cycle * 1e6
        base["design_us"] = base["layer"].map(times)
        with np.errstate(divide="ignore", invalid="ignore"):
            base["design_vs_best_gpu"] = np.where(
                base["best_gpu_us"] > 0, base["design_us"] / base["best_gpu_us"], np.nan
            )
    return base


# ---------------------------------------------------------------------------------------------------
# Roofline figure
# ---------------------------------------------------------------------------------------------------
def _roof_trace(peak: float, bandwidth: float, name: str, color: str, intensities: np.ndarray) -> go.Scatter:
    return go.Scatter(
        x=intensities,
        y=np.minimum(peak, intensities * bandwidth) / 1e12,
        mode="lines",
        name=f"{name} roof",
        line={"color": color, "width": 2},
        hovertemplate=f"{name}: %{{y:.3g}} TOPS at %{{x:.3g}} ops/B<extra></extra>",
    )


def _points_trace(frame: pd.DataFrame, name: str, color: str) -> go.Scatter:
    return go.Scatter(
        x=frame["intensity"],
        y=frame["achieved"] / 1e12,
        mode="markers",
        name=f"{name} layers",
        marker={"color": color, "size": 7, "opacity": 0.75},
        text=frame["layer"],
        hovertemplate="%{text}: %{y:.3g} TOPS, %{x:.3g} ops/B<extra></extra>",
    )


def _gpu_layer_points(b: GpuBaseline) -> pd.DataFrame:
    rows = []
    for layer in b.metrics.layers:
        seconds = layer.cycles / (b.arch.clock_mhz * 1e6)
        flops = layer.row().get("flops", 2.0 * layer.macs)  # the GPU model's per-layer column
        traffic = layer.dram_read_bytes + layer.dram_write_bytes
        if seconds > 0 and flops > 0 and traffic > 0:
            rows.append({"layer": layer.layer, "intensity": flops / traffic, "achieved": flops / seconds})
    return pd.DataFrame(rows, columns=["layer", "intensity", "achieved"])


def _design_layer_points(design: pd.Series, design_layers: pd.DataFrame) -> pd.DataFrame:
    per_cycle = _design_seconds_per_cycle(design)
    frame = design_layers.copy()
    traffic = frame["dram_read_bytes"] + frame["dram_write_bytes"]
    seconds = frame["cycles"] * per_cycle
    flops = 2.0 * frame["macs"]
    keep = (seconds > 0) & (flops > 0) & (traffic > 0)
    return pd.DataFrame(
        {"layer": frame["layer"][keep], "intensity": (flops / traffic)[keep], "achieved": (flops / seconds)[keep]}
    )


def design_roofline(design: pd.Series, template_kind: str | None) -> tuple[float, float] | None:
    """(peak ops/s, DRAM bytes/s) of a design, from its template's ``Arch.roofline`` where it has one."""
    if template_kind is None or template_kind not in FAMILIES:
        return None
    template = family(template_kind).template()
    names = {p.name for p in template.params()}
    point = {k: design[k] for k in names if k in design.index and _present(design[k])}
    try:
        arch = template.instantiate(point)
    except TemplateError:  # a design the template no longer accepts: draw no roof rather than fail the report
        return None
    roof = arch.roofline()
    return None if roof is None else (roof.peak_ops_per_s, roof.dram_bytes_per_s)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def roofline_figure(
    baselines: Sequence[GpuBaseline],
    design: pd.Series | None,
    design_layers: pd.DataFrame | None,
    template_kind: str | None = None,
) -> go.Figure:
    """Left: the fastest GPU's roofline with its kernels; right: the knee design's roofline with its layers."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("GPU", "design"), horizontal_spacing=0.1)
    intensities = np.logspace(-2, 4, 120)
    palette = ("#2b5c8a", "#c44e52", "#55a868", "#8172b2", "#ccb974", "#64b5cd")
    for i, b in enumerate(baselines):
        color = palette[i % len(palette)]
        fig.add_trace(_roof_trace(b.arch.peak_flops, b.arch.bytes_per_s, b.display, color, intensities), 1, 1)
        if i == 0:
            fig.add_trace(_points_trace(_gpu_layer_points(b), b.display, color), 1, 1)
    if design is not None and design_layers is not None and not design_layers.empty:
        points = _design_layer_points(design, design_layers)
        roof = design_roofline(design, template_kind)
        if roof is not None:
            fig.add_trace(_roof_trace(roof[0], roof[1], "design", "#d62728", intensities), 1, 2)
        fig.add_trace(_points_trace(points, "design", "#d62728"), 1, 2)
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text="arithmetic intensity [ops / DRAM byte]", row=1, col=col)
        fig.update_yaxes(type="log", title_text="achieved [TOPS]", row=1, col=col)
    fig.update_layout(template="plotly_white", height=460, legend={"orientation": "h", "y": -0.25})
    return fig


def comparison_bar_figure(summary: pd.DataFrame) -> go.Figure:
    """Latency and energy per inference of every design and GPU (log scale)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("latency [ms]", "energy per inference [mJ]"))
    colors = ["#2b5c8a" if k == GPU_KIND else "#d62728" for k in summary["kind"]]
    # Short category labels (the table beside the figure carries every parameter); full names on hover.
    short = [_short_label(name) for name in summary["name"]]
    for col, metric in ((1, "latency_ms"), (2, "energy_mj")):
        fig.add_trace(
            go.Bar(
                x=short,
                y=summary[metric],
                marker_color=colors,
                showlegend=False,
                customdata=summary["name"],
                hovertemplate="%{customdata}<br>%{y:.4g}<extra></extra>",
            ),
            1,
            col,
        )
    fig.update_yaxes(type="log", dtick="D1")
    fig.update_xaxes(tickangle=-30)
    fig.update_layout(template="plotly_white", height=460, margin=dict(b=140))
    return fig


# ---------------------------------------------------------------------------------------------------
# Whole runs
# ---------------------------------------------------------------------------------------------------
def _knee(pareto: pd.DataFrame, objectives: Sequence[Any]) -> pd.Series | None:
    if pareto.empty:
        return None
    knee = knee_point_id(pareto, list(objectives)) if objectives else None
    rows = pareto[pareto["point_id"] == knee] if knee is not None else pareto.head(1)
    return (rows if not rows.empty else pareto.head(1)).iloc[0]


def compare_run(
    spec: Any,
    pareto: pd.DataFrame,
    layers: Mapping[str, pd.DataFrame],
    *,
    baselines: Sequence[str] | None = None,
    param_names: Sequence[str] = (),
    graph: Graph | None = None,
) -> Comparison:
    """The comparison of a run's Pareto designs with the spec's (or the given) baseline GPUs."""
    names = list(baselines) if baselines else list(spec.baselines) or list(DEFAULT_BASELINES)
    graph = graph if graph is not None else build_graph(spec)
    precision = spec.workload.precision
    gpus, notes = evaluate_baselines(graph, names, precision)
    summary = summary_frame(pareto, gpus, precision, param_names)
    knee = _knee(pareto, spec.objective_list())
    knee_layers = layers.get(str(knee["point_id"])) if knee is not None else None
    per_layer = layers_frame(knee, knee_layers, gpus)
    kind = getattr(getattr(spec, "template", None), "kind", None)
    figures = [
        ("fig-compare-bars", comparison_bar_figure(summary)),
        ("fig-compare-roofline", roofline_figure(gpus, knee, knee_layers, kind)),
    ]
    measured = [bool(with_board_power(b.arch).tuning.power) for b in gpus]
    energy = [ENERGY_NOTE] * (not measured or not all(measured)) + [ENERGY_MEASURED_NOTE] * any(measured)
    notes = [*notes, *energy, *calibration_notes(gpus)]
    if kind == FpgaDataflowModel.name:
        notes.append(FPGA_POWER_NOTE)
    if knee is not None:
        notes.append(f"per-layer columns compare the knee design {str(knee['point_id'])[:8]} with each GPU")
    if pareto.empty:
        notes.append("the run has no Pareto designs; only the GPUs are shown")
    return Comparison(workload=graph.name, summary=summary, layers=per_layer, figures=figures, notes=notes)


def calibration_notes(baselines: Sequence[GpuBaseline]) -> list[str]:
    """Per GPU: calibrated on which measurements, or catalog-only; nodes say how they split the work."""
    notes = []
    for b in baselines:
        line = f"{b.display}: {b.arch.calibration}; energy: {energy_source(with_board_power(b.arch).tuning)}"
        if b.arch.gpus > 1:
            line += (
                f"; {b.arch.gpus} GPUs tensor-parallel (Megatron-style: one ring all-reduce per column/row matmul "
                f"pair) over NVLink {b.arch.nvlink_gbps:g} GB/s per direction"
            )
        notes.append(line)
    return notes


def write_comparison(out_dir: Path, comparison: Comparison) -> list[Path]:
    """compare.csv and compare_layers.csv in ``out_dir``, each written atomically like the run's other files."""
    out_dir = Path(out_dir)
    paths = [out_dir / "compare.csv", out_dir / "compare_layers.csv"]
    atomic_write(paths[0], lambda path: comparison.summary.to_csv(path, index=False))
    atomic_write(paths[1], lambda path: comparison.layers.to_csv(path, index=False))
    return paths


def compare_dir(run_dir: Path, baselines: Sequence[str] | None = None) -> Comparison:
    """Load a run directory (store, spec, pareto.csv) and compare its Pareto designs with GPUs."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory; give a run directory written by `dse explore`")
    with open_run(run_dir) as (store, spec):
        pareto_csv = run_dir / "pareto.csv"
        if not pareto_csv.is_file():
            raise UserError(f"{run_dir} has no pareto.csv; run `dse report {run_dir}` first", where=str(run_dir))
        try:
            pareto = pd.read_csv(pareto_csv)
        except pd.errors.EmptyDataError:
            pareto = pd.DataFrame(columns=["point_id"])
        layers = {str(pid): store.layers_frame(str(pid)) for pid in pareto.get("point_id", [])}
    param_names = [d.name for d in spec.design_space().free]
    return compare_run(spec, pareto, layers, baselines=baselines, param_names=param_names)


def format_table(summary: pd.DataFrame) -> str:
    header = (
        f"{'':<2}{'name':<44} {'lat ms':>10} {'inf/s':>11} {'mJ/inf':>10} {'inf/J':>9} {'lat/best':>9} {'E/best':>8}"
        f"  {'tuning':<10}"
    )
    lines = [header]
    for _, r in summary.iterrows():
        tag = "G " if r["kind"] == GPU_KIND else "D "
        calibration = str(r.get("calibration", "") or "")
        tuning = "" if r["kind"] != GPU_KIND else "calibrated" if calibration.startswith("calibrated") else "catalog"
        lines.append(
            f"{tag}{str(r['name'])[:44]:<44} {r['latency_ms']:>10.4g} {r['throughput_ips']:>11.5g} "
            f"{r['energy_mj']:>10.4g} {r['inferences_per_j']:>9.4g} {r['latency_vs_best_gpu']:>9.3g} "
            f"{r['energy_vs_best_gpu']:>8.3g}  {tuning:<10}"
        )
    return "\n".join(lines)


def cmd_compare(args: argparse.Namespace) -> int:
    baselines = [b for part in (args.baselines or []) for b in part.split(",") if b.strip()] or None
    with stops_when_disk_full(Path(args.run_dir)):  # the one full-disk message explore and report give
        comparison = compare_dir(Path(args.run_dir), baselines)
        paths = write_comparison(Path(args.run_dir), comparison)
    print(f"{comparison.workload}: Pareto designs vs GPUs (G = GPU, D = design; ratios to the best GPU)")
    print(format_table(comparison.summary))
    for note in comparison.notes:
        print(f"note: {note}")
    print("wrote " + ", ".join(map(str, paths)))
    return 0
