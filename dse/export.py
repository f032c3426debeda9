"""``dse export`` and ``dse ingest-report``: an explored FPGA design point becomes a real hls4ml project.

Export rebuilds the point's graph and mapping, turns the graph into hls4ml's layer-list format (channels-last,
Keras weight order) and builds it with ``ModelGraph.from_layer_list`` -- no TensorFlow or PyTorch needed. Every
knob comes from the point: model- and layer-level ReuseFactor (the legal value the mapper chose, which is what
hls4ml would snap to), Strategy, explicit weight/bias/result/accumulator precisions for every layer (an ``auto``
result before a softmax silently yields a constant output in hls4ml 1.3), IOType, part and clock. Weights come
from the ONNX file when the workload is one, else from a seeded generator. ``--csim`` compiles hls4ml's C
simulation with g++ and compares it on seeded inputs with a float reference of the same network.

The project's README names the synthesis command and the prediction; ``dse ingest-report`` reads the
synthesis report back (hls4ml's report readers) into the run's store next to the prediction.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import UserError
from dse.graph import Graph, OpKind
from dse.rundir import STORE_FILE, open_run, open_store
from dse.session import build_evaluator
from hwmodels.catalogs.fpga import HLS_REPORT_KEYS, get_part

BACKENDS = ("Vitis", "Vivado", "Catapult", "Quartus")
PROJECT_DIR = "hls4ml_prj"
REPORT_FILE = "export_report.json"
PROJECT_NAME = "myproject"
WEIGHT_SEED = 0
INPUT_SEED = 1
CSIM_SAMPLES = 32
SYNTH_COMMANDS = {
    "Vitis": 'vitis_hls -f build_prj.tcl "csim=0 synth=1 cosim=0 export=0 vsynth=1"',
    "Vivado": 'vivado_hls -f build_prj.tcl "csim=0 synth=1 cosim=0 export=0 vsynth=1"',
    "Catapult": "catapult -file build_prj.tcl",
    "Quartus": "make myproject-fpga  # Intel HLS compiler i++, then quartus_sh on the generated project",
}


class ExportError(UserError):
    """The point cannot be exported, or the exported project does not build; the message says why."""


# ---------------------------------------------------------------------------------------------- CLI


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="write an hls4ml project for one explored FPGA design point")
    p.add_argument("run_dir", type=Path, help="a run directory written by `dse explore`")
    p.add_argument("--point", required=True, help="the point id (or a unique prefix) from points.csv / the report")
    p.add_argument("-o", "--output", type=Path, required=True, help="folder to write the project into")
    p.add_argument("--backend", choices=BACKENDS, default="Vitis", help="hls4ml backend (default Vitis)")
    p.add_argument("--csim", action="store_true", help="compile the C simulation with g++ and check it")
    p.set_defaults(func=_export_command)
    q = subparsers.add_parser("ingest-report", help="read an exported project's synthesis report into its run")
    q.add_argument("output", type=Path, help="a folder written by `dse export`")
    q.set_defaults(func=_ingest_command)


def _export_command(args: argparse.Namespace) -> int:
    report = export_point(args.run_dir, args.point, args.output, backend=args.backend, csim=args.csim)
    print(f"wrote {args.output / PROJECT_DIR} ({args.backend}); see {args.output / 'README.md'}")
    if "csim" in report:
        c = report["csim"]
        print(f"C simulation: max |error| {c['max_abs_error']:.4g}, argmax agreement {c['argmax_agreement']:.1%}")
    return 0


def _ingest_command(args: argparse.Namespace) -> int:
    row = ingest_report(args.output)
    print(f"stored the {row['backend']} synthesis report of point {row['point_id']} in {row['run_dir']}")
    for name, (measured, predicted) in row["comparison"].items():
        print(f"  {name:15s} measured {measured:>12} predicted {predicted:>12.6g}")
    return 0


# ---------------------------------------------------------------------------------------------- export


@dataclass
class Design:
    """A point brought back to life: its graph, arch, mapping and predicted metrics."""

    graph: Graph
    arch: Any
    mapping: Any
    metrics: Any
    params: dict[str, Any]
    point_id: str
    spec: Any


def load_design(run_dir: Path, point: str) -> Design:
    """The stored point ``point`` (an id or unique prefix) of ``run_dir``, re-mapped and re-evaluated."""
    run_dir = Path(run_dir)
    with open_run(run_dir) as (store, spec):
        records = [r for r in store.records() if r.key.startswith(point) or r.point_id.startswith(point)]
    if spec.template.kind != "fpga_dataflow":
        raise ExportError(
            f"run {run_dir} explores the {spec.template.kind} template; only fpga_dataflow points can be exported",
            where=str(run_dir),
        )
    if len(records) != 1:
        what = "no point" if not records else f"{len(records)} points"
        raise ExportError(
            f"{what} in {run_dir} match --point {point!r}; give one point id from points.csv", where="--point"
        )
    record = records[0]
    if not record.ok:
        raise ExportError(f"point {record.point_id} failed during exploration ({record.reason}); pick another")
    graph, evaluator = build_evaluator(spec)
    trace = evaluator.trace(record.params)
    return Design(graph, trace.arch, trace.mapping, trace.metrics, dict(record.params), record.point_id, spec)


def export_point(run_dir: Path, point: str, out: Path, *, backend: str = "Vitis", csim: bool = False) -> dict[str, Any]:
    """Write the hls4ml project, README and export_report.json for one point; returns the report."""
    if backend not in BACKENDS:
        raise ExportError(f"backend {backend!r} is not supported; choose one of: {', '.join(BACKENDS)}", "--backend")
    design = load_design(run_dir, point)
    weights = _weights(design)
    layers, plan = layer_list(design, weights)
    config = hls_config(design, backend, Path(out) / PROJECT_DIR)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model = _build(config, layers)
    model.write()
    report: dict[str, Any] = {
        "run_dir": str(Path(run_dir).resolve()),
        "out": str(out.resolve()),
        "point_id": design.point_id,
        "params": design.params,
        "backend": backend,
        "part": config["Part"],
        "io_type": config["IOType"],
        "clock_period_ns": config["ClockPeriod"],
        "hls_config": _jsonable(config["HLSConfig"]),
        "weights": "onnx" if design.graph.meta.get("source", "").endswith(".onnx") else f"seeded ({WEIGHT_SEED})",
        "predicted": {k: float(v) for k, v in design.metrics.values.items()},
        "notes": _notes(design),
    }
    if csim:
        report["csim"] = _csim(model, plan, design)
    (out / REPORT_FILE).write_text(json.dumps(report, indent=2, default=str))
    (out / "README.md").write_text(_readme(report, design))
    return report


def _build(config: dict[str, Any], layers: list[dict[str, Any]]):
    from hls4ml.model.graph import ModelGraph

    try:
        return ModelGraph.from_layer_list(config, layers)
    except Exception as exc:  # hls4ml raises bare Exceptions for unsupported configurations
        raise ExportError(f"hls4ml could not build the model: {type(exc).__name__}: {exc}") from exc


def hls_config(design: Design, backend: str, output_dir: Path) -> dict[str, Any]:
    """hls4ml's config dict: model-level knobs plus an explicit entry for every layer."""

    arch = design.arch
    layer_config: dict[str, Any] = {}
    model_precision = arch.precision.hls()
    for op in design.graph.ops:
        om = design.mapping.ops[op.name]
        plan = om.extra.get("plan")
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
            result = _group_result(design, om.extra["group"])
            entry: dict[str, Any] = {"Precision": {"result": result}}
            if op.kind in (OpKind.SOFTMAX, OpKind.POOL):
                entry["Precision"]["accum"] = arch.accum_precision.hls()
            if op.kind is OpKind.SOFTMAX:
                entry["Strategy"] = "Stable"
            layer_config[name] = entry
    return {
        "Backend": backend,
        "OutputDir": str(output_dir),
        "ProjectName": PROJECT_NAME,
        "Part": get_part(arch.part).hls_part,
        "ClockPeriod": arch.clock_period_ns,
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


def _group_result(design: Design, group: int) -> str:
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


def _weights(design: Design) -> dict[str, tuple[np.ndarray, np.ndarray]]:
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


def layer_list(design: Design, weights: dict[str, tuple[np.ndarray, np.ndarray]]):
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
                    "stride_height": sh,
                    "stride_width": sw,
                    "out_height": d["P"],
                    "out_width": d["Q"],
                    "pad_top": pt,
                    "pad_bottom": pb,
                    "pad_left": pl,
                    "pad_right": pr,
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
                    "stride_height": sh,
                    "stride_width": sw,
                    "out_height": d["P"],
                    "out_width": d["Q"],
                    "pad_top": pt,
                    "pad_bottom": pb,
                    "pad_left": pl,
                    "pad_right": pr,
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


def _csim(model, plan, design: Design) -> dict[str, Any]:
    """Compile the C simulation (g++) and compare it with the float reference on seeded inputs."""
    in_shape, steps = plan
    rng = np.random.default_rng(INPUT_SEED)
    x = rng.uniform(-1.0, 1.0, size=(CSIM_SAMPLES, *in_shape)).astype(np.float32)
    started = time.perf_counter()
    try:
        model.compile()
    except Exception as exc:
        raise ExportError(f"the hls4ml C simulation library did not build: {type(exc).__name__}: {exc}") from exc
    compile_s = time.perf_counter() - started
    y = np.asarray(model.predict(np.ascontiguousarray(x.reshape(CSIM_SAMPLES, -1)))).reshape(CSIM_SAMPLES, -1)
    ref = np.stack([reference(sample, steps) for sample in x])
    return {
        "samples": CSIM_SAMPLES,
        "input_seed": INPUT_SEED,
        "compile_s": round(compile_s, 2),
        "max_abs_error": float(np.max(np.abs(y - ref))),
        "argmax_agreement": float(np.mean(np.argmax(y, axis=1) == np.argmax(ref, axis=1))),
    }


# ---------------------------------------------------------------------------------------------- README / notes


def _notes(design: Design) -> list[str]:
    notes = list(design.metrics.info.get("notes", []))
    members = design.metrics.info.get("shared_engine", {}).get("members", [])
    if members:
        notes.append(
            "layers " + ", ".join(members) + " share one engine in the prediction; hls4ml has no cross-layer engine "
            "sharing, so the project gives each its own engine at its ReuseFactor and synthesis will use more "
            "resources than predicted for them"
        )
    return notes


def _readme(report: dict[str, Any], design: Design) -> str:
    pred = report["predicted"]
    lines = [
        f"# hls4ml project for point {report['point_id']}",
        "",
        f"Exported by `dse export` from `{report['run_dir']}` (spec `{design.spec.name}`).",
        f"Backend {report['backend']}, part {report['part']}, {report['io_type']}, "
        f"clock {report['clock_period_ns']} ns.",
        "",
        "## Synthesize",
        "",
        "```",
        f"cd {PROJECT_DIR}",
        SYNTH_COMMANDS[report["backend"]],
        "```",
        "",
        f"then `dse ingest-report {report['out']}` stores the report next to the prediction.",
        "",
        "## Predicted by dse (before synthesis)",
        "",
        "| metric | predicted |",
        "|---|---|",
    ]
    for key in ("latency_cycles", "ii_cycles", "latency_ms", "dsp", "lut", "ff", "bram", "fpga_util"):
        lines.append(f"| {key} | {pred[key]:.6g} |")
    lines += ["", "## Point", "", "```json", json.dumps(report["params"], indent=2), "```"]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    if "csim" in report:
        c = report["csim"]
        lines += [
            "",
            "## C simulation",
            "",
            f"{c['samples']} seeded inputs: max |error| vs float {c['max_abs_error']:.4g}, "
            f"argmax agreement {c['argmax_agreement']:.1%}.",
        ]
    return "\n".join(lines) + "\n"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# ---------------------------------------------------------------------------------------------- ingest


def read_synthesis_report(project: Path, backend: str) -> dict[str, Any]:
    """hls4ml's parsed report of an exported project; ExportError when synthesis has not been run."""
    import contextlib
    import io

    from hls4ml.report import parse_catapult_report, parse_quartus_report, parse_vivado_report

    with contextlib.redirect_stdout(io.StringIO()):
        if backend in ("Vivado", "Vitis"):
            report = parse_vivado_report(str(project))
        elif backend == "Catapult":
            report = parse_catapult_report(str(project))
        else:
            report = parse_quartus_report(str(project), write_to_file=False)
    if not report or not (report.get("CSynthesisReport") or report.get("VivadoSynthReport") or backend == "Quartus"):
        raise ExportError(
            f"no synthesis report found in {project}; run the synthesis command in its README first",
            where=str(project),
        )
    return report


def ingest_report(out: Path) -> dict[str, Any]:
    """Store the synthesis report of an exported project in its run's store, beside the prediction."""
    out = Path(out)
    meta_file = out / REPORT_FILE
    if not meta_file.is_file():
        raise ExportError(f"{out} has no {REPORT_FILE}; give a folder written by `dse export`", where=str(out))
    meta = json.loads(meta_file.read_text())
    report = read_synthesis_report(out / PROJECT_DIR, meta["backend"])
    run_dir = Path(meta["run_dir"])
    if not (run_dir / STORE_FILE).is_file():
        raise ExportError(f"the run {run_dir} named in {meta_file} has no {STORE_FILE}", where=str(meta_file))
    with open_store(run_dir) as store:
        store.put_synthesis(meta["point_id"], meta["backend"], report, meta["predicted"])
    return {
        "point_id": meta["point_id"],
        "backend": meta["backend"],
        "run_dir": str(run_dir),
        "comparison": compare(report, meta["predicted"]),
    }


def compare(report: dict[str, Any], predicted: dict[str, float]) -> dict[str, tuple[str, float]]:
    """Measured (from the HLS report) vs predicted, for the figures both have."""
    synth = report.get("CSynthesisReport", {})
    return {ours: (str(synth[theirs]), predicted[ours]) for ours, theirs in HLS_REPORT_KEYS.items() if theirs in synth}


def stored_synthesis(run_dir: Path) -> list[dict[str, Any]]:
    """Every synthesis report ingested into ``run_dir``'s store."""
    with open_store(Path(run_dir)) as store:
        return store.synthesis()
