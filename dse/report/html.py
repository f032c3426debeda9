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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline

from dse.files import atomic_write_text
from dse.objectives import Constraint, Objective
from dse.registry import GPU_KIND
from dse.report.data import (
    REQUIRED_POINT_COLUMNS,
    ReportData,
    constraint_words,
    count_violators,
    format_value,
    metric_columns,
    metric_label,
    metric_unit,
)
from dse.report.figures import (
    hypervolume_figure,
    parallel_coordinates_figure,
    pareto_3d_figure,
    pareto_figure,
    scatter_matrix_figure,
    single_objective_figures,
)
from dse.report.figures_breakdown import front_breakdown_figure
from dse.report.figures_layers import layer_breakdown_figure
from dse.report.figures_scale import (
    marker_texts,
    pareto_3d_density_figure,
    pareto_density_figure,
    scatter_matrix_density_figure,
)
from dse.report.figures_schedule import has_schedule, schedule_figure
from dse.report.scale import LargeRunView, large_run_view
from hwmodels.base import METRICS

PLOT_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "svg"}}
TEMPLATE = "plotly_white"


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


def pareto_table_html(data: ReportData) -> str:
    if data.front.empty:
        return '<p class="empty">No Pareto designs: no point was both evaluated successfully and feasible.</p>'
    metrics = metric_columns(data.front, data.objective_names)
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
        violators = count_violators(data.ok, c)
        constraint_items.append(
            f"<li><b>{html.escape(constraint_words(c))}</b> — violated by {violators:,} of "
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


MAX_DRAWN_POINTS = 10_000  # above this many points the charts draw the front and its neighbourhood, count the rest


@dataclass
class Section:
    anchor: str
    heading: str
    how_to_read: str
    body: str


def _sections(
    data: ReportData,
    layers: Mapping[str, pd.DataFrame],
    hypervolume: pd.DataFrame | None,
    large: LargeRunView | None = None,
) -> list[Section]:
    """The page's sections; for a large run the trade-off figures draw ``large``'s markers and density images and
    the others its sample (every Pareto design kept); the counts and tables use every point."""
    figures_data = data if large is None else large.sample
    sections: list[Section] = []
    if not data.ok.empty:
        full, data = data, figures_data
        if large is not None and len(data.objectives) >= 2:
            sections.append(_large_tradeoff_section(full, large))
        elif len(data.objectives) >= 2:
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
            sections.append(Section("tradeoff", "Trade-off", how, body))
        else:
            body = "".join(_figure_html(fig, div_id) for div_id, fig in single_objective_figures(data))
            how = (
                f"One objective ({data.objectives[0].metric}), so there is no trade-off curve: the first chart shows "
                "every evaluation and the best feasible value found so far, the second ranks the best designs."
            )
            sections.append(Section("tradeoff", "Objective", how, body))

        parcoords, dropped = parallel_coordinates_figure(data)
        how = (
            "One line per successful design, across its parameters and objectives; drag along an axis to filter "
            "(e.g. select Pareto = yes). Categorical parameters are shown with their names as ticks."
        )
        if dropped:
            how += f" {dropped} point(s) with missing values are not drawn."
        sections.append(Section("space", "Design space", how, _figure_html(parcoords, "fig-parcoords")))

        data = full
    if hypervolume is not None and not hypervolume.empty:
        how = (
            "Hypervolume of the feasible front after each evaluation (higher is better); when it stops rising the "
            "search has converged. The dotted line counts the Pareto designs."
        )
        body = _figure_html(hypervolume_figure(hypervolume), "fig-hypervolume")
        sections.append(Section("progress", "Search progress", how, body))

    breakdown = front_breakdown_figure(data)
    if breakdown is not None:
        how = (
            "Each Pareto design's energy by component (top) and area by block (bottom), as its hardware model "
            "splits them; the star marks the knee design."
        )
        sections.append(
            Section("breakdown", "Energy and area by component", how, _figure_html(breakdown, "fig-front-breakdown"))
        )

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
        sections.append(Section("layers", "Per-layer breakdown", how, body))
        knee_layers = layers.get(str(data.knee_id)) if data.knee_id is not None else None
        if has_schedule(knee_layers):  # a multicore design: its schedule per core
            how = "The knee design's schedule: one bar per tile group on its core, transfers as thin grey bars."
            body = _figure_html(schedule_figure(knee_layers), "fig-schedule")
            sections.append(Section("schedule", "Schedule per core", how, body))

    how = "Sorted by the first objective; the knee design is highlighted. Units in brackets."
    sections.append(Section("pareto", f"Pareto designs ({len(data.front)})", how, pareto_table_html(data)))
    how = "Points whose evaluation raised an error, grouped by reason." if len(data.failed) else ""
    sections.append(Section("failures", f"Failed points ({len(data.failed)})", how, failure_table_html(data)))
    return sections


def _large_tradeoff_section(data: ReportData, large: LargeRunView) -> Section:
    """The trade-off section of a large run: density images of the other designs under WebGL markers."""
    texts = marker_texts(data, large)
    body = _figure_html(pareto_density_figure(data, large, texts), "fig-pareto")
    how = (
        "Too many designs to draw one by one: the shaded image counts the designs in each cell (log colour scale, "
        "darker is more; hover a cell for its count and how many are feasible). Red markers are the Pareto designs, "
        "joined by the red step line; blue markers are the designs of the next non-dominated layers behind the "
        "front (those that would be Pareto-optimal without the designs ahead of them). The star is the knee "
        "design. Hover a marker for its parameters and values."
    )
    if len(data.objectives) >= 3:
        body += _figure_html(pareto_3d_density_figure(data, large, texts), "fig-pareto-3d")
        body += _figure_html(scatter_matrix_density_figure(data, large), "fig-scatter-matrix")
        how += (
            " With three or more objectives a rotatable 3-D view (the same markers, and a small even sample of the "
            "other designs without hover) and a scatter matrix (each panel shaded the same way) follow."
        )
    return Section("tradeoff", "Trade-off", how, body)


def large_run_note(data: ReportData, large: LargeRunView, threshold: int) -> str:
    """The header line that says what a large run's charts draw how."""
    sampled = (
        f"{len(large.sample.points):,} of the {len(data.points):,} points (every Pareto design and an even sample "
        "of the others)"
    )
    if len(data.objectives) < 2:
        return f"above {threshold:,} points the charts draw {sampled}; the counts and tables cover every point"
    layers = "non-dominated layer" if large.near_layers == 1 else f"{large.near_layers} non-dominated layers"
    near = f" and the {len(large.near):,} designs of the next {layers} behind the front" if large.near_layers else ""
    return (
        f"above {threshold:,} points the trade-off charts draw the {len(data.front):,} Pareto designs{near} as "
        f"WebGL markers with hover, and the other {len(large.cloud):,} successful designs as density images "
        f"(log-scaled counts per cell); parallel coordinates draw {sampled}; the counts and tables cover every point"
    )


_COMPARISON_COLUMNS = (
    ("name", "design / GPU"),
    ("precision", "precision"),
    ("calibration", "GPU model constants"),
    ("latency_ms", "latency [ms]"),
    ("throughput_ips", "throughput [inf/s]"),
    ("energy_mj", "energy [mJ/inf]"),
    ("power_w", "power [W]"),
    ("inferences_per_j", "inf/J"),
    ("latency_vs_best_gpu", "latency / best GPU"),
    ("energy_vs_best_gpu", "energy / best GPU"),
    ("perf_per_watt_vs_best_gpu", "perf/W / best GPU"),
)


def comparison_section(comparison) -> Section:
    """GPU baselines (a ``dse.compare.Comparison``): table, bars, rooflines side by side, per-layer table."""
    summary = comparison.summary
    table = _table_html(
        summary,
        [c for c in _COMPARISON_COLUMNS if c[0] in summary.columns],
        row_class=lambda row: "" if row["kind"] == GPU_KIND else "knee",
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
    return Section("gpus", "GPU baselines", how, body)


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
    max_drawn_points: int = MAX_DRAWN_POINTS,
) -> str:
    """The report as an HTML string (see write_report)."""
    _check_inputs(points, objectives, param_names)
    if "reason" not in points.columns:
        points = points.assign(reason=None)
    data = ReportData(points.reset_index(drop=True), list(objectives), list(constraints), list(param_names))
    large = None
    if len(points) > max_drawn_points:
        large = large_run_view(data, max_drawn_points)
        notes = [*notes, large_run_note(data, large, max_drawn_points)]
    sections = _sections(data, {str(k): v for k, v in layers.items()}, hypervolume, large)
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
    max_drawn_points: int = MAX_DRAWN_POINTS,
) -> Path:
    """Write the self-contained HTML report to ``path`` (atomically, so a reader never sees half a file).

    Above ``max_drawn_points`` points the trade-off charts draw the front and its neighbourhood one by one and
    the other designs as density images (``dse.report.scale``), so the page stays small and quick to open."""
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
        max_drawn_points=max_drawn_points,
    )
    return atomic_write_text(path, document)
