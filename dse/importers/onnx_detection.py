"""Detection models: the counts that depend on the data (boxes kept by a threshold or by NMS), bounded.

NonZero (the boxes whose score passes a threshold) and NonMaxSuppression (the boxes that survive
suppression) produce as many rows as the data decides, so ONNX shape inference leaves that count
open and nothing after them could be costed. Each such output gets an explicit bound instead: its
worst case (every candidate kept: NonZero's input size; NMS's boxes x classes, capped by its own
``max_output_boxes_per_class``), lowered to ``max_detections`` when the workload gives one. The
bound is written into the model's value_info, and ONNX's own inference carries it to everything
downstream (TopK's k, GatherND, RoiAlign, the concatenated outputs): a bounded count costs the
work of that many boxes, an upper bound on the real run. ``Graph.meta['data_dependent_bounds']``
records each bound and ``dse validate`` shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dse.graph import OpKind
from dse.importers.onnx_load import infer_shapes
from dse.importers.onnx_walk import Activation, GraphWalk, shape_of

if TYPE_CHECKING:
    import onnx

# The ops whose output count depends on the data, and the fixed axis count of their output.
DATA_DEPENDENT_OPS: tuple[str, ...] = ("NonZero", "NonMaxSuppression")
DETECTION_OPS: tuple[str, ...] = (*DATA_DEPENDENT_OPS, "RoiAlign")
MAX_DETECTIONS = "max_detections"  # the workload option that lowers every bound


@dataclass(frozen=True)
class Bound:
    """One data-dependent output: the most rows it can have, and the count the import costs."""

    node: str
    op_type: str
    worst_case: int
    bound: int

    def record(self) -> dict[str, int | str]:
        """What ``Graph.meta['data_dependent_bounds']`` keeps per node (``dse validate`` shows it)."""
        return {"op": self.op_type, "rows": self.bound, "worst_case": self.worst_case}


def infer_bounded(
    model: onnx.ModelProto, path: Path, max_detections: int | None, bounds: dict[str, Bound]
) -> onnx.ModelProto:
    """ONNX shape inference, with every data-dependent output's count fixed to its bound (added to ``bounds``).

    A bound needs its node's input shapes, which may come from an earlier bound (NMS reads the boxes a
    NonZero kept): inference repeats until no new bound is set, once per such stage.
    """
    inferred = infer_shapes(model, path, data_prop=not bounds)
    for _ in range(len(inferred.graph.node) + 1):
        seeded = _seed_bounds(inferred, max_detections, bounds)
        if not seeded:
            return inferred
        inferred = infer_shapes(inferred, path, data_prop=False)  # folding computes what data propagation would
    return inferred


def _seed_bounds(model: onnx.ModelProto, max_detections: int | None, bounds: dict[str, Bound]) -> int:
    from onnx import TensorProto, helper

    graph = model.graph
    infos = {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}
    shapes = {name: shape_of(info) for name, info in infos.items()}
    for tensor in graph.initializer:
        shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
    constants = {t.name: t for t in graph.initializer}
    seeded: dict[str, onnx.ValueInfoProto] = {}
    for index, node in enumerate(graph.node):
        if node.op_type not in DATA_DEPENDENT_OPS or node.domain not in ("", "ai.onnx") or not node.output[0]:
            continue
        out = node.output[0]
        if shapes.get(out) is not None:
            continue
        worst = _worst_case(node, shapes, constants)
        if worst is None:
            continue
        name = node.name or f"{node.op_type}_{index}"
        count = worst if max_detections is None else min(worst, max_detections)
        bounds[name] = Bound(name, node.op_type, worst, count)
        rows = (len(shapes[node.input[0]] or ()), count) if node.op_type == "NonZero" else (count, 3)
        seeded[out] = helper.make_tensor_value_info(out, TensorProto.INT64, list(rows))
    if seeded:  # the open shapes ONNX recorded for these outputs give way to the bounds
        existing = [v for v in graph.value_info if v.name not in seeded]
        del graph.value_info[:]
        graph.value_info.extend([*existing, *seeded.values()])
    return len(seeded)


def _worst_case(
    node: onnx.NodeProto, shapes: dict[str, tuple[int, ...] | None], constants: dict[str, onnx.TensorProto]
) -> int | None:
    """Every candidate kept: NonZero's input size; NMS's batch x classes x boxes (its own per-class cap applied)."""
    if node.op_type == "NonZero":
        shape = shapes.get(node.input[0])
        return None if shape is None else max(1, math.prod(shape))
    scores = shapes.get(node.input[1]) if len(node.input) > 1 else None
    if scores is None or len(scores) != 3:
        return None
    batch, classes, boxes = scores
    per_class = boxes
    if len(node.input) > 2 and node.input[2] in constants:
        from onnx import numpy_helper

        cap = int(numpy_helper.to_array(constants[node.input[2]]).reshape(-1)[0])
        per_class = min(boxes, cap) if cap > 0 else 0
    return max(1, batch * classes * per_class)


class DetectionOps(GraphWalk):
    """Converters for the detection ops; OnnxImporter registers them."""

    def _selection(self, node: onnx.NodeProto, name: str) -> None:
        """NonZero / NonMaxSuppression: one pass over the scores (or mask) it selects from, its output the
        bounded index rows. NMS's pairwise IoU suppression runs on the host in practice: not costed here."""
        read = self._activation(node, name, 0 if node.op_type == "NonZero" else 1)
        inputs = [v for v in self._present_inputs(node) if isinstance(v, Activation)]
        out_shape = self._inferred_shape(node, name)
        out = self.builder.add_op(
            name,
            OpKind.ELEMENTWISE,
            {"N": math.prod(read.shape)},
            [self._use(a) for a in inputs],
            out_shape,
            None,
            {"fn": node.op_type.lower(), "arity": len(inputs)},
        )
        self._bind_op(node, name, out)

    def _roi_align(self, node: onnx.NodeProto, name: str) -> None:
        """Each output element averages sampling_ratio^2 bilinear samples (4 reads each) of the feature map."""
        self._activation(node, name, 0)
        attrs = self._attrs(node)
        out_shape = self._inferred_shape(node, name)
        ratio = int(attrs.get("sampling_ratio", 0)) or 2  # 0: adaptive (ceil(roi/output)); 2 is torchvision's
        inputs = [v for v in self._present_inputs(node) if isinstance(v, Activation)]
        out = self.builder.add_op(
            name,
            OpKind.ELEMENTWISE,
            {"N": math.prod(out_shape) * ratio * ratio * 4},
            [self._use(a) for a in inputs],
            out_shape,
            None,
            {"fn": "roi_align", "arity": len(inputs)},
        )
        self._bind(node, name, Activation(out, out_shape))
