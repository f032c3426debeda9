"""The report's plotly figures over the objectives and the design space.

Trade-off (2-D staircase, 3-D, scatter matrix), one objective's progress and ranking, parallel
coordinates and search progress; the per-layer breakdown is in ``figures_layers``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dse.objectives import Objective
from dse.report.data import (
    ReportData,
    as_bool,
    format_value,
    is_categorical,
    metric_label,
    metric_unit,
    violated_constraints,
)

MAX_SPLOM_DIMENSIONS = 6
MAX_RANKED_BARS = 40
MAX_HISTORY_MARKERS = 5_000  # above this many evaluations the progress chart keeps the ones that move it
MAX_ORDINAL_LEVELS = 8  # numeric params with at most this many values get evenly spaced parcoords ticks

COLOR_FRONT = "#d62728"
COLOR_FEASIBLE = "#1f77b4"
COLOR_INFEASIBLE = "#9e9e9e"
COLOR_KNEE = "#ff9f1c"
COLOR_COMPUTE = "#2b5c8a"
COLOR_STALL = "#c44e52"
# A palette disjoint from the latency colours, so no energy component reads as "compute" or "stall".
ENERGY_COLORS = ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3")


def _hover_text(row: pd.Series, data: ReportData, *, extra_metrics: Sequence[str] = ()) -> str:
    """point_id, every parameter, the objectives (and any extra metrics) with units; why infeasible."""
    lines = [f"<b>{html.escape(str(row['point_id']))}</b> (evaluation #{format_value(row['seq'])})"]
    lines += [f"{html.escape(p)} = {html.escape(format_value(row.get(p)))}" for p in data.param_names]
    shown = list(dict.fromkeys([*data.objective_names, *extra_metrics]))
    for name in shown:
        unit = metric_unit(name)
        lines.append(f"<b>{html.escape(name)}</b> = {format_value(row.get(name))} {html.escape(unit)}".rstrip())
    violated = violated_constraints(row, data.constraints)
    if violated:
        lines.append("<i>infeasible: " + html.escape("; ".join(violated)) + "</i>")
    if data.knee_id is not None and str(row["point_id"]) == data.knee_id:
        lines.append("★ knee design")
    return "<br>".join(lines)


def hover_texts(frame: pd.DataFrame, data: ReportData, **kwargs) -> list[str]:
    return [_hover_text(row, data, **kwargs) for row in frame.to_dict("records")]


def value_axis(values: pd.Series, **extra: object) -> dict:
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


def axis_title(objective: Objective) -> str:
    better = "lower is better" if objective.direction == "min" else "higher is better"
    return f"{metric_label(objective.metric)} — {better}"


# --------------------------------------------------------------------------- figures


def front_2d(front: pd.DataFrame, x: Objective, y: Objective) -> pd.DataFrame:
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
        hovertext=hover_texts(frame, data),
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
    markers = partial(_scatter_trace, data=data, x=x.metric, y=y.metric)
    return finish_tradeoff(fig, data, front, x, y, markers, f"Pareto front ({len(front)})", front_size=10)


def finish_tradeoff(
    fig: go.Figure,
    data: ReportData,
    front: pd.DataFrame,
    x: Objective,
    y: Objective,
    markers: Callable[..., Any],
    front_name: str,
    front_size: int,
) -> go.Figure:
    """A trade-off chart's last layers, whatever draws its markers (SVG or WebGL): the step line, the front's
    markers, the knee's star, and the layout. ``markers(frame, name=..., marker=...)`` makes one trace."""
    staircase = staircase_trace(front, x, y)
    if staircase is not None:
        fig.add_trace(staircase)
    if len(front):
        front_marker = {"color": COLOR_FRONT, "size": front_size, "line": {"color": "white", "width": 1}}
        fig.add_trace(markers(front, name=front_name, marker=front_marker))
    knee = front[front["point_id"].astype(str) == data.knee_id] if data.knee_id else front.iloc[0:0]
    if len(knee):
        star = {"color": COLOR_KNEE, "size": 18, "symbol": "star", "line": {"color": "black", "width": 1}}
        fig.add_trace(markers(knee, name="knee design", marker=star))
    fig.update_layout(**tradeoff_layout(data, x, y))
    return fig


