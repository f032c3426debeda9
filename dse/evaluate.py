"""One design point through the pipeline: point -> Arch -> Mapping -> Metrics.

The explorer only ever sees ``PointEvaluator(point) -> Metrics``; it is picklable
so process pools and Dask workers can carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dse.graph import Graph
from dse.registry import family
from hwmodels.base import Metrics


@dataclass
class PointEvaluator:
    """Evaluates points of one template on one graph with one mapper.

    ``fixed`` holds the parameters that do not vary (scalars in the spec, the
    workload precision, the technology), merged under every point.
    """

    graph: Graph
    template_kind: str
    mapper_name: str | None = None
    fixed: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        fam = family(self.template_kind)
        self._template = fam.template()
        self.mapper_name = self.mapper_name or fam.default_mapper
        self._mapper = fam.mappers[self.mapper_name]()
        self._hwmodel = fam.hwmodel()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def arch(self, point: Mapping[str, Any]):
        return self._template.instantiate({**self.fixed, **point})

    def __call__(self, point: Mapping[str, Any]) -> Metrics:
        arch = self.arch(point)
        mapping = self._mapper.map(self.graph, arch)
        return self._hwmodel.evaluate(mapping, arch)
