"""The per-layer breakdown figure: where the time and the energy of one Pareto design go.

Stacked latency per layer (compute vs stall) above energy per layer by component; a dropdown
picks the design, opening on the knee.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dse.report.data import ReportData, distance_to_knee, format_value
from dse.report.figures import COLOR_COMPUTE, COLOR_STALL, ENERGY_COLORS

MAX_LAYER_DESIGNS = 24  # more dropdown entries would spill out of the figure; the closest to the knee are kept

_ENERGY_LAYER_COLUMN = re.compile(r"^energy_(.+)_pj$")


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


UTIL_TITLE = "PE utilisation per layer (stall-free; ◆ the workload's own dense shape where reshaped or sparse)"
COLOR_UTIL, COLOR_UTIL_BEFORE = "#2a9d8f", "#e76f51"


def utilization_traces(frame: pd.DataFrame, layer_names: np.ndarray, visible: bool) -> list[go.BaseTraceType]:
    """The per-layer utilisation row: the array's PE utilisation as run (bars) and, for layers the DRACO axes
    reshaped or the array ran sparse, the utilisation of the workload's own dense shape (diamonds)."""
    after = frame["pe_utilization"].to_numpy(dtype=float) if "pe_utilization" in frame.columns else None
    if after is None:
        return []
    traces: list[go.BaseTraceType] = [
        go.Bar(
            x=layer_names,
            y=after,
            name="PE utilisation (as run)",
            legendgroup="pe_util",
            marker={"color": COLOR_UTIL},
            hovertemplate="<b>%{x}</b><br>PE utilisation as run %{y:.1%}<extra></extra>",
            visible=visible,
        )
    ]
    if "pe_utilization_dense_shape" in frame.columns:
        traces.append(
            go.Scatter(
                x=layer_names,
                y=frame["pe_utilization_dense_shape"].to_numpy(dtype=float),
                mode="markers",
                name="PE utilisation, dense shape (before reshaping)",
                legendgroup="pe_util_before",
                marker={"color": COLOR_UTIL_BEFORE, "symbol": "diamond", "size": 8},
                hovertemplate="<b>%{x}</b><br>before reshaping %{y:.1%}<extra></extra>",
                visible=visible,
            )
        )
    return traces


def layer_breakdown_figure(data: ReportData, layers: Mapping[str, pd.DataFrame]) -> tuple[go.Figure, int] | None:
    """Stacked per-layer latency (compute vs stall) and energy by component; a dropdown picks the design.

    Returns (figure, number of designs offered) or None when no Pareto design has layer data.
    """
    with_layers = [str(k) for k, frame in layers.items() if not frame.empty]  # predicted points have none
    candidates = data.front[data.front["point_id"].astype(str).isin(with_layers)]
    if candidates.empty:
        return None
    # Keep the designs nearest the knee first so the dropdown opens on the one worth reading.
    order = distance_to_knee(candidates, data)
    candidates = candidates.iloc[np.argsort(order, kind="stable")].head(MAX_LAYER_DESIGNS)
    frames = [layers[str(pid)] for pid in candidates["point_id"]]
    factor, unit = _energy_scale(frames)
    components = list(
        dict.fromkeys(m.group(1) for f in frames for c in f.columns if (m := _ENERGY_LAYER_COLUMN.match(c)))
    )
    color_of = {comp: ENERGY_COLORS[i % len(ENERGY_COLORS)] for i, comp in enumerate(components)}

    with_util = any("pe_utilization" in f.columns for f in frames)  # systolic designs: a utilisation row
    titles = ("Latency per layer [cycles]", f"Energy per layer [{unit}]")
    fig = make_subplots(
        rows=3 if with_util else 2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06 if with_util else 0.08,
        subplot_titles=(*titles, UTIL_TITLE) if with_util else titles,
    )
    trace_owner: list[int] = []
    for design_index, frame in enumerate(frames):
        visible = design_index == 0
        layer_names = frame["layer"].astype(str).to_numpy()
        kinds = frame["kind"].astype(str)
        if "precision" in frame:  # a quantized import: each layer's precision beside its kind
            kinds = kinds + frame["precision"].map(lambda p: f", {p}" if isinstance(p, str) and p else "")
        custom = np.stack(
            [
                kinds.to_numpy(),
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
        if with_util:
            for trace in utilization_traces(frame, layer_names, visible):
                fig.add_trace(trace, row=3, col=1)
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
        height=1000 if with_util else 760,
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
    fig.update_xaxes(tickangle=-45 if longest_layer_count > 8 else 0, type="category", row=3 if with_util else 2, col=1)
    if with_util:
        fig.update_yaxes(title_text="PE utilisation", tickformat=".0%", rangemode="tozero", row=3, col=1)
    fig.update_yaxes(title_text="cycles", row=1, col=1)
    fig.update_yaxes(title_text=unit, row=2, col=1)
    return fig, len(frames)