def staircase_trace(front: pd.DataFrame, x: Objective, y: Objective) -> go.Scatter | None:
    """The red step line through the designs of ``front`` not dominated on (x, y); None under two of them."""
    staircase = front_2d(front, x, y)
    if len(staircase) < 2:
        return None
    return go.Scatter(
        x=staircase[x.metric].to_numpy(dtype=float),
        y=staircase[y.metric].to_numpy(dtype=float),
        mode="lines",
        line={"color": COLOR_FRONT, "width": 2, "shape": "hv" if x.direction == "min" else "vh"},
        name="front (step line)",
        hoverinfo="skip",
    )


def tradeoff_layout(data: ReportData, x: Objective, y: Objective) -> dict:
    """Title, axes (log where the values span decades) and legend of a 2-D trade-off chart."""
    subtitle = ""
    if len(data.objectives) > 2:
        subtitle = " (projection; the front is over all objectives, the step line over these two)"
    return {
        "title": f"Trade-off: {x.metric} vs {y.metric}{subtitle}",
        "xaxis": value_axis(data.ok[x.metric], title=axis_title(x)),
        "yaxis": value_axis(data.ok[y.metric], title=axis_title(y)),
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        "showlegend": True,  # even with one trace (e.g. no feasible point), say what the markers are
        "height": 560,
        "margin": {"t": 90},
    }


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
                hovertext=hover_texts(frame, data),
                hoverinfo="text",
            )
        )
    fig.update_layout(**view_3d_layout(data))
    return fig


def view_3d_layout(data: ReportData) -> dict:
    """Title and scene of the 3-D view over the first three objectives."""
    a, b, c = data.objectives[:3]
    scene = {
        axis: value_axis(data.ok[o.metric], title={"text": metric_label(o.metric)})
        for axis, o in zip(("xaxis", "yaxis", "zaxis"), (a, b, c))
    }
    return {
        "title": f"3-D view: {a.metric}, {b.metric}, {c.metric}",
        "scene": scene,
        "height": 620,
        "legend": {"orientation": "h", "y": 1.02, "x": 0},
        "margin": {"l": 0, "r": 0, "t": 70, "b": 0},
    }


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
        values = [frame[n].to_numpy(dtype=float) for n in names]
        fig.add_trace(splom_trace(frame, names, values, f"{name} ({len(frame)})", color, opacity, size))
    fig.update_layout(**scatter_matrix_layout(names))
    return fig


def splom_trace(
    frame: pd.DataFrame, names: Sequence[str], values: Sequence[Any], name: str, color: str, opacity: float, size: float
) -> go.Splom:
    """One group of a scatter matrix (lower half, no diagonal), hover by point_id: whatever array holds its values."""
    return go.Splom(
        dimensions=[{"label": metric_label(n), "values": v} for n, v in zip(names, values)],
        marker={"color": color, "opacity": opacity, "size": size},
        name=name,
        hovertext=[str(p) for p in frame["point_id"]],
        diagonal={"visible": False},
        showupperhalf=False,
    )


def scatter_matrix_layout(names: Sequence[str]) -> dict:
    """Title and size of the scatter matrix; box selection, which the matrix links across its panels."""
    return {
        "title": "Scatter matrix of the objectives",
        "height": 230 * len(names) + 80,
        "dragmode": "select",
        "legend": {"orientation": "h", "y": 1.04, "x": 0},
    }


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
        yaxis=value_axis(data.ok[name], title=axis_title(objective)),
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
                hovertext=hover_texts(ranked, data),
                hoverinfo="text",
            )
        )
        bars.update_layout(
            title=f"The {len(ranked)} best feasible designs by {name} (best in red)",
            xaxis={"title": "design", "type": "category"},
            yaxis={"title": axis_title(objective)},
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
    if is_categorical(series) or few_levels:
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
    numeric_needed = [n for n in data.objective_names] + [p for p in data.param_names if not is_categorical(data.ok[p])]
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
    dimensions.append(_parcoords_dimension("feasible", as_bool(frame["feasible"])))
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
    if len(hv) > MAX_HISTORY_MARKERS:  # a long run: the evaluations where the curve moves, and the last
        values = hv[[c for c in ("hypervolume", "front_size") if c in hv.columns]].to_numpy(dtype=float)
        moved = np.r_[True, (np.diff(values, axis=0) != 0).any(axis=1)]
        moved[-1] = True
        hv = hv[moved]
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
