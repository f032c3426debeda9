"""ONNX models become the same graph IR the zoo builds (NCHW activations, ops via GraphBuilder).

The importer walks the ONNX graph once, in its (checker-verified) topological order.
Compute nodes become IR ops; views (Reshape, Transpose, Flatten, ...) only rename an
activation's shape, so no op and no copy is costed for them. Constants (initializers and
Constant nodes) never become activations: an op that mixes an activation with a constant
reads only the activation, and the constant becomes one of its weights. ONNX's own shape
inference runs first and every shape the importer derives is checked against it, so an
op whose semantics the importer gets wrong stops with a message instead of costing the
wrong work. onnxruntime's com.microsoft kernels and QONNX quantizers, which onnx's checker and shape
inference do not know, go through both as standard stand-ins (``onnx_standins``) and are costed by
their own converters (``onnx_contrib``, ``onnx_qonnx``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path

from dse.graph import PRECISION_BYTES, Graph, GraphError
from dse.importers.onnx_detection import Bound, infer_bounded
from dse.importers.onnx_fold import fold_constants
from dse.importers.onnx_load import fix_input_dims, read_model
from dse.importers.onnx_ops import SUPPORTED_OP_TYPES, OnnxImporter
from dse.importers.onnx_standins import restore_foreign_ops
from dse.importers.sparsity import measured_weight_density

__all__ = ["SUPPORTED_OP_TYPES", "load_onnx"]

LOG = logging.getLogger("dse.importers")


def load_onnx(
    path: str | Path,
    *,
    batch: int | None = None,
    precision: str = "int8",
    symbolic_dims: Mapping[str, int] | None = None,
    max_detections: int | None = None,
) -> Graph:
    """Import an ONNX file as a Graph.

    ``batch`` replaces a symbolic or unknown leading (batch) dimension of the graph inputs
    (default 1); a model exported with a fixed batch keeps it, and asking for a different one
    is an error. ``symbolic_dims`` gives values for other symbolic input dimensions by name
    (for example ``{"sequence": 128}``). ``max_detections`` bounds every data-dependent count
    (boxes a NonZero or NonMaxSuppression keeps; default: the worst case, every candidate kept).
    """
    if precision not in PRECISION_BYTES:
        raise GraphError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise GraphError(f"batch must be a positive integer, got {batch!r}")
    if max_detections is not None and (
        isinstance(max_detections, bool) or not isinstance(max_detections, int) or max_detections < 1
    ):
        raise GraphError(f"max_detections must be a positive integer, got {max_detections!r}")
    start = time.perf_counter()
    loaded = read_model(Path(path))
    model = loaded.model
    fix_input_dims(model, Path(path), batch, dict(symbolic_dims or {}))
    bounds: dict[str, Bound] = {}
    inferred = infer_bounded(model, Path(path), max_detections, bounds)
    folding = fold_constants(inferred, Path(path), lambda t: t.name not in loaded.without_data)
    for _ in range(20):  # shapes that depended on folded values (or taken If branches) are concrete now
        if not folding.folded:
            break
        again = fold_constants(
            infer_bounded(folding.model, Path(path), max_detections, bounds), Path(path), folding.has_data
        )
        folding.model = again.model
        folding.folded.update(again.folded)
        if not again.folded:
            break
    restore_foreign_ops(folding.model, loaded.stand_ins)
    importer = OnnxImporter(
        Path(path), folding.model, PRECISION_BYTES[precision], without_data=set(loaded.without_data)
    )
    graph = importer.run()
    if loaded.missing_files:
        LOG.warning(
            "%s: weights missing (%d external data files absent, e.g. %r): imported shapes only; fine for "
            "performance models, refused by what needs weight values (accuracy, hls4ml export)",
            path,
            len(set(loaded.missing_files.values())),
            next(iter(loaded.missing_files.values())),
        )
    precisions = sorted({str(op.attrs["precision"]) for op in graph.ops if "precision" in op.attrs})
    graph.meta.update(
        source=str(path),
        format="onnx",
        precision=precision,
        batch=importer.batch,
        opset=importer.opset,
        folded_batchnorm=dict(importer.folded_batchnorm),
        onnx_nodes=folding.nodes_before,
        folded_nodes=dict(sorted(folding.folded.items())),
        weights_missing=sorted(loaded.missing_files),
        quantized_precisions=precisions,
        data_dependent_bounds={b.node: b.record() for b in bounds.values()},
        max_detections=max_detections,
        weight_density=measured_weight_density(graph, folding.model),  # applied by `sparsity: measured`
        import_seconds=round(time.perf_counter() - start, 4),
    )
    return graph
