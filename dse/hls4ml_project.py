"""The hls4ml project of an fpga_dataflow design point: its config, the ModelGraph built from the layer list, and
the C-simulation checks ``dse export --csim`` reports.

The network itself (weights, layer list, per-layer types, float reference) is the accuracy model's
(``hwmodels.accuracy.hls_network``), so the emulator and the exported project read the same numbers; this module
adds what only a project needs: backend, part, clock, output folder, a g++ build and its comparison.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hwmodels.accuracy.data import accuracy, output_agreement
from hwmodels.accuracy.fpga_accuracy import prepare
from hwmodels.accuracy.hls_network import ExportError, NetworkDesign, RefLayer, hls_types, reference
from hwmodels.catalogs.fpga import get_part

PROJECT_NAME = "myproject"
INPUT_SEED = 1
CSIM_SAMPLES = 32


def hls_config(design: NetworkDesign, backend: str, output_dir: Path) -> dict[str, Any]:
    """hls4ml's config dict: the project settings, then the design's IOType and HLSConfig (every layer explicit)."""
    arch = design.arch
    return {
        "Backend": backend,
        "OutputDir": str(output_dir),
        "ProjectName": PROJECT_NAME,
        "Part": get_part(arch.part).hls_part,
        "ClockPeriod": arch.clock_period_ns,
        **hls_types(design),
    }


def build_model(config: dict[str, Any], layers: list[dict[str, Any]]):
    """hls4ml's ModelGraph of ``layers`` under ``config`` (``model.write()`` writes the project)."""
    from hls4ml.model.graph import ModelGraph

    try:
        return ModelGraph.from_layer_list(config, layers)
    except Exception as exc:  # hls4ml raises bare Exceptions for unsupported configurations
        raise ExportError(f"hls4ml could not build the model: {type(exc).__name__}: {exc}") from exc


def csim_check(model, plan: tuple[tuple[int, ...], list[RefLayer]]) -> dict[str, Any]:
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
        **output_agreement(y, ref),
    }


def csim_accuracy(model: Any, design: Any, config: dict[str, Any]) -> dict[str, Any]:
    """``csim.accuracy`` of ``dse export --csim``: the compiled hls4ml model (``model``) on the spec's data, with
    the emulator's outputs for the same config checked value by value against it."""
    data_path = design.spec.workload.data_path
    if data_path is None:
        seeded = not str(design.graph.meta.get("source", "")).endswith(".onnx")
        why = "the weights are seeded (a zoo model, not a trained one)" if seeded else "the spec gives no workload.data"
        return {"accuracy": None, "accuracy_note": f"not meaningful: {why}"}
    prepared = prepare(design.graph, data_path)
    flat = np.ascontiguousarray(prepared.x.reshape(prepared.x.shape[0], -1))
    out = np.asarray(model.predict(flat), dtype=np.float64).reshape(flat.shape[0], -1)
    emulated = prepared.emulator.run(prepared.x, config).value()
    return {
        "accuracy": accuracy(out, prepared.data),
        "accuracy_samples": int(flat.shape[0]),
        "float_accuracy": prepared.float_accuracy,
        "emulator_accuracy": accuracy(emulated, prepared.data),
        "emulator_mismatches": int(np.sum(emulated != out)),
    }
