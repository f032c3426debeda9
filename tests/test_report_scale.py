"""A large run's report: above the threshold the trade-off charts draw the front and the next non-dominated
layers as WebGL markers and count the other designs per cell.

The threshold is ``write_report``'s ``max_drawn_points`` argument, so a 150-point run takes the large path;
``test_report.py::test_three_objectives_add_3d_view_and_scatter_matrix`` takes the small one at the threshold.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest

from dse.objectives import Constraint, Objective
from dse.report.scale import cell_counts, cell_index, even_picks

try:  # pytest's default rootdir import puts tests/ on sys.path; a tests package would not
    from tests.test_report import _figure_json, _non_dominated, _values, _write, synthetic_run
except ImportError:
    from test_report import _figure_json, _non_dominated, _values, _write, synthetic_run

OBJECTIVES = [Objective("latency_ms", "min"), Objective("energy_mj", "min"), Objective("area_mm2", "min")]


@pytest.fixture(scope="module")
def run() -> dict:
    return synthetic_run(n_points=150, objectives=OBJECTIVES, constraints=[Constraint("power_w", high=12.0)])


def _hover_ids(trace: dict) -> list[str]:
    return re.findall(r"<b>(\w+)</b> \(evaluation", " ".join(trace.get("hovertext") or []))


def _layers_behind_the_front(points, count: int) -> list[set[str]]:
    """The first ``count`` non-dominated layers of the feasible designs off the front, peeled by brute force."""
    rest = points[points["feasible"].astype(bool) & ~points["pareto"].astype(bool)]
    layers = []
    while len(layers) < count and len(rest):
        on_layer = _non_dominated(rest[[o.metric for o in OBJECTIVES]].to_numpy(dtype=float))
        layers.append(set(rest.loc[on_layer, "point_id"]))
        rest = rest[~on_layer]
    return layers


def test_above_the_threshold_the_front_is_webgl_and_the_rest_a_density_image(tmp_path: Path, run: dict) -> None:
    points = run["points"]
    figures_only = {**run, "layers": {}, "hypervolume": None}  # the per-layer and progress charts: test_report.py
    text = _write(tmp_path, figures_only, max_drawn_points=40).read_text(encoding="utf-8")
    ok = points["status"] == "ok"
    feasible, front = ok & points["feasible"].astype(bool), points["pareto"].astype(bool)
    note = re.search(
        r"draw the (\d+) Pareto designs and the (\d+) designs of the next (\d+) non-dominated layers behind the front"
        r" as WebGL markers with hover, and the other (\d+) successful designs as density images",
        html.unescape(text),
    )
    assert note, "the header must say what is drawn how"
    n_front, n_near, n_layers, n_cloud = map(int, note.groups())
    assert n_front == int(front.sum()) and n_front + n_near + n_cloud == int(ok.sum())

    traces = {t["name"].split(" (")[0]: t for t in _figure_json(text, "fig-pareto")["data"]}
    assert traces["Pareto front"]["type"] == "scattergl"
    assert sorted(_hover_ids(traces["Pareto front"])) == sorted(points.loc[front, "point_id"])
    near = traces[f"near the front: next {n_layers} layers"]
    assert near["type"] == "scattergl" and len(_values(near["x"])) == n_near
    expected = set().union(*_layers_behind_the_front(points, n_layers))
    assert set(_hover_ids(near)) == expected, "the neighbourhood is the next non-dominated layers, whole"
    assert n_near < int((feasible & ~front).sum()), "a test run where the neighbourhood is not every design"

    density = traces["others, as density"]
    assert density["type"] == "heatmap"
    counts = _values(density["customdata"]).reshape(-1, 2)
    assert counts[:, 0].sum() == n_cloud, "every other successful design is counted in one cell"
    assert counts[:, 1].sum() == int((feasible & ~front).sum()) - n_near
    edges = _values(density["x"])
    layout = _figure_json(text, "fig-pareto")["layout"]
    assert layout["xaxis"]["type"] == "log", "the synthetic latencies span decades"
    assert np.allclose(edges[1:] / edges[:-1], edges[1] / edges[0]), "cells evenly spaced on the log axis"
    assert "hovertext" not in density and "text" not in density, "no per-design text for the density part"

    matrix = _figure_json(text, "fig-scatter-matrix")["data"]
    panels = [(t["xaxis"], t["yaxis"]) for t in matrix if t["type"] == "heatmap"]
    assert panels == [("x", "y2"), ("x", "y3"), ("x2", "y3")], "one density per lower-triangle panel"
    assert sorted(t["name"].split(" (")[0] for t in matrix if t["type"] == "splom") == [
        "Pareto front",
        f"near the front: next {n_layers} layers",
    ]
    scatter3d = _figure_json(text, "fig-pareto-3d")["data"]
    assert sum(len(_values(t["x"])) for t in scatter3d if t.get("hoverinfo") == "text") == n_front + n_near
    assert f"Pareto designs ({n_front})" in text, "tables still cover every point"
    assert f'<div class="count">{len(points):,}</div><div class="label">evaluated' in text


def test_cells_take_their_top_edge_and_skip_missing_values() -> None:
    edges = np.array([1.0, 10.0, 100.0])
    index = cell_index(np.array([1.0, 9.99, 10.0, 100.0, np.nan, 0.5, 1e3]), edges, log=True)
    assert index.tolist() == [0, 0, 1, 1, -1, -1, -1]
    total, good = cell_counts(index, np.zeros(7, dtype=np.int64), 2, 1, np.array([1, 0, 1, 1, 1, 1, 1], dtype=bool))
    assert total.tolist() == [[2, 2]] and good.tolist() == [[1, 2]]
    assert even_picks(5, 3).tolist() == [0, 2, 4] and even_picks(2, 3).tolist() == [0, 1]
