"""Bit-accurate ``ap_fixed<W,I,Q,O>`` arithmetic on numpy integer arrays.

A fixed-point tensor is an int64 array of mantissas ``m`` with a type ``FixedType``: its value is
``m * 2**-frac``. Converting from a double and re-quantizing between types follow Xilinx's ap_fixed
headers (the ones hls4ml ships): quantization modes AP_TRN (floor, the default), AP_TRN_ZERO, AP_RND
(ties to +inf), AP_RND_ZERO, AP_RND_MIN_INF, AP_RND_INF, AP_RND_CONV; overflow modes AP_WRAP (the
default), AP_SAT, AP_SAT_ZERO, AP_SAT_SYM. Quantization happens first, then overflow handling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dse.errors import UserError

ROUNDINGS = ("AP_TRN", "AP_TRN_ZERO", "AP_RND", "AP_RND_ZERO", "AP_RND_MIN_INF", "AP_RND_INF", "AP_RND_CONV")
OVERFLOWS = ("AP_WRAP", "AP_SAT", "AP_SAT_ZERO", "AP_SAT_SYM")
MAX_EMULATED_WIDTH = 40  # products of two such values and their sums stay inside int64
_TYPE_RE = re.compile(
    r"^\s*ap_(u?)fixed\s*<\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(\w+)\s*)?(?:,\s*(\w+)\s*)?(?:,\s*\d+\s*)?>\s*$"
)
_INT_RE = re.compile(r"^\s*ap_(u?)int\s*<\s*(\d+)\s*>\s*$")


class QuantError(UserError):
    """A type or layer the emulator cannot reproduce bit for bit; the message says which and why."""


@dataclass(frozen=True)
class FixedType:
    """``ap_fixed<width, integer, rounding, overflow>`` (``signed=False``: ap_ufixed)."""

    width: int
    integer: int
    signed: bool = True
    rounding: str = "AP_TRN"
    overflow: str = "AP_WRAP"

    @property
    def frac(self) -> int:
        return self.width - self.integer

    @property
    def min_int(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_int(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def hls(self) -> str:
        base = f"ap_{'' if self.signed else 'u'}fixed<{self.width},{self.integer}"
        if (self.rounding, self.overflow) != ("AP_TRN", "AP_WRAP"):
            base += f",{self.rounding},{self.overflow}"
        return base + ">"


@lru_cache(maxsize=4096)
def parse_type(text: str) -> FixedType:
    """``ap_fixed<16,6>``, ``ap_ufixed<8,0,AP_RND,AP_SAT>`` or ``ap_int<8>`` -> FixedType."""
    m = _TYPE_RE.match(text)
    if m:
        unsigned, width, integer, rounding, overflow = m.groups()
        t = FixedType(int(width), int(integer), not unsigned, rounding or "AP_TRN", overflow or "AP_WRAP")
    else:
        m = _INT_RE.match(text)
        if not m:
            raise QuantError(f"precision {text!r} is not an ap_fixed/ap_ufixed/ap_int type the emulator knows")
        t = FixedType(int(m.group(2)), int(m.group(2)), not m.group(1))
    if t.rounding not in ROUNDINGS or t.overflow not in OVERFLOWS:
        raise QuantError(f"precision {text!r}: rounding must be one of {ROUNDINGS}, overflow one of {OVERFLOWS}")
    if not 1 <= t.width <= MAX_EMULATED_WIDTH:
        raise QuantError(f"precision {text!r}: the emulator handles widths 1..{MAX_EMULATED_WIDTH}")
    return t


def shift_right(m: np.ndarray, shift: int, rounding: str) -> np.ndarray:
    """``m / 2**shift`` rounded to an integer the way ap_fixed's quantization mode says (shift > 0)."""
    floor = m >> shift
    if rounding == "AP_TRN":
        return floor
    rem = m - (floor << shift)  # 0 <= rem < 2**shift
    if rounding == "AP_TRN":
        return floor
    if rounding == "AP_TRN_ZERO":
        return floor + ((m < 0) & (rem != 0))
    half = 1 << (shift - 1)
    above, tie = rem > half, rem == half
    if rounding == "AP_RND":
        up = above | tie
    elif rounding == "AP_RND_ZERO":
        up = above | (tie & (m < 0))
    elif rounding == "AP_RND_INF":
        up = above | (tie & (m >= 0))
    elif rounding == "AP_RND_MIN_INF":
        up = above
    else:  # AP_RND_CONV: ties to even
        up = above | (tie & ((floor & 1) == 1))
    return floor + up


def _overflow(m: np.ndarray, t: FixedType) -> np.ndarray:
    lo, hi = t.min_int, t.max_int
    if t.overflow == "AP_WRAP":
        span = 1 << t.width
        return ((m - lo) & (span - 1)) + lo
    if t.overflow == "AP_SAT":
        return np.clip(m, lo, hi)
    if t.overflow == "AP_SAT_SYM":
        return np.clip(m, -hi if t.signed else lo, hi)
    return np.where((m < lo) | (m > hi), 0, m)  # AP_SAT_ZERO


def requantize(m: np.ndarray, frac: int, t: FixedType) -> np.ndarray:
    """Mantissas ``m`` with ``frac`` fractional bits assigned to a variable of type ``t``."""
    m = np.asarray(m, dtype=np.int64)
    shift = frac - t.frac
    if shift > 0:
        m = shift_right(m, shift, t.rounding)
    elif shift < 0:
        m = m << -shift
    return _overflow(m, t)


def from_float(x: np.ndarray, t: FixedType) -> np.ndarray:
    """A double (or float) assigned to ``t``: exact, since scaling by a power of two is exact."""
    x = np.asarray(x, dtype=np.float64)
    scaled = np.ldexp(x, t.frac)
    floor = np.floor(scaled)
    rem = scaled - floor
    if t.rounding == "AP_TRN":
        q = floor
    elif t.rounding == "AP_TRN_ZERO":
        q = np.trunc(scaled)
    elif t.rounding == "AP_RND":
        q = floor + (rem >= 0.5)
    elif t.rounding == "AP_RND_ZERO":
        q = floor + ((rem > 0.5) | ((rem == 0.5) & (scaled < 0)))
    elif t.rounding == "AP_RND_INF":
        q = floor + ((rem > 0.5) | ((rem == 0.5) & (scaled >= 0)))
    elif t.rounding == "AP_RND_MIN_INF":
        q = floor + (rem > 0.5)
    else:
        q = np.rint(scaled)
    if t.overflow == "AP_WRAP":  # wrap big values in exact integer arithmetic
        q = np.fmod(q, float(1 << 62))
    return _overflow(q.astype(np.int64), t)


def to_float(m: np.ndarray, t: FixedType | int) -> np.ndarray:
    frac = t if isinstance(t, int) else t.frac
    return np.ldexp(np.asarray(m, dtype=np.float64), -frac)


def trunc_to_int(m: np.ndarray, frac: int) -> np.ndarray:
    """ap_fixed -> C ``int``: the integer part, rounded toward zero (ap_fixed's C-native conversion)."""
    if frac <= 0:
        return np.asarray(m, dtype=np.int64) << -frac
    m = np.asarray(m, dtype=np.int64)
    return np.where(m >= 0, m >> frac, -((-m) >> frac))
