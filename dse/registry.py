"""Which templates, mappers and hardware models exist, by name.

The only place that knows every room; the explorer and CLI look things up here.
A template kind maps to its Template, its mappers (the first is the default) and
its HwModel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hwmodels.base import HwModel
from mappers.base import Mapper
from templates.base import Template


@dataclass(frozen=True)
class Family:
    """A hardware family: how to build, map and evaluate it."""

    template: Callable[[], Template]
    mappers: dict[str, Callable[[], Mapper]]  # first entry is the default
    hwmodel: Callable[[], HwModel]

    @property
    def default_mapper(self) -> str:
        return next(iter(self.mappers))


def families() -> dict[str, Family]:
    """Template kind -> Family. Imports lazily so a broken optional room cannot break the rest."""
    from hwmodels.systolic import SystolicModel
    from mappers.systolic import SystolicFoldMapper
    from templates.systolic import SystolicTemplate

    return {
        "systolic": Family(
            template=SystolicTemplate,
            mappers={"fold": SystolicFoldMapper},
            hwmodel=SystolicModel,
        ),
    }


def family(kind: str) -> Family:
    fams = families()
    if kind not in fams:
        raise KeyError(kind)
    return fams[kind]
