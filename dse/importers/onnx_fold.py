"""Shape arithmetic folded away before import, with onnx's own reference evaluator.

Exporters compute reshape targets, masks and position ids at run time (Shape -> Gather -> Concat ->
Reshape, Range -> Equal -> Where, ...). Once every input dimension is concrete (``fix_input_dims``)
those subgraphs depend only on constants, so each node whose inputs are all known is evaluated once
by ``onnx.reference`` and its outputs become initializers. What is left are the nodes that read an
activation: the work a performance model costs.

Why onnx.reference (benchmarks/onnx_import_speed.py times it: 0.68 s for a 12-layer GPT-2 TorchScript
export with 529 folded nodes): it is part of onnx, which dse
already needs, implements every standard op, runs node by node (so each node's output size is checked
before it is computed: a model that declares a 10^9-element constant never allocates it), and needs
no weights, so shapes-only models fold too. onnxruntime's graph optimizer folds the same subgraphs
but must load every weight, refuses models whose external weights are absent, fuses ops into
com.microsoft kernels the importer would then have to know, and is a 20 MB dependency.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.graph import GraphError

if TYPE_CHECKING:
    import onnx

FOLD_LIMIT = 1 << 16  # elements: larger constants are weights, kept (shape only) for the importer
# Ops never folded: random (a different value each run), or carrying a quantized weight's precision.
_NEVER_FOLD = {
    "QuantizeLinear",
    "DequantizeLinear",
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}
# Ops whose output is never larger than their largest input (safe to run before knowing the output shape).
_NON_EXPANDING = {
    "Cast", "GatherElements", "Slice", "Squeeze", "Unsqueeze", "Reshape", "Identity", "Flatten",
    "Transpose", "Neg", "Abs", "Not", "Sqrt", "Reciprocal", "Floor", "Ceil", "ReduceProd",
    "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "Sign", "IsNaN", "IsInf", "Shape", "Size",
}  # fmt: skip


@dataclass
class FoldResult:
    """The model with its constant subgraphs replaced by initializers, and what was folded."""

    model: onnx.ModelProto
    has_data: Callable[[onnx.TensorProto], bool]
    folded: Counter[str] = field(default_factory=Counter)  # op type -> nodes folded
    nodes_before: int = 0


def _concrete(info: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    tensor_type = info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]
    return tuple(dims) if all(d >= 0 for d in dims) else None


@dataclass
class _ShapeTable:
    """Concrete shapes by value name, completed node by node while folding.

    ONNX's whole-graph inference runs before folding, so an output whose shape depends on a value that
    folding only now computed (a Shape of a folded mask, a Reshape target built from sizes) is unknown
    to it. Inferring that one node again with the folded values (``infer_node_outputs``) lets the next
    Shape fold in the same pass, instead of one whole-graph pass per dependent stage (a Swin has dozens).
    """

    shapes: dict[str, tuple[int, ...] | None]
    elem_types: dict[str, int]
    found: dict[str, onnx.ValueInfoProto] = field(default_factory=dict)  # shapes inferred here

    @classmethod
    def of(cls, graph: onnx.GraphProto) -> _ShapeTable:
        shapes: dict[str, tuple[int, ...] | None] = {}
        elem_types: dict[str, int] = {}
        for info in (*graph.input, *graph.value_info, *graph.output):
            shapes[info.name] = _concrete(info)
            elem_types[info.name] = info.type.tensor_type.elem_type
        for tensor in graph.initializer:  # Shape/Size of a constant (even one whose data is absent) is its dims
            shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
            elem_types[tensor.name] = tensor.data_type
        return cls(shapes, elem_types)

    def infer(
        self, node: onnx.NodeProto, value: Callable[[str], np.ndarray | None], opset_imports: Sequence[Any]
    ) -> None:
        """The concrete shapes of a kept node's outputs, where whole-graph inference left them open."""
        outputs = [o for o in node.output if o]
        if all(self.shapes.get(o) is not None for o in outputs) or node.domain not in ("", "ai.onnx"):
            return
        if any(a.g.node for a in node.attribute):  # If/Loop/Scan: their bodies are not inferred here
            return
        import onnx
        from onnx import helper, numpy_helper

        types, data = {}, {}
        for name in node.input:
            if not name or name in types:
                continue
            elem_type = self.elem_types.get(name, 0)
            if not elem_type:
                return
            types[name] = helper.make_tensor_type_proto(elem_type, self.shapes.get(name))
            array = value(name)
            if array is not None:
                data[name] = numpy_helper.from_array(np.asarray(array), name)
        try:
            domain_version = next(o.version for o in opset_imports if o.domain in ("", "ai.onnx"))
            schema = onnx.defs.get_schema(node.op_type, domain_version, "")
            inferred = onnx.shape_inference.infer_node_outputs(schema, node, types, data, opset_imports=opset_imports)
        except Exception:  # no schema, or inference refuses: whole-graph inference and the importer decide
            return
        for name, type_proto in inferred.items():
            info = helper.make_value_info(name, type_proto)
            shape = _concrete(info)
            if shape is not None and self.shapes.get(name) is None:
                self.shapes[name] = shape
                self.elem_types[name] = type_proto.tensor_type.elem_type
                self.found[name] = info


