"""The design space: one Dimension per template parameter named in the spec.

The spec says *which* values a parameter may take (a scalar, a list, a linear or
log range); the space turns that into grids for exhaustive search and into
type-correct random samples for the stochastic strategies. A point is a plain
dict of every parameter named in the spec (free and fixed), so it can be hashed,
stored and handed to ``Template.instantiate`` as is.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any

import numpy as np

from dse import registry
from templates.base import Param, TemplateError

SCALAR_TYPES = (str, int, float, bool)
RANGE_KEYS = ("range", "log_range", "step", "num")
_FLOAT_TOL = 1e-9
MAX_MAGNITUDE = 1e15  # no hardware parameter is larger; beyond it floats lose whole numbers and numpy's int64 ends
MAX_NUM = 1_000_000  # `num:` points in one range: the values are listed, so their count is bounded


class SpaceError(ValueError):
    """A parameter's value description is malformed.

    ``loc`` is the path *inside* the parameter's entry (e.g. ``(1,)`` for the second
    list item, ``("range", 0)`` for the lower bound) so the spec can point at the line.
    """

    def __init__(self, message: str, loc: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.message = message
        self.loc = loc


def to_python(value: Any) -> Any:
    """numpy scalars -> python scalars, so points serialise and hash the same everywhere."""
    return value.item() if isinstance(value, np.generic) else value


def coerce(value: Any, ptype: str) -> Any:
    """``value`` as a python scalar of ``ptype``; ValueError when it cannot be one without loss."""
    value = to_python(value)
    if ptype == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected an int, got {value!r}")
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"expected an int, got {value!r}")
        return int(value)
    if ptype == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a float, got {value!r}")
        return float(value)
    if ptype == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _doubling(low: float, high: float) -> list[float]:
    """low, 2*low, 4*low, ... up to high (high included only when reached exactly)."""
    out, v = [], low
    while v <= high * (1 + _FLOAT_TOL):
        out.append(v)
        v *= 2
    return out


def _unique(values: list[Any]) -> tuple[Any, ...]:
    """Drop repeats (rounding can merge neighbours) and keep the order."""
    return tuple(dict.fromkeys(values))


@dataclass(frozen=True)
class Dimension:
    """One template parameter's allowed values: a discrete set or a (log) range."""

    name: str
    ptype: str  # "int" | "float" | "str" | "bool" (from the template Param)
    values: tuple | None = None  # discrete choices (a scalar in the spec = 1 value)
    low: float | None = None  # continuous/integer range
    high: float | None = None
    log: bool = False
    step: float | None = None
    num: int | None = None

    @property
    def is_fixed(self) -> bool:
        return self.values is not None and len(self.values) == 1

    @property
    def is_range(self) -> bool:
        return self.values is None

    @property
    def has_grid(self) -> bool:
        """False only for a linear float range without ``num`` or ``step``: it has no natural grid."""
        return not (self.is_range and self.ptype == "float" and not self.log and self.num is None and self.step is None)

    def first_value(self) -> Any:
        """The first grid value (or the lower bound when there is no grid): used to smoke-test the template."""
        if self.values is not None:
            return self.values[0]
        return coerce(self.low, self.ptype)

    def grid_count(self) -> int:
        """How many values ``grid_values`` holds, computed without listing them (exact, any size)."""
        if self.values is not None:
            return len(self.values)
        if self.num is not None:
            return len(self._num_values)
        if self.log:
            return len(self._doubling)
        if self.ptype == "int":
            return (int(self.high) - int(self.low)) // int(self.step or 1) + 1
        if self.step is not None:
            return math.floor((float(self.high) - float(self.low)) / self.step + _FLOAT_TOL) + 1
        raise ValueError(self._no_grid_message())

    def grid_value(self, k: int) -> Any:
        """The ``k``-th grid value (0-based), computed without listing the others."""
        if self.values is not None:
            return self.values[k]
        if self.num is not None:
            return self._num_values[k]
        if self.log:
            return self._doubling[k]
        if self.ptype == "int":
            return int(self.low) + k * int(self.step or 1)
        if self.step is not None:
            return round(float(self.low) + k * self.step, 12)
        raise ValueError(self._no_grid_message())

    def grid_values(self) -> tuple:
        """The values a grid search visits, in increasing order for ranges. Deterministic.

        Lists them all: for a dimension of any size use ``grid_count`` and ``grid_value`` instead.
        """
        return tuple(self.grid_value(k) for k in range(self.grid_count()))

    @cached_property
    def _doubling(self) -> tuple:
        """low, 2*low, 4*low, ... up to high: at most about a thousand values for any finite bounds."""
        if self.ptype == "int":
            return tuple(int(v) for v in _doubling(int(self.low), int(self.high)))
        return tuple(float(v) for v in _doubling(float(self.low), float(self.high)))

    @cached_property
    def _num_values(self) -> tuple:
        """``num`` evenly (or geometrically) spaced values; ``num`` is capped at MAX_NUM by the spec check."""
        low, high = float(self.low), float(self.high)
        spaced = np.geomspace(low, high, self.num) if self.log else np.linspace(low, high, self.num)
        if self.ptype == "int":
            return _unique([int(round(v)) for v in spaced])
        return tuple(float(v) for v in spaced)

    def _no_grid_message(self) -> str:
        return (
            f"{self.name}: a float range needs `num` or `step` to form a grid; "
            "add num: N or step: S, or use a sampling strategy (random, nsga2, tpe, gp)"
        )

    def support_size(self) -> int | None:
        """How many distinct values ``sample`` can return; None when continuous (float ranges)."""
        if self.values is not None:
            return len(self.values)
        if self.ptype != "int":
            return None
        lo, hi = int(self.low), int(self.high)
        if self.step is not None and not self.log:
            return (hi - lo) // int(self.step) + 1
        return hi - lo + 1

    def support_value(self, k: int) -> Any:
        """The ``k``-th value ``sample`` can return (discrete dimensions only), computed without listing."""
        if self.values is not None:
            return self.values[k]
        if self.ptype != "int":
            raise ValueError(f"{self.name} is continuous; it has no finite support")
        step = int(self.step) if (self.step is not None and not self.log) else 1
        return int(self.low) + k * step

    def support(self) -> tuple:
        """Every value ``sample`` can return (discrete dimensions only; lists them, so small ones only)."""
        size = self.support_size()
        if size is None:
            raise ValueError(f"{self.name} is continuous; it has no finite support")
        return tuple(self.support_value(k) for k in range(size))

    def sample(self, rng: np.random.Generator) -> Any:
        """One value: uniform over choices, uniform / log-uniform within a range, of the right type."""
        return self.sampler()(rng)

    def sampler(self) -> Callable[[np.random.Generator], Any]:
        """``sample`` with its constants worked out once: a sweep draws a million values of each dimension."""
        if self.values is not None:
            values, count = self.values, len(self.values)
            return lambda rng: values[int(rng.integers(count))]
        low, high = float(self.low), float(self.high)
        if self.ptype == "int":
            lo, hi = int(low), int(high)
            if self.log:
                # Log-uniform over [lo-0.5, hi+0.5) so that rounding reaches both ends.
                log_lo, log_hi = math.log(lo - 0.5), math.log(hi + 0.5)
                return lambda rng: min(max(int(round(math.exp(rng.uniform(log_lo, log_hi)))), lo), hi)
            if self.step is not None:
                step = int(self.step)
                steps = (hi - lo) // step + 1
                return lambda rng: lo + step * int(rng.integers(0, steps))
            return lambda rng: int(rng.integers(lo, hi + 1))
        if self.log:
            log_low, log_high = math.log(low), math.log(high)
            return lambda rng: float(math.exp(rng.uniform(log_low, log_high)))
        return lambda rng: float(rng.uniform(low, high))

    def range_bounds(self) -> tuple[float, float]:
        """The bounds a range's value must lie within, its ends widened by a relative tolerance for rounding."""
        tol = _FLOAT_TOL * max(abs(self.low), abs(self.high), 1.0)
        return self.low - tol, self.high + tol

    def contains(self, value: Any) -> bool:
        try:
            v = coerce(value, self.ptype)
        except ValueError:
            return False
        if self.values is not None:
            return v in self.values
        low, high = self.range_bounds()
        if not (low <= v <= high):
            return False
        if self.ptype == "int" and self.step is not None and not self.log:
            return (v - int(self.low)) % int(self.step) == 0
        return True


