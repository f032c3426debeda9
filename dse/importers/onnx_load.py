"""Reading an ONNX file for the importer: load and check it, make every input dimension concrete, infer shapes.

onnx is imported inside these functions: it is heavy, and only a model that is an ONNX file needs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dse.graph import GraphError
from dse.importers.onnx_fold import FOLD_LIMIT
from dse.importers.onnx_standins import StandIns, stand_in_foreign_ops

if TYPE_CHECKING:
    import onnx


@dataclass
class LoadedModel:
    """A checked model and the initializers whose data it does not carry (shapes and dtypes only)."""

    model: onnx.ModelProto
    without_data: set[str] = field(default_factory=set)  # large or external: never needed to cost the model
    missing_files: dict[str, str] = field(default_factory=dict)  # initializer -> absent external file
    stand_ins: StandIns = field(default_factory=StandIns)  # onnxruntime / QONNX nodes, restored before the walk


def read_model(path: Path) -> LoadedModel:
    """The model in ``path``, refused with a GraphError unless onnx reads it and its checker passes.

    External weight files are read only for the small tensors folding may need; they must sit in the
    model's folder (a location outside it is refused). Absent files leave a shapes-only model, which is
    all a performance model needs: ``missing_files`` names them.
    """
    import onnx

    if not path.is_file():
        raise GraphError(f"{path}: no such ONNX file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # protobuf DecodeError, OSError, ...
        raise GraphError(f"{path}: not a readable ONNX model ({type(err).__name__}: {_first_line(err)})") from None
    if not model.graph.node and not model.graph.input:
        raise GraphError(f"{path}: not an ONNX model (no graph nodes or inputs were found)")
    loaded = LoadedModel(model)
    for tensor in model.graph.initializer:
        _resolve_external(tensor, path, loaded)
        _check_size(tensor, path)
        if math.prod(tensor.dims) > FOLD_LIMIT and tensor.name not in loaded.without_data:
            # a weight: its values never change a cost, and dropping them keeps inference and folding fast
            for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                tensor.ClearField(name)
            loaded.without_data.add(tensor.name)
    loaded.stand_ins = stand_in_foreign_ops(model, path, loaded.without_data)
    _check(model, path, loaded.without_data)
    return loaded


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else ""


def _resolve_external(tensor: onnx.TensorProto, path: Path, loaded: LoadedModel) -> None:
    """Read a small external tensor's bytes from inside the model's folder; strip the rest to shapes."""
    import onnx

    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    folder = path.resolve().parent
    target = (folder / location).resolve()
    if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
        raise GraphError(
            f"{path}: initializer {tensor.name!r} keeps its data at {location!r}, outside the model's folder "
            f"{folder}; external data files must sit in the model's folder",
            node=tensor.name,
        )
    numel = math.prod(tensor.dims)
    itemsize = _itemsize(tensor.data_type)
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT
    if not target.is_file():
        loaded.missing_files[tensor.name] = location
        loaded.without_data.add(tensor.name)
        return
    if numel > FOLD_LIMIT or itemsize is None:
        loaded.without_data.add(tensor.name)  # a weight: its values never change a cost
        return
    try:
        offset = int(info.get("offset", 0))
        length = int(info.get("length", numel * itemsize))
    except ValueError:
        raise GraphError(
            f"{path}: initializer {tensor.name!r} has a malformed external-data offset or length"
        ) from None
    with target.open("rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != numel * itemsize:
        raise GraphError(
            f"{path}: initializer {tensor.name!r} needs {numel * itemsize} bytes from {location!r} at offset "
            f"{offset}, found {len(data)}",
            node=tensor.name,
        )
    tensor.raw_data = data


def _check_size(tensor: onnx.TensorProto, path: Path) -> None:
    """An initializer whose data disagrees with its declared dims is refused before anything reads it."""
    if any(d < 0 for d in tensor.dims):
        raise GraphError(f"{path}: initializer {tensor.name!r} has a negative dimension {list(tensor.dims)}")
    numel = math.prod(tensor.dims)
    itemsize = _itemsize(tensor.data_type)
    if tensor.raw_data:
        found, expected = len(tensor.raw_data), None if itemsize is None else numel * itemsize
    else:
        fields = (tensor.float_data, tensor.int32_data, tensor.int64_data, tensor.double_data, tensor.uint64_data)
        found = max(len(f) for f in fields)
        expected = numel if found and tensor.data_type not in (14, 15, 16, 10, 21, 22, 23) else None
    if expected is not None and found != expected:
        raise GraphError(
            f"{path}: initializer {tensor.name!r} declares dims {list(tensor.dims)} ({numel} elements) but "
            f"carries {found} {'bytes' if tensor.raw_data else 'values'}",
            node=tensor.name,
        )


def _itemsize(data_type: int) -> int | None:
    from onnx import helper

    try:
        return int(np.dtype(helper.tensor_dtype_to_np_dtype(data_type)).itemsize)
    except Exception:  # string tensors, unknown codes and sub-byte types are never read
        return None


def _check(model: onnx.ModelProto, path: Path, without_data: set[str]) -> None:
    """onnx's checker; initializers without data stand in as graph inputs while it runs (it wants data)."""
    import onnx
    from onnx import helper

    graph = model.graph
    stripped = [t for t in graph.initializer if t.name in without_data]
    if stripped:
        kept = [t for t in graph.initializer if t.name not in without_data]
        stand_ins = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in stripped]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        graph.input.extend(stand_ins)
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # onnx.checker.ValidationError and friends
        raise GraphError(f"{path}: invalid ONNX model: {_first_line(err)}") from None
    finally:
        if stripped:
            del graph.input[len(graph.input) - len(stripped) :]
            graph.initializer.extend(stripped)


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


def infer_shapes(model: onnx.ModelProto, path: Path, data_prop: bool = True) -> onnx.ModelProto:
    """ONNX's own shape inference over the concrete inputs: the shapes every derived shape is checked against.

    ``data_prop=False`` where sizes are bounds rather than values (detection counts): propagating data
    through them would materialise tensors of millions of elements.
    """
    import onnx

    data_prop = data_prop and _data_prop_is_safe(model)
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=data_prop)
    except Exception as err:  # onnx raises several types here (InferenceError, RuntimeError)
        raise GraphError(f"{path}: ONNX shape inference failed: {_first_line(err)}") from None


def _data_prop_is_safe(model: onnx.ModelProto) -> bool:
    """onnx's data propagation materialises a constant Range: one declaring 10^9 elements would exhaust memory."""
    from onnx import numpy_helper

    constants = {t.name: t for t in model.graph.initializer if math.prod(t.dims) == 1}
    for node in model.graph.node:
        if node.op_type != "Range" or not all(n in constants for n in node.input):
            continue
        try:
            start, limit, delta = (float(numpy_helper.to_array(constants[n]).reshape(-1)[0]) for n in node.input)
        except Exception:  # unreadable: let the checker's and the importer's messages speak
            return False
        if delta == 0 or not math.isfinite(start + limit + delta) or (limit - start) / delta > FOLD_LIMIT:
            return False
    return True