def fold_constants(model: onnx.ModelProto, path: Path, has_data: Callable[[onnx.TensorProto], bool]) -> FoldResult:
    """Evaluate every node whose inputs are all known constants (or shapes of activations) once."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    table = _ShapeTable.of(graph)
    shapes = table.shapes
    pending = {t.name: t for t in graph.initializer}
    known: dict[str, np.ndarray] = {}

    def value(name: str) -> np.ndarray | None:
        if name in known:
            return known[name]
        tensor = pending.get(name)
        if tensor is None or math.prod(tensor.dims) > FOLD_LIMIT or not has_data(tensor):
            return None
        try:
            known[name] = numpy_helper.to_array(tensor)
        except (KeyError, ValueError, TypeError) as exc:  # a corrupt file: unknown data type, wrong byte count
            raise GraphError(
                f"initializer {name!r} cannot be read ({type(exc).__name__}: data type {tensor.data_type}, "
                f"dims {list(tensor.dims)}); the file is damaged or not a valid ONNX model",
                node=name,
            ) from None
        return known[name]

    opsets = {o.domain or "": o.version for o in model.opset_import}
    result = FoldResult(model, has_data, nodes_before=len(graph.node))
    kept: list[onnx.NodeProto] = []
    new_initializers: list[onnx.TensorProto] = []
    queue = deque(graph.node)
    while queue:
        node = queue.popleft()
        branch = _taken_branch(node, value)
        if branch is not None:  # an If on a known condition is the branch it takes
            queue.extendleft(reversed(branch))
            result.folded[node.op_type] += 1
            continue
        table.infer(node, value, model.opset_import)
        outputs = _fold_node(node, shapes, value, opsets, ReferenceEvaluator)
        if outputs is None:
            kept.append(node)
            continue
        for name, array in zip(node.output, outputs):
            if not name:
                continue
            array = np.asarray(array)
            known[name] = array
            shapes[name] = tuple(int(d) for d in array.shape)
            new_initializers.append(numpy_helper.from_array(array, name))
        result.folded[node.op_type] += 1
    if result.folded:
        folded_names = {t.name for t in new_initializers}
        del graph.node[:]
        graph.node.extend(kept)
        graph.initializer.extend(new_initializers)
        remaining = [v for v in graph.value_info if v.name not in folded_names and v.name not in table.found]
        del graph.value_info[:]
        graph.value_info.extend([*remaining, *table.found.values()])
        for output in graph.output:
            if output.name in folded_names:
                raise GraphError(
                    f"{path}: graph output {output.name!r} is a constant (it does not depend on any input); "
                    "nothing to cost",
                    node=output.name,
                )
    return result


def _fold_node(
    node: onnx.NodeProto,
    shapes: dict[str, tuple[int, ...] | None],
    value: Callable[[str], np.ndarray | None],
    opsets: dict[str, int],
    evaluator: type,
) -> list[np.ndarray] | None:
    """The outputs of ``node`` when all it reads is known and small, else None (the node stays)."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _NEVER_FOLD or any(a.g.node for a in node.attribute):
        return None
    if node.op_type in ("Shape", "Size"):
        shape = shapes.get(node.input[0])
        if shape is None:
            return None
        if node.op_type == "Size":
            return [np.array(math.prod(shape), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        rank = len(shape)
        start = attrs.get("start", 0)
        end = attrs.get("end", rank)
        start, end = (min(max(s + rank if s < 0 else s, 0), rank) for s in (start, end))
        return [np.array(shape[start:end], dtype=np.int64)]
    inputs = [value(name) if name else None for name in node.input]
    if any(name and array is None for name, array in zip(node.input, inputs)):
        return None
    if not node.input and node.op_type != "Constant":
        return None
    declared = [shapes.get(o) for o in node.output if o]
    if all(s is not None for s in declared) and declared:
        if any(math.prod(s) > FOLD_LIMIT for s in declared if s is not None):
            return None
    elif node.op_type not in _NON_EXPANDING or any(a is not None and a.size > FOLD_LIMIT for a in inputs):
        if not _bounded_by_inputs(node, inputs):
            return None
    feeds = {name: array for name, array in zip(node.input, inputs) if name}
    try:
        outputs = _direct(node, inputs, opsets.get("", 0)) or evaluator(node, opsets=opsets).run(None, feeds)
    except Exception:  # the node is left for the importer, which names it if it cannot cost it
        return None
    if any(np.asarray(o).size > FOLD_LIMIT for o in outputs):
        return None
    return [np.asarray(o) for o in outputs]


def _taken_branch(node: onnx.NodeProto, value: Callable[[str], np.ndarray | None]) -> list[onnx.NodeProto] | None:
    """The nodes an If with a known condition runs, its branch outputs renamed to the If's outputs."""
    if node.op_type != "If" or node.domain not in ("", "ai.onnx"):
        return None
    condition = value(node.input[0])
    if condition is None or condition.size != 1:
        return None
    from onnx import helper

    key = "then_branch" if bool(condition.reshape(-1)[0]) else "else_branch"
    branch = next(a.g for a in node.attribute if a.name == key)
    renames = [
        helper.make_node("Identity", [inner.name], [outer], name=f"{node.name}:{outer}")
        for inner, outer in zip(branch.output, node.output)
        if outer
    ]
    return [*branch.node, *renames]


def _bounded_by_inputs(node: onnx.NodeProto, inputs: list[np.ndarray | None]) -> bool:
    """Whether a node with no inferred output shape produces a small output, judged from its inputs."""
    op = node.op_type
    try:
        if op == "ConstantOfShape" and inputs and inputs[0] is not None:
            return math.prod(int(d) for d in inputs[0].reshape(-1)) <= FOLD_LIMIT
        if op == "Range" and len(inputs) == 3 and all(a is not None for a in inputs):
            start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in inputs)  # type: ignore[union-attr]
            return delta != 0 and math.isfinite(start + limit + delta) and (limit - start) / delta <= FOLD_LIMIT
        if op in ("Expand", "Tile") and len(inputs) >= 2 and inputs[0] is not None and inputs[1] is not None:
            factors = [abs(int(d)) for d in inputs[1].reshape(-1)]
            return inputs[0].size * max(1, math.prod(factors)) <= FOLD_LIMIT
    except (TypeError, ValueError, OverflowError):
        return False
    sizes = [max(1, a.size) for a in inputs if a is not None]
    if op in _NON_EXPANDING or op == "Concat":
        return sum(sizes) <= FOLD_LIMIT
    return bool(sizes) and math.prod(sizes) <= FOLD_LIMIT and op not in ("Resize", "Pad", "Upsample")


def _direct(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list[np.ndarray] | None:
    """The few ops exporters emit by the thousand, computed straight with numpy (same results as
    onnx.reference, which costs about a millisecond a node to set up); None: let the evaluator run it."""
    from onnx import helper, numpy_helper

    op = node.op_type
    attrs = {a.name: a for a in node.attribute}
    if op == "Constant":
        if "value" in attrs:
            return [numpy_helper.to_array(attrs["value"].t)]
        if "value_int" in attrs or "value_ints" in attrs:
            return [np.array(helper.get_attribute_value(next(iter(attrs.values()))), dtype=np.int64)]
        return None
    if op == "Identity":
        return [inputs[0]] if inputs[0] is not None else None
    if op == "Unsqueeze":
        axes = attrs["axes"].ints if opset < 13 and "axes" in attrs else inputs[1] if len(inputs) > 1 else None
        if axes is None or inputs[0] is None:
            return None
        rank = inputs[0].ndim + len(axes)
        return [np.expand_dims(inputs[0], tuple(normalize(int(a), rank) for a in np.asarray(axes).reshape(-1)))]
    if op == "Concat" and all(a is not None for a in inputs) and "axis" in attrs:
        return [np.concatenate(inputs, axis=attrs["axis"].i)]  # type: ignore[arg-type]
    if op == "Gather" and inputs[0] is not None and inputs[1] is not None:
        axis = attrs["axis"].i if "axis" in attrs else 0
        return [np.take(inputs[0], inputs[1], axis=axis)]
    if op == "Cast" and inputs[0] is not None and inputs[0].dtype.kind in "biuf":
        target = np.dtype(helper.tensor_dtype_to_np_dtype(attrs["to"].i))
        return [inputs[0].astype(target)] if target.kind in "biuf" else None
    return None


def normalize(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis
