"""What the family table and the evaluator know of an accuracy model: built from the graph and the data file,
checked once, then called per point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from dse.graph import Graph
from mappers.base import Mapping
from templates.base import Arch


class AccuracyModel(Protocol):
    """``(arch, mapping) -> accuracy metrics`` of one design point (``data.ACCURACY_METRICS``).

    Picklable for worker processes: the loaded data and caches are rebuilt per process, on first use."""

    def prepare(self) -> Any:
        """Load and check the model and data (once per process); a UserError says what does not fit."""
        ...

    def __call__(self, arch: Arch, mapping: Mapping) -> dict[str, float]: ...


# a family's accuracy model from the workload graph and the path of its evaluation data (``workload.data``)
AccuracyFactory = Callable[[Graph, str], AccuracyModel]
