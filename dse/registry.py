"""Which hardware families exist, by name: the only family table, and everything a family can do.

A template kind maps to its Template, its mappers (the first is the default), its HwModel, its accuracy
model and its capabilities: the closed form and layer baselines the surrogates learn against, the op-level feature set,
the exporters, whether ``dse schedule`` takes it, whether its arch takes a ``precision`` parameter.
Nothing else registers a family or names one; the explorer, the spec, the surrogates and every command
ask this table, so adding one is one entry below. The mappers' options (``template.mapper_options`` in a
spec) are their dataclass fields, checked here with one clear message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dse.errors import UserError
from dse.graph import Graph
from hwmodels.accuracy.base import AccuracyFactory
from hwmodels.accuracy.fpga_accuracy import FpgaAccuracy
from hwmodels.accuracy.precision_accuracy import PrecisionAccuracy
from hwmodels.base import HwModel
from hwmodels.fpga.arrays import FpgaArrayEvaluator
from hwmodels.fpga.model import FpgaDataflowModel
from hwmodels.gpu.arrays import GpuArrayEvaluator
from hwmodels.gpu.model import GpuModel
from hwmodels.multicore.model import MulticoreModel
from hwmodels.rdu.model import RduModel
from hwmodels.systolic.arrays import SystolicArrayEvaluator
from hwmodels.systolic.model import SystolicModel
from mappers.base import Mapper, MappingError
from mappers.fpga import FpgaDataflowMapper
from mappers.gpu import GpuTileMapper
from mappers.multicore.balanced import MulticoreBalancedMapper
from mappers.multicore.cpsat import MulticoreCpSatMapper
from mappers.multicore.greedy import MulticoreGreedyMapper
from mappers.rdu.cover import RduCoverMapper
from mappers.rdu.sections import RduSectionMapper, RduUnfusedMapper
from mappers.systolic.cpsat import CpSatMapper
from mappers.systolic.fold import SystolicFoldMapper
from mappers.systolic.greedy import GreedyMapper
from templates.base import Template
from templates.fpga_dataflow import FpgaDataflowTemplate
from templates.gpu import GpuTemplate
from templates.multicore import MulticoreTemplate
from templates.rdu import RduTemplate
from templates.systolic import SystolicTemplate

GPU_KIND = "gpu"  # the family of catalog GPUs: what `dse compare` and measured kernel tables are priced on
HLS4ML = "hls4ml"  # the exporter name of hls4ml projects (``dse export``; synthesis reports read back)
SCALESIM = "scalesim"  # the peer simulator SCALE-Sim (validation, ``--truth scalesim``)


@dataclass(frozen=True)
class SurrogateBasis:
    """What the surrogates learn a family's expensive truth against: always its own cheap mappers."""

    closed_form: str  # the mapper whose mapping, priced by the family's model, is the design-level baseline
    # expensive mapper -> the cheap mapper of the same search, whose layers the layer-level surrogate corrects
    layer_baselines: Mapping[str, str] = field(default_factory=dict)
    # the op-level feature set (one row per distinct op) that learns the closed form's own truth, if any
    op_features: str | None = None


@dataclass(frozen=True)
class Family:
    """A hardware family: how to build, map and evaluate it, and what else it supports."""

    template: Callable[[], Template]
    mappers: dict[str, Callable[..., Mapper]]  # first entry is the default
    hwmodel: Callable[[], HwModel]
    surrogates: SurrogateBasis
    exporters: tuple[str, ...] = ()  # ``dse export`` backends its designs can be written to
    schedules: bool = False  # ``dse schedule`` tiles and checks its designs op by op
    arch_precision: bool = False  # its cost models read the precision from the arch: a searchable template param
    simulators: tuple[str, ...] = ()  # peer simulators that run its designs (their configs map to its points)
    # the accuracy model of a point's number formats on workload.data (graph, data path -> model); None: no
    # accuracy metrics for this family
    accuracy: AccuracyFactory | None = None
    # evaluates a batch of points of one graph at once with the default mapper, exactly as the hardware model
    # does point by point ((graph, fixed params) -> an object with ``evaluate_points``, ``flat_columns`` and
    # ``flat_rows``: ``hwmodels.{systolic,fpga,gpu}.arrays``); the explorer streams grid and random sweeps to it
    array_evaluator: Callable[[Graph, dict], Any] | None = None
    doc: str = ""

    @property
    def default_mapper(self) -> str:
        return next(iter(self.mappers))


