"""hls4ml's lookup-table activations (nnet_activation.h), reproduced bit for bit.

The tables are filled the way hls4ml's C++ fills them at C-simulation time: the table input in float,
glibc's ``expf``/``tanh`` (loaded with ctypes, the same libm the g++ build links), the float result
assigned to ``table_t`` (default ``ap_fixed<18,8>``). The index is hls4ml's ``data * table_size / 16``
(sigmoid) or ``/ 8`` (tanh) converted to ``int`` (toward zero), offset and clamped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

import numpy as np

from hwmodels.accuracy.ap_fixed import FixedType, QuantError, from_float, trunc_to_int

DEFAULT_TABLE_SIZE = 1024
DEFAULT_TABLE_TYPE = FixedType(18, 8)
# function -> (input range of the table: [-span/2, span/2), the divisor in hls4ml's index formula)
TABLE_FUNCTIONS = {"sigmoid": 16, "tanh": 8}


@lru_cache(maxsize=1)
def libm() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("m")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    lib.expf.restype, lib.expf.argtypes = ctypes.c_float, [ctypes.c_float]
    lib.tanh.restype, lib.tanh.argtypes = ctypes.c_double, [ctypes.c_double]
    return lib


def _table_inputs(size: int, span: int) -> np.ndarray:
    """``float in_val = 2 * (span/2) * (ii - float(N) / 2.0) / float(N)``: exact dyadic values in float."""
    ii = np.arange(size, dtype=np.float64)
    return (span * (ii - size / 2.0) / size).astype(np.float32)


@lru_cache(maxsize=64)
def table(function: str, size: int = DEFAULT_TABLE_SIZE, table_type: FixedType = DEFAULT_TABLE_TYPE) -> np.ndarray:
    """The mantissas (at ``table_type``) of hls4ml's ``<function>_table``."""
    span = TABLE_FUNCTIONS[function]
    inputs = _table_inputs(size, span)
    lib = libm()
    if function == "sigmoid":
        if lib is not None:  # 1.0 / (1 + std::exp(-input)): float exp, float add, double divide, to float
            e = np.array([lib.expf(float(-v)) for v in inputs], dtype=np.float32)
        else:
            e = np.exp(-inputs)
        values = (1.0 / (np.float32(1) + e).astype(np.float64)).astype(np.float32)
    else:  # tanh(in_val): the double overload from <cmath>'s global declarations
        values = np.array([lib.tanh(float(v)) for v in inputs]) if lib is not None else np.tanh(inputs.astype(float))
    return from_float(values, table_type)


def lookup(m: np.ndarray, frac: int, function: str, size: int = DEFAULT_TABLE_SIZE) -> np.ndarray:
    """Table index for mantissas ``m`` (``frac`` fractional bits), as hls4ml computes it."""
    divisor = TABLE_FUNCTIONS[function]
    if size % divisor:
        raise QuantError(f"{function} table_size {size} is not a multiple of {divisor}; not emulated")
    data_round = trunc_to_int(np.asarray(m, dtype=np.int64) * (size // divisor), frac)
    index = data_round + (divisor // 2) * size // divisor
    return np.clip(index, 0, size - 1)
