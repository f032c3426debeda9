"""The exploration report: one self-contained, offline HTML page an architect can read.

Why one file: a run directory is copied around, mailed and opened on laptops without
network access, so plotly.js is embedded once and every figure is drawn from inline JSON.

The page answers, in order: what was explored and how many points worked; what the
trade-off looks like (Pareto front, 3-D view, scatter matrix); how parameters relate to
objectives (parallel coordinates); whether the search converged (hypervolume); where the
time and energy of a chosen design go (per-layer breakdown); the Pareto designs as a table;
and why points failed.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from plotly.subplots import make_subplots

from dse.objectives import Constraint, Objective
from hwmodels.base import METRICS

REQUIRED_POINT_COLUMNS = ("point_id", "seq", "status", "feasible", "pareto")
MAX_LAYER_DESIGNS = 24  # more dropdown entries would spill out of the figure; the closest to the knee are kept
MAX_SPLOM_DIMENSIONS = 6
MAX_RANKED_BARS = 40
MAX_ORDINAL_LEVELS = 8  # numeric params with at most this many values get evenly spaced parcoords ticks

COLOR_FRONT = "#d62728"
COLOR_FEASIBLE = "#1f77b4"
COLOR_INFEASIBLE = "#9e9e9e"
COLOR_KNEE = "#ff9f1c"
COLOR_COMPUTE = "#2b5c8a"
COLOR_STALL = "#c44e52"
# A palette disjoint from the latency colours, so no energy component reads as "compute" or "stall".
ENERGY_COLORS = ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3")
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "svg"}}
TEMPLATE = "plotly_white"

_ENERGY_LAYER_COLUMN = re.compile(r"^energy_(.+)_pj$")
_ENERGY_POINT_COLUMN = re.compile(r"^energy_(.+)_mj$")


# --------------------------------------------------------------------------- formatting helpers


def metric_unit(name: str) -> str:
    """Unit of a metric column: from METRICS, or mJ for the ``energy_<component>_mj`` breakdown."""
    if name in METRICS:
        return METRICS[name][0]
    if _ENERGY_POINT_COLUMN.match(name):
        return "mJ"
    return ""


def metric_label(name: str) -> str:
    unit = metric_unit(name)
    return f"{name} [{unit}]" if unit else name


def format_value(value: object) -> str:
    """Numbers with ~4 significant digits; big counts with thousands separators; NaN as a dash."""
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        if v == 0:
            return "0"
        if 1e4 <= abs(v) < 1e15:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if isinstance(value, str):
        return value
    try:
        if pd.isna(value):  # pd.NA, NaT
            return "—"
    except (TypeError, ValueError):
        pass
    return str(value)


def _is_categorical(series: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)


def _as_bool(series: pd.Series) -> pd.Series:
    """feasible/pareto may arrive as bool, 0/1 or with NaN for failed points; NaN means False."""
    return series.map(lambda v: False if pd.isna(v) else bool(v)).astype(bool)


# --------------------------------------------------------------------------- the data the page is built from


@dataclass
class ReportData:
    """The points split the way every section needs them, computed once."""

    points: pd.DataFrame
    objectives: list[Objective]
    constraints: list[Constraint]
    param_names: list[str]
    ok: pd.DataFrame = field(init=False)
    feasible: pd.DataFrame = field(init=False)
    infeasible: pd.DataFrame = field(init=False)
    front: pd.DataFrame = field(init=False)
    failed: pd.DataFrame = field(init=False)
    knee_id: str | None = field(init=False)

    def __post_init__(self) -> None:
        pts = self.points
        is_ok = pts["status"].astype(str) == "ok"
        feasible = _as_bool(pts["feasible"]) & is_ok
        pareto = _as_bool(pts["pareto"]) & feasible
        self.ok = pts[is_ok]
        self.feasible = pts[feasible]
        self.infeasible = pts[is_ok & ~feasible]
        self.front = pts[pareto]
        self.failed = pts[~is_ok]
        self.knee_id = knee_point_id(self.front, self.objectives)

    @property
    def objective_names(self) -> list[str]:
        return [o.metric for o in self.objectives]


def knee_point_id(front: pd.DataFrame, objectives: Sequence[Objective]) -> str | None:
    """The Pareto design closest to the utopia point once each objective is scaled to [0, 1].

    Why: it is the balanced compromise, a sensible default design to inspect first.
    """
    names = [o.metric for o in objectives]
    usable = front.dropna(subset=names)
    if usable.empty:
        return None
    scaled = np.zeros((len(usable), len(objectives)))
    for j, objective in enumerate(objectives):
        values = np.array([objective.to_min(float(v)) for v in usable[objective.metric]])
        span = values.max() - values.min()
        scaled[:, j] = (values - values.min()) / span if span > 0 else 0.0
    distance = np.sqrt((scaled**2).sum(axis=1))
    return str(usable["point_id"].iloc[int(np.argmin(distance))])


def _violated(row: pd.Series, constraints: Sequence[Constraint]) -> list[str]:
    values = {c.metric: row.get(c.metric, math.nan) for c in constraints}
    return [_constraint_words(c) for c in constraints if c.violation(values) > 0]


def _hover_text(row: pd.Series, data: ReportData, *, extra_metrics: Sequence[str] = ()) -> str:
    """point_id, every parameter, the objectives (and any extra metrics) with units; why infeasible."""
    lines = [f"<b>{html.escape(str(row['point_id']))}</b> (evaluation #{format_value(row['seq'])})"]
    lines += [f"{html.escape(p)} = {html.escape(format_value(row.get(p)))}" for p in data.param_names]
    shown = list(dict.fromkeys([*data.objective_names, *extra_metrics]))
    for name in shown:
        unit = metric_unit(name)
        lines.append(f"<b>{html.escape(name)}</b> = {format_value(row.get(name))} {html.escape(unit)}".rstrip())
    violated = _violated(row, data.constraints)
    if violated:
        lines.append("<i>infeasible: " + html.escape("; ".join(violated)) + "</i>")
    if data.knee_id is not None and str(row["point_id"]) == data.knee_id:
        lines.append("★ knee design")
    return "<br>".join(lines)


def _hover_texts(frame: pd.DataFrame, data: ReportData, **kwargs) -> list[str]:
    return [_hover_text(row, data, **kwargs) for _, row in frame.iterrows()]


def _axis(values: pd.Series, **extra: object) -> dict:
    """Axis settings: log with readable 1-2-5 ticks when positive values span more than a decade.

    Why: a front near the origin is squashed on a linear axis, and plotly's default log ticks
    ("10, 2, 3, ...") are easy to misread.
    """
    finite = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or (finite <= 0).any() or finite.max() / finite.min() <= 10:
        return {"type": "linear", **extra}
    low, high = finite.min(), finite.max()
    exponents = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
    for mantissas in ((1, 2, 5), (1,)):
        ticks = [m * 10.0**k for k in exponents for m in mantissas if low / 1.5 <= m * 10.0**k <= high * 1.5]
        if len(ticks) <= 12:
            break
    return {"type": "log", "tickvals": ticks, "ticktext": [format_value(t) for t in ticks], **extra}


def _axis_title(objective: Objective) -> str:
    better = "lower is better" if objective.direction == "min" else "higher is better"
    return f"{metric_label(objective.metric)} — {better}"


# --------------------------------------------------------------------------- figures


def _front_2d(front: pd.DataFrame, x: Objective, y: Objective) -> pd.DataFrame:
    """The points of ``front`` not dominated on (x, y) alone, sorted by x, to draw the staircase."""
    usable = front.dropna(subset=[x.metric, y.metric])
    xs = np.array([x.to_min(float(v)) for v in usable[x.metric]])
    ys = np.array([y.to_min(float(v)) for v in usable[y.metric]])
    keep = []
    for i in range(len(usable)):
        dominated = np.any((xs <= xs[i]) & (ys <= ys[i]) & ((xs < xs[i]) | (ys < ys[i])))
        keep.append(not dominated)
    return usable[np.array(keep, dtype=bool)].sort_values(x.metric) if len(usable) else usable


def _scatter_trace(frame: pd.DataFrame, data: ReportData, x: str, y: str, **kwargs) -> go.Scatter:
    return go.Scatter(
        x=frame[x].to_numpy(dtype=float),
        y=frame[y].to_numpy(dtype=float),
        mode="markers",
        hovertext=_hover_texts(frame, data),
        hoverinfo="text",
        **kwargs,
    )


def pareto_figure(data: ReportData) -> go.Figure:
    """2-D trade-off of the first two objectives: infeasible grey, feasible faint, the front as a staircase."""
    x, y = data.objectives[0], data.objectives[1]
    fig = go.Figure()
    drop = [x.metric, y.metric]
    infeasible = data.infeasible.dropna(subset=drop)
    feasible_rest = data.feasible[~data.feasible["point_id"].isin(data.front["point_id"])].dropna(subset=drop)
    front = data.front.dropna(subset=drop)
    if len(infeasible):
        fig.add_trace(
            _scatter_trace(
                infeasible,
                data,
                x.metric,
                y.metric,
                name=f"infeasible ({len(infeasible)})",
                marker={"color": COLOR_INFEASIBLE, "size": 7, "opacity": 0.6, "symbol": "x"},
            )
        )
    if len(feasible_rest):
        fig.add_trace(
            _scatter_trace(
                feasible_rest,
                data,
                x.metric,
                y.metric,
                name=f"feasible, dominated ({len(feasible_rest)})",
                marker={"color": COLOR_FEASIBLE, "size": 7, "opacity": 0.35},
            )
        )
    staircase = _front_2d(front, x, y)
    if len(staircase) > 1:
        fig.add_trace(
            go.Scatter(
                x=staircase[x.metric].to_numpy(dtype=float),
                y=staircase[y.metric].to_numpy(dtype=float),
                mode="lines",
                line={"color": COLOR_FRONT, "width": 2, "shape": "hv" if x.direction == "min" else "vh"},
                name="front (step line)",
                hoverinfo="skip",
            )
        )
    if len(front):
        fig.add_trace(
            _scatter_trace(
                front,
                data,
                x.metric,
                y.metric,
                name=f"Pareto front ({len(front)})",
                marker={"color": COLOR_FRONT, "size": 10, "line": {"color": "white", "width": 1}},
            )
        )
    knee = front[front["point_id"].astype(str) == data.knee_id] if data.knee_id else front.iloc[0:0]
    if len(knee):
        fig.add_trace(
            _scatter_trace(
                knee,
                data,
                x.metric,
                y.metric,
                name="knee design",
                marker={"color": COLOR_KNEE, "size": 18, "symbol": "star", "line": {"color": "black", "width": 1}},
            )
        )
    subtitle = ""
    if len(data.objectives) > 2:
        subtitle = " (projection; the front is over all objectives, the step line over these two)"
    fig.update_layout(
        title=f"Trade-off: {x.metric} vs {y.metric}{subtitle}",
        xaxis=_axis(data.ok[x.metric], title=_axis_title(x)),
        yaxis=_axis(data.ok[y.metric], title=_axis_title(y)),
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        showlegend=True,  # even with one trace (e.g. no feasible point), say what the markers are
        height=560,
        margin={"t": 90},
    )
    return fig


def pareto_3d_figure(data: ReportData) -> go.Figure:
    """The first three objectives in 3-D, rotatable; front highlighted."""
    a, b, c = data.objectives[:3]
    names = [a.metric, b.metric, c.metric]
    fig = go.Figure()
    groups = [
        (data.infeasible, "infeasible", {"color": COLOR_INFEASIBLE, "size": 3, "opacity": 0.3}),
        (
            data.feasible[~data.feasible["point_id"].isin(data.front["point_id"])],
            "feasible, dominated",
            {"color": COLOR_FEASIBLE, "size": 3, "opacity": 0.4},
        ),
        (data.front, "Pareto front", {"color": COLOR_FRONT, "size": 4}),
    ]
    for frame, name, marker in groups:
        frame = frame.dropna(subset=names)
        if frame.empty:
            continue
        fig.add_trace(
            go.Scatter3d(
                x=frame[a.metric].to_numpy(dtype=float),
                y=frame[b.metric].to_numpy(dtype=float),
                z=frame[c.metric].to_numpy(dtype=float),
                mode="markers",
                marker=marker,
                name=f"{name} ({len(frame)})",
                hovertext=_hover_texts(frame, data),
                hoverinfo="text",
            )
        )
    scene = {
        axis: _axis(data.ok[o.metric], title={"text": metric_label(o.metric)})
        for axis, o in zip(("xaxis", "yaxis", "zaxis"), (a, b, c))
    }
    fig.update_layout(
        title=f"3-D view: {a.metric}, {b.metric}, {c.metric}",
        scene=scene,
        height=620,
        legend={"orientation": "h", "y": 1.02, "x": 0},
        margin={"l": 0, "r": 0, "t": 70, "b": 0},
    )
    return fig


def scatter_matrix_figure(data: ReportData) -> go.Figure:
    """Every pair of objectives at a glance; the front in red."""
    names = data.objective_names[:MAX_SPLOM_DIMENSIONS]
    fig = go.Figure()
    groups = [
        (data.infeasible, "infeasible", COLOR_INFEASIBLE, 0.3, 4),
        (data.feasible[~data.feasible["point_id"].isin(data.front["point_id"])], "feasible", COLOR_FEASIBLE, 0.4, 5),
        (data.front, "Pareto front", COLOR_FRONT, 0.9, 7),
    ]
    for frame, name, color, opacity, size in groups:
        frame = frame.dropna(subset=names)
        if frame.empty:
            continue
        fig.add_trace(
            go.Splom(
                dimensions=[{"label": metric_label(n), "values": frame[n].to_numpy(dtype=float)} for n in names],
                marker={"color": color, "opacity": opacity, "size": size},
                name=f"{name} ({len(frame)})",
                hovertext=[str(p) for p in frame["point_id"]],
                diagonal={"visible": False},
                showupperhalf=False,
            )
        )
    fig.update_layout(
        title="Scatter matrix of the objectives",
        height=230 * len(names) + 80,
        dragmode="select",
        legend={"orientation": "h", "y": 1.04, "x": 0},
    )
    return fig


def single_objective_figures(data: ReportData) -> list[tuple[str, go.Figure]]:
    """With one objective there is no front: show progress over evaluations and the best designs ranked."""
    objective = data.objectives[0]
    name = objective.metric
    progress = go.Figure()
    infeasible = data.infeasible.dropna(subset=[name])
    feasible = data.feasible.dropna(subset=[name]).sort_values("seq")
    if len(infeasible):
        progress.add_trace(
            _scatter_trace(
                infeasible,
                data,
                "seq",
                name,
                name=f"infeasible ({len(infeasible)})",
                marker={"color": COLOR_INFEASIBLE, "size": 7, "opacity": 0.6, "symbol": "x"},
            )
        )
    if len(feasible):
        progress.add_trace(
            _scatter_trace(
                feasible,
                data,
                "seq",
                name,
                name=f"feasible ({len(feasible)})",
                marker={"color": COLOR_FEASIBLE, "size": 7, "opacity": 0.6},
            )
        )
        values = feasible[name].to_numpy(dtype=float)
        running = np.minimum.accumulate(values) if objective.direction == "min" else np.maximum.accumulate(values)
        progress.add_trace(
            go.Scatter(
                x=feasible["seq"].to_numpy(dtype=float),
                y=running,
                mode="lines",
                line={"color": COLOR_FRONT, "shape": "hv", "width": 2},
                name="best so far",
            )
        )
    progress.update_layout(
        title=f"{name} over the evaluations",
        xaxis={"title": "evaluation #"},
        yaxis=_axis(data.ok[name], title=_axis_title(objective)),
        height=480,
        showlegend=True,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    figures = [("fig-objective-progress", progress)]
    if len(feasible):
        ranked = feasible.sort_values(name, ascending=objective.direction == "min").head(MAX_RANKED_BARS)
        best = set(data.front["point_id"].astype(str))
        ranked_ids = ranked["point_id"].astype(str)
        bars = go.Figure(
            go.Bar(
                x=ranked["point_id"].astype(str),
                y=ranked[name].to_numpy(dtype=float),
                marker={"color": [COLOR_FRONT if p in best else COLOR_FEASIBLE for p in ranked_ids]},
                hovertext=_hover_texts(ranked, data),
                hoverinfo="text",
            )
        )
        bars.update_layout(
            title=f"The {len(ranked)} best feasible designs by {name} (best in red)",
            xaxis={"title": "design", "type": "category"},
            yaxis={"title": _axis_title(objective)},
            height=440,
        )
        figures.append(("fig-objective-ranked", bars))
    return figures


def _parcoords_dimension(label: str, series: pd.Series, *, is_param: bool = False) -> dict:
    """A numeric axis, or integer codes with the category names as tick labels.

    Numeric parameters with few distinct values (array sizes 16/32/64/128) are spaced evenly too:
    a linear axis would crowd the small values together.
    """
    few_levels = (
        is_param and pd.api.types.is_numeric_dtype(series) and series.nunique(dropna=False) <= MAX_ORDINAL_LEVELS
    )
    if _is_categorical(series) or few_levels:
        if few_levels and not pd.api.types.is_bool_dtype(series):
            levels = sorted(series.dropna().unique())
            order = {format_value(v): i for i, v in enumerate(levels)}
            labels = series.map(format_value)
            categories = sorted(labels.unique(), key=lambda c: order.get(c, len(order)))
        else:
            labels = series.map(lambda v: format_value(v) if not isinstance(v, str) else v)
            categories = sorted(labels.unique(), key=str)
        codes = labels.map({c: i for i, c in enumerate(categories)}).to_numpy(dtype=float)
        return {
            "label": label,
            "values": codes,
            "tickvals": list(range(len(categories))),
            "ticktext": [str(c) for c in categories],
            "range": [-0.5, len(categories) - 0.5] if len(categories) == 1 else [0, len(categories) - 1],
        }
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    dimension: dict = {"label": label, "values": values}
    low, high = np.nanmin(values), np.nanmax(values)
    if low == high:  # a constant axis still needs a range to draw
        pad = abs(low) * 0.1 or 1.0
        dimension["range"] = [low - pad, high + pad]
    return dimension


def parallel_coordinates_figure(data: ReportData) -> tuple[go.Figure, int]:
    """All ok points across params and objectives, coloured by the first objective. Returns (figure, dropped)."""
    first = data.objectives[0]
    numeric_needed = [n for n in data.objective_names] + [
        p for p in data.param_names if not _is_categorical(data.ok[p])
    ]
    frame = data.ok.dropna(subset=numeric_needed)
    dropped = len(data.ok) - len(frame)
    dimensions = [_parcoords_dimension(p, frame[p], is_param=True) for p in data.param_names]
    dimensions += [_parcoords_dimension(metric_label(n), frame[n]) for n in data.objective_names]
    extra_constraint_metrics = [
        c.metric for c in data.constraints if c.metric not in data.objective_names and c.metric in frame.columns
    ]
    for metric in dict.fromkeys(extra_constraint_metrics):
        if frame[metric].notna().all():
            dimensions.append(_parcoords_dimension(metric_label(metric) + " (constraint)", frame[metric]))
    front_ids = set(data.front["point_id"].astype(str))
    dimensions.append(_parcoords_dimension("feasible", _as_bool(frame["feasible"])))
    dimensions.append(_parcoords_dimension("Pareto", frame["point_id"].astype(str).isin(front_ids)))
    colors = frame[first.metric].to_numpy(dtype=float)
    fig = go.Figure(
        go.Parcoords(
            dimensions=dimensions,
            line={
                "color": colors,
                "colorscale": "Viridis",
                "reversescale": first.direction == "min",  # better designs are always the bright end
                "showscale": True,
                "colorbar": {"title": {"text": metric_label(first.metric)}},
            },
            labelangle=-20,
            labelside="top",
        )
    )
    fig.update_layout(
        title=f"Parameters and objectives of the {len(frame)} successful points (colour: {first.metric})",
        height=560,
        margin={"l": 70, "r": 40, "t": 130, "b": 40},
    )
    return fig, dropped


def hypervolume_figure(hypervolume: pd.DataFrame) -> go.Figure:
    """Hypervolume and front size over evaluations: a flat curve means the search has converged."""
    hv = hypervolume.sort_values("seq")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Scatter(
            x=hv["seq"].to_numpy(dtype=float),
            y=hv["hypervolume"].to_numpy(dtype=float),
            mode="lines+markers",
            marker={"size": 4},
            line={"color": COLOR_FEASIBLE, "width": 2},
            name="hypervolume",
        ),
        secondary_y=False,
    )
    if "front_size" in hv.columns:
        fig.add_trace(
            go.Scatter(
                x=hv["seq"].to_numpy(dtype=float),
                y=hv["front_size"].to_numpy(dtype=float),
                mode="lines",
                line={"color": COLOR_FRONT, "shape": "hv", "dash": "dot"},
                name="front size",
            ),
            secondary_y=True,
        )
    fig.update_layout(
        title="Search progress: hypervolume and Pareto-front size",
        height=420,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        margin={"t": 90},
    )
    fig.update_xaxes(title_text="evaluation #")
    fig.update_yaxes(title_text="hypervolume (normalised objectives)", secondary_y=False)
    fig.update_yaxes(
        title_text="Pareto designs",
        secondary_y=True,
        rangemode="tozero",
        tickmode="auto",
        tickformat="d",
        showgrid=False,
    )
    return fig


def _energy_scale(frames: Sequence[pd.DataFrame]) -> tuple[float, str]:
    """One energy unit for every design, chosen so the biggest layer reads as a small number."""
    peak = 0.0
    for frame in frames:
        columns = [c for c in frame.columns if _ENERGY_LAYER_COLUMN.match(c)] or ["energy_pj"]
        stacked = frame[[c for c in columns if c in frame.columns]].sum(axis=1, numeric_only=True)
        if len(stacked):
            peak = max(peak, float(np.nanmax(stacked.to_numpy(dtype=float))))
    for factor, unit in ((1e9, "mJ"), (1e6, "µJ"), (1e3, "nJ")):
        if peak >= factor:
            return factor, unit
    return 1.0, "pJ"


def _design_label(row: pd.Series, data: ReportData) -> str:
    values = ", ".join(f"{o.metric}={format_value(row.get(o.metric))}" for o in data.objectives[:2])
    tag = "knee" if len(data.objectives) > 1 else "best"
    star = f" ★ {tag}" if str(row["point_id"]) == data.knee_id else ""
    return f"{row['point_id']}{star} ({values})"


def _design_title(row: pd.Series, frame: pd.DataFrame, data: ReportData) -> str:
    """Which design, its parameters, and the totals the bars add up to (with the stall share)."""
    params = ", ".join(f"{p}={format_value(row.get(p))}" for p in data.param_names)
    cycles = float(frame["cycles"].sum())
    stall = float(frame["stall_cycles"].sum())
    stall_share = f" ({stall / cycles:.0%} stalled)" if cycles > 0 else ""
    energy = float(frame["energy_pj"].sum()) * 1e-9
    return (
        f"<b>{html.escape(str(row['point_id']))}</b>: {html.escape(params)}<br>"
        f"<span style='font-size:12px'>{format_value(cycles)} cycles{stall_share}, "
        f"{format_value(energy)} mJ over {len(frame)} layers</span>"
    )


def layer_breakdown_figure(data: ReportData, layers: Mapping[str, pd.DataFrame]) -> tuple[go.Figure, int] | None:
    """Stacked per-layer latency (compute vs stall) and energy by component; a dropdown picks the design.

    Returns (figure, number of designs offered) or None when no Pareto design has layer data.
    """
    with_layers = [str(k) for k, frame in layers.items() if not frame.empty]  # predicted points have none
    candidates = data.front[data.front["point_id"].astype(str).isin(with_layers)]
    if candidates.empty:
        return None
    # Keep the designs nearest the knee first so the dropdown opens on the one worth reading.
    order = _distance_to_knee(candidates, data)
    candidates = candidates.iloc[np.argsort(order, kind="stable")].head(MAX_LAYER_DESIGNS)
    frames = [layers[str(pid)] for pid in candidates["point_id"]]
    factor, unit = _energy_scale(frames)
    components = list(
        dict.fromkeys(m.group(1) for f in frames for c in f.columns if (m := _ENERGY_LAYER_COLUMN.match(c)))
    )
    color_of = {comp: ENERGY_COLORS[i % len(ENERGY_COLORS)] for i, comp in enumerate(components)}

    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("Latency per layer [cycles]", f"Energy per layer [{unit}]"),
    )
    trace_owner: list[int] = []
    for design_index, frame in enumerate(frames):
        visible = design_index == 0
        layer_names = frame["layer"].astype(str).to_numpy()
        custom = np.stack(
            [
                frame["kind"].astype(str).to_numpy(),
                [format_value(v) for v in frame["utilization"]],
                [format_value(v) for v in frame["macs"]],
                [format_value(v) for v in frame["cycles"]],
            ],
            axis=-1,
        )
        hover_cycles = (
            "<b>%{x}</b> (%{customdata[0]})<br>%{fullData.name}: %{y:,.0f} cycles"
            "<br>total %{customdata[3]} cycles, utilization %{customdata[1]}, MACs %{customdata[2]}<extra></extra>"
        )
        for column, label, color in (
            ("compute_cycles", "compute", COLOR_COMPUTE),
            ("stall_cycles", "stall (memory)", COLOR_STALL),
        ):
            fig.add_trace(
                go.Bar(
                    x=layer_names,
                    y=frame[column].to_numpy(dtype=float),
                    name=label,
                    legendgroup=label,
                    marker={"color": color},
                    customdata=custom,
                    hovertemplate=hover_cycles,
                    visible=visible,
                ),
                row=1,
                col=1,
            )
            trace_owner.append(design_index)
        design_components = [c for c in components if f"energy_{c}_pj" in frame.columns]
        if design_components:
            energy_series = [(c, frame[f"energy_{c}_pj"]) for c in design_components]
        else:  # no breakdown: one bar of the total
            energy_series = [("total", frame["energy_pj"])]
        for component, series in energy_series:
            fig.add_trace(
                go.Bar(
                    x=layer_names,
                    y=series.to_numpy(dtype=float) / factor,
                    name=f"energy: {component}",
                    legendgroup=f"energy: {component}",
                    marker={"color": color_of.get(component, "#555555")},
                    customdata=custom,
                    hovertemplate=f"<b>%{{x}}</b> (%{{customdata[0]}})<br>{html.escape(component)}: "
                    f"%{{y:.4g}} {unit}<extra></extra>",
                    visible=visible,
                ),
                row=2,
                col=1,
            )
            trace_owner.append(design_index)

    buttons = []
    for design_index in range(len(frames)):
        row = candidates.iloc[design_index]
        buttons.append(
            {
                "label": _design_label(row, data),
                "method": "update",
                "args": [
                    {"visible": [owner == design_index for owner in trace_owner]},
                    {"title.text": _design_title(row, frames[design_index], data)},
                ],
            }
        )
    longest_layer_count = max(len(f) for f in frames)
    fig.update_layout(
        title={"text": _design_title(candidates.iloc[0], frames[0], data), "y": 0.975, "yanchor": "top"},
        barmode="stack",
        height=760,
        margin={"t": 150, "b": 120},
        legend={"orientation": "v", "x": 1.01, "y": 1.0},
        updatemenus=[
            {
                "buttons": buttons,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.15,
                "yanchor": "top",
                "showactive": True,
                "active": 0,
                "bgcolor": "#f4f6fa",
            }
        ],
    )
    fig.update_xaxes(tickangle=-45 if longest_layer_count > 8 else 0, type="category", row=2, col=1)
    fig.update_yaxes(title_text="cycles", row=1, col=1)
    fig.update_yaxes(title_text=unit, row=2, col=1)
    return fig, len(frames)


def _distance_to_knee(frame: pd.DataFrame, data: ReportData) -> np.ndarray:
    """Distance in normalised objective space to the knee (0 for the knee itself)."""
    if data.knee_id is None or data.knee_id not in set(frame["point_id"].astype(str)):
        return np.arange(len(frame), dtype=float)
    scaled = []
    for objective in data.objectives:
        values = frame[objective.metric].to_numpy(dtype=float)
        span = np.nanmax(values) - np.nanmin(values)
        scaled.append((values - np.nanmin(values)) / span if span > 0 else np.zeros_like(values))
    matrix = np.nan_to_num(np.stack(scaled, axis=1), nan=1e9)
    knee_row = matrix[(frame["point_id"].astype(str) == data.knee_id).to_numpy()][0]
    return np.sqrt(((matrix - knee_row) ** 2).sum(axis=1))


# --------------------------------------------------------------------------- HTML pieces


def _figure_html(fig: go.Figure, div_id: str) -> str:
    """A div plus the one inline call that draws it; the JSON is escaped so it cannot close the script tag."""
    fig.update_layout(
        template=TEMPLATE, autosize=True, font={"family": "Inter, Segoe UI, Helvetica, Arial, sans-serif", "size": 12}
    )
    height = fig.layout.height or 500
    spec = pio.to_json(fig, validate=False).replace("</", "<\\/")
    config = json.dumps(PLOT_CONFIG)
    return (
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{int(height)}px; width:100%;"></div>\n'
        f"<script>(function () {{ var fig = {spec};\n"
        f'Plotly.newPlot("{div_id}", fig.data, fig.layout, {config}); }})();</script>'
    )


def _table_html(frame: pd.DataFrame, columns: Sequence[tuple[str, str]], *, row_class=None) -> str:
    """An HTML table; ``columns`` are (column, header) pairs; cells formatted with format_value."""
    head = "".join(f"<th>{html.escape(header)}</th>" for _, header in columns)
    body = []
    for _, row in frame.iterrows():
        cls = row_class(row) if row_class else ""
        cells = []
        for column, _ in columns:
            value = row.get(column)
            numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            cells.append(f'<td class="{"num" if numeric else "txt"}">{html.escape(format_value(value))}</td>')
        body.append(f"<tr{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _metric_columns(points: pd.DataFrame, objectives: Sequence[str]) -> list[str]:
    """Objectives first, then every other METRICS column, then the energy breakdown, if present and not all NaN."""
    present = [m for m in METRICS if m in points.columns and points[m].notna().any()]
    breakdown = sorted(c for c in points.columns if _ENERGY_POINT_COLUMN.match(c) and points[c].notna().any())
    return list(dict.fromkeys([*objectives, *present, *breakdown]))


def pareto_table_html(data: ReportData) -> str:
    if data.front.empty:
        return '<p class="empty">No Pareto designs: no point was both evaluated successfully and feasible.</p>'
    metrics = _metric_columns(data.front, data.objective_names)
    first = data.objectives[0]
    front = data.front.sort_values(first.metric, ascending=first.direction == "min")
    columns = [("point_id", "design"), ("seq", "eval #")]
    columns += [(p, p) for p in data.param_names]
    columns += [(m, metric_label(m)) for m in metrics]
    table = _table_html(front, columns, row_class=lambda r: "knee" if str(r["point_id"]) == data.knee_id else "")
    return f'<div class="table-wrap">{table}</div>'


def failure_table_html(data: ReportData) -> str:
    if data.failed.empty:
        return '<p class="empty">No point failed.</p>'
    reasons = data.failed["reason"].fillna("(no reason given)").astype(str).str.strip()
    reasons = reasons.replace("", "(no reason given)")
    grouped = (
        pd.DataFrame({"reason": reasons, "point_id": data.failed["point_id"].astype(str)})
        .groupby("reason", sort=False)["point_id"]
        .agg(count="count", examples=lambda s: ", ".join(s.head(3)))
        .reset_index()
        .sort_values(["count", "reason"], ascending=[False, True])
    )
    table = _table_html(grouped, [("count", "points"), ("reason", "reason"), ("examples", "examples")])
    return f'<div class="table-wrap">{table}</div>'


def _count_violators(frame: pd.DataFrame, constraint: Constraint) -> int:
    """Points outside the bound or without a value (as Constraint.violation sees it), vectorised."""
    if constraint.metric not in frame.columns:
        return len(frame)
    values = pd.to_numeric(frame[constraint.metric], errors="coerce")
    outside = values.isna()
    if constraint.high is not None:
        outside |= values > constraint.high
    if constraint.low is not None:
        outside |= values < constraint.low
    return int(outside.sum())


def _constraint_words(constraint: Constraint) -> str:
    unit = metric_unit(constraint.metric)
    parts = []
    if constraint.low is not None:
        parts.append(f"≥ {format_value(float(constraint.low))} {unit}".rstrip())
    if constraint.high is not None:
        parts.append(f"≤ {format_value(float(constraint.high))} {unit}".rstrip())
    bound = " and ".join(parts) if parts else "unbounded"
    return f"{constraint.metric} {bound}"


def _header_html(data: ReportData, title: str, notes: Sequence[str]) -> str:
    counts = [
        ("evaluated", len(data.points), ""),
        ("succeeded", len(data.ok), ""),
        ("feasible", len(data.feasible), "good" if len(data.feasible) else "bad"),
        ("failed", len(data.failed), "bad" if len(data.failed) else ""),
        ("Pareto designs", len(data.front), "front"),
    ]
    cards = "".join(
        f'<div class="card {cls}"><div class="count">{n:,}</div><div class="label">{html.escape(label)}</div></div>'
        for label, n, cls in counts
    )
    notes_html = "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
    objectives_html = "".join(
        f"<li><b>{'minimise' if o.direction == 'min' else 'maximise'} {html.escape(o.metric)}</b>"
        f"{' [' + html.escape(metric_unit(o.metric)) + ']' if metric_unit(o.metric) else ''}"
        f"{' — ' + html.escape(METRICS[o.metric][2]) if o.metric in METRICS else ''}</li>"
        for o in data.objectives
    )
    constraint_items = []
    for c in data.constraints:
        violators = _count_violators(data.ok, c)
        constraint_items.append(
            f"<li><b>{html.escape(_constraint_words(c))}</b> — violated by {violators:,} of "
            f"{len(data.ok):,} successful points</li>"
        )
    constraints_html = "".join(constraint_items) or "<li>none</li>"
    parts = [
        f"<header><h1>{html.escape(title)}</h1>",
        f'<ul class="notes">{notes_html}</ul>' if notes_html else "",
        f'<div class="cards">{cards}</div>',
        '<div class="goals"><div><h3>Objectives</h3><ul>',
        objectives_html,
        "</ul></div><div><h3>Constraints</h3><ul>",
        constraints_html,
        "</ul></div></div>",
    ]
    if data.ok.empty:
        parts.append(
            '<div class="banner bad">No point was evaluated successfully, so there is nothing to plot. '
            "The failure reasons are listed at the bottom of the page.</div>"
        )
    elif data.feasible.empty:
        parts.append(
            f'<div class="banner bad"><b>No feasible design.</b> All {len(data.ok):,} successful points violate '
            "at least one constraint (counts above). Relax a constraint or widen the parameter ranges; the "
            "infeasible points are still plotted in grey below.</div>"
        )
    if data.knee_id is not None:
        knee = data.front[data.front["point_id"].astype(str) == data.knee_id].iloc[0]
        params = ", ".join(f"{p} = {format_value(knee.get(p))}" for p in data.param_names)
        values = ", ".join(
            f"{o.metric} = {format_value(knee.get(o.metric))} {metric_unit(o.metric)}".rstrip() for o in data.objectives
        )
        what = "Knee design (the balanced compromise)" if len(data.objectives) > 1 else "Best design"
        parts.append(
            f'<div class="banner knee"><b>{what}: {html.escape(data.knee_id)}</b><br>'
            f"{html.escape(params)}<br>{html.escape(values)}</div>"
        )
    parts.append("</header>")
    return "".join(parts)


_CSS = """
:root { --ink:#1d2433; --muted:#5b6475; --line:#e3e7ee; --front:#d62728; --knee:#ff9f1c; }
* { box-sizing: border-box; }
body { margin:0; font-family: Inter, "Segoe UI", Helvetica, Arial, sans-serif; color:var(--ink); background:#f6f7fb; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 60px; }
header h1 { margin: 0 0 6px; font-size: 26px; }
ul.notes { margin: 4px 0 14px; padding-left: 18px; color: var(--muted); }
nav { position: sticky; top: 0; z-index: 10; background: #1d2433; padding: 8px 28px; }
nav a { color: #dfe6f3; margin-right: 18px; text-decoration: none; font-size: 14px; }
nav a:hover { color: #fff; text-decoration: underline; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 10px 0 16px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 18px; min-width: 130px; }
.card .count { font-size: 26px; font-weight: 700; }
.card .label { color: var(--muted); font-size: 13px; }
.card.good .count { color: #2e7d32; } .card.bad .count { color: #b71c1c; } .card.front .count { color: var(--front); }
.goals { display: flex; gap: 40px; flex-wrap: wrap; }
.goals h3 { margin: 6px 0 4px; font-size: 15px; }
.goals ul { margin: 0; padding-left: 18px; }
.banner { margin: 14px 0 0; padding: 10px 14px; border-radius: 6px; border-left: 5px solid; background: #fff; }
.banner.bad { border-color: #b71c1c; background: #fdecea; }
.banner.knee { border-color: var(--knee); background: #fff7e8; }
section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 20px; margin-top: 22px; }
section h2 { margin: 0 0 4px; font-size: 20px; }
p.how { margin: 0 0 10px; color: var(--muted); font-size: 14px; }
p.empty { color: var(--muted); font-style: italic; }
.table-wrap { overflow: auto; max-height: 640px; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; font-size: 13px; width: max-content; min-width: 100%; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { position: sticky; top: 0; background: #eef1f7; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.knee td { background: #fff3d6; font-weight: 600; }
tbody tr:hover td { background: #f0f5ff; }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
"""


@dataclass
class _Section:
    anchor: str
    heading: str
    how_to_read: str
    body: str


def _sections(data: ReportData, layers: Mapping[str, pd.DataFrame], hypervolume: pd.DataFrame | None) -> list[_Section]:
    sections: list[_Section] = []
    if not data.ok.empty:
        if len(data.objectives) >= 2:
            body = _figure_html(pareto_figure(data), "fig-pareto")
            how = (
                "Each marker is one design. Red markers are the Pareto designs (no other feasible design is better "
                "on every objective); the red step line joins them. Faint blue: feasible but dominated. Grey crosses: "
                "violate a constraint. The star is the knee design. Hover for parameters and values."
            )
            if len(data.objectives) >= 3:
                body += _figure_html(pareto_3d_figure(data), "fig-pareto-3d")
                body += _figure_html(scatter_matrix_figure(data), "fig-scatter-matrix")
                how += " With three or more objectives a rotatable 3-D view and a scatter matrix follow."
            sections.append(_Section("tradeoff", "Trade-off", how, body))
        else:
            body = "".join(_figure_html(fig, div_id) for div_id, fig in single_objective_figures(data))
            how = (
                f"One objective ({data.objectives[0].metric}), so there is no trade-off curve: the first chart shows "
                "every evaluation and the best feasible value found so far, the second ranks the best designs."
            )
            sections.append(_Section("tradeoff", "Objective", how, body))

        parcoords, dropped = parallel_coordinates_figure(data)
        how = (
            "One line per successful design, across its parameters and objectives; drag along an axis to filter "
            "(e.g. select Pareto = yes). Categorical parameters are shown with their names as ticks."
        )
        if dropped:
            how += f" {dropped} point(s) with missing values are not drawn."
        sections.append(_Section("space", "Design space", how, _figure_html(parcoords, "fig-parcoords")))

    if hypervolume is not None and not hypervolume.empty:
        how = (
            "Hypervolume of the feasible front after each evaluation (higher is better); when it stops rising the "
            "search has converged. The dotted line counts the Pareto designs."
        )
        body = _figure_html(hypervolume_figure(hypervolume), "fig-hypervolume")
        sections.append(_Section("progress", "Search progress", how, body))

    if not data.front.empty:
        result = layer_breakdown_figure(data, layers)
        if result is None:
            body = '<p class="empty">No per-layer data was recorded for the Pareto designs.</p>'
            how = ""
        else:
            fig, offered = result
            body = _figure_html(fig, "fig-layers")
            how = (
                "Where the time and the energy of one design go, layer by layer. Top: cycles, split into compute and "
                "stalls waiting for memory. Bottom: energy by component. Use the menu to switch design; it opens on "
                "the knee design."
            )
            if offered < len(data.front):
                how += f" The {offered} Pareto designs closest to the knee are offered."
        sections.append(_Section("layers", "Per-layer breakdown", how, body))

    how = "Sorted by the first objective; the knee design is highlighted. Units in brackets."
    sections.append(_Section("pareto", f"Pareto designs ({len(data.front)})", how, pareto_table_html(data)))
    how = "Points whose evaluation raised an error, grouped by reason." if len(data.failed) else ""
    sections.append(_Section("failures", f"Failed points ({len(data.failed)})", how, failure_table_html(data)))
    return sections


_COMPARISON_COLUMNS = (
    ("name", "design / GPU"),
    ("precision", "precision"),
    ("latency_ms", "latency [ms]"),
    ("throughput_ips", "throughput [inf/s]"),
    ("energy_mj", "energy [mJ/inf]"),
    ("power_w", "power [W]"),
    ("inferences_per_j", "inf/J"),
    ("latency_vs_best_gpu", "latency / best GPU"),
    ("energy_vs_best_gpu", "energy / best GPU"),
    ("perf_per_watt_vs_best_gpu", "perf/W / best GPU"),
)


def comparison_section(comparison) -> _Section:
    """GPU baselines (a ``dse.compare.Comparison``): table, bars, rooflines side by side, per-layer table."""
    summary = comparison.summary
    table = _table_html(
        summary,
        [c for c in _COMPARISON_COLUMNS if c[0] in summary.columns],
        row_class=lambda row: "" if row["kind"] == "gpu" else "knee",
    )
    body = f'<div class="table-wrap">{table}</div>'
    body += "".join(_figure_html(fig, div_id) for div_id, fig in comparison.figures)
    if not comparison.layers.empty:
        layer_columns = [(c, c) for c in comparison.layers.columns]
        layer_table = _table_html(comparison.layers, layer_columns)
        body += f'<h3>Per layer</h3><div class="table-wrap">{layer_table}</div>'
    how = (
        "The Pareto designs (highlighted) next to the baseline GPUs on the same workload; ratios are to the best "
        "GPU on each figure (latency and energy: below 1 beats it; perf/W: above 1 beats it). "
        + " ".join(note.rstrip(".") + "." for note in comparison.notes)
    )
    return _Section("gpus", "GPU baselines", how, body)


def _check_inputs(points: pd.DataFrame, objectives: Sequence[Objective], param_names: Sequence[str]) -> None:
    if not objectives:
        raise ValueError("write_report: at least one objective is required to build a report")
    needed = [*REQUIRED_POINT_COLUMNS, *param_names, *(o.metric for o in objectives)]
    missing = [c for c in dict.fromkeys(needed) if c not in points.columns]
    if missing:
        raise ValueError(
            f"write_report: the points frame lacks column(s) {missing}; it has {sorted(map(str, points.columns))}"
        )


def render_report(
    points: pd.DataFrame,
    *,
    title: str,
    objectives: list[Objective],
    constraints: list[Constraint],
    param_names: list[str],
    layers: Mapping[str, pd.DataFrame],
    hypervolume: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
    comparison: object | None = None,
) -> str:
    """The report as an HTML string (see write_report)."""
    _check_inputs(points, objectives, param_names)
    if "reason" not in points.columns:
        points = points.assign(reason=None)
    data = ReportData(points.reset_index(drop=True), list(objectives), list(constraints), list(param_names))
    sections = _sections(data, {str(k): v for k, v in layers.items()}, hypervolume)
    if comparison is not None:
        sections.insert(len(sections) - 2, comparison_section(comparison))
    nav = "".join(f'<a href="#{s.anchor}">{html.escape(s.heading.split(" (")[0])}</a>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{html.escape(s.heading)}</h2>'
        f"{f'<p class=how>{html.escape(s.how_to_read)}</p>' if s.how_to_read else ''}{s.body}</section>"
        for s in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style>\n"
        f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>\n'
        f"</head><body><nav>{nav}</nav><main>{_header_html(data, title, notes)}{body}"
        f"<footer>Generated by dse · plotly.js embedded, works offline.</footer></main></body></html>\n"
    )


def write_report(
    path: Path,
    points: pd.DataFrame,
    *,
    title: str,
    objectives: list[Objective],
    constraints: list[Constraint],
    param_names: list[str],
    layers: Mapping[str, pd.DataFrame],
    hypervolume: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
    comparison: object | None = None,
) -> Path:
    """Write the self-contained HTML report to ``path`` (atomically, so a reader never sees half a file)."""
    document = render_report(
        points,
        title=title,
        objectives=objectives,
        constraints=constraints,
        param_names=param_names,
        layers=layers,
        hypervolume=hypervolume,
        notes=notes,
        comparison=comparison,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(document)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a report is meant to be shared
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