FAMILIES: dict[str, Family] = {
    "systolic": Family(
        template=SystolicTemplate,
        # fold (SCALE-Sim-compatible, a few ms per network) stays the default: the explorer's rate target
        # needs it; cpsat (optimal tiling, residency and scratchpad allocation) and greedy (its baseline)
        # are chosen with template.mapper in a spec.
        mappers={"fold": SystolicFoldMapper, "cpsat": CpSatMapper, "greedy": GreedyMapper},
        hwmodel=SystolicModel,
        surrogates=SurrogateBasis(
            closed_form="fold", layer_baselines={"cpsat": "greedy", "greedy": "fold"}, op_features="systolic"
        ),
        schedules=True,
        simulators=(SCALESIM,),
        arch_precision=True,
        accuracy=PrecisionAccuracy.of_graph,  # the template's `precision` applied to the ONNX model
        array_evaluator=SystolicArrayEvaluator,
        doc="systolic array (ws/os/is), SCALE-Sim-validated",
    ),
    "fpga_dataflow": Family(
        template=FpgaDataflowTemplate,
        mappers={"hls4ml": FpgaDataflowMapper},
        hwmodel=FpgaDataflowModel,
        surrogates=SurrogateBasis(closed_form="hls4ml"),
        exporters=(HLS4ML,),
        accuracy=FpgaAccuracy,  # the hls4ml network emulated bit for bit at each layer's precision
        array_evaluator=FpgaArrayEvaluator,
        doc="hls4ml-style FPGA layer pipeline",
    ),
    GPU_KIND: Family(
        template=GpuTemplate,
        mappers={"tile": GpuTileMapper},
        hwmodel=GpuModel,
        surrogates=SurrogateBasis(closed_form="tile"),
        accuracy=PrecisionAccuracy.of_graph,
        array_evaluator=GpuArrayEvaluator,
        doc="GPU: catalog parts or custom, threadblock tiling",
    ),
    "rdu": Family(
        template=RduTemplate,
        # bound_cover: the section bound's best covers realised once, the surrogates' closed form
        mappers={"sections": RduSectionMapper, "unfused": RduUnfusedMapper, "bound_cover": RduCoverMapper},
        hwmodel=RduModel,
        surrogates=SurrogateBasis(closed_form="bound_cover"),
        accuracy=PrecisionAccuracy.of_graph,
        doc="reconfigurable dataflow unit: PCUs/PMUs, SRAM/HBM/DDR, fused sections",
    ),
    "multicore": Family(
        template=MulticoreTemplate,
        # balanced: the CP-SAT mapper's own hint (its seeds, load-balanced), the surrogates' closed form
        mappers={
            "multicore": MulticoreCpSatMapper,
            "greedy": MulticoreGreedyMapper,
            "balanced": MulticoreBalancedMapper,
        },
        hwmodel=MulticoreModel,
        surrogates=SurrogateBasis(closed_form="balanced"),
        arch_precision=True,
        accuracy=PrecisionAccuracy.of_graph,
        doc="heterogeneous systolic cores on a bus/mesh with shared DRAM; CP-SAT layer/tile scheduling",
    ),
}


def families() -> dict[str, Family]:
    """Template kind -> Family."""
    return dict(FAMILIES)


def family(kind: str) -> Family:
    if kind not in FAMILIES:
        raise KeyError(kind)
    return FAMILIES[kind]


def register_mapper(kind: str, name: str, factory: Callable[..., Mapper]) -> None:
    """Add a mapper of one's own (a plug-in, a test's fault injector) to family ``kind``: a spec then names it
    as ``template.mapper`` and its dataclass fields are its ``mapper_options``. Every process that evaluates
    points must register it (pool and Dask workers rebuild their mapper from the registry by name)."""
    mappers = family(kind).mappers
    if name in mappers and mappers[name] is not factory:
        raise ValueError(f"template {kind!r} already has a mapper {name!r}")
    mappers[name] = factory


