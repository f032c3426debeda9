"""Reading an ONNX file for the importer: load and check it, make every input dimension concrete, infer shapes.

onnx is imported inside these functions: it is heavy, and only a model that is an ONNX file needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dse.graph import GraphError

if TYPE_CHECKING:
    import onnx


def read_model(path: Path) -> onnx.ModelProto:
    """The model in ``path``, refused with a GraphError unless onnx reads it and its checker passes."""
    import onnx

    if not path.is_file():
        raise GraphError(f"{path}: no such ONNX file")
    try:
        model = onnx.load(str(path))
    except Exception as err:  # protobuf DecodeError, OSError, external-data errors
        raise GraphError(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") from None
    if not model.graph.node and not model.graph.input:
        raise GraphError(f"{path}: not an ONNX model (no graph nodes or inputs were found)")
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # onnx.checker.ValidationError and friends
        raise GraphError(f"{path}: invalid ONNX model: {err}") from None
    return model


def fix_input_dims(model: onnx.ModelProto, path: Path, batch: int | None, symbolic: dict[str, int]) -> None:
    """Give every graph input concrete dimensions so shape inference yields concrete shapes everywhere.

    Shapes the exporter recorded for intermediate values and outputs are dropped first: they were
    inferred from the symbolic inputs and would only conflict with the concrete ones.
    """
    del model.graph.value_info[:]
    for output in model.graph.output:
        output.type.tensor_type.ClearField("shape")
    initializers = {t.name for t in model.graph.initializer}
    batch_names: set[str] = set()
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if value.name not in initializers and dims and dims[0].HasField("dim_param"):
            batch_names.add(dims[0].dim_param)
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            raise GraphError(f"{path}: graph input {value.name!r} has no shape; export the model with input shapes")
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                if axis == 0 and batch is not None and dim.dim_value != batch:
                    raise GraphError(
                        f"{path}: graph input {value.name!r} has a fixed batch of {dim.dim_value}, so batch={batch} "
                        f"cannot be applied; export the model with a dynamic batch axis or use batch {dim.dim_value}",
                        node=value.name,
                    )
                continue
            param = dim.dim_param if dim.HasField("dim_param") else ""
            if param in symbolic:
                dim.dim_value = int(symbolic[param])
            elif axis == 0 or (param and param in batch_names):
                dim.dim_value = batch if batch is not None else 1
            else:
                label = f"symbolic dimension {param!r}" if param else "an unknown dimension"
                raise GraphError(
                    f"{path}: graph input {value.name!r} has {label} at axis {axis}; only the batch axis is "
                    f"filled in automatically; give it a value with symbolic_dims={{{param or 'name'!r}: N}} "
                    "or export the model with a fixed size",
                    node=value.name,
                )


def infer_shapes(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """ONNX's own shape inference over the concrete inputs: the shapes every derived shape is checked against."""
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as err:  # onnx raises several types here (InferenceError, RuntimeError)
        raise GraphError(f"{path}: ONNX shape inference failed: {err}") from None
