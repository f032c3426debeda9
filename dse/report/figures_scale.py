"""The trade-off figures of a large run: WebGL markers for the front and its neighbourhood, density images for
the rest (see ``scale``). The same axes, colours and hover text as the small-run figures in ``figures``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dse.report.data import ReportData, format_value
from dse.report.figures import (
    COLOR_FEASIBLE,
    COLOR_FRONT,
    COLOR_INFEASIBLE,
    MAX_SPLOM_DIMENSIONS,
    finish_tradeoff,
    hover_texts,
    scatter_matrix_layout,
    splom_trace,
    value_axis,
    view_3d_layout,
)
from dse.report.scale import LargeRunView, bin_edges, cell_counts, cell_index

DENSITY_CELLS = 160  # cells per axis of the trade-off chart's density image
MATRIX_DENSITY_CELLS = 60  # cells per axis in each panel of the scatter matrix
DENSITY_COLORS = [[0.0, "#d4dcea"], [0.5, "#6f8fbf"], [1.0, "#1b2f5c"]]  # few designs light, many dark


@dataclass(frozen=True)
class DensityAxis:
    """One axis of a density image: the metric, whether its axis is logarithmic, how many cells it has."""

    metric: str
    log: bool
    cells: int


def _positions(frame: pd.DataFrame, metric: str) -> np.ndarray:
    """Marker positions as float32: 7 significant digits, more than a chart can show, half the bytes."""
    return frame[metric].to_numpy(dtype=np.float32)


def marker_texts(data: ReportData, view: LargeRunView) -> pd.Series:
    """The hover text of every design drawn as a marker (front and neighbourhood), by row of ``data.points``:
    built once for the 2-D and the 3-D view."""
    drawn = pd.concat([data.front, view.near])
    return pd.Series(hover_texts(drawn, data), index=drawn.index, dtype=object)


def _markers(frame: pd.DataFrame, texts: pd.Series, x: str, y: str, **kwargs) -> go.Scattergl:
    return go.Scattergl(
        x=_positions(frame, x),
        y=_positions(frame, y),
        mode="markers",
        hovertext=texts.loc[frame.index].tolist(),
        hoverinfo="text",
        **kwargs,
    )


def density_trace(
    cloud: pd.DataFrame, x: DensityAxis, y: DensityAxis, *, top: int | None = None, **kwargs
) -> go.Heatmap:
    """Designs per cell of ``cloud`` over the x and y metrics, coloured by log10 of the count.

    Empty cells stay transparent; hovering a cell gives its designs and how many are feasible. ``top`` is the
    colour scale's upper decade (shared by the panels of one figure)."""
    x_values, y_values = cloud[x.metric].to_numpy(dtype=float), cloud[y.metric].to_numpy(dtype=float)
    x_edges = bin_edges(x_values, log=x.log, bins=x.cells)
    y_edges = bin_edges(y_values, log=y.log, bins=y.cells)
    total, feasible = cell_counts(
        cell_index(x_values, x_edges, log=x.log),
        cell_index(y_values, y_edges, log=y.log),
        len(x_edges) - 1,
        len(y_edges) - 1,
        cloud["feasible"].to_numpy(dtype=bool),
    )
    top = top if top is not None else density_top(total)
    with np.errstate(divide="ignore"):
        shade = np.where(total > 0, np.log10(total), np.nan).astype(np.float32)
    return go.Heatmap(
        x=x_edges,
        y=y_edges,
        z=shade,
        customdata=np.stack([total, feasible], axis=-1).astype(np.uint32),
        zmin=0,
        zmax=top,
        colorscale=DENSITY_COLORS,
        hoverongaps=False,
        hovertemplate="%{customdata[0]:,} designs in this cell<br>%{customdata[1]:,} of them feasible<extra></extra>",
        colorbar={
            "title": {"text": "designs per cell"},
            "tickvals": list(range(top + 1)),
            "ticktext": [format_value(10**k) for k in range(top + 1)],
            "len": 0.8,
        },
        **kwargs,
    )


def density_top(counts: np.ndarray) -> int:
    """The colour scale's upper decade: 10**top designs or more in a cell is the darkest colour."""
    most = int(counts.max()) if counts.size else 0
    return max(1, math.ceil(math.log10(most))) if most > 1 else 1


def _is_log(data: ReportData, metric: str) -> bool:
    return value_axis(data.ok[metric])["type"] == "log"


