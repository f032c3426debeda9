"""Shapes through absent weights, and detection models' data-dependent counts (issue 31), on small graphs.

A model shipped without its external weight file keeps every initializer's dims: Shape/Size of such a
tensor, and every shape computed from it, must fold; only a value that truly needs the absent data
(a Reshape target read from a buffer) is refused, naming the node and the initializer. NonZero and
NonMaxSuppression outputs are bounded (worst case, or ``max_detections``) and carried downstream.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dse.describe import workload_lines
from dse.graph import GraphError
from dse.importers import load_onnx
from dse.spec import ONNX_MAX_DETECTIONS
from dse.workload import load_workload


def absent(name: str, dims: list[int], data_type: int = TensorProto.FLOAT) -> onnx.TensorProto:
    """An initializer whose data sits in 'weights.bin', a file that is not there."""
    tensor = TensorProto(name=name, data_type=data_type, dims=dims, data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * int(np.prod(dims))))):
        tensor.external_data.add(key=key, value=value)
    return tensor


def ints(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def save(path: Path, nodes, inputs, outputs, initializers) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.fixture(autouse=True)
def _quiet_missing_weights() -> None:
    logging.getLogger("dse.importers").setLevel(logging.ERROR)


def test_shape_and_size_of_absent_weights_fold_through_several_stages(tmp_path: Path) -> None:
    """A Swin's pattern: a bias table indexed by an absent buffer, viewed by sizes read off it (Shape, Size),
    then a second stage whose Reshape target is the Shape of a tensor only the first stage's folding sizes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16, 8])
    nodes = [
        helper.make_node("Gather", ["table", "index"], ["bias"], name="bias_lookup"),  # (16*16,) rows of 2 heads
        helper.make_node("Size", ["index"], ["n"], name="size_of_index"),
        helper.make_node("Cast", ["n"], ["n_f"], to=TensorProto.FLOAT, name="n_float"),
        helper.make_node("Sqrt", ["n_f"], ["side_f"], name="side"),
        helper.make_node("Cast", ["side_f"], ["side"], to=TensorProto.INT64, name="side_int"),
        helper.make_node("Unsqueeze", ["side", "zero"], ["side1"], name="side_1d"),
        helper.make_node("Concat", ["side1", "side1", "minus1"], ["target"], axis=0, name="target"),
        helper.make_node("Reshape", ["bias", "target"], ["bias3"], name="bias_view"),  # (16, 16, 2)
        helper.make_node("Transpose", ["bias3"], ["bias_hnn"], perm=[2, 0, 1], name="bias_t"),
        helper.make_node("Shape", ["bias_hnn"], ["bias_shape"], name="shape_of_bias"),
        helper.make_node("MatMul", ["x", "w"], ["y"], name="proj"),  # (batch, 16, 32)
        helper.make_node("Reshape", ["y", "bias_shape"], ["y3"], name="by_bias_shape"),  # batch 1 -> (2, 16, 16)
        helper.make_node("Add", ["y3", "bias_hnn"], ["out"], name="add_bias"),
    ]
    initializers = [
        absent("table", [31 * 31, 2]),
        absent("index", [256], TensorProto.INT64),
        absent("w", [8, 32]),
        ints("zero", [0]),
        ints("minus1", [-1]),
    ]
    path = save(
        tmp_path / "m.onnx",
        nodes,
        [x],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["a", "b", "c"])],
        initializers,
    )
    graph = load_onnx(path)
    assert graph.macs == 16 * 8 * 32
    assert graph.meta["weights_missing"] == ["index", "table", "w"]
    assert graph.meta["folded_nodes"]["Size"] == 1 and graph.meta["folded_nodes"]["Shape"] == 1
    outputs = [t for t in graph.tensors.values() if t.kind == "output"]
    assert [t.shape for t in outputs] == [(2, 16, 16)]


