"""ONNX models become the same graph IR the zoo builds (NCHW activations, ops via GraphBuilder).

The importer walks the ONNX graph once, in its (checker-verified) topological order.
Compute nodes become IR ops; views (Reshape, Transpose, Flatten, ...) only rename an
activation's shape, so no op and no copy is costed for them. Constants (initializers and
Constant nodes) never become activations: an op that mixes an activation with a constant
reads only the activation, and the constant becomes one of its weights. ONNX's own shape
inference runs first and every shape the importer derives is checked against it, so an
op whose semantics the importer gets wrong stops with a message instead of costing the
wrong work.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dse.graph import PRECISION_BYTES, Graph, GraphError
from dse.importers.onnx_load import fix_input_dims, infer_shapes, read_model
from dse.importers.onnx_ops import SUPPORTED_OP_TYPES, OnnxImporter

__all__ = ["SUPPORTED_OP_TYPES", "load_onnx"]


def load_onnx(
    path: str | Path,
    *,
    batch: int | None = None,
    precision: str = "int8",
    symbolic_dims: Mapping[str, int] | None = None,
) -> Graph:
    """Import an ONNX file as a Graph.

    ``batch`` replaces a symbolic or unknown leading (batch) dimension of the graph inputs
    (default 1); a model exported with a fixed batch keeps it, and asking for a different one
    is an error. ``symbolic_dims`` gives values for other symbolic input dimensions by name
    (for example ``{"sequence": 128}``).
    """
    if precision not in PRECISION_BYTES:
        raise GraphError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise GraphError(f"batch must be a positive integer, got {batch!r}")
    model = read_model(Path(path))
    fix_input_dims(model, Path(path), batch, dict(symbolic_dims or {}))
    inferred = infer_shapes(model, Path(path))
    importer = OnnxImporter(Path(path), inferred, PRECISION_BYTES[precision])
    graph = importer.run()
    graph.meta.update(
        source=str(path),
        format="onnx",
        precision=precision,
        batch=importer.batch,
        opset=importer.opset,
        folded_batchnorm=dict(importer.folded_batchnorm),
    )
    return graph
