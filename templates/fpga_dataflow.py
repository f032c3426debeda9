"""The FPGA dataflow template: an hls4ml-style accelerator with hls4ml's own knobs, plus InTAR-style engine sharing.

The knobs are the ones an hls4ml user sets in ``HLSConfig`` (and the ones ``dse export`` writes back):

- model level (hls4ml ``Model``): ``reuse_factor`` (ReuseFactor), ``strategy`` (Strategy: latency | resource),
  ``width``/``integer`` (the model Precision ``ap_fixed<width,integer>``, used for inputs, results, biases and
  accumulators), ``weight_width``/``weight_integer`` and ``accum_width``/``accum_integer`` (per-variable
  precisions; ``None`` = the model precision), ``io_type`` (io_parallel | io_stream), ``clock_period_ns``
  (ClockPeriod) and ``part`` (a part of ``hwmodels.catalogs.fpga``);
- per layer (hls4ml ``LayerName``): ``layer<i>_reuse_factor``, ``layer<i>_strategy``, ``layer<i>_weight_width``,
  ``layer<i>_weight_integer``, ``layer<i>_result_width``, ``layer<i>_result_integer`` and ``layer<i>_execution``,
  for i = 0 .. MAX_LAYERS-1; ``None`` (the default) inherits the model-level value.

Templates know nothing of graphs, so a layer is addressed by index: layer ``i`` is the i-th compute layer (Dense or
Conv) of the network in topological order, together with the activation/pooling/softmax ops that follow it up to
the next compute layer (its "layer group"). Layers beyond MAX_LAYERS take the model-level values. The mapper
records which graph op each index names.

Execution style (the InTAR axis): ``execution`` = dataflow gives every layer its own engine, all running
concurrently (hls4ml's style); sequential runs every layer, one after another, on one shared engine sized for the
largest of them; hybrid lets the mapper put light layers on a shared engine when that does not lengthen the
pipeline's initiation interval (InTAR's observation: in pure dataflow most engines idle). ``layer<i>_execution``
(dataflow | sequential) pins one layer to its own engine or to the shared one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from hwmodels.catalogs.fpga import part_names
from templates.base import Arch, Param, Template, TemplateError

MAX_LAYERS = 8
STRATEGIES = ("latency", "resource")
IO_TYPES = ("io_parallel", "io_stream")
EXECUTIONS = ("dataflow", "sequential", "hybrid")
LAYER_EXECUTIONS = ("dataflow", "sequential")
MAX_WIDTH = 64
MAX_REUSE = 1 << 20
LAYER_KNOBS = (
    "reuse_factor",
    "strategy",
    "weight_width",
    "weight_integer",
    "result_width",
    "result_integer",
    "execution",
)


@dataclass(frozen=True)
class FixedType:
    """An ``ap_fixed<width, integer>`` type."""

    width: int
    integer: int

    def hls(self) -> str:
        return f"ap_fixed<{self.width},{self.integer}>"


@dataclass(frozen=True)
class LayerKnobs:
    """The knobs of one layer after inheritance: what hls4ml's LayerName entry for it says."""

    reuse_factor: int
    strategy: str
    weight: FixedType
    result: FixedType
    accum: FixedType
    execution: str  # dataflow | sequential | hybrid (hybrid: the mapper decides)
    pinned_execution: bool  # True when layer<i>_execution set it explicitly


@dataclass(frozen=True)
class FpgaArch(Arch):
    """One FPGA design: model-level knobs and per-layer overrides (``None`` = inherit)."""

    kind: ClassVar[str] = "fpga_dataflow"

    part: str
    clock_period_ns: float
    io_type: str
    strategy: str
    reuse_factor: int
    precision: FixedType
    weight_precision: FixedType
    accum_precision: FixedType
    execution: str
    overrides: tuple[tuple[tuple[str, Any], ...], ...]  # per layer index: ((knob, value), ...) set explicitly

    @property
    def freq_mhz(self) -> float:
        return 1000.0 / self.clock_period_ns

    def override(self, index: int) -> dict[str, Any]:
        return dict(self.overrides[index]) if index < len(self.overrides) else {}

    def layer(self, index: int) -> LayerKnobs:
        """Knobs of compute layer ``index`` with model-level values filled in."""
        o = self.override(index)
        weight = FixedType(
            o.get("weight_width", self.weight_precision.width), o.get("weight_integer", self.weight_precision.integer)
        )
        result = FixedType(o.get("result_width", self.precision.width), o.get("result_integer", self.precision.integer))
        return LayerKnobs(
            reuse_factor=o.get("reuse_factor", self.reuse_factor),
            strategy=o.get("strategy", self.strategy),
            weight=weight,
            result=result,
            accum=self.accum_precision,
            execution=o.get("execution", self.execution),
            pinned_execution="execution" in o,
        )


