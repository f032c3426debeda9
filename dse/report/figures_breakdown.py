"""The front's energy by component and area by block: one stacked bar per Pareto design.

Why: an objective's total hides where it comes from; the stacks show whether a design's energy is MACs,
SRAM, DRAM or leakage, and whether its area is the array, the buffers or what surrounds them. The
components are whatever ``energy_<component>_mj`` and ``area_<block>_mm2`` columns the hardware model wrote.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from dse.report.data import AREA_POINT_COLUMN, ENERGY_POINT_COLUMN, ReportData, breakdown_columns, distance_to_knee
from dse.report.figures import ENERGY_COLORS

MAX_BREAKDOWN_DESIGNS = 24  # more bars would be unreadable; the designs closest to the knee are kept


def front_breakdown_designs(data: ReportData) -> pd.DataFrame:
    """The Pareto designs the figure shows (closest to the knee first, then in first-objective order)."""
    front = data.front
    if len(front) > MAX_BREAKDOWN_DESIGNS:
        front = front.iloc[distance_to_knee(front, data).argsort()[:MAX_BREAKDOWN_DESIGNS]]
    first = data.objectives[0].metric if data.objectives else "seq"
    return front.sort_values(first, kind="stable")


def front_breakdown_figure(data: ReportData) -> go.Figure | None:
    """Energy (mJ) by component above area (mm^2) by block for the front's designs; None without either."""
    energy = breakdown_columns(data.front, ENERGY_POINT_COLUMN)
    area = breakdown_columns(data.front, AREA_POINT_COLUMN)
    if data.front.empty or not (energy or area):
        return None
    front = front_breakdown_designs(data)
    labels = [
        f"{pid}{' ★' if str(pid) == data.knee_id else ''}" for pid in front["point_id"].astype(str).map(html.escape)
    ]
    panels = [(columns, title) for columns, title in ((energy, "energy [mJ]"), (area, "area [mm^2]")) if columns]
    fig = go.Figure()
    gap = 0.08
    height = (1.0 - gap * (len(panels) - 1)) / len(panels)
    layout: dict[str, object] = {}
    for index, (columns, title) in enumerate(panels):
        suffix = "" if index == 0 else str(index + 1)  # plotly's axis names: x, x2; y, y2
        pattern = ENERGY_POINT_COLUMN if columns is energy else AREA_POINT_COLUMN
        unit = title.split()[-1][1:-1]
        for i, column in enumerate(columns):
            name = pattern.match(column).group(1)  # type: ignore[union-attr]
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=front[column].fillna(0.0).to_numpy(dtype=float),
                    name=name,
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    legendgroup=title,
                    legendgrouptitle_text=title if i == 0 else None,
                    marker_color=ENERGY_COLORS[i % len(ENERGY_COLORS)],
                    hovertemplate=f"%{{x}}<br>{html.escape(name)}: %{{y:.4g}} {unit}<extra></extra>",
                )
            )
        top = 1.0 - index * (height + gap)  # panels from the top down, sharing one x axis
        layout[f"yaxis{suffix}"] = {
            "domain": [max(top - height, 0.0), top],
            "title": {"text": title},
            "anchor": f"x{suffix}",
        }
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "showticklabels": index == len(panels) - 1}
        if index:
            layout[f"xaxis{suffix}"]["matches"] = "x"
    fig.update_layout(
        barmode="stack", height=260 * len(panels) + 80, margin={"t": 30, "b": 40}, legend={"x": 1.02}, **layout
    )
    return fig
