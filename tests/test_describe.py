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
