"""The exploration report: one self-contained, offline HTML page an architect can read.

``data`` splits the points the way every section needs them and formats values, ``figures`` and
``figures_layers`` draw the plotly figures, ``html`` assembles the page. The entry points callers
use are re-exported here.
"""

from __future__ import annotations

from dse.pareto import knee_point_id
from dse.report.data import ReportData, format_value, metric_label, metric_unit
from dse.report.figures import (
    hypervolume_figure,
    parallel_coordinates_figure,
    pareto_3d_figure,
    pareto_figure,
    scatter_matrix_figure,
    single_objective_figures,
)
from dse.report.figures_layers import layer_breakdown_figure
from dse.report.html import comparison_section, failure_table_html, pareto_table_html, render_report, write_report

__all__ = [
    "ReportData",
    "comparison_section",
    "failure_table_html",
    "format_value",
    "hypervolume_figure",
    "knee_point_id",
    "layer_breakdown_figure",
    "metric_label",
    "metric_unit",
    "parallel_coordinates_figure",
    "pareto_3d_figure",
    "pareto_figure",
    "pareto_table_html",
    "render_report",
    "scatter_matrix_figure",
    "single_objective_figures",
    "write_report",
]
