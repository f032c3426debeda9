"""The hls4ml network an fpga_dataflow design implies, as ``dse export`` writes it and the emulator reads it.

One place for what both need: the weights (ONNX initializers, or a seeded generator for zoo models), the
channels-last hls4ml layer list with its float-reference steps, and the design's own part of hls4ml's config
(``hls_types``: IOType and the ``HLSConfig`` with an explicit precision for every layer). The project settings
around it (backend, part, clock, output folder) are ``dse.hls4ml_project``'s. ``design`` is anything with
``graph``, ``arch`` and ``mapping`` attributes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dse.errors import UserError
from dse.graph import Graph, OpKind
from mappers.payloads import LayerGroupPlan

WEIGHT_SEED = 0


class NetworkDesign(Protocol):
    """What the network builders read of a design point: ``dse.export.Design`` is one."""

    graph: Graph
    arch: Any
    mapping: Any


class ExportError(UserError):
    """The point cannot be exported, or the exported project does not build; the message says why."""


def hls_types(design: NetworkDesign) -> dict[str, Any]:
    """hls4ml's IOType and HLSConfig for the design: model-level knobs plus an explicit entry for every layer.

    Everything of the config the C simulation's numbers depend on (the emulator reads it as it is);
    ``dse.hls4ml_project.hls_config`` adds the project settings around it."""

    arch = design.arch
    layer_config: dict[str, Any] = {}
    model_precision = arch.precision.hls()
    for op in design.graph.ops:
        member = design.mapping.ops[op.name].payload_as(LayerGroupPlan)
        plan = member.plan
        name = hls_name(op.name)
        if plan is not None:
            k = plan.knobs
            layer_config[name] = {
                "ReuseFactor": plan.reuse_factor,
                "Strategy": k.strategy.capitalize(),
                "Precision": {
                    "weight": k.weight.hls(),
                    "bias": k.weight.hls(),
                    "result": k.result.hls(),
                    "accum": k.accum.hls(),
                },
            }
        else:
            result = _group_result(design, member.group)
            entry: dict[str, Any] = {"Precision": {"result": result}}
            if op.kind in (OpKind.SOFTMAX, OpKind.POOL):
                entry["Precision"]["accum"] = arch.accum_precision.hls()
            if op.kind is OpKind.SOFTMAX:
                entry["Strategy"] = "Stable"
            layer_config[name] = entry
    return {
        "IOType": arch.io_type,
        "HLSConfig": {
            "Model": {
                "Precision": model_precision,
                "ReuseFactor": arch.reuse_factor,
                "Strategy": arch.strategy.capitalize(),
            },
            "LayerName": layer_config,
        },
    }


def _group_result(design: NetworkDesign, group: int) -> str:
    return design.arch.layer(group).result.hls()


def hls_name(name: str) -> str:
    """A C identifier hls4ml can use as a layer and variable name."""
    clean = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return clean if clean and not clean[0].isdigit() else f"l_{clean}"


# ---------------------------------------------------------------------------------------------- layer list


@dataclass
class RefLayer:
    """One step of the float reference, in the same channels-last layout hls4ml uses."""

    kind: str
    params: dict[str, Any]


def model_weights(design: NetworkDesign) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """op name -> (kernel, bias) in Keras order: dense (n_in, n_out), conv (R, S, C, K)."""
    source = str(design.graph.meta.get("source", ""))
    if source.endswith(".onnx"):
        return _onnx_weights(Path(source), design.graph)
    rng = np.random.default_rng(WEIGHT_SEED)
    out = {}
    for op in design.graph.ops:
        if op.kind is OpKind.CONV:
            d = op.dims
            shape = (d["R"], d["S"], d["C"], d["K"])
            fan_in, fan_out = d["C"] * d["R"] * d["S"], d["K"] * d["R"] * d["S"]
        elif op.kind is OpKind.MATMUL and op.weights:
            shape = (op.dims["K"], op.dims["N"])
            fan_in, fan_out = shape
        else:
            continue
        limit = math.sqrt(6.0 / (fan_in + fan_out))  # Glorot uniform: keeps activations in ap_fixed<16,6> range
        kernel = rng.uniform(-limit, limit, size=shape).astype(np.float32)
        bias = rng.uniform(-0.1, 0.1, size=shape[-1]).astype(np.float32)
        out[op.name] = (kernel, bias)
    return out


def _onnx_weights(path: Path, graph: Graph) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Kernels and biases of every compute op from the ONNX initializers, converted to Keras order."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = {(n.name or f"{n.op_type}_{i}"): n for i, n in enumerate(model.graph.node)}
    if any(n.op_type == "BatchNormalization" for n in model.graph.node):
        raise ExportError(f"{path}: fold BatchNormalization into the convolutions before exporting", str(path))
    producers = {out: n for n in model.graph.node for out in n.output}
    for name, node in producers.items():
        if node.op_type in QONNX_QUANTIZERS and node.input[0] in inits and name not in inits:
            inits[name] = qonnx_quantized(node, [inits.get(i) for i in node.input])
    out = {}
    for op in graph.ops:
        if not (op.kind is OpKind.CONV or (op.kind is OpKind.MATMUL and op.weights)):
            continue
        node = nodes.get(op.name)
        if node is None or len(node.input) < 2 or node.input[1] not in inits:
            raise ExportError(f"{path}: node {op.name!r} has no initializer weights to export", str(path))
        w = inits[node.input[1]].astype(np.float32)
        b_name = node.input[2] if len(node.input) > 2 else ""
        if node.op_type == "Conv":
            kernel = np.transpose(w, (2, 3, 1, 0))  # (K, C, R, S) -> (R, S, C, K)
        elif node.op_type == "Gemm":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            kernel = w.T if attrs.get("transB", 0) else w
            if attrs.get("alpha", 1.0) != 1.0:
                kernel = kernel * attrs["alpha"]
        else:
            kernel = w
        n_out = kernel.shape[-1]
        bias = inits[b_name].astype(np.float32).reshape(-1) if b_name in inits else np.zeros(n_out, np.float32)
        out[op.name] = (kernel, bias)
    return out


QONNX_QUANTIZERS = ("Quant", "BipolarQuant")


def qonnx_quantized(node: Any, inputs: list[np.ndarray | None]) -> np.ndarray:
    """A QONNX ``Quant``/``BipolarQuant`` of a weight, evaluated (QONNX docs/qonnx-custom-ops/quant_op.md):
    ``(clip(round(x / scale + zero_point), min_int, max_int) - zero_point) * scale``; bipolar: ``sign(x) * scale``.
    The exported layer then holds the values the model was trained with."""
    import onnx

    if any(a is None for a in inputs):
        raise ExportError(f"quantizer {node.name!r}: its scale, zero point and bit width must be initializers")
    x, scale = (np.asarray(a, dtype=np.float64) for a in inputs[:2])
    if node.op_type == "BipolarQuant":
        return (np.where(x >= 0, 1.0, -1.0) * scale).astype(np.float32)
    zero_point, bits = float(np.asarray(inputs[2]).reshape(-1)[0]), int(np.asarray(inputs[3]).reshape(-1)[0])
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    signed, narrow = bool(attrs.get("signed", 1)), bool(attrs.get("narrow", 0))
    low = -(2 ** (bits - 1)) + narrow if signed else 0
    high = 2 ** (bits - 1) - 1 if signed else 2**bits - 1 - narrow
    mode = attrs.get("rounding_mode", b"ROUND")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    rounding = {"ROUND": np.round, "CEIL": np.ceil, "FLOOR": np.floor, "ROUND_TO_ZERO": np.fix}.get(mode.upper())
    if rounding is None:
        raise ExportError(f"quantizer {node.name!r}: rounding_mode {mode!r} is not ROUND, CEIL, FLOOR or ROUND_TO_ZERO")
    return ((np.clip(rounding(x / scale + zero_point), low, high) - zero_point) * scale).astype(np.float32)


def layer_list(design: NetworkDesign, weights: dict[str, tuple[np.ndarray, np.ndarray]]):
    """hls4ml layer dicts (channels-last) and the matching float-reference steps."""
    graph = design.graph
    first = graph.ops[0]
    in_shape = graph.tensors[first.inputs[0]].shape
    shape = _channels_last(in_shape)  # current activation shape without batch
    layers: list[dict[str, Any]] = [{"class_name": "InputLayer", "name": "input_1", "input_shape": list(shape)}]
    ref: list[RefLayer] = []
    prev = "input_1"
    for op in graph.ops:
        name = hls_name(op.name)
        if op.kind is OpKind.MATMUL:
            kernel, bias = weights[op.name]
            if len(shape) == 3:  # a flatten between a conv/pool map and a dense layer
                h, w, c = shape
                if design.graph.meta.get("source", "").endswith(".onnx"):  # ONNX flattened NCHW: reorder rows
                    kernel = kernel.reshape(c, h, w, -1).transpose(1, 2, 0, 3).reshape(h * w * c, -1)
                flat = f"{name}_flatten"
                layers.append({"class_name": "Reshape", "name": flat, "inputs": [prev], "target_shape": [h * w * c]})
                prev, shape = flat, (h * w * c,)
            n_in, n_out = kernel.shape
            if shape != (n_in,):
                raise ExportError(f"dense op {op.name!r} expects {n_in} inputs but receives shape {shape}")
            layers.append(
                {
                    "class_name": "Dense",
                    "name": name,
                    "inputs": [prev],
                    "n_in": n_in,
                    "n_out": n_out,
                    "weight_data": kernel,
                    "bias_data": bias,
                }
            )
            ref.append(RefLayer("dense", {"kernel": kernel, "bias": bias}))
            shape = (n_out,)
        elif op.kind is OpKind.CONV:
            kernel, bias = weights[op.name]
            d = op.dims
            sh, sw = op.attrs.get("stride", (1, 1))
            pt, pl, pb, pr = op.attrs.get("pad", (0, 0, 0, 0))
            layers.append(
                {
                    "class_name": "Conv2D",
                    "name": name,
                    "inputs": [prev],
                    "data_format": "channels_last",
                    "in_height": d["H"],
                    "in_width": d["W"],
                    "n_chan": d["C"],
                    "n_filt": d["K"],
                    "filt_height": d["R"],
                    "filt_width": d["S"],
                    **_window_fields(d, (sh, sw), (pt, pl, pb, pr)),
                    "weight_data": kernel,
                    "bias_data": bias,
                }
            )
            ref.append(RefLayer("conv", {"kernel": kernel, "bias": bias, "stride": (sh, sw), "pad": (pt, pl, pb, pr)}))
            shape = (d["P"], d["Q"], d["K"])
        elif op.kind is OpKind.POOL:
            d = op.dims
            if op.attrs.get("is_global"):
                raise ExportError(f"global pooling ({op.name!r}) is not exported; use a strided pool and flatten")
            mode = op.attrs.get("mode", "max")
            sh, sw = op.attrs.get("stride", (d["R"], d["S"]))
            pt, pl, pb, pr = op.attrs.get("pad", (0, 0, 0, 0))
            layers.append(
                {
                    "class_name": "MaxPooling2D" if mode == "max" else "AveragePooling2D",
                    "name": name,
                    "inputs": [prev],
                    "data_format": "channels_last",
                    "in_height": d["H"],
                    "in_width": d["W"],
                    "n_filt": d["C"],
                    "pool_height": d["R"],
                    "pool_width": d["S"],
                    **_window_fields(d, (sh, sw), (pt, pl, pb, pr)),
                }
            )
            ref.append(RefLayer("pool", {"mode": mode, "size": (d["R"], d["S"]), "stride": (sh, sw)}))
            shape = (d["P"], d["Q"], d["C"])
        elif op.kind is OpKind.SOFTMAX:
            layers.append(
                {"class_name": "Softmax", "name": name, "inputs": [prev], "activation": "softmax", "axis": -1}
            )
            ref.append(RefLayer("softmax", {}))
        elif op.kind is OpKind.ELEMENTWISE:
            fn = op.attrs.get("fn", "relu")
            if fn == "identity":
                continue
            if fn not in ("relu", "sigmoid", "tanh"):
                raise ExportError(f"activation {fn!r} of op {op.name!r} is not exported; relu, sigmoid and tanh are")
            layers.append({"class_name": "Activation", "name": name, "inputs": [prev], "activation": fn})
            ref.append(RefLayer("act", {"fn": fn}))
        else:
            raise ExportError(f"op {op.name!r} ({op.kind.value}) cannot be exported to hls4ml")
        prev = layers[-1]["name"]
    return layers, (tuple(_channels_last(in_shape)), ref)


def _window_fields(dims: dict[str, int], stride: tuple[int, int], pad: tuple[int, int, int, int]) -> dict[str, int]:
    """hls4ml's stride, output size and padding attributes of a 2-D window layer (conv or pool)."""
    pt, pl, pb, pr = pad
    return {
        "stride_height": stride[0],
        "stride_width": stride[1],
        "out_height": dims["P"],
        "out_width": dims["Q"],
        "pad_top": pt,
        "pad_bottom": pb,
        "pad_left": pl,
        "pad_right": pr,
    }