def layer_baseline(kind: str, truth_mapper: str | None) -> str | None:
    """The cheap mapper whose layers the layer-level surrogate corrects toward ``truth_mapper`` (the family's
    default when None), or None when that mapper has none."""
    fam = family(kind)
    return fam.surrogates.layer_baselines.get(truth_mapper or fam.default_mapper)


def op_feature_set(kind: str, mapper: str | None) -> str | None:
    """The op-level feature set that learns ``mapper``'s truth (the default when None), or None."""
    fam = family(kind)
    basis = fam.surrogates
    return basis.op_features if (mapper or fam.default_mapper) == basis.closed_form else None


def kinds_with_op_features() -> tuple[str, ...]:
    """The families that have an op-level feature set."""
    return tuple(kind for kind, fam in FAMILIES.items() if fam.surrogates.op_features)


def kinds_exporting(exporter: str) -> tuple[str, ...]:
    """The families whose designs ``exporter`` can write."""
    return tuple(kind for kind, fam in FAMILIES.items() if exporter in fam.exporters)


def kinds_simulated_by(simulator: str) -> tuple[str, ...]:
    """The families whose designs the peer ``simulator`` runs."""
    return tuple(kind for kind, fam in FAMILIES.items() if simulator in fam.simulators)


def kinds_scheduled() -> tuple[str, ...]:
    """The families ``dse schedule`` takes."""
    return tuple(kind for kind, fam in FAMILIES.items() if fam.schedules)


def _option_fields(factory: Callable[..., Mapper]) -> list[dataclasses.Field]:
    if not dataclasses.is_dataclass(factory):
        return []
    return [f for f in dataclasses.fields(factory) if f.init and f.name != "name"]


def mapper_option_names(kind: str, mapper_name: str) -> dict[str, str]:
    """Option name -> 'type, default value' for one mapper of one family (what ``mapper_options`` takes)."""
    options = {}
    for f in _option_fields(family(kind).mappers[mapper_name]):
        kind_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        options[f.name] = f"{kind_name}, default {f.default!r}"
    return options


def make_mapper(kind: str, mapper_name: str | None = None, options: Mapping[str, Any] | None = None) -> Mapper:
    """The family's mapper ``mapper_name`` (its default when None) with ``options`` set.

    An unknown mapper, an unknown option or a value of the wrong type is one UserError naming
    ``template.mapper_options.<name>`` and what is allowed."""
    fam = family(kind)
    name = mapper_name or fam.default_mapper
    if name not in fam.mappers:
        raise UserError(
            f"template {kind!r} has no mapper {name!r}; choose one of: {', '.join(fam.mappers)}",
            where="template.mapper",
        )
    options = dict(options or {})
    allowed = mapper_option_names(kind, name)
    fields_by_name = {f.name: f for f in _option_fields(fam.mappers[name])}
    for key, value in options.items():
        if key not in allowed:
            listing = "; ".join(f"{k} ({v})" for k, v in allowed.items()) or "none"
            raise UserError(
                f"mapper {name!r} of template {kind!r} has no option {key!r}; its options: {listing}",
                where=f"template.mapper_options.{key}",
            )
        default = fields_by_name[key].default
        if default is not dataclasses.MISSING and not _same_kind(value, default):
            raise UserError(
                f"mapper option {key}={value!r} must be a {type(default).__name__} like its default {default!r}",
                where=f"template.mapper_options.{key}",
            )
        if isinstance(default, float) and not isinstance(value, bool):
            options[key] = float(value)
    try:
        return fam.mappers[name](**options)
    except MappingError as exc:
        raise UserError(str(exc), where="template.mapper_options") from None


def _same_kind(value: Any, default: Any) -> bool:
    """True when ``value`` may stand where ``default`` does (an int where a float is expected is fine)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))
