"""The number formats of the systolic / multicore / RDU / GPU templates' ``precision``, as numpy roundings.

Integers (``int4``, ``int8``, ``int16``, ``int32``): symmetric, zero point 0, values ``q * scale`` with ``q`` in
``[-qmax, qmax]`` (``qmax = 2**(bits-1) - 1``), rounded half to even (``nearbyint``, as torch's and ONNX's
QuantizeLinear do). Floats: ``fp32`` (numpy float32), ``tf32`` (8-bit exponent, 10-bit mantissa), ``fp16`` (IEEE
half: numpy's own conversion), ``bf16`` (the float32 bit pattern rounded to nearest-even on its top 16 bits) and
``fp8`` (E4M3, the "fn" variant: bias 7, no infinities, largest 448, saturating), each rounded to nearest-even.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwmodels.accuracy.ap_fixed import QuantError

INT_BITS = {"int4": 4, "int8": 8, "int16": 16, "int32": 32}
# name -> (exponent bits, explicit mantissa bits) of the generic float rounding
FLOAT_BITS = {"fp32": (8, 23), "tf32": (8, 10), "fp16": (5, 10), "bf16": (8, 7), "fp8": (4, 3)}
FP8_MAX = 448.0  # E4M3fn's largest finite value (OCP 8-bit floating point spec, 2023)
SCALED_FLOATS = ("fp8",)  # formats too narrow to run unscaled: per-tensor/per-channel scales like the integers
FORMATS = (*INT_BITS, *FLOAT_BITS)


@dataclass(frozen=True)
class NumberFormat:
    """One precision: integer (symmetric, scaled) or float (rounded, scaled only when ``scaled``)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in FORMATS:
            raise QuantError(f"precision {self.name!r} is not emulated; emulated: {', '.join(FORMATS)}")

    @property
    def is_int(self) -> bool:
        return self.name in INT_BITS

    @property
    def scaled(self) -> bool:
        """Tensors are divided by a calibrated scale before rounding (integers, fp8)."""
        return self.is_int or self.name in SCALED_FLOATS

    @property
    def qmax(self) -> float:
        """The largest magnitude a scaled value may take: ``2**(bits-1) - 1`` or fp8's 448."""
        return float((1 << (INT_BITS[self.name] - 1)) - 1) if self.is_int else FP8_MAX

    def round(self, x: np.ndarray) -> np.ndarray:
        """Values already divided by their scale (when ``scaled``), rounded to the format (float64 out)."""
        if self.is_int:
            return np.clip(np.rint(x), -self.qmax, self.qmax)
        if self.name == "fp32":
            return np.asarray(x, dtype=np.float32).astype(np.float64)
        if self.name == "fp16":
            with np.errstate(over="ignore"):  # beyond 65504: inf, as IEEE conversion says
                return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float64)
        if self.name == "bf16":
            return round_bf16(np.asarray(x, dtype=np.float32)).astype(np.float64)
        exp_bits, man_bits = FLOAT_BITS[self.name]
        out = round_float(x, exp_bits, man_bits)
        return np.clip(out, -FP8_MAX, FP8_MAX) if self.name == "fp8" else out


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (kept as float32): round-to-nearest-even on the top 16 bits, NaN stays NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def round_float(x: np.ndarray, exp_bits: int, man_bits: int) -> np.ndarray:
    """Round to a float with ``exp_bits`` exponent and ``man_bits`` mantissa bits (IEEE bias, subnormals),
    nearest-even; exact, since every step scales by powers of two. Overflow is left to the caller."""
    x = np.asarray(x, dtype=np.float64)
    min_exp = 2 - (1 << (exp_bits - 1))  # exponent of the smallest normal number
    _, e = np.frexp(x)  # x = f * 2**e, 0.5 <= |f| < 1: the leading bit has weight 2**(e-1)
    e = np.maximum(e - 1, min_exp)
    quantum = np.ldexp(1.0, e - man_bits)
    return np.rint(x / quantum) * quantum


def weight_scales(w: np.ndarray, fmt: NumberFormat, channel_axis: int | None) -> np.ndarray:
    """Symmetric per-channel scales: max |w| over all axes but ``channel_axis`` (None: one scale for the
    tensor), over ``qmax`` (1 for a zero channel), shaped to broadcast against ``w``."""
    axes = tuple(a for a in range(w.ndim) if channel_axis is None or a != channel_axis % w.ndim)
    peak = np.max(np.abs(w), axis=axes, keepdims=True) if axes else np.abs(w)
    return np.where(peak > 0, peak / fmt.qmax, 1.0)


def quantize_weight(w: np.ndarray, fmt: NumberFormat, channel_axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(rounded values in the format's units, 1-D per-channel scales); ``w ≈ values * scales`` per channel."""
    w = np.asarray(w, dtype=np.float64)
    if not fmt.scaled:
        return fmt.round(w), np.ones(1)
    scales = weight_scales(w, fmt, channel_axis)
    return fmt.round(w / scales), scales.reshape(-1)
