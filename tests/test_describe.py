"""``dse validate``'s workload description: per-kind counts, MACs and weights, precisions, folding, missing weights."""

from __future__ import annotations

from dataclasses import replace

from dse.cli import main
from dse.describe import workload_lines
from dse.graph import Graph, OpKind
from dse.zoo import build


def test_lines_count_kinds_and_show_mixed_precision_folding_and_missing_weights():
    base = build("resnet18")
    ops = [
        replace(op, attrs={**op.attrs, "precision": "int8", "weight_precision": "int4" if i == 0 else "int8"})
        if op.kind is OpKind.CONV
        else op
        for i, op in enumerate(base.ops)
    ]
    meta = {**base.meta, "folded_nodes": {"Shape": 3, "Gather": 2}, "onnx_nodes": 60, "weights_missing": ["w1"]}
    graph = Graph(base.name, ops, base.tensors, meta)
    text = "\n".join(workload_lines(graph))
    assert "conv" in text and "20" in text and "1.81 GMAC" in text
    assert "precision int8 (weights int4): " + ops[0].name in text
    assert "precision int8: " in text and "(19 ops)" in text
    assert "folded 5 of 60 ONNX nodes into constants (3 Shape, 2 Gather)" in text
    assert "weight data missing for 1 tensors (w1)" in text


def test_validate_prints_the_description(capsys):
    assert main(["validate", "designs/quickstart.yaml"]) == 0
    out = capsys.readouterr().out
    assert "op kind" in out and "conv" in out and "matmul" in out


def test_per_layer_rows_and_report_carry_each_layers_precision():
    """A mixed-precision model shows its per-layer precision in the per-layer rows (CSV, store) and the report."""
    import pandas as pd

    from dse.evaluate import PointEvaluator
    from dse.objectives import Objective
    from dse.report.data import ReportData
    from dse.report.figures_layers import layer_breakdown_figure

    base = build("small_cnn")
    convs = [op.name for op in base.ops if op.kind is OpKind.CONV]
    ops = [
        replace(
            op, attrs={**op.attrs, "precision": "int8", "weight_precision": "int4" if op.name == convs[0] else "int8"}
        )
        if op.kind is OpKind.CONV
        else op
        for op in base.ops
    ]
    graph = Graph(base.name, ops, base.tensors, dict(base.meta))
    metrics = PointEvaluator(graph, "systolic")({"rows": 16, "cols": 16})
    rows = {layer.layer: layer.row() for layer in metrics.layers}
    assert rows[convs[0]]["precision"] == "int8 (weights int4)"
    assert all(rows[name]["precision"] == "int8" for name in convs[1:] if name in rows)
    assert not any("precision" in row for name, row in rows.items() if name not in convs)
    frame = pd.DataFrame(list(rows.values()))
    points = pd.DataFrame(
        {
            "point_id": ["p1"],
            "seq": [0],
            "status": ["ok"],
            "latency_ms": [1.0],
            "energy_mj": [1.0],
            "feasible": [True],
            "pareto": [True],
        }
    )
    objectives = [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    data = ReportData(points, objectives, [], [])
    fig, _ = layer_breakdown_figure(data, {"p1": frame})
    kinds = {str(c[0]) for trace in fig.data if trace.customdata is not None for c in trace.customdata}
    assert "conv, int8 (weights int4)" in kinds and "conv, int8" in kinds