@pytest.mark.parametrize("op_type", ["Reshape", "Expand", "Tile"])
def test_a_shape_read_from_absent_data_is_refused_naming_node_and_initializer(tmp_path: Path, op_type: str) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6])
    nodes = [
        helper.make_node("Add", ["sizes", "one"], ["sizes1"], name="plus_one"),
        helper.make_node(op_type, ["x", "sizes1"], ["y"], name="uses_absent"),
    ]
    initializers = [absent("sizes", [3], TensorProto.INT64), helper.make_tensor("one", TensorProto.INT64, [], [1])]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])
    with pytest.raises(GraphError) as info:
        load_onnx(save(tmp_path / "m.onnx", nodes, [x], [out], initializers))
    message = str(info.value)
    assert info.value.node == "uses_absent"
    assert f"node 'uses_absent' ({op_type})" in message and "initializer 'sizes'" in message
    assert "whose data is absent" in message and "\n" not in message


def detection_model(tmp_path: Path) -> Path:
    """Scores over 50 anchors x 3 classes: threshold (NonZero), NMS, the kept boxes gathered and projected."""
    boxes = helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 50, 4])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 3, 50])
    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["keep"], name="threshold"),
        helper.make_node("NonZero", ["keep"], ["kept"], name="nonzero"),
        helper.make_node("ReduceMax", ["kept"], ["kept_max"], keepdims=0, name="kept_max"),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "per_class"], ["selected"], name="nms"),
        helper.make_node("Gather", ["selected", "two"], ["box_index"], axis=1, name="box_index"),
        helper.make_node("Gather", ["boxes", "box_index"], ["picked"], axis=1, name="pick"),  # (1, K, 4)
        helper.make_node("MatMul", ["picked", "head"], ["out"], name="head"),  # (1, K, 8): K x 4 x 8 MACs
    ]
    initializers = [
        helper.make_tensor("threshold", TensorProto.FLOAT, [], [0.5]),
        helper.make_tensor("per_class", TensorProto.INT64, [1], [20]),
        helper.make_tensor("two", TensorProto.INT64, [], [2]),
        helper.make_tensor("head", TensorProto.FLOAT, [4, 8], np.zeros(32, np.float32)),
    ]
    outputs = [
        helper.make_tensor_value_info("out", TensorProto.FLOAT, ["a", "b", "c"]),
        helper.make_tensor_value_info("kept_max", TensorProto.INT64, []),
    ]
    return save(tmp_path / "det.onnx", nodes, [boxes, scores], outputs, initializers)


def test_detection_counts_are_bounded_at_the_worst_case_or_max_detections(tmp_path: Path) -> None:
    path = detection_model(tmp_path)
    worst = load_onnx(path)
    assert worst.meta["data_dependent_bounds"] == {
        "nonzero": {"op": "NonZero", "rows": 150, "worst_case": 150},
        "nms": {"op": "NonMaxSuppression", "rows": 60, "worst_case": 60},  # 3 classes x its own cap of 20
    }
    assert worst.macs == 60 * 4 * 8
    bounded = load_onnx(path, max_detections=10)
    assert bounded.macs == 10 * 4 * 8 and bounded.meta["max_detections"] == 10
    assert bounded.meta["data_dependent_bounds"]["nms"] == {"op": "NonMaxSuppression", "rows": 10, "worst_case": 60}
    lines = "\n".join(workload_lines(bounded))
    assert (
        "data-dependent counts bounded by max_detections 10: 1 NonMaxSuppression at 10 rows (worst case 60); "
        "1 NonZero at 10 rows (worst case 150)"
    ) in lines
    assert "set workload.max_detections" in "\n".join(workload_lines(worst))
    assert load_workload(str(path), **{ONNX_MAX_DETECTIONS: 10}).macs == bounded.macs
    with pytest.raises(GraphError, match="max_detections must be a positive integer"):
        load_onnx(path, max_detections=0)
