"""Accuracy metrics of systolic / multicore / RDU / GPU points: the ONNX model run at the point's ``precision``.

``PrecisionAccuracy`` is the accuracy model of every family with a ``precision`` parameter (``Family.accuracy``).
It runs the model (``hwmodels.accuracy.onnx_runner``) with each Gemm/MatMul/Conv rounding its operands to the
format (``hwmodels.accuracy.number_formats``):

* integers (int4/int8/int16/int32): weights symmetric per output channel (max |w| / qmax); activations
  symmetric per tensor, the scale calibrated as max |x| / qmax over a calibration split of the data (a seeded
  ``CALIBRATION_SAMPLES`` subset, float activations); products accumulated exactly (int32 overflow is not
  modelled), the bias rounded to the accumulator's scale and width (int32 for int4/int8, as QLinearConv / TFLite
  do), the result scaled back;
  other ops (activations, pooling, softmax, layernorm) run in float32 between the GEMMs;
* fp16 / bf16 / tf32 / fp32: operands and every stored tensor rounded to the format, GEMM sums in float32;
* fp8 (E4M3): scaled like the integers (per-channel weights, calibrated per-tensor activations), storage float32.

Metrics depend on the precision alone (the GPU's TF32 switch included), so they are cached per precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Graph
from hwmodels.accuracy.ap_fixed import QuantError
from hwmodels.accuracy.data import DataError, Dataset, accuracy, compare_outputs, load_dataset
from hwmodels.accuracy.number_formats import NumberFormat, quantize_weight
from hwmodels.accuracy.onnx_runner import OnnxNet

CALIBRATION_SAMPLES = 512
CALIBRATION_SEED = 0
# accumulator width per integer format: int32 for int4/int8 (what int8 GEMM units and QLinear ops use), int64 past
ACCUMULATOR_BITS = {"int4": 32, "int8": 32, "int16": 64, "int32": 64}


@dataclass
class FormatQuantizer:
    """A ``Quantizer`` (``onnx_runner``) for one number format and one set of calibrated activation ranges."""

    fmt: NumberFormat
    amax: dict[str, float]

    def __post_init__(self) -> None:
        self._weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def activation(self, key: str, x: np.ndarray) -> tuple[np.ndarray, float]:
        if not self.fmt.scaled:
            return self.fmt.round(x), 1.0
        peak = self.amax.get(key, 0.0)
        scale = peak / self.fmt.qmax if peak > 0 else 1.0
        return self.fmt.round(x / scale), scale

    def weight(self, key: str, w: np.ndarray, channel_axis: int | None) -> tuple[np.ndarray, np.ndarray]:
        if key not in self._weights:  # weights are fixed: rounded once per format
            self._weights[key] = quantize_weight(w, self.fmt, channel_axis)
        return self._weights[key]

    def bias(self, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
        if self.fmt.is_int:  # an integer at the accumulator's scale (int32 for int4/int8)
            limit = float((1 << (ACCUMULATOR_BITS[self.fmt.name] - 1)) - 1)
            return np.clip(np.rint(b / scale), -limit, limit) * scale
        if self.fmt.scaled:  # fp8 GEMMs add the bias in their float32 epilogue
            return np.asarray(b, dtype=np.float32).astype(np.float64)
        return self.fmt.round(b)

    def accumulate(self, y: np.ndarray) -> np.ndarray:
        if self.fmt.is_int:  # integer sums of <= 16-bit operands are exact in float64
            return y
        return y.astype(np.float32).astype(np.float64)

    def store(self, y: np.ndarray) -> np.ndarray:
        if self.fmt.scaled:
            return np.asarray(y, dtype=np.float32).astype(np.float64)
        return self.fmt.round(y)


@dataclass
class PreparedModel:
    """What every point of a run shares: the network, the data, the float outputs and activation ranges."""

    net: OnnxNet
    data: Dataset
    float_out: np.ndarray
    float_accuracy: float
    amax: dict[str, float]
    calibration: np.ndarray  # indices of the calibration samples


def prepare_model(model_path: str, data_path: str) -> PreparedModel:
    """Load and check model and data, run the float model once, calibrate the activation ranges."""
    net = OnnxNet(model_path)
    shape = net.sample_shape
    data = load_dataset(data_path, shape if all(d > 0 for d in shape) else None)
    try:
        float_out = net.run(data.x)
    except (ValueError, IndexError) as exc:
        raise QuantError(f"{model_path}: running the model on {data_path} failed: {exc}") from None
    if data.classification and int(data.y.max()) >= float_out.shape[1]:
        raise DataError(
            f"{data.source}: y has label {int(data.y.max())} but the model has {float_out.shape[1]} outputs"
        )
    calibration = calibration_split(len(data))
    amax: dict[str, float] = {}
    net.run(data.x[calibration], amax=amax)
    return PreparedModel(net, data, float_out, accuracy(float_out, data), amax, calibration)


def calibration_split(n: int, size: int = CALIBRATION_SAMPLES, seed: int = CALIBRATION_SEED) -> np.ndarray:
    """The calibration samples: a seeded subset of ``size`` (all when fewer), in order."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def arch_precision(arch: Any) -> str:
    """The number format a point computes in: the GPU's GEMM ``math`` (tf32 when switched on), else ``precision``."""
    return str(getattr(arch, "math", None) or arch.precision)


@dataclass
class PrecisionAccuracy:
    """``(arch, mapping) -> accuracy metrics`` from the arch's precision; picklable (state rebuilt per process)."""

    model_path: str
    data_path: str

    @classmethod
    def of_graph(cls, graph: Graph, data_path: str) -> PrecisionAccuracy:
        """The accuracy model of ``graph``'s ONNX model (the file it was imported from) on ``data_path``."""
        return cls(str(graph.meta["source"]), str(data_path))

    def __post_init__(self) -> None:
        self._prepared: PreparedModel | None = None
        self._metrics: dict[str, dict[str, float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "data_path": self.data_path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def prepare(self) -> PreparedModel:
        """Load and check data and model (once per process); raises QuantError / DataError on what does not fit."""
        if self._prepared is None:
            self._prepared = prepare_model(self.model_path, self.data_path)
        return self._prepared

    def outputs(self, precision: str) -> np.ndarray:
        """The model's outputs on the data at ``precision``."""
        prepared = self.prepare()
        return prepared.net.run(prepared.data.x, FormatQuantizer(NumberFormat(precision), prepared.amax))

    def metrics(self, precision: str) -> dict[str, float]:
        if precision not in self._metrics:
            prepared = self.prepare()
            out = self.outputs(precision)
            self._metrics[precision] = compare_outputs(out, prepared.float_out, prepared.data, prepared.float_accuracy)
        return dict(self._metrics[precision])

    def __call__(self, arch: Any, mapping: Any) -> dict[str, float]:
        return self.metrics(arch_precision(arch))