def _check_value(param: Param, value: Any, loc: tuple[str | int, ...]) -> Any:
    if not isinstance(value, SCALAR_TYPES):
        article = "an" if param.type == "int" else "a"
        needed = f"{article} {param.type} value is needed here"
        raise SpaceError(f"got {type(value).__name__} {_short(value)}; {needed}", loc)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and param.type in ("int", "float"):
        if isinstance(value, float) and not math.isfinite(value):
            raise SpaceError(f"got {value!r}; give a finite number", loc)
        if abs(value) > MAX_MAGNITUDE:
            raise SpaceError(f"{_short(value)} is out of range; give a number within ±{MAX_MAGNITUDE:g}", loc)
    try:
        return param.check(value)
    except TemplateError as err:
        message = str(err)  # the field path already names the parameter: drop a leading "name="
        if message.startswith(f"{param.name}="):
            message = message[len(param.name) + 1 :]
        raise SpaceError(message, loc) from None


def _short(value: Any, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters, so a huge value never floods a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _range_bound(param: Param, raw: Any, key: str, index: int) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise SpaceError(f"bound {_short(raw)} is not a number; give two numbers [lo, hi]", (key, index))
    return _check_value(param, raw, (key, index))


def dimension_from_spec(name: str, raw: Any, param: Param) -> Dimension:
    """Turn one ``template.params`` entry into a Dimension, checking it against the template's Param.

    Accepted forms: a scalar, a non-empty list of scalars, ``{range: [lo, hi]}`` with optional
    ``step`` or ``num``, ``{log_range: [lo, hi]}`` with optional ``num``.
    """
    forms = "a value, a non-empty list of values, {range: [lo, hi], step: s | num: n} or {log_range: [lo, hi]}"
    if raw is None:
        raise SpaceError(f"has no value; give {forms}")
    if isinstance(raw, SCALAR_TYPES):
        return Dimension(name, param.type, values=(_check_value(param, raw, ()),))
    if isinstance(raw, list):
        if not raw:
            raise SpaceError(f"is an empty list; give {forms}")
        values: list[Any] = []
        seen: set[Any] = set()
        for i, item in enumerate(raw):
            v = _check_value(param, item, (i,))
            if v in seen:
                raise SpaceError(f"{_short(v)} is listed twice; list each value once", (i,))
            seen.add(v)
            values.append(v)
        return Dimension(name, param.type, values=tuple(values))
    if not isinstance(raw, dict):
        raise SpaceError(f"got {type(raw).__name__} {_short(raw)}; give {forms}")
    return _range_dimension(name, raw, param)


def _range_dimension(name: str, raw: dict, param: Param) -> Dimension:
    for key in raw:
        if key not in RANGE_KEYS:
            raise SpaceError(f"unknown key {_short(key)}; allowed keys: {', '.join(RANGE_KEYS)}", (key,))
    has_lin, has_log = "range" in raw, "log_range" in raw
    if has_lin == has_log:
        raise SpaceError(
            "give exactly one of `range: [lo, hi]` or `log_range: [lo, hi]`"
            + (" (not both)" if has_lin else f"; got keys: {', '.join(map(str, raw))}")
        )
    key = "log_range" if has_log else "range"
    if param.type not in ("int", "float"):
        allowed = f" ({', '.join(map(str, param.choices))})" if param.choices else ""
        raise SpaceError(
            f"{key} needs a numeric parameter but {name} is a {param.type}; give a list of values{allowed}", (key,)
        )
    bounds = raw[key]
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise SpaceError(f"{key} must be a list of two numbers [lo, hi], got {_short(bounds)}", (key,))
    low = _range_bound(param, bounds[0], key, 0)
    high = _range_bound(param, bounds[1], key, 1)
    if not low < high:
        raise SpaceError(
            f"{key} lower bound {low!r} is not below upper bound {high!r}; give [lo, hi] with lo < hi", (key,)
        )
    if has_log and low <= 0:
        raise SpaceError(f"log_range lower bound {low!r} must be > 0; give [lo, hi] with 0 < lo < hi", (key, 0))
    step, num = raw.get("step"), raw.get("num")
    if step is not None and num is not None:
        raise SpaceError("give either `step` or `num`, not both", ("num",))
    if step is not None:
        if has_log:
            raise SpaceError("log_range takes `num` (points, geometric) not `step`; default is x2 steps", ("step",))
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 < step <= MAX_MAGNITUDE:
            raise SpaceError(f"step must be a number > 0 and at most {MAX_MAGNITUDE:g}, got {_short(step)}", ("step",))
        if param.type == "int" and not float(step).is_integer():
            raise SpaceError(f"step for the int parameter {name} must be a whole number >= 1, got {step!r}", ("step",))
        step = int(step) if param.type == "int" else float(step)
    if num is not None and (isinstance(num, bool) or not isinstance(num, int) or not 2 <= num <= MAX_NUM):
        raise SpaceError(
            f"num must be an integer >= 2 and at most {MAX_NUM:,} (points in the range), got {_short(num)}", ("num",)
        )
    return Dimension(name, param.type, low=low, high=high, log=has_log, step=step, num=num)


@dataclass(frozen=True)
class DesignSpace:
    """Every parameter named in the spec's ``template.params``, in spec order."""

    dims: tuple[Dimension, ...]

    @classmethod
    def from_spec(cls, spec: Any) -> DesignSpace:
        """Dimensions for ``spec.template.params``, typed by the template's Params."""
        template = registry.family(spec.template.kind).template()
        params = {p.name: p for p in template.params()}
        dims = []
        for name, raw in spec.template.params.items():
            if name not in params:
                template.param(name)  # raises TemplateError listing the parameters
            dims.append(dimension_from_spec(name, raw, params[name]))
        return cls(tuple(dims))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    @property
    def free(self) -> tuple[Dimension, ...]:
        return tuple(d for d in self.dims if not d.is_fixed)

    @property
    def fixed(self) -> dict[str, Any]:
        return {d.name: d.values[0] for d in self.dims if d.is_fixed}

    def dim(self, name: str) -> Dimension:
        for d in self.dims:
            if d.name == name:
                return d
        raise KeyError(f"{name!r} is not a dimension; dimensions are: {', '.join(self.names)}")

    def grid_size(self) -> int:
        """The exact number of grid points (a Python int of any size), computed without listing any."""
        return math.prod(d.grid_count() for d in self.dims)

    def grid(self) -> Iterator[dict[str, Any]]:
        """Every grid point, streamed one at a time; the last dimension varies fastest (itertools.product order)."""
        counts = [d.grid_count() for d in self.dims]
        if any(c == 0 for c in counts):
            return
        digits = [0] * len(counts)
        while True:
            yield {d.name: d.grid_value(k) for d, k in zip(self.dims, digits)}
            position = len(digits) - 1  # odometer step: bump the last digit, carrying leftwards
            while position >= 0:
                digits[position] += 1
                if digits[position] < counts[position]:
                    break
                digits[position] = 0
                position -= 1
            if position < 0:
                return

    def first_point(self) -> dict[str, Any]:
        return {d.name: d.first_value() for d in self.dims}

    def sample_space_size(self) -> int | None:
        """How many distinct points ``sample`` can produce; None when some free dimension is continuous."""
        sizes = [d.support_size() for d in self.free]
        return None if any(s is None for s in sizes) else math.prod(sizes)

    def sample(self, n: int, seed: int) -> list[dict[str, Any]]:
        """``n`` random points as a list (see ``iter_sample``, which streams them)."""
        return list(self.iter_sample(n, seed))

    def iter_sample(self, n: int, seed: int) -> Iterator[dict[str, Any]]:
        """``n`` random points, streamed, the same for the same seed; the space is never listed.

        In a discrete space the points are distinct; asking for more than the space holds
        yields every point once (in random order). A dense request (more than half the space)
        walks a seeded random permutation of the point indices (``IndexPermutation``, constant
        memory); a sparse one draws each dimension (log-uniform on log ranges) and skips repeats,
        remembering only the points drawn so far.
        """
        rng = np.random.default_rng(seed)
        size = self.sample_space_size()
        if size is not None:
            n = min(n, size)
            if n > size // 2:
                sizes = [d.support_size() for d in self.free]
                for index in islice(IndexPermutation(size, seed), n):
                    yield self._point(_support_point(self.free, sizes, index))
                return
        seen: set[tuple] = set()
        samplers = [d.sampler() for d in self.free]
        point = self._point_builder()
        while len(seen) < n:
            key = tuple([draw(rng) for draw in samplers])
            if key in seen:
                continue
            seen.add(key)
            yield point(key)

    def _point(self, free_values: tuple) -> dict[str, Any]:
        return self._point_builder()(free_values)

    def _point_builder(self) -> Callable[[tuple], dict[str, Any]]:
        """free values -> the point (every dimension in order, fixed ones filled in), its plan made once."""
        free = [d.name for d in self.free]
        plan = [
            (d.name, free.index(d.name) if d.name in free else -1, d.values[0] if d.is_fixed else None)
            for d in self.dims
        ]
        return lambda values: {name: values[i] if i >= 0 else fixed for name, i, fixed in plan}

    def canonical(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The point with python scalars typed per dimension, ordered as ``dims``; fixed values filled in."""
        names = self.names  # built once per call: a sweep canonicalises every point
        unknown = [k for k in point if k not in names]
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; known: {', '.join(names)}")
        out: dict[str, Any] = {}
        for d in self.dims:
            if d.name in point:
                try:
                    out[d.name] = coerce(point[d.name], d.ptype)
                except ValueError as err:
                    raise ValueError(f"{d.name}: {err}") from None
            elif d.is_fixed:
                out[d.name] = d.values[0]
            else:
                raise ValueError(f"point has no value for {d.name!r}")
        return out

    def contains(self, point: Mapping[str, Any]) -> bool:
        """True when every free dimension is given, nothing unknown is, and each value is allowed."""
        names = self.names  # built once per call: a finishing run asks it of every stored point
        if any(k not in names for k in point):
            return False
        for d in self.dims:
            if d.name not in point:
                if not d.is_fixed:
                    return False
            elif not d.contains(point[d.name]):
                return False
        return True


def _support_point(dims: tuple[Dimension, ...], sizes: list[int], index: int) -> tuple:
    """The ``index``-th point of the product of the dimensions' supports (last dimension fastest)."""
    values = []
    for dim, size in zip(reversed(dims), reversed(sizes)):
        index, k = divmod(index, size)
        values.append(dim.support_value(k))
    return tuple(reversed(values))


@dataclass(frozen=True)
class IndexPermutation:
    """A seeded pseudo-random order of ``range(size)`` in constant memory, for spaces of any size.

    A four-round Feistel network (keyed BLAKE2b rounds) is a bijection on ``[0, 4**half)``, the
    smallest power of four >= size; indices that land outside ``range(size)`` are mapped again
    (cycle walking), so every index comes out exactly once.
    """

    size: int
    seed: int
    rounds: int = 4

    def __iter__(self) -> Iterator[int]:
        half = max(1, (max(self.size - 1, 1).bit_length() + 1) // 2)
        for index in range(self.size):
            value = self._encrypt(index, half)
            while value >= self.size:
                value = self._encrypt(value, half)
            yield value

    def _encrypt(self, value: int, half: int) -> int:
        mask = (1 << half) - 1
        left, right = value >> half, value & mask
        width = (half + 7) // 8 + 1
        for r in range(self.rounds):
            digest = hashlib.blake2b(
                right.to_bytes(width, "little"), digest_size=max(8, width), key=f"{self.seed}:{r}".encode()
            ).digest()
            left, right = right, left ^ (int.from_bytes(digest, "little") & mask)
        return (left << half) | right
