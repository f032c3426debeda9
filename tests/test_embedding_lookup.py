"""An embedding look-up (ONNX Gather on a weight table) is priced by the rows it reads, not the table.

Every family's cost of the look-up's weight READ traffic goes through ``Graph.read_numel`` (the table
scaled by ``attrs['weight_read_fraction']``); the table's storage (graph weight bytes, the RDU
placeable holding it) stays whole.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.importers import load_onnx
from mappers.rdu.problem import build_problem
from surrogates.systolic.closed_form import pair_costs
from surrogates.systolic.tables import arch_table, op_table

TABLE_ROWS, DIM, IDS = 50_000, 64, 16


@pytest.fixture(scope="module")
def lookup(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    """ids[16] -> Gather(table[50000, 64], ids) -> [16, 64], imported at fp32."""
    table = numpy_helper.from_array(np.zeros((TABLE_ROWS, DIM), np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0)],
        "lookup",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [IDS])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [IDS, DIM])],
        [table],
    )
    path = Path(tmp_path_factory.mktemp("lookup")) / "lookup.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return load_onnx(path, precision="fp32")


def _gather(graph: Graph):
    (op,) = [op for op in graph.ops if op.attrs.get("fn") == "gather"]
    return op, op.weights[0]


def test_the_ir_reads_the_rows_and_stores_the_table(lookup: Graph):
    op, table = _gather(lookup)
    assert op.attrs["weight_read_fraction"] == pytest.approx(IDS / TABLE_ROWS)
    assert lookup.read_numel(op, table) == IDS * DIM
    assert lookup.read_nbytes(op, table) == IDS * DIM * 4 == op.attrs["weight_read_bytes"]
    assert lookup.read_numel(op, "ids") == IDS  # activations are read whole
    assert lookup.weight_bytes == TABLE_ROWS * DIM * 4  # the footprint is the whole table
    whole = replace(op, attrs={k: v for k, v in op.attrs.items() if k != "weight_read_fraction"})
    assert lookup.read_numel(whole, table) == TABLE_ROWS * DIM  # no attr: the old whole-table read


def test_systolic_and_surrogate_read_the_rows(lookup: Graph):
    point = {"rows": 16, "cols": 16, "dram_gbps": 1.0}  # slow DRAM: the look-up's time is its traffic
    trace = PointEvaluator(lookup, "systolic").trace(point)
    (layer,) = trace.metrics.layers
    wb = trace.arch.word_bytes
    assert layer.dram_read_bytes == (IDS * DIM + IDS) * wb  # the rows and the ids, not the table
    assert layer.dram_write_bytes == IDS * DIM * wb
    baseline = pair_costs(op_table(lookup), arch_table("systolic", [point], {}))
    assert baseline["est_cycles"][0, 0] == pytest.approx(layer.cycles, rel=1e-9)


def test_multicore_reads_the_rows(lookup: Graph):
    trace = PointEvaluator(lookup, "multicore").trace({})
    (layer,) = trace.metrics.layers
    assert layer.dram_read_bytes == (IDS * DIM + IDS) * trace.arch.cores[0].word_bytes


def test_gpu_reads_the_rows(lookup: Graph):
    trace = PointEvaluator(lookup, "gpu").trace({})
    (layer,) = trace.metrics.layers
    eb = trace.arch.elem_bytes
    assert layer.dram_read_bytes == (IDS * DIM + IDS) * eb
    assert layer.dram_write_bytes == IDS * DIM * eb


def test_rdu_places_the_table_and_reads_the_rows(lookup: Graph):
    op, table = _gather(lookup)
    arch = PointEvaluator(lookup, "rdu").arch({})
    (placeable,) = [p for p in build_problem(lookup, arch).placeables if p.name == f"weights:{op.name}"]
    assert placeable.nbytes == TABLE_ROWS * DIM * 4  # stored whole in its tier
    assert placeable.readers == ((0, IDS * DIM * 4),)  # read by the rows it selects
    assert PointEvaluator(lookup, "rdu")({}).values["latency_ms"] > 0
