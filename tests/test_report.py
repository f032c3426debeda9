"""The HTML report: structure, offline-ness, counts and edge cases, checked by parsing the written file."""

from __future__ import annotations

import base64
import html
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.offline
import pytest

from dse.objectives import Constraint, Objective
from dse.pareto import knee_point_id
from dse.report.data import format_value
from dse.report.html import write_report

PARAMS = ["rows", "cols", "dataflow", "sram_kib"]
DATAFLOW_EFFICIENCY = {"ws": 0.85, "os": 0.75, "is": 0.65}
ENERGY_COMPONENTS = ("mac", "sram", "dram", "leakage")
FAILURE_REASONS = (
    "MappingError: layer conv3_1 weights (73.7 KiB) do not fit the 64 KiB scratchpad",
    "TemplateError: rows * cols = 16384 exceeds the 8192 PE limit",
)
# A small ResNet-like workload: (name, kind, MACs, DRAM bytes touched)
WORKLOAD = [
    ("conv1", "conv", 118_013_952, 1_400_000),
    *[(f"layer1.{i}.conv", "conv", 115_605_504, 600_000) for i in range(4)],
    *[(f"layer2.{i}.conv", "conv", 115_605_504 if i else 57_802_752, 900_000) for i in range(4)],
    *[(f"layer3.{i}.conv", "conv", 115_605_504 if i else 57_802_752, 1_800_000) for i in range(4)],
    *[(f"layer4.{i}.conv", "conv", 115_605_504 if i else 57_802_752, 4_700_000) for i in range(4)],
    ("avgpool", "pool", 25_088, 100_000),
    ("fc", "matmul", 512_000, 1_030_000),
]
FREQ_HZ = 800e6


def _layer_frame(rows: int, cols: int, dataflow: str, sram_kib: float) -> pd.DataFrame:
    """Per-layer figures from a toy analytical model; enough structure to look like a real run."""
    records = []
    for name, kind, macs, dram_bytes in WORKLOAD:
        spill = max(1.0, dram_bytes / (sram_kib * 1024) * 0.6)
        dram = dram_bytes * spill
        compute = macs / (rows * cols * DATAFLOW_EFFICIENCY[dataflow])
        stall = max(0.0, dram / 16.0 - compute * 0.6)  # 16 B/cycle of DRAM bandwidth, 60% overlapped
        energy = {
            "mac": macs * 0.2,
            # wider arrays broadcast operands over longer wires: faster, but each access costs more
            "sram": macs * 3 * 1.2 * (1 + math.log2(sram_kib / 64) * 0.15) * (1 + (rows + cols) / 96),
            "dram": dram * 160.0,
            "leakage": (compute + stall) * rows * cols * 0.02,
        }
        records.append(
            {
                "layer": name,
                "kind": kind,
                "cycles": compute + stall,
                "compute_cycles": compute,
                "stall_cycles": stall,
                "macs": macs,
                "utilization": compute / (compute + stall) * DATAFLOW_EFFICIENCY[dataflow],
                "dram_read_bytes": dram * 0.8,
                "dram_write_bytes": dram * 0.2,
                "sram_read_bytes": macs * 2.0,
                "sram_write_bytes": macs * 0.5,
                "energy_pj": sum(energy.values()),
                **{f"energy_{k}_pj": v for k, v in energy.items()},
            }
        )
    return pd.DataFrame(records)


def _non_dominated(values: np.ndarray) -> np.ndarray:
    """Mask of rows of a minimise-everything matrix that no other row dominates."""
    keep = np.ones(len(values), dtype=bool)
    for i in range(len(values)):
        others = np.delete(values, i, axis=0)
        keep[i] = not np.any(np.all(others <= values[i], axis=1) & np.any(others < values[i], axis=1))
    return keep


