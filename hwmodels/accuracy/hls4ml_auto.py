"""hls4ml's own automatic precision inference (``'auto'`` types) on an ONNX model, read back per layer.

An hls4ml user builds ``config_from_onnx_model(model, granularity='name', default_precision=..., backend='Vitis')``
(every inferable type ``'auto'``), converts, and hls4ml's ``InferPrecisionTypes`` pass resolves the types. For a
float (unquantized) model that pass has no quantizer to read, so weights, biases and activation results take the
default precision; only Dense/Conv ``accum_t``/``result_t`` are inferred, as the lossless growth
``W_w + W_in + ceil(log2 n_in)`` (plus one bit and the bias's fraction), capped by ``max_precision`` if given.

hls4ml 1.x's ONNX frontend reads QONNX-cleaned graphs: it has no Gemm handler and needs every tensor's shape in
``value_info``. ``qonnx_form`` does what qonnx's ``GemmToMatMul`` + ``InferShapes`` would (qonnx is not a
dependency): each Gemm becomes MatMul + Add (hls4ml fuses them back into one Dense).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwmodels.accuracy.ap_fixed import QuantError


@dataclass(frozen=True)
class AutoLayer:
    """One hls4ml layer after inference: its ONNX node name and resolved ap types (``ap_fixed<W,I>`` strings)."""

    onnx_name: str
    class_name: str
    types: dict[str, str]


def qonnx_form(model):
    """A copy of ``model`` hls4ml's ONNX parser accepts: Gemm -> MatMul + Add, shapes of all tensors recorded."""
    import onnx
    from onnx import helper, numpy_helper, shape_inference

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type != "Gemm":
            nodes.append(node)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
            raise QuantError(f"Gemm {node.name!r}: only transA=0, alpha=beta=1 is rewritten for hls4ml")
        weight = node.input[1]
        if attrs.get("transB", 0):
            if weight not in inits:
                raise QuantError(f"Gemm {node.name!r}: transB needs a constant weight")
            w = numpy_helper.to_array(inits[weight]).T
            inits[weight].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w), weight))
        mm = f"{node.name}_mm"
        nodes.append(helper.make_node("MatMul", [node.input[0], weight], [mm], name=f"{node.name}_matmul"))
        if len(node.input) > 2 and node.input[2]:
            nodes.append(helper.make_node("Add", [mm, node.input[2]], [node.output[0]], name=f"{node.name}_add"))
        else:
            nodes[-1].output[0] = node.output[0]
    del graph.node[:]
    graph.node.extend(nodes)
    model = shape_inference.infer_shapes(model)
    for t in model.graph.initializer:
        model.graph.value_info.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return model


def ap_type(precision) -> str:
    """An hls4ml precision object -> the ``ap_fixed`` string ``parse_type`` reads (modes kept when not TRN/WRAP)."""
    text = precision.definition_cpp()
    if not text.startswith(("ap_fixed", "ap_ufixed", "ap_int", "ap_uint")):
        raise QuantError(f"hls4ml inferred {text!r}, which is not an ap_fixed/ap_int type")
    return text


def infer_auto_types(
    onnx_path: str | Path, default_precision: str, max_precision: str | None = None
) -> list[AutoLayer]:
    """Convert the model the way an hls4ml user would (all types 'auto') and read back each layer's types."""
    import hls4ml
    import onnx

    model = qonnx_form(onnx.load(str(onnx_path)))
    with contextlib.redirect_stdout(io.StringIO()):  # hls4ml prints its topology
        config = hls4ml.utils.config_from_onnx_model(
            model,
            granularity="name",
            default_precision=default_precision,
            max_precision=max_precision,
            backend="Vitis",
        )
        graph = hls4ml.converters.convert_from_onnx_model(
            model, hls_config=config, backend="Vitis", output_dir=tempfile.mkdtemp(), io_type="io_parallel"
        )
    out = []
    for layer in graph.get_layers():
        name = layer.name.removeprefix(f"{layer.class_name}_").removesuffix("_matmul")
        types = {k.removesuffix("_t"): ap_type(v.precision) for k, v in layer.types.items() if k != "index_t"}
        out.append(AutoLayer(name, layer.class_name, types))
    return out


def emulator_config(auto: list[AutoLayer], layer_names: list[str], default_precision: str) -> dict:
    """The resolved types as the HLSConfig ``HlsEmulator`` reads (its layers named like the ONNX nodes)."""
    by_name = {a.onnx_name: a for a in auto}
    inputs = [a for a in auto if a.class_name == "Input"]
    entries = {}
    for i, name in enumerate(layer_names):
        found = by_name.get(name) or (inputs[0] if i == 0 and inputs else None)
        if found is None:
            raise QuantError(f"layer {name!r} has no counterpart in hls4ml's converted model ({sorted(by_name)})")
        entries[name] = {"Precision": dict(found.types)}
    model = default_precision if default_precision.startswith("ap_") else f"ap_{default_precision}"
    return {"HLSConfig": {"Model": {"Precision": model}, "LayerName": entries}}
