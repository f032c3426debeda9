"""Accuracy metrics of fpga_dataflow points: the quantized hls4ml network run on the workload's data.

``FpgaAccuracy`` is the family's accuracy model, built by ``PointEvaluator`` and called with each point's arch
and mapping: it derives the hls4ml types exactly as ``dse export`` writes them, emulates the network bit for bit
(``hwmodels.accuracy.hls_emulator``) and compares with the float network. The data, weights and float outputs
are prepared once per process; quantized per-layer outputs and finished metrics are cached by the precisions
that decide them (ReuseFactor, Strategy and IOType do not).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse.graph import Graph
from hwmodels.accuracy.data import DataError, Dataset, accuracy, compare_outputs, load_dataset
from hwmodels.accuracy.hls_emulator import HlsEmulator, float_forward
from hwmodels.accuracy.hls_network import hls_types, layer_list, model_weights

METRICS_CACHE = 65536


@dataclass
class PointDesign:
    """The part of a design point the network builders read."""

    graph: Graph
    arch: Any = None
    mapping: Any = None


@dataclass
class Prepared:
    """What every point of one run shares: the network, the data in hls4ml's layout, the float baseline."""

    emulator: HlsEmulator
    x: np.ndarray
    data: Dataset
    float_out: np.ndarray
    float_accuracy: float


def prepare(graph: Graph, data_path: str | Path) -> Prepared:
    """Load weights and data, check they fit each other, run the float network once."""
    design = PointDesign(graph)
    layers, (in_shape, _) = layer_list(design, model_weights(design))
    first = graph.ops[0]
    data = load_dataset(Path(data_path), tuple(graph.tensors[first.inputs[0]].shape[1:]))
    x = data.x
    if x.ndim == 4:  # ONNX NCHW -> hls4ml channels-last
        x = x.transpose(0, 2, 3, 1)
    x = np.ascontiguousarray(x.reshape(x.shape[0], *in_shape))
    float_out = float_forward(layers, x)
    if data.classification and int(data.y.max()) >= float_out.shape[1]:
        raise DataError(
            f"{data.source}: y has label {int(data.y.max())} but the model has {float_out.shape[1]} outputs"
        )
    return Prepared(HlsEmulator(layers), x, data, float_out, accuracy(float_out, data))


def compare(out: np.ndarray, prepared: Prepared) -> dict[str, float]:
    """The four accuracy metrics of quantized outputs ``out`` against the float network."""
    return compare_outputs(out, prepared.float_out, prepared.data, prepared.float_accuracy)


@dataclass
class FpgaAccuracy:
    """``(arch, mapping) -> accuracy metrics`` for fpga_dataflow points; picklable (state rebuilt per process)."""

    graph: Graph
    data_path: str

    def __post_init__(self) -> None:
        self._prepared: Prepared | None = None
        self._metrics: OrderedDict[tuple, dict[str, float]] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        return {"graph": self.graph, "data_path": self.data_path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    @property
    def prepared(self) -> Prepared:
        return self.prepare()

    def prepare(self) -> Prepared:
        """Load and check data and weights (once per process); raises DataError on data that does not fit."""
        if self._prepared is None:
            self._prepared = prepare(self.graph, self.data_path)
        return self._prepared

    def config(self, arch: Any, mapping: Any) -> dict[str, Any]:
        """The hls4ml types ``dse export`` writes for this point (its IOType and HLSConfig)."""
        return hls_types(PointDesign(self.graph, arch, mapping))

    def __call__(self, arch: Any, mapping: Any) -> dict[str, float]:
        prepared = self.prepared
        config = self.config(arch, mapping)
        key = prepared.emulator.signature(config)
        if key not in self._metrics:
            out = prepared.emulator.run(prepared.x, config, input_key=self.data_path).value()
            self._metrics[key] = compare(out, prepared)
            if len(self._metrics) > METRICS_CACHE:
                self._metrics.popitem(last=False)
        return dict(self._metrics[key])
