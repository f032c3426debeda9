"""The mapper contract: ``map(graph, arch) -> Mapping``.

A Mapping says how each op of a graph runs on one arch: its tile (the loop
bounds held on chip at once), loop order / stationarity, and where its tensors
live. Mappers know nothing of YAML or search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from dse.graph import Graph
from mappers.payloads import OpPayload
from templates.base import Arch

PayloadT = TypeVar("PayloadT")

WALL_BACKSTOP_S, WALL_BACKSTOP_FACTOR = 60.0, 20.0


def wall_backstop_s(deterministic_limit_s: float) -> float:
    """A solver's wall-clock limit, far past its deterministic one: only a hung solve reaches it, so a loaded
    machine gives the same answer later instead of a different one (same spec + seed, same result)."""
    return WALL_BACKSTOP_S + WALL_BACKSTOP_FACTOR * float(deterministic_limit_s)


class MappingError(ValueError):
    """No legal mapping exists; ``node`` names the op and the message says why."""

    def __init__(self, message: str, node: str | None = None):
        super().__init__(message)
        self.node = node


@dataclass(frozen=True)
class Buffer:
    """A tensor (or tile of it) held in a scratchpad from ``start`` to ``end`` (op indices, inclusive)."""

    tensor: str
    memory: str  # e.g. "ifmap_sram", "filter_sram", "ofmap_sram", "scratchpad"
    offset: int  # bytes
    size: int  # bytes
    start: int
    end: int
    kind: str = "tile"  # "tile": an op's staging buffer; "resident": a whole tensor kept from producer to last consumer


@dataclass(frozen=True)
class OpMapping:
    """How one op runs: tile bounds per loop dim, loop order, the on-chip traffic it implies, and the family's
    ``payload`` (``mappers.payloads``): what that family's hardware model reads back."""

    op: str
    tile: dict[str, int]
    loop_order: tuple[str, ...] = ()
    dataflow: str = ""
    # tensors of this op that are read from / written to on-chip residency instead of DRAM
    resident_inputs: tuple[str, ...] = ()
    resident_output: bool = False
    payload: OpPayload | None = None

    def payload_as(self, kind: type[PayloadT]) -> PayloadT:
        """The payload, checked to be the family's ``kind``: a model given another family's mapping says so."""
        if not isinstance(self.payload, kind):
            raise TypeError(f"op {self.op!r}: expected a {kind.__name__} mapping payload, got {self.payload!r}")
        return self.payload


@dataclass
class Mapping:
    """A whole-graph mapping: per-op decisions, execution order, buffers and solver facts."""

    graph: Graph
    arch: Arch
    ops: dict[str, OpMapping]
    order: list[str]
    buffers: list[Buffer] = field(default_factory=list)
    mapper: str = ""
    solver: dict[str, Any] = field(default_factory=dict)  # status, objective, bound, gap, seconds


class Mapper(Protocol):
    name: str

    def map(self, graph: Graph, arch: Arch) -> Mapping: ...