def _width_params(prefix: str, default_width: int | None, default_integer: int | None, what: str) -> list[Param]:
    return [
        Param(f"{prefix}width", "int", default_width, f"total bits of the {what} ap_fixed type", low=1, high=MAX_WIDTH),
        Param(
            f"{prefix}integer",
            "int",
            default_integer,
            f"integer bits (sign included) of the {what} ap_fixed type",
            low=-MAX_WIDTH,
            high=MAX_WIDTH,
        ),
    ]


class FpgaDataflowTemplate(Template):
    kind: ClassVar[str] = "fpga_dataflow"

    def params(self) -> list[Param]:
        return list(_params())

    def instantiate(self, point: Mapping[str, Any]) -> FpgaArch:
        v = self.resolve(point)
        precision = _fixed(v["width"], v["integer"], "")
        weight = _fixed(
            v["weight_width"] if v["weight_width"] is not None else precision.width,
            v["weight_integer"] if v["weight_integer"] is not None else precision.integer,
            "weight_",
        )
        accum = _fixed(
            v["accum_width"] if v["accum_width"] is not None else precision.width,
            v["accum_integer"] if v["accum_integer"] is not None else precision.integer,
            "accum_",
        )
        overrides = []
        for i in range(MAX_LAYERS):
            layer = tuple((knob, v[f"layer{i}_{knob}"]) for knob in LAYER_KNOBS if v[f"layer{i}_{knob}"] is not None)
            given = dict(layer)
            for kind, default in (("weight", weight), ("result", precision)):
                if f"{kind}_width" in given or f"{kind}_integer" in given:
                    _fixed(
                        given.get(f"{kind}_width", default.width),
                        given.get(f"{kind}_integer", default.integer),
                        f"layer{i}_{kind}_",
                    )
            overrides.append(layer)
        return FpgaArch(
            part=v["part"],
            clock_period_ns=v["clock_period_ns"],
            io_type=v["io_type"],
            strategy=v["strategy"],
            reuse_factor=v["reuse_factor"],
            precision=precision,
            weight_precision=weight,
            accum_precision=accum,
            execution=v["execution"],
            overrides=tuple(overrides),
        )

    def instantiate_columns(
        self, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``instantiate`` for a batch of points (the array evaluation's designs): the model-level knobs and every
        layer's knobs after inheritance (``FpgaArch.layer``) as columns (numbers as floats, the rest objects),
        ``layer<i>_weight_given`` (its weight type set explicitly, which ``imported_weight_type`` honours), and
        which points ``instantiate`` accepts; the caller instantiates a refused one alone for its message."""
        n = len(points)
        cols = self.resolve_columns(points, fixed)

        def column(name: str, default: Any = None) -> np.ndarray:
            values = cols[name]
            if isinstance(values, np.ndarray):
                return values.astype(float)
            out = np.empty(n, dtype=object)
            out[:] = [default if v is None else v for v in values]
            return out

        def given(name: str) -> np.ndarray:
            values = cols[name]
            if isinstance(values, np.ndarray):
                return np.ones(n, dtype=bool)
            if values.count(None) == n:  # a layer knob no point sets: the common case, at C speed
                return np.zeros(n, dtype=bool)
            return np.fromiter((v is not None for v in values), dtype=bool, count=n)

        def inherit(name: str, default: np.ndarray) -> np.ndarray:
            here = given(name)
            if not here.any():
                return default
            return np.where(here, column(name), default)

        width, integer = column("width").astype(float), column("integer").astype(float)
        weight_width, weight_integer = inherit("weight_width", width), inherit("weight_integer", integer)
        accum_width, accum_integer = inherit("accum_width", width), inherit("accum_integer", integer)
        accepted = fixed_fits(width, integer) & fixed_fits(weight_width, weight_integer)
        accepted &= fixed_fits(accum_width, accum_integer)
        out = {
            "part": column("part"),
            "clock_period_ns": column("clock_period_ns").astype(float),
            "io_type": column("io_type"),
            "execution": column("execution"),
            "width": width,
            "integer": integer,
            "accum_width": accum_width.astype(float),
            "accum_integer": accum_integer.astype(float),
            "reuse_factor": column("reuse_factor").astype(float),
            "strategy": column("strategy"),
            "weight_width": weight_width.astype(float),
            "weight_integer": weight_integer.astype(float),
        }
        for i in range(MAX_LAYERS):
            p = f"layer{i}_"
            defaults = {
                "reuse_factor": out["reuse_factor"],
                "strategy": out["strategy"],
                "weight_width": out["weight_width"],
                "weight_integer": out["weight_integer"],
                "result_width": width,
                "result_integer": integer,
                "execution": out["execution"],
            }
            for knob, default in defaults.items():
                out[p + knob] = inherit(p + knob, default)
                if knob not in ("strategy", "execution"):
                    out[p + knob] = out[p + knob].astype(float)
            out[p + "pinned"] = given(p + "execution")
            out[p + "weight_given"] = given(p + "weight_width") | given(p + "weight_integer")
            for kind in ("weight", "result"):
                set_here = given(f"{p}{kind}_width") | given(f"{p}{kind}_integer")
                accepted &= ~set_here | fixed_fits(out[f"{p}{kind}_width"], out[f"{p}{kind}_integer"])
        return out, accepted


@lru_cache(maxsize=1)
def _params() -> tuple[Param, ...]:
    """The template's parameters, built once: ``resolve`` asks for them at every point."""
    out = [
        Param("part", "str", "xcu250", "target FPGA part (hwmodels.catalogs.fpga)", choices=tuple(part_names())),
        Param("clock_period_ns", "float", 5.0, "target clock period (hls4ml ClockPeriod)", low=1.0, high=100.0),
        Param("io_type", "str", "io_parallel", "hls4ml IOType", choices=IO_TYPES),
        Param("strategy", "str", "latency", "hls4ml Strategy of every layer", choices=STRATEGIES),
        Param(
            "reuse_factor",
            "int",
            1,
            "hls4ml ReuseFactor of every layer (snapped to legal values per layer)",
            low=1,
            high=MAX_REUSE,
        ),
        *_width_params("", 16, 6, "model default (inputs, results, biases)"),
        *_width_params("weight_", None, None, "weight (None = model default)"),
        *_width_params("accum_", None, None, "accumulator (None = model default)"),
        Param(
            "execution",
            "str",
            "dataflow",
            "engine per layer, one shared engine, or mapper's choice",
            choices=EXECUTIONS,
        ),
    ]
    for i in range(MAX_LAYERS):
        p = f"layer{i}_"
        out += [
            Param(f"{p}reuse_factor", "int", None, f"ReuseFactor of compute layer {i}", low=1, high=MAX_REUSE),
            Param(f"{p}strategy", "str", None, f"Strategy of compute layer {i}", choices=STRATEGIES),
            *_width_params(f"{p}weight_", None, None, f"layer {i} weight"),
            *_width_params(f"{p}result_", None, None, f"layer {i} result"),
            Param(
                f"{p}execution",
                "str",
                None,
                f"own engine or the shared one for layer {i}",
                choices=LAYER_EXECUTIONS,
            ),
        ]
    return tuple(out)


def layer_knob_columns(columns: dict[str, np.ndarray], index: int) -> dict[str, np.ndarray]:
    """The knob columns of compute layer ``index`` (``instantiate_columns``' names without the layer prefix);
    layers beyond MAX_LAYERS take the model-level values, as ``FpgaArch.layer`` gives them."""
    if index < MAX_LAYERS:
        p = f"layer{index}_"
        return {name[len(p) :]: column for name, column in columns.items() if name.startswith(p)}
    n = len(columns["width"])
    return {
        "reuse_factor": columns["reuse_factor"],
        "strategy": columns["strategy"],
        "weight_width": columns["weight_width"],
        "weight_integer": columns["weight_integer"],
        "result_width": columns["width"],
        "result_integer": columns["integer"],
        "execution": columns["execution"],
        "pinned": np.zeros(n, dtype=bool),
        "weight_given": np.zeros(n, dtype=bool),
    }


def fixed_fits(width: Any, integer: Any) -> Any:
    """Whether ``ap_fixed<width, integer>`` is a type this template takes (I <= W): for numbers or numpy columns."""
    return integer <= width


def _fixed(width: int, integer: int, prefix: str) -> FixedType:
    if not fixed_fits(width, integer):
        raise TemplateError(
            f"{prefix}integer={integer} exceeds {prefix}width={width}; ap_fixed<W,I> here needs I <= W "
            f"(e.g. {prefix}width=16, {prefix}integer=6)",
            f"{prefix}integer",
        )
    return FixedType(width, integer)
