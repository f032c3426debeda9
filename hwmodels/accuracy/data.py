"""A workload's evaluation data (``workload.data: val.npz`` with arrays ``x`` and ``y``), checked once.

``x`` holds the inputs in the model's own layout (ONNX: (N, features) or (N, C, H, W)); ``y`` the labels
(integers: classification, accuracy is top-1) or targets (floats: regression, accuracy is R²). Anything
else is one DataError naming the file and the array.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dse.errors import UserError

# what every accuracy model reports (which families have one: ``Family.accuracy`` in dse.registry)
ACCURACY_METRICS = ("accuracy", "accuracy_drop", "argmax_agreement", "max_abs_error")


class DataError(UserError):
    """The data file is unusable; the message names the file, the array and what is expected."""


@dataclass(frozen=True)
class Dataset:
    """Inputs and labels/targets for the accuracy metrics."""

    x: np.ndarray  # float32, (N, *input shape in the model's layout)
    y: np.ndarray  # int64 labels (N,) or float64 targets (N,) / (N, outputs)
    classification: bool
    source: str

    def __len__(self) -> int:
        return int(self.x.shape[0])


def load_dataset(path: Path, input_shape: tuple[int, ...] | None = None) -> Dataset:
    """Read and check ``path``; ``input_shape`` (without batch) is the model input it must fit."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataError(
            f"{path}: not a readable .npz archive ({exc}); save it with numpy.savez(path, x=..., y=...)"
        ) from None
    missing = [name for name in ("x", "y") if name not in arrays]
    if missing:
        raise DataError(
            f"{path}: array {' and '.join(missing)} missing (found: {', '.join(arrays) or 'none'}); "
            "give x (inputs, N first) and y (labels or targets, N first)"
        )
    x, y = arrays["x"], arrays["y"]
    for name, arr in (("x", x), ("y", y)):
        if arr.dtype.kind not in "biuf":
            raise DataError(f"{path}: array {name} has dtype {arr.dtype}; expected numbers")
        if arr.ndim == 0 or arr.shape[0] == 0:
            raise DataError(f"{path}: array {name} has shape {arr.shape}; expected at least one sample (N first)")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise DataError(f"{path}: array {name} holds {int(np.sum(~np.isfinite(arr)))} NaN/inf values; remove them")
    if x.shape[0] != y.shape[0]:
        raise DataError(f"{path}: x has {x.shape[0]} samples but y has {y.shape[0]}; give one label/target per sample")
    if input_shape is not None:
        want = tuple(int(d) for d in input_shape)
        if x.shape[1:] != want and not (x.ndim == 2 and x.shape[1] == math.prod(want)):
            raise DataError(
                f"{path}: x has sample shape {x.shape[1:]}, the model's input is {want}; give x as (N, "
                f"{', '.join(map(str, want))})"
            )
    classification = y.dtype.kind in "biu" and y.ndim == 1
    if classification and y.min() < 0:
        raise DataError(f"{path}: y holds negative labels; class labels are 0 .. classes-1")
    return Dataset(
        x.astype(np.float32),
        y.astype(np.int64) if classification else y.astype(np.float64),
        classification,
        str(path),
    )


def accuracy(outputs: np.ndarray, data: Dataset) -> float:
    """Top-1 accuracy (classification) or R² (regression) of ``outputs`` (N, outputs)."""
    if data.classification:
        return float(np.mean(np.argmax(outputs, axis=1) == data.y))
    target = data.y.reshape(outputs.shape[0], -1)
    if target.shape[1] != outputs.shape[1]:
        raise DataError(f"{data.source}: y has {target.shape[1]} targets per sample, the model {outputs.shape[1]}")
    ss_res = float(np.sum((outputs - target) ** 2))
    ss_tot = float(np.sum((target - target.mean(axis=0)) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float(ss_res == 0)


def output_agreement(out: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """How closely ``out`` (N, outputs) follows ``reference``: argmax agreement and the largest |error|."""
    return {
        "argmax_agreement": float(np.mean(np.argmax(out, axis=1) == np.argmax(reference, axis=1))),
        "max_abs_error": float(np.max(np.abs(out - reference))),
    }


def compare_outputs(
    out: np.ndarray, reference: np.ndarray, data: Dataset, reference_accuracy: float
) -> dict[str, float]:
    """The four accuracy metrics of quantized outputs ``out`` against the float network's ``reference``."""
    acc = accuracy(out, data)
    return {"accuracy": acc, "accuracy_drop": reference_accuracy - acc, **output_agreement(out, reference)}
