"""Where the array path's closed forms run: numpy (the default) or another array-API namespace (CuPy or torch,
through ``array_api_compat``, the optional ``gpu`` extra) on a chosen device.

Only the numeric kernel moves (``hwmodels.systolic.batch.gemm_cost_arrays``): its inputs go to the device,
its outputs come back as numpy, and everything around it (grouping, pricing, the sequential SCALE-Sim
replays) stays numpy. The numpy backend is numpy itself, not a wrapper, so the default path is unchanged.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

BACKENDS = ("numpy", "cupy", "torch")


@dataclass(frozen=True)
class ArrayBackend:
    """An array namespace (by name) and the device its arrays live on (``None``: the namespace's default).
    Names only, so it pickles to workers; the namespace is looked up on use."""

    name: str = "numpy"
    device: str | None = None

    @property
    def is_numpy(self) -> bool:
        return self.name == "numpy"

    @property
    def xp(self) -> ModuleType:
        """The array namespace: numpy itself, or ``array_api_compat``'s namespace of cupy or torch."""
        return np if self.is_numpy else _namespace(self.name)

    def asarray(self, values: Any) -> Any:
        """``values`` (numpy or numbers) as an array of this backend, float64 unless boolean."""
        if self.is_numpy:
            return np.asarray(values)
        host = np.asarray(values)
        xp = self.xp
        return xp.asarray(host, dtype=xp.bool if host.dtype == bool else xp.float64, device=self._device())

    def to_numpy(self, values: Any) -> np.ndarray:
        """An array of this backend (or a number) back on the host as numpy."""
        if self.is_numpy or isinstance(values, (np.ndarray, int, float, bool)):
            return np.asarray(values)
        if self.name == "cupy":
            return values.get()
        return values.detach().cpu().numpy()

    def synchronize(self) -> None:
        """Wait for the device's queued work (for timings); nothing to wait for on numpy or a CPU."""
        if self.name == "cupy":
            importlib.import_module("cupy").cuda.Device().synchronize()
        elif self.name == "torch" and str(self.device).startswith("cuda"):
            importlib.import_module("torch").cuda.synchronize()

    def _device(self) -> Any:
        if self.name == "cupy":
            return int(self.device or 0)
        return self.device or "cpu"


NUMPY = ArrayBackend()


@functools.cache
def _namespace(name: str) -> ModuleType:
    library = importlib.import_module(name)
    compat = importlib.import_module("array_api_compat")
    return compat.array_namespace(library.asarray([0.0]))


def array_backend(name: str = "numpy", device: str | None = None) -> ArrayBackend:
    """The backend called ``name`` on ``device`` (torch: ``cpu``, ``cuda``, ``cuda:1``; cupy: a GPU number),
    checked usable here. CuPy, torch and array_api_compat are imported only when asked for: none is a
    dependency of the project (the ``gpu`` extra brings array_api_compat)."""
    if name == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"the numpy backend runs on the CPU only, not on device {device!r}")
        return NUMPY
    if name not in BACKENDS:
        raise ValueError(f"unknown array backend {name!r}; allowed: {', '.join(BACKENDS)}")
    backend = ArrayBackend(name, device)
    try:
        backend.to_numpy(backend.asarray([1.0]))
    except ImportError as error:
        raise ValueError(f"array backend {name!r} needs {error.name} (pip install 'dse[gpu]' and {name})") from None
    except (RuntimeError, AssertionError) as error:  # no such device, or a build without it
        raise ValueError(f"array backend {name!r} cannot use device {device!r}: {error}") from None
    return backend
