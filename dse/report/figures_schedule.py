"""The schedule of a multicore design: a Gantt chart per core with the transfers between cores, and each
core's utilisation. Drawn from the per-layer rows the multicore model writes (``core``, ``spans``,
``transfers_in``); designs of other families have no such rows and get no chart."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def has_schedule(frame: pd.DataFrame | None) -> bool:
    return frame is not None and not frame.empty and {"core", "spans"} <= set(frame.columns)


def schedule_figure(frame: pd.DataFrame, title: str = "") -> go.Figure | None:
    """Gantt (top: one row per core, one bar per tile group, transfers as thin bars on the receiving core)
    and per-core utilisation (bottom: busy cycles / makespan)."""
    if not has_schedule(frame):
        return None
    fig = make_subplots(rows=2, cols=1, row_heights=[0.72, 0.28], vertical_spacing=0.12)
    models = list(dict.fromkeys(frame.get("model", pd.Series([""] * len(frame))).fillna("")))
    busy: dict[int, float] = {}
    makespan = 0.0
    bars: dict[str, dict[str, list]] = {}
    for row in frame.itertuples(index=False):
        core = int(row.core)
        model = str(getattr(row, "model", "") or "")
        for start, end in row.spans:
            group = bars.setdefault(model or "layers", {"y": [], "base": [], "x": [], "text": []})
            group["y"].append(f"core {core}")
            group["base"].append(start)
            group["x"].append(end - start)
            group["text"].append(f"{row.layer}<br>cycles {start:,}-{end:,}")
            busy[core] = busy.get(core, 0.0) + (end - start)
            makespan = max(makespan, end)
        for src, dst, start, end, nbytes, kind in getattr(row, "transfers_in", None) or []:
            group = bars.setdefault(f"transfer ({kind})", {"y": [], "base": [], "x": [], "text": []})
            group["y"].append(f"core {dst}")
            group["base"].append(start)
            group["x"].append(max(end - start, 1))
            origin = "DRAM" if kind == "dram" else f"core {src}"
            group["text"].append(f"{nbytes:,} B {origin} -> core {dst} for {row.layer}<br>cycles {start:,}-{end:,}")
    for i, (name, group) in enumerate(bars.items()):
        is_transfer = name.startswith("transfer")
        color = "#555555" if name == "transfer (noc)" else "#bbbbbb" if is_transfer else _COLORS[i % len(_COLORS)]
        fig.add_trace(
            go.Bar(
                name=name,
                orientation="h",
                y=group["y"],
                base=group["base"],
                x=group["x"],
                hovertext=group["text"],
                hoverinfo="text",
                width=0.25 if is_transfer else 0.7,
                offset=0.2 if is_transfer else -0.35,
                marker={"color": color, "line": {"width": 0.5, "color": "white"}},
            ),
            row=1,
            col=1,
        )
    cores = sorted(busy)
    fig.add_trace(
        go.Bar(
            name="utilisation",
            x=[f"core {c}" for c in cores],
            y=[busy[c] / makespan if makespan else 0.0 for c in cores],
            marker={"color": "#7f7f7f"},
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    fig.update_xaxes(title_text="cycle", row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_yaxes(title_text="busy / makespan", range=[0, 1], row=2, col=1)
    fig.update_layout(
        barmode="overlay",
        height=420 + 26 * len(cores),
        title=title or ("Schedule" + (f" ({', '.join(m for m in models if m)})" if any(models) else "")),
        legend={"orientation": "h", "y": -0.12},
        margin={"l": 70, "r": 20, "t": 50, "b": 40},
    )
    return fig
