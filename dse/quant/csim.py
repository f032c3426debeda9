"""hls4ml's own C simulation (a real g++ build) of a layer list, for checking the emulator against it."""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any

import numpy as np

from dse.quant.fixed import QuantError


def csim_outputs(config: dict[str, Any], layers: list[dict[str, Any]], x: np.ndarray, output_dir: Path) -> np.ndarray:
    """Build the hls4ml project for ``layers`` under ``config`` in ``output_dir``, compile it, predict ``x``."""
    from hls4ml.model.graph import ModelGraph

    config = {**copy.deepcopy(config), "OutputDir": str(output_dir)}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            model = ModelGraph.from_layer_list(config, copy.deepcopy(layers))
            model.compile()
    except Exception as exc:  # hls4ml raises bare Exceptions
        raise QuantError(f"hls4ml could not build or compile the C simulation: {type(exc).__name__}: {exc}") from exc
    flat = np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(x.shape[0], -1))
    with contextlib.redirect_stdout(io.StringIO()):
        y = model.predict(flat)
    return np.asarray(y, dtype=np.float64).reshape(x.shape[0], -1)
