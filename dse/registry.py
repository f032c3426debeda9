"""Which templates, mappers and hardware models exist, by name.

The only place that knows every room; the explorer and CLI look things up here.
A template kind maps to its Template, its mappers (the first is the default) and
its HwModel.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

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


# kind -> (module, function returning its Family). A family whose module is not part of this
# checkout is left out; any other import error is a bug and propagates.
_FAMILY_MODULES: dict[str, tuple[str, str]] = {
    "systolic": ("dse.registry", "_systolic_family"),
    "fpga_dataflow": ("templates.fpga_dataflow", "family"),
    "gpu": ("templates.gpu", "family"),
    "rdu": ("templates.rdu", "family"),
}


def _systolic_family() -> Family:
    """``fold`` (SCALE-Sim-compatible, a few ms per network) stays the default: the explorer's rate
    target needs it; ``cpsat`` (optimal tiling, residency and scratchpad allocation) and ``greedy``
    (its baseline) are selected with ``template.mapper`` in a spec."""
    from hwmodels.systolic import SystolicModel
    from mappers.cpsat import CpSatMapper
    from mappers.greedy import GreedyMapper
    from mappers.systolic import SystolicFoldMapper
    from templates.systolic import SystolicTemplate

    mappers = {"fold": SystolicFoldMapper, "cpsat": CpSatMapper, "greedy": GreedyMapper}
    return Family(template=SystolicTemplate, mappers=mappers, hwmodel=SystolicModel)


def families() -> dict[str, Family]:
    """Template kind -> Family, for every family present in this checkout."""
    out: dict[str, Family] = {}
    for kind, (module_name, function) in _FAMILY_MODULES.items():
        module = import_optional(module_name)
        if module is not None:
            out[kind] = getattr(module, function)()
    return out


def import_optional(module_name: str) -> ModuleType | None:
    """The module, or None when that very module is not part of this checkout.

    Any other import error (a broken dependency inside it) is a bug and propagates."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


def family(kind: str) -> Family:
    fams = families()
    if kind not in fams:
        raise KeyError(kind)
    return fams[kind]