def pareto_density_figure(data: ReportData, view: LargeRunView, texts: pd.Series) -> go.Figure:
    """The 2-D trade-off of a large run: the other designs as a density image, the front and its neighbourhood
    as WebGL markers with hover, the step line and the knee; axes as the small-run chart draws them."""
    x, y = data.objectives[0], data.objectives[1]
    drop = [x.metric, y.metric]
    fig = go.Figure()
    cloud = view.cloud.dropna(subset=drop)
    if len(cloud):
        fig.add_trace(
            density_trace(
                cloud,
                DensityAxis(x.metric, _is_log(data, x.metric), DENSITY_CELLS),
                DensityAxis(y.metric, _is_log(data, y.metric), DENSITY_CELLS),
                name=f"others, as density ({len(cloud):,})",
                showlegend=True,
            )
        )
    near = view.near.dropna(subset=drop)
    if len(near):
        fig.add_trace(
            _markers(
                near,
                texts,
                x.metric,
                y.metric,
                name=f"near the front: {_layers_words(view.near_layers)} ({len(near):,})",
                marker={"color": COLOR_FEASIBLE, "size": 6, "opacity": 0.6},
            )
        )
    front = data.front.dropna(subset=drop)
    markers = partial(_markers, texts=texts, x=x.metric, y=y.metric)
    return finish_tradeoff(fig, data, front, x, y, markers, f"Pareto front ({len(front):,})", front_size=9)


def pareto_3d_density_figure(data: ReportData, view: LargeRunView, texts: pd.Series) -> go.Figure:
    """The 3-D view of a large run: the front and its neighbourhood with hover, an even sample of the others
    small and without hover for context."""
    a, b, c = data.objectives[:3]
    names = [a.metric, b.metric, c.metric]
    groups = [
        (view.context, f"a sample of the others ({len(view.context):,} of {len(view.cloud):,})", False),
        (view.near, f"near the front: {_layers_words(view.near_layers)}", True),
        (data.front, "Pareto front", True),
    ]
    markers = [
        {"color": COLOR_INFEASIBLE, "size": 2, "opacity": 0.25},
        {"color": COLOR_FEASIBLE, "size": 3, "opacity": 0.5},
        {"color": COLOR_FRONT, "size": 4},
    ]
    fig = go.Figure()
    for (frame, name, hover), marker in zip(groups, markers):
        frame = frame.dropna(subset=names)
        if frame.empty:
            continue
        fig.add_trace(
            go.Scatter3d(
                x=_positions(frame, a.metric),
                y=_positions(frame, b.metric),
                z=_positions(frame, c.metric),
                mode="markers",
                marker=marker,
                name=name if not hover else f"{name} ({len(frame):,})",
                hovertext=texts.loc[frame.index].tolist() if hover else None,
                hoverinfo="text" if hover else "skip",
            )
        )
    fig.update_layout(**view_3d_layout(data))
    return fig


def scatter_matrix_density_figure(data: ReportData, view: LargeRunView) -> go.Figure:
    """The scatter matrix of a large run: the front and its neighbourhood as the matrix's (WebGL, linked
    selection) markers, each panel's other designs as a density image on the matrix's own axes."""
    names = data.objective_names[:MAX_SPLOM_DIMENSIONS]
    fig = go.Figure()
    cloud = view.cloud.dropna(subset=names)
    pairs = [(row, column) for row in range(1, len(names)) for column in range(row)]
    if len(cloud):
        panels = [
            density_trace(  # the matrix's axes are linear
                cloud,
                DensityAxis(names[column], False, MATRIX_DENSITY_CELLS),
                DensityAxis(names[row], False, MATRIX_DENSITY_CELLS),
            )
            for row, column in pairs
        ]
        top = max(density_top(panel.customdata[..., 0]) for panel in panels)
        for index, ((row, column), panel) in enumerate(zip(pairs, panels)):
            panel.update(
                xaxis=f"x{column + 1 if column else ''}",
                yaxis=f"y{row + 1 if row else ''}",
                zmax=top,
                showscale=index == 0,
                name=f"others, as density ({len(cloud):,})",
                showlegend=index == 0,
                legendgroup="density",
            )
            fig.add_trace(panel)
    groups = [
        (view.near, f"near the front: {_layers_words(view.near_layers)}", COLOR_FEASIBLE, 0.5, 5),
        (data.front, "Pareto front", COLOR_FRONT, 0.9, 7),
    ]
    for frame, name, color, opacity, size in groups:
        frame = frame.dropna(subset=names)
        if frame.empty:
            continue
        values = [_positions(frame, n) for n in names]
        fig.add_trace(splom_trace(frame, names, values, f"{name} ({len(frame):,})", color, opacity, size))
    fig.update_layout(**scatter_matrix_layout(names))
    return fig


def _layers_words(layers: int) -> str:
    return "next layer" if layers == 1 else f"next {layers} layers"