def synthetic_run(
    *,
    n_points: int = 90,
    n_failed: int = 6,
    objectives: list[Objective] | None = None,
    constraints: list[Constraint] | None = None,
    seed: int = 0,
) -> dict:
    """A run as the explorer would hand it to write_report: points, layers, hypervolume and the spec bits."""
    rng = np.random.default_rng(seed)
    objectives = objectives or [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    constraints = constraints if constraints is not None else [Constraint("area_mm2", high=12.0)]
    records, layers = [], {}
    failure_every = (n_points + n_failed) // n_failed if n_failed else 0
    for seq in range(n_points + n_failed):
        point = {
            "point_id": f"p{seq:04d}",
            "seq": seq,
            "rows": int(rng.choice([16, 32, 64, 128])),
            "cols": int(rng.choice([16, 32, 64, 128])),
            "dataflow": str(rng.choice(["ws", "os", "is"])),
            "sram_kib": float(np.round(2 ** rng.uniform(6, 12))),
        }
        if failure_every and seq % failure_every == failure_every // 2:
            records.append({**point, "status": "failed", "reason": FAILURE_REASONS[seq % 2]})
            continue
        frame = _layer_frame(point["rows"], point["cols"], point["dataflow"], point["sram_kib"])
        cycles = frame["cycles"].sum()
        energy_mj = frame["energy_pj"].sum() * 1e-9
        latency_ms = cycles / FREQ_HZ * 1e3
        macs = frame["macs"].sum()
        metrics = {
            "latency_cycles": cycles,
            "latency_ms": latency_ms,
            "throughput_ips": 1e3 / latency_ms,
            "energy_mj": energy_mj,
            "edp": energy_mj * latency_ms,
            "area_mm2": 0.5 + point["rows"] * point["cols"] * 6e-4 + point["sram_kib"] * 1.6e-3,
            "area_pe_array_mm2": point["rows"] * point["cols"] * 6e-4,
            "area_sram_mm2": point["sram_kib"] * 1.6e-3,
            "area_wiring_mm2": 0.5,
            "power_w": energy_mj / latency_ms,
            "utilization": float((frame["utilization"] * frame["macs"]).sum() / macs),
            "dram_mb": float((frame["dram_read_bytes"] + frame["dram_write_bytes"]).sum() / 1e6),
            "tops_per_w": 2 * macs / (energy_mj * 1e-3) / 1e12,
            **{f"energy_{k}_mj": frame[f"energy_{k}_pj"].sum() * 1e-9 for k in ENERGY_COMPONENTS},
        }
        records.append({**point, "status": "ok", "reason": None, **metrics})
        layers[point["point_id"]] = frame
    points = pd.DataFrame(records)
    ok = points["status"] == "ok"
    feasible = ok.copy()
    for constraint in constraints:
        violation = points.apply(lambda r, c=constraint: c.violation(r.to_dict()), axis=1)
        feasible &= violation == 0
    points["feasible"] = feasible
    points["pareto"] = False
    if feasible.any():
        matrix = np.array(
            [
                [o.to_min(v) for o, v in zip(objectives, row)]
                for row in points.loc[feasible, [o.metric for o in objectives]].to_numpy()
            ]
        )
        points.loc[feasible, "pareto"] = _non_dominated(matrix)
    hypervolume = _hypervolume_history(points, objectives[:2]) if len(objectives) >= 2 else None
    return {
        "points": points,
        "objectives": objectives,
        "constraints": constraints,
        "param_names": PARAMS,
        "layers": layers,
        "hypervolume": hypervolume,
    }


def _hypervolume_history(points: pd.DataFrame, objectives: list[Objective]) -> pd.DataFrame:
    """Exact 2-D hypervolume of the feasible front after each evaluation, objectives scaled to [0, 1]."""
    feasible = points[points["feasible"]]
    if feasible.empty:
        return pd.DataFrame({"seq": points["seq"], "hypervolume": 0.0, "front_size": 0})
    raw = np.array(
        [[o.to_min(v) for o, v in zip(objectives, r)] for r in feasible[[o.metric for o in objectives]].to_numpy()]
    )
    low, high = raw.min(axis=0), raw.max(axis=0)
    scaled = (raw - low) / np.where(high > low, high - low, 1.0)
    seqs = feasible["seq"].to_numpy()
    history, front = [], np.empty((0, 2))
    for seq in points["seq"]:
        arrived = scaled[seqs == seq]
        if len(arrived):  # the front only changes when a feasible point arrives
            front = np.vstack([front, arrived])
            front = front[_non_dominated(front)]
        volume, previous_y = 0.0, 1.1
        for x, y in front[np.argsort(front[:, 0])]:
            volume += (1.1 - x) * (previous_y - y)
            previous_y = y
        history.append({"seq": seq, "hypervolume": volume, "front_size": len(front)})
    return pd.DataFrame(history)


# --------------------------------------------------------------------------- parsing helpers


class _PageParser(HTMLParser):
    """Collects script tags, plotly figure divs, and the body rows of each section's table."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict] = []
        self.figure_ids: list[str] = []
        self.table_rows: dict[str, int] = {}
        self.links: list[dict] = []
        self._section: str | None = None
        self._in_tbody = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script":
            self.scripts.append(attributes)
        elif tag in ("link", "img", "iframe"):
            self.links.append(attributes)
        elif tag == "div" and "plotly-graph-div" in (attributes.get("class") or ""):
            self.figure_ids.append(attributes["id"])
        elif tag == "section":
            self._section = attributes.get("id")
            self.table_rows.setdefault(self._section, 0)
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._in_tbody and self._section:
            self.table_rows[self._section] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_tbody = False
        elif tag == "section":
            self._section = None


def _parse(path: Path) -> tuple[str, _PageParser]:
    text = path.read_text(encoding="utf-8")
    parser = _PageParser()
    parser.feed(text)
    return text, parser


def _figure_json(text: str, div_id: str) -> dict:
    match = re.search(
        r'<div id="' + re.escape(div_id) + r'".*?<script>\(function \(\) \{ var fig = (.*?);\nPlotly', text, re.S
    )
    assert match, f"no figure {div_id}"
    return json.loads(match.group(1))


def _values(array: object) -> np.ndarray:
    """Plotly's JSON may carry arrays as base64 typed arrays; decode either form."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array)


def _write(tmp_path: Path, run: dict, **kwargs) -> Path:
    return write_report(
        tmp_path / "report.html",
        run["points"],
        title=kwargs.pop("title", "resnet18 on systolic"),
        objectives=run["objectives"],
        constraints=run["constraints"],
        param_names=run["param_names"],
        layers=run["layers"],
        hypervolume=run["hypervolume"],
        **kwargs,
    )


# --------------------------------------------------------------------------- tests


def test_report_is_self_contained_and_has_every_section(tmp_path: Path) -> None:
    run = synthetic_run()
    path = _write(tmp_path, run, notes=["workload: resnet18, batch 1, int8", "template: systolic"])
    text, page = _parse(path)

    assert page.figure_ids == ["fig-pareto", "fig-parcoords", "fig-hypervolume", "fig-front-breakdown", "fig-layers"]
    assert text.count("Plotly.newPlot(") == len(page.figure_ids)
    bundle_head = plotly.offline.get_plotlyjs()[:300]
    assert text.count(bundle_head) == 1, "plotly.js must be embedded exactly once"
    assert all("src" not in s for s in page.scripts), "no external scripts"
    assert not [link for link in page.links if re.match(r"(https?:)?//", link.get("href") or link.get("src") or "")]
    outside_bundle = text.replace(plotly.offline.get_plotlyjs(), "")
    assert "http://" not in outside_bundle and "https://" not in outside_bundle
    assert "workload: resnet18, batch 1, int8" in text and "template: systolic" in text
    assert "minimise latency_ms" in text and "area_mm2 ≤ 12 mm^2" in text


def test_header_counts_match_the_points(tmp_path: Path) -> None:
    run = synthetic_run()
    points = run["points"]
    text, _ = _parse(_write(tmp_path, run))
    counts = dict(
        (label, int(n.replace(",", "")))
        for n, label in re.findall(r'<div class="count">([\d,]+)</div><div class="label">([^<]+)</div>', text)
    )
    assert counts == {
        "evaluated": len(points),
        "succeeded": int((points["status"] == "ok").sum()),
        "feasible": int(points["feasible"].sum()),
        "failed": int((points["status"] == "failed").sum()),
        "Pareto designs": int(points["pareto"].sum()),
    }
    assert 0 < counts["Pareto designs"] < counts["feasible"] < counts["succeeded"]


def test_pareto_table_has_one_row_per_pareto_design(tmp_path: Path) -> None:
    run = synthetic_run()
    text, page = _parse(_write(tmp_path, run))
    front = run["points"][run["points"]["pareto"]]
    assert page.table_rows["pareto"] == len(front)
    table = text.split('<section id="pareto">')[1].split("</section>")[0]
    for point_id in front["point_id"]:
        assert f">{point_id}<" in table
    assert "latency_ms [ms]" in table and "energy_dram_mj [mJ]" in table and "sram_kib" in table
    assert table.count('class="knee"') == 1


def test_failure_reasons_are_counted(tmp_path: Path) -> None:
    run = synthetic_run(n_failed=6)
    text, page = _parse(_write(tmp_path, run))
    failed = run["points"][run["points"]["status"] == "failed"]
    section = text.split('<section id="failures">')[1].split("</section>")[0]
    assert page.table_rows["failures"] == failed["reason"].nunique()
    for reason, count in failed["reason"].value_counts().items():
        assert re.search(rf">{count}</td><td class=\"txt\">{re.escape(html.escape(reason))}<", section)


def test_pareto_figure_draws_the_front_as_a_step_line_and_hover_names_params(tmp_path: Path) -> None:
    run = synthetic_run()
    text, _ = _parse(_write(tmp_path, run))
    fig = _figure_json(text, "fig-pareto")
    traces = {t["name"].split(" (")[0]: t for t in fig["data"]}
    assert {"infeasible", "feasible, dominated", "front", "Pareto front", "knee design"} <= set(traces)
    step = traces["front"]
    assert step["line"]["shape"] == "hv"
    xs = _values(step["x"])
    assert np.all(np.diff(xs) >= 0) and len(xs) == int(run["points"]["pareto"].sum())
    ys = _values(step["y"])
    assert np.all(np.diff(ys) <= 0), "a min-min front falls as latency grows"
    hover = traces["Pareto front"]["hovertext"][0]
    for name in ("rows = ", "cols = ", "dataflow = ", "sram_kib = ", "latency_ms</b> = ", " ms", " mJ"):
        assert name in hover
    assert "infeasible: area_mm2 ≤ 12 mm^2" in traces["infeasible"]["hovertext"][0]
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("latency_ms [ms]")
    # latency spans more than a decade: a log axis with plain 1-2-5 tick labels
    assert fig["layout"]["xaxis"]["type"] == "log"
    assert {"5", "10", "20", "50"} <= set(fig["layout"]["xaxis"]["ticktext"])


def test_layer_breakdown_offers_every_pareto_design_and_opens_on_the_knee(tmp_path: Path) -> None:
    run = synthetic_run()
    text, _ = _parse(_write(tmp_path, run))
    fig = _figure_json(text, "fig-layers")
    front = run["points"][run["points"]["pareto"]]
    knee = knee_point_id(front, run["objectives"])
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert len(buttons) == len(front)
    assert buttons[0]["label"].startswith(f"{knee} ★ knee")
    assert knee in fig["layout"]["title"]["text"]
    per_design = 2 + len(ENERGY_COMPONENTS)  # compute + stall, then one bar per energy component
    assert len(fig["data"]) == per_design * len(front)
    visible = [t for t in fig["data"] if t.get("visible", True) is True]
    assert [t["name"] for t in visible] == ["compute", "stall (memory)"] + [f"energy: {c}" for c in ENERGY_COMPONENTS]
    knee_layers = run["layers"][knee]
    assert np.allclose(_values(visible[0]["y"]), knee_layers["compute_cycles"])
    assert fig["layout"]["barmode"] == "stack"
    for index, button in enumerate(buttons):
        mask = button["args"][0]["visible"]
        assert sum(mask) == per_design and mask[index * per_design]
    _check_front_breakdown(text, run)


def _check_front_breakdown(text: str, run: dict) -> None:
    """The front breakdown stacks each Pareto design's energy and area to its totals (checked on a report that
    another test writes anyway: a report costs a second)."""
    fig = _figure_json(text, "fig-front-breakdown")
    front = run["points"][run["points"]["pareto"]]
    energy = [t for t in fig["data"] if t["legendgroup"] == "energy [mJ]"]
    area = [t for t in fig["data"] if t["legendgroup"] == "area [mm^2]"]
    assert sorted(t["name"] for t in energy) == sorted(ENERGY_COMPONENTS)
    assert [t["name"] for t in area] == ["pe_array", "sram", "wiring"]
    assert len(energy[0]["x"]) == len(front) and fig["layout"]["barmode"] == "stack"
    by_id = front.set_index("point_id")
    ids = [label.split(" ")[0] for label in energy[0]["x"]]
    stacked_area = np.sum([_values(t["y"]) for t in area], axis=0)
    assert np.allclose(stacked_area, by_id.loc[ids, "area_mm2"].to_numpy())
    stacked_energy = np.sum([_values(t["y"]) for t in energy], axis=0)
    assert np.allclose(stacked_energy, by_id.loc[ids, "energy_mj"].to_numpy(), rtol=1e-9)
    assert "area_sram_mm2 [mm^2]" in text  # the Pareto table carries the area blocks with their unit


def test_parallel_coordinates_encode_categorical_params(tmp_path: Path) -> None:
    run = synthetic_run()
    text, _ = _parse(_write(tmp_path, run))
    fig = _figure_json(text, "fig-parcoords")
    dimensions = {d["label"]: d for d in fig["data"][0]["dimensions"]}
    dataflow = dimensions["dataflow"]
    assert dataflow["ticktext"] == ["is", "os", "ws"]
    ok = run["points"][run["points"]["status"] == "ok"]
    codes = _values(dataflow["values"])
    assert len(codes) == len(ok)
    assert [dataflow["ticktext"][int(c)] for c in codes] == list(ok["dataflow"])
    assert {"rows", "cols", "sram_kib", "latency_ms [ms]", "energy_mj [mJ]", "Pareto", "feasible"} <= set(dimensions)
    assert dimensions["Pareto"]["ticktext"] == ["no", "yes"]
    assert np.allclose(_values(fig["data"][0]["line"]["color"]), ok["latency_ms"])


def test_three_objectives_add_3d_view_and_scatter_matrix(tmp_path: Path) -> None:
    objectives = [Objective("latency_ms", "min"), Objective("energy_mj", "min"), Objective("area_mm2", "min")]
    run = synthetic_run(objectives=objectives, constraints=[Constraint("power_w", high=50.0)])
    text, page = _parse(_write(tmp_path, run, max_drawn_points=len(run["points"])))  # at the threshold: small path
    assert {t["type"] for t in _figure_json(text, "fig-pareto")["data"]} == {"scatter"}
    assert "as density images" not in text
    assert page.figure_ids == [
        "fig-pareto",
        "fig-pareto-3d",
        "fig-scatter-matrix",
        "fig-parcoords",
        "fig-hypervolume",
        "fig-front-breakdown",
        "fig-layers",
    ]
    assert page.table_rows["pareto"] == int(run["points"]["pareto"].sum())
    splom = _figure_json(text, "fig-scatter-matrix")
    assert [d["label"] for d in splom["data"][0]["dimensions"]] == [
        "latency_ms [ms]",
        "energy_mj [mJ]",
        "area_mm2 [mm^2]",
    ]
    scatter3d = _figure_json(text, "fig-pareto-3d")
    assert all(t["type"] == "scatter3d" for t in scatter3d["data"])


def test_maximised_objective_flips_the_step_and_the_knee(tmp_path: Path) -> None:
    objectives = [Objective("throughput_ips", "max"), Objective("energy_mj", "min")]
    run = synthetic_run(objectives=objectives)
    text, page = _parse(_write(tmp_path, run))
    fig = _figure_json(text, "fig-pareto")
    step = next(t for t in fig["data"] if t["name"] == "front (step line)")
    assert step["line"]["shape"] == "vh"
    assert np.all(np.diff(_values(step["y"])) >= 0), "more throughput costs energy along the front"
    assert page.table_rows["pareto"] == int(run["points"]["pareto"].sum())
    assert "maximise throughput_ips" in text


def test_one_objective_shows_progress_and_ranking_instead_of_a_front(tmp_path: Path) -> None:
    run = synthetic_run(objectives=[Objective("edp", "min")])
    text, page = _parse(_write(tmp_path, run))
    assert page.figure_ids == [
        "fig-objective-progress",
        "fig-objective-ranked",
        "fig-parcoords",
        "fig-front-breakdown",
        "fig-layers",
    ]
    progress = _figure_json(text, "fig-objective-progress")
    best = next(t for t in progress["data"] if t["name"] == "best so far")
    assert np.all(np.diff(_values(best["y"])) <= 0)
    feasible = run["points"][run["points"]["feasible"]]
    assert math.isclose(_values(best["y"])[-1], feasible["edp"].min())
    assert page.table_rows["pareto"] == int(run["points"]["pareto"].sum()) == 1
    assert "Best design" in text


def test_zero_feasible_points_says_so(tmp_path: Path) -> None:
    run = synthetic_run(constraints=[Constraint("area_mm2", high=0.1)])
    assert not run["points"]["feasible"].any()
    text, page = _parse(_write(tmp_path, run))
    assert "No feasible design." in text
    assert "No Pareto designs" in text and page.table_rows["pareto"] == 0
    assert "fig-layers" not in page.figure_ids and "fig-pareto" in page.figure_ids
    ok = int((run["points"]["status"] == "ok").sum())
    assert f"violated by {ok:,} of {ok:,} successful points" in text


def test_every_point_failed(tmp_path: Path) -> None:
    points = pd.DataFrame(
        {
            "point_id": ["a", "b", "c"],
            "seq": [0, 1, 2],
            "status": ["failed"] * 3,
            "reason": ["MappingError: x", "MappingError: x", None],
            "rows": [16, 32, 64],
            "cols": [16, 16, 16],
            "dataflow": ["ws", "os", "is"],
            "sram_kib": [64.0, 128.0, 256.0],
            "latency_ms": [np.nan] * 3,
            "energy_mj": [np.nan] * 3,
            "area_mm2": [np.nan] * 3,
            "feasible": [np.nan] * 3,
            "pareto": [np.nan] * 3,
        }
    )
    run = {
        "points": points,
        "objectives": [Objective("latency_ms", "min"), Objective("energy_mj", "min")],
        "constraints": [Constraint("area_mm2", high=5)],
        "param_names": PARAMS,
        "layers": {},
        "hypervolume": None,
    }
    text, page = _parse(_write(tmp_path, run))
    assert page.figure_ids == []
    assert "No point was evaluated successfully" in text
    assert page.table_rows["failures"] == 2
    assert "(no reason given)" in text


def test_nan_metrics_and_missing_layers_are_tolerated(tmp_path: Path) -> None:
    run = synthetic_run()
    points = run["points"]
    ok_index = points.index[(points["status"] == "ok") & ~points["pareto"]]
    points.loc[ok_index[:3], "energy_mj"] = np.nan
    points.loc[ok_index[3:5], "power_w"] = np.nan
    knee = knee_point_id(points[points["pareto"]], run["objectives"])
    layers = {k: v for k, v in run["layers"].items() if k != knee}
    text, page = _parse(_write(tmp_path, {**run, "layers": layers}))
    assert "3 point(s) with missing values are not drawn" in text
    fig = _figure_json(text, "fig-layers")
    assert len(fig["layout"]["updatemenus"][0]["buttons"]) == int(points["pareto"].sum()) - 1
    assert knee not in fig["layout"]["title"]["text"]

    text, page = _parse(_write(tmp_path, {**run, "layers": {}}))
    assert "No per-layer data was recorded" in text and "fig-layers" not in page.figure_ids


def test_missing_columns_and_objectives_are_reported() -> None:
    run = synthetic_run(n_points=5, n_failed=0)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['latency_ms'\]"):
        write_report(
            Path("unused.html"),
            run["points"].drop(columns=["latency_ms"]),
            title="t",
            objectives=run["objectives"],
            constraints=[],
            param_names=PARAMS,
            layers={},
        )
    with pytest.raises(ValueError, match="at least one objective"):
        write_report(
            Path("unused.html"), run["points"], title="t", objectives=[], constraints=[], param_names=[], layers={}
        )


def test_knee_point_is_the_balanced_compromise() -> None:
    front = pd.DataFrame(
        {"point_id": ["fast", "balanced", "frugal"], "latency_ms": [1.0, 2.0, 10.0], "energy_mj": [10.0, 3.0, 1.0]}
    )
    objectives = [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    assert knee_point_id(front, objectives) == "balanced"
    # Throughput is maximised: "balanced" gives up almost none of it; read as "min", "frugal" would win.
    throughput = front.assign(throughput_ips=[10.0, 9.5, 1.0])
    assert knee_point_id(throughput, [Objective("throughput_ips", "max"), objectives[1]]) == "balanced"
    assert knee_point_id(throughput, [Objective("throughput_ips", "min"), objectives[1]]) == "frugal"
    assert knee_point_id(front.iloc[:0], objectives) is None
    assert knee_point_id(front.iloc[[2]], objectives) == "frugal"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (float("nan"), "—"),
        (None, "—"),
        (0.0, "0"),
        (3.14159265, "3.142"),
        (0.000123456, "0.0001235"),
        (1234567.8, "1,234,568"),
        (12, "12"),
        (np.int64(65536), "65,536"),
        (True, "yes"),
        ("ws", "ws"),
        (2.5e17, "2.5e+17"),
    ],
)
def test_format_value(value: object, text: str) -> None:
    assert format_value(value) == text
