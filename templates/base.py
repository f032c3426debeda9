"""The template contract: a parameterized hardware family.

Every template declares its parameters with ``params()`` and turns one point
(a mapping of parameter name to value) into an immutable ``Arch`` with
``instantiate(point)``. Templates know nothing of search, graphs or YAML.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

_UNSET = object()


class TemplateError(ValueError):
    """A parameter value is not allowed. ``param`` names it; the message says what is allowed."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Param:
    """One template parameter: its type, default and what values are legal."""

    name: str
    type: str  # "int" | "float" | "str" | "bool"
    default: Any
    doc: str = ""
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    unit: str = ""

    def check(self, value: Any) -> Any:
        """Coerce ``value`` to this parameter's type or raise TemplateError saying what is allowed."""
        if value is None and self.default is None:
            return None
        try:
            if self.type == "int":
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                v: Any = int(value)
            elif self.type == "float":
                if isinstance(value, bool):
                    raise ValueError
                v = float(value)
            elif self.type == "bool":
                if not isinstance(value, bool):
                    raise ValueError
                v = value
            else:
                v = str(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float
            raise TemplateError(f"{self.name} must be a {self.type}, got {value!r}", self.name) from None
        if self.choices is not None and v not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise TemplateError(f"{self.name}={v!r} is not allowed; choose one of: {allowed}", self.name)
        if self.low is not None and v < self.low:
            raise TemplateError(f"{self.name}={v!r} is below the minimum {self.low:g}{self.unit}", self.name)
        if self.high is not None and v > self.high:
            raise TemplateError(f"{self.name}={v!r} is above the maximum {self.high:g}{self.unit}", self.name)
        return v

    def check_many(self, values: Sequence[Any]) -> np.ndarray | list:
        """``check`` over a column of values (one batch of design points), each distinct value checked once.

        Plain int/float columns are checked with numpy; the first bad value raises ``check``'s message.
        ``_UNSET`` entries (a point that does not name this parameter) take the default.
        """
        types = set(map(type, values))
        if self.type in ("int", "float") and types <= {int, float}:
            numbers = np.asarray(values, dtype=float)
            bad = np.zeros(len(numbers), dtype=bool)
            if self.type == "int":
                bad |= numbers != np.round(numbers)
            if self.low is not None:
                bad |= numbers < self.low
            if self.high is not None:
                bad |= numbers > self.high
            if self.choices is not None:
                bad |= ~np.isin(numbers, np.asarray(self.choices, dtype=float))
            if bad.any():
                self.check(values[int(np.argmax(bad))])
            return numbers

        def one(value: Any) -> Any:
            return self.default if value is _UNSET else self.check(value)

        if (bool in types and len(types) > 1) or not all(t.__hash__ for t in types):
            return [one(v) for v in values]  # True == 1 as a dict key, or unhashable values: one by one
        checked = {v: one(v) for v in set(values)}
        return [checked[v] for v in values]


@dataclass(frozen=True)
class Roofline:
    """A design's roofline: its peak arithmetic rate (ops/s, a MAC counted as two ops) and its DRAM bandwidth."""

    peak_ops_per_s: float
    dram_bytes_per_s: float


@dataclass(frozen=True)
class Arch:
    """An immutable description of one design. Subclasses add their fields."""

    kind: ClassVar[str] = "arch"

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def roofline(self) -> Roofline | None:
        """The design's roofline, for the reports' roofline figures; None where the template draws none."""
        return None


class Template(ABC):
    """A hardware family: declares parameters, instantiates an Arch from a point."""

    kind: ClassVar[str]

    @abstractmethod
    def params(self) -> list[Param]:
        """Every parameter this template takes, with defaults and legal values."""

    @abstractmethod
    def instantiate(self, point: Mapping[str, Any]) -> Arch:
        """One design from a point; missing parameters take their defaults."""

    def param(self, name: str) -> Param:
        for p in self.params():
            if p.name == name:
                return p
        raise TemplateError(
            f"{self.kind} has no parameter {name!r}; its parameters are: " + ", ".join(p.name for p in self.params()),
            name,
        )

    def resolve(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """Check every value in ``point``, fill in defaults, refuse unknown names."""
        known = {p.name: p for p in self.params()}
        for name in point:
            if name not in known:
                self.param(name)  # raises with the list of known parameters
        return {name: p.check(point[name]) if name in point else p.default for name, p in known.items()}

    def resolve_columns(
        self, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]
    ) -> dict[str, np.ndarray | list]:
        """``resolve`` for a batch: every parameter as a column over ``{**fixed, **point}`` for each point.

        Batch consumers (the surrogates predict 10^5 designs at a time) get the same checks and defaults
        as ``resolve`` at a dictionary look-up per value instead of a call per point.
        """
        known = {p.name: p for p in self.params()}
        given = sorted(points[0]) if points else []
        extracted: dict[str, list] = {}
        if given and set(map(len, points)) == {len(given)}:
            try:  # every point names the same parameters (a space's points do): one C-level pass per name
                extracted = {name: list(map(operator.itemgetter(name), points)) for name in given}
            except KeyError:
                extracted = {}
        present = set(given) if extracted else set().union(*(point.keys() for point in points))
        for name in sorted(present | set(fixed)):
            if name not in known:
                self.param(name)  # raises with the list of known parameters
        columns: dict[str, np.ndarray | list] = {}
        for name, param in known.items():
            base = fixed.get(name, _UNSET)
            if name not in present:  # the same value for every point: check it once
                columns[name] = [param.default if base is _UNSET else param.check(base)] * len(points)
            else:
                raw = extracted[name] if name in extracted else [point.get(name, base) for point in points]
                columns[name] = param.check_many(raw)
        return columns
