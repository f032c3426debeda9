"""The design space: one Dimension per template parameter named in the spec.

The spec says *which* values a parameter may take (a scalar, a list, a linear or
log range); the space turns that into grids for exhaustive search and into
type-correct random samples for the stochastic strategies. A point is a plain
dict of every parameter named in the spec (free and fixed), so it can be hashed,
stored and handed to ``Template.instantiate`` as is.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse import registry
from templates.base import Param, TemplateError

SCALAR_TYPES = (str, int, float, bool)
RANGE_KEYS = ("range", "log_range", "step", "num")
_FLOAT_TOL = 1e-9


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

    def grid_values(self) -> tuple:
        """The values a grid search visits, in increasing order for ranges. Deterministic."""
        if self.values is not None:
            return self.values
        low, high = float(self.low), float(self.high)
        if self.ptype == "int":
            lo, hi = int(low), int(high)
            if self.log:
                if self.num is None:
                    return tuple(int(v) for v in _doubling(lo, hi))
                return _unique([int(round(v)) for v in np.geomspace(lo, hi, self.num)])
            if self.num is not None:
                return _unique([int(round(v)) for v in np.linspace(lo, hi, self.num)])
            return tuple(range(lo, hi + 1, int(self.step or 1)))
        if self.log:
            if self.num is None:
                return tuple(float(v) for v in _doubling(low, high))
            return tuple(float(v) for v in np.geomspace(low, high, self.num))
        if self.num is not None:
            return tuple(float(v) for v in np.linspace(low, high, self.num))
        if self.step is not None:
            count = math.floor((high - low) / self.step + _FLOAT_TOL) + 1
            return tuple(round(low + k * self.step, 12) for k in range(count))
        raise ValueError(
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

    def support(self) -> tuple:
        """Every value ``sample`` can return (discrete dimensions only)."""
        if self.values is not None:
            return self.values
        if self.ptype != "int":
            raise ValueError(f"{self.name} is continuous; it has no finite support")
        step = int(self.step) if (self.step is not None and not self.log) else 1
        return tuple(range(int(self.low), int(self.high) + 1, step))

    def sample(self, rng: np.random.Generator) -> Any:
        """One value: uniform over choices, uniform / log-uniform within a range, of the right type."""
        if self.values is not None:
            return self.values[int(rng.integers(len(self.values)))]
        low, high = float(self.low), float(self.high)
        if self.ptype == "int":
            lo, hi = int(low), int(high)
            if self.log:
                # Log-uniform over [lo-0.5, hi+0.5) so that rounding reaches both ends.
                v = math.exp(rng.uniform(math.log(lo - 0.5), math.log(hi + 0.5)))
                return min(max(int(round(v)), lo), hi)
            if self.step is not None:
                return lo + int(self.step) * int(rng.integers(0, (hi - lo) // int(self.step) + 1))
            return int(rng.integers(lo, hi + 1))
        if self.log:
            return float(math.exp(rng.uniform(math.log(low), math.log(high))))
        return float(rng.uniform(low, high))

    def contains(self, value: Any) -> bool:
        try:
            v = coerce(value, self.ptype)
        except ValueError:
            return False
        if self.values is not None:
            return v in self.values
        tol = _FLOAT_TOL * max(abs(self.low), abs(self.high), 1.0)
        if not (self.low - tol <= v <= self.high + tol):
            return False
        if self.ptype == "int" and self.step is not None and not self.log:
            return (v - int(self.low)) % int(self.step) == 0
        return True


def _check_value(param: Param, value: Any, loc: tuple[str | int, ...]) -> Any:
    if not isinstance(value, SCALAR_TYPES):
        article = "an" if param.type == "int" else "a"
        raise SpaceError(f"got {type(value).__name__} {value!r}; {article} {param.type} value is needed here", loc)
    try:
        return param.check(value)
    except TemplateError as err:
        message = str(err)  # the field path already names the parameter: drop a leading "name="
        if message.startswith(f"{param.name}="):
            message = message[len(param.name) + 1 :]
        raise SpaceError(message, loc) from None


def _range_bound(param: Param, raw: Any, key: str, index: int) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise SpaceError(f"bound {raw!r} is not a number; give two numbers [lo, hi]", (key, index))
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
        for i, item in enumerate(raw):
            v = _check_value(param, item, (i,))
            if v in values:
                raise SpaceError(f"{v!r} is listed twice; list each value once", (i,))
            values.append(v)
        return Dimension(name, param.type, values=tuple(values))
    if not isinstance(raw, dict):
        raise SpaceError(f"got {type(raw).__name__} {raw!r}; give {forms}")
    return _range_dimension(name, raw, param)


def _range_dimension(name: str, raw: dict, param: Param) -> Dimension:
    for key in raw:
        if key not in RANGE_KEYS:
            raise SpaceError(f"unknown key {key!r}; allowed keys: {', '.join(RANGE_KEYS)}", (key,))
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
        raise SpaceError(f"{key} must be a list of two numbers [lo, hi], got {bounds!r}", (key,))
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
        if isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0:
            raise SpaceError(f"step must be a number > 0, got {step!r}", ("step",))
        if param.type == "int" and not float(step).is_integer():
            raise SpaceError(f"step for the int parameter {name} must be a whole number >= 1, got {step!r}", ("step",))
        step = int(step) if param.type == "int" else float(step)
    if num is not None and (isinstance(num, bool) or not isinstance(num, int) or num < 2):
        raise SpaceError(f"num must be an integer >= 2 (points in the range), got {num!r}", ("num",))
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
        return math.prod(len(d.grid_values()) for d in self.dims)

    def grid(self) -> Iterator[dict[str, Any]]:
        """Every grid point; the last dimension varies fastest (itertools.product order)."""
        names = self.names
        for combo in itertools.product(*(d.grid_values() for d in self.dims)):
            yield dict(zip(names, combo))

    def first_point(self) -> dict[str, Any]:
        return {d.name: d.first_value() for d in self.dims}

    def sample_space_size(self) -> int | None:
        """How many distinct points ``sample`` can produce; None when some free dimension is continuous."""
        sizes = [d.support_size() for d in self.free]
        return None if any(s is None for s in sizes) else math.prod(sizes)

    def sample(self, n: int, seed: int) -> list[dict[str, Any]]:
        """``n`` random points, the same for the same seed.

        In a discrete space the points are distinct; asking for more than the space holds
        returns every point once (in random order).
        """
        rng = np.random.default_rng(seed)
        size = self.sample_space_size()
        if size is not None:
            n = min(n, size)
            if n > size // 2:  # dense request: draw without replacement from the enumerated space
                supports = [d.support() for d in self.free]
                every = list(itertools.product(*supports))
                return [self._point(every[int(i)]) for i in rng.permutation(len(every))[:n]]
        points: list[dict[str, Any]] = []
        seen: set[tuple] = set()
        while len(points) < n:
            key = tuple(d.sample(rng) for d in self.free)
            if key in seen:
                continue
            seen.add(key)
            points.append(self._point(key))
        return points

    def _point(self, free_values: tuple) -> dict[str, Any]:
        chosen = dict(zip((d.name for d in self.free), free_values))
        return {d.name: chosen[d.name] if d.name in chosen else d.values[0] for d in self.dims}

    def canonical(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The point with python scalars typed per dimension, ordered as ``dims``; fixed values filled in."""
        unknown = [k for k in point if k not in self.names]
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; known: {', '.join(self.names)}")
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
        if any(k not in self.names for k in point):
            return False
        for d in self.dims:
            if d.name not in point:
                if not d.is_fixed:
                    return False
            elif not d.contains(point[d.name]):
                return False
        return True
