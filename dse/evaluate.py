"""One design point through the pipeline: point -> Arch -> Mapping -> Metrics.

The explorer only ever sees ``PointEvaluator(point) -> Metrics``; it is picklable
so process pools and Dask workers can carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dse.errors import UserError
from dse.graph import Graph
from dse.registry import family, make_mapper
from hwmodels.accuracy.base import AccuracyModel
from hwmodels.base import HwModel, Metrics
from mappers.base import Mapper
from mappers.base import Mapping as OpsMapping
from templates.base import Arch, Template

SOLVER_FACTS = ("status", "gap", "bound", "value", "limit_hit", "seconds", "note")  # kept in Metrics.info["solver"]


@dataclass(frozen=True)
class Trace:
    """Every stage's product for one point: what ``dse export`` and ``dse schedule`` need beyond the metrics."""

    arch: Arch
    mapping: OpsMapping
    metrics: Metrics


@dataclass
class PointEvaluator:
    """Evaluates points of one template on one graph with one mapper.

    ``fixed`` holds the parameters that do not vary (scalars in the spec, the
    workload precision, the technology), merged under every point; ``mapper_options``
    are the spec's ``template.mapper_options``; ``data`` is the spec's resolved ``workload.data``:
    when given, the family's accuracy model adds the accuracy metrics to every point.
    """

    graph: Graph
    template_kind: str
    mapper_name: str | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    mapper_options: dict[str, Any] = field(default_factory=dict)
    data: str | None = None

    def __post_init__(self) -> None:
        fam = family(self.template_kind)
        self.mapper_name = self.mapper_name or fam.default_mapper
        self._template: Template = fam.template()
        self._mapper: Mapper = make_mapper(self.template_kind, self.mapper_name, self.mapper_options)
        self._hwmodel: HwModel = fam.hwmodel()
        self._accuracy: AccuracyModel | None = None
        if self.data is not None:
            if fam.accuracy is None:
                raise UserError(f"template {self.template_kind!r} has no accuracy model", where="workload.data")
            self._accuracy = fam.accuracy(self.graph, self.data)
        self._precisions = {op.name: op.precision_label for op in self.graph.ops if op.precision_label}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    @property
    def mapper(self) -> Mapper:
        return self._mapper

    @property
    def hwmodel(self) -> HwModel:
        return self._hwmodel

    @property
    def accuracy(self) -> AccuracyModel | None:
        """The family's accuracy model on ``data``; None without data."""
        return self._accuracy

    def arch(self, point: Mapping[str, Any]) -> Arch:
        return self._template.instantiate({**self.fixed, **point})

    def trace(self, point: Mapping[str, Any]) -> Trace:
        arch = self.arch(point)
        mapping = self._mapper.map(self.graph, arch)
        metrics = self._hwmodel.evaluate(mapping, arch)
        if "status" in mapping.solver:  # a solver's outcome (status, gap) travels with the metrics into the store
            metrics.info.setdefault("solver", {k: v for k, v in mapping.solver.items() if k in SOLVER_FACTS})
        if self._accuracy is not None:
            metrics.values.update(self._accuracy(arch, mapping))
        if self._precisions:  # a quantized import's per-layer precision, for the per-layer report and CSV
            for layer in metrics.layers:
                if layer.layer in self._precisions:
                    layer.extra.update(precision=self._precisions[layer.layer])
        return Trace(arch, mapping, metrics)

    def __call__(self, point: Mapping[str, Any]) -> Metrics:
        return self.trace(point).metrics