def _channels_last(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) == 4:
        _, c, h, w = shape
        return (h, w, c)
    return (int(math.prod(shape[1:])),) if len(shape) > 1 else tuple(shape)


# ---------------------------------------------------------------------------------------------- float reference


def reference(x: np.ndarray, steps: list[RefLayer]) -> np.ndarray:
    """Float forward pass of one sample in hls4ml's channels-last layout."""
    for step in steps:
        p = step.params
        if step.kind == "dense":
            x = x.reshape(-1) @ p["kernel"] + p["bias"]
        elif step.kind == "conv":
            x = _conv2d(x, p["kernel"], p["bias"], p["stride"], p["pad"])
        elif step.kind == "pool":
            x = _pool2d(x, p["mode"], p["size"], p["stride"])
        elif step.kind == "act":
            x = {"relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}[
                p["fn"]
            ](x)
        elif step.kind == "softmax":
            e = np.exp(x - x.max())
            x = e / e.sum()
    return x.reshape(-1)


def _conv2d(x, kernel, bias, stride, pad):
    r, s, _, k = kernel.shape
    pt, pl, pb, pr = pad
    x = np.pad(x, ((pt, pb), (pl, pr), (0, 0)))
    p = (x.shape[0] - r) // stride[0] + 1
    q = (x.shape[1] - s) // stride[1] + 1
    out = np.empty((p, q, k), dtype=np.float64)
    for i in range(p):
        for j in range(q):
            patch = x[i * stride[0] : i * stride[0] + r, j * stride[1] : j * stride[1] + s, :]
            out[i, j] = np.tensordot(patch, kernel, axes=3) + bias
    return out


def _pool2d(x, mode, size, stride):
    p = (x.shape[0] - size[0]) // stride[0] + 1
    q = (x.shape[1] - size[1]) // stride[1] + 1
    out = np.empty((p, q, x.shape[2]))
    for i in range(p):
        for j in range(q):
            window = x[i * stride[0] : i * stride[0] + size[0], j * stride[1] : j * stride[1] + size[1], :]
            out[i, j] = window.max(axis=(0, 1)) if mode == "max" else window.mean(axis=(0, 1))
    return out
